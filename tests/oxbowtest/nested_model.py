"""A Python model of a table whose nested columns change (docs/api.md#nested-fields): every field
(nested ones too) has a field id, rows are stored by field id, and a version's rows are the stored
values walked through that version's fields, so added fields read null, dropped ones are gone,
renamed ones come under their new name and widened ones in the wider type. Shared by
tests/integration/test_alter_table.py and tests/lake/test_lake_schema_evolution.py."""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field

import pyarrow as pa

WIDER = {"int8": "int16", "int16": "int32", "int32": "int64", "float": "double"}
LEAF = {"int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
        "float": pa.float32(), "double": pa.float64(), "string": pa.string()}


@dataclass
class F:
    """A field: a leaf ("kind" a LEAF name) or a struct, list (one child, the item) or map (two
    children, key and value)."""
    id: int
    name: str
    kind: str
    nullable: bool = True
    children: list["F"] = field(default_factory=list)

    def arrow(self) -> pa.DataType:
        if self.kind == "struct":
            return pa.struct([c.arrow_field() for c in self.children])
        if self.kind == "list":
            return pa.list_(self.children[0].arrow_field())
        if self.kind == "map":
            return pa.map_(self.children[0].arrow(), self.children[1].arrow_field())
        return LEAF[self.kind]

    def arrow_field(self) -> pa.Field:
        return pa.field(self.name, self.arrow(), nullable=self.nullable)

    def child_ids(self) -> list[int]:
        """Nested field ids in pre-order, as describe_table's "child_field_ids" lists them."""
        out = []
        for c in self.children:
            out.append(c.id)
            out += c.child_ids()
        return out


def parse(text: str, name: str, ids, nullable=True) -> F:
    """An F of the few Oxbow type names this model uses; `ids` gives the ids in pre-order."""
    t = pa_type(text)
    return from_arrow(pa.field(name, t, nullable=nullable), ids)


def pa_type(text: str) -> pa.DataType:
    if text in LEAF:
        return LEAF[text]
    if text.startswith("struct<"):
        inner = text[len("struct<"):-1]
        fields = []
        for part in split_top(inner):
            n, t = part.split(": ", 1)
            nullable = not t.endswith(" not null")
            fields.append(pa.field(n, pa_type(t.removesuffix(" not null")), nullable=nullable))
        return pa.struct(fields)
    if text.startswith("list<"):
        inner = text[len("list<"):-1]
        inner = inner.split(": ", 1)[1] if inner.startswith("item: ") else inner
        return pa.list_(pa_type(inner))
    if text.startswith("map<"):
        k, v = split_top(text[len("map<"):-1])
        return pa.map_(pa_type(k), pa_type(v))
    raise ValueError(text)


def split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def from_arrow(f: pa.Field, ids) -> F:
    """An F of a pyarrow field, the field's own id from `ids` first, then its children's."""
    node = F(next(ids), f.name, "", f.nullable)
    t = f.type
    if pa.types.is_struct(t):
        node.kind = "struct"
        node.children = [from_arrow(t.field(i), ids) for i in range(t.num_fields)]
    elif pa.types.is_map(t):
        node.kind = "map"
        node.children = [from_arrow(pa.field("key", t.key_type, nullable=False), ids),
                         from_arrow(t.item_field.with_name("value"), ids)]
    elif pa.types.is_list(t):
        node.kind = "list"
        node.children = [from_arrow(t.value_field, ids)]
    else:
        node.kind = next(k for k, v in LEAF.items() if v == t)
    return node


class NestedModel:
    def __init__(self, schema: pa.Schema):
        counter = iter(range(1, 1 << 20))
        top = [next(counter) for _ in schema]
        self.last_id = len(schema)
        self.columns: list[F] = []
        for f, fid in zip(schema, top):
            # A column's nested fields take the ids after every column's, column by column.
            ids = iter([fid] + list(range(self.last_id + 1, self.last_id + 1 + 64)))
            node = from_arrow(f, ids)
            self.last_id += len(node.child_ids())
            self.columns.append(node)
        self.versions = [copy.deepcopy(self.columns)]
        self.rows: list[dict] = []  # {column id: value by id}

    # --- schemas ---------------------------------------------------------------------------
    def schema(self, columns=None) -> pa.Schema:
        return pa.schema([c.arrow_field() for c in (columns or self.columns)])

    def new_ids(self):
        while True:
            self.last_id += 1
            yield self.last_id

    # --- paths -----------------------------------------------------------------------------
    def nodes(self):
        """(path, node, parent) of every nested field, depth first."""
        out = []

        def walk(node, path):
            for c in node.children:
                name = c.name
                if node.kind == "map":
                    name = "key" if c is node.children[0] else "value"
                out.append((path + [name], c, node))
                walk(c, path + [name])

        for col in self.columns:
            walk(col, [col.name])
        return out

    def find(self, path):
        node = next(c for c in self.columns if c.name == path[0])
        for name in path[1:]:
            if node.kind == "struct":
                node = next(c for c in node.children if c.name == name)
            elif node.kind == "list":
                node = node.children[0]
            else:
                node = node.children[0 if name == "key" else 1]
        return node

    # --- changes ---------------------------------------------------------------------------
    def apply(self, change: dict) -> None:
        path = change["name"]
        if change["op"] == "add_column":
            parent = self.find(path[:-1])
            node = parse(change["type"], path[-1], self.new_ids())
            at = len(parent.children)
            if change.get("first"):
                at = 0
            elif "after" in change:
                at = [c.name for c in parent.children].index(change["after"]) + 1
            parent.children.insert(at, node)
            return
        node = self.find(path)
        if change["op"] == "drop_column":
            parent = self.find(path[:-1])
            parent.children.remove(node)
        elif change["op"] == "rename_column":
            node.name = change["new_name"]
        elif change["op"] == "widen_type":
            node.kind = change["type"]
        elif change["op"] == "make_optional":
            node.nullable = True

    def random_change(self, rng: random.Random, counter: list[int]) -> dict:
        nodes = self.nodes()
        structs = [(p, n) for p, n, _ in nodes if n.kind == "struct"] + \
                  [([c.name], c) for c in self.columns if c.kind == "struct"]
        droppable = [p for p, n, parent in nodes if parent.kind == "struct" and
                     len(parent.children) > 1]
        renamable = [p for p, n, parent in nodes if parent.kind == "struct"]
        widenable = [p for p, n, parent in nodes if n.kind in WIDER and
                     not (parent.kind == "map" and n is parent.children[0])]
        required = [p for p, n, parent in nodes if not n.nullable and
                    not (parent.kind == "map" and n is parent.children[0])]
        kinds = ["add", "add", "rename"] + ["drop"] * bool(droppable) + \
                ["widen", "widen"] * bool(widenable) + ["optional"] * bool(required)
        kind = rng.choice(kinds)
        counter[0] += 1
        if kind == "add":
            path, parent = rng.choice(structs)
            t = rng.choice(["int8", "int32", "string", "float", "struct<k: int16, s: string>"])
            change = {"op": "add_column", "name": path + [f"n{counter[0]}"], "type": t}
            where = rng.random()
            if where < 0.3:
                change["after"] = rng.choice(parent.children).name
            elif where < 0.4:
                change["first"] = True
            return change
        if kind == "drop":
            return {"op": "drop_column", "name": rng.choice(droppable)}
        if kind == "rename":
            return {"op": "rename_column", "name": rng.choice(renamable),
                    "new_name": f"r{counter[0]}"}
        if kind == "widen":
            path = rng.choice(widenable)
            return {"op": "widen_type", "name": path, "type": WIDER[self.find(path).kind]}
        return {"op": "make_optional", "name": rng.choice(required)}

    # --- values ----------------------------------------------------------------------------
    def random_value(self, rng: random.Random, node: F, salt: int):
        if node.nullable and rng.random() < 0.15:
            return None
        if node.kind == "struct":
            return {c.id: self.random_value(rng, c, salt) for c in node.children}
        if node.kind == "list":
            return [self.random_value(rng, node.children[0], salt) for _ in range(rng.randint(0, 3))]
        if node.kind == "map":
            keys = rng.sample(["a", "b", "c", "d"], rng.randint(0, 3))
            return [(k, self.random_value(rng, node.children[1], salt)) for k in keys]
        if node.kind == "string":
            return rng.choice(["x", "yy", "", f"s{salt}"])
        if node.kind in ("float", "double"):
            return rng.randint(-100, 100) / 4  # exact in float32
        return rng.randint(-100, 100)

    def random_rows(self, rng: random.Random, columns, first_id: int, n: int):
        """Rows by id for the version `columns`; column "id" (the first) is the row number."""
        rows = []
        for i in range(n):
            row = {c.id: self.random_value(rng, c, first_id + i) for c in columns}
            row[columns[0].id] = first_id + i
            rows.append(row)
        return rows

    @staticmethod
    def render(node: F, value):
        """A stored value (by id) as pyarrow takes it, in `node`'s shape: fields by id."""
        if value is None:
            return None
        if node.kind == "struct":
            return {c.name: NestedModel.render(c, value.get(c.id)) for c in node.children}
        if node.kind == "list":
            return [NestedModel.render(node.children[0], v) for v in value]
        if node.kind == "map":
            return [(k, NestedModel.render(node.children[1], v)) for k, v in value]
        return value

    def normalized(self, columns=None) -> list[dict]:
        """expected(), with maps sorted as normalize() gives them."""
        columns = columns or self.columns
        return [{c.name: normalize(c, row[c.name]) for c in columns}
                for row in self.expected(columns)]

    def batch(self, rows, columns=None) -> pa.RecordBatch:
        columns = columns or self.columns
        return pa.RecordBatch.from_pylist(
            [{c.name: self.render(c, r.get(c.id)) for c in columns} for r in rows],
            schema=self.schema(columns))

    def expected(self, columns=None) -> list[dict]:
        """Every row as pyarrow's to_pylist gives it in the version `columns` (default current)."""
        columns = columns or self.columns
        return [{c.name: self.render(c, r.get(c.id)) for c in columns} for r in self.rows]


def normalize(node: F, value):
    """A value as a reader returned it, comparable with render(): maps as sorted (key, value)
    lists (some readers give maps as dicts)."""
    if value is None:
        return None
    if node.kind == "struct":
        return {c.name: normalize(c, value.get(c.name)) for c in node.children}
    if node.kind == "list":
        return [normalize(node.children[0], v) for v in value]
    if node.kind == "map":
        pairs = value.items() if isinstance(value, dict) else value
        return sorted((k, normalize(node.children[1], v)) for k, v in pairs)
    return value


def pyiceberg_view(node: F, value):
    """`value` (normalized) as pyiceberg 0.12 reads it: its Arrow projection rebuilds a list of
    structs and a map of struct values from their offsets alone (ListArray/MapArray.from_arrays
    without the validity, pyiceberg/io/pyarrow.py ArrowProjectionVisitor.list and .map), so a null
    one reads as empty."""
    if value is None:
        if (node.kind == "list" and node.children[0].kind == "struct") or (
                node.kind == "map" and node.children[1].kind == "struct"):
            return []
        return None
    if node.kind == "struct":
        return {c.name: pyiceberg_view(c, value[c.name]) for c in node.children}
    if node.kind == "list":
        return [pyiceberg_view(node.children[0], v) for v in value]
    if node.kind == "map":
        return [(k, pyiceberg_view(node.children[1], v)) for k, v in value]
    return value
