"""Helpers of the lake suite: wait for tiering, read the lake with pyiceberg / DuckDB / fastavro,
read the log with its offsets, and build the lake form a log row must take.

Everything here talks to oxbowd through pyarrow.flight only and reads the warehouse with the
reference readers only; no Oxbow code runs on the client side.
"""

from __future__ import annotations

import json
import math
import pathlib
import time
from urllib.parse import urlparse

import duckdb
import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as fl
from pyiceberg.table import StaticTable

from oxbowtest.flight import ALIGNED
from oxbowtest.server import OxbowServer

SYSTEM_COLUMNS = ["__bucket", "__offset", "__timestamp"]
LAKE_WAIT_S = 20.0


def local_path(location: str) -> pathlib.Path:
    """A warehouse location (plain path or file:// URI) as a local path."""
    if location.startswith("file:"):
        return pathlib.Path(urlparse(location).path)
    return pathlib.Path(location)


def wait_lake(server: OxbowServer, table: str, timeout_s: float = LAKE_WAIT_S) -> dict:
    """Waits (bounded) until the lake holds every durable row; returns describe_table's "lake"."""
    deadline = time.monotonic() + timeout_s
    while True:
        described = server.describe(table)
        lake = described["lake"]
        if lake.get("enabled") and lake["lag_rows"] == 0 and "error" not in lake:
            ends = [o["next_offset"] for o in described["bucket_offsets"]]
            assert lake["tiered_offsets"] == ends, (
                f"lag_rows is 0 but tiered_offsets {lake['tiered_offsets']} != log ends {ends}")
            return lake
        if time.monotonic() > deadline:
            raise AssertionError(f"{table}: the lake did not catch up within {timeout_s}s: {lake}\n"
                                 f"{server.log_tail()}")
        time.sleep(0.05)


def wait_describe(server: OxbowServer, table: str, predicate, what: str,
                  timeout_s: float = LAKE_WAIT_S) -> dict:
    """Waits (bounded) until predicate(describe_table's "lake") holds; returns it."""
    deadline = time.monotonic() + timeout_s
    while True:
        lake = server.describe(table)["lake"]
        if predicate(lake):
            return lake
        if time.monotonic() > deadline:
            raise AssertionError(f"{table}: {what} did not happen within {timeout_s}s: {lake}\n"
                                 f"{server.log_tail()}")
        time.sleep(0.05)


def fresh_files_left(metadata_location: str) -> bool:
    """Whether the current snapshot of that metadata still reads a fresh file (or a commit since
    expired what it names, so the answer is not known yet)."""
    try:
        return any(f.endswith(".fresh.parquet") for f in data_files(metadata_location))
    except OSError:
        return True


def wait_settled(server: OxbowServer, table: str, predicate=lambda lake: True,
                 what: str = "the lake settling", quiet_s: float = 0.6,
                 timeout_s: float = 30) -> dict:
    """Waits (bounded) until the lake holds every durable row, predicate holds, the current
    snapshot has no fresh file left, and then the metadata stays the same for `quiet_s`.
    Maintenance rewrites fresh files (lake.fresh-codec, lz4 by default) once their partition is
    quiet and expires snapshots, deleting the files only they reached, so a reader of a metadata
    location it just replaced can miss them (as with any Iceberg expiry): checks read a settled
    table."""
    def settled(lake):
        if lake["lag_rows"] != 0 or not predicate(lake):
            return False
        return lake["metadata_location"] is None or not fresh_files_left(lake["metadata_location"])
    deadline = time.monotonic() + timeout_s
    wait_describe(server, table, settled, what, timeout_s)
    status = wait_lake(server, table, timeout_s=timeout_s)
    since = time.monotonic()
    while time.monotonic() - since < quiet_s:
        assert time.monotonic() < deadline, f"{table}: the lake kept changing for {timeout_s}s"
        time.sleep(0.05)
        now = wait_lake(server, table, timeout_s=timeout_s)
        if now["metadata_location"] != status["metadata_location"]:
            status, since = now, time.monotonic()
    return status


def iceberg_table(metadata_location: str):
    return StaticTable.from_metadata(metadata_location)


def lake_rows(metadata_location: str) -> pa.Table:
    """The whole lake table as pyiceberg scans it, sorted by (__bucket, __offset)."""
    scanned = iceberg_table(metadata_location).scan().to_arrow()
    return scanned.sort_by([("__bucket", "ascending"), ("__offset", "ascending")])


def read_log(server: OxbowServer, table: str) -> pa.Table:
    """Every bucket of the log from earliest with __bucket and __offset taken from app_metadata
    (each message's base_offset..next_offset), sorted by (__bucket, __offset)."""
    described = server.describe(table)
    parts = []
    for o in described["bucket_offsets"]:
        b = o["bucket"]
        if o["next_offset"] == o["earliest_offset"]:
            continue
        reader = server.client.do_get(
            fl.Ticket(
                json.dumps({"table": table, "bucket": b, "from": "earliest",
                            "to": o["next_offset"]}).encode()), options=ALIGNED)
        position = None
        for chunk in reader:
            meta = json.loads(chunk.app_metadata.to_pybytes())
            assert meta["bucket"] == b
            n = chunk.data.num_rows
            assert meta["next_offset"] - meta["base_offset"] == n, f"app_metadata {meta}, {n} rows"
            if position is not None:
                assert meta["base_offset"] == position, f"bucket {b}: gap/overlap at {meta}"
            position = meta["next_offset"]
            t = pa.Table.from_batches([chunk.data])
            t = t.append_column("__bucket", pa.array([b] * n, pa.int32()))
            t = t.append_column("__offset", pa.array(range(meta["base_offset"],
                                                           meta["next_offset"]), pa.int64()))
            parts.append(t)
    if not parts:
        return None
    return pa.concat_tables(parts)


# --- the lake form of a log column -----------------------------------------------------------


def lake_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type a log column has in the lake as pyiceberg reads it back."""
    if t in (pa.int8(), pa.int16(), pa.uint8(), pa.uint16()):
        return pa.int32()
    if t == pa.uint32():
        return pa.int64()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC" if t.tz else None)
    return t


def lake_column(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A log column converted the way the lake must store it (timestamps floor-divided to us)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    t = column.type
    target = lake_type(t)
    if pa.types.is_timestamp(t):
        raw = column.view(pa.int64()).to_pylist()
        factor = {"s": 10**6, "ms": 10**3, "us": 1, "ns": None}[t.unit]
        if factor is None:
            micros = [None if v is None else v // 1000 for v in raw]  # floor
        else:
            micros = [None if v is None else v * factor for v in raw]
        return pa.array(micros, pa.int64()).view(target)
    return column.cast(target)


def expected_lake(log: pa.Table) -> pa.Table:
    """The log (with __bucket/__offset) in lake form, without __timestamp."""
    return pa.table({name: lake_column(log.column(name)) for name in log.column_names})


def assert_same_columns(actual: pa.Table, expected: pa.Table, names=None) -> None:
    """Every column of `names` (default: expected's) equal in type and values; NaN == NaN."""
    assert actual.num_rows == expected.num_rows, (
        f"{actual.num_rows} rows in the lake, the log has {expected.num_rows}")
    for name in names or expected.column_names:
        got = actual.column(name).combine_chunks()
        want = expected.column(name).combine_chunks()
        assert got.type == want.type, f"column {name}: type {got.type}, expected {want.type}"
        if pa.types.is_floating(want.type):
            got_nan, want_nan = pc.is_nan(got), pc.is_nan(want)
            assert got_nan.equals(want_nan), f"column {name}: NaN positions differ"
            got = pc.if_else(got_nan, pa.scalar(0, got.type), got)
            want = pc.if_else(want_nan, pa.scalar(0, want.type), want)
            signs = [[None if v is None else math.copysign(1.0, v) for v in a.to_pylist()]
                     for a in (got, want)]
            assert signs[0] == signs[1], f"column {name}: signs (of zeros) differ"
        if not got.equals(want):
            diffs = [i for i in range(len(want)) if not got[i].equals(want[i])][:5]
            raise AssertionError(
                f"column {name} differs at rows {diffs}: "
                f"got {[got[i] for i in diffs]}, expected {[want[i] for i in diffs]}")


def assert_unique_offsets(lake: pa.Table) -> None:
    pairs = lake.group_by(["__bucket", "__offset"]).aggregate([])
    assert pairs.num_rows == lake.num_rows, (
        f"{lake.num_rows - pairs.num_rows} (__bucket, __offset) pairs occur more than once")


def assert_lake_equals_log(server: OxbowServer, table: str, metadata_location: str) -> pa.Table:
    """The lake holds exactly the log's rows: same values in lake form, each (__bucket, __offset)
    once and equal to the log's own offsets. Returns the lake table."""
    log = read_log(server, table)
    lake = lake_rows(metadata_location)
    assert_unique_offsets(lake)
    expected = expected_lake(log)
    assert_same_columns(lake, expected)
    return lake


# --- the files of the current snapshot ---------------------------------------------------------


def data_files(metadata_location: str) -> list[str]:
    """Local paths of every data file the current snapshot references (pyiceberg's plan)."""
    tasks = iceberg_table(metadata_location).scan().plan_files()
    return [str(local_path(t.file.file_path)) for t in tasks]


def duckdb_union(paths: list[str]) -> pa.Table:
    """Every data file read by DuckDB on its own, concatenated."""
    con = duckdb.connect()
    parts = [con.sql(f"SELECT * FROM read_parquet('{p}', hive_partitioning = false)").to_arrow_table() for p in paths]
    con.close()
    return pa.concat_tables(parts, promote_options="default")


def metadata_json(metadata_location: str) -> dict:
    return json.loads(local_path(metadata_location).read_text())


def avro_files_of_current_snapshot(metadata_location: str) -> tuple[str, list[str]]:
    """(manifest list, manifests) of the current snapshot, as local paths."""
    meta = metadata_json(metadata_location)
    current = meta["current-snapshot-id"]
    snapshot = next(s for s in meta["snapshots"] if s["snapshot-id"] == current)
    manifest_list = str(local_path(snapshot["manifest-list"]))
    with open(manifest_list, "rb") as f:
        manifests = [str(local_path(r["manifest_path"])) for r in fastavro.reader(f)]
    return manifest_list, manifests


def field_ids(avro_schema) -> dict:
    """field name path -> field-id over an Avro schema (records nested in unions and arrays)."""
    out = {}

    def walk(node, prefix):
        if isinstance(node, list):
            for branch in node:
                walk(branch, prefix)
        elif isinstance(node, dict):
            if node.get("type") == "record":
                for f in node["fields"]:
                    path = f"{prefix}{f['name']}"
                    out[path] = f.get("field-id")
                    walk(f["type"], path + ".")
            elif node.get("type") == "array":
                walk(node["items"], prefix)
            elif node.get("type") == "map":
                walk(node["values"], prefix)

    walk(avro_schema, "")
    return out


# --- sample values ----------------------------------------------------------------------------


def lake_type_samples() -> dict:
    """type name -> (type, values) for every type the lake holds: the integration suite's samples,
    minus uint64 (never tiered) and with second/millisecond timestamps that fit in microseconds
    (larger ones cannot be tiered; test_lake_lifecycle covers them). Nanosecond samples include
    negative values that are not whole microseconds (floor division)."""
    from decimal import Decimal as D

    from oxbowtest import type_samples

    samples = {k: v for k, v in type_samples.TYPES.items() if k != "uint64"}
    for tz in (None, "UTC"):
        suffix = ", tz=UTC" if tz else ""
        samples[f"timestamp[s{suffix}]"] = (pa.timestamp("s", tz=tz),
                                            [0, -1, 1_700_000_000, -(2**40), 2**42, None])
        samples[f"timestamp[ms{suffix}]"] = (pa.timestamp("ms", tz=tz),
                                             [0, -1, 1_700_000_000_123, -(2**50), None])
        samples[f"timestamp[ns{suffix}]"] = (pa.timestamp("ns", tz=tz),
                                             [0, -1, -1001, 999, 1_700_000_000_123_456_789,
                                              2**62, -(2**62), None])
    samples["decimal128(7, 2)"] = (pa.decimal128(7, 2), [D("-99999.99"), D("0.00"),
                                                          D("12345.67"), None])
    samples["decimal128(18, 18)"] = (pa.decimal128(18, 18), [D("0.999999999999999999"),
                                                            D("-0.000000000000000001"), None])
    samples["timestamp[ms, tz=Europe/Paris]"] = (pa.timestamp("ms", tz="Europe/Paris"),
                                                 [1_700_000_000_123, -5, None])
    return samples


def wide():
    """A schema with a column of every lake type sample (three rows each) and two required
    columns, and its values by column name (without id)."""
    samples = lake_type_samples()
    fields = [pa.field("id", pa.int64(), nullable=False)]
    fields += [pa.field(f"c{i}", t) for i, (t, _) in enumerate(samples.values())]
    fields += [pa.field("nn_int16", pa.int16(), nullable=False),
               pa.field("nn_string", pa.string(), nullable=False)]
    values = {f"c{i}": v for i, (_, v) in enumerate(samples.values())}
    values["nn_int16"] = [-(2**15), 7, 2**15 - 1]
    values["nn_string"] = ["", "ünïcødé", "🚀"]
    return pa.schema(fields), values
