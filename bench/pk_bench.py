#!/usr/bin/env python3
"""Primary-key tables through oxbowd against raw RocksDB on the same machine, side by side in one
run (docs/bench.md says what each side does per row):

- upserts/s with changelog, 16 B keys + 100 B values and 20 B keys + 400 B values, 1 and 4
  writers, against bench/kv_bench doing the same puts in-process with the options of
  src/oxbow/kv/store.cc: puts alone (disableWAL), a MultiGet of the old rows before the puts,
  and that with the WAL fsynced per batch;
- batched point lookups (1, 100, 1000 keys per DoExchange message) against kv_bench's MultiGet
  of the same batches;
- oxbowd's VmRSS (sampled every 20 ms) and VmHWM while 1, 64 and 512 buckets take upserts and
  lookups at one memory budget, against budget + 64 MB.

    python bench/pk_bench.py [--quick] [--rows N] [--workdir DIR]

Binaries come from $OXBOW_BUILD_DIR (default <repo>/build/release): tools/oxbowd and
bench/kv_bench. Data dirs are fresh temporary directories under --workdir (default <repo>/build,
the same disk as the checkout). Row i writes key key_of(splitmix64(i) % keyspace) with keyspace =
rows / 2, so about half the upserts update a key written before.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.flight as fl

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from server_bench import (REPO_ROOT, Oxbowd, RssSampler, binary, proc_status, run_json,  # noqa: E402
                          run_threads)

TABLE = "bench.pk"
MASK = (1 << 64) - 1
SIZES = ((16, 100), (20, 400))
LOOKUP_BATCHES = (1, 100, 1000)
RSS_BUCKETS = (1, 64, 512)
MB = 1e6
MIB = 1 << 20
SLACK = 64 * MIB  # the RSS target: budget + 64 MiB


def splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def key_of(index: int, key_bytes: int) -> str:
    """As kv_bench's KeyOf: 'k' padding, then 16 hex digits of index * golden ratio mod 2^64."""
    return "k" * (key_bytes - 16) + f"{(index * 0x9E3779B97F4A7C15) & MASK:016x}"


def fixed_width_array(chunks: bytes, count: int, width: int, type_: pa.DataType) -> pa.Array:
    offsets = pa.array(range(0, (count + 1) * width, width), pa.int32()).buffers()[1]
    return pa.Array.from_buffers(type_, count, [None, offsets, pa.py_buffer(chunks)])


SCHEMA = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("v", pa.binary())])
KEY_SCHEMA = pa.schema([SCHEMA.field("k")])


def upsert_batches(rows: int, batch: int, key_bytes: int, value_bytes: int) -> list[pa.RecordBatch]:
    """Batch b holds rows b*batch..; kv_bench writes the same keys (values: printable random)."""
    printable = bytes(33 + b % 94 for b in range(256))
    pool = random.Random(42).randbytes(1 << 20).translate(printable)
    keyspace = max(rows // 2, 1)
    out = []
    for first in range(0, rows, batch):
        idx = range(first, min(rows, first + batch))
        keys = "".join(key_of(splitmix64(i) % keyspace, key_bytes) for i in idx).encode()
        values = b"".join(pool[at:at + value_bytes] for at in
                          (i * 7919 % (len(pool) - value_bytes) for i in idx))
        out.append(pa.record_batch([fixed_width_array(keys, len(idx), key_bytes, pa.string()),
                                    fixed_width_array(values, len(idx), value_bytes, pa.binary())],
                                   schema=SCHEMA))
    return out


def lookup_count(lookups: int, batch: int, round_trips: int) -> int:
    return min(lookups, batch * round_trips)


def lookup_batches(keys: int, batch: int, keyspace: int, key_bytes: int) -> list[pa.RecordBatch]:
    out = []
    for first in range(0, keys, batch):
        idx = range(first, min(keys, first + batch))
        ks = "".join(key_of(splitmix64(j + (1 << 40)) % keyspace, key_bytes) for j in idx).encode()
        out.append(pa.record_batch([fixed_width_array(ks, len(idx), key_bytes, pa.string())],
                                   schema=KEY_SCHEMA))
    return out


def command(op: str, **extra) -> fl.FlightDescriptor:
    return fl.FlightDescriptor.for_command(json.dumps({"table": TABLE, "op": op, **extra}))


def upsert(server: Oxbowd, batches: list[pa.RecordBatch], writers: int) -> float:
    """Writer w sends batches w, w + writers, ... each waiting for its ack; returns seconds."""

    def run(w: int):
        client = fl.FlightClient(f"grpc://{server.address}")
        writer, acks = client.do_put(command("upsert"), SCHEMA)
        for batch in batches[w::writers]:
            writer.write_batch(batch)
            acks.read()
        writer.done_writing()
        writer.close()
        client.close()

    try:
        return run_threads(run, writers)
    except (fl.FlightError, pa.ArrowException, OSError) as e:
        sys.exit(f"pk_bench.py: upsert failed: {e}")


def look_up(server: Oxbowd, batches: list[pa.RecordBatch]) -> tuple[float, int]:
    """One DoExchange stream, one key batch at a time; returns seconds and rows found."""
    writer, reader = server.client.do_exchange(command("lookup"))
    writer.begin(KEY_SCHEMA)
    found = 0
    start = time.perf_counter()
    for batch in batches:
        writer.write_batch(batch)
        found += reader.read_chunk().data.num_rows
    seconds = time.perf_counter() - start
    writer.done_writing()
    writer.close()
    return seconds, found


def start_server(tmp: pathlib.Path, name: str, cache: int, write_buffer: int, *extra: str) -> Oxbowd:
    return Oxbowd(tmp / name, tmp / f"{name}.log",
                  ("--kv-block-cache-bytes", str(cache), "--kv-write-buffer-bytes", str(write_buffer),
                   *extra))


def create_table(server: Oxbowd, buckets: int) -> None:
    server.action("create_table", {
        "table": TABLE, "primary_key": ["k"], "buckets": buckets,
        "schema": {"fields": [{"name": f.name, "type": str(f.type), "nullable": f.nullable}
                              for f in SCHEMA]},
        "properties": {"lake.enabled": "false"}})


def load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI mode: a few seconds")
    parser.add_argument("--rows", type=int, help="upserts per run (default 200000; quick 4000)")
    parser.add_argument("--workdir", type=pathlib.Path, default=REPO_ROOT / "build")
    args = parser.parse_args()
    rows = args.rows or (4000 if args.quick else 200_000)
    batch = 500 if args.quick else 1000
    lookups, round_trips = (2000, 200) if args.quick else (200_000, 5000)
    cache, write_buffer = (16 << 20, 8 << 20) if args.quick else (64 << 20, 32 << 20)
    rss_rows = 4000 if args.quick else 200_000
    kv_bench = binary("bench/kv_bench")
    binary("tools/oxbowd")
    args.workdir.mkdir(parents=True, exist_ok=True)

    print(f"machine: {load()} at start")
    results = {}  # (key, value, writers) -> {"oxbowd": rows/s, mode: rows/s}
    lookups_by = {}  # (key, value, batch) -> {"oxbowd": keys/s, "rocksdb": keys/s}
    with tempfile.TemporaryDirectory(prefix="oxbow-pk-bench-", dir=args.workdir) as tmp_name:
        tmp = pathlib.Path(tmp_name)
        for key_bytes, value_bytes in SIZES:
            batches = upsert_batches(rows, batch, key_bytes, value_bytes)
            keyspace = max(rows // 2, 1)
            for writers in (1, 4):
                run = (key_bytes, value_bytes, writers)
                name = f"oxbowd-{key_bytes}-{value_bytes}-{writers}"
                server = start_server(tmp, name, cache, write_buffer)
                try:
                    create_table(server, 4)
                    results[run] = {"oxbowd": rows / upsert(server, batches, writers)}
                    if writers == 1:
                        for lb in LOOKUP_BATCHES:
                            keys = lookup_count(lookups, lb, round_trips)
                            seconds, found = look_up(server, lookup_batches(keys, lb, keyspace, key_bytes))
                            lookups_by[(key_bytes, value_bytes, lb)] = {"oxbowd": keys / seconds,
                                                                        "found": found}
                finally:
                    assert server.stop() == 0, "oxbowd exited non-zero after SIGTERM"
                for mode in ("put", "read-put", "read-put-sync"):
                    out = run_json([kv_bench, "--dir", tmp / f"rocksdb-{name}-{mode}",
                                    "--key-bytes", key_bytes, "--value-bytes", value_bytes,
                                    "--rows", rows, "--keyspace", keyspace, "--batch", batch,
                                    "--writers", writers, "--mode", mode,
                                    "--block-cache-bytes", cache, "--write-buffer-bytes", write_buffer,
                                    "--lookups", 0])
                    results[run][mode] = out["rows_per_second"]
            for lb in LOOKUP_BATCHES:
                keys = lookup_count(lookups, lb, round_trips)
                out = run_json([kv_bench, "--dir", tmp / f"rocksdb-lookup-{key_bytes}-{value_bytes}-{lb}",
                                "--key-bytes", key_bytes, "--value-bytes", value_bytes,
                                "--rows", rows, "--keyspace", keyspace, "--batch", batch,
                                "--mode", "put", "--block-cache-bytes", cache,
                                "--write-buffer-bytes", write_buffer, "--lookups", keys,
                                "--lookup-batches", lb])
                entry = lookups_by[(key_bytes, value_bytes, lb)]
                entry["rocksdb"] = out["keys_per_second"]
                if out["found"] != entry["found"]:
                    sys.exit(f"pk_bench.py: oxbowd found {entry['found']} keys of batch {lb}, "
                             f"RocksDB {out['found']}: the two sides do not hold the same rows")

        rss = {}  # buckets -> (peak VmRSS, VmHWM)
        rss_batches = upsert_batches(rss_rows, batch, 20, 400)
        rss_keys = lookup_batches(lookup_count(lookups, 100, round_trips), 100,
                                  max(rss_rows // 2, 1), 20)
        for buckets in RSS_BUCKETS:
            # Memory, not durability: fsync every 10 ms, or 512 buckets fsync ~440 files a batch.
            server = start_server(tmp, f"rss-{buckets}", cache, write_buffer, "--flush", "interval")
            try:
                create_table(server, buckets)
                samplers = [RssSampler(server.proc.pid, key) for key in ("VmRSS", "RssAnon")]
                upsert(server, rss_batches, 4)
                look_up(server, rss_keys)
                peak, anon = (sampler.stop() for sampler in samplers)
                rss[buckets] = (peak, proc_status(server.proc.pid, "VmHWM"), anon)
            finally:
                assert server.stop() == 0, "oxbowd exited non-zero after SIGTERM"
        print(f"machine: {load()} at the end")

    size = lambda k, v: f"{k} B keys + {v} B values"  # noqa: E731
    print()
    print(f"{rows:,} upserts per run in batches of {batch} (keyspace {rows // 2:,}); block cache "
          f"{cache / MB:.0f} MB, write buffers {write_buffer / MB:.0f} MB (charged to the cache); "
          f"oxbowd table with 4 buckets, --flush fsync (an fsync of the changelog per batch)")
    print()
    print("| upserts/s | oxbowd | RocksDB put | RocksDB MultiGet+put | RocksDB MultiGet+put, WAL fsync |")
    print("|---|---:|---:|---:|---:|")
    for (k, v, w), r in results.items():
        print(f"| {size(k, v)}, {w} writer{'s' if w > 1 else ''} | {r['oxbowd']:,.0f} | {r['put']:,.0f} | "
              f"{r['read-put']:,.0f} | {r['read-put-sync']:,.0f} |")
    print()
    print("| lookups (keys/s) | oxbowd DoExchange | RocksDB MultiGet | keys found |")
    print("|---|---:|---:|---:|")
    for (k, v, lb), r in lookups_by.items():
        print(f"| {size(k, v)}, batches of {lb} | {r['oxbowd']:,.0f} | {r['rocksdb']:,.0f} | {r['found']:,} |")
    print()
    print(f"| buckets ({rss_rows:,} upserts of 20 B + 400 B, 4 writers, then lookups; --flush interval) | "
          "peak VmRSS (MiB) | VmHWM (MiB) | peak RssAnon (MiB) |")
    print("|---|---:|---:|---:|")
    for buckets, (peak, hwm, anon) in rss.items():
        print(f"| {buckets} | {peak / MIB:,.1f} | {hwm / MIB:,.1f} | {anon / MIB:,.1f} |")
    print()
    for (k, v, w), r in results.items():
        for mode, label in (("put", "put, no WAL"), ("read-put", "MultiGet+put, no WAL"),
                            ("read-put-sync", "MultiGet+put, WAL fsync per batch")):
            ratio = r["oxbowd"] / r[mode]
            target = f" ({'meets' if ratio >= 0.5 else 'MISSES'} target >= 0.50)" if mode == "put" else ""
            print(f"ratio oxbowd/rocksdb upserts {size(k, v)}, {w} writer{'s' if w > 1 else ''}, "
                  f"vs {label}: {ratio:.2f}{target}")
    for (k, v, lb), r in lookups_by.items():
        ratio = r["oxbowd"] / r["rocksdb"]
        print(f"ratio oxbowd/rocksdb lookups {size(k, v)}, batches of {lb}: {ratio:.2f} "
              f"({'meets' if ratio >= 0.5 else 'MISSES'} target >= 0.50)")
    # Memtables are charged to the block cache, so the cache size is the whole store's budget.
    budget = cache
    for buckets, (peak, hwm, anon) in rss.items():
        print(f"RSS {buckets} buckets: VmHWM {hwm / MIB:.1f} MiB, budget {budget / MIB:.1f} MiB "
              f"+ {SLACK / MIB:.1f} MiB = {(budget + SLACK) / MIB:.1f} MiB: "
              f"{'within' if hwm <= budget + SLACK else 'OVER'}; peak RssAnon (heap, without "
              f"mapped changelog segments) {anon / MIB:.1f} MiB: "
              f"{'within' if anon <= budget + SLACK else 'OVER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
