"""The rows the REST catalog suite writes through Flight and expects back from pyiceberg and Spark."""

from __future__ import annotations

import pyarrow as pa
from pyiceberg.catalog import load_catalog

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                    pa.field("price", pa.float64()), pa.field("day", pa.date32())])


def batch(first: int, rows: int) -> pa.RecordBatch:
    ids = list(range(first, first + rows))
    return pa.record_batch(
        [pa.array(ids, pa.int64()), pa.array([f"item-{i}" if i % 7 else None for i in ids]),
         pa.array([i * 1.25 for i in ids]), pa.array([19_000 + i % 30 for i in ids], pa.date32())],
        schema=SCHEMA)


def written(*batches: pa.RecordBatch) -> pa.Table:
    return pa.Table.from_batches(batches).sort_by("id")


def rest_catalog(server, **properties):
    return load_catalog("oxbow", type="rest", uri=f"http://127.0.0.1:{server.catalog_port}",
                        **properties)


def user_columns(table: pa.Table) -> pa.Table:
    return table.select(SCHEMA.names).sort_by("id")
