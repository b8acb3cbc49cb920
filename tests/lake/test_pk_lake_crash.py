"""Crash test of a primary-key table's lake: SIGKILL oxbowd while writers upsert and delete and
tiering and compaction run, restart, and check that the Iceberg table (read by pyiceberg) equals
the model of acknowledged writes, and that its changelog lake table (`lake.changelog` "true")
holds exactly the records of the server's changelog, each once (pyiceberg and DuckDB).

Each writer owns its keys and waits for each ack, so at most one of its batches is in flight when
the server dies; a key of that batch may hold either its old or its new row (the table's own
snapshot says which, and the model takes it). After every restart, once the lake caught up:
  - the lake holds each key once, exactly the model's rows (and the server's snapshot);
  - the changelog lake table holds exactly the log's records (offsets included);
  - no equality-delete file was ever written.

OXBOW_LAKE_CRASH_ITERATIONS (default 20); OXBOW_LAKE_CRASH_SEED replays a run (printed).
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

from oxbowtest.lake import read_log, wait_settled
from oxbowtest.flight import put_one, schema_json
from oxbowtest.primary_keys import command
from oxbowtest.server import kill_while_writing
from oxbowtest.readers import check_readers
from test_pk_changelog_lake import wait_changelog_settled
from test_pk_lake import check_lake_matches, equality_deletes_ever

ITERATIONS = int(os.environ.get("OXBOW_LAKE_CRASH_ITERATIONS", "20"))
WRITERS = 2
KEYS_PER_WRITER = 40
BUCKETS = 3
TABLE = "crash.pklake"
SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False),
                    pa.field("tag", pa.string(), nullable=False),
                    pa.field("v", pa.int64()), pa.field("s", pa.string()),
                    pa.field("flag", pa.bool_()), pa.field("ver", pa.int64())])
KEY_SCHEMA = pa.schema([SCHEMA.field("id"), SCHEMA.field("tag")])
COLUMNS = SCHEMA.names
SERVER_FLAGS = ("--lake-compaction-min-files", "3", "--lake-maintenance-interval-ms", "150",
                "--lake-max-manifests", "4", "--lake-retain-snapshots", "2",
                "--lake-snapshot-max-age-ms", "1", "--kv-checkpoint-interval-ms", "300")


def do_put(client, op: str, batch: pa.RecordBatch):
    put_one(client, command(TABLE, op), batch)


class Writer:
    def __init__(self, index: int, seed: int):
        self.rng = random.Random(seed * 31 + index)
        self.keys = [(i, "k") for i in range(index * KEYS_PER_WRITER, (index + 1) * KEYS_PER_WRITER)]
        self.state: dict[tuple, dict] = {}  # the rows acknowledged writes left
        self.in_flight: list[tuple] | None = None
        self.step = 0

    def run(self, location: str, stop: threading.Event):
        client = fl.FlightClient(location)
        try:
            while not stop.is_set():
                keys = self.rng.sample(self.keys, self.rng.randint(1, 10))
                self.step += 1
                self.in_flight = keys
                if self.rng.random() < 0.25:
                    do_put(client, "delete", pa.record_batch(
                        [pa.array([k[0] for k in keys], pa.int32()), pa.array([k[1] for k in keys])],
                        schema=KEY_SCHEMA))
                    for k in keys:
                        self.state.pop(k, None)
                else:
                    rows = [{"id": k[0], "tag": k[1], "v": self.step, "s": "x" * self.rng.randrange(40),
                             "flag": self.rng.random() < 0.5, "ver": None} for k in keys]
                    do_put(client, "upsert", pa.Table.from_pylist(rows, schema=SCHEMA).to_batches()[0])
                    for r in rows:
                        self.state[(r["id"], r["tag"])] = r
                self.in_flight = None
        except (pa.ArrowException, ConnectionError, OSError):
            pass  # the server died; in_flight holds the keys whose fate is unknown
        finally:
            client.close()


def server_snapshot(server) -> dict:
    reader = server.client.do_get(fl.Ticket(json.dumps({"table": TABLE, "snapshot": True}).encode()))
    return {(r["id"], r["tag"]): r for r in reader.read_all().to_pylist()}


@pytest.mark.crash
def test_sigkill_across_tiering_leaves_the_lake_equal_to_the_model(make_lake_server, warehouse,
                                                                    tmp_path):
    seed = int(os.environ.get("OXBOW_LAKE_CRASH_SEED", time.time_ns() % 1_000_000))
    print(f"OXBOW_LAKE_CRASH_SEED={seed}")
    rng = random.Random(seed)
    server = make_lake_server(*SERVER_FLAGS, data_dir=tmp_path / "pklake", freshness_ms=50)
    server.action("create_table", {"table": TABLE, "schema": schema_json(SCHEMA),
                                   "primary_key": ["id", "tag"], "buckets": BUCKETS,
                                   "properties": {"lake.enabled": "true",
                                                  "lake.changelog": "true"}})
    writers = [Writer(i, seed) for i in range(WRITERS)]
    for _ in range(ITERATIONS):
        kill_while_writing(server, [functools.partial(w.run, server.location) for w in writers],
                           rng.uniform(0.05, 0.7))
        snapshot = server_snapshot(server)
        for w in writers:  # an in-flight batch's keys take what the server kept
            for k in w.in_flight or []:
                if k in snapshot:
                    w.state[k] = snapshot[k]
                else:
                    w.state.pop(k, None)
            w.in_flight = None
        model = {k: {c: r[c] for c in COLUMNS} for w in writers for k, r in w.state.items()}
        assert {k: {c: r[c] for c in COLUMNS} for k, r in snapshot.items()} == model
        # Settled: maintenance expires snapshots at once here, and may delete files a reader of
        # the metadata.json it just replaced would still open.
        lake = wait_settled(server, TABLE)
        check_lake_matches(lake["metadata_location"], model)
        check_readers(wait_changelog_settled(server, TABLE), read_log(server, TABLE), None)
    assert sum(len(w.state) for w in writers) > 0
    assert equality_deletes_ever(warehouse) == 0
