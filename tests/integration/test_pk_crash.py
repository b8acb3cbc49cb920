"""Crash test for primary-key tables: SIGKILL oxbowd while writers upsert and delete, restart,
and check the rows and the changelog against a model of the acknowledged writes.

Each writer owns its own keys and waits for each ack, so at most one of its batches is in flight
when the server dies. After every restart:
  - every key holds what the acknowledged writes left, except keys of a writer's in-flight batch,
    which hold either that or what the batch would have left;
  - an in-flight batch is all or nothing per bucket (keys of one bucket all new or all old);
  - replaying the changelog from earliest gives exactly the snapshot (RocksDB caught up);
  - no change is in the changelog twice: per key, the batch numbers of its +I/+U records rise.

OXBOW_CRASH_ITERATIONS (default 20) sets the kills; OXBOW_CRASH_SEED fixes the random choices.
"""

from __future__ import annotations

import functools
import json
import os
import random
import threading
import time

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.flight import put_one, schema_json
from oxbowtest.primary_keys import command
from oxbowtest.server import kill_while_writing

ITERATIONS = int(os.environ.get("OXBOW_CRASH_ITERATIONS", "20"))
WRITERS = 3
KEYS_PER_WRITER = 60
BUCKETS = 3
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False),
                    pa.field("batch", pa.int64(), nullable=False),
                    pa.field("pad", pa.string())])
KEY_SCHEMA = pa.schema([SCHEMA.field("id")])
TABLE = "crash.pk"


def do_put(client, op: str, batch: pa.RecordBatch):
    put_one(client, command(TABLE, op), batch)


class Writer:
    def __init__(self, index: int, seed: int):
        self.index = index
        self.rng = random.Random(seed * 31 + index)
        self.keys = range(index * KEYS_PER_WRITER, (index + 1) * KEYS_PER_WRITER)
        self.state: dict[int, int] = {}  # id -> batch number, from acknowledged writes
        self.in_flight: tuple[str, int, list[int]] | None = None
        self.next_batch = 1

    def run(self, location: str, stop: threading.Event):
        client = fl.FlightClient(location)
        try:
            while not stop.is_set():
                ids = self.rng.sample(list(self.keys), self.rng.randint(1, 20))
                number = self.index * 10**9 + self.next_batch
                self.next_batch += 1
                op = "delete" if self.rng.random() < 0.25 else "upsert"
                self.in_flight = (op, number, ids)
                if op == "delete":
                    batch = pa.record_batch([pa.array(ids, pa.int64())], schema=KEY_SCHEMA)
                else:
                    batch = pa.record_batch([pa.array(ids, pa.int64()),
                                             pa.array([number] * len(ids), pa.int64()),
                                             pa.array(["p" * self.rng.randrange(300)] * len(ids))],
                                            schema=SCHEMA)
                do_put(client, op, batch)
                self.apply(op, number, ids, self.state)
                self.in_flight = None
        except (pa.ArrowException, ConnectionError, OSError):
            pass  # the server died; in_flight holds the batch whose fate is unknown
        finally:
            client.close()

    @staticmethod
    def apply(op, number, ids, state):
        for i in ids:
            if op == "delete":
                state.pop(i, None)
            else:
                state[i] = number


def read_bucket(client, ticket: dict) -> list[dict]:
    return client.do_get(fl.Ticket(json.dumps(ticket).encode())).read_all().to_pylist()


def check(server, writers: list[Writer]) -> None:
    client = server.client
    snapshot = {}
    bucket_of = {}
    for b in range(BUCKETS):
        for r in read_bucket(client, {"table": TABLE, "snapshot": True, "bucket": b}):
            assert r["id"] not in snapshot, f"key {r['id']} twice in the snapshot"
            snapshot[r["id"]] = r["batch"]
            bucket_of[r["id"]] = b
    replayed = {}
    rising: dict[int, int] = {}
    for b in range(BUCKETS):
        for r in read_bucket(client, {"table": TABLE, "bucket": b}):
            bucket_of.setdefault(r["id"], b)
            assert bucket_of[r["id"]] == b, f"key {r['id']} in two buckets' changelogs"
            if r["_change_type"] in ("+I", "+U"):
                assert r["batch"] > rising.get(r["id"], 0), (
                    f"key {r['id']}: batch {r['batch']} in the changelog twice or out of order")
                rising[r["id"]] = r["batch"]
                replayed[r["id"]] = r["batch"]
            elif r["_change_type"] == "-D":
                replayed.pop(r["id"], None)
    assert replayed == snapshot, "the changelog and the rows disagree"
    for w in writers:
        actual = {i: v for i, v in snapshot.items() if i in w.keys}
        expected = dict(w.state)
        if w.in_flight is None:
            assert actual == expected, f"writer {w.index}: acknowledged writes differ"
            continue
        op, number, ids = w.in_flight
        after = dict(expected)
        Writer.apply(op, number, ids, after)
        applied_by_bucket: dict[int, set] = {}
        for i in w.keys:
            if i not in ids:
                assert actual.get(i) == expected.get(i), f"key {i}: acknowledged write lost"
                continue
            assert actual.get(i) in (expected.get(i), after.get(i)), f"key {i}: {actual.get(i)}"
            if expected.get(i) != after.get(i) and i in bucket_of:
                applied_by_bucket.setdefault(bucket_of[i], set()).add(actual.get(i) == after.get(i))
        for b, outcomes in applied_by_bucket.items():
            assert len(outcomes) == 1, f"writer {w.index}: a batch half applied in bucket {b}"
        # Whatever the in-flight batch did is now the truth.
        w.state = actual
        w.in_flight = None


@pytest.mark.crash
@pytest.mark.parametrize("flush", ["fsync", "interval"])
def test_sigkill_while_writing_loses_no_acknowledged_change(make_server, tmp_path, flush):
    """Under --flush interval acks come before the fsync: what SIGKILL spares is the page cache."""
    seed = int(os.environ.get("OXBOW_CRASH_SEED", time.time_ns() % 1_000_000))
    print(f"OXBOW_CRASH_SEED={seed}")
    rng = random.Random(seed)
    # Frequent checkpoints, so recovery also starts from checkpoints taken under load.
    server = make_server(extra_args=("--kv-checkpoint-interval-ms", "300", "--flush", flush),
                         data_dir=tmp_path / "pkcrash")
    server.action("create_table", {"table": TABLE, "schema": schema_json(SCHEMA),
                                   "primary_key": ["id"], "buckets": BUCKETS})
    writers = [Writer(i, seed) for i in range(WRITERS)]
    for _ in range(ITERATIONS):
        kill_while_writing(server, [functools.partial(w.run, server.location) for w in writers],
                           rng.uniform(0.05, 0.5))
        check(server, writers)
    assert sum(len(w.state) for w in writers) > 0
