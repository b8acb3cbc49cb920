#!/usr/bin/env python3
"""Primary-key tables in the lake: ack -> visible in pyiceberg at a steady update rate, the lake's
size over time, and the pyiceberg scan of the PK lake against the same rows as an append table.

    python bench/pk_lake_bench.py [--keys 1000000] [--rate 20000] [--seconds 30]
                                  [--skew uniform|90/10] [--batch-rows 2000]
                                  [--server-log oxbowd.log]   # keep oxbowd's log: it names
                                  # slow rounds and long holds of a table's lock

Phase 1 loads --keys rows into a primary-key table (lake.enabled true) and waits for the lake.
Phase 2 upserts --rate rows/s for --seconds, in batches of --batch-rows, keys drawn uniformly or
90/10 (90% of updates to 10% of the keys); each batch is stamped at its ack with the changelog
offsets the ack gives. A poller loops describe_table -> metadata_location ->
StaticTable.from_metadata(...) and reads the current snapshot's oxbow.tiered-offsets: a batch is
visible once every bucket's tiered offset passed its records (the snapshot is what a fresh
pyiceberg scan reads). Latency = visible - ack; p50/p99. Every 5 s it records the lake's size: live
data and delete files, their bytes, the current snapshot's manifests, the bytes of everything
under the table's metadata/ (metadata.json files, manifest lists, manifests), and oxbowd's RSS. The peer, side by side: the same batches at the same rate into a log
table (append-only lake), same poller, so the ratio PK/log says what merge-on-read costs the
freshness. Last: a full pyiceberg scan of the PK lake (its rows = the keys) against a scan of an
append table holding the same rows (the log table after phase 1 only, same row count).

    python bench/pk_lake_bench.py --index-memory [--keys 1000000]

measures the key-location index instead: two oxbowd side by side load the same --keys rows into a
primary-key table, one with lake.enabled true (its lake holds the keys, so the restarted server
rebuilds the index of every key) and one with false; both are restarted and, once the lake's
index is rebuilt, their RSS (VmRSS) is read. (lake RSS - no-lake RSS) / keys estimates the index's
bytes per key (an upper bound: it also counts the tiering state and allocator slack).
Binaries come from $OXBOW_BUILD_DIR (default <repo>/build/release).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import random
import statistics
import sys
import tempfile
import threading
import time

import pyarrow as pa
from pyiceberg.table import StaticTable

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from server_bench import Oxbowd  # noqa: E402

BUCKETS = 4
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False),
                    pa.field("seq", pa.int64(), nullable=False),
                    pa.field("v", pa.int64()),
                    pa.field("payload", pa.string())])


def schema_json() -> dict:
    return {"fields": [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in SCHEMA]}


def batch_of(ids: list[int], seq: int) -> pa.RecordBatch:
    return pa.record_batch([pa.array(ids, pa.int64()), pa.array([seq] * len(ids), pa.int64()),
                            pa.array([i * 7 + seq for i in ids], pa.int64()),
                            pa.array([f"p{seq % 1000:04d}{i % 97:02d}" for i in ids])], schema=SCHEMA)


def put(server: Oxbowd, table: str, batches) -> list[tuple[float, dict]]:
    """Writes the batches in one stream; returns (ack time, {bucket: end offset}) per batch."""
    import pyarrow.flight as fl
    writer, acks = server.client.do_put(fl.FlightDescriptor.for_path(*table.split(".")), SCHEMA)
    out = []
    try:
        for b in batches:
            writer.write_batch(b)
            ack = json.loads(acks.read().to_pybytes())
            ends = {}
            for o in ack["offsets"]:
                ends[o["bucket"]] = max(ends.get(o["bucket"], 0), o["base_offset"] + o["rows"])
            out.append((time.monotonic(), ends))
        writer.done_writing()
    finally:
        writer.close()
    return out


def lake_state(server: Oxbowd, table: str):
    """(metadata location, tiered offsets, summary) of the current snapshot, as pyiceberg reads it."""
    location = server.action("describe_table", {"table": table})["lake"].get("metadata_location")
    if not location:
        return None, [0] * BUCKETS, {}
    snap = StaticTable.from_metadata(location).metadata.current_snapshot()
    summary = dict(snap.summary.additional_properties) if snap else {}
    return location, json.loads(summary.get("oxbow.tiered-offsets", "[0,0,0,0]")), summary


def wait_caught_up(server: Oxbowd, table: str, timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while server.action("describe_table", {"table": table})["lake"]["lag_rows"] > 0:
        if time.monotonic() > deadline:
            sys.exit(f"{table}: the lake did not catch up in {timeout_s} s")
        time.sleep(0.1)


def rss_mb(pid: int) -> float:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def lake_size(server: Oxbowd, location: str | None, summary: dict) -> dict:
    """The lake table's size now: live files and bytes (snapshot summary), the current snapshot's
    manifests, the bytes under metadata/, and oxbowd's RSS."""
    size = {"data_files": summary.get("total-data-files"),
            "delete_files": summary.get("total-delete-files"),
            "file_bytes": summary.get("total-files-size"),
            "records": summary.get("total-records"), "manifests": None, "metadata_bytes": None,
            "rss_mb": round(rss_mb(server.proc.pid))}
    if location:
        table = StaticTable.from_metadata(location)
        snap = table.metadata.current_snapshot()
        size["manifests"] = len(snap.manifests(table.io)) if snap else 0
        metadata_dir = pathlib.Path(location).parent
        size["metadata_bytes"] = sum(p.stat().st_size for p in metadata_dir.iterdir()
                                     if p.is_file())
    return size


def steady(server: Oxbowd, table: str, args, rng: random.Random) -> dict:
    """--rate rows/s for --seconds; returns latency percentiles and size samples."""
    acked: list[tuple[float, dict]] = []
    lock = threading.Lock()
    done = threading.Event()
    visible: list[float] = []
    sizes = []

    def poll():
        seen_location = None
        pending = 0
        last_size = 0.0
        while True:
            finished = done.is_set()
            location, tiered, summary = lake_state(server, table)
            now = time.monotonic()
            if location != seen_location:
                seen_location = location
                with lock:
                    while pending < len(acked) and all(
                            tiered[b] >= end for b, end in acked[pending][1].items()):
                        visible.append(now - acked[pending][0])
                        pending += 1
            if now - last_size >= 5:
                last_size = now
                sizes.append(lake_size(server, location, summary))
            with lock:
                if finished and pending == len(acked):
                    return
            time.sleep(0.01)

    poller = threading.Thread(target=poll)
    poller.start()
    hot = max(1, args.keys // 10)
    per_second = args.rate / args.batch_rows
    start = time.monotonic()
    seq = 0
    while time.monotonic() - start < args.seconds:
        seq += 1
        if args.skew == "90/10":
            ids = [rng.randrange(hot) if rng.random() < 0.9 else rng.randrange(args.keys)
                   for _ in range(args.batch_rows)]
        else:
            ids = [rng.randrange(args.keys) for _ in range(args.batch_rows)]
        ids = list(dict.fromkeys(ids))
        result = put(server, table, [batch_of(ids, seq)])
        with lock:
            acked.extend(result)
        delay = start + seq / per_second - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    elapsed = time.monotonic() - start
    done.set()
    poller.join()
    q = statistics.quantiles(visible, n=100, method="inclusive")
    return {"batches": len(visible), "rows_per_s": seq * args.batch_rows / elapsed,
            "p50_ms": q[49] * 1000, "p99_ms": q[98] * 1000, "max_ms": max(visible) * 1000,
            "sizes": sizes}


def scan_seconds(location: str, runs: int = 3) -> tuple[float, int]:
    best, rows = float("inf"), 0
    for _ in range(runs):
        t = time.monotonic()
        rows = StaticTable.from_metadata(location).scan().to_arrow().num_rows
        best = min(best, time.monotonic() - t)
    return best, rows


def index_memory(args) -> None:
    load = [batch_of(list(range(i, min(i + 50_000, args.keys))), 0)
            for i in range(0, args.keys, 50_000)]
    rss = {}
    with tempfile.TemporaryDirectory(prefix="pk_lake_bench_") as tmp:
        for lake in ("true", "false"):
            data = pathlib.Path(tmp) / f"data-{lake}"
            log = pathlib.Path(tmp) / f"oxbowd-{lake}.log"
            server = Oxbowd(data, log)
            try:
                server.action("create_table", {"table": "bench.pk", "schema": schema_json(),
                                               "primary_key": ["id"], "buckets": BUCKETS,
                                               "properties": {"lake.enabled": lake}})
                put(server, "bench.pk", load)
                if lake == "true":
                    wait_caught_up(server, "bench.pk")
            finally:
                server.stop()
            server = Oxbowd(data, log)  # the restart rebuilds the index from the lake
            try:
                if lake == "true":
                    wait_caught_up(server, "bench.pk")
                time.sleep(3)  # the index is built when tiering opens the table, at startup
                rss[lake] = rss_mb(server.proc.pid)
            finally:
                server.stop()
    per_key = (rss["true"] - rss["false"]) * 1024 * 1024 / args.keys
    print(f"{args.keys:,} keys, RSS after a restart: lake.enabled true {rss['true']:,.0f} MB, "
          f"false {rss['false']:,.0f} MB; the key-location index about {per_key:,.0f} bytes/key")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--rate", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--batch-rows", type=int, default=2000)
    parser.add_argument("--skew", choices=["uniform", "90/10"], default="uniform")
    parser.add_argument("--freshness-ms", type=int, default=1000)
    parser.add_argument("--index-memory", action="store_true")
    parser.add_argument("--round-nice", type=int, default=10,
                        help="oxbowd --lake-round-nice (the nice level of the round workers)")
    parser.add_argument("--server-log", type=pathlib.Path,
                        help="keep oxbowd's log here (it names slow rounds and lock holds)")
    args = parser.parse_args()
    if args.index_memory:
        index_memory(args)
        return
    rng = random.Random(1)
    with tempfile.TemporaryDirectory(prefix="pk_lake_bench_") as tmp:
        server = Oxbowd(pathlib.Path(tmp) / "data", args.server_log or pathlib.Path(tmp) / "oxbowd.log",
                        ("--lake-freshness-ms", str(args.freshness_ms),
                         "--lake-round-nice", str(args.round_nice)))
        try:
            server.action("create_table", {"table": "bench.pk", "schema": schema_json(),
                                           "primary_key": ["id"], "buckets": BUCKETS,
                                           "properties": {"lake.enabled": "true"}})
            server.action("create_table", {"table": "bench.log", "schema": schema_json(),
                                           "buckets": BUCKETS})
            load = [batch_of(list(range(i, min(i + 50_000, args.keys))), 0)
                    for i in range(0, args.keys, 50_000)]
            t = time.monotonic()
            put(server, "bench.pk", load)
            put(server, "bench.log", load)
            wait_caught_up(server, "bench.pk")
            wait_caught_up(server, "bench.log")
            print(f"loaded {args.keys} keys into both tables and their lakes in "
                  f"{time.monotonic() - t:.1f} s")
            log_location, _, _ = lake_state(server, "bench.log")
            log_scan, log_rows = scan_seconds(log_location)
            pk = steady(server, "bench.pk", args, rng)
            wait_caught_up(server, "bench.pk")
            pk_location, _, _ = lake_state(server, "bench.pk")
            pk_scan, pk_rows = scan_seconds(pk_location)
            log = steady(server, "bench.log", args, rng)
        finally:
            server.stop()
    print(f"\nsteady {args.rate} rows/s ({args.skew}, {args.batch_rows}-row batches, "
          f"freshness {args.freshness_ms} ms) for {args.seconds:.0f} s over {args.keys} keys")
    print("| table | rows/s reached | batches | ack->visible p50 | p99 | max |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in (("primary key (position deletes)", pk), ("log (append)", log)):
        print(f"| {name} | {r['rows_per_s']:,.0f} | {r['batches']} | {r['p50_ms']:,.0f} ms | "
              f"{r['p99_ms']:,.0f} ms | {r['max_ms']:,.0f} ms |")
    print(f"ratio PK/log: p50 {pk['p50_ms'] / log['p50_ms']:.2f}, p99 {pk['p99_ms'] / log['p99_ms']:.2f}")
    print("\nPK lake every 5 s (records incl. deleted; metadata bytes: all of metadata/):")
    print("| t | data files | delete files | file bytes | records | manifests | metadata bytes "
          "| oxbowd RSS MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for i, s in enumerate(pk["sizes"]):
        print(f"| {i * 5} s | {s['data_files']} | {s['delete_files']} | {s['file_bytes']} | "
              f"{s['records']} | {s['manifests']} | {s['metadata_bytes']} | {s['rss_mb']} |")
    print(f"\npyiceberg full scan: PK lake {pk_rows:,} rows in {pk_scan * 1000:,.0f} ms; "
          f"append lake {log_rows:,} rows in {log_scan * 1000:,.0f} ms; "
          f"ratio {pk_scan / log_scan:.2f}")


if __name__ == "__main__":
    main()
