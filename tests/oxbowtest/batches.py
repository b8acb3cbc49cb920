"""Batch makers: rows keyed by a running id, every other column a function of the id."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

# The lake suites' plain table: id, a name and a double.
NAMED_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                          pa.field("v", pa.float64())])


def id_batch(schema: pa.Schema, first: int, rows: int, *columns: Callable) -> pa.RecordBatch:
    """Rows with ids first..first+rows-1 in `schema`'s first column; column k+1 holds
    columns[k](id)."""
    ids = list(range(first, first + rows))
    arrays = [pa.array([column(i) for i in ids], schema.field(k).type)
              for k, column in enumerate(columns, 1)]
    return pa.record_batch([pa.array(ids, schema.field(0).type), *arrays], schema=schema)


def named_batch(first: int, rows: int) -> pa.RecordBatch:
    """NAMED_SCHEMA rows: name n<id>, v id/4."""
    return id_batch(NAMED_SCHEMA, first, rows, lambda i: f"n{i}", lambda i: i / 4)
