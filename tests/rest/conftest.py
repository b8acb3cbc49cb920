"""Fixtures of the REST catalog suite: oxbowd tiering into a warehouse in the test's tmp dir, with
its Iceberg REST catalog on a free port (server.catalog_port). The `spark` fixture (one Spark
session per pytest session) is tests/conftest.py's.

Reuses the harnesses and fixtures of tests/integration and tests/lake.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

_TESTS = pathlib.Path(__file__).resolve().parents[1]
for folder in (_TESTS / "integration", _TESTS / "lake", pathlib.Path(__file__).resolve().parent):
    sys.path.insert(0, str(folder))

# The integration conftest under a name of its own, so all suites can run in one session.
_spec = importlib.util.spec_from_file_location("oxbow_rest_integration_conftest",
                                               _TESTS / "integration" / "conftest.py")
_integration = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_integration)

from lake_harness import wait_lake  # noqa: E402
from rest_data import SCHEMA, batch  # noqa: E402

oxbowd_bin = _integration.oxbowd_bin
make_server = _integration.make_server


@pytest.fixture
def make_lake_server(make_server, tmp_path):
    """Factory: make_lake_server(*extra_args) -> oxbowd tiering every 100 ms into tmp/warehouse."""

    def make(*extra_args):
        return make_server(extra_args=("--warehouse", str(tmp_path / "warehouse"),
                                       "--lake-freshness-ms", "100", *extra_args))

    return make


@pytest.fixture
def lake_server(make_lake_server):
    return make_lake_server()


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
