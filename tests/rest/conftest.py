"""Fixtures of the REST catalog suite. Its servers are tests/oxbowtest's `lake_server` and
`make_lake_server` (oxbowd tiering into tmp/warehouse, with its Iceberg REST catalog on a free
port: server.catalog_port), its Spark session tests/oxbowtest's `spark`."""

from __future__ import annotations

import pytest

from oxbowtest.lake import wait_lake
from oxbowtest.rest_data import SCHEMA, batch


@pytest.fixture
def shop(lake_server):
    """shop.orders (3 buckets) and shop.returns in the lake; zoo.animals and the primary-key
    table shop.carts out of it."""
    lake_server.create_table("shop.orders", SCHEMA, buckets=3, bucket_key=["id"])
    lake_server.create_table("shop.returns", SCHEMA)
    lake_server.create_table("shop.carts", SCHEMA, primary_key=["id"])
    lake_server.create_table("zoo.animals", SCHEMA, properties={"lake.enabled": "false"})
    lake_server.put("shop.orders", [batch(0, 100), batch(100, 50)])
    lake_server.put("shop.returns", [batch(1000, 5)])
    wait_lake(lake_server, "shop.orders")
    wait_lake(lake_server, "shop.returns")
    return lake_server
