"""A real ZooKeeper for the cluster tests: one server per pytest run (scripts/zookeeper.sh, on a
free loopback port), each test in its own chroot; kill() and start() restart it in place."""

from __future__ import annotations

import itertools
import pathlib
import subprocess

import pytest

from oxbowtest.server import REPO_ROOT, free_port

SCRIPT = REPO_ROOT / "scripts" / "zookeeper.sh"


class ZooKeeper:
    def __init__(self, directory: pathlib.Path):
        self.directory = directory
        self.port = free_port()
        self.hosts = f"127.0.0.1:{self.port}"
        self._chroots = itertools.count(1)

    def start(self) -> None:
        run = subprocess.run([str(SCRIPT), "start", str(self.port), str(self.directory)],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, f"ZooKeeper did not start:\n{run.stdout}{run.stderr}"

    def kill(self) -> None:
        """SIGKILL, as a crash: its data dir stays, so start() brings the same state back."""
        subprocess.run([str(SCRIPT), "stop", str(self.directory)], check=True, timeout=30)

    def chroot(self, name: str) -> str:
        """hosts with a chroot of its own: one test's namespace."""
        return f"{self.hosts}/{name}-{next(self._chroots)}"


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory) -> ZooKeeper:
    server = ZooKeeper(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    yield server
    server.kill()
