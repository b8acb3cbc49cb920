"""Apache Spark (pyspark 3.5 + the Iceberg Spark runtime) with a type=rest catalog over oxbowd:
SHOW, DESCRIBE and SELECT over Oxbow tables equal what was written; unknown names and writes
fail with the catalog's answers."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest

from oxbowtest import type_samples
from oxbowtest.lake import SYSTEM_COLUMNS, wait_lake, wide
from oxbowtest.rest_data import SCHEMA, batch, rest_catalog
from spark_session import register_catalog


def expected_rows(first: int, rows: int) -> list[tuple]:
    table = batch(first, rows).to_pydict()
    return list(zip(table["id"], table["name"], table["price"], table["day"]))


def test_spark_shows_describes_and_selects(spark, shop):
    catalog = register_catalog(spark, shop.catalog_port)
    assert [r[0] for r in spark.sql(f"SHOW NAMESPACES IN {catalog}").collect()] == ["shop", "zoo"]
    assert sorted(r.tableName for r in spark.sql(f"SHOW TABLES IN {catalog}.shop").collect()) == [
        "orders", "returns"]

    described = {}
    for row in spark.sql(f"DESCRIBE TABLE {catalog}.shop.orders").collect():
        if not row.col_name or row.col_name.startswith("#"):
            break  # the partitioning section follows the columns
        described[row.col_name] = row.data_type
    assert {name: described[name] for name in SCHEMA.names} == {
        "id": "bigint", "name": "string", "price": "double", "day": "date"}
    assert described["__offset"] == "bigint"

    rows = spark.sql(f"SELECT id, name, price, day FROM {catalog}.shop.orders ORDER BY id").collect()
    assert [tuple(r) for r in rows] == expected_rows(0, 150)
    assert isinstance(rows[0].day, datetime.date)
    filtered = spark.sql(f"SELECT count(*), sum(id) FROM {catalog}.shop.orders WHERE id >= 140")
    assert tuple(filtered.collect()[0]) == (10, sum(range(140, 150)))

    # Rows tiered after the first load appear on the next query's load.
    shop.put("shop.returns", [batch(5000, 3)])
    wait_lake(shop, "shop.returns")
    spark.sql(f"REFRESH TABLE {catalog}.shop.returns")
    rows = spark.sql(f"SELECT id, name, price, day FROM {catalog}.shop.returns ORDER BY id")
    assert [tuple(r) for r in rows.collect()] == expected_rows(1000, 5) + expected_rows(5000, 3)


def test_spark_unknown_names_and_writes_fail(spark, shop):
    catalog = register_catalog(spark, shop.catalog_port)
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM {catalog}.shop.nope").collect()
    with pytest.raises(Exception, match="lake.enabled is false|TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM {catalog}.zoo.animals").collect()
    with pytest.raises(Exception, match="Oxbow owns the writes of its tables"):
        spark.sql(f"CREATE TABLE {catalog}.shop.fresh (id bigint) USING iceberg")
    with pytest.raises(Exception, match="Oxbow owns the writes of its tables"):
        spark.sql(f"DROP TABLE {catalog}.shop.orders")
    assert sorted(r.tableName for r in spark.sql(f"SHOW TABLES IN {catalog}.shop").collect()) == [
        "orders", "returns"]


def comparable(column: pa.ChunkedArray) -> pa.Array:
    """The column in a form both readers agree on exactly: timestamps as their int64 microseconds
    (Spark's zone is UTC; years past 9999 have no Python form), floats as their bits (NaN equals
    NaN), fixed-size binary as binary (Spark has no fixed type)."""
    array = column.combine_chunks()
    if pa.types.is_timestamp(array.type):
        return array.cast(pa.timestamp("us", tz=array.type.tz)).view(pa.int64())
    if pa.types.is_float64(array.type):
        return array.view(pa.int64())
    if pa.types.is_float32(array.type):
        return array.view(pa.int32())
    if pa.types.is_fixed_size_binary(array.type):
        return array.cast(pa.binary())
    return array


def test_spark_reads_every_lake_type_as_pyiceberg_does(spark, lake_server):
    """The lake conformance suite's every-type table, loaded through the REST catalog by both
    clients: Spark's rows equal pyiceberg's, column by column, nulls and extremes included."""
    schema, values = wide()
    lake_server.create_table("types.every", schema, buckets=2)
    for one in type_samples.make_batches(schema, 3, 7, values):
        lake_server.put("types.every", [one])
    wait_lake(lake_server, "types.every")
    expected = rest_catalog(lake_server).load_table("types.every").scan().to_arrow().sort_by("id")
    assert expected.num_rows == 21
    catalog = register_catalog(spark, lake_server.catalog_port)
    got = pa.Table.from_batches(
        spark.sql(f"SELECT * FROM {catalog}.types.every ORDER BY id")._collect_as_arrow())
    assert got.column_names == schema.names + SYSTEM_COLUMNS
    for name in got.column_names:
        assert comparable(got[name]).equals(comparable(expected[name])), (
            name, got.schema.field(name).type, expected.schema.field(name).type)
