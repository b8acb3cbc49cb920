"""Follow: tails a table's buckets (one DoGet "follow" stream each, on a thread of its own),
reopening each stream where it stopped when its server restarts or loses the leadership."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.flight as fl

from oxbow._connection import Backoff
from oxbow._tickets import Start, log_ticket, metadata
from oxbow.errors import Cancelled, NotLeader, OxbowError, TimedOut, Unavailable, translated

if TYPE_CHECKING:
    from oxbow.table import Table

QUEUE_BATCHES = 16  # batches received and not yet taken, across buckets, before reading waits
JOIN_S = 5.0  # how long close() waits for each bucket's thread to end


@dataclass(frozen=True)
class Batch:
    """Rows of one bucket, offsets base_offset .. next_offset - 1; append_time_ms is when the
    server appended them (ms since the epoch)."""

    data: pa.RecordBatch
    bucket: int
    base_offset: int
    next_offset: int
    append_time_ms: int | None


class Follow:
    """An iterator of Batch tailing a table (Table.follow()). Iterating waits for rows;
    poll() waits at most a timeout. A context manager: close() ends it."""

    def __init__(self, table: Table, starts: Mapping[int, Start], columns: Sequence[str] | None,
                 locations: Mapping[int, str | None], retry_for: float):
        self._table = table
        self._columns = columns
        self._retry_for = retry_for
        self._queue: queue.Queue[Batch | OxbowError] = queue.Queue(maxsize=QUEUE_BATCHES)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._streams: dict[int, fl.FlightStreamReader] = {}
        self._positions: dict[int, int] = {}
        self._threads = [
            threading.Thread(target=self._tail, args=(b, s, locations[b]), daemon=True,
                             name=f"oxbow-follow-{table.name}-{b}")
            for b, s in starts.items()]
        for thread in self._threads:
            thread.start()

    @property
    def positions(self) -> dict[int, int]:
        """Per bucket, the offset after the last batch handed out: follow(from_=positions)
        resumes there (buckets nothing came from yet are left out)."""
        return dict(self._positions)

    def poll(self, timeout: float | None = None) -> Batch | None:
        """The next batch, waiting at most `timeout` seconds (None: until one comes); None if
        none came in time, or once closed. Raises the error that ended a bucket's stream
        for good (e.g. TableNotFound after a drop, or Unavailable after retry_for seconds
        without a server), after closing the follow."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._stop.is_set():
            wait = 0.1 if deadline is None else max(0.0, min(0.1, deadline - time.monotonic()))
            try:
                item = self._queue.get(timeout=wait)
            except queue.Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                continue
            if isinstance(item, OxbowError):
                self.close()
                raise item
            self._positions[item.bucket] = item.next_offset
            return item
        return None

    def __iter__(self) -> Follow:
        return self

    def __next__(self) -> Batch:
        batch = self.poll()
        if batch is None:
            raise StopIteration
        return batch

    def close(self) -> None:
        """Stops every stream; iterating then ends."""
        self._stop.set()
        with self._lock:
            streams = list(self._streams.values())
        for stream in streams:
            stream.cancel()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(JOIN_S)

    def __enter__(self) -> Follow:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _tail(self, bucket: int, position: Start, location: str | None) -> None:
        """One bucket's thread: reads, and after a failure reopens from the next offset,
        until closed or until retry_for seconds pass without a stream."""
        backoff: Backoff | None = None
        while not self._stop.is_set():
            try:
                ticket = log_ticket(self._table.name, bucket, position, None, self._columns,
                                    follow=True)
                stream = self._table._open(ticket, location, stop=self._stop,
                                           on_open=lambda s: self._opened(bucket, s))
                backoff = None  # reading again: the next failure gets retry_for anew
                with translated():
                    for chunk in stream:
                        meta = metadata(chunk.app_metadata)
                        batch = Batch(chunk.data, bucket, meta["base_offset"],
                                      meta["next_offset"], meta.get("append_time_ms"))
                        if not self._offer(batch):
                            return
                        position = batch.next_offset
                # A follow never ends by itself (a server stopping answers UNAVAILABLE): an
                # end is a lost stream all the same.
                error: OxbowError = Unavailable(f"the server ended the follow of bucket {bucket} "
                                                f"of '{self._table.name}'")
            except (Unavailable, Cancelled, TimedOut) as e:  # Cancelled: the table was altered
                error = e
            except OxbowError as e:
                if e.code is not None:
                    self._offer(e)
                    return
                error = e  # the connection broke
            finally:
                with self._lock:
                    self._streams.pop(bucket, None)
            if self._stop.is_set():
                return
            location = self._relocate(bucket, error, location)
            backoff = backoff or Backoff(self._retry_for)
            try:
                backoff.wait(error, self._stop)
            except OxbowError as e:
                self._offer(e)
                return

    def _opened(self, bucket: int, stream: fl.FlightStreamReader) -> None:
        with self._lock:
            self._streams[bucket] = stream
        if self._stop.is_set():
            stream.cancel()

    def _relocate(self, bucket: int, error: OxbowError, location: str | None) -> str | None:
        """Where to reopen the bucket in a cluster: the leader a not_leader answer names, else
        the one GetFlightInfo names now (the same server when it cannot be asked)."""
        if isinstance(error, NotLeader) and error.location:
            return error.location
        if location is None:  # one server, no leaders
            return None
        try:
            return self._table._locations().get(bucket, location)
        except OxbowError:
            return location

    def _offer(self, item: Batch | OxbowError) -> bool:
        """Queues `item` for the reader; False once closed."""
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False
