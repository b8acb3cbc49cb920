"""The lake on a cluster (docs/cluster.md#the-lake, issue 37 item 3): three real oxbowd processes
on a real ZooKeeper, sharing one warehouse. The leader of bucket 0 tiers the table and swaps its
lake pointer in ZooKeeper; SIGKILLs and pauses of that owner under writers neither lose nor
repeat a row in Iceberg; every server's REST catalog and union read answer, and pyiceberg, DuckDB
and Spark read what they name.

OXBOW_CLUSTER_LAKE_FAULTS sets how many faults the owner suffers (default 4: kills and pauses in
turn)."""

from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.cluster import SESSION_TIMEOUT_MS, Cluster, Writer, wait_for
from oxbowtest.cluster_pk import BUCKETS as PK_BUCKETS
from oxbowtest.cluster_pk import ModelWriter, create, do_get, snapshot
from oxbowtest.flight import action
from oxbowtest.lake import assert_unique_offsets, lake_rows
from oxbowtest.readers import duckdb_rows
from oxbowtest.rest_data import rest_catalog
from spark_session import register_catalog

FAULTS = int(os.environ.get("OXBOW_CLUSTER_LAKE_FAULTS", "4"))
TABLE = "lk.events"
BUCKETS = 3


@pytest.fixture
def cluster(oxbowd_bin, zookeeper, tmp_path, request):
    c = Cluster(oxbowd_bin, zookeeper.chroot(request.node.name[:40]), tmp_path, catalog=True,
                extra_args=("--warehouse", str(tmp_path / "warehouse"),
                            "--lake-freshness-ms", "200")).start()
    yield c
    c.stop()


def lake_of(c: Cluster, server: int, table: str = TABLE) -> dict:
    return action(c.client(server), "describe_table", {"table": table})["lake"]


def new_owner(c: Cluster, old: int) -> int:
    def elected():
        leader = c.leader_of(TABLE, 0)
        return leader if leader != old else None
    return wait_for(elected, 30, what=f"a leader of {TABLE}[0] other than server {old}")


def committed_since(c: Cluster, server: int, location: str) -> str:
    """Waits until `server` (the owner) committed a snapshot after `location`."""
    def moved():
        now = lake_of(c, server)["metadata_location"]
        return now if now and now != location else None
    return wait_for(moved, 30, what=f"a commit by server {server}")


def test_one_owner_tiers_exactly_once_across_its_kills_and_pauses(cluster, spark_or_none):
    cluster.create_table(TABLE, buckets=BUCKETS, **{"lake.enabled": "true"})
    writers = [Writer(cluster, TABLE, f"w{i}", first_id=i * 10_000_000) for i in range(2)]
    for w in writers:
        w.start()
    location = ""
    for fault in range(FAULTS):
        owner = cluster.leader_of(TABLE, 0)
        location = committed_since(cluster, owner, location)
        started = time.monotonic()
        if fault % 2 == 0:
            # Rounds start every 50 ms and commit a few times a second: a kill lands in one.
            cluster.kill(owner)
            successor = new_owner(cluster, owner)
            location = committed_since(cluster, successor, location)
            cluster.restart(owner)
        else:
            # Stopped past its session: a new owner commits while the old one is mid-round;
            # once it runs again, its commit must be refused.
            cluster.pause(owner)
            successor = new_owner(cluster, owner)
            location = committed_since(cluster, successor, location)
            cluster.resume(owner)
        print(f"fault {fault}: server {successor} committed {time.monotonic() - started:.2f} s "
              f"after server {owner} was {'killed' if fault % 2 == 0 else 'paused'}")
        time.sleep(SESSION_TIMEOUT_MS / 1000)
    for w in writers:
        w.stop()
    assert sum(len(w.acked) for w in writers) > 0

    # Every bucket settles, and the lake catches up with it.
    log = {b: cluster.read_bucket(TABLE, b) for b in range(BUCKETS)}
    ends = [len(log[b]) for b in range(BUCKETS)]

    def caught_up(server):
        lake = lake_of(cluster, server)
        return lake if lake["tiered_offsets"] == ends and not lake.get("error") else None
    owner = cluster.leader_of(TABLE, 0)
    try:
        lake = wait_for(lambda: caught_up(owner), 60, what=f"the lake at the log's ends {ends}")
    except AssertionError as e:
        raise AssertionError(f"{e}; server {owner} describes {lake_of(cluster, owner)}") from None

    # The lake is the table: each (bucket, offset) once, with the log's row.
    rows = lake_rows(lake["metadata_location"])
    assert_unique_offsets(rows)
    in_lake = set(zip(rows["__bucket"].to_pylist(), rows["__offset"].to_pylist(),
                      rows["id"].to_pylist()))
    in_log = {(b, offset, i) for b in range(BUCKETS) for offset, i in log[b]}
    assert in_lake == in_log, (len(in_lake - in_log), len(in_log - in_lake))
    ids = [i for _, _, i in in_log]
    assert len(ids) == len(set(ids)), "a row was written twice"
    present = set(ids)
    for w in writers:
        lost = [i for i in w.acked if i not in present]
        assert not lost, f"{len(lost)} acknowledged rows of {w.name_} lost, e.g. {lost[:5]}"

    # Every server follows the same lake, its union read is the table, and its REST catalog
    # names the same metadata.
    expected_ids = sorted(ids)
    for server in cluster.live():
        followed = wait_for(lambda: caught_up(server), 30, what=f"server {server} following")
        assert followed["metadata_location"] == lake["metadata_location"]
        ticket = fl.Ticket(json.dumps({"table": TABLE, "union": True}).encode())
        union = cluster.client(server).do_get(ticket).read_all()
        assert sorted(union["id"].to_pylist()) == expected_ids
        loaded = rest_catalog(cluster.servers[server]).load_table(TABLE)
        assert loaded.metadata_location == lake["metadata_location"]
        assert sorted(loaded.scan().to_arrow()["id"].to_pylist()) == expected_ids
    assert sorted(duckdb_rows(lake["metadata_location"])["id"].to_pylist()) == expected_ids
    if spark_or_none is not None:
        catalog = register_catalog(spark_or_none, cluster.servers[cluster.live()[-1]].catalog_port)
        counted = spark_or_none.sql(f"SELECT count(*), sum(id) FROM {catalog}.{TABLE}").collect()
        assert tuple(counted[0]) == (len(expected_ids), sum(expected_ids))


def test_alter_table_reaches_the_lake_through_every_server(cluster):
    cluster.create_table(TABLE, buckets=BUCKETS, **{"lake.enabled": "true"})
    writer = Writer(cluster, TABLE, "before", first_id=0)
    writer.start()
    time.sleep(1.0)
    writer.stop()
    owner = cluster.leader_of(TABLE, 0)
    other = owner % 3 + 1
    action(cluster.client(other), "alter_table", {
        "table": TABLE, "changes": [{"op": "add_column", "name": "note", "type": "string"}]})
    batch = pa.record_batch([pa.array([-1, -2], pa.int64()), pa.array(["after", "after"]),
                             pa.array(["n1", "n2"])], names=["id", "writer", "note"])
    client = cluster.client(owner)
    put, acks = client.do_put(fl.FlightDescriptor.for_path(TABLE), batch.schema)
    put.write_batch(batch)
    put.done_writing()
    acks.read()
    put.close()
    total = len(writer.acked) + 2

    def tiered():
        lake = lake_of(cluster, owner)
        if not lake["metadata_location"]:
            return None
        rows = lake_rows(lake["metadata_location"])
        return rows if rows.num_rows == total and "note" in rows.column_names else None
    rows = wait_for(tiered, 60, what="the new column and both rows in the lake")
    notes = dict(zip(rows["id"].to_pylist(), rows["note"].to_pylist()))
    assert notes[-1] == "n1" and notes[-2] == "n2"
    assert all(notes[i] is None for i in writer.acked)


def test_a_primary_key_lake_and_its_changelog_survive_owner_kills(cluster):
    table = "pk.lake"
    create(cluster, table, properties={"replication.factor": "3", "min.insync.replicas": "2",
                                       "lake.enabled": "true", "lake.changelog": "true"})
    writers: list[ModelWriter] = []
    for round_ in range(2):
        fresh = [ModelWriter(cluster, table, i, 11, round_) for i in range(2)]
        for old, new in zip(writers, fresh):
            new.state = old.state
        writers = fresh
        for w in writers:
            w.start()
        time.sleep(1.0)
        owner = cluster.leader_of(table, 0)
        cluster.kill(owner)  # the owner of the lake and of bucket 0's changelog
        time.sleep(1.0)
        for w in writers:
            w.stop()
        cluster.restart(owner)
    model = {(i, "k"): v for w in writers for i, v in w.state.items()}
    ends = [cluster.wait_in_sync(table, b)["log_end"] for b in range(PK_BUCKETS)]

    def caught_up(server):
        lake = lake_of(cluster, server, table)
        done = (lake["tiered_offsets"] == ends and lake["changelog"]["tiered_offsets"] == ends
                and not lake.get("error"))
        return lake if done else None
    owner = cluster.leader_of(table, 0)
    lake = wait_for(lambda: caught_up(owner), 60, what=f"the lake at the changelog's ends {ends}")

    # The lake (position deletes applied) holds the acknowledged rows; the changelog lake table
    # holds every changelog record once, as the log has it.
    current = lake_rows(lake["metadata_location"]).to_pylist()
    assert {(r["id"], r["shop"]): r["qty"] for r in current} == model
    assert len(current) == len(model)
    changes = lake_rows(lake["changelog"]["metadata_location"])
    assert_unique_offsets(changes)
    for b in range(PK_BUCKETS):
        leader = cluster.leader_of(table, b)
        log = do_get(cluster.client(leader), {"table": table, "bucket": b}).to_pylist()
        mine = [r for r in changes.to_pylist() if r["__bucket"] == b]
        assert [(r["__offset"], r["id"], r["_change_type"]) for r in mine] == [
            (o, r["id"], r["_change_type"]) for o, r in enumerate(log)], f"bucket {b}"
    for server in cluster.live():
        followed = wait_for(lambda: caught_up(server), 30, what=f"server {server} following")
        assert followed["metadata_location"] == lake["metadata_location"]
        assert snapshot(cluster.client(server), table) == model
        ticket = fl.Ticket(json.dumps({"table": table, "union": True}).encode())
        union = cluster.client(server).do_get(ticket).read_all().to_pylist()
        assert {(r["id"], r["shop"]): r["qty"] for r in union} == model
        loaded = rest_catalog(cluster.servers[server]).load_table(table)
        scanned = loaded.scan().to_arrow().to_pylist()
        assert {(r["id"], r["shop"]): r["qty"] for r in scanned} == model


def test_an_owner_reads_the_buckets_it_lacks_on_their_leaders_and_moves_with_bucket_0(cluster):
    # One replica per bucket: the owner holds bucket 0 only and reads the others remotely.
    cluster.create_table(TABLE, buckets=BUCKETS, **{
        "lake.enabled": "true", "replication.factor": "1", "min.insync.replicas": "1"})
    owner, *_ = [cluster.leader_of(TABLE, b) for b in range(BUCKETS)]  # each leader serves
    # A writer sticks to one server, and a server puts into the bucket it leads: one per server
    # (first ids 0, 2 and 1 mod 3 pick the servers in turn).
    writers = [Writer(cluster, TABLE, f"w{k}", first_id=k * 10_000_001) for k in range(3)]
    for w in writers:
        w.start()
    wait_for(lambda: all(o > 0 for o in lake_of(cluster, owner)["tiered_offsets"][1:]), 30,
             what=f"rows of the buckets server {owner} does not hold in its lake")
    # Moving bucket 0 under load moves the tiering with it.
    target = owner % 3 + 1
    action(cluster.client(owner), "reassign_bucket",
           {"table": TABLE, "bucket": 0, "replicas": [target]})
    wait_for(lambda: cluster.leader_of(TABLE, 0) == target, 60, what=f"server {target} leading")
    location = committed_since(cluster, target, "")
    committed_since(cluster, target, location)
    for w in writers:
        w.stop()
    log = {b: cluster.read_bucket(TABLE, b) for b in range(BUCKETS)}
    ends = [len(log[b]) for b in range(BUCKETS)]
    lake = wait_for(lambda: (lambda l: l if l["tiered_offsets"] == ends else None)(
        lake_of(cluster, target)), 60, what=f"the lake at the log's ends {ends}")
    rows = lake_rows(lake["metadata_location"])
    assert_unique_offsets(rows)
    in_lake = set(zip(rows["__bucket"].to_pylist(), rows["__offset"].to_pylist(),
                      rows["id"].to_pylist()))
    assert in_lake == {(b, offset, i) for b in range(BUCKETS) for offset, i in log[b]}
    assert {i for w in writers for i in w.acked} <= {i for _, _, i in in_lake}
    # A union read needs every bucket's log on the server that serves it.
    with pytest.raises(fl.FlightUnavailableError, match="needs a replica of every bucket"):
        ticket = fl.Ticket(json.dumps({"table": TABLE, "union": True}).encode())
        cluster.client(target).do_get(ticket).read_all()
