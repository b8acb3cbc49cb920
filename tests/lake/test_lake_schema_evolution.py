"""Schema evolution of lake-enabled log tables (docs/lake.md, "Schema evolution"): alter_table
interleaved with writes; the Iceberg table gets a new schema per column change with stable field
ids, and pyiceberg, DuckDB (and, once, Spark) read the old and the new data files together in the
current schema, exactly as a Python model of the table says. Oxbow's own DoGet (served from the
lake's files where retention deleted the log) and union read agree."""

from __future__ import annotations

import copy
import json
import time
from decimal import Decimal

import pyarrow as pa
import pyarrow.flight as fl
import pyarrow.parquet as pq
from pyiceberg.table import StaticTable

from oxbowtest.lake import data_files, local_path, metadata_json, wait_lake
from oxbowtest.flight import ALIGNED, expect_error
from oxbowtest.readers import duckdb_rows, lake_readers, pyiceberg_rows

# 4 KiB segments and retention: tiered segments are deleted, so DoGet of old offsets reads the
# lake's files, written in older schemas.
SMALL_SEGMENTS = ("--segment-bytes", "4096", "--retention-bytes", "4096")
SYSTEM = ["__bucket", "__offset", "__timestamp"]


class Model:
    """The table as the Python side knows it: columns (name -> pyarrow type, in order) and every
    row (a dict by column name) in offset order (one bucket; id == offset)."""

    def __init__(self, schema: pa.Schema):
        self.columns = {f.name: f.type for f in schema}
        self.nullable = {f.name: f.nullable for f in schema}
        self.rows: list[dict] = []

    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(n, t, nullable=self.nullable[n])
                          for n, t in self.columns.items()])

    def put(self, server, table, ids, schema=None):
        """Writes rows `ids` in `schema` (default: the current one); records them in the current
        schema (columns the writer lacks are null, columns the table dropped are gone)."""
        schema = schema or self.schema()
        rows = [value_row(schema, i) for i in ids]
        server.put(table, [pa.RecordBatch.from_pylist(rows, schema=schema)], schema=schema)
        for r in rows:
            self.rows.append({n: r.get(n) for n in self.columns})

    def alter(self, server, table, *changes):
        described = server.action("alter_table", {"table": table, "changes": list(changes)})
        for c in changes:
            if c["op"] == "add_column":
                items = list(self.columns.items())
                at = len(items)
                if c.get("first"):
                    at = 0
                elif "after" in c:
                    at = [n for n, _ in items].index(c["after"]) + 1
                items.insert(at, (c["name"], parse_type(c["type"])))
                self.columns = dict(items)
                self.nullable[c["name"]] = True
                for r in self.rows:
                    r[c["name"]] = None
            elif c["op"] == "drop_column":
                del self.columns[c["name"]]
                for r in self.rows:
                    del r[c["name"]]
            elif c["op"] == "rename_column":
                self.columns = {c["new_name"] if n == c["name"] else n: t
                                for n, t in self.columns.items()}
                self.nullable[c["new_name"]] = self.nullable[c["name"]]
                for r in self.rows:
                    r[c["new_name"]] = r.pop(c["name"])
            elif c["op"] == "widen_type":
                self.columns[c["name"]] = parse_type(c["type"])
            elif c["op"] == "make_optional":
                self.nullable[c["name"]] = True
        assert [f["name"] for f in described["schema"]["fields"]] == list(self.columns)
        return described

    def expected(self) -> list[dict]:
        """Rows as the lake readers give them: the columns plus __bucket and __offset."""
        return [{**r, "__bucket": 0, "__offset": i} for i, r in enumerate(self.rows)]


def check_readers(location: str, model: Model, spark) -> None:
    """pyiceberg, DuckDB and Spark (when given) each return every column of the lake's current
    schema, in order, and exactly the model's rows: old files' missing columns null, renamed
    columns under their new names, widened values in the wider type. (Values are compared, not
    Arrow types: pyiceberg gives a string column that old files lack as large_string.)"""
    md = metadata_json(location)
    current = next(s for s in md["schemas"] if s["schema-id"] == md["current-schema-id"])
    names = [f["name"] for f in current["fields"]]
    want = model.expected()
    for reader, read in lake_readers(spark).items():
        got = read(location)
        assert got.column_names == names, f"{reader}: columns {got.column_names}, not {names}"
        rows = sorted(got.drop_columns(["__timestamp"]).to_pylist(), key=lambda r: r["__offset"])
        assert len(rows) == len(want), f"{reader}: {len(rows)} rows, expected {len(want)}"
        for have, expected in zip(rows, want):
            assert have == expected, f"{reader}: row {have} != {expected}"
        for name, t in model.columns.items():
            if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
                have = got.schema.field(name).type
                assert have.bit_width == max(t.bit_width, 32) if not pa.types.is_decimal(t) else (
                    have.precision == t.precision), f"{reader}: {name} is {have}, table has {t}"


def parse_type(name: str) -> pa.DataType:
    """The pyarrow type of an Oxbow type name (the ones this file uses)."""
    if name.startswith("decimal128("):
        p, s = name[name.index("(") + 1:-1].split(",")
        return pa.decimal128(int(p), int(s))
    if name == "list<item: int32>":
        return pa.list_(pa.int32())
    return pa.type_for_alias(name)


def value_row(schema: pa.Schema, i: int) -> dict:
    """Row `i` in `schema`: values derived from the row (and, for strings, the column's name)."""
    out = {}
    for f in schema:
        t = f.type
        if f.name == "id":
            out[f.name] = i
        elif pa.types.is_integer(t):
            out[f.name] = None if i % 7 == 3 else (i * 3) % 100 - 50
        elif pa.types.is_floating(t):
            out[f.name] = i + 0.5
        elif pa.types.is_list(t):
            out[f.name] = None if i % 5 == 1 else [i, None, -i]
        elif pa.types.is_decimal(t):
            out[f.name] = Decimal(f"{i}.25")
        else:
            out[f.name] = f"{f.name}-{i:040d}"
    return out


def get(server, ticket: dict) -> pa.Table:
    reader = server.client.do_get(fl.Ticket(json.dumps(ticket).encode()), options=ALIGNED)
    batches = [chunk.data for chunk in reader]
    return pa.Table.from_batches(batches, schema=reader.schema)


def check_oxbow_reads(server, table: str, model: Model) -> None:
    """DoGet from offset 0 (the lake's files where retention deleted the log) and the union read
    return the model's rows in the current schema."""
    want = pa.Table.from_pylist(model.rows, schema=model.schema())
    got = get(server, {"table": table, "bucket": 0, "from": 0})
    assert got.schema.names == want.schema.names and got.to_pylist() == want.to_pylist()
    got = get(server, {"table": table, "union": True}).sort_by("id")
    assert got.to_pylist() == want.to_pylist()


def check_lake(server, table: str, model: Model, spark=None) -> dict:
    lake = wait_lake(server, table)
    location = lake["metadata_location"]
    check_readers(location, model, spark)
    check_oxbow_reads(server, table, model)
    return metadata_json(location)


def ids_by_name(schema: dict) -> dict:
    return {f["name"]: f["id"] for f in schema["fields"]}


V0 = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("a", pa.int32()),
                pa.field("b", pa.float32()), pa.field("c", pa.string()),
                pa.field("d", pa.decimal128(9, 2)), pa.field("x", pa.int16())])


def test_alters_interleaved_with_writes_read_by_every_reader(make_lake_server, table_name,
                                                             spark_or_none):
    server = make_lake_server(*SMALL_SEGMENTS)
    server.create_table(table_name, V0)
    model = Model(V0)
    for first in range(0, 60, 20):
        model.put(server, table_name, range(first, first + 20))
    md0 = check_lake(server, table_name, model)
    assert md0["current-schema-id"] == 0
    schema0 = md0["schemas"][0]

    # Alter 1, waiting for nothing: the next round holds rows of both versions.
    v1 = model.alter(server, table_name,
                     {"op": "add_column", "name": "e", "type": "string", "after": "id"},
                     {"op": "rename_column", "name": "c", "new_name": "c2"},
                     {"op": "widen_type", "name": "a", "type": "int64"},
                     {"op": "widen_type", "name": "b", "type": "double"},
                     {"op": "widen_type", "name": "d", "type": "decimal128(12, 2)"},
                     {"op": "make_optional", "name": "id"})
    schema_v1 = model.schema()
    model.put(server, table_name, range(60, 80))
    # Alter 2 at once: a column dropped, one added first; then a writer still on version 1.
    model.alter(server, table_name, {"op": "drop_column", "name": "x"},
                {"op": "add_column", "name": "f", "type": "int32", "first": True})
    model.put(server, table_name, range(80, 100))
    model.put(server, table_name, range(100, 110), schema=schema_v1)
    md = check_lake(server, table_name, model)
    described = server.describe(table_name)
    assert md["current-schema-id"] == described["schema_id"] == 2 == v1["schema_id"] + 1
    schemas = {s["schema-id"]: ids_by_name(s) for s in md["schemas"]}
    ids0, ids2 = ids_by_name(schema0), schemas[2]
    assert ids2["c2"] == ids0["c"], "a rename keeps the field id"
    for kept in ["id", "a", "b", "d", *SYSTEM]:
        assert ids2[kept] == ids0[kept], kept
    assert "x" not in ids2
    assert min(ids2["e"], ids2["f"]) > max(ids0.values()), "new columns take new ids"
    assert md["last-column-id"] >= max(ids2.values())
    current = next(s for s in md["schemas"] if s["schema-id"] == 2)
    types = {f["name"]: f["type"] for f in current["fields"]}
    assert (types["a"], types["b"], types["d"]) == ("long", "double", "decimal(12, 2)")
    assert not next(f for f in current["fields"] if f["name"] == "id")["required"]
    # Every data file carries Iceberg ids; files of each schema hold that schema's columns.
    seen = set()
    for path in data_files(lake_location(server, table_name)):
        fields = {f.name: int(f.metadata[b"PARQUET:field_id"])
                  for f in pq.read_schema(local_path(path))}
        version = next((sid for sid, ids in schemas.items() if ids == fields), None)
        assert version is not None, f"{path}: field ids {fields} are no schema's: {schemas}"
        seen.add(version)
    assert 0 in seen and 2 in seen, f"files of the old and the new schema: {seen}"

    # A restart in between, then another change: the ids survive it.
    server.restart()
    model.alter(server, table_name, {"op": "rename_column", "name": "e", "new_name": "e2"},
                {"op": "add_column", "name": "g", "type": "double"})
    model.put(server, table_name, range(110, 130))
    md = check_lake(server, table_name, model, spark_or_none)
    # Retention runs when a tiered segment rolls: more rows until it deleted the schema-0 rows,
    # which DoGet then reads from the lake's files of schema 0.
    for first in range(130, 230, 20):
        if server.describe(table_name)["bucket_offsets"][0]["earliest_offset"] >= 60:
            break
        model.put(server, table_name, range(first, first + 20))
        wait_lake(server, table_name)
        time.sleep(0.2)
    earliest = server.describe(table_name)["bucket_offsets"][0]["earliest_offset"]
    assert earliest >= 60, "retention deleted no schema-0 rows: the test tested nothing"
    check_oxbow_reads(server, table_name, model)
    # A read in an earlier version of offsets only the lake holds is refused, never mislabelled.
    ticket = {"table": table_name, "bucket": 0, "from": 0, "schema_id": 0}
    with expect_error("INVALID_ARGUMENT", "are read from the lake", "not 0"):
        server.client.do_get(fl.Ticket(json.dumps(ticket).encode())).read_all()
    ids3 = ids_by_name(next(s for s in md["schemas"] if s["schema-id"] == md["current-schema-id"]))
    assert ids3["e2"] == ids2["e"] and ids3["g"] > max(max(s.values()) for s in schemas.values())
    # Version 1 reached the lake only if a round came between the first two alters.
    assert [s["schema-id"] for s in md["schemas"]] in ([0, 2, 3], [0, 1, 2, 3])


def lake_location(server, table: str) -> str:
    return server.describe(table)["lake"]["metadata_location"]


def test_partition_source_columns_stay(lake_server, table_name):
    schema = pa.schema([pa.field("k", pa.int32()), pa.field("v", pa.string())])
    lake_server.create_table(table_name, schema, properties={"lake.partition": "identity(k)"})
    for op in [{"op": "drop_column", "name": "k"},
               {"op": "rename_column", "name": "k", "new_name": "k2"},
               {"op": "widen_type", "name": "k", "type": "int64"}]:
        with expect_error("INVALID_ARGUMENT", "change 1", "column 'k' is the source of partition "
                                                          "field 'k'"):
            lake_server.action("alter_table", {"table": table_name, "changes": [op]})
    model = Model(schema)
    model.put(lake_server, table_name, range(0, 10))
    wait_lake(lake_server, table_name)  # the lake holds schema 0 and a file in it
    model.alter(lake_server, table_name, {"op": "rename_column", "name": "v", "new_name": "w"},
                {"op": "add_column", "name": "n", "type": "int64"},
                {"op": "add_column", "name": "tags", "type": "list<item: int32>", "after": "k"})
    model.put(lake_server, table_name, range(10, 20))
    location = wait_lake(lake_server, table_name)["metadata_location"]
    md = metadata_json(location)
    spec = md["partition-specs"][0]["fields"]
    schema0 = next(s for s in md["schemas"] if s["schema-id"] == 0)
    current_schema = next(s for s in md["schemas"] if s["schema-id"] == md["current-schema-id"])
    current = ids_by_name(current_schema)
    assert spec[0]["source-id"] == current["k"] == ids_by_name(schema0)["k"]
    tags = next(f for f in current_schema["fields"] if f["name"] == "tags")
    old_max = max(ids_by_name(schema0).values())
    assert tags["type"]["type"] == "list" and min(tags["id"], tags["type"]["element-id"]) > old_max
    assert md["last-column-id"] >= max(tags["id"], tags["type"]["element-id"], current["n"])
    assert len({*current.values(), tags["type"]["element-id"]}) == len(current) + 1
    check_readers(location, model, None)
    # A doc change is a new lake schema with the same ids and the Iceberg field's "doc".
    lake_server.action("alter_table", {"table": table_name, "changes": [
        {"op": "set_column_doc", "name": "w", "doc": "the value"}]})
    model.put(lake_server, table_name, range(20, 22))
    location = wait_lake(lake_server, table_name)["metadata_location"]
    md = metadata_json(location)
    documented = next(s for s in md["schemas"] if s["schema-id"] == md["current-schema-id"])
    assert ids_by_name(documented) == current
    assert [f.get("doc") for f in documented["fields"] if f["name"] in ("k", "w")] == [None,
                                                                                 "the value"]
    assert StaticTable.from_metadata(location).schema().find_field("w").doc == "the value"
    check_readers(location, model, None)


def test_primary_key_table_in_the_lake_takes_its_column_changes(lake_server, table_name):
    """A primary-key table's changes (a column at the end, a rename, make_optional) reach its
    lake and its changelog lake table: rows written before read the new column as null."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string()),
                        pa.field("q", pa.int32(), nullable=False)])
    lake_server.create_table(table_name, schema, primary_key=["id"],
                             properties={"lake.enabled": "true", "lake.changelog": "true"})
    lake_server.put(table_name, [pa.RecordBatch.from_pylist(
        [{"id": i, "v": f"v{i}", "q": i} for i in range(10)], schema=schema)])
    before = metadata_json(wait_lake(lake_server, table_name)["metadata_location"])
    lake_server.action("alter_table", {"table": table_name, "changes": [
        {"op": "add_column", "name": "n", "type": "int64"},
        {"op": "rename_column", "name": "v", "new_name": "w"},
        {"op": "make_optional", "name": "q"}]})
    schema1 = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("w", pa.string()),
                         pa.field("q", pa.int32()), pa.field("n", pa.int64())])
    lake_server.put(table_name, [pa.RecordBatch.from_pylist(
        [{"id": i, "w": f"w{i}", "q": None, "n": 10 * i} for i in range(5, 15)], schema=schema1)])
    lake = wait_lake(lake_server, table_name)
    want = ([{"id": i, "w": f"v{i}", "q": i, "n": None} for i in range(5)] +
            [{"id": i, "w": f"w{i}", "q": None, "n": 10 * i} for i in range(5, 15)])
    for read in (pyiceberg_rows, duckdb_rows):
        got = read(lake["metadata_location"])
        assert got.column_names == ["id", "w", "q", "n", *SYSTEM]
        assert sorted(got.select(["id", "w", "q", "n"]).to_pylist(), key=lambda r: r["id"]) == want
    md = metadata_json(lake["metadata_location"])
    ids0 = ids_by_name(before["schemas"][0])
    current = next(s for s in md["schemas"] if s["schema-id"] == md["current-schema-id"])
    ids1 = ids_by_name(current)
    assert ids1["w"] == ids0["v"] and ids1["n"] > max(ids0.values())
    assert current["identifier-field-ids"] == [ids0["id"]]
    got = get(lake_server, {"table": table_name, "union": True}).sort_by("id")
    assert got.to_pylist() == want
    # The changelog lake table: +I of 0..9, -U/+U of 5..9, +I of 10..14, in the current schema.
    changelog = lake_server.describe(table_name)["lake"]["changelog"]["metadata_location"]
    records = sorted(pyiceberg_rows(changelog).to_pylist(), key=lambda r: r["__offset"])
    assert [r["_change_type"] for r in records] == ["+I"] * 10 + ["-U", "+U"] * 5 + ["+I"] * 5
    assert [(r["w"], r["n"]) for r in records[10:12]] == [("v5", None), ("w5", 50)]


NESTED_V0 = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("p", pa.struct([pa.field("x", pa.int32()),
                             pa.field("y", pa.struct([pa.field("a", pa.int8(), nullable=False),
                                                      pa.field("b", pa.string())]),
                                      nullable=False)])),
    pa.field("l", pa.list_(pa.struct([pa.field("v", pa.int16()), pa.field("w", pa.float32())]))),
    pa.field("m", pa.map_(pa.string(), pa.struct([pa.field("q", pa.int32())]))),
    pa.field("mv", pa.map_(pa.string(), pa.int32())),
])


def nested_ids(schema: dict) -> dict:
    """Every field id of an Iceberg schema JSON by dotted path (list element as "element", map
    key and value as "key" and "value")."""
    out = {}

    def walk(t, path):
        if not isinstance(t, dict):
            return
        if t["type"] == "struct":
            for f in t["fields"]:
                out[path + f["name"]] = f["id"]
                walk(f["type"], path + f["name"] + ".")
        elif t["type"] == "list":
            out[path + "element"] = t["element-id"]
            walk(t["element"], path + "element.")
        else:
            out[path + "key"], out[path + "value"] = t["key-id"], t["value-id"]
            walk(t["value"], path + "value.")

    walk({"type": "struct", "fields": schema["fields"]}, "")
    return out


def check_nested_readers(location: str, model, spark) -> None:
    """pyiceberg, DuckDB and Spark (when given) return exactly the model's rows, nested fields by
    the current schema's names (maps compared as sorted pairs)."""
    from oxbowtest.nested_model import normalize, pyiceberg_view
    want = model.normalized()
    for reader, read in lake_readers(spark).items():
        got = read(location)
        assert got.column_names == [c.name for c in model.columns] + SYSTEM, reader
        rows = sorted(got.to_pylist(), key=lambda r: r["__offset"])
        assert [r["__offset"] for r in rows] == list(range(len(want))), reader
        for have, expected in zip(rows, want):
            have = {c.name: normalize(c, have[c.name]) for c in model.columns}
            if reader == "pyiceberg":
                expected = {c.name: pyiceberg_view(c, expected[c.name]) for c in model.columns}
            assert have == expected, f"{reader}: row {have} != {expected}"


def test_nested_alters_read_by_every_reader(make_lake_server, table_name, spark_or_none):
    """Changes inside nested columns (docs/lake.md, "Schema evolution"): nested fields keep their
    Iceberg ids across renames and widenings, new ones take new ids (a dropped field's id never
    comes back), and pyiceberg, DuckDB, Spark and Oxbow's own reads of the lake (union read,
    DoGet of offsets retention deleted) give the model's rows from old and new files."""
    import random

    from oxbowtest.nested_model import NestedModel
    rng = random.Random(7)
    server = make_lake_server(*SMALL_SEGMENTS)
    server.create_table(table_name, NESTED_V0)
    model = NestedModel(NESTED_V0)

    def put(n, columns=None):
        columns = columns or model.columns
        rows = model.random_rows(rng, columns, len(model.rows), n)
        batch = model.batch(rows, columns)
        server.put(table_name, [batch], schema=batch.schema)
        model.rows += rows

    def alter(*changes):
        reply = server.action("alter_table", {"table": table_name, "changes": list(changes)})
        for c in changes:
            model.apply(c)
        model.versions.append(copy.deepcopy(model.columns))
        assert reply["child_field_ids"] == [c.child_ids() for c in model.columns]

    put(20)
    put(20)
    md0 = metadata_json(wait_lake(server, table_name)["metadata_location"])
    ids0 = nested_ids(md0["schemas"][0])
    v0 = model.versions[0]
    alter({"op": "add_column", "name": ["p", "y", "c"], "type": "string"},
          {"op": "add_column", "name": ["p", "z"], "type": "double", "after": "x"},
          {"op": "rename_column", "name": ["p", "x"], "new_name": "x2"},
          {"op": "widen_type", "name": ["p", "x2"], "type": "int64"},
          {"op": "widen_type", "name": ["l", "element", "w"], "type": "double"},
          {"op": "drop_column", "name": ["l", "item", "v"]},
          {"op": "widen_type", "name": ["mv", "value"], "type": "int64"},
          {"op": "make_optional", "name": ["p", "y", "a"]},
          {"op": "add_column", "name": ["m", "value", "r"], "type": "string", "first": True})
    put(20)
    put(10, v0)  # a writer still on version 0
    server.restart()
    alter({"op": "rename_column", "name": ["p", "y", "b"], "new_name": "bb"},
          {"op": "add_column", "name": ["l", "element", "v"], "type": "int16"})
    put(20)
    location = wait_lake(server, table_name)["metadata_location"]
    md = metadata_json(location)
    assert md["current-schema-id"] == 2
    ids = nested_ids(next(s for s in md["schemas"] if s["schema-id"] == 2))
    for old, new in [("p.x", "p.x2"), ("p.y.b", "p.y.bb"), ("l.element.w", "l.element.w"),
                     ("mv.value", "mv.value"), ("p.y.a", "p.y.a"), ("m.value.q", "m.value.q")]:
        assert ids[new] == ids0[old], (old, new)
    old_max = max(ids0.values())
    for added in ["p.y.c", "p.z", "m.value.r", "l.element.v"]:
        assert ids[added] > old_max, added
    assert ids["l.element.v"] != ids0["l.element.v"], "a dropped field's id is never reused"
    assert len(set(ids.values())) == len(ids) and md["last-column-id"] >= max(ids.values())
    current = next(s for s in md["schemas"] if s["schema-id"] == 2)
    types = {f["name"]: f["type"] for f in current["fields"]}
    assert {f["name"]: f["type"] for f in types["p"]["fields"]}["x2"] == "long"
    assert types["mv"]["value"] == "long"
    check_nested_readers(location, model, spark_or_none)

    # Oxbow's reads of the lake: the union read, then DoGet of offsets retention deleted.
    want = model.expected()
    got = get(server, {"table": table_name, "union": True}).sort_by("id")
    assert got.schema == model.schema() and got.to_pylist() == want
    while server.describe(table_name)["bucket_offsets"][0]["earliest_offset"] < 40:
        assert len(model.rows) < 400, "retention deleted no version-0 rows: tested nothing"
        put(20)
        wait_lake(server, table_name)
        time.sleep(0.2)
    got = get(server, {"table": table_name, "bucket": 0, "from": 0})
    assert got.schema == model.schema() and got.to_pylist() == model.expected()
