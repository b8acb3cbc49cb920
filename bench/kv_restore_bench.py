#!/usr/bin/env python3
"""How long a wiped replica of a primary-key bucket takes to be back in the ISR: restoring the
latest KV snapshot from the warehouse (docs/cluster.md#kv-snapshots-in-object-storage) against
fetching and replaying the whole changelog, side by side in one run on one 3-server cluster
(docs/bench.md, "KV restore").

    .venv/bin/python bench/kv_restore_bench.py [--gigabytes 1.0] [--row-bytes 1000]
                                               [--updates 1] [--workdir DIR]

A one-bucket primary-key table (replication factor 3) gets --gigabytes of rows with
incompressible payloads, written through Flight, each key written --updates times (1: distinct
keys, the rows as big as the changelog; 4: the changelog four times the rows); the leader
uploads its snapshot to the warehouse (a directory shared by the three servers, standing in for
the object store: the time measured is the servers', not an S3 server's). Then, twice, a
follower is SIGKILLed, its data dir deleted, and it is started again; the time is from the
start to its log having the leader's end, with the leader listing it in the ISR:
- replay: the warehouse's snapshot directory is moved away first, so the restore fails and the
  replica fetches and applies the whole changelog (what it did before KV snapshots);
- restore: the snapshot is back; the replica downloads it, ingests its files and fetches the
  changelog after it.
Prints both times, their ratio, the restore's own time as the server logs it (the rest is the
restart: process start, ZooKeeper session, first fetches), the bytes on disk, and the peak RSS
(and anonymous RSS) of each oxbowd.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.flight as fl

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from cluster_bench import OxbowNode  # noqa: E402
from server_bench import REPO_ROOT, free_port  # noqa: E402
from vs_kafka import MemorySampler, log  # noqa: E402

TABLE = "bench.kv"


def action(client: fl.FlightClient, name: str, body: dict) -> dict:
    results = client.do_action(fl.Action(name, json.dumps(body).encode()))
    return json.loads(b"".join(r.body.to_pybytes() for r in results))


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                return value
        except (pa.ArrowException, OSError, StopIteration, KeyError):
            pass
        time.sleep(0.05)
    sys.exit(f"kv_restore_bench.py: timed out waiting for {what}")


def bucket_state(client: fl.FlightClient) -> dict:
    status = action(client, "cluster_status", {})
    return next(b for b in status["buckets"] if b["table"] == TABLE and b["bucket"] == 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gigabytes", type=float, default=1.0)
    parser.add_argument("--row-bytes", type=int, default=1000)
    parser.add_argument("--updates", type=int, default=1)
    parser.add_argument("--workdir", type=pathlib.Path, default=REPO_ROOT / "build")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp_name:
        tmp = pathlib.Path(tmp_name)
        zk_port = free_port()
        subprocess.run([str(REPO_ROOT / "scripts" / "zookeeper.sh"), "start", str(zk_port),
                        str(tmp / "zookeeper")], check=True)
        warehouse = tmp / "warehouse"
        nodes = {i: OxbowNode(i, tmp, f"127.0.0.1:{zk_port}/kvbench", "fsync") for i in (1, 2, 3)}
        for node in nodes.values():
            node.args[node.args.index("--warehouse") + 1] = str(warehouse)
            node.args += ["--kv-snapshot-interval-ms", "2000"]
        try:
            for node in nodes.values():
                node.start()
            clients = {i: fl.connect(f"grpc://127.0.0.1:{n.port}") for i, n in nodes.items()}
            wait_for(lambda: len(action(clients[1], "cluster_status", {})["servers"]) == 3, 60,
                     "three servers")
            schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                                pa.field("payload", pa.binary())])
            action(clients[1], "create_table", {
                "table": TABLE, "primary_key": ["id"], "buckets": 1,
                "schema": {"fields": [{"name": "id", "type": "int64", "nullable": False},
                                      {"name": "payload", "type": "binary"}]},
                "properties": {"replication.factor": "3", "min.insync.replicas": "2"}})
            leader = wait_for(lambda: (lambda s: s["leader"] if s["leader"] > 0 else None)(
                bucket_state(clients[1])), 60, "a leader")
            total = int(args.gigabytes * 1e9)
            batch_rows = max(1, (4 << 20) // args.row_bytes)
            rows = total // args.row_bytes
            keys = max(1, rows // args.updates)
            started = time.monotonic()
            writer, acks = clients[leader].do_put(
                fl.FlightDescriptor.for_command(json.dumps({"table": TABLE, "op": "upsert"})),
                schema)
            for first in range(0, rows, batch_rows):
                n = min(batch_rows, rows - first)
                writer.write_batch(pa.record_batch(
                    [pa.array([k % keys for k in range(first, first + n)], pa.int64()),
                     pa.array([os.urandom(args.row_bytes) for _ in range(n)], pa.binary())],
                    schema=schema))
                acks.read()
            writer.done_writing()
            writer.close()
            log(f"wrote {rows:,} rows ({total / 1e9:.2f} GB) in {time.monotonic() - started:.1f} s")
            end = wait_for(lambda: (lambda s: s["log_end"] if sorted(s["isr"]) == [1, 2, 3]
                                    and s["high_watermark"] == s["log_end"] else None)(
                bucket_state(clients[leader])), 600, "the bucket in sync")
            snapshot_dir = wait_for(lambda: next(
                p for p in warehouse.glob(f"_kv/*/0/snapshot-{end}")
                if (p / "manifest.json").exists()), 600, f"a KV snapshot at offset {end}")
            snapshot_bytes = sum(f.stat().st_size for f in snapshot_dir.iterdir())
            changelog_bytes = sum(f.stat().st_size for f in
                                  (nodes[leader].home / "data" / "tables").rglob("*.log"))
            followers = [i for i in nodes if i != leader]
            sampler = MemorySampler({f"oxbowd{i}": n.proc.pid for i, n in nodes.items()})

            def rejoin(i: int) -> float:
                nodes[i].kill()
                shutil.rmtree(nodes[i].home / "data")
                started = time.monotonic()
                nodes[i].start()
                sampler.pids[f"oxbowd{i}"] = nodes[i].proc.pid
                clients[i] = fl.connect(f"grpc://127.0.0.1:{nodes[i].port}")

                def back() -> bool:
                    # Its own log (empty after the wipe) has the leader's end, and the leader
                    # counts it in the ISR.
                    mine, theirs = bucket_state(clients[i]), bucket_state(clients[leader])
                    return mine["log_end"] == theirs["log_end"] == end and i in theirs["isr"]
                wait_for(back, 1800, f"server {i} back in the ISR")
                return time.monotonic() - started

            parked = warehouse / "_kv-parked"
            (warehouse / "_kv").rename(parked)
            replay_s = rejoin(followers[0])
            parked.rename(warehouse / "_kv")
            restore_s = rejoin(followers[1])
            restore_log = re.search(
                r"restored from the KV snapshot .* in (\d+) ms \((\d+) ms downloading\)",
                (nodes[followers[1]].home / "oxbowd.log").read_text())
            restored = restore_log is not None
            replayed = "restored from the KV snapshot" not in (
                nodes[followers[0]].home / "oxbowd.log").read_text()
            rss, anon = sampler.peaks()
            print(f"\nKV restore bench, {time.strftime('%Y-%m-%d %H:%M:%SZ', time.gmtime())}: "
                  f"{rows:,} rows of {args.row_bytes} B on {keys:,} keys, changelog "
                  f"{changelog_bytes / 1e9:.2f} GB, snapshot {snapshot_bytes / 1e9:.2f} GB")
            print(f"  replay the whole changelog: {replay_s:7.1f} s to the ISR"
                  f"{'' if replayed else ' (it restored instead: the figure is void)'}")
            detail = (f" (the restore itself: {int(restore_log.group(1)) / 1000:.1f} s, of which "
                      f"downloading {int(restore_log.group(2)) / 1000:.1f} s)" if restored
                      else " (it did not restore: the figure is void)")
            print(f"  restore the snapshot:       {restore_s:7.1f} s to the ISR{detail}")
            print(f"  restore / replay: {restore_s / replay_s:.2f}")
            print("  peak RSS (anonymous): " + ", ".join(
                f"{k} {v / 2**20:.0f} MiB ({anon[k] / 2**20:.0f} MiB)"
                for k, v in sorted(rss.items())))
        finally:
            for node in nodes.values():
                node.stop()
            subprocess.run([str(REPO_ROOT / "scripts" / "zookeeper.sh"), "stop",
                            str(tmp / "zookeeper")], check=False)


if __name__ == "__main__":
    main()
