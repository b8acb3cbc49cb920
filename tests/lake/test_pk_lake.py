"""Primary-key tables in the lake: merge-on-read with position deletes.

Randomized upserts, partial updates and deletes for every merge engine, checked against the
Python model of tests/integration/test_primary_keys.py: once the lake catches up, a reader of
the table's metadata.json returns exactly the model's rows (no key twice, no deleted key), and
no equality-delete file is ever written. The readers are pyiceberg, DuckDB's iceberg_scan and
Spark (tests/oxbowtest/readers.py; Spark left out under OXBOW_SKIP_SPARK=1).
"""

from __future__ import annotations

import json
import random
import time

import fastavro
import pyarrow as pa
import pytest

from oxbowtest.lake import local_path, wait_describe, wait_lake, wait_settled
from oxbowtest.primary_keys import (COLUMNS, ENGINES, KEY, SCHEMA, Model, command, create_pk_table,
                                    random_write, write)
from pyiceberg.table import StaticTable
from oxbowtest.readers import check_readers

SYSTEM_COLUMNS = ["__bucket", "__offset", "__timestamp"]
BUCKETS = 3
# Maintenance every 100 ms that merges, compacts and expires at the first chance.
QUICK_MAINTENANCE = ("--lake-maintenance-interval-ms", "100", "--lake-compaction-min-files", "4",
                     "--lake-max-manifests", "4", "--lake-retain-snapshots", "2",
                     "--lake-snapshot-max-age-ms", "1")


def live_files(metadata_location: str) -> list[dict]:
    """The data_file records of the current snapshot's live entries (data and deletes), read
    with fastavro from the manifests; each gets "manifest_content" from the manifest list."""
    metadata = json.loads(local_path(metadata_location).read_text())
    current = metadata["current-snapshot-id"]
    snapshot = next(s for s in metadata["snapshots"] if s["snapshot-id"] == current)
    out = []
    with open(local_path(snapshot["manifest-list"]), "rb") as f:
        manifests = list(fastavro.reader(f))
    for m in manifests:
        with open(local_path(m["manifest_path"]), "rb") as f:
            reader = fastavro.reader(f)
            assert reader.metadata["content"] == ("data" if m["content"] == 0 else "deletes")
            for entry in reader:
                if entry["status"] == 2:
                    continue
                assert entry["data_file"]["content"] == (0 if m["content"] == 0 else 1)
                out.append({**entry["data_file"], "manifest_content": m["content"]})
    return out


def check_lake_matches(metadata_location: str, expected_rows: dict, spark=None) -> None:
    """pyiceberg, DuckDB and Spark (when `spark` is given) each return exactly `expected_rows`
    (key tuple -> row of COLUMNS), every key once; the schema marks the key as identifier
    fields; no equality delete is live."""
    metadata = json.loads(local_path(metadata_location).read_text())
    schema = next(s for s in metadata["schemas"] if s["schema-id"] == metadata["current-schema-id"])
    ids = {f["name"]: f["id"] for f in schema["fields"]}
    assert sorted(schema["identifier-field-ids"]) == sorted(ids[k] for k in KEY)
    assert all(f["required"] for f in schema["fields"] if f["name"] in KEY)
    assert not [f for f in live_files(metadata_location) if f["content"] == 2]
    expected = pa.Table.from_pylist(
        [{c: row[c] for c in COLUMNS} for row in expected_rows.values()], schema=SCHEMA)
    check_readers(metadata_location, expected, spark, key=list(KEY))


def equality_deletes_ever(warehouse) -> int:
    """Equality-delete entries in every manifest the warehouse holds (any snapshot). A manifest
    a killed commit left torn (never referenced) or one being written is skipped: every
    referenced manifest is read by check_lake_matches too."""
    count = 0
    for path in warehouse.rglob("*-m*.avro"):
        try:
            with open(path, "rb") as f:
                count += sum(1 for e in fastavro.reader(f) if e["data_file"]["content"] == 2)
        except (ValueError, EOFError):
            continue
    return count


def lake_props(engine: str, **extra) -> dict:
    return {**ENGINES[engine], "lake.enabled": "true", **extra}


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_random_writes_reach_the_lake_as_the_model(make_lake_server, warehouse, table_name,
                                                   engine, spark_or_none):
    server = make_lake_server()
    create_pk_table(server, table_name, buckets=BUCKETS, properties=lake_props(engine))
    model = Model(engine)
    rng = random.Random(hash(engine) & 0xFFFF)
    for step in range(40):
        op, batch, payload = random_write(rng, engine)
        write(server.client, command(table_name, op), [batch])
        if op == "delete":
            for key in payload:
                model.delete(key)
        else:
            for row in payload:
                model.upsert(row)
        if step % 8 == 7:  # several rounds, so later ones delete rows of earlier files
            lake = wait_lake(server, table_name)
            check_lake_matches(lake["metadata_location"], model.rows, spark_or_none)
    lake = wait_lake(server, table_name)
    check_lake_matches(lake["metadata_location"], model.rows, spark_or_none)
    deletes = [f for f in live_files(lake["metadata_location"]) if f["content"] == 1]
    assert deletes, "no position delete file was written"
    # A restart rebuilds the key index from the lake: later rounds still delete the right rows.
    server.restart()
    for step in range(10):
        op, batch, payload = random_write(rng, engine)
        write(server.client, command(table_name, op), [batch])
        for item in payload:
            model.delete(item) if op == "delete" else model.upsert(item)
    lake = wait_lake(server, table_name)
    check_lake_matches(lake["metadata_location"], model.rows, spark_or_none)
    assert equality_deletes_ever(warehouse) == 0


def test_system_columns_trace_each_row_to_its_last_change(make_lake_server, table_name):
    server = make_lake_server()
    create_pk_table(server, table_name, buckets=1, properties=lake_props("last_row"))
    row = {"id": 1, "tag": "a", "v": 1, "s": "x", "flag": True, "ver": 1}
    for v in range(3):
        batch = pa.Table.from_pylist([{**row, "v": v}], schema=SCHEMA).to_batches()[0]
        write(server.client, command(table_name, "upsert"), [batch])
        wait_lake(server, table_name)
    lake = wait_lake(server, table_name)
    rows = StaticTable.from_metadata(lake["metadata_location"]).scan().to_arrow().to_pylist()
    assert len(rows) == 1 and rows[0]["v"] == 2 and rows[0]["__bucket"] == 0
    # changelog.image full: +I, then -U/+U twice: the last +U is offset 4.
    assert rows[0]["__offset"] == 4
    assert rows[0]["__timestamp"] is not None


def test_deleted_rows_stay_bounded_under_many_rounds(make_lake_server, table_name,
                                                     spark_or_none):
    """Many update rounds to 20 keys: compaction rewrites mostly-deleted files and drops the
    delete files it made obsolete, so live data and delete files stay bounded."""
    server = make_lake_server(*QUICK_MAINTENANCE, freshness_ms=50)
    create_pk_table(server, table_name, buckets=2,
                    properties=lake_props("last_row", **{"lake.compaction.delete-ratio": "0.5"}))
    model = Model("last_row")
    rng = random.Random(7)
    for step in range(60):
        rows = [{"id": i, "tag": "a", "v": rng.randint(0, 99), "s": None, "flag": None,
                 "ver": step} for i in rng.sample(range(20), 10)]
        write(server.client, command(table_name, "upsert"),
              [pa.Table.from_pylist(rows, schema=SCHEMA).to_batches()[0]])
        for r in rows:
            model.upsert(r)
        if step % 6 == 5:
            wait_lake(server, table_name)
    # Maintenance expires snapshots at once here, so every check reads a settled table.
    deadline = time.monotonic() + 20
    while True:
        lake = wait_settled(server, table_name)
        files = live_files(lake["metadata_location"])
        data = [f for f in files if f["content"] == 0]
        deletes = [f for f in files if f["content"] == 1]
        if len(data) <= 6 and len(deletes) <= 6:
            break
        assert time.monotonic() < deadline, (
            f"live files not bounded: {len(data)} data, {len(deletes)} delete files")
        time.sleep(0.2)
    check_lake_matches(lake["metadata_location"], model.rows, spark_or_none)
    assert sum(f["record_count"] for f in data) < 20 * 3
    assert "delete files" in server.log_tail(2000), "compaction never ran"


def test_compaction_steps_follow_each_other_while_a_backlog_lasts(make_lake_server, table_name):
    """A maintenance pass whose step leaves enough small files for another takes the next step
    at once, not a pass later (docs/lake.md, "Compaction"). Two small files and three larger
    ones: the first step merges the two small ones (a larger file waits for peers of its size),
    which leaves four files, so the second step follows within the same pass."""
    interval_ms = 10_000
    server = make_lake_server("--lake-maintenance-interval-ms", str(interval_ms),
                              "--lake-compaction-min-files", "4", freshness_ms=50)
    create_pk_table(server, table_name, buckets=1, properties=lake_props("last_row"))
    model = Model("last_row")
    first = 0
    for rows in (1000, 1000, 5000, 5000, 5000):  # a round, so a data file, each
        batch = [{"id": i, "tag": "k", "v": i, "s": f"value {i}", "flag": i % 2 == 0, "ver": 1}
                 for i in range(first, first + rows)]
        write(server.client, command(table_name, "upsert"),
              [pa.Table.from_pylist(batch, schema=SCHEMA).to_batches()[0]])
        for r in batch:
            model.upsert(r)
        first += rows
        wait_lake(server, table_name)

    def data_files(lake):
        return [f for f in live_files(lake["metadata_location"]) if f["content"] == 0]

    sizes = sorted(f["file_size_in_bytes"] for f in data_files(wait_lake(server, table_name)))
    assert len(sizes) == 5 and sizes[2] > sizes[0] + sizes[1], sizes
    lake = wait_describe(server, table_name, lambda lake: len(data_files(lake)) == 1,
                         "compaction into one file", timeout_s=4 * interval_ms / 1000)
    metadata = json.loads(local_path(lake["metadata_location"]).read_text())
    compactions = sorted(snap["timestamp-ms"] for snap in metadata["snapshots"]
                         if "oxbow.compacted-files" in snap["summary"])
    assert len(compactions) == 2, metadata["snapshots"]
    assert compactions[1] - compactions[0] < interval_ms / 2, compactions
    check_lake_matches(lake["metadata_location"], model.rows)


def test_updates_racing_compaction_of_a_large_file_reach_the_lake(make_lake_server, table_name):
    """Updates keep coming while compaction rewrites a file of more keys than one slice of its
    lock holds: the rows rounds change while it copies them (its watch) and the keys it settles
    on the output afterwards leave the lake equal to the model, every key once (docs/lake.md,
    "Compaction")."""
    server = make_lake_server("--lake-maintenance-interval-ms", "50",
                              "--lake-compaction-min-files", "2", freshness_ms=50)
    create_pk_table(server, table_name, buckets=1,
                    properties=lake_props("last_row", **{"lake.compaction.delete-ratio": "0.05"}))
    model = Model("last_row")
    rng = random.Random(11)

    def upsert(ids, step):
        rows = [{"id": i, "tag": "a", "v": step, "s": None, "flag": None, "ver": step}
                for i in ids]
        write(server.client, command(table_name, "upsert"),
              [pa.Table.from_pylist(rows, schema=SCHEMA).to_batches()[0]])
        for r in rows:
            model.upsert(r)

    upsert(range(20_000), 0)
    wait_lake(server, table_name)
    for step in range(1, 26):
        upsert(rng.sample(range(20_000), 1000), step)
        time.sleep(0.02)
    lake = wait_settled(server, table_name)
    check_lake_matches(lake["metadata_location"], model.rows)
    assert "compacted" in server.log_tail(5000), "compaction never ran"


def test_a_primary_key_table_with_coarse_timestamps_is_refused(lake_server, table_name):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("t", pa.timestamp("s"))])
    with pytest.raises(pa.ArrowInvalid, match="microseconds or nanoseconds"):
        create_pk_table(lake_server, table_name, schema=schema, primary_key=["id"],
                        properties={"lake.enabled": "true"})
