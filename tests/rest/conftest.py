"""Fixtures of the REST catalog suite: oxbowd tiering into a warehouse in the test's tmp dir, with
its Iceberg REST catalog on a free port (server.catalog_port), and one Spark session per pytest
session (spark_session.py).

Reuses tests/integration and tests/lake (their harnesses and fixtures) without changing them.
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
