"""Primary-key tables with nested value columns (struct, list, map, fixed_size_list, nulls at
every level), checked against a Python model: random upserts, partial updates and deletes, read
back through lookups, the snapshot, the changelog and the lake (pyiceberg, DuckDB and, unless
OXBOW_SKIP_SPARK=1, Spark), across a SIGKILL restart and an alter of nested fields
(docs/primary-keys.md#nested-values)."""

from __future__ import annotations

import functools
import random

import pyarrow as pa
import pytest

from oxbowtest.lake import metadata_json, wait_lake
from oxbowtest.flight import expect_error
from oxbowtest.readers import duckdb_rows, pyiceberg_rows, spark_rows
from oxbowtest.primary_keys import command, create_pk_table, do_get, snapshot, write

BUCKETS = 2
KEYS = 24
SYSTEM_COLUMNS = ["__bucket", "__offset", "__timestamp"]


def schema_of(version: int) -> pa.Schema:
    """Version 0, then version 1 after ALTER (see test below): s.a widened to int64 and renamed
    aa, s.c added, s.tags dropped, ll's inner items widened to int64, column n added."""
    if version == 0:
        s = pa.struct([("a", pa.int32()), ("tags", pa.list_(pa.string()))])
        ll = pa.list_(pa.list_(pa.int32()))
    else:
        s = pa.struct([("aa", pa.int64()), ("c", pa.string())])
        ll = pa.list_(pa.list_(pa.int64()))
    fields = [pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int64()),
              pa.field("s", s), pa.field("m", pa.map_(pa.string(), pa.int64())),
              pa.field("ll", ll), pa.field("f", pa.list_(pa.int32(), 2))]
    if version == 1:
        fields.append(pa.field("n", pa.list_(pa.int64())))
    return pa.schema(fields)


def maybe(rng: random.Random, make, p: float = 0.2):
    return None if rng.random() < p else make()


def random_row(rng: random.Random, key: int, version: int) -> dict:
    """A row with nulls at every level: the column, struct fields, list items, inner lists, map
    values and fixed-size list items."""
    if version == 0:
        s = maybe(rng, lambda: {
            "a": maybe(rng, lambda: rng.randint(-2**31, 2**31 - 1)),
            "tags": maybe(rng, lambda: [maybe(rng, lambda: rng.choice(["", "x", "héllo"]))
                                        for _ in range(rng.randint(0, 3))])})
    else:
        s = maybe(rng, lambda: {"aa": maybe(rng, lambda: rng.randint(-2**40, 2**40)),
                                "c": maybe(rng, lambda: rng.choice(["", "q", "ü"]))})
    row = {
        "id": key,
        "v": maybe(rng, lambda: rng.randint(-100, 100)),
        "s": s,
        "m": maybe(rng, lambda: [(f"k{j}", maybe(rng, lambda: rng.randint(-9, 9)))
                                 for j in rng.sample(range(5), rng.randint(0, 3))]),
        "ll": maybe(rng, lambda: [maybe(rng, lambda: [maybe(rng, lambda: rng.randint(-5, 5))
                                                      for _ in range(rng.randint(0, 2))])
                                  for _ in range(rng.randint(0, 3))]),
        "f": maybe(rng, lambda: [maybe(rng, lambda: rng.randint(0, 9)) for _ in range(2)]),
    }
    if version == 1:
        row["n"] = maybe(rng, lambda: [maybe(rng, lambda: rng.randint(0, 2**40))
                                       for _ in range(rng.randint(0, 2))])
    return row


class Model:
    """last_row with changelog.image full: rows by key, and each key's changelog records."""

    def __init__(self, columns: list[str]):
        self.columns = columns
        self.rows: dict[int, dict] = {}
        self.changes: dict[int, list[tuple[str, dict]]] = {}

    def upsert(self, update: dict):
        key = update["id"]
        old = self.rows.get(key)
        if old is None:
            new = {c: update.get(c) for c in self.columns}
            self.changes.setdefault(key, []).append(("+I", new))
        else:
            # A partial update replaces the columns it gives (nested ones whole), null included.
            new = {**old, **update}
            self.changes[key] += [("-U", old), ("+U", new)]
        self.rows[key] = new

    def delete(self, key: int):
        old = self.rows.pop(key, None)
        if old is not None:
            self.changes[key].append(("-D", old))

    def evolve(self, convert, columns: list[str]):
        """The rows and records as they read after an alter: each through `convert`."""
        self.columns = columns
        self.rows = {k: convert(r) for k, r in self.rows.items()}
        self.changes = {k: [(t, convert(r)) for t, r in c] for k, c in self.changes.items()}


def random_write(server, table: str, rng: random.Random, model: Model, version: int):
    schema = schema_of(version)
    keys = [rng.randrange(KEYS) for _ in range(rng.randint(1, 8))]
    kind = rng.random()
    if kind < 0.2:
        batch = pa.record_batch([pa.array(keys, pa.int64())],
                                schema=pa.schema([schema.field("id")]))
        write(server.client, command(table, "delete"), [batch])
        for k in keys:
            model.delete(k)
        return
    columns = schema.names
    if kind < 0.55:  # a partial update: the key and some of the columns
        values = [c for c in schema.names if c != "id"]
        columns = ["id"] + sorted(rng.sample(values, rng.randint(1, 3)), key=schema.names.index)
    rows = [{c: random_row(rng, k, version)[c] for c in columns} for k in keys]
    batch = pa.Table.from_pylist(rows, schema=pa.schema([schema.field(c) for c in columns]))
    write(server.client, command(table, "upsert"), batch.to_batches())
    for row in rows:
        model.upsert(row)


def by_id(rows: list[dict]) -> dict[int, dict]:
    return {r["id"]: r for r in rows}


def check_reads(server, table: str, model: Model, rng: random.Random):
    """The snapshot, lookups and changelog hold exactly the model's values."""
    snap, _ = snapshot(server, table)
    assert snap.num_rows == len(model.rows)
    assert by_id(snap.to_pylist()) == model.rows
    wanted = sorted(rng.sample(range(KEYS + 4), 12))
    found, _ = do_get(server, {"table": table, "lookup": {"id": wanted}})
    assert by_id(found.to_pylist()) == {k: model.rows[k] for k in wanted if k in model.rows}
    per_key: dict[int, list] = {}
    for b in range(BUCKETS):
        records, _ = do_get(server, {"table": table, "bucket": b})
        for r in records.to_pylist():
            change = r.pop("_change_type")
            per_key.setdefault(r["id"], []).append((change, r))
    assert per_key == model.changes


def check_lake(server, table: str, model: Model, spark=None) -> dict:
    """pyiceberg, DuckDB and Spark (when given) read the model's rows from the lake; returns its
    current schema."""
    location = wait_lake(server, table)["metadata_location"]
    want = sorted(model.rows.values(), key=lambda r: r["id"])
    readers = [pyiceberg_rows, duckdb_rows]
    if spark is not None:
        readers.append(functools.partial(spark_rows, spark))
    for read in readers:
        got = read(location).drop_columns(SYSTEM_COLUMNS)
        assert got.column_names == model.columns, read
        assert got.sort_by("id").to_pylist() == want, read
    md = metadata_json(location)
    return next(s for s in md["schemas"] if s["schema-id"] == md["current-schema-id"])


def iceberg_ids(field_type) -> dict:
    """Path (tuple of names) -> Iceberg id of every nested field of a schema JSON type."""
    out = {}
    if not isinstance(field_type, dict):
        return out
    if field_type["type"] == "struct":
        for f in field_type["fields"]:
            out[(f["name"],)] = f["id"]
            out.update({(f["name"], *p): i for p, i in iceberg_ids(f["type"]).items()})
    elif field_type["type"] == "list":
        out[("element",)] = field_type["element-id"]
        out.update({("element", *p): i for p, i in iceberg_ids(field_type["element"]).items()})
    elif field_type["type"] == "map":
        out[("key",)] = field_type["key-id"]
        out[("value",)] = field_type["value-id"]
    return out


def test_nested_value_columns_match_the_model(make_lake_server, table_name, spark_or_none):
    server = make_lake_server()
    create_pk_table(server, table_name, schema=schema_of(0), primary_key=["id"], buckets=BUCKETS,
                    properties={"lake.enabled": "true"})
    model = Model(schema_of(0).names)
    rng = random.Random(16)
    for _ in range(12):
        random_write(server, table_name, rng, model, 0)
    check_reads(server, table_name, model, rng)
    before = check_lake(server, table_name, model)

    # A crash: the acknowledged rows come back from RocksDB and the changelog.
    server.kill()
    server.start()
    for _ in range(6):
        random_write(server, table_name, rng, model, 0)
    check_reads(server, table_name, model, rng)

    server.action("alter_table", {"table": table_name, "changes": [
        {"op": "widen_type", "name": ["s", "a"], "type": "int64"},
        {"op": "rename_column", "name": ["s", "a"], "new_name": "aa"},
        {"op": "add_column", "name": ["s", "c"], "type": "string"},
        {"op": "drop_column", "name": ["s", "tags"]},
        {"op": "widen_type", "name": ["ll", "item", "item"], "type": "int64"},
        {"op": "add_column", "name": "n", "type": "list<item: int64>"}]})

    def evolve(row: dict) -> dict:
        s = row["s"]
        return {**row, "s": None if s is None else {"aa": s["a"], "c": None}, "n": None}

    model.evolve(evolve, schema_of(1).names)
    check_reads(server, table_name, model, rng)
    for _ in range(10):
        random_write(server, table_name, rng, model, 1)
    check_reads(server, table_name, model, rng)
    after = check_lake(server, table_name, model, spark_or_none)

    # The lake's nested field ids: a renamed or widened field keeps its id, a new one gets one
    # never used before.
    old = {f["name"]: f for f in before["fields"]}
    new = {f["name"]: f for f in after["fields"]}
    old_s, new_s = iceberg_ids(old["s"]["type"]), iceberg_ids(new["s"]["type"])
    assert new_s[("aa",)] == old_s[("a",)]
    used = {i for f in before["fields"] for i in [f["id"], *iceberg_ids(f["type"]).values()]}
    assert new_s[("c",)] not in used and new["n"]["id"] not in used
    assert iceberg_ids(new["ll"]["type"]) == iceberg_ids(old["ll"]["type"])


def test_merge_engines_take_nested_values_whole(lake_server, table_name):
    """versioned and aggregate's last/first functions keep or replace a nested value whole."""
    server = lake_server
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("ver", pa.int64()),
                        pa.field("s", pa.struct([("a", pa.list_(pa.int32()))])),
                        pa.field("m", pa.map_(pa.string(), pa.int32()))])

    def put(table, rows, columns=schema.names):
        batch = pa.Table.from_pylist(rows, schema=pa.schema([schema.field(c) for c in columns]))
        write(server.client, command(table, "upsert"), batch.to_batches())

    def row(table):
        got, _ = do_get(server, {"table": table, "lookup": {"id": [1]}})
        return got.to_pylist()[0]

    create_pk_table(server, f"{table_name}v", schema=schema, primary_key=["id"],
                    properties={"merge_engine": "versioned",
                                "merge_engine.version_column": "ver"})
    put(f"{table_name}v", [{"id": 1, "ver": 2, "s": {"a": [1, None]}, "m": [("x", 1)]}])
    put(f"{table_name}v", [{"id": 1, "ver": 1, "s": {"a": [9]}, "m": None}])
    assert row(f"{table_name}v") == {"id": 1, "ver": 2, "s": {"a": [1, None]}, "m": [("x", 1)]}
    put(f"{table_name}v", [{"id": 1, "ver": 3, "s": None}], ["id", "ver", "s"])
    assert row(f"{table_name}v") == {"id": 1, "ver": 3, "s": None, "m": [("x", 1)]}

    create_pk_table(server, f"{table_name}a", schema=schema, primary_key=["id"],
                    properties={"merge_engine": "aggregate", "fields.m.agg": "first"})
    put(f"{table_name}a", [{"id": 1, "ver": 1, "s": {"a": [1]}, "m": [("x", 1)]}])
    put(f"{table_name}a", [{"id": 1, "ver": 2, "s": None, "m": [("y", 2)]}])
    put(f"{table_name}a", [{"id": 1, "ver": 3, "s": {"a": None}, "m": None}])
    # s: last_non_null (the default) skips the null; m: first keeps the first map.
    assert row(f"{table_name}a") == {"id": 1, "ver": 3, "s": {"a": None}, "m": [("x", 1)]}


@pytest.mark.parametrize("properties, key, words", [
    ({"merge_engine": "aggregate", "fields.s.agg": "sum"}, "id",
     ["aggregate function 'sum' cannot apply to column 's' of type struct<a: list<item: int32>>"]),
    ({"merge_engine": "aggregate", "fields.s.agg": "max"}, "id",
     ["aggregate function 'max' cannot apply to column 's'"]),
    ({}, "s", ["key column 's' has type struct<a: list<item: int32>>",
               "a nested column cannot be a key"]),
])
def test_what_makes_no_sense_on_nested_columns_is_refused(lake_server, table_name, properties,
                                                           key, words):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("s", pa.struct([("a", pa.list_(pa.int32()))]), nullable=False)])
    with expect_error("INVALID_ARGUMENT", *words):
        create_pk_table(lake_server, table_name, schema=schema, primary_key=[key],
                        properties=properties)
