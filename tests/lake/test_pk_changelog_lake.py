"""The changelog lake table of a primary-key table (`lake.changelog` "true", docs/lake.md):
every changelog record (+I, -U, +U, -D) tiered into the append-only Iceberg table
`<table>$changelog`, in the same rounds as the table's own lake.

The expected records come from the Python model of tests/integration/test_primary_keys.py: with
one bucket every record's offset is its place in the model's emission order, so each reader
(pyiceberg, DuckDB, Spark) must return exactly the model's records, offsets included. A
restart, a crash between the two tables' commits (one table's newest commit undone on disk) and
torn or orphan metadata files must all leave it so.
"""

from __future__ import annotations

import json
import random
import time
import uuid
import zlib

import pyarrow as pa
import pytest

from oxbowtest.lake import fresh_files_left, local_path, wait_describe, wait_lake
from test_pk_lake import QUICK_MAINTENANCE, check_lake_matches, lake_props
from oxbowtest.primary_keys import (COLUMNS, SCHEMA, Model, command, create_pk_table, random_write,
                                    write)
from pyiceberg.table import StaticTable
from oxbowtest.readers import check_readers


class ChangelogModel(Model):
    """The model, also keeping every record it emits in order: with one bucket, record i of
    the list is changelog offset i."""

    def __init__(self, engine: str):
        super().__init__(engine)
        self.records: list[dict] = []

    def _emit(self, key, change, row):
        super()._emit(key, change, row)
        self.records.append({**{c: row[c] for c in COLUMNS}, "_change_type": change,
                             "__bucket": 0, "__offset": len(self.records)})

    def apply(self, op: str, payload) -> None:
        for item in payload:
            self.delete(item) if op == "delete" else self.upsert(item)


RECORD_SCHEMA = pa.schema([*SCHEMA, pa.field("_change_type", pa.string(), nullable=False),
                           pa.field("__bucket", pa.int32(), nullable=False),
                           pa.field("__offset", pa.int64(), nullable=False)])


def expected_records(model: ChangelogModel) -> pa.Table:
    return pa.Table.from_pylist(model.records, schema=RECORD_SCHEMA)


def changelog_location(server, table: str) -> str:
    """The changelog lake table's metadata file once it holds every durable record."""
    described = server.describe(table)
    ends = [o["next_offset"] for o in described["bucket_offsets"]]
    lake = wait_describe(server, table,
                         lambda lake: lake.get("changelog", {}).get("tiered_offsets") == ends,
                         "the changelog lake table catching up")
    return lake["changelog"]["metadata_location"]


def wait_changelog_settled(server, table: str, quiet_s: float = 0.6, timeout_s: float = 30) -> str:
    """changelog_location, once that metadata file stayed current for `quiet_s` and reads no
    fresh file (maintenance rewrites those and expires snapshots at once, so it may delete files a
    reader of a replaced metadata file would open)."""
    deadline = time.monotonic() + timeout_s
    location, since = changelog_location(server, table), time.monotonic()
    while time.monotonic() - since < quiet_s or fresh_files_left(location):
        assert time.monotonic() < deadline, f"{table}: the changelog table kept changing"
        time.sleep(0.05)
        now = changelog_location(server, table)
        if now != location:
            location, since = now, time.monotonic()
    return location


def check_changelog(server, table: str, model: ChangelogModel, spark) -> str:
    location = changelog_location(server, table)
    assert location.split("/")[-3] == table.split(".")[1] + "$changelog", location
    schema = StaticTable.from_metadata(location).schema()
    assert [f.name for f in schema.fields] == [*COLUMNS, "_change_type", "__bucket", "__offset",
                                               "__timestamp"]
    assert schema.identifier_field_ids == []  # a key repeats in a changelog
    check_readers(location, expected_records(model), spark)
    return location


def write_random(server, table: str, model: ChangelogModel, rng: random.Random, steps: int,
                 engine: str) -> None:
    for _ in range(steps):
        op, batch, payload = random_write(rng, engine)
        write(server.client, command(table, op), [batch])
        model.apply(op, payload)


@pytest.mark.parametrize("engine", ["last_row", "aggregate", "last_row_image_none"])
def test_changelog_lake_table_holds_every_record(make_lake_server, table_name, engine,
                                                 spark_or_none):
    server = make_lake_server()
    create_pk_table(server, table_name, buckets=1,
                    properties=lake_props(engine, **{"lake.changelog": "true"}))
    model = ChangelogModel(engine)
    # A seed fixed per engine: hash() of a str differs from one Python process to the next,
    # and some seeds write no delete that finds its key.
    rng = random.Random(zlib.crc32(engine.encode()))
    for _ in range(4):  # several rounds
        write_random(server, table_name, model, rng, 8, engine)
        wait_lake(server, table_name)
        check_changelog(server, table_name, model, spark_or_none)
    changes = {r["_change_type"] for r in model.records}
    assert {"+U", "-D"} <= changes, changes  # partial updates and deletes happened
    lake = wait_lake(server, table_name)
    check_lake_matches(lake["metadata_location"], model.rows, spark_or_none)
    # Both lake tables record the same offsets, in the same rounds.
    assert server.describe(table_name)["lake"]["changelog"]["tiered_offsets"] == \
        lake["tiered_offsets"]
    server.restart()
    write_random(server, table_name, model, rng, 10, engine)
    lake = wait_lake(server, table_name)
    check_changelog(server, table_name, model, spark_or_none)
    check_lake_matches(lake["metadata_location"], model.rows, spark_or_none)


def current_version(table_dir) -> int:
    return int((table_dir / "metadata" / "version-hint.text").read_text())


def undo_last_commit(table_dir) -> None:
    """What a crash right before the table's newest commit would have left: the newest
    metadata file never published (its manifests, manifest list and data files stay behind as
    orphans)."""
    version = current_version(table_dir)
    (table_dir / "metadata" / f"v{version}.metadata.json").unlink()
    (table_dir / "metadata" / "version-hint.text").write_text(str(version - 1))


def tiered_offsets(table_dir) -> list[int]:
    metadata = json.loads(
        (table_dir / "metadata" / f"v{current_version(table_dir)}.metadata.json").read_text())
    snapshot = next(s for s in metadata["snapshots"]
                    if s["snapshot-id"] == metadata["current-snapshot-id"])
    return json.loads(snapshot["summary"]["oxbow.tiered-offsets"])


def referenced_metadata_files(location: str) -> set[str]:
    """Every file under metadata/ the table references: metadata files, manifest lists and
    manifests (read with fastavro), and version-hint.text."""
    import fastavro

    path = local_path(location)
    metadata = json.loads(path.read_text())
    out = {path.name, "version-hint.text"}
    out |= {local_path(e["metadata-file"]).name for e in metadata.get("metadata-log", [])}
    for snapshot in metadata["snapshots"]:
        out.add(local_path(snapshot["manifest-list"]).name)
        with open(local_path(snapshot["manifest-list"]), "rb") as f:
            out |= {local_path(m["manifest_path"]).name for m in fastavro.reader(f)}
    return out


@pytest.mark.parametrize("lagging", ["changelog", "table"])
def test_a_crash_between_the_two_commits_is_caught_up(make_lake_server, warehouse, table_name,
                                                      lagging, spark_or_none):
    """One lake table's newest commit undone on disk (as if oxbowd died between the two commits
    of a round), plus torn and orphan files under metadata/: after the restart the lagging
    table catches up from its own offsets, neither table holds a record twice, and every
    unreferenced metadata file is gone."""
    server = make_lake_server()
    create_pk_table(server, table_name, buckets=1,
                    properties=lake_props("last_row", **{"lake.changelog": "true"}))
    model = ChangelogModel("last_row")
    rng = random.Random(11)
    write_random(server, table_name, model, rng, 12, "last_row")
    wait_lake(server, table_name)
    changelog_location(server, table_name)
    write_random(server, table_name, model, rng, 6, "last_row")
    lake = wait_lake(server, table_name)
    changelog_location(server, table_name)
    server.stop()

    namespace, name = table_name.split(".")
    table_dir = warehouse / namespace / (name + "$changelog" if lagging == "changelog" else name)
    other_dir = warehouse / namespace / (name if lagging == "changelog" else name + "$changelog")
    undo_last_commit(table_dir)
    assert tiered_offsets(table_dir) < tiered_offsets(other_dir)
    metadata = table_dir / "metadata"
    planted = [metadata / f"{uuid.uuid4()}-m0.avro", metadata / f"snap-1-0-{uuid.uuid4()}.avro",
               metadata / f".v{current_version(table_dir) + 1}.metadata.json.{uuid.uuid4()}.tmp",
               metadata / f"v{current_version(table_dir) + 7}.metadata.json"]
    for path in planted:
        path.write_bytes(b"Obj\x01torn")  # a torn Avro header, or junk where JSON should be

    server.start()
    lake = wait_lake(server, table_name)
    check_lake_matches(lake["metadata_location"], model.rows, spark_or_none)
    check_changelog(server, table_name, model, spark_or_none)
    assert tiered_offsets(table_dir) == tiered_offsets(other_dir) == lake["tiered_offsets"]
    for path in planted:
        assert not path.exists(), f"{path.name} was not removed"
    described = server.describe(table_name)["lake"]
    location = (described["changelog"]["metadata_location"] if lagging == "changelog"
                else described["metadata_location"])
    # Only files of the current snapshots and metadata log remain (those written since the
    # restart included: the check runs once the table is caught up and quiet).
    left = {p.name for p in metadata.iterdir()} - referenced_metadata_files(location)
    assert not left, f"unreferenced metadata files after the restart: {sorted(left)}"


def test_changelog_lake_table_is_maintained(make_lake_server, table_name):
    """Manifest merging, compaction and expiry keep the changelog lake table small too."""
    server = make_lake_server(*QUICK_MAINTENANCE, freshness_ms=50)
    create_pk_table(server, table_name, buckets=1,
                    properties=lake_props("last_row", **{"lake.changelog": "true"}))
    model = ChangelogModel("last_row")
    rng = random.Random(5)
    for _ in range(12):
        write_random(server, table_name, model, rng, 3, "last_row")
        wait_lake(server, table_name)
        changelog_location(server, table_name)

    def small(lake) -> bool:
        location = lake.get("changelog", {}).get("metadata_location")
        if not location:
            return False
        metadata = json.loads(local_path(location).read_text())
        current = next(s for s in metadata["snapshots"]
                       if s["snapshot-id"] == metadata["current-snapshot-id"])
        return (len(metadata["snapshots"]) <= 3 and
                int(current["summary"]["total-data-files"]) < 4)

    lake = wait_describe(server, table_name, small, "maintenance of the changelog table")
    check_readers(lake["changelog"]["metadata_location"], expected_records(model), None)


def test_lake_changelog_property_is_checked(lake_server, table_name):
    with pytest.raises(pa.ArrowInvalid, match="lake.changelog must be"):
        create_pk_table(lake_server, table_name,
                        properties={"lake.enabled": "true", "lake.changelog": "yes"})
    with pytest.raises(pa.ArrowInvalid, match='needs lake.enabled "true"'):
        create_pk_table(lake_server, table_name, properties={"lake.changelog": "true"})
    with pytest.raises(pa.ArrowInvalid, match="for primary-key tables"):
        lake_server.action("create_table", {
            "table": table_name, "properties": {"lake.changelog": "true"},
            "schema": {"fields": [{"name": "id", "type": "int64", "nullable": False}]}})
