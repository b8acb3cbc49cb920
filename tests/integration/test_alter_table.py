"""alter_table against a real oxbowd over pyarrow.flight: random sequences of column changes
interleaved with writes (current and earlier schemas) checked against a Python model of field ids,
read back through DoGet (whole and projected) across a restart; refusals naming their rule;
property changes taking effect; primary-key tables (random column changes interleaved with
upserts, partial updates and deletes under every merge engine, checked through lookups, snapshots,
the changelog and the lake); the CLI."""

from __future__ import annotations

import copy
import decimal
import json
import pathlib
import random
import time

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.flight import expect_error, read_ticket, schema_json
from oxbowtest.primary_keys import ENGINES as PK_ENGINES, SCHEMA as PK_SCHEMA, delete, upsert

WIDER = {pa.int8(): pa.int16(), pa.int16(): pa.int32(), pa.int32(): pa.int64(),
         pa.float32(): pa.float64(), pa.decimal128(9, 2): pa.decimal128(12, 2)}
NEW_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.float32(), pa.string(), pa.decimal128(9, 2)]


@pytest.fixture(scope="module")
def server(tmp_path_factory, oxbowd_bin):
    from oxbowtest.server import OxbowServer
    tmp = tmp_path_factory.mktemp("alter")
    s = OxbowServer(oxbowd_bin, tmp / "data", tmp / "oxbowd.log").start()
    yield s
    if s.proc is not None:
        s.stop()


def alter(server, table, *changes):
    return server.action("alter_table", {"table": table, "changes": list(changes)})


def read(server, table, columns=None, schema_id=None) -> pa.Table:
    return read_ticket(server.client, table=table, columns=columns, schema_id=schema_id)


def put(server, batch: pa.RecordBatch, table: str | None = None):
    writer, acks = server.client.do_put(fl.FlightDescriptor.for_path(*(table or TABLE).split(".")),
                                        batch.schema)
    try:
        writer.write_batch(batch)
        assert acks.read() is not None
        writer.done_writing()
    finally:
        writer.close()


TABLE = "evo.log"


class Model:
    """The table as field ids: columns [(id, name, type, nullable)] and rows {id: value}."""

    def __init__(self, schema: pa.Schema):
        self.columns = [(i + 1, f.name, f.type, f.nullable) for i, f in enumerate(schema)]
        self.last_id = len(schema)
        self.versions = [list(self.columns)]  # every schema version, in order
        self.rows: list[dict] = []

    def schema(self, columns=None) -> pa.Schema:
        return pa.schema([pa.field(n, t, nullable=nl) for _, n, t, nl in columns or self.columns])

    def index(self, name):
        return next(i for i, c in enumerate(self.columns) if c[1] == name)

    def expected(self) -> pa.Table:
        data = {n: pa.array([r.get(fid) for r in self.rows], type=t)
                for fid, n, t, _ in self.columns}
        return pa.table(data, schema=self.schema())

    def expected_in_version(self, schema_id: int) -> pa.Table:
        """Every row in version `schema_id` (a read with "schema_id"): its columns by field id,
        nullable unless every version has the column and requires it."""
        columns = self.versions[schema_id]
        required = {fid for fid, *_ in columns
                    if all(any(c[0] == fid and not c[3] for c in v) for v in self.versions)}
        schema = pa.schema([pa.field(n, t, nullable=fid not in required) for fid, n, t, _ in columns])
        return pa.table({n: pa.array([r.get(fid) for r in self.rows], type=t)
                         for fid, n, t, _ in columns}, schema=schema)

    def apply(self, change: dict) -> None:
        op = change["op"]
        if op == "add_column":
            self.last_id += 1
            col = (self.last_id, change["name"], pa.type_for_alias(change["type"])
                   if not change["type"].startswith("decimal") else pa.decimal128(9, 2), True)
            if change.get("first"):
                self.columns.insert(0, col)
            elif "after" in change:
                self.columns.insert(self.index(change["after"]) + 1, col)
            else:
                self.columns.append(col)
        elif op == "drop_column":
            del self.columns[self.index(change["name"])]
        elif op == "rename_column":
            fid, _, t, nl = self.columns[self.index(change["name"])]
            self.columns[self.index(change["name"])] = (fid, change["new_name"], t, nl)
        elif op == "widen_type":
            fid, n, t, nl = self.columns[self.index(change["name"])]
            self.columns[self.index(change["name"])] = (fid, n, WIDER[t], nl)
        elif op == "make_optional":
            fid, n, t, _ = self.columns[self.index(change["name"])]
            self.columns[self.index(change["name"])] = (fid, n, t, True)


def random_value(rng, t: pa.DataType, nullable: bool):
    if nullable and rng.random() < 0.2:
        return None
    if pa.types.is_boolean(t):
        return rng.random() < 0.5
    if pa.types.is_integer(t):
        return rng.randint(-100, 100)
    if pa.types.is_floating(t):
        return rng.randint(-100, 100) / 4  # exact in float32
    if pa.types.is_decimal(t):
        return decimal.Decimal(rng.randint(-99999, 99999)).scaleb(-2)
    return rng.choice(["a", "bb", "", "ccc"])


def random_change(rng, model: Model, counter: list[int]) -> dict:
    names = [c[1] for c in model.columns]
    droppable = [n for n in names if n != "id"]
    widenable = [c[1] for c in model.columns if c[2] in WIDER]
    required = [c[1] for c in model.columns if not c[3] and c[1] != "id"]
    choices = ["add", "add", "rename"]
    if len(droppable) > 1:
        choices.append("drop")
    if widenable:
        choices += ["widen", "widen"]
    if required:
        choices.append("optional")
    kind = rng.choice(choices)
    counter[0] += 1
    if kind == "add":
        t = rng.choice(NEW_TYPES)
        change = {"op": "add_column", "name": f"c{counter[0]}", "type": str(t)}
        where = rng.random()
        if where < 0.3:
            change["after"] = rng.choice(names)
        elif where < 0.4:
            change["first"] = True
        return change
    if kind == "drop":
        return {"op": "drop_column", "name": rng.choice(droppable)}
    if kind == "rename":
        return {"op": "rename_column", "name": rng.choice(droppable or names[1:] or names),
                "new_name": f"r{counter[0]}"}
    if kind == "widen":
        name = rng.choice(widenable)
        return {"op": "widen_type", "name": name,
                "type": str(WIDER[model.columns[model.index(name)][2]])}
    return {"op": "make_optional", "name": rng.choice(required)}


@pytest.mark.parametrize("seed", [1, 2])
def test_random_alters_and_writes_match_the_model(server, seed):
    rng = random.Random(seed)
    start = pa.schema([pa.field("id", pa.int64(), nullable=False),
                       pa.field("small", pa.int8()), pa.field("req", pa.int32(), nullable=False),
                       pa.field("ratio", pa.float32()), pa.field("name", pa.string())])
    table = TABLE
    try:
        server.action("drop_table", {"table": table})
    except pa.ArrowException:
        pass
    server.action("create_table", {"table": table, "schema": schema_json(start),
                                   "properties": {"lake.enabled": "false"}})
    model = Model(start)
    counter = [0]
    next_id = 0
    old_writes = 0
    for step in range(14):
        if rng.random() < 0.4:
            changes = [random_change(rng, model, counter)]
            if rng.random() < 0.3:  # two changes in one call, applied together
                probe = Model(model.schema())
                probe.columns = list(model.columns)
                probe.apply(changes[0])
                changes.append(random_change(rng, probe, counter))
            reply = alter(server, table, *changes)
            for c in changes:
                model.apply(c)
            model.versions.append(list(model.columns))
            assert reply["schema_id"] == len(model.versions) - 1
            assert pa.schema([pa.field(f["name"], pa.type_for_alias(f["type"])
                                       if not f["type"].startswith("decimal")
                                       else pa.decimal128(*[int(x) for x in f["type"][11:-1].split(",")]),
                                       nullable=f["nullable"])
                              for f in reply["schema"]["fields"]]) == model.schema()
        # A write with the current schema, or now and then with the previous version's.
        columns = model.columns
        if len(model.versions) > 1 and rng.random() < 0.3:
            columns = model.versions[-2]
            old_writes += 1
        rows = []
        for _ in range(rng.randint(1, 4)):
            row = {fid: random_value(rng, t, nl) for fid, _, t, nl in columns}
            row[1] = next_id  # "id" keeps field id 1
            next_id += 1
            rows.append(row)
        batch = pa.RecordBatch.from_pydict(
            {n: [r[fid] for r in rows] for fid, n, _, _ in columns}, schema=model.schema(columns))
        put(server, batch)
        model.rows += rows  # by field id: a read of any version picks its columns
        if step == 7:
            server.restart()
        got = read(server, table)
        assert got.equals(model.expected()), f"step {step}:\n{got}\nexpected\n{model.expected()}"
    # The sequence did evolve the table, and wrote with an earlier version.
    assert len(model.versions) >= 4 and old_writes >= 1, (len(model.versions), old_writes)
    # Projection, in any order, of columns of different versions.
    names = [c[1] for c in model.columns]
    rng.shuffle(names)
    picked = names[:2]
    assert read(server, table, picked).equals(model.expected().select(picked))
    # Every batch read in every earlier version, whole and projected.
    for schema_id in range(len(model.versions)):
        want = model.expected_in_version(schema_id)
        got = read(server, table, schema_id=schema_id)
        assert got.equals(want), f"version {schema_id}:\n{got}\nexpected\n{want}"
        assert read(server, table, want.column_names[::-1], schema_id).equals(
            want.select(want.column_names[::-1]))
    server.action("drop_table", {"table": table})


SIMPLE = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("d", pa.date32()),
                    pa.field("n", pa.int32())])


def fresh(server, name, schema=SIMPLE, **extra):
    try:
        server.action("drop_table", {"table": name})
    except pa.ArrowException:
        pass
    body = {"table": name, "schema": schema_json(schema), **extra}
    body.setdefault("properties", {"lake.enabled": "false"})
    return server.action("create_table", body)


@pytest.mark.parametrize("changes,words", [
    ([{"op": "widen_type", "name": "d", "type": "timestamp[us]"}],
     ["change 1", "cannot change column 'd' from date32[day] to timestamp[us]", "may only widen"]),
    ([{"op": "widen_type", "name": "n", "type": "int16"}], ["may only widen"]),
    ([{"op": "add_column", "name": "x", "type": "int32", "nullable": False}],
     ["must be nullable"]),
    ([{"op": "drop_column", "name": "n"}, {"op": "drop_column", "name": "nope"}],
     ["change 2", "'nope' does not exist"]),
    ([{"op": "add_column", "name": "n", "type": "int64"}], ["'n' already exists"]),
    ([{"op": "set_properties", "properties": {"merge_engine": "first_row"}}],
     ["merge_engine", "needs a primary key"]),
    ([{"op": "set_properties", "properties": {"log.local.retention": "forever"}}],
     ["log.local.retention"]),
    ([{"op": "rotate", "name": "n"}], ["unknown op 'rotate'"]),
])
def test_refusals_name_the_rule_and_change_nothing(server, changes, words):
    fresh(server, "evo.refused")
    before = server.action("describe_table", {"table": "evo.refused"})
    with expect_error("INVALID_ARGUMENT", *words):
        alter(server, "evo.refused", *changes)
    after = server.action("describe_table", {"table": "evo.refused"})
    assert after["schema"] == before["schema"] and after["schema_id"] == 0
    assert after["properties"] == before["properties"]


def wait_tiered(server, table, offsets):
    deadline = time.time() + 10
    while True:
        lake = server.action("describe_table", {"table": table})["lake"]
        if lake.get("tiered_offsets") == offsets and "error" not in lake:
            return lake
        assert time.time() < deadline, lake
        time.sleep(0.1)


def test_lake_tables_take_property_and_column_changes(server):
    fresh(server, "evo.lake", properties={})
    # A table in the lake changes columns (tests/lake/test_lake_schema_evolution.py reads them
    # back).
    alter(server, "evo.lake", {"op": "add_column", "name": "x", "type": "int32"})
    alter(server, "evo.lake", {"op": "drop_column", "name": "x"})
    # Tiering follows the new properties: a new freshness, then the lake turned off.
    put_rows = pa.RecordBatch.from_pydict({"id": [1, 2], "d": [None, None], "n": [1, 2]},
                                          schema=SIMPLE)
    writer, acks = server.client.do_put(fl.FlightDescriptor.for_path("evo", "lake"), SIMPLE)
    writer.write_batch(put_rows)
    acks.read()
    writer.done_writing()
    writer.close()
    # Checked as create_table checks them.
    with expect_error("INVALID_ARGUMENT", "lake.freshness", "soon"):
        alter(server, "evo.lake", {"op": "set_properties", "properties": {"lake.freshness": "soon"}})
    with expect_error("INVALID_ARGUMENT", "lake.partition 'n'", "must be transform(column)"):
        alter(server, "evo.lake", {"op": "set_properties", "properties": {"lake.partition": "n"}})
    # A valid one evolves the lake's partition spec (tests/lake/test_lake_partition_evolution.py).
    alter(server, "evo.lake",
          {"op": "set_properties", "properties": {"lake.partition": "identity(n)"}})
    alter(server, "evo.lake", {"op": "set_properties", "properties": {"lake.freshness": "200ms"}})
    wait_tiered(server, "evo.lake", [2])
    altered = alter(server, "evo.lake",
                    {"op": "set_properties", "properties": {"lake.enabled": "false"}})
    assert altered["properties"]["lake.enabled"] == "false"
    assert server.action("describe_table", {"table": "evo.lake"})["lake"]["enabled"] is False
    # Columns changed while the lake is off: turned on again, the lake follows them.
    altered = alter(server, "evo.lake", {"op": "add_column", "name": "x", "type": "int32"})
    assert read(server, "evo.lake").column("x").to_pylist() == [None, None]
    alter(server, "evo.lake", {"op": "set_properties", "properties": {"lake.enabled": "true"}})
    lake = wait_tiered(server, "evo.lake", [2])
    metadata = json.loads(pathlib.Path(lake["metadata_location"]).read_text())
    assert metadata["current-schema-id"] == altered["schema_id"]
    current = next(s for s in metadata["schemas"] if s["schema-id"] == altered["schema_id"])
    assert [f["name"] for f in current["fields"]][:4] == ["id", "d", "n", "x"]
    spec = next(s for s in metadata["partition-specs"]
                if s["spec-id"] == metadata["default-spec-id"])
    assert [f["name"] for f in spec["fields"]] == ["n"]


def lookup(server, table, ids):
    reader = server.client.do_get(fl.Ticket(json.dumps(
        {"table": table, "lookup": {"id": ids, "tag": ["a"] * len(ids)}}).encode()))
    return {r["id"]: r for r in reader.read_all().to_pylist()}


@pytest.mark.parametrize("engine", sorted(PK_ENGINES))
def test_partial_update_after_add_column_every_merge_engine(server, engine):
    """apache/fluss#2988: a partial update naming a column added by ALTER crashed Fluss's servers.
    Here it merges into the row written before the column existed, which reads it as null."""
    table = f"evo.pk_{engine}"
    fresh(server, table, PK_SCHEMA, primary_key=["id", "tag"], properties=PK_ENGINES[engine])
    put(server, table=table, batch=pa.RecordBatch.from_pylist([
        {"id": 1, "tag": "a", "v": 1, "s": "x", "flag": True, "ver": 1},
        {"id": 2, "tag": "a", "v": 2, "s": "y", "flag": False, "ver": 1}], schema=PK_SCHEMA))
    altered = alter(server, table, {"op": "add_column", "name": "extra", "type": "int64"},
                    {"op": "make_optional", "name": "v"})
    assert altered["schema"]["fields"][-1] == {"name": "extra", "type": "int64", "nullable": True}
    partial = pa.schema([PK_SCHEMA.field("id"), PK_SCHEMA.field("tag"), pa.field("extra", pa.int64()),
                         PK_SCHEMA.field("ver")])
    put(server, table=table, batch=pa.RecordBatch.from_pylist(
        [{"id": 1, "tag": "a", "extra": 5, "ver": 2}], schema=partial))
    full = pa.schema(list(PK_SCHEMA) + [pa.field("extra", pa.int64())])
    put(server, table=table, batch=pa.RecordBatch.from_pylist(
        [{"id": 3, "tag": "a", "v": 3, "s": "z", "flag": None, "ver": 1, "extra": 7}], schema=full))
    one = {"id": 1, "tag": "a", "v": 1, "s": "x", "flag": True, "ver": 1, "extra": None}
    if engine != "first_row":  # first_row keeps the first row written for a key
        one.update(extra=5, ver=2)
    expected = {1: one,
                2: {"id": 2, "tag": "a", "v": 2, "s": "y", "flag": False, "ver": 1, "extra": None},
                3: {"id": 3, "tag": "a", "v": 3, "s": "z", "flag": None, "ver": 1, "extra": 7}}
    assert lookup(server, table, [3, 1, 2, 4]) == expected
    # The changelog reads in the current schema, the records before the alter with extra null.
    log = server.client.do_get(fl.Ticket(json.dumps({"table": table}).encode())).read_all()
    assert log.schema.names == full.names + ["_change_type"]
    assert log.column("extra").to_pylist()[:2] == [None, None]
    server.restart()
    assert lookup(server, table, [1, 2, 3]) == expected


def test_primary_key_tables_refuse_key_and_merge_property_changes(server):
    table = "evo.pk_rules"
    fresh(server, table, PK_SCHEMA, primary_key=["id", "tag"])
    with expect_error("INVALID_ARGUMENT", "primary or bucket key"):
        alter(server, table, {"op": "rename_column", "name": "id", "new_name": "key"})
    with expect_error("INVALID_ARGUMENT", "primary-key column 'tag' must stay non-nullable"):
        alter(server, table, {"op": "make_optional", "name": "tag"})
    for change in ({"op": "drop_column", "name": "tag"},
                   {"op": "widen_type", "name": "id", "type": "int64"}):
        with expect_error("INVALID_ARGUMENT", "change 1", "primary or bucket key"):
            alter(server, table, change)
    with expect_error("INVALID_ARGUMENT", "merge_engine", "fixed at creation"):
        alter(server, table, {"op": "set_properties", "properties": {"merge_engine": "first_row"}})
    with expect_error("INVALID_ARGUMENT", "changelog.compression"):
        alter(server, table,
              {"op": "set_properties", "properties": {"changelog.compression": "rar"}})
    alter(server, table, {"op": "set_properties", "properties": {"changelog.image": "none"}},
          {"op": "rename_column", "name": "s", "new_name": "label"},
          {"op": "set_column_doc", "name": "id", "doc": "the key"})
    d = server.action("describe_table", {"table": table})
    assert d["properties"]["changelog.image"] == "none"
    assert [f["name"] for f in d["schema"]["fields"]] == ["id", "tag", "v", "label", "flag", "ver"]
    assert d["schema"]["fields"][0]["doc"] == "the key"
    # Lookups, snapshots and the changelog carry the doc in their Arrow schemas.
    put(server, table=table, batch=pa.RecordBatch.from_pylist(
        [{"id": 1, "tag": "a", "v": 1, "label": "x", "flag": True, "ver": 1}],
        schema=PK_SCHEMA.set(3, pa.field("label", pa.string()))))
    for ticket in ({"table": table, "lookup": {"id": [1], "tag": ["a"]}},
                   {"table": table, "snapshot": True}, {"table": table}):
        got = server.client.do_get(fl.Ticket(json.dumps(ticket).encode())).read_all()
        assert got.num_rows == 1 and field_docs(got.schema)["id"] == "the key", ticket
    # A versioned table keeps its version column: it can be renamed (the property follows) and
    # widened, not dropped.
    fresh(server, table, PK_SCHEMA.set(5, pa.field("ver", pa.int32())), primary_key=["id", "tag"],
          properties={"lake.enabled": "false", **PK_ENGINES["versioned"]})
    with expect_error("INVALID_ARGUMENT", "change 1", "'ver' is the version column",
                      "cannot be dropped"):
        alter(server, table, {"op": "drop_column", "name": "ver"})
    d = alter(server, table, {"op": "rename_column", "name": "ver", "new_name": "version"},
              {"op": "widen_type", "name": "version", "type": "int64"})
    assert d["properties"]["merge_engine.version_column"] == "version"
    # An aggregated column's function follows its rename and goes with its drop; a new one
    # cannot be set.
    fresh(server, table, PK_SCHEMA, primary_key=["id", "tag"],
          properties={"lake.enabled": "false", **PK_ENGINES["aggregate"]})
    d = alter(server, table, {"op": "rename_column", "name": "v", "new_name": "total"},
              {"op": "drop_column", "name": "s"})
    assert d["properties"]["fields.total.agg"] == "sum"
    assert "fields.v.agg" not in d["properties"] and "fields.s.agg" not in d["properties"]
    with expect_error("INVALID_ARGUMENT", "fields", "fixed at creation"):
        alter(server, table, {"op": "set_properties", "properties": {"fields.flag.agg": "bool_and"}})


# --- random column changes of primary-key tables --------------------------------------------

PK_START = pa.schema([
    pa.field("id", pa.int32(), nullable=False), pa.field("tag", pa.string(), nullable=False),
    pa.field("v", pa.int32()), pa.field("s", pa.string()), pa.field("flag", pa.bool_()),
    pa.field("ver", pa.int16()), pa.field("small", pa.int8()), pa.field("f", pa.float32()),
    pa.field("dec", pa.decimal128(9, 2))])
PK_KEY = (1, 2)  # the field ids of id and tag
PK_VERSION = 6  # the field id of ver
PK_EVO_ENGINES = {
    "last_row": {},
    "first_row": {"merge_engine": "first_row"},
    "versioned": {"merge_engine": "versioned", "merge_engine.version_column": "ver"},
    "aggregate": {"merge_engine": "aggregate", "fields.v.agg": "sum", "fields.s.agg": "listagg",
                  "fields.flag.agg": "bool_or", "fields.ver.agg": "max", "fields.f.agg": "sum"},
}


def parse_type(name: str) -> pa.DataType:
    if name.startswith("decimal128("):
        return pa.decimal128(*[int(x) for x in name[11:-1].split(",")])
    return pa.type_for_alias(name)


class PkModel:
    """A primary-key table as field ids: its columns [(id, name, type)], each key's row and the
    changelog records of each key, as {field id: value}; rows and records read in the current
    columns (added ones null, dropped ones gone)."""

    def __init__(self, schema: pa.Schema, engine: str):
        self.columns = [(i + 1, f.name, f.type) for i, f in enumerate(schema)]
        self.last_id = len(schema)
        props = PK_EVO_ENGINES[engine]
        self.merge = props.get("merge_engine", "last_row")
        self.agg = {fid: props.get(f"fields.{n}.agg") for fid, n, _ in self.columns}
        self.rows: dict[tuple, dict] = {}
        self.changes: dict[tuple, list] = {}

    def index(self, name):
        return next(i for i, c in enumerate(self.columns) if c[1] == name)

    def schema(self, fids=None) -> pa.Schema:
        return pa.schema([pa.field(n, t, nullable=fid not in PK_KEY)
                          for fid, n, t in self.columns if fids is None or fid in fids])

    def view(self, row: dict) -> dict:
        return {n: row.get(fid) for fid, n, _ in self.columns}

    def apply(self, change: dict) -> None:
        op = change["op"]
        if op == "add_column":
            self.last_id += 1
            col = (self.last_id, change["name"], parse_type(change["type"]))
            at = len(self.columns)
            if change.get("first"):
                at = 0
            elif "after" in change:
                at = self.index(change["after"]) + 1
            self.columns.insert(at, col)
        elif op == "drop_column":
            del self.columns[self.index(change["name"])]
        elif op == "rename_column":
            fid, _, t = self.columns[self.index(change["name"])]
            self.columns[self.index(change["name"])] = (fid, change["new_name"], t)
        elif op == "widen_type":
            fid, n, t = self.columns[self.index(change["name"])]
            self.columns[self.index(change["name"])] = (fid, n, WIDER[t])

    def _emit(self, key, change, row):
        self.changes.setdefault(key, []).append((change, dict(row)))

    def _aggregate(self, fid, old, value):
        agg = self.agg.get(fid)
        if agg is None:  # last_non_null
            return old if value is None else value
        if value is None:
            return old
        if old is None:
            return value
        return {"sum": lambda: old + value, "listagg": lambda: old + "," + value,
                "bool_or": lambda: old or value, "max": lambda: max(old, value)}[agg]()

    def upsert(self, update: dict) -> None:
        key = tuple(update[k] for k in PK_KEY)
        old = self.rows.get(key)
        if old is None:
            new = {fid: update.get(fid) for fid, _, _ in self.columns}
            self.rows[key] = new
            self._emit(key, "+I", new)
            return
        if self.merge == "first_row":
            return
        if (self.merge == "versioned" and old.get(PK_VERSION) is not None
                and update[PK_VERSION] < old[PK_VERSION]):
            return
        old = {fid: old.get(fid) for fid, _, _ in self.columns}
        new = dict(old)
        for fid, value in update.items():
            aggregated = self.merge == "aggregate" and fid not in PK_KEY
            new[fid] = self._aggregate(fid, old[fid], value) if aggregated else value
        self._emit(key, "-U", old)
        self._emit(key, "+U", new)
        self.rows[key] = new

    def delete(self, key: tuple) -> None:
        old = self.rows.pop(key, None)
        if old is not None:
            self._emit(key, "-D", {fid: old.get(fid) for fid, _, _ in self.columns})


def pk_random_change(rng, model: PkModel, engine: str, counter: list[int]) -> dict:
    values = [c for c in model.columns if c[0] not in PK_KEY]
    droppable = [n for fid, n, _ in values if not (engine == "versioned" and fid == PK_VERSION)]
    widenable = [n for _, n, t in values if t in WIDER]
    kinds = ["add", "add", "rename"] + ["drop", "drop"] * (len(values) > 2) + ["widen"] * 3 * bool(
        widenable)
    kind = rng.choice(kinds)
    counter[0] += 1
    if kind == "add":
        change = {"op": "add_column", "name": f"c{counter[0]}", "type": str(rng.choice(NEW_TYPES))}
        where = rng.random()
        if where < 0.5:
            change["after"] = rng.choice([c[1] for c in model.columns])
        elif where < 0.7:
            change["first"] = True
        return change
    if kind == "drop":
        return {"op": "drop_column", "name": rng.choice(droppable)}
    if kind == "rename":
        return {"op": "rename_column", "name": rng.choice([c[1] for c in values]),
                "new_name": f"r{counter[0]}"}
    name = rng.choice(widenable)
    return {"op": "widen_type", "name": name,
            "type": str(WIDER[model.columns[model.index(name)][2]])}


def pk_random_write(server, table, rng, model: PkModel) -> None:
    """An upsert of every column, a partial update or a delete of a few random keys, applied to
    the table and the model."""
    keys = [(rng.randint(0, 7), rng.choice("ab")) for _ in range(rng.randint(1, 6))]
    kind = rng.random()
    if kind < 0.2:
        delete(server, table, pa.RecordBatch.from_pydict(
            {"id": [k[0] for k in keys], "tag": [k[1] for k in keys]},
            schema=model.schema(PK_KEY)))
        for k in keys:
            model.delete(k)
        return
    values = [c for c in model.columns if c[0] not in PK_KEY]
    if kind < 0.55:  # a partial update: some columns, by their current names
        values = rng.sample(values, min(len(values), rng.randint(1, 3)))
        if model.merge == "versioned" and all(c[0] != PK_VERSION for c in values):
            values.append(model.columns[next(i for i, c in enumerate(model.columns)
                                             if c[0] == PK_VERSION)])
    fids = set(PK_KEY) | {c[0] for c in values}
    rows = []
    for k in keys:
        row = {fid: random_value(rng, t, True) for fid, _, t in values}
        if model.merge == "versioned":
            row[PK_VERSION] = rng.randint(0, 20)
        row[1], row[2] = k
        rows.append(row)
    schema = model.schema(fids)
    upsert(server, table, pa.RecordBatch.from_pydict(
        {n: [r[fid] for r in rows] for fid, n, _ in model.columns if fid in fids}, schema=schema))
    for r in rows:
        model.upsert(r)


def pk_key(row: dict) -> tuple:
    return row["id"], row["tag"]


def check_pk_table(server, table: str, model: PkModel) -> None:
    """Snapshot, lookups and the changelog against the model, in the current columns."""
    names = [c[1] for c in model.columns]
    want = {k: model.view(r) for k, r in model.rows.items()}
    snap = server.client.do_get(fl.Ticket(json.dumps({"table": table, "snapshot": True}).encode()))
    snap = snap.read_all()
    assert snap.schema == model.schema(), f"{snap.schema}\nexpected\n{model.schema()}"
    assert {pk_key(r): r for r in snap.to_pylist()} == want and snap.num_rows == len(want)
    keys = [(i, t) for i in range(9) for t in "ab"]
    found = server.client.do_get(fl.Ticket(json.dumps({"table": table, "lookup": {
        "id": [k[0] for k in keys], "tag": [k[1] for k in keys]}}).encode())).read_all()
    assert [pk_key(r) for r in found.to_pylist()] == [k for k in keys if k in want]
    assert {pk_key(r): r for r in found.to_pylist()} == want
    records: dict[tuple, list] = {}
    for b in range(2):
        log = server.client.do_get(fl.Ticket(json.dumps({"table": table, "bucket": b}).encode()))
        log = log.read_all()
        assert log.column_names == names + ["_change_type"]
        for r in log.to_pylist():
            change = r.pop("_change_type")
            records.setdefault(pk_key(r), []).append((change, r))
    assert records == {k: [(c, model.view(r)) for c, r in v] for k, v in model.changes.items()}


def check_pk_lake(server, table: str, model: PkModel) -> None:
    """The lake table holds the current rows and the changelog lake table every record, in the
    current columns, as pyiceberg reads them."""
    from pyiceberg.table import StaticTable
    ends = [b["next_offset"] for b in server.action("describe_table", {"table": table})[
        "bucket_offsets"]]
    deadline = time.time() + 15
    while True:
        lake = server.action("describe_table", {"table": table})["lake"]
        if (lake.get("tiered_offsets") == ends and "error" not in lake
                and lake.get("changelog", {}).get("tiered_offsets") == ends):
            break
        assert time.time() < deadline, lake
        time.sleep(0.05)
    system = ["__bucket", "__offset", "__timestamp"]
    names = [c[1] for c in model.columns]
    rows = StaticTable.from_metadata(lake["metadata_location"]).scan().to_arrow()
    assert rows.column_names == names + system
    assert {pk_key(r): r for r in rows.drop_columns(system).to_pylist()} == {
        k: model.view(r) for k, r in model.rows.items()}
    records = StaticTable.from_metadata(lake["changelog"]["metadata_location"]).scan().to_arrow()
    assert records.column_names == names + ["_change_type"] + system
    per_key: dict[tuple, list] = {}
    for r in sorted(records.to_pylist(), key=lambda r: r["__offset"]):
        change = r.pop("_change_type")
        per_key.setdefault(pk_key(r), []).append((change, {n: r[n] for n in names}))
    assert per_key == {k: [(c, model.view(r)) for c, r in v] for k, v in model.changes.items()}


@pytest.mark.parametrize("engine", sorted(PK_EVO_ENGINES))
def test_primary_key_random_alters_and_writes_match_the_model(server, engine):
    """Drops, moves (add_column first or after a column), widenings, renames and adds of value
    columns interleaved with upserts, partial updates and deletes, under each merge engine: the
    rows written in every version read converted in lookups, snapshots, the changelog and the
    lake (pyiceberg), across a crash and recovery."""
    rng = random.Random(f"pk-{engine}")
    table = f"evo.pkr_{engine}"
    fresh(server, table, PK_START, primary_key=["id", "tag"], buckets=2,
          properties={"lake.enabled": "true", "lake.changelog": "true", "lake.freshness": "100ms",
                      **PK_EVO_ENGINES[engine]})
    model = PkModel(PK_START, engine)
    counter = [0]
    # First a column before the key columns, a widened sum (aggregate), a dropped listagg
    # (aggregate) and a widened version column (versioned), then random changes.
    scripted = {1: {"op": "add_column", "name": "c0", "type": "int16", "first": True},
                3: {"op": "widen_type", "name": "v", "type": "int64"},
                5: {"op": "drop_column", "name": "s"},
                7: {"op": "widen_type", "name": "ver", "type": "int32"}}
    for step in range(16):
        if step % 2 == 1:
            change = scripted.get(step) or pk_random_change(rng, model, engine, counter)
            reply = alter(server, table, change)
            model.apply(change)
            assert [f["name"] for f in reply["schema"]["fields"]] == [c[1] for c in model.columns]
        for _ in range(2):
            pk_random_write(server, table, rng, model)
        if step == 9:
            check_pk_table(server, table, model)
            # A crash: the store's rows not yet flushed come back from the changelog, written in
            # several versions and replayed converted.
            server.kill()
            server.start()
    check_pk_table(server, table, model)
    check_pk_lake(server, table, model)


def test_cli_table_alter(server, oxbow):
    fresh(server, "evo.cli")
    out = oxbow.ok("table", "alter", "evo.cli", "--add-column", "note string",
                   "--rename", "n=count", "--widen", "count int64",
                   "--property", "retention.note=kept", "--server", f"127.0.0.1:{server.port}")
    assert "altered evo.cli (schema version 1)" in out.stdout.decode()
    d = server.action("describe_table", {"table": "evo.cli"})
    assert [(f["name"], f["type"]) for f in d["schema"]["fields"]] == [
        ("id", "int64"), ("d", "date32[day]"), ("count", "int64"), ("note", "string")]
    assert d["field_ids"] == [1, 2, 3, 4]
    err = oxbow.fails("table", "alter", "evo.cli", "--add-column", "extra int32",
                      "--widen", "d timestamp[us]", "--server", f"127.0.0.1:{server.port}")
    assert "change 2: cannot change column 'd' from date32[day] to timestamp[us]" in err
    # Nothing of the refused call was applied.
    d = server.action("describe_table", {"table": "evo.cli"})
    assert [f["name"] for f in d["schema"]["fields"]] == ["id", "d", "count", "note"]


def test_streams_open_across_an_alter_end_with_an_error(server):
    """A follow read and a put stream opened before an alter never mix schemas: they end at their
    next batch, and streams opened again see the new schema."""
    fresh(server, "evo.streams")
    rows = pa.RecordBatch.from_pydict({"id": [1], "d": [None], "n": [1]}, schema=SIMPLE)
    writer, acks = server.client.do_put(fl.FlightDescriptor.for_path("evo", "streams"), SIMPLE)
    writer.write_batch(rows)
    acks.read()
    follow = server.new_client().do_get(fl.Ticket(json.dumps(
        {"table": "evo.streams", "follow": True}).encode()))
    assert follow.read_chunk().data.num_rows == 1
    alter(server, "evo.streams", {"op": "add_column", "name": "x", "type": "string"})
    with pytest.raises(pa.ArrowException, match="was altered or dropped after this stream started"):
        writer.write_batch(rows)
        acks.read()
        writer.done_writing()
        writer.close()
    with pytest.raises(pa.ArrowException, match="was altered or dropped after this stream started"):
        follow.read_chunk()
    new = pa.RecordBatch.from_pydict({"id": [2], "d": [None], "n": [2], "x": ["two"]},
                                     schema=SIMPLE.append(pa.field("x", pa.string())))
    writer, acks = server.client.do_put(fl.FlightDescriptor.for_path("evo", "streams"), new.schema)
    writer.write_batch(new)
    acks.read()
    writer.done_writing()
    writer.close()
    assert read(server, "evo.streams").to_pylist() == [
        {"id": 1, "d": None, "n": 1, "x": None}, {"id": 2, "d": None, "n": 2, "x": "two"}]


def test_kafka_fetch_serves_earlier_rows_in_the_current_schema(server):
    from oxbowtest.kafka import consume_assigned
    fresh(server, "evo.kjson", properties={"lake.enabled": "false", "kafka.value.format": "json"})
    first = pa.RecordBatch.from_pydict({"id": [1], "d": [None], "n": [7]}, schema=SIMPLE)
    writer, acks = server.client.do_put(fl.FlightDescriptor.for_path("evo", "kjson"), SIMPLE)
    writer.write_batch(first)
    acks.read()
    writer.done_writing()
    writer.close()
    alter(server, "evo.kjson", {"op": "rename_column", "name": "n", "new_name": "m"},
          {"op": "widen_type", "name": "m", "type": "int64"},
          {"op": "add_column", "name": "note", "type": "string"},
          {"op": "drop_column", "name": "d"})
    records = [json.loads(m.value()) for m in consume_assigned(server, "evo.kjson", 1, 1)]
    assert records == [{"id": 1, "m": 7, "note": None}]


def field_docs(schema: pa.Schema) -> dict:
    return {f.name: (f.metadata or {}).get(b"doc", b"").decode() or None for f in schema}


def test_column_docs_in_describe_and_arrow_field_metadata(server, oxbow):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("amount", pa.int32(), metadata={"doc": "in cents"})])
    body = schema_json(schema)
    body["fields"][0]["doc"] = "the order id"
    try:
        server.action("drop_table", {"table": "evo.docs"})
    except pa.ArrowException:
        pass
    server.action("create_table", {"table": "evo.docs", "schema": body,
                                   "properties": {"lake.enabled": "false"}})
    d = server.action("describe_table", {"table": "evo.docs"})
    assert [f.get("doc") for f in d["schema"]["fields"]] == ["the order id", "in cents"]
    assert "metadata" not in d["schema"]["fields"][1]
    put(server, pa.RecordBatch.from_pydict({"id": [1], "amount": [5]}, schema=schema), "evo.docs")
    reply = alter(server, "evo.docs", {"op": "set_column_doc", "name": "amount", "doc": "in euros"},
                  {"op": "set_column_doc", "name": "id", "doc": None},
                  {"op": "add_column", "name": "note", "type": "string", "doc": "free text"})
    assert reply["schema_id"] == 1
    want = {"id": None, "amount": "in euros", "note": "free text"}
    assert [f.get("doc") for f in reply["schema"]["fields"]] == list(want.values())
    # Arrow schemas carry each doc as field metadata "doc" (as pyiceberg's do): DoGet,
    # GetSchema, GetFlightInfo; a read in version 0 has version 0's docs.
    got = read(server, "evo.docs")
    assert field_docs(got.schema) == want
    assert got.to_pylist() == [{"id": 1, "amount": 5, "note": None}]
    descriptor = fl.FlightDescriptor.for_path("evo", "docs")
    assert field_docs(server.client.get_schema(descriptor).schema) == want
    assert field_docs(server.client.get_flight_info(descriptor).schema) == want
    assert field_docs(read(server, "evo.docs", ["note"]).schema) == {"note": "free text"}
    assert field_docs(read(server, "evo.docs", schema_id=0).schema) == {
        "id": "the order id", "amount": "in cents"}
    # A writer's field metadata is ignored: a schema without docs writes.
    plain = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("amount", pa.int32()),
                       pa.field("note", pa.string())])
    put(server, pa.RecordBatch.from_pydict({"id": [2], "amount": [6], "note": ["x"]}, schema=plain),
        "evo.docs")
    # The CLI sets and removes docs and shows them.
    port = f"127.0.0.1:{server.port}"
    out = oxbow.ok("table", "alter", "evo.docs", "--doc", "note=what the buyer wrote = free",
                   "--remove-doc", "amount", "--server", port)
    assert "schema version 2" in out.stdout.decode()
    d = server.action("describe_table", {"table": "evo.docs"})
    assert [f.get("doc") for f in d["schema"]["fields"]] == [None, None, "what the buyer wrote = free"]
    shown = oxbow.ok("table", "describe", "evo.docs", "--server", port).stdout.decode()
    assert "note: string  -- what the buyer wrote = free" in shown
    server.restart()
    assert field_docs(read(server, "evo.docs", schema_id=1).schema) == want
    with expect_error("INVALID_ARGUMENT", "set_column_doc needs \"doc\""):
        alter(server, "evo.docs", {"op": "set_column_doc", "name": "note"})
    server.action("drop_table", {"table": "evo.docs"})


def test_reading_in_an_earlier_version(server):
    """A column dropped since is null in batches written after the drop, one renamed comes
    under its old name, one widened since is narrowed back (a value that does not fit fails the
    read naming the column's batch); an unknown version is INVALID_ARGUMENT."""
    fresh(server, "evo.asof")
    v0 = pa.RecordBatch.from_pydict({"id": [1], "d": [None], "n": [10]}, schema=SIMPLE)
    put(server, v0, "evo.asof")
    alter(server, "evo.asof", {"op": "drop_column", "name": "d"},
          {"op": "rename_column", "name": "n", "new_name": "count"},
          {"op": "widen_type", "name": "count", "type": "int64"},
          {"op": "add_column", "name": "note", "type": "string"})
    v1 = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("count", pa.int64()),
                    pa.field("note", pa.string())])
    put(server, pa.RecordBatch.from_pydict({"id": [2], "count": [20], "note": ["b"]}, schema=v1),
        "evo.asof")
    as_v0 = read(server, "evo.asof", schema_id=0)
    assert as_v0.schema == SIMPLE
    assert as_v0.to_pylist() == [{"id": 1, "d": None, "n": 10}, {"id": 2, "d": None, "n": 20}]
    assert read(server, "evo.asof", ["n"], schema_id=0).to_pylist() == [{"n": 10}, {"n": 20}]
    assert read(server, "evo.asof", schema_id=1).to_pylist() == [
        {"id": 1, "count": 10, "note": None}, {"id": 2, "count": 20, "note": "b"}]
    # A follow read in version 0 gets new batches converted too.
    follow = server.new_client().do_get(fl.Ticket(json.dumps(
        {"table": "evo.asof", "schema_id": 0, "from": 2, "follow": True}).encode()))
    put(server, pa.RecordBatch.from_pydict({"id": [3], "count": [2**40], "note": [None]},
                                           schema=v1), "evo.asof")
    with expect_error("INVALID_ARGUMENT", "batch at offset 2 (schema version 1)",
                      "value 1099511627776 of int64 does not fit int32"):
        follow.read_chunk()
    with expect_error("INVALID_ARGUMENT", "table 'evo.asof' has no schema version 5",
                      "its versions: 0, 1"):
        read(server, "evo.asof", schema_id=5)
    with expect_error("INVALID_ARGUMENT", "unknown column 'count'"):
        read(server, "evo.asof", ["count"], schema_id=0)
    with expect_error("INVALID_ARGUMENT", "\"schema_id\" must be an integer"):
        read(server, "evo.asof", schema_id="1")


def test_concurrent_writers_see_one_schema_per_batch(server):
    """Writers putting batches while another thread alters the table: every batch read back is
    wholly in the version its writer used (the version it stamped in every row), none is lost."""
    import threading

    table = "evo.race"
    start = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("ver", pa.int64()),
                       pa.field("payload", pa.int32())])
    fresh(server, table, start)
    stop = threading.Event()
    acked = []
    errors = []

    def arrow_schema(d):
        return pa.schema([pa.field(f["name"], pa.type_for_alias(f["type"]),
                                   nullable=f["nullable"]) for f in d["schema"]["fields"]])

    def writer(worker):
        client = server.new_client()
        n = 0
        while not stop.is_set():
            d = json.loads(b"".join(r.body.to_pybytes() for r in client.do_action(
                fl.Action("describe_table", json.dumps({"table": table}).encode()))))
            schema = arrow_schema(d)
            w, acks = client.do_put(fl.FlightDescriptor.for_path("evo", "race"), schema)
            try:
                while not stop.is_set():
                    rows = 3
                    data = {}
                    for f in schema:
                        if f.name == "id":
                            data["id"] = [worker * 10**6 + n * 10 + i for i in range(rows)]
                        elif f.name == "ver":
                            data["ver"] = [d["schema_id"]] * rows
                        elif pa.types.is_integer(f.type):
                            data[f.name] = [n] * rows
                        else:
                            data[f.name] = [f.name] * rows
                    w.write_batch(pa.RecordBatch.from_pydict(data, schema=schema))
                    if acks.read() is None:  # the stream ended: its error comes with close()
                        w.close()
                    acked.extend(data["id"])
                    n += 1
                w.done_writing()
                w.close()
            except pa.ArrowException as e:
                try:
                    w.close()
                except pa.ArrowException:
                    pass
                if "was altered or dropped after this stream started" not in str(e):
                    errors.append(str(e))
                    return

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    added = []  # (column, the version that added it)
    changes = [{"op": "add_column", "name": "a1", "type": "string"},
               {"op": "rename_column", "name": "payload", "new_name": "p1"},
               {"op": "widen_type", "name": "p1", "type": "int64"},
               {"op": "add_column", "name": "a2", "type": "int32", "after": "id"},
               {"op": "add_column", "name": "a3", "type": "string"}]
    try:
        for change in changes:
            time.sleep(0.15)
            reply = alter(server, table, change)
            if change["op"] == "add_column":
                added.append((change["name"], reply["schema_id"]))
        time.sleep(0.15)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
    assert not errors, errors
    reader = server.client.do_get(fl.Ticket(json.dumps({"table": table}).encode()))
    seen = []
    versions = set()
    for chunk in reader:
        rows = chunk.data.to_pylist()
        ver = {r["ver"] for r in rows}
        assert len(ver) == 1, rows  # one version per batch
        v = ver.pop()
        versions.add(v)
        for column, since in added:  # a column is there exactly when the batch's version has it
            assert all((r[column] is None) == (v < since) for r in rows), (column, since, rows)
        assert len({r["p1"] for r in rows}) == 1
        seen += [r["id"] for r in rows]
    # Every acknowledged row is there once (a batch cut off by an alter may be there unacked).
    assert len(seen) == len(set(seen)) and set(acked) <= set(seen) and acked
    assert len(versions) >= 3, versions  # the writers did cross alters


NESTED_START = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("p", pa.struct([pa.field("x", pa.int32()),
                             pa.field("y", pa.struct([pa.field("a", pa.int8(), nullable=False),
                                                      pa.field("b", pa.string())]),
                                      nullable=False)])),
    pa.field("l", pa.list_(pa.struct([pa.field("v", pa.int16()), pa.field("w", pa.float32())]))),
    pa.field("li", pa.list_(pa.int8())),
    pa.field("m", pa.map_(pa.string(), pa.struct([pa.field("q", pa.int32())]))),
    pa.field("mv", pa.map_(pa.string(), pa.int8())),
])


@pytest.mark.parametrize("seed", [3, 4])
def test_random_nested_alters_and_writes_match_the_model(server, seed):
    """Changes inside nested columns (docs/api.md#nested-fields) interleaved with writes in the
    current and the previous version, read back in every version through DoGet across a
    restart, against nested_model.NestedModel; describe_table's nested field ids match it."""
    from oxbowtest.nested_model import NestedModel
    rng = random.Random(seed)
    table = "evo.nested"
    fresh(server, table, NESTED_START)
    model = NestedModel(NESTED_START)
    counter = [0]
    old_writes = 0
    for step in range(12):
        if step > 0 and rng.random() < 0.6:
            changes = [model.random_change(rng, counter)]
            if rng.random() < 0.3:  # two changes in one call, the second on the first's result
                saved = copy.deepcopy(model.columns), model.last_id
                model.apply(changes[0])
                changes.append(model.random_change(rng, counter))
                model.columns, model.last_id = saved
            reply = alter(server, table, *changes)
            for c in changes:
                model.apply(c)
            model.versions.append(copy.deepcopy(model.columns))
            assert reply["schema_id"] == len(model.versions) - 1
            assert reply["last_field_id"] == model.last_id
            assert [f["type"] for f in reply["schema"]["fields"]] == [
                str(c.arrow()) for c in model.columns], (changes, reply["schema"])
            assert reply["child_field_ids"] == [c.child_ids() for c in model.columns]
        columns = model.columns
        if len(model.versions) > 1 and rng.random() < 0.3:
            columns = model.versions[-2]
            old_writes += 1
        rows = model.random_rows(rng, columns, len(model.rows), rng.randint(1, 4))
        put(server, model.batch(rows, columns), table)
        model.rows += rows
        if step == 6:
            server.restart()
        got = read(server, table)
        assert got.schema == model.schema(), f"step {step}:\n{got.schema}\n{model.schema()}"
        assert got.to_pylist() == model.expected(), f"step {step}"
    assert len(model.versions) >= 4 and old_writes >= 1, (len(model.versions), old_writes)
    # Projection, and every batch read in every version.
    assert read(server, table, ["p", "id"]).to_pylist() == [
        {"p": r["p"], "id": r["id"]} for r in model.expected()]
    for schema_id, columns in enumerate(model.versions):
        got = read(server, table, schema_id=schema_id)
        assert got.column_names == [c.name for c in columns]
        assert got.to_pylist() == model.expected(columns), f"version {schema_id}"
    server.action("drop_table", {"table": table})


def test_cli_table_alter_nested_paths(server, oxbow):
    """The CLI's dotted paths, a name holding '.' in backticks (docs/cli.md)."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("p", pa.struct([pa.field("x", pa.int32()),
                                                 pa.field("a.b", pa.int8())]))])
    fresh(server, "evo.clinested", schema)
    out = oxbow.ok("table", "alter", "evo.clinested", "--add-column", "p.z double",
                   "--rename", "p.x=x2", "--widen", "p.`a.b` int16",
                   "--server", f"127.0.0.1:{server.port}")
    assert "altered evo.clinested (schema version 1)" in out.stdout.decode()
    d = server.action("describe_table", {"table": "evo.clinested"})
    assert d["schema"]["fields"][1]["type"] == "struct<x2: int32, a.b: int16, z: double>"
    assert d["child_field_ids"] == [[], [3, 4, 5]]
    err = oxbow.fails("table", "alter", "evo.clinested", "--drop-column", "p.nope",
                      "--server", f"127.0.0.1:{server.port}")
    assert "change 1: struct p (struct<x2: int32, a.b: int16, z: double>) has no field 'nope'" in err
    err = oxbow.fails("table", "alter", "evo.clinested", "--drop-column", "p.`x",
                      "--server", f"127.0.0.1:{server.port}")
    assert "a backtick is not closed" in err
