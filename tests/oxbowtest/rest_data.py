"""The rows the REST catalog suite writes through Flight and expects back from pyiceberg and Spark."""

from __future__ import annotations

import pyarrow as pa
from pyiceberg.catalog import load_catalog

from oxbowtest.batches import id_batch

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                    pa.field("price", pa.float64()), pa.field("day", pa.date32())])


def batch(first: int, rows: int) -> pa.RecordBatch:
    return id_batch(SCHEMA, first, rows, lambda i: f"item-{i}" if i % 7 else None,
                    lambda i: i * 1.25, lambda i: 19_000 + i % 30)


def written(*batches: pa.RecordBatch) -> pa.Table:
    return pa.Table.from_batches(batches).sort_by("id")


def rest_catalog(server, **properties):
    return load_catalog("oxbow", type="rest", uri=f"http://127.0.0.1:{server.catalog_port}",
                        **properties)


def user_columns(table: pa.Table) -> pa.Table:
    return table.select(SCHEMA.names).sort_by("id")
