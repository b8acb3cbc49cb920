"""Connections to the servers of one Oxbow deployment: one Flight client per server location,
each logged in on its own (a server keeps its tokens in memory, so a token is good on that
server only, until it restarts), and the retry rules every call shares."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import pyarrow as pa
import pyarrow.flight as fl

from oxbow.errors import NotLeader, Unauthenticated, Unavailable, translated

T = TypeVar("T")

# Read buffers come out of gRPC wherever they landed in its messages; with align_buffers,
# reads copy those not aligned for their type (pyarrow's Acero warns about them).
ALIGNED = pa.ipc.IpcReadOptions(ensure_alignment=pa.ipc.Alignment.DataTypeSpecific)
UNALIGNED = pa.ipc.IpcReadOptions()

FIRST_DELAY_S = 0.05  # the first wait before a retry; it doubles up to MAX_DELAY_S
MAX_DELAY_S = 1.0


class Backoff:
    """Waits between retries, doubling, until `retry_for` seconds have passed."""

    def __init__(self, retry_for: float):
        self.deadline = time.monotonic() + retry_for
        self.delay = FIRST_DELAY_S

    def wait(self, error: Exception, stop: threading.Event | None = None) -> None:
        """Sleeps before the next try; raises `error` when that would pass the deadline."""
        if time.monotonic() + self.delay > self.deadline:
            raise error
        if stop is None:
            time.sleep(self.delay)
        else:
            stop.wait(self.delay)
        self.delay = min(self.delay * 2, MAX_DELAY_S)


def never_sent(error: Unavailable) -> bool:
    """Whether the call failed before it reached any server (gRPC could not connect), so
    that even a write may go to the next server."""
    return "failed to connect to all addresses" in error.message


class Connections:
    """The Flight clients of a deployment, by location ("grpc://host:port")."""

    def __init__(self, servers: Sequence[str], tls: dict, user: str | None,
                 password: str | None, timeout: float | None, retry_for: float,
                 align_buffers: bool):
        self.servers = list(servers)
        self.retry_for = retry_for
        self._read_options = ALIGNED if align_buffers else UNALIGNED
        self._tls = tls
        self._credentials = (user, password) if user is not None else None
        self._timeout = timeout
        self._lock = threading.Lock()
        self._clients: dict[str, tuple[fl.FlightClient, list]] = {}

    def get(self, location: str) -> fl.FlightClient:
        """The client of `location`, connected and logged in on first use."""
        return self._entry(location)[0]

    def _entry(self, location: str) -> tuple[fl.FlightClient, list]:
        """The client of `location` and the headers of its login."""
        with self._lock:
            entry = self._clients.get(location)
            if entry is None:
                client = fl.FlightClient(location, **self._tls)
                headers = []
                if self._credentials is not None:
                    try:
                        with translated():
                            headers = [client.authenticate_basic_token(*self._credentials)]
                    except BaseException:
                        client.close()
                        raise
                entry = self._clients[location] = (client, headers)
            return entry

    def options(self, headers: list, stream: bool = False) -> fl.FlightCallOptions:
        """Call options carrying a login's `headers` (its bearer token), with the timeout
        unless `stream` (a stream, e.g. a follow, lasts as long as its reader wants)."""
        return fl.FlightCallOptions(headers=headers, timeout=None if stream else self._timeout,
                                    read_options=self._read_options)

    def drop(self, location: str, client: fl.FlightClient | None) -> None:
        """Forgets `client`, the client of `location` a call failed on: the next call connects
        (and logs in) anew, rather than wait out gRPC's reconnect backoff to a server that
        restarted. It is not closed here: other threads may still be calling on it (a follow
        reads each bucket on its own thread), and it closes once the last of them lets go."""
        with self._lock:
            entry = self._clients.get(location)
            if entry is not None and entry[0] is client:
                del self._clients[location]

    def call(self, fn: Callable[[fl.FlightClient, fl.FlightCallOptions], T],
             location: str | None = None, *, idempotent: bool = True,
             stream: bool = False, stop: threading.Event | None = None) -> T:
        """fn(client, options) on `location` (default: the first server that answers).

        A not_leader answer moves the call to the leader it names, or waits while the bucket
        has none; UNAVAILABLE is retried on the next server when `idempotent` or when the
        call never reached a server; an UNAUTHENTICATED answer to a logged-in client (its
        server restarted) logs in again once. Retries stop after `retry_for` seconds, or once
        `stop` is set, with the last error."""
        backoff = Backoff(self.retry_for)
        here = location or self.servers[0]
        relogged = hopped = False
        while True:
            fresh = here not in self._clients  # a login now: its failure is final
            client = None  # none yet when the login fails
            try:
                client, headers = self._entry(here)
                with translated():
                    return fn(client, self.options(headers, stream))
            except NotLeader as e:
                error: Exception = e
                moved = bool(e.location) and e.location != here
                if moved:
                    here = e.location
                if moved and not hopped:  # the first move is at once, later ones wait
                    hopped = True
                    continue
            except Unauthenticated:
                if relogged or fresh or self._credentials is None:
                    raise
                self.drop(here, client)
                relogged = True
                continue
            except Unavailable as e:
                if not idempotent and not never_sent(e):
                    raise
                self.drop(here, client)
                # Any server names the leader of a bucket (not_leader) or serves it.
                here = self.next_server(here)
                error = e
            backoff.wait(error, stop)
            if stop is not None and stop.is_set():
                raise error

    def next_server(self, location: str) -> str:
        """The server to try after `location`, in the order connect() was given them."""
        if location not in self.servers:
            return self.servers[0]
        return self.servers[(self.servers.index(location) + 1) % len(self.servers)]

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client, _ in clients:
            client.close()
