"""Helpers of the cold-log tests (tests/s3/test_cold_log.py on S3, and
tests/integration/test_cold_log_local.py with a local warehouse): a table whose sealed segments
move to the warehouse a moment after they close, and exact reads of it."""

from __future__ import annotations

import json
import queue
import threading
import time

import pyarrow as pa
import pyarrow.flight as fl

from oxbowtest.batches import NAMED_SCHEMA as SCHEMA, id_batch

# Small segments that roll often, and a quick offload pass.
SERVER_ARGS = ("--segment-bytes", "65536", "--cold-log-check-ms", "100")
# Segments move once closed for 1 ms; the lake is off so only the cold log writes objects.
PROPERTIES = {"log.local.retention": "1ms", "lake.enabled": "false"}
BATCH_ROWS = 500


def batch(first: int, rows: int = BATCH_ROWS) -> pa.RecordBatch:
    return id_batch(SCHEMA, first, rows, lambda i: f"name-{i:08d}", lambda i: i / 8)


def expected(rows: int) -> pa.Table:
    return pa.Table.from_batches([batch(0, rows)])


def create(server, table: str) -> dict:
    return server.create_table(table, SCHEMA, buckets=1, properties=PROPERTIES)


def produce(server, table: str, first: int, batches: int) -> int:
    server.put(table, [batch(first + i * BATCH_ROWS) for i in range(batches)])
    return first + batches * BATCH_ROWS


def bucket(server, table: str) -> dict:
    return server.describe(table)["bucket_offsets"][0]


def wait_cold(server, table: str, at_least: int, timeout: float = 30) -> dict:
    """Waits until the bucket has at least `at_least` cold segments; returns its status."""
    deadline = time.monotonic() + timeout
    while True:
        b = bucket(server, table)
        if b["cold"]["segments"] >= at_least:
            return b
        assert time.monotonic() < deadline, f"segments never went cold: {b}\n{server.log_tail()}"
        time.sleep(0.1)


def read(server, table: str, start=0, columns=None) -> tuple[pa.Table, list[dict]]:
    ticket = {"table": table, "bucket": 0, "from": start}
    if columns is not None:
        ticket["columns"] = columns
    return server.get(ticket)


def assert_exact(server, table: str, rows: int) -> None:
    """DoGet from offset 0, whole and projected, returns every row once, in order, and the
    app_metadata offsets chain without gaps."""
    got, metas = read(server, table)
    assert got.num_rows == rows
    assert got.equals(expected(rows)), "cold + local read differs from what was written"
    assert metas[0]["base_offset"] == 0
    for before, after in zip(metas, metas[1:]):
        assert after["base_offset"] == before["next_offset"]
    assert metas[-1]["next_offset"] == rows
    projected, _ = read(server, table, columns=["name"])
    assert projected.equals(expected(rows).select(["name"]))


class Follower:
    """A follow DoGet on a thread; ids arrive on a queue until cancel()."""

    def __init__(self, server, table: str, start: int):
        ticket = {"table": table, "bucket": 0, "from": start, "follow": True}
        self.reader = server.new_client().do_get(fl.Ticket(json.dumps(ticket).encode()))
        self.ids: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            for chunk in self.reader:
                self.ids.put(chunk.data.column(0).to_pylist())
        except pa.ArrowException:  # cancellation ends the stream with an error
            pass

    def collect(self, count: int, timeout: float = 30) -> list[int]:
        got: list[int] = []
        deadline = time.monotonic() + timeout
        while len(got) < count:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"follow reader got {len(got)} of {count} rows"
            try:
                got += self.ids.get(timeout=remaining)
            except queue.Empty:
                continue
        return got

    def cancel(self):
        self.reader.cancel()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "follow stream did not end after cancel()"
