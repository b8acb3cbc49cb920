"""The oxbowd test harness: start/stop/kill a real `oxbowd`, and talk to it with pyarrow.flight only.

The binary is $OXBOW_BUILD_DIR/tools/oxbowd (default: <repo>/build/release/tools/oxbowd).
"""

from __future__ import annotations

import os
import re
import resource
import pathlib
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable

import pyarrow as pa
import pyarrow.flight as fl

from oxbowtest.flight import action, descriptor, get, put, schema_json

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
START_DEADLINE_S = 15.0
STOP_DEADLINE_S = 15.0


def build_dir() -> pathlib.Path:
    """$OXBOW_BUILD_DIR, default <repo>/build/release."""
    return pathlib.Path(os.environ.get("OXBOW_BUILD_DIR", REPO_ROOT / "build" / "release"))


def oxbowd_binary() -> pathlib.Path:
    return build_dir() / "tools" / "oxbowd"


def refused_start(binary: pathlib.Path, data_dir: pathlib.Path, *args: str, timeout: float = 20,
                  cwd: pathlib.Path | None = None, **listeners: str) -> str:
    """Starts oxbowd on `data_dir` (in `cwd`, default this process's) with Flight on an
    ephemeral loopback port, its other listeners off and `args`, expects it to exit with an
    error, and returns what it printed (one that starts serving fails the test at `timeout`).
    `listeners` replaces a listener's address, e.g. listen="0.0.0.0:0"."""
    flags = {"listen": "127.0.0.1:0", "metrics_listen": "", "kafka_listen": "",
             "catalog_listen": "", "schema_registry_listen": "", "console_listen": "", **listeners}
    command = [str(binary), "--data-dir", str(data_dir)]
    for name, value in flags.items():
        command += ["--" + name.replace("_", "-"), value]
    run = subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout,
                         cwd=cwd)
    printed = run.stdout + run.stderr
    assert run.returncode != 0, f"oxbowd {' '.join(args)} started:\n{printed}"
    return printed


_ports_handed_out: set[int] = set()


def free_port() -> int:
    """A port that was free on 127.0.0.1 a moment ago (oxbowd does not report an ephemeral port),
    never one handed out before in this process: the kernel may give the same free port twice
    in a row, and one server's listeners must not be given one port."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _ports_handed_out:
            _ports_handed_out.add(port)
            return port


class OxbowServer:
    """One oxbowd process on a data dir that outlives it: start, stop (SIGTERM), kill, restart."""

    def __init__(self, binary: pathlib.Path, data_dir: pathlib.Path, log_path: pathlib.Path,
                 extra_args: tuple[str, ...] = (), max_open_files: int | None = None,
                 stable_ports: bool = False):
        self.binary = binary
        # Restart on the ports of the previous start (new ones only if they are taken), as a
        # real server keeps its address: clients that knew it find it again.
        self.stable_ports = stable_ports
        self.data_dir = data_dir
        self.log_path = log_path
        self.extra_args = tuple(extra_args)
        self.max_open_files = max_open_files  # RLIMIT_NOFILE for the process; None: inherited
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self.kafka_port: int | None = None  # the Kafka listener (docs/kafka.md)
        self.catalog_port: int | None = None  # the Iceberg REST catalog's
        self.registry_port: int | None = None  # the schema registry's
        self.console_port: int | None = None  # the web console's
        self._client: fl.FlightClient | None = None
        # A server started with --tls-cert is reached over grpc+tls with these FlightClient
        # arguments (tls_root_certs, and cert_chain/private_key for mutual TLS).
        self.client_args: dict = {}

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> "OxbowServer":
        assert self.proc is None, "oxbowd is already running"
        last_error = None
        for attempt in range(5):  # a picked port can be taken by someone else before it binds
            reuse = self.stable_ports and attempt == 0 and self.port is not None
            if not reuse:
                self.port = free_port()
                self.kafka_port = free_port()
            kafka = () if "--kafka-listen" in self.extra_args else (
                "--kafka-listen", f"127.0.0.1:{self.kafka_port}")
            # A free port for the REST catalog too, unless a test names one.
            catalog = ()
            if "--catalog-listen" not in self.extra_args:
                if not reuse:
                    self.catalog_port = free_port()
                catalog = ("--catalog-listen", f"127.0.0.1:{self.catalog_port}")
            # And for the schema registry (in cluster mode every server serves the shared one).
            registry = ()
            if "--schema-registry-listen" not in self.extra_args:
                if not reuse:
                    self.registry_port = free_port()
                registry = ("--schema-registry-listen", f"127.0.0.1:{self.registry_port}")
            console = ()
            if "--console-listen" not in self.extra_args:
                if not reuse:
                    self.console_port = free_port()
                console = ("--console-listen", f"127.0.0.1:{self.console_port}")
            log = open(self.log_path, "ab")
            log.write(f"=== oxbowd start on port {self.port}\n".encode())
            log.flush()
            # Each server gets its own warehouse beside its data dir unless a test names one.
            warehouse = () if "--warehouse" in self.extra_args else (
                "--warehouse", str(self.data_dir.with_name(self.data_dir.name + "-warehouse")))
            # Servers of the suite run side by side: each picks a free metrics port.
            metrics = () if "--metrics-listen" in self.extra_args else (
                "--metrics-listen", "127.0.0.1:0")
            self.proc = subprocess.Popen(
                [str(self.binary), "--data-dir", str(self.data_dir),
                 "--listen", f"127.0.0.1:{self.port}", *warehouse, *metrics, *kafka, *catalog,
                 *registry, *console,
                 *self.extra_args],
                stdout=log, stderr=subprocess.STDOUT, preexec_fn=self._limit_open_files)
            log.close()
            try:
                self._wait_until_serving()
                return self
            except _ExitedEarly as e:
                last_error = e
                self.proc = None
        raise AssertionError(f"oxbowd did not start: {last_error}\n{self.log_tail()}")

    def _limit_open_files(self) -> None:
        if self.max_open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.max_open_files, self.max_open_files))

    def crashed(self, grace_s: float = 0.5) -> int | None:
        """If the process died on its own (within grace_s): reaps it, returns its exit code."""
        if self.proc is None:
            return None
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            return None
        code = self.proc.returncode
        self._close_client()
        self.proc = None
        return code

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + START_DEADLINE_S
        while True:
            if self.proc.poll() is not None:
                raise _ExitedEarly(f"exited with {self.proc.returncode}")
            try:
                client = self.new_client()
                try:
                    list(client.list_actions(options=fl.FlightCallOptions(timeout=1.0)))
                except fl.FlightUnauthenticatedError:
                    pass  # serving, with --auth
                self._client = client
                # oxbowd starts its HTTP listeners after Flight answers: wait for those it was
                # given too (port 0, e.g. a test's own flag, is not waited for).
                for port in (self.registry_port, self.console_port):
                    if port:
                        self._wait_for_port(port, deadline)
                return
            except (fl.FlightUnavailableError, fl.FlightTimedOutError, pa.ArrowException):
                if time.monotonic() > deadline:
                    self.proc.kill()
                    self.proc.wait()
                    self.proc = None
                    raise AssertionError(
                        f"oxbowd did not answer list_actions within {START_DEADLINE_S}s\n"
                        f"{self.log_tail()}")
                time.sleep(0.02)

    def _wait_for_port(self, port: int, deadline: float) -> None:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"oxbowd did not listen on port {port}\n"
                                         f"{self.log_tail()}") from None
                time.sleep(0.02)

    def stop(self) -> int:
        """SIGTERM and wait; asserts the clean shutdown the contract promises (exit code 0)."""
        code = self._signal(signal.SIGTERM)
        assert code == 0, f"oxbowd exited with {code} after SIGTERM\n{self.log_tail()}"
        return code

    def kill(self) -> int:
        """SIGKILL: a crash, the process gets no chance to flush anything."""
        return self._signal(signal.SIGKILL)

    def restart(self) -> "OxbowServer":
        """Clean stop and start again on the same data dir (a new port)."""
        self.stop()
        return self.start()

    def _signal(self, sig: int) -> int:
        assert self.proc is not None, "oxbowd is not running"
        self._close_client()
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            raise AssertionError(f"oxbowd did not exit within {STOP_DEADLINE_S}s of signal {sig}\n"
                                 f"{self.log_tail()}")
        self.proc = None
        return code

    def _close_client(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return "(no oxbowd log)"
        return "oxbowd log:\n" + "\n".join(text[-lines:])

    # --- client helpers --------------------------------------------------------------------

    @property
    def metrics_url(self) -> str:
        """http://127.0.0.1:<port> of the metrics listener, as the server logged it (oxbowd logs
        it just after Flight answers, so a test that asks at once may wait a moment)."""
        deadline = time.monotonic() + 10
        while True:
            this_start = self.log_path.read_text().rsplit("=== oxbowd start", 1)[-1]
            found = re.findall(r"serving metrics on \S+ \(port (\d+)\)", this_start)
            if found or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert found, "oxbowd logged no metrics port"
        return f"http://127.0.0.1:{found[-1]}"

    @property
    def location(self) -> str:
        scheme = "grpc+tls" if "--tls-cert" in self.extra_args else "grpc"
        return f"{scheme}://127.0.0.1:{self.port}"

    @property
    def client(self) -> fl.FlightClient:
        assert self._client is not None, "oxbowd is not running"
        return self._client

    def new_client(self) -> fl.FlightClient:
        """A separate connection (for concurrent threads)."""
        return fl.FlightClient(self.location, **self.client_args)

    def action(self, name: str, body=None):
        return action(self.client, name, body)

    def create_table(self, table: str, schema: pa.Schema, **kwargs):
        return self.action("create_table", {"table": table, "schema": schema_json(schema), **kwargs})

    def put(self, table: str, batches, schema: pa.Schema | None = None, client=None) -> list[dict]:
        """Writes the batches in one DoPut stream; returns one ack (parsed JSON) per batch."""
        return put(client or self.client, table, batches, schema)

    def get(self, ticket: dict, client=None, options=None) -> tuple[pa.Table, list[dict]]:
        """Reads one DoGet stream to its end: the table and each message's app_metadata."""
        return get(client or self.client, ticket, options)

    def read_all(self, table: str) -> pa.Table:
        """Every bucket of the table from earliest, concatenated, through GetFlightInfo."""
        info = self.client.get_flight_info(descriptor(table))
        tables = [self.client.do_get(ep.ticket).read_all() for ep in info.endpoints]
        return pa.concat_tables(tables)

    def describe(self, table: str) -> dict:
        return self.action("describe_table", {"table": table})


class _ExitedEarly(Exception):
    pass


def kill_while_writing(server: OxbowServer, writers: list[Callable[[threading.Event], None]],
                       delay: float) -> None:
    """The crash tests' step: runs each writer (called with a stop event) on a thread of its own,
    SIGKILLs `server` after `delay` seconds, stops and joins the writers (one that hangs fails
    the test) and starts the server again on the same data."""
    stop = threading.Event()
    threads = [threading.Thread(target=writer, args=(stop,), daemon=True) for writer in writers]
    for t in threads:
        t.start()
    time.sleep(delay)
    server.kill()
    stop.set()
    for t in threads:
        t.join(timeout=30)
        assert not t.is_alive(), "a writer hung after the server was killed"
    server.start()
