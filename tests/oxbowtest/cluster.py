"""A cluster of real oxbowd processes on the `zookeeper` fixture (docs/cluster.md), and the
checker of the fault tests: every acknowledged row present exactly once, and nothing a reader
saw ever taken back."""

from __future__ import annotations

import json
import pathlib
import shutil
import signal
import threading
import time

import pyarrow as pa
import pyarrow.flight as fl

from oxbowtest.flight import action, descriptor
from oxbowtest.server import OxbowServer

SESSION_TIMEOUT_MS = 2000
ROW_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("writer", pa.string())])


def wait_for(condition, timeout: float = 30.0, interval: float = 0.05, what: str = ""):
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
            if value:
                return value
        except (pa.ArrowException, OSError, KeyError):
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or condition}")
        time.sleep(interval)


def not_leader(error: Exception) -> dict | None:
    """The not_leader JSON of an UNAVAILABLE answer (docs/api.md#a-cluster), or None."""
    text = str(error)
    start = text.find('{"')
    if start < 0:
        return None
    try:
        # raw_decode: pyarrow appends gRPC's debug context, braces and all, after the message.
        found, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError:
        return None
    return found if isinstance(found, dict) and found.get("error") == "not_leader" else None


class Cluster:
    """N oxbowd servers (ids 1..N) on one ZooKeeper chroot, each on its own data dir."""

    def __init__(self, binary: pathlib.Path, hosts: str, directory: pathlib.Path, size: int = 3,
                 extra_args: tuple[str, ...] = (), catalog: bool = False):
        """`catalog`: each server serves the Iceberg REST catalog (on its catalog_port)."""
        self.hosts = hosts
        self.directory = directory
        self.servers: dict[int, OxbowServer] = {}
        for i in range(1, size + 1):
            no_catalog = () if catalog else ("--catalog-listen", "")
            args = ("--zookeeper", hosts, "--server-id", str(i),
                    "--zookeeper-session-timeout-ms", str(SESSION_TIMEOUT_MS),
                    "--replica-lag-time-max-ms", "2000", "--replica-fetch-wait-ms", "200",
                    "--ack-timeout-ms", "10000", *no_catalog, *extra_args)
            self.servers[i] = OxbowServer(binary, directory / f"server{i}",
                                          directory / f"server{i}.log", args, stable_ports=True)
        self.paused: set[int] = set()

    def start(self) -> "Cluster":
        for server in self.servers.values():
            server.start()
        return self

    def stop(self) -> None:
        for i, server in self.servers.items():
            if i in self.paused:
                self.resume(i)
            if server.proc is not None:
                server.kill()

    def live(self) -> list[int]:
        return [i for i, s in self.servers.items() if s.proc is not None and i not in self.paused]

    def client(self, i: int) -> fl.FlightClient:
        return self.servers[i].client

    def kill(self, i: int) -> None:
        self.servers[i].kill()

    def restart(self, i: int) -> None:
        self.servers[i].start()

    def pause(self, i: int) -> None:
        self.servers[i].proc.send_signal(signal.SIGSTOP)
        self.paused.add(i)

    def resume(self, i: int) -> None:
        self.servers[i].proc.send_signal(signal.SIGCONT)
        self.paused.discard(i)

    def wipe(self, i: int) -> None:
        """SIGKILL, delete its data dir, start again: a server whose disk was replaced."""
        self.kill(i)
        shutil.rmtree(self.servers[i].data_dir)
        self.restart(i)

    def status(self, i: int | None = None) -> dict:
        for j in ([i] if i else self.live()):
            try:
                return action(self.client(j), "cluster_status")
            except (pa.ArrowException, OSError):
                if i:
                    raise
        raise AssertionError("no live server answers cluster_status")

    def bucket(self, table: str, bucket: int, i: int | None = None) -> dict:
        for b in self.status(i)["buckets"]:
            if b["table"] == table and b["bucket"] == bucket:
                return b
        raise KeyError((table, bucket))

    def leader_of(self, table: str, bucket: int = 0) -> int:
        """The bucket's leader once it serves as one (wait for an election first)."""
        def serving():
            leader = self.bucket(table, bucket)["leader"]
            if leader in self.live() and self.bucket(table, bucket, leader)["role"] == "leader":
                return leader
            return None
        return wait_for(serving, what=f"a serving leader of {table}[{bucket}]")

    def create_table(self, table: str, buckets: int = 1, **properties: str) -> dict:
        body = {"table": table, "schema": {"fields": [
                    {"name": "id", "type": "int64", "nullable": False},
                    {"name": "writer", "type": "string", "nullable": True}]},
                "buckets": buckets,
                "properties": {"replication.factor": "3", "min.insync.replicas": "2",
                               **properties}}
        return action(self.client(self.live()[0]), "create_table", body)

    def wait_in_sync(self, table: str, bucket: int = 0, timeout: float = 60.0) -> dict:
        """Waits until every replica is in the ISR and has the leader's whole log."""
        def synced():
            leader = self.leader_of(table, bucket)
            state = self.bucket(table, bucket, leader)
            if sorted(state["isr"]) != sorted(state["replicas"]):
                return None
            if state["high_watermark"] != state["log_end"]:
                return None
            for i in state["replicas"]:
                if self.bucket(table, bucket, i)["log_end"] != state["log_end"]:
                    return None
            return state
        return wait_for(synced, timeout, what=f"{table}[{bucket}] fully in sync")

    def read_bucket(self, table: str, bucket: int = 0, column: str = "id") -> list[tuple]:
        """(offset, value of `column`) of every row of the bucket once it is fully in sync, read
        from its leader. A leader elected a moment ago shows only what it knows to be
        replicated (its high watermark catches up at its followers' next fetch), so the read is
        repeated until it returns the whole synced log."""
        last = {}

        def whole():
            state = self.wait_in_sync(table, bucket)
            rows = self._read_leader(table, bucket, column)
            last.update(rows=len(rows), synced_log_end=state["log_end"], leader=state["leader"])
            return (rows,) if len(rows) == state["log_end"] else None  # (rows,): [] is done too
        try:
            return wait_for(whole, 60, what=f"every row of {table}[{bucket}] on its leader")[0]
        except AssertionError as e:
            raise AssertionError(f"{e}; the last read: {last}") from None

    def _read_leader(self, table: str, bucket: int, column: str) -> list[tuple]:
        leader = self.leader_of(table, bucket)
        ticket = fl.Ticket(json.dumps({"table": table, "bucket": bucket}).encode())
        rows = []
        for chunk in self.client(leader).do_get(ticket):
            meta = json.loads(chunk.app_metadata.to_pybytes())
            ids = chunk.data.column(column).to_pylist()
            rows += [(meta["base_offset"] + k, v) for k, v in enumerate(ids)]
        return rows


class Writer(threading.Thread):
    """Puts batches of rows with ids never used before into one bucket's leader, following
    not_leader answers, and records which ids were acknowledged and when."""

    def __init__(self, cluster: Cluster, table: str, name: str, rows_per_batch: int = 20,
                 pause_s: float = 0.005, first_id: int = 0):
        super().__init__(daemon=True)
        self.cluster = cluster
        self.table = table
        self.name_ = name
        self.rows_per_batch = rows_per_batch
        self.pause_s = pause_s
        self.next_id = first_id
        self.acked: list[int] = []
        self.acks: list[tuple[float, int]] = []  # (monotonic time, server) of each ack
        self.errors = 0
        self.stop_event = threading.Event()
        self.target: int | None = None

    def run(self) -> None:
        while not self.stop_event.is_set():
            if self.target is None or self.target not in self.cluster.live():
                live = self.cluster.live()
                if not live:
                    time.sleep(0.1)
                    continue
                self.target = live[self.next_id % len(live)]
            ids = list(range(self.next_id, self.next_id + self.rows_per_batch))
            self.next_id += self.rows_per_batch  # an id is used once, acknowledged or not
            batch = pa.record_batch([pa.array(ids, pa.int64()),
                                     pa.array([self.name_] * len(ids))], schema=ROW_SCHEMA)
            try:
                client = fl.connect(f"grpc://127.0.0.1:{self.cluster.servers[self.target].port}")
                writer, acks = client.do_put(descriptor(self.table), ROW_SCHEMA,
                                             options=fl.FlightCallOptions(timeout=15))
                writer.write_batch(batch)
                reply = acks.read()
                writer.done_writing()
                writer.close()
                client.close()
                if reply is not None:
                    self.acked += ids
                    self.acks.append((time.monotonic(), self.target))
            except (pa.ArrowException, OSError) as e:
                self.errors += 1
                leader = not_leader(e)
                found = None
                if leader and leader.get("leader", -1) > 0:
                    found = leader["leader"]
                self.target = found if found in self.cluster.live() else None
                time.sleep(0.05)
            time.sleep(self.pause_s)

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=60)


class TailReader(threading.Thread):
    """Follows one bucket from offset 0 on its leader, moving to the new leader after a failover,
    and records every (offset, id) it was served."""

    def __init__(self, cluster: Cluster, table: str, bucket: int = 0):
        super().__init__(daemon=True)
        self.cluster = cluster
        self.table = table
        self.bucket = bucket
        self.seen: dict[int, int] = {}
        self.next = 0
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                leader = self.cluster.bucket(self.table, self.bucket)["leader"]
                if leader not in self.cluster.live():
                    time.sleep(0.1)
                    continue
                client = fl.connect(f"grpc://127.0.0.1:{self.cluster.servers[leader].port}")
                ticket = {"table": self.table, "bucket": self.bucket, "from": self.next,
                          "follow": True}
                reader = client.do_get(fl.Ticket(json.dumps(ticket).encode()),
                                       options=fl.FlightCallOptions(timeout=3))
                for chunk in reader:
                    meta = json.loads(chunk.app_metadata.to_pybytes())
                    for k, value in enumerate(chunk.data.column("id").to_pylist()):
                        self.seen[meta["base_offset"] + k] = value
                    self.next = meta["next_offset"]
                    if self.stop_event.is_set():
                        break
            except (pa.ArrowException, OSError, AssertionError):
                time.sleep(0.1)

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=30)


def check_acknowledged(rows: list[tuple[int, int]], writers: list[Writer]) -> None:
    """Offsets contiguous from 0, no id twice, every acknowledged id present."""
    offsets = [o for o, _ in rows]
    assert offsets == list(range(len(rows))), "offsets are not contiguous"
    ids = [(w_id) for _, w_id in rows]
    assert len(ids) == len(set(ids)), f"{len(ids) - len(set(ids))} rows appear twice"
    present = set(ids)
    for w in writers:
        lost = [i for i in w.acked if i not in present]
        assert not lost, f"{len(lost)} acknowledged rows of {w.name_} lost, e.g. {lost[:5]}"
