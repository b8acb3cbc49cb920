"""What a write takes in, as record batches of the table's types, and schemas as
create_table spells them."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from oxbow.errors import InvalidArgument

# A pyarrow Table, RecordBatch or RecordBatchReader; a mapping of column name to values; a
# pandas DataFrame; or any object with __arrow_c_stream__ (polars, DuckDB, ...).
Data = Any


def to_reader(data: Data) -> pa.RecordBatchReader:
    """The batches of `data`, as they are (a pa.Table's chunks, a DataFrame as one batch)."""
    if isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.RecordBatchReader.from_batches(data.schema, [data])
    if isinstance(data, Mapping):
        data = pa.table(dict(data))
    # pandas is never imported here: a DataFrame exists only if its caller imported pandas.
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(data, pandas.DataFrame):
        data = pa.Table.from_pandas(data, preserve_index=False)
    if isinstance(data, pa.Table):
        return pa.RecordBatchReader.from_batches(data.schema, data.to_batches())
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data)
    raise TypeError(f"cannot write a {type(data).__module__}.{type(data).__name__}: pass a "
                    "pyarrow Table, RecordBatch or RecordBatchReader, a dict of columns, a "
                    "pandas DataFrame or an object with __arrow_c_stream__ (e.g. polars)")


def conform(reader: pa.RecordBatchReader, table: pa.Schema,
            whole: bool) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The schema and batches to send for `reader` to a table of schema `table`: each column
    the table has is cast to the table's type (a cast that would lose data raises
    InvalidArgument naming the column); with `whole`, data holding exactly the table's
    columns in another order is put in the table's order. Anything else goes as it is, for
    the server to accept (an earlier schema version, a partial update) or refuse."""
    source = reader.schema
    names = source.names
    order = table.names if whole and sorted(names) == sorted(table.names) else names
    types = {f.name: f.type for f in table}
    fields = [source.field(n).with_type(types.get(n, source.field(n).type)) for n in order]
    target = pa.schema(fields)
    if [(f.name, f.type) for f in target] == [(f.name, f.type) for f in source]:
        return source, iter(reader)
    return target, _cast(reader, target, order != names)


def _cast(reader: pa.RecordBatchReader, target: pa.Schema,
          reorder: bool) -> Iterator[pa.RecordBatch]:
    for batch in reader:
        if reorder:
            batch = batch.select(target.names)
        columns = []
        for column, field in zip(batch.columns, target):
            if column.type != field.type:
                try:
                    column = column.cast(field.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise InvalidArgument(f"column '{field.name}' of type {column.type} does not "
                                          f"convert to the table's type {field.type}: {e}") from e
            columns.append(column)
        yield pa.RecordBatch.from_arrays(columns, schema=target)


def schema_json(schema: pa.Schema) -> dict:
    """create_table's "schema": each field's name, type as str(pyarrow_type) prints it,
    nullability and metadata (a "doc" entry is the column's doc)."""
    fields = []
    for f in schema:
        field: dict[str, Any] = {"name": f.name, "type": str(f.type), "nullable": f.nullable}
        if f.metadata:
            field["metadata"] = {k.decode(): v.decode() for k, v in f.metadata.items()}
        fields.append(field)
    return {"fields": fields}
