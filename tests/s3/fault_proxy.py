"""An HTTP proxy in front of the test S3 server that injects faults: chosen requests get a 503
(SlowDown) or have their connection dropped after the request was read, a given number of times.
It also counts the most requests it handled at once.

Requests are forwarded byte for byte with their own Host header, so SigV4 signatures made for
the proxy's address still verify at the server.
"""

from __future__ import annotations

import dataclasses
import http.client
import http.server
import threading
from urllib.parse import urlparse

_SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
              b'<Message>Please reduce your request rate.</Message></Error>')


@dataclasses.dataclass
class Fault:
    method: str
    query_contains: str  # "" matches any request of the method
    times: int           # how many matching requests fail; -1: all
    action: str          # "503" or "drop"
    hits: int = 0


class FaultProxy:
    def __init__(self, target_endpoint: str):
        target = urlparse(target_endpoint)
        self.target = (target.hostname, target.port)
        self.faults: list[Fault] = []
        self.lock = threading.Lock()
        self.seen: list[tuple[str, str]] = []  # (method, path?query) of every request
        self.active = 0      # requests being handled now
        self.max_active = 0  # the most handled at once
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                with proxy.lock:
                    proxy.active += 1
                    proxy.max_active = max(proxy.max_active, proxy.active)
                try:
                    self._forward()
                finally:
                    with proxy.lock:
                        proxy.active -= 1

            def _forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fault = proxy._match(self.command, self.path)
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if fault == "503":
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(_SLOW_DOWN)))
                    self.end_headers()
                    self.wfile.write(_SLOW_DOWN)
                    return
                conn = http.client.HTTPConnection(*proxy.target, timeout=60)
                conn.putrequest(self.command, self.path, skip_host=True,
                                skip_accept_encoding=True)
                for name, value in self.headers.items():
                    conn.putheader(name, value)
                conn.endheaders(body if body else None)
                response = conn.getresponse()
                data = response.read()
                self.send_response(response.status)
                for name, value in response.getheaders():
                    if name.lower() not in ("transfer-encoding", "connection", "content-length",
                                            "server", "date"):
                        self.send_header(name, value)
                length = response.getheader("Content-Length")
                self.send_header("Content-Length",
                                 length if self.command == "HEAD" and length else str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _handle

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def add(self, method: str, query_contains: str = "", times: int = 1,
            action: str = "503") -> Fault:
        fault = Fault(method, query_contains, times, action)
        with self.lock:
            self.faults.append(fault)
        return fault

    def _match(self, method: str, path: str) -> str | None:
        with self.lock:
            self.seen.append((method, path))
            for fault in self.faults:
                if fault.method == method and fault.query_contains in path and (
                        fault.times < 0 or fault.hits < fault.times):
                    fault.hits += 1
                    return fault.action
        return None

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
