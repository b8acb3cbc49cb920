"""Primary-key tables on a cluster (docs/cluster.md#primary-key-tables, issue 37 item 1): three
real oxbowd processes on a real ZooKeeper. Any server takes puts, lookups and snapshots and
routes each bucket's share to its leader; followers keep their rows warm from the replicated
changelog; leader kills under upserts and deletes lose no acknowledged change, checked against a
model of the acknowledged writes.

OXBOW_CLUSTER_PK_KILLS sets how many leaders the kill loop SIGKILLs (default 6)."""

from __future__ import annotations

import os
import random
import re
import time

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.cluster import Cluster, not_leader, wait_for
from oxbowtest.cluster_pk import (BUCKETS, ModelWriter, bucket_rows, create, do_get,
                                  lead_and_read, lookup, put, rows, snapshot)
from oxbowtest.flight import action

KILLS = int(os.environ.get("OXBOW_CLUSTER_PK_KILLS", "6"))


@pytest.fixture
def cluster(oxbowd_bin, zookeeper, tmp_path, request):
    c = Cluster(oxbowd_bin, zookeeper.chroot(request.node.name[:40]), tmp_path).start()
    yield c
    c.stop()


def test_any_server_routes_puts_lookups_and_snapshots_to_the_leaders(cluster):
    create(cluster, "pk.stock")
    ids = list(range(300))
    shops = [f"s{i % 7}" for i in ids]
    # Server 1 takes every row and routes each bucket's share to its leader.
    acked = put(cluster.client(1), "pk.stock", "upsert", rows(ids, shops, [i * 10 for i in ids]))
    assert sorted(o["bucket"] for o in acked) == [0, 1, 2]
    assert sum(o["rows"] for o in acked) == 300
    leaders = {cluster.leader_of("pk.stock", b) for b in range(BUCKETS)}
    assert len(leaders) > 1, "the buckets should be led by several servers"
    expected = {(i, s): i * 10 for i, s in zip(ids, shops)}
    # Every server answers lookups in the order of the keys, a missing key absent.
    wanted = [299, 5, 1000, 17, 0]
    for i in (1, 2, 3):
        found = lookup(cluster.client(i), "pk.stock",
                       rows(wanted, [f"s{k % 7}" for k in wanted]), columns=["id", "qty"])
        assert found == [{"id": k, "qty": k * 10} for k in wanted if k != 1000]
        ticket = {"table": "pk.stock", "lookup": {"id": [17, 5], "shop": ["s3", "s5"]}}
        assert do_get(cluster.client(i), ticket).to_pylist() == [
            {"id": 17, "shop": "s3", "qty": 170}, {"id": 5, "shop": "s5", "qty": 50}]
        assert snapshot(cluster.client(i), "pk.stock") == expected
    # Deletes and updates through another server.
    put(cluster.client(2), "pk.stock", "delete", rows(ids[:100], shops[:100]))
    put(cluster.client(3), "pk.stock", "upsert", rows(ids[100:150], shops[100:150], [-1] * 50))
    for i in ids[:100]:
        del expected[(i, shops[i])]
    for i in ids[100:150]:
        expected[(i, shops[i])] = -1
    for i in (1, 2, 3):
        assert snapshot(cluster.client(i), "pk.stock") == expected
    # Replicas' rows follow what they saw committed: an unclean election could take it back.
    with pytest.raises(pa.ArrowInvalid, match="unclean.leader.election=true is refused"):
        create(cluster, "pk.unclean", properties={"unclean.leader.election": "true"})
    with pytest.raises(pa.ArrowInvalid, match="unclean.leader.election=true is refused"):
        action(cluster.client(1), "alter_table", {"table": "pk.stock", "changes": [
            {"op": "set_properties", "properties": {"unclean.leader.election": "true"}}]})
    # The cold log is refused: the replicas of a bucket would share its place in the warehouse.
    with pytest.raises(pa.ArrowNotImplementedError, match="log.local.retention"):
        create(cluster, "pk.cold", properties={"log.local.retention": "1h"})
    # One bucket's snapshot is its leader's to serve; the others name it.
    leader = cluster.leader_of("pk.stock", 0)
    other = leader % 3 + 1
    with pytest.raises(fl.FlightUnavailableError) as e:
        do_get(cluster.client(other), {"table": "pk.stock", "snapshot": True, "bucket": 0})
    assert not_leader(e.value)["leader"] == leader
    # The changelog replicates like a log: every replica holds the same records.
    for b in range(BUCKETS):
        state = cluster.wait_in_sync("pk.stock", b)
        assert state["log_end"] > 0


def test_a_new_leader_serves_at_once_from_warm_rows(cluster):
    create(cluster, "pk.warm")
    ids = list(range(2000))
    shops = ["x"] * len(ids)
    for start in range(0, len(ids), 200):
        put(cluster.client(1), "pk.warm", "upsert",
            rows(ids[start:start + 200], shops[start:start + 200], ids[start:start + 200]))
    for b in range(BUCKETS):
        cluster.wait_in_sync("pk.warm", b)
    old = cluster.leader_of("pk.warm", 0)
    cluster.kill(old)
    new = wait_for(lambda: (lambda l: l if l != old else None)(cluster.leader_of("pk.warm", 0)),
                   what="a new leader of pk.warm[0]")
    survivor = new
    assert snapshot(cluster.client(survivor), "pk.warm") == {(i, "x"): i for i in ids}
    # The followers applied the changelog as they fetched it, up to the high watermark they
    # knew: the new leader replays at most the last put's share (a follower learns the final
    # high watermark one fetch later), not the bucket's ~670 rows.
    log = cluster.servers[new].log_path.read_text()
    replayed = re.search(r"pk\.warm' bucket 0: leading; (\d+) changelog records replayed", log)
    assert replayed is None or int(replayed.group(1)) <= 200, log
    cluster.restart(old)
    for b in range(BUCKETS):
        cluster.wait_in_sync("pk.warm", b)


def check_against_model(c: Cluster, table: str, writers: list[ModelWriter]) -> None:
    model = {(i, "k"): v for w in writers for i, v in w.state.items()}
    for b in range(BUCKETS):
        c.wait_in_sync(table, b)
    for server in c.live():
        assert snapshot(c.client(server), table) == model, f"server {server}'s snapshot"
    keys = sorted(model)
    found = lookup(c.client(c.live()[0]), table, rows([k[0] for k in keys], ["k"] * len(keys)))
    assert [(r["id"], r["qty"]) for r in found] == [(k[0], model[k]) for k in keys]
    # Each bucket's changelog, replayed, gives its rows (as a new replica would rebuild them).
    for b in range(BUCKETS):
        leader = c.leader_of(table, b)
        replayed: dict[int, int] = {}
        for r in do_get(c.client(leader), {"table": table, "bucket": b}).to_pylist():
            if r["_change_type"] in ("+I", "+U"):
                replayed[r["id"]] = r["qty"]
            elif r["_change_type"] == "-D":
                replayed.pop(r["id"], None)
        mine = do_get(c.client(leader), {"table": table, "snapshot": True, "bucket": b})
        assert replayed == {r["id"]: r["qty"] for r in mine.to_pylist()}, f"bucket {b}"


def test_leader_kills_under_upserts_and_deletes_lose_no_acknowledged_change(cluster):
    create(cluster, "pk.kills")
    seed = int(os.environ.get("OXBOW_CRASH_SEED", time.time_ns() % 1_000_000))
    print(f"OXBOW_CRASH_SEED={seed}")
    rng = random.Random(seed)
    writers: list[ModelWriter] = []
    for k in range(KILLS):
        fresh = [ModelWriter(cluster, "pk.kills", i, seed, k) for i in range(3)]
        for old, new in zip(writers, fresh):
            new.state = old.state
        writers = fresh
        for w in writers:
            w.start()
        time.sleep(rng.uniform(0.3, 1.0))
        victim = cluster.leader_of("pk.kills", rng.randrange(BUCKETS))
        cluster.kill(victim)
        time.sleep(rng.uniform(0.5, 1.5))
        for w in writers:
            w.stop()
        cluster.restart(victim)
        check_against_model(cluster, "pk.kills", writers)
    assert sum(w.batches for w in writers) > 0
    assert sum(len(w.state) for w in writers) > 0


def test_a_wiped_replica_rebuilds_its_rows_from_the_changelog_and_leads(cluster):
    """A server whose disk was replaced fetches the changelog from the leader and applies it;
    made leader, it serves the same rows the old leader did."""
    create(cluster, "pk.wiped")
    ids = list(range(1500))
    for start in range(0, len(ids), 300):
        part = ids[start:start + 300]
        put(cluster.client(1), "pk.wiped", "upsert", rows(part, ["w"] * len(part), part))
    put(cluster.client(2), "pk.wiped", "delete", rows(ids[:200], ["w"] * 200))
    state = cluster.wait_in_sync("pk.wiped", 0)
    before = bucket_rows(cluster, state["leader"], "pk.wiped", 0)
    assert before
    wiped = next(i for i in state["replicas"] if i != state["leader"])
    cluster.wipe(wiped)
    cluster.wait_in_sync("pk.wiped", 0)
    # Made the preferred leader, it takes over.
    assert lead_and_read(cluster, "pk.wiped", 0, wiped) == before


def test_a_rolling_restart_under_upserts_and_deletes_loses_nothing(cluster):
    """Each server in turn stops cleanly (controlled shutdown: its leaderships move first) and
    starts again while writers upsert and delete through every server."""
    create(cluster, "pk.roll")
    writers = [ModelWriter(cluster, "pk.roll", i, 7, 0) for i in range(3)]
    for w in writers:
        w.start()
    time.sleep(0.5)
    for i in sorted(cluster.servers):
        cluster.servers[i].restart()
        for b in range(BUCKETS):
            cluster.wait_in_sync("pk.roll", b)
    time.sleep(0.5)
    for w in writers:
        w.stop()
    print(f"\n{sum(w.batches for w in writers)} batches, "
          f"{sum(w.retries for w in writers)} retried during the roll")
    check_against_model(cluster, "pk.roll", writers)
