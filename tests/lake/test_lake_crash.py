"""Crash test of the lake: SIGKILL oxbowd while producers write and tiering and maintenance run,
restart, and check that the Iceberg table still equals the log exactly.

Each iteration runs producers on two tables (unpartitioned, and partitioned by bucket[4](id))
on a server tiering every 50 ms and running maintenance (compaction, manifest merging, expiry)
every 150 ms, SIGKILLs it after a random 50-700 ms, restarts it on the same data dir and
warehouse, waits (bounded) for lag 0 and checks each table:
  - no (__bucket, __offset) twice; no gap: every offset from the log's earliest to the tiered
    offset is there, and the tiered offsets never go back;
  - every file the current metadata references exists (manifest lists, manifests, data files
    of every snapshot kept), and the current snapshot's data files are exactly what pyiceberg
    plans;
  - the rows equal the log's rows (values in lake form).
After the last iteration a clean restart and stop: no data file on disk that no snapshot
references (orphans of killed rounds are removed).

OXBOW_LAKE_CRASH_ITERATIONS (default 20); OXBOW_LAKE_CRASH_SEED replays a run (printed).
"""

from __future__ import annotations

import decimal
import functools
import os
import pathlib
import random
import threading
import time

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as fl
import pytest

from oxbowtest.lake import (assert_lake_equals_log, data_files, lake_rows, local_path,
                            metadata_json, wait_settled)
from oxbowtest.flight import descriptor
from oxbowtest.server import kill_while_writing

ITERATIONS = int(os.environ.get("OXBOW_LAKE_CRASH_ITERATIONS", "20"))
BUCKETS = 4
TABLES = {"crash.plain": "", "crash.parted": "bucket[4](id)"}
SERVER_FLAGS = ("--lake-compaction-min-files", "4", "--lake-maintenance-interval-ms", "150",
                "--lake-max-manifests", "4", "--lake-retain-snapshots", "3",
                "--lake-snapshot-max-age-ms", "1")
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("ts", pa.timestamp("ns", tz="UTC")),
    pa.field("payload", pa.string()),
    pa.field("amount", pa.decimal128(18, 4)),
])


def make_batch(first_id: int, rows: int, rng: random.Random) -> pa.RecordBatch:
    """Nulls in payload: a small round can put a single row, so an all-null chunk, in a file."""
    ids = list(range(first_id, first_id + rows))
    return pa.record_batch([
        pa.array(ids, pa.int64()),
        pa.array([time.time_ns() - i for i in ids], pa.timestamp("ns", tz="UTC")),
        pa.array([None if i % 7 == 0 else "ü" * rng.randrange(50) for i in ids]),
        pa.array([decimal.Decimal((i % 10**9) * 10001 - 5 * 10**12).scaleb(-4) for i in ids],
                 pa.decimal128(18, 4)),
    ], schema=SCHEMA)


def produce(location: str, producer: int, iteration: int, seed: int, acked: list,
            failures: list, stop: threading.Event) -> None:
    """Writes small streams to both tables until the server dies; counts acks in `acked`,
    and records an error that a dying server does not explain in `failures`."""
    rng = random.Random(seed)
    next_id = (iteration * 8 + producer) * 10**9
    client = fl.FlightClient(location)
    try:
        while not stop.is_set():
            table = rng.choice(list(TABLES))
            writer, acks = client.do_put(descriptor(table), SCHEMA)
            try:
                for _ in range(rng.randint(1, 5)):
                    rows = rng.choice([1, 3, 20, 100])
                    writer.write_batch(make_batch(next_id, rows, rng))
                    next_id += rows
                    if acks.read() is None:
                        return
                    acked.append(rows)
                writer.done_writing()
            finally:
                writer.close()
    except (fl.FlightError, OSError):
        pass  # killed: expected
    except Exception as e:  # noqa: BLE001 - reported by the test
        failures.append(repr(e))
    finally:
        try:
            client.close()
        except pa.ArrowException:
            pass


def snapshot_files(metadata_location: str) -> tuple[set[str], set[str], list[str]]:
    """(metadata files: manifest lists + manifests, live data files, the missing ones of
    either) of every kept snapshot."""
    meta_files, data, missing = set(), set(), []
    for snapshot in metadata_json(metadata_location)["snapshots"]:
        manifest_list = str(local_path(snapshot["manifest-list"]))
        meta_files.add(manifest_list)
        if not pathlib.Path(manifest_list).is_file():
            missing.append(manifest_list)
            continue
        with open(manifest_list, "rb") as f:
            manifests = [str(local_path(m["manifest_path"])) for m in fastavro.reader(f)]
        for m in manifests:
            meta_files.add(m)
            if not pathlib.Path(m).is_file():
                missing.append(m)
                continue
            with open(m, "rb") as f:
                for entry in fastavro.reader(f):
                    if entry["status"] != 2:
                        data.add(str(local_path(entry["data_file"]["file_path"])))
    missing.extend(p for p in sorted(data) if not pathlib.Path(p).is_file())
    return meta_files, data, missing


def settled_files(server, table: str) -> tuple[dict, set[str]]:
    """A settled table's status and the data files its snapshots reference, all on disk. A
    maintenance pass at nice 19 can be starved past wait_settled's quiet time on a loaded
    machine and then expire snapshots while they are read: missing files fail only while the
    metadata that references them is still the current one."""
    for _ in range(10):
        status = wait_settled(server, table)
        location = status["metadata_location"]
        if location is None:
            return status, set()
        _, referenced, missing = snapshot_files(location)
        if not missing:
            return status, referenced
        assert server.describe(table)["lake"]["metadata_location"] != location, (
            f"{table}: the current metadata {location} references missing files {missing[:5]}")
    raise AssertionError(f"{table}: the lake kept changing while its files were read")


def check_table(server, table: str, previous_tiered: list[int], full: bool) -> dict:
    status, referenced = settled_files(server, table)
    tiered = status["tiered_offsets"]
    assert all(a >= b for a, b in zip(tiered, previous_tiered)), (
        f"{table}: tiered offsets went back from {previous_tiered} to {tiered}")
    location = status["metadata_location"]
    if location is None:
        assert tiered == [0] * BUCKETS
        return status
    planned = data_files(location)
    assert set(planned) <= referenced
    described = {o["bucket"]: o for o in server.describe(table)["bucket_offsets"]}
    if full:
        lake = assert_lake_equals_log(server, table, location)
    else:
        lake = lake_rows(location)
        pairs = lake.group_by(["__bucket", "__offset"]).aggregate([])
        assert pairs.num_rows == lake.num_rows, f"{table}: duplicate (__bucket, __offset)"
    for b in range(BUCKETS):
        offsets = lake.filter(pc.equal(lake["__bucket"], b))["__offset"].to_pylist()
        want = list(range(described[b]["earliest_offset"], tiered[b]))
        assert offsets == want, (f"{table} bucket {b}: lake offsets are not exactly "
                                 f"[{want[:1]}..{tiered[b]}): {len(offsets)} vs {len(want)}")
    return status


@pytest.mark.crash
def test_lake_crash_recovery(make_server, tmp_path):
    seed = int(os.environ.get("OXBOW_LAKE_CRASH_SEED", time.time_ns() % 1_000_000))
    rng = random.Random(seed)
    print(f"\nlake crash test, seed {seed}, {ITERATIONS} iterations")
    warehouse = tmp_path / "warehouse"
    server = make_server(extra_args=("--warehouse", str(warehouse), "--lake-freshness-ms", "50",
                                     *SERVER_FLAGS), data_dir=tmp_path / "crash-data")
    for table, partition in TABLES.items():
        server.create_table(table, SCHEMA, buckets=BUCKETS,
                            properties={"lake.partition": partition})
    tiered = {t: [0] * BUCKETS for t in TABLES}
    started = time.monotonic()
    for iteration in range(ITERATIONS):
        acked, failures = [], []
        producers = [functools.partial(produce, server.location, p, iteration,
                                       rng.randrange(1 << 30), acked, failures) for p in range(2)]
        delay = rng.uniform(0.05, 0.7)
        kill_while_writing(server, producers, delay)
        assert not failures, f"producers failed: {failures}"
        full = iteration % 5 == 4 or iteration == ITERATIONS - 1
        line = []
        for table in TABLES:
            status = check_table(server, table, tiered[table], full=full)
            tiered[table] = status["tiered_offsets"]
            line.append(f"{table}: {sum(tiered[table]):6d} rows, "
                        f"{status['snapshots']} snapshots, {status['data_files']} files")
        print(f"iteration {iteration:2d}: killed after {delay * 1000:3.0f} ms, "
              f"{len(acked):3d} batches ({sum(acked):5d} rows) acked; "
              + "; ".join(line) + (" (full compare)" if full else ""))
    assert all(sum(v) > 0 for v in tiered.values()), "nothing reached the lake: tested nothing"
    # A clean restart removes what killed rounds left behind; afterwards, on a quiet disk, every
    # data file is referenced by a kept snapshot and vice versa.
    server.restart()
    locations = {t: check_table(server, t, tiered[t], full=True)["metadata_location"]
                 for t in TABLES}
    server.stop()
    for table, location in locations.items():
        _, referenced, missing = snapshot_files(location)
        assert not missing, f"{table}: snapshots reference missing files {missing[:5]}"
        ns, name = table.split(".")
        on_disk = {str(p) for p in (warehouse / ns / name / "data").glob("**/*.parquet")}
        assert on_disk == referenced, (
            f"{table}: leaked {sorted(on_disk - referenced)[:5]}, "
            f"missing {sorted(referenced - on_disk)[:5]}")
    print(f"lake crash test: {ITERATIONS} iterations in {time.monotonic() - started:.1f} s")
