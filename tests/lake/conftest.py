"""Fixtures of the lake suite: oxbowd with a warehouse in the test's tmp dir.

Reuses tests/integration (its harness, fixtures and the `crash` marker) without changing it.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

_INTEGRATION = pathlib.Path(__file__).resolve().parents[1] / "integration"
sys.path.insert(0, str(_INTEGRATION))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

# The integration conftest under a name of its own, so both suites can run in one session.
_spec = importlib.util.spec_from_file_location("oxbow_integration_conftest",
                                               _INTEGRATION / "conftest.py")
_integration = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_integration)

pytest_configure = _integration.pytest_configure  # registers the `crash` marker
oxbowd_bin = _integration.oxbowd_bin
make_server = _integration.make_server
table_name = _integration.table_name


@pytest.fixture
def warehouse(tmp_path) -> pathlib.Path:
    return tmp_path / "warehouse"


@pytest.fixture
def make_lake_server(make_server, warehouse):
    """Factory: make_lake_server(*extra_args, data_dir=None) -> oxbowd tiering into `warehouse`
    (default freshness 100 ms, so tests wait little)."""

    def make(*extra_args, data_dir=None, freshness_ms=100):
        args = ("--warehouse", str(warehouse), "--lake-freshness-ms", str(freshness_ms),
                *extra_args)
        return make_server(extra_args=args, data_dir=data_dir)

    return make


@pytest.fixture
def lake_server(make_lake_server):
    return make_lake_server()
