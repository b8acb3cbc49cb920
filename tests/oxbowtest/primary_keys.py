"""The primary-key tables' shared model: the schema, key and merge engines the tests use, the
Flight commands (upsert, delete, snapshot, changelog, lookup) and a Python reference model that
every write is replayed into and every read checked against."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pyarrow.flight as fl

from oxbowtest.flight import schema_json

KEY = ("id", "tag")
SCHEMA = pa.schema([
    pa.field("id", pa.int32(), nullable=False),
    pa.field("tag", pa.string(), nullable=False),
    pa.field("v", pa.int64()),
    pa.field("s", pa.string()),
    pa.field("flag", pa.bool_()),
    pa.field("ver", pa.int64()),
])
COLUMNS = SCHEMA.names
VALUE_COLUMNS = [c for c in COLUMNS if c not in KEY]

ENGINES = {
    "last_row": {},
    "last_row_image_none": {"changelog.image": "none"},
    "first_row": {"merge_engine": "first_row"},
    "versioned": {"merge_engine": "versioned", "merge_engine.version_column": "ver"},
    "aggregate": {"merge_engine": "aggregate", "fields.v.agg": "sum", "fields.s.agg": "listagg",
                  "fields.flag.agg": "bool_or", "fields.ver.agg": "max"},
}


def create_pk_table(server, table, schema=SCHEMA, primary_key=KEY, **kwargs):
    return server.action("create_table", {"table": table, "schema": schema_json(schema),
                                          "primary_key": list(primary_key), **kwargs})


def command(table: str, op: str, **extra) -> fl.FlightDescriptor:
    return fl.FlightDescriptor.for_command(json.dumps({"table": table, "op": op, **extra}))


def write(client, descriptor: fl.FlightDescriptor, batches) -> list[dict]:
    batches = list(batches)
    writer, acks = client.do_put(descriptor, batches[0].schema)
    results = []
    try:
        for batch in batches:
            writer.write_batch(batch)
            results.append(json.loads(acks.read().to_pybytes()))
        writer.done_writing()
    finally:
        writer.close()
    return results


def upsert(server, table, batch, client=None):
    return write(client or server.client, command(table, "upsert"), [batch])[0]


def delete(server, table, batch, client=None):
    return write(client or server.client, command(table, "delete"), [batch])[0]


def do_get(server, ticket: dict, client=None):
    """The whole stream and each message's app_metadata (None where it has none)."""
    reader = (client or server.client).do_get(fl.Ticket(json.dumps(ticket).encode()))
    batches, metas = [], []
    for chunk in reader:
        batches.append(chunk.data)
        raw = chunk.app_metadata.to_pybytes() if chunk.app_metadata is not None else b""
        metas.append(json.loads(raw) if raw else None)
    return pa.Table.from_batches(batches, schema=reader.schema), metas


def snapshot(server, table, **ticket):
    return do_get(server, {"table": table, "snapshot": True, **ticket})


def changelog(server, table, buckets) -> list[dict]:
    rows = []
    for b in range(buckets):
        t, _ = do_get(server, {"table": table, "bucket": b})
        rows.extend(t.to_pylist())
    return rows


def key_of(row: dict) -> tuple:
    return tuple(row[k] for k in KEY)


def by_key(rows) -> dict:
    return {key_of(r): r for r in rows}


# --- the reference model ----------------------------------------------------------------------


class Model:
    """What a primary-key table must hold and emit, row by row, for one merge engine."""

    def __init__(self, engine: str):
        self.engine = engine
        self.props = ENGINES[engine]
        self.merge = self.props.get("merge_engine", "last_row")
        self.full_image = self.props.get("changelog.image", "full") == "full"
        self.rows: dict[tuple, dict] = {}
        self.changes: dict[tuple, list[tuple[str, dict]]] = {}

    def _emit(self, key, change, row):
        self.changes.setdefault(key, []).append((change, dict(row)))

    def upsert(self, update: dict):
        key = key_of(update)
        old = self.rows.get(key)
        partial = set(update) != set(COLUMNS)
        if self.merge == "last_row" and not self.full_image and not partial:
            self.rows[key] = dict(update)
            self._emit(key, "+U", update)
            return
        if old is None:
            new = {c: update.get(c) for c in COLUMNS}
            self.rows[key] = new
            self._emit(key, "+I", new)
            return
        if self.merge == "first_row":
            return
        if self.merge == "versioned" and old["ver"] is not None and update["ver"] < old["ver"]:
            return
        new = dict(old)
        for c, value in update.items():
            if self.merge != "aggregate" or c in KEY:
                new[c] = value
            else:
                new[c] = self._aggregate(c, old[c], value)
        if self.full_image:
            self._emit(key, "-U", old)
        self._emit(key, "+U", new)
        self.rows[key] = new

    @staticmethod
    def _aggregate(column, old, value):
        if value is None:
            return old
        if old is None:
            return value
        return {"v": lambda: old + value, "s": lambda: old + "," + value,
                "flag": lambda: old or value, "ver": lambda: max(old, value)}[column]()

    def delete(self, key: tuple):
        old = self.rows.pop(key, None)
        if old is not None:
            self._emit(key, "-D", old)


def replay(records: list[dict]) -> dict:
    state = {}
    for r in records:
        row = {c: r[c] for c in COLUMNS}
        if r["_change_type"] in ("+I", "+U"):
            state[key_of(row)] = row
        elif r["_change_type"] == "-D":
            state.pop(key_of(row), None)
    return state


def random_write(rng: random.Random, engine: str):
    """One random batch: ("upsert", batch, [row dicts]) or ("delete", batch, [keys])."""
    n = rng.randint(1, 12)
    keys = [(rng.randint(0, 7), rng.choice(["a", "b"])) for _ in range(n)]
    kind = rng.random()
    if kind < 0.2:
        return "delete", pa.record_batch(
            [pa.array([k[0] for k in keys], pa.int32()), pa.array([k[1] for k in keys])],
            schema=pa.schema([SCHEMA.field("id"), SCHEMA.field("tag")])), keys
    columns = list(COLUMNS)
    if kind < 0.5:  # a partial update: the key plus some of the values
        columns = list(KEY) + sorted(rng.sample(VALUE_COLUMNS, rng.randint(1, 3)),
                                     key=COLUMNS.index)
        if engine == "versioned" and "ver" not in columns:
            columns.append("ver")
    rows = []
    for k in keys:
        row = {"id": k[0], "tag": k[1],
               "v": rng.choice([None, rng.randint(-50, 50)]),
               "s": rng.choice([None, "x", "yy", "héllo"]),
               "flag": rng.choice([None, True, False]),
               "ver": rng.randint(0, 20) if engine == "versioned" else rng.choice([None, rng.randint(0, 9)])}
        rows.append({c: row[c] for c in columns})
    schema = pa.schema([SCHEMA.field(c) for c in columns])
    return "upsert", pa.Table.from_pylist(rows, schema=schema).to_batches()[0], rows


def check_against_model(server, table, model: Model, buckets: int, rng: random.Random):
    snap, metas = snapshot(server, table)
    assert by_key(snap.to_pylist()) == model.rows
    assert len(snap) == len(model.rows), "a key appears twice in the snapshot"
    assert metas[0] is not None and len(metas[0]["offsets"]) == buckets
    records = changelog(server, table, buckets)
    assert replay(records) == model.rows
    per_key: dict[tuple, list] = {}
    for r in records:
        per_key.setdefault(key_of(r), []).append(
            (r["_change_type"], {c: r[c] for c in COLUMNS}))
    assert per_key == model.changes
    wanted = sorted({(rng.randint(0, 9), rng.choice(["a", "b", "c"])) for _ in range(10)})
    found, _ = do_get(server, {"table": table, "lookup": {"id": [k[0] for k in wanted],
                                                          "tag": [k[1] for k in wanted]}})
    assert by_key(found.to_pylist()) == {k: model.rows[k] for k in wanted if k in model.rows}
