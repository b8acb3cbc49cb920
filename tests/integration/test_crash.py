"""Crash test for log tables: SIGKILL oxbowd under concurrent DoPut load, restart, verify.

Each iteration starts oxbowd on a data dir that persists across iterations, runs concurrent
producers, SIGKILLs the server at a random moment (50-500 ms in), restarts it and checks
everything written so far (all iterations):
  - every acknowledged batch is readable exactly once, at the offsets its ack gave;
  - no row appears twice;
  - each bucket's messages tile [earliest, next_offset) with no gap or overlap;
  - without a bucket_key, no partial batch is visible: a batch is all or nothing, acked or not.
    With a bucket_key a batch is atomic per bucket only (docs/api.md), so an unacknowledged
    batch may be partly visible there; that variant checks only the acknowledged ones.

OXBOW_CRASH_ITERATIONS (default 20) sets the number of iterations per variant;
OXBOW_CRASH_SEED fixes the random choices (the seed is printed either way).
"""

from __future__ import annotations

import functools
import json
import os
import random
import threading
import time
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.flight import ALIGNED, descriptor
from oxbowtest.server import OxbowServer, kill_while_writing

ITERATIONS = int(os.environ.get("OXBOW_CRASH_ITERATIONS", "20"))
PRODUCERS = 4
BUCKETS = 4
SCHEMA = pa.schema([
    pa.field("batch_id", pa.int64(), nullable=False),
    pa.field("row", pa.int32(), nullable=False),
    pa.field("rows", pa.int32(), nullable=False),  # the batch's row count, to spot partial ones
    pa.field("key", pa.int64(), nullable=False),
    pa.field("payload", pa.string()),
])


def make_batch(batch_id: int, rows: int, rng: random.Random) -> pa.RecordBatch:
    return pa.record_batch([
        pa.array([batch_id] * rows, pa.int64()),
        pa.array(range(rows), pa.int32()),
        pa.array([rows] * rows, pa.int32()),
        pa.array([rng.randrange(1000) for _ in range(rows)], pa.int64()),
        pa.array(["x" * rng.randrange(200) for _ in range(rows)]),
    ], schema=SCHEMA)


@dataclass
class Ledger:
    """What producers were told: batch id -> (rows, ack offsets). Shared by the producers."""
    acked: dict = field(default_factory=dict)
    sent: dict = field(default_factory=dict)  # every batch ever written: id -> rows
    lock: threading.Lock = field(default_factory=threading.Lock)


def produce(location: str, table: str, producer: int, iteration: int, seed: int,
            ledger: Ledger, stop: threading.Event) -> None:
    """Writes batches until the server dies; records each batch whose PutResult arrived."""
    rng = random.Random(seed)
    seq = 0
    writers = []
    client = fl.FlightClient(location)
    try:
        while not stop.is_set():
            writer, acks = client.do_put(descriptor(table), SCHEMA)
            writers.append(writer)
            for _ in range(rng.randint(1, 20)):  # new streams now and then: round-robin moves
                batch_id = (iteration * PRODUCERS + producer) * 1_000_000_000 + seq
                seq += 1
                rows = rng.choice([1, 2, 7, 30, 100])
                with ledger.lock:
                    ledger.sent[batch_id] = rows
                writer.write_batch(make_batch(batch_id, rows, rng))
                reply = acks.read()
                if reply is None:  # the stream ended without an ack: the server died
                    return
                ack = json.loads(reply.to_pybytes())
                with ledger.lock:
                    ledger.acked[batch_id] = (rows, ack["offsets"])
            writer.done_writing()
            writer.close()
    except (pa.ArrowException, OSError):
        pass  # the server was killed: expected
    finally:
        for writer in writers:  # close quietly: most streams died with the server
            try:
                writer.close()
            except (pa.ArrowException, OSError):
                pass
        try:
            client.close()
        except pa.ArrowException:
            pass


def read_buckets(server: OxbowServer, table: str):
    """bucket -> (table, metas), each read from earliest, checking the messages tile the log."""
    described = server.describe(table)
    out = {}
    for o in described["bucket_offsets"]:
        b = o["bucket"]
        data, metas = server.get({"table": table, "bucket": b, "from": "earliest"},
                                 options=ALIGNED)
        position = o["earliest_offset"]
        for meta in metas:
            assert meta["base_offset"] == position, (
                f"bucket {b}: message at {meta['base_offset']}, expected {position} (gap/overlap)")
            position = meta["next_offset"]
        assert position == o["next_offset"], f"bucket {b}: messages end at {position}, " \
                                             f"describe_table says {o['next_offset']}"
        assert data.num_rows == o["next_offset"] - o["earliest_offset"]
        out[b] = (data, metas, o["earliest_offset"])
    return out


def verify(server: OxbowServer, table: str, ledger: Ledger, whole_batches: bool,
           check_offsets_of=None) -> tuple[int, set]:
    """Checks the recovered table against the ledger.

    Row counts are checked for every acknowledged batch; the offsets its ack gave are checked
    for the batch ids in `check_offsets_of` (default: all). Returns (rows, visible batch ids).
    """
    buckets = read_buckets(server, table)
    everything = pa.concat_tables(
        data.append_column("bucket", pa.array([b] * data.num_rows, pa.int32()))
        for b, (data, _, _) in buckets.items())
    pairs = everything.group_by(["batch_id", "row"]).aggregate([])
    assert pairs.num_rows == everything.num_rows, (
        f"{everything.num_rows - pairs.num_rows} rows stored twice")
    per_batch = everything.group_by("batch_id").aggregate(
        [("row", "count"), ("rows", "max"), ("bucket", "count_distinct")]).to_pydict()
    visible = {}
    for batch_id, n, declared, spread in zip(per_batch["batch_id"], per_batch["row_count"],
                                            per_batch["rows_max"],
                                            per_batch["bucket_count_distinct"]):
        assert ledger.sent.get(batch_id) == declared, f"rows of a batch never sent: {batch_id}"
        visible[batch_id] = (n, spread)

    # Every acknowledged batch: all of its rows, once.
    for batch_id, (rows, offsets) in ledger.acked.items():
        n = visible.get(batch_id, (0, 0))[0]
        assert n == rows, f"acked batch {batch_id} has {n} of {rows} rows"
        assert sum(e["rows"] for e in offsets) == rows

    # ... at the offsets its ack gave.
    ids_by_bucket = {b: data.column("batch_id").to_pylist() for b, (data, _, _) in buckets.items()}
    for batch_id in ledger.acked if check_offsets_of is None else check_offsets_of:
        for e in ledger.acked[batch_id][1]:
            earliest = buckets[e["bucket"]][2]
            start = e["base_offset"] - earliest
            piece = ids_by_bucket[e["bucket"]][start:start + e["rows"]]
            assert piece == [batch_id] * e["rows"], (
                f"ack of batch {batch_id} points at other rows: {e}")

    if whole_batches:  # no bucket key: a batch is all or nothing, in one bucket
        for batch_id, (n, spread) in visible.items():
            assert n == ledger.sent[batch_id], (
                f"partial batch {batch_id}: {n} of {ledger.sent[batch_id]} rows visible "
                f"({'acked' if batch_id in ledger.acked else 'not acked'})")
            assert spread == 1, f"batch {batch_id} spans {spread} buckets"
    return everything.num_rows, set(visible)


@pytest.mark.crash
@pytest.mark.parametrize("bucket_key, flush", [
    ([], "fsync"),
    (["key"], "fsync"),
    # Acks before fsync: lost on power failure, but a killed process leaves them in the page
    # cache, so the same guarantees hold against SIGKILL.
    ([], "interval"),
], ids=["no-key", "keyed", "no-key-flush-interval"])
def test_crash_recovery(make_server, tmp_path, bucket_key, flush):
    seed = int(os.environ.get("OXBOW_CRASH_SEED", time.time_ns() % 1_000_000))
    rng = random.Random(seed)
    print(f"\ncrash test ({'bucket_key=' + ','.join(bucket_key) if bucket_key else 'no key'}, "
          f"--flush {flush}), seed {seed}, {ITERATIONS} iterations")
    server = make_server(extra_args=("--flush", flush), data_dir=tmp_path / "crash-data")
    table = "crash.t"
    server.create_table(table, SCHEMA, buckets=BUCKETS, bucket_key=bucket_key)
    ledger = Ledger()
    for iteration in range(ITERATIONS):
        acked_before = len(ledger.acked)
        acked_ids_before = set(ledger.acked)
        producers = [functools.partial(produce, server.location, table, p, iteration,
                                       rng.randrange(1 << 30), ledger) for p in range(PRODUCERS)]
        delay = rng.uniform(0.05, 0.5)
        kill_while_writing(server, producers, delay)
        new_acks = [i for i in ledger.acked if i not in acked_ids_before]
        recovered, visible = verify(server, table, ledger, whole_batches=not bucket_key,
                                    check_offsets_of=new_acks)
        unacked_visible = len(visible - ledger.acked.keys())
        print(f"iteration {iteration:2d}: killed after {delay * 1000:3.0f} ms, "
              f"{len(ledger.acked) - acked_before:4d} batches acked "
              f"({len(ledger.acked)} in all), {recovered} rows recovered, "
              f"{unacked_visible} unacked batches visible")
        assert len(ledger.acked) > 0 or iteration < 2, "nothing was ever acknowledged"
    assert len(ledger.acked) > 0, "no batch was ever acknowledged: the test tested nothing"
    # A final clean restart keeps the same state; now check every ack's offsets again.
    server.restart()
    verify(server, table, ledger, whole_batches=not bucket_key)
