"""DoGet offsets: resume from app_metadata, "to" bounds, "latest", out-of-range, follow (tail)."""

import json
import queue
import threading
import time

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.batches import id_batch
from oxbowtest.flight import expect_error

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
FOLLOW_WAIT_S = 5.0  # a correctness bound, not a latency target


def batch(first_id, rows):
    return id_batch(SCHEMA, first_id, rows, lambda i: f"row {i}")


@pytest.fixture
def ten_batches(server):
    """ns.t, one bucket, 10 batches of 10 rows: ids 0..99 at offsets 0..99."""
    server.create_table("ns.t", SCHEMA)
    server.put("ns.t", [batch(10 * i, 10) for i in range(10)])
    return server


def ids(table):
    return table.column("id").to_pylist()


def test_read_from_earliest_metadata(ten_batches):
    table, metas = ten_batches.get({"table": "ns.t", "bucket": 0, "from": "earliest"})
    assert ids(table) == list(range(100))
    assert [{k: m[k] for k in ("bucket", "base_offset", "next_offset")} for m in metas] == [
        {"bucket": 0, "base_offset": 10 * i, "next_offset": 10 * i + 10} for i in range(10)]
    # Each batch says when the server appended it (ms since the epoch), in the order it did.
    times = [m["append_time_ms"] for m in metas]
    assert times == sorted(times)
    assert abs(times[-1] / 1000 - time.time()) < 600, times[-1]


def test_default_ticket_reads_bucket_0_from_earliest(ten_batches):
    table, _ = ten_batches.get({"table": "ns.t"})
    assert ids(table) == list(range(100))


@pytest.mark.parametrize("stop_after", [0, 4, 8])
def test_resume_from_next_offset(ten_batches, stop_after):
    _, metas = ten_batches.get({"table": "ns.t", "from": "earliest"})
    resume = metas[stop_after]["next_offset"]
    table, rest = ten_batches.get({"table": "ns.t", "from": resume})
    assert ids(table) == list(range(resume, 100)), "resuming must give exactly the remaining rows"
    assert rest[0]["base_offset"] == resume
    assert rest[-1]["next_offset"] == 100


def test_resume_from_a_partially_read_stream(ten_batches):
    """Stop reading a stream mid-way, resume from the last message's next_offset."""
    reader = ten_batches.client.do_get(fl.Ticket(json.dumps({"table": "ns.t"}).encode()))
    seen = []
    for _ in range(3):
        chunk = reader.read_chunk()
        seen += chunk.data.column(0).to_pylist()
        resume = json.loads(chunk.app_metadata.to_pybytes())["next_offset"]
    reader.cancel()
    table, _ = ten_batches.get({"table": "ns.t", "from": resume})
    assert seen + ids(table) == list(range(100))


def test_from_inside_a_batch_starts_at_that_batch(ten_batches):
    table, metas = ten_batches.get({"table": "ns.t", "from": 45})
    assert metas[0]["base_offset"] == 40
    assert ids(table) == list(range(40, 100))


@pytest.mark.parametrize("start, end", [(0, 10), (0, 50), (30, 70), (90, 100), (0, 100)])
def test_to_bound_batch_aligned(ten_batches, start, end):
    table, metas = ten_batches.get({"table": "ns.t", "from": start, "to": end})
    assert ids(table) == list(range(start, end))
    if metas:
        assert metas[-1]["next_offset"] == end


def test_to_inside_a_batch(ten_batches):
    """Batches are whole: every row below "to" is delivered and no batch starts at or after it."""
    table, metas = ten_batches.get({"table": "ns.t", "from": 0, "to": 35})
    assert set(range(35)) <= set(ids(table))
    assert all(m["base_offset"] < 35 for m in metas)


def test_from_equals_to_is_empty(ten_batches):
    table, metas = ten_batches.get({"table": "ns.t", "from": 50, "to": 50})
    assert table.num_rows == 0 and metas == []


def test_to_defaults_to_end_at_start_of_read(ten_batches):
    """A non-follow read stops at the end the log had when the read started."""
    reader = ten_batches.client.do_get(fl.Ticket(json.dumps({"table": "ns.t"}).encode()))
    first = reader.read_chunk()
    ten_batches.put("ns.t", [batch(100, 10)])
    rest = reader.read_all()
    assert len(first.data) + rest.num_rows == 100


def test_latest_without_follow_is_empty(ten_batches):
    table, metas = ten_batches.get({"table": "ns.t", "from": "latest"})
    assert table.num_rows == 0 and metas == []
    assert table.schema == SCHEMA


def test_from_end_of_log_is_empty(ten_batches):
    table, metas = ten_batches.get({"table": "ns.t", "from": 100})
    assert table.num_rows == 0 and metas == []


@pytest.mark.parametrize("offset", [101, 1000, 2**62])
def test_from_beyond_end_is_out_of_range(ten_batches, offset):
    with expect_error("OUT_OF_RANGE", str(offset), "[0, 100]"):
        ten_batches.get({"table": "ns.t", "from": offset})


def test_empty_bucket_ranges(server):
    server.create_table("ns.t", SCHEMA, buckets=2)
    table, _ = server.get({"table": "ns.t", "bucket": 1, "from": 0})
    assert table.num_rows == 0
    with expect_error("OUT_OF_RANGE", "[0, 0]"):
        server.get({"table": "ns.t", "bucket": 1, "from": 1})


def write_past_retention(server):
    # Out of the lake: retention of lake tables waits for tiering (tests/lake covers that).
    server.create_table("ns.t", SCHEMA, properties={"lake.enabled": "false"})
    server.put("ns.t", [batch(100 * i, 100) for i in range(40)])  # ~2 KB a batch, ~80 KB in all


def check_reads_below_earliest_fail(server):
    offsets = server.describe("ns.t")["bucket_offsets"][0]
    earliest, end = offsets["earliest_offset"], offsets["next_offset"]
    assert 0 < earliest < end, f"retention removed nothing: {offsets}"
    with expect_error("OUT_OF_RANGE", f"[{earliest}, {end}]"):
        server.get({"table": "ns.t", "from": earliest - 1})
    table, metas = server.get({"table": "ns.t", "from": "earliest"})
    assert metas[0]["base_offset"] == earliest
    assert metas[-1]["next_offset"] == end
    assert ids(table) == list(range(earliest, end))
    info = server.client.get_flight_info(fl.FlightDescriptor.for_path("ns", "t"))
    assert info.total_records == end - earliest, "total_records counts retained rows only"
    assert server.client.do_get(info.endpoints[0].ticket).read_all().num_rows == end - earliest


RETENTION_ARGS = ("--segment-bytes", "4096", "--retention-bytes", "16384")


def test_below_earliest_is_out_of_range_after_restart(make_server):
    """Retention runs when a log opens: earliest_offset moves up, reading below it fails."""
    server = make_server(extra_args=RETENTION_ARGS)
    write_past_retention(server)
    server.restart()
    check_reads_below_earliest_fail(server)


def test_retention_applies_while_serving(make_server):
    server = make_server(extra_args=RETENTION_ARGS)
    write_past_retention(server)
    # Every segment roll wakes the retention pass; the pass woken by the last roll may still be
    # pending when the first removal shows, so wait until earliest_offset holds still.
    deadline = time.monotonic() + 5
    seen = []
    while len(seen) < 4 or seen[-1] == 0 or len(set(seen[-4:])) > 1:
        assert time.monotonic() < deadline, f"retention never settled while serving: {seen}"
        seen.append(server.describe("ns.t")["bucket_offsets"][0]["earliest_offset"])
        time.sleep(0.1)
    check_reads_below_earliest_fail(server)


class Follower:
    """Reads a follow stream on a thread; chunks arrive on a queue until cancel()."""

    def __init__(self, client, ticket):
        self.reader = client.do_get(fl.Ticket(json.dumps({**ticket, "follow": True}).encode()))
        self.chunks: queue.Queue = queue.Queue()
        self.error = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            for chunk in self.reader:
                self.chunks.put((chunk.data, json.loads(chunk.app_metadata.to_pybytes())))
        except pa.ArrowException as e:  # cancellation ends the stream with an error
            self.error = e

    def rows_until(self, wanted_ids, timeout=FOLLOW_WAIT_S):
        """Collects chunks until every id in wanted_ids arrived; returns (ids, metas)."""
        got, metas = [], []
        deadline = time.monotonic() + timeout
        while not set(wanted_ids) <= set(got):
            remaining = deadline - time.monotonic()
            assert remaining > 0, (f"follow reader got {len(got)} rows in {timeout}s, "
                                   f"missing {sorted(set(wanted_ids) - set(got))[:10]}")
            try:
                data, meta = self.chunks.get(timeout=remaining)
            except queue.Empty:
                continue
            got += data.column(0).to_pylist()
            metas.append(meta)
        return got, metas

    def cancel(self):
        self.reader.cancel()
        self.thread.join(timeout=FOLLOW_WAIT_S)
        assert not self.thread.is_alive(), "follow stream did not end after cancel()"


def test_follow_receives_new_batches(ten_batches):
    follower = Follower(ten_batches.client, {"table": "ns.t", "from": "earliest"})
    try:
        got, _ = follower.rows_until(range(100))  # the existing rows first
        for i in range(10, 15):
            ten_batches.put("ns.t", [batch(10 * i, 10)])
        more, metas = follower.rows_until(range(100, 150))
        assert got + more == list(range(150)), "follow delivers each row once, in order"
        assert metas[-1]["next_offset"] == 150
    finally:
        follower.cancel()


def test_follow_from_explicit_end_offset(ten_batches):
    client = ten_batches.new_client()
    follower = Follower(client, {"table": "ns.t", "from": 100, "columns": ["id"]})
    try:
        ten_batches.put("ns.t", [batch(100, 5), batch(105, 5)])
        got, metas = follower.rows_until(range(100, 110))
        assert got == list(range(100, 110))
        assert metas[0]["base_offset"] == 100
    finally:
        follower.cancel()
        client.close()


def test_follow_from_latest_sees_only_new_rows(ten_batches):
    follower = Follower(ten_batches.client, {"table": "ns.t", "from": "latest"})
    try:
        # The server resolves "latest" when the stream starts; keep writing until a batch arrives.
        first_id, deadline = 1000, time.monotonic() + FOLLOW_WAIT_S
        while follower.chunks.empty():
            assert time.monotonic() < deadline, "follow from latest never delivered a batch"
            ten_batches.put("ns.t", [batch(first_id, 3)])
            first_id += 3
            time.sleep(0.05)
        data, meta = follower.chunks.get()
        assert meta["base_offset"] >= 100
        assert all(i >= 1000 for i in data.column(0).to_pylist()), "latest must skip old rows"
    finally:
        follower.cancel()


def test_follow_with_to_ends_by_itself(ten_batches):
    """A follow read with a "to" bound ends once it reaches it (no cancel needed)."""
    follower = Follower(ten_batches.client, {"table": "ns.t", "from": 90, "to": 120})
    ten_batches.put("ns.t", [batch(100, 10), batch(110, 10), batch(120, 10)])
    got, _ = follower.rows_until(range(90, 120))
    follower.thread.join(timeout=FOLLOW_WAIT_S)
    assert not follower.thread.is_alive(), "a follow read must end at its 'to' offset"
    assert follower.error is None
    assert got == list(range(90, 120))


def test_two_followers_on_different_buckets(server):
    server.create_table("ns.t", SCHEMA, buckets=2)
    clients = [server.new_client() for _ in range(2)]
    followers = [Follower(clients[b], {"table": "ns.t", "bucket": b}) for b in range(2)]
    try:
        acks = [server.put("ns.t", [batch(10 * i, 10)])[0] for i in range(4)]
        by_bucket = {0: [], 1: []}
        for i, ack in enumerate(acks):
            (entry,) = ack["offsets"]
            by_bucket[entry["bucket"]] += list(range(10 * i, 10 * i + 10))
        for b in range(2):
            got, _ = followers[b].rows_until(by_bucket[b])
            assert got == by_bucket[b]
    finally:
        for follower in followers:
            follower.cancel()
        for client in clients:
            client.close()


def test_follow_across_segment_rolls(make_server):
    """Small segments: a follower keeps going as the log rolls to new segment files."""
    server = make_server(extra_args=("--segment-bytes", "2048"))
    server.create_table("ns.t", SCHEMA)
    follower = Follower(server.client, {"table": "ns.t", "from": "earliest"})
    try:
        for i in range(40):
            server.put("ns.t", [batch(20 * i, 20)])
        got, metas = follower.rows_until(range(800))
        assert got == list(range(800))
        assert [m["base_offset"] for m in metas] == list(range(0, 800, 20))
    finally:
        follower.cancel()


def test_reads_during_writes_see_a_consistent_prefix(server):
    """Readers racing a writer only ever see whole batches, in order, from offset 0."""
    server.create_table("ns.t", SCHEMA)
    stop = threading.Event()
    problems = []

    def reader():
        client = server.new_client()
        try:
            while not stop.is_set():
                table, metas = server.get({"table": "ns.t"}, client=client)
                got = ids(table)
                if got != list(range(len(got))):
                    problems.append(f"read a non-prefix: {got[:5]}...")
                position = 0
                for meta in metas:
                    if meta["base_offset"] != position or (meta["next_offset"] - position) % 7:
                        problems.append(f"bad message offsets {meta}")
                    position = meta["next_offset"]
        finally:
            client.close()

    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in readers:
        t.start()
    try:
        for i in range(100):
            server.put("ns.t", [batch(7 * i, 7)])
    finally:
        stop.set()
        for t in readers:
            t.join(timeout=30)
    assert not problems, problems[:5]
    assert ids(server.read_all("ns.t")) == list(range(700))


def test_from_a_timestamp_starts_at_the_first_batch_appended_then(server):
    """`"from": {"timestamp_ms": T}` seeks with the log's time index (append time of batches)."""
    schema = pa.schema([pa.field("x", pa.int64(), nullable=False)])
    server.create_table("ts.seek", schema, buckets=1)
    stamps = []
    for i in range(5):
        stamps.append(int(time.time() * 1000))
        server.put("ts.seek", [pa.record_batch([pa.array([i] * 10, pa.int64())], schema=schema)])
        time.sleep(0.05)
    after_all = int(time.time() * 1000) + 1000
    for i, stamp in enumerate(stamps):
        table, metas = server.get({"table": "ts.seek", "bucket": 0, "from": {"timestamp_ms": stamp}})
        assert metas[0]["base_offset"] <= i * 10, (i, metas)
        assert table.column("x").to_pylist()[-10:] == [4] * 10
    table, _ = server.get({"table": "ts.seek", "bucket": 0, "from": {"timestamp_ms": stamps[2] + 30}})
    assert table.column("x").to_pylist() == [3] * 10 + [4] * 10
    empty, _ = server.get({"table": "ts.seek", "bucket": 0, "from": {"timestamp_ms": after_all}})
    assert empty.num_rows == 0
    with expect_error("INVALID_ARGUMENT", "timestamp_ms"):
        server.get({"table": "ts.seek", "bucket": 0, "from": {"timestamp": 1}})
