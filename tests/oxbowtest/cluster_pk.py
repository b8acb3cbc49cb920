"""Primary-key tables on a cluster, shared by the tests that run one (tests/integration and
tests/s3): a table of (id, shop) -> qty and the Flight calls they make on it from any server."""

from __future__ import annotations

import json
import random
import threading
import time

import pyarrow as pa
import pyarrow.flight as fl

from oxbowtest.cluster import Cluster, wait_for
from oxbowtest.flight import action, schema_json

BUCKETS = 3
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False),
                    pa.field("shop", pa.string(), nullable=False),
                    pa.field("qty", pa.int64())])
KEY_SCHEMA = pa.schema([SCHEMA.field("id"), SCHEMA.field("shop")])


def create(c: Cluster, table: str, **body) -> dict:
    """Creates the table and waits until every bucket's leader serves."""
    created = action(c.client(c.live()[0]), "create_table", {
        "table": table, "schema": schema_json(SCHEMA), "primary_key": ["id", "shop"],
        "buckets": BUCKETS, "properties": {"replication.factor": "3", "min.insync.replicas": "2"},
        **body})
    for b in range(BUCKETS):
        c.leader_of(table, b)
    return created


def command(table: str, op: str, **extra) -> fl.FlightDescriptor:
    return fl.FlightDescriptor.for_command(json.dumps({"table": table, "op": op, **extra}))


def put(client: fl.FlightClient, table: str, op: str, batch: pa.RecordBatch) -> list[dict]:
    writer, acks = client.do_put(command(table, op), batch.schema)
    try:
        writer.write_batch(batch)
        ack = acks.read()
        if ack is None:
            raise ConnectionError("no ack")
        writer.done_writing()
    finally:
        writer.close()
    return json.loads(ack.to_pybytes())["offsets"]


def rows(ids, shops, qty=None) -> pa.RecordBatch:
    if qty is None:
        return pa.record_batch([pa.array(ids, pa.int64()), pa.array(shops)], schema=KEY_SCHEMA)
    return pa.record_batch([pa.array(ids, pa.int64()), pa.array(shops), pa.array(qty, pa.int64())],
                           schema=SCHEMA)


def lookup(client: fl.FlightClient, table: str, keys: pa.RecordBatch, **extra) -> list[dict]:
    writer, reader = client.do_exchange(command(table, "lookup", **extra))
    writer.begin(keys.schema)
    writer.write_batch(keys)
    found = reader.read_chunk().data
    writer.done_writing()
    writer.close()
    return found.to_pylist()


def do_get(client: fl.FlightClient, ticket: dict) -> pa.Table:
    return client.do_get(fl.Ticket(json.dumps(ticket).encode())).read_all()


def snapshot(client: fl.FlightClient, table: str) -> dict:
    return {(r["id"], r["shop"]): r["qty"]
            for r in do_get(client, {"table": table, "snapshot": True}).to_pylist()}


def bucket_rows(c: Cluster, server: int, table: str, bucket: int) -> list[dict]:
    """One bucket's current rows, as its leader `server` serves them."""
    ticket = {"table": table, "snapshot": True, "bucket": bucket}
    return do_get(c.client(server), ticket).to_pylist()


def lead_and_read(c: Cluster, table: str, bucket: int, server: int) -> list[dict]:
    """Makes `server` the bucket's leader (first in its replica list: the preferred leader) and
    returns the bucket's rows as it serves them."""
    state = c.bucket(table, bucket)
    action(c.client(state["leader"]), "reassign_bucket",
           {"table": table, "bucket": bucket,
            "replicas": [server] + [i for i in state["replicas"] if i != server]})
    wait_for(lambda: c.leader_of(table, bucket) == server, timeout=60,
             what=f"server {server} leading {table}[{bucket}]")
    return bucket_rows(c, server, table, bucket)


class ModelWriter(threading.Thread):
    """Upserts and deletes its own keys through any live server, retrying each batch until it is
    acknowledged (both are idempotent), and keeps the model of what its acknowledged writes
    left."""

    def __init__(self, c: Cluster, table: str, index: int, seed: int, round_: int):
        super().__init__(daemon=True)
        self.c, self.table, self.index, self.round = c, table, index, round_
        self.rng = random.Random(seed * 31 + round_ * 7 + index)
        self.keys = list(range(index * 1000, index * 1000 + 80))
        self.state: dict[int, int] = {}
        self.stop_event = threading.Event()
        self.batches = 0
        self.retries = 0
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            while not self.stop_event.is_set():
                ids = self.rng.sample(self.keys, self.rng.randint(1, 25))
                self.batches += 1
                value = self.index * 10**9 + self.round * 10**6 + self.batches
                op = "delete" if self.rng.random() < 0.25 else "upsert"
                batch = (rows(ids, ["k"] * len(ids)) if op == "delete"
                         else rows(ids, ["k"] * len(ids), [value] * len(ids)))
                deadline = time.monotonic() + 60
                while True:
                    server = self.rng.choice(self.c.live())
                    try:
                        put(self.c.client(server), self.table, op, batch)
                        break
                    except (pa.ArrowException, ConnectionError, OSError, AssertionError):
                        # AssertionError: the server was killed between live() and client().
                        self.retries += 1
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.05)
                for i in ids:
                    if op == "delete":
                        self.state.pop(i, None)
                    else:
                        self.state[i] = value
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.error = e

    def stop(self) -> None:
        self.stop_event.set()
        self.join(90)
        assert not self.is_alive(), f"writer {self.index} did not finish its batch"
        if self.error:
            raise self.error
