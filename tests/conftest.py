"""Registers tests/oxbowtest, the helpers every suite shares, as the one pytest plugin of the
suites under tests/ (its fixtures: tests/oxbowtest/fixtures.py)."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

pytest_plugins = ["oxbowtest.fixtures", "oxbowtest.zookeeper"]
