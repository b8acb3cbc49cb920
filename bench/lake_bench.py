#!/usr/bin/env python3
"""Lake freshness: how long after its ack a row is visible in a fresh pyiceberg scan, at steady
ingest rates; what tiering costs the producers; and how big the lake's metadata stays.

    python bench/lake_bench.py [--quick] [--rates 50,100] [--seconds 30] [--ratio-runs 3]
                               [--mixed-tables 20] [--mixed-hot-rate 80] [--soak-commits 3600]
    python bench/lake_bench.py --flat-out-only [--seconds 15] [--ratio-runs 1] [--profile FILE]

For each rate (MB/s of Arrow buffers) producers write 1 MB batches at that pace for --seconds.
Each batch carries its sequence number in column `seq` and is timestamped at its ack. A poller
loops: describe_table -> metadata_location -> StaticTable.from_metadata(...).scan(seq >= the
first unseen) and stamps every seq that scan returns with the moment the poller read that
metadata location: the row was visible to a scan started then. Between commits it reads the
table's version-hint.text every 5 ms and asks oxbowd only once that names a newer version (or
250 ms passed). latency = visible - ack (p50/p99; the median time of one metadata load + scan is
printed, since it bounds the resolution, and so is the p99 to the end of the scan that returned
the row, the measure before 2026-12-02). The mixed run measures the same for --mixed-tables
tables at once: one hot at --mixed-hot-rate MB/s and the rest getting a 100 KB batch per second
each (their producers and pollers run in a second process, so their pyiceberg scans do not queue
behind the hot table's on one GIL). Then
the producers run flat out for --seconds into a table with lake.enabled "false", then into one
with "true", --ratio-runs times: the throughput ratio is the tiering's dead-time; each run also
prints the CPU oxbowd and the producers spent per MB, the acks' latency at the producers and its
mean inside oxbowd with the log fsync's part (from oxbowd's metrics); each pair waits until its
"on" table is tiered and drops both tables before the next pair starts; every other phase drops
its tables once measured too.
--catch-up-mb also prints the CPU until compaction rewrote every fresh file (lake.fresh-codec).
--flat-out-only runs just these pairs (with --profile: where oxbowd's CPU goes in the first
"off" run). The producers slice their payload from a random pool made once, so making a batch
costs far less than storing it. The soak phase runs --soak-commits commits at a 100 ms freshness with
maintenance every second and reports data files, manifests and metadata.json size at the end,
i.e. what an hour of 1 s commits leaves behind, compressed in time.
Binaries come from $OXBOW_BUILD_DIR (default <repo>/build/release).
"""

from __future__ import annotations

import argparse
import array
import base64
import json
import multiprocessing
import os
import pathlib
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as fl
from pyiceberg.expressions import GreaterThanOrEqual
from pyiceberg.table import StaticTable

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from server_bench import REPO_ROOT, Oxbowd, RssSampler, metric_sum, proc_cpu_faults, proc_status  # noqa: E402

TABLE = "bench.lake"
ROWS_PER_MB = 4000  # 1 MB batches: 4000 rows of about 250 bytes


def make_schema() -> pa.Schema:
    return pa.schema([pa.field("seq", pa.int64(), nullable=False),
                      pa.field("id", pa.int64(), nullable=False),
                      ("ts", pa.timestamp("us", tz="UTC")),
                      ("price", pa.float64()),
                      ("payload", pa.string())])


PAYLOAD_WIDTH = 200
POOL_BYTES = 64 << 20
_cache: dict = {}


def payload_pool() -> pa.Buffer:
    """64 MiB of random base64 characters, made once per process. Batches slice their payload out
    of it: making a batch from fresh random bytes and Python lists cost the producers more than
    twice the CPU per MB that oxbowd spends storing it, so flat-out runs measured the client."""
    if "pool" not in _cache:
        _cache["pool"] = pa.py_buffer(base64.b64encode(os.urandom(POOL_BYTES * 3 // 4)))
    return _cache["pool"]


def per_row(rows: int) -> tuple:
    """What every batch of `rows` rows shares: 0..rows-1, the prices and the payload offsets."""
    if rows not in _cache:
        offsets = array.array("i", range(0, rows * PAYLOAD_WIDTH + 1, PAYLOAD_WIDTH))
        _cache[rows] = (pa.array(range(rows), pa.int64()),
                        pa.array([i * 0.5 for i in range(rows)], pa.float64()),
                        pa.py_buffer(offsets))
    return _cache[rows]


def make_batch(schema: pa.Schema, seq: int, rows: int) -> pa.RecordBatch:
    """Row i of batch `seq`: seq, id seq*rows+i (also as ts), price i/2 and a payload of
    PAYLOAD_WIDTH random base64 characters, a different run of the pool for each seq: it barely
    compresses and does not repeat within a file."""
    positions, prices, offsets = per_row(rows)
    pool = payload_pool()
    size = rows * PAYLOAD_WIDTH
    start = (seq * 7_919_993) % (pool.size - size)
    ids = pc.add(positions, seq * rows)
    return pa.record_batch([
        pa.repeat(pa.scalar(seq, pa.int64()), rows),
        ids,
        ids.cast(pa.timestamp("us", tz="UTC")),
        prices,
        pa.StringArray.from_buffers(rows, offsets, pool.slice(start, size))], schema=schema)


def batch_bytes(batch: pa.RecordBatch) -> int:
    return sum(b.size for col in batch.columns for b in col.buffers() if b is not None)


def create(server: Oxbowd, table: str, schema: pa.Schema, lake: bool) -> None:
    fields = [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in schema]
    server.action("create_table", {"table": table, "schema": {"fields": fields}, "buckets": 4,
                                   "properties": {"lake.enabled": "true" if lake else "false"}})


class Producer:
    """Writes batches of `rows` rows at `rate_mb` MB/s (0: flat out) until stopped; records ack
    times by seq."""

    def __init__(self, address: str, table: str, schema: pa.Schema, rate_mb: float, first_seq: int,
                 stride: int, rows: int = ROWS_PER_MB):
        self.acks: dict[int, float] = {}
        self.ack_seconds: list[float] = []  # each batch's write to its ack, as this client saw it
        self.bytes = 0
        self._args = (address, table, schema, rate_mb, first_seq, stride, rows)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        address, table, schema, rate_mb, seq, stride, rows = self._args
        client = fl.FlightClient(f"grpc://{address}")
        writer, reader = client.do_put(fl.FlightDescriptor.for_path(*table.split(".")), schema)
        batch = make_batch(schema, 0, rows)
        size = batch_bytes(batch)
        start = time.perf_counter()
        while not self._stop.is_set():
            batch = make_batch(schema, seq, rows)
            sent = time.perf_counter()
            writer.write_batch(batch)
            reader.read()
            self.ack_seconds.append(time.perf_counter() - sent)
            self.acks[seq] = time.time()
            self.bytes += size
            seq += stride
            if rate_mb > 0:
                ahead = self.bytes / (rate_mb * 1e6) - (time.perf_counter() - start)
                if ahead > 0:
                    time.sleep(ahead)
        writer.close()
        client.close()

    def stop(self):
        self._stop.set()
        self._thread.join()


class Actions:
    """The Flight actions of an oxbowd at `address` (an Oxbowd object stays in its process)."""

    def __init__(self, address: str):
        self.client = fl.FlightClient(f"grpc://{address}")

    def action(self, name: str, body: dict) -> dict:
        results = self.client.do_action(fl.Action(name, json.dumps(body).encode()))
        return json.loads(b"".join(r.body.to_pybytes() for r in results))


def drop(server: Oxbowd, tables: list) -> None:
    """Drops `tables` once measured, which ends their tiering and compaction, so the next phase
    does not share the machine with them (docs/bench.md, "Each phase drops its tables")."""
    for table in tables:
        server.action("drop_table", {"table": table})


def lake_state(server, table: str) -> dict:
    return server.action("describe_table", {"table": table})["lake"]


def version_hint(location: str) -> int | None:
    """The version in version-hint.text beside `location`, which oxbowd's file catalog replaces
    at each commit before describe_table reports it; None where there is none."""
    try:
        return int((pathlib.Path(location).parent / "version-hint.text").read_text())
    except (OSError, ValueError):
        return None


def metadata_written(location: str) -> float:
    """When oxbowd wrote the metadata file at `location` (its mtime): the commit that made a row
    visible, or a later one where the poller skipped a version."""
    try:
        return pathlib.Path(location).stat().st_mtime
    except OSError:
        return float("nan")


def poll_visibility(server, table: str, stop: threading.Event, seen: dict,
                    polls: list) -> None:
    """Asks oxbowd for the table's metadata location every 5 ms while version-hint.text names a
    newer version than the last seen (and at least every 250 ms): asking for 19 tables every
    5 ms took 1.5 of the machine's 2 cores, in gRPC calls (docs/bench.md)."""
    next_unseen = 0
    last_location = None
    asked = 0.0
    while not stop.is_set():
        if last_location and time.time() - asked < 0.25:
            hint = version_hint(last_location)
            if hint is not None and hint <= metadata_version(last_location):
                time.sleep(0.005)
                continue
        start = asked = time.time()
        location = lake_state(server, table)["metadata_location"]
        if not location or location == last_location:
            time.sleep(0.005)
            continue
        observed = time.time()
        committed = metadata_written(location)
        last_location = location
        scan = StaticTable.from_metadata(location).scan(
            row_filter=GreaterThanOrEqual("seq", next_unseen), selected_fields=("seq",))
        rows = set(scan.to_arrow().column("seq").to_pylist())
        scanned = time.time()
        for seq in rows:
            seen.setdefault(seq, (observed, scanned, committed))
        while next_unseen in seen:  # seqs become visible out of order across buckets
            next_unseen += 1
        polls.append(scanned - start)


# Where the tiering threads' CPU goes, by the first rule (in order) that matches a sample's call
# stack. libzstd, liblz4 and zlib are built without frame pointers, so their samples lose their
# callers; in this benchmark only the lake compresses and checksums pages in oxbowd (the log uses
# CRC-32C), so a sample whose leaf is in them is counted as the tiering's.
PROFILE_RULES = [
    ("fsync of data files and metadata", ("fdatasync", "fsync")),
    ("write(2) into the page cache", ("pwrite", "ext4_buffered_write", "vfs_write")),
    ("zstd (compression; compaction's decompression)", ("libzstd",)),
    ("lz4 (fresh files; compaction's decompression)", ("liblz4",)),
    ("page CRC-32 (zlib)", ("crc32_z",)),
    ("Avro manifests and manifest lists", ("Manifest", "avro::")),
    ("metadata JSON", ("ToJson", "FromJson", "nlohmann")),
    ("compaction's read and re-encode", ("Compact",)),
    ("Parquet encoding (values, dictionary, RLE, buffers)", ("parquet::",)),
    ("log read + IPC decode + lake batch", ("NextDecoded", "ToLakeBatch", "LogReadCursor")),
]
LEAF_ONLY_KEYS = ("libzstd", "liblz4", "crc32_z")


def perf_stacks(perf_data: str) -> list:
    """Each sample's call stack (leaf first) of a perf recording, as lines 'address symbol (dso)'."""
    text = subprocess.run(["perf", "script", "-i", perf_data, "-F", "comm,ip,sym,dso"],
                          capture_output=True, text=True, check=True).stdout
    stacks = (sample.strip().split("\n")[1:] for sample in text.split("\n\n"))
    return [frames for frames in stacks if frames]


def profile_summary(perf_data: str, seconds: float) -> list:
    """(category, share of the tiering threads' samples), after the tiering's share of oxbowd's
    samples and the cores it used over the `seconds` recorded (499 samples a CPU second)."""
    counts: dict[str, int] = {}
    tiering = total = 0
    for frames in perf_stacks(perf_data):
        total += 1
        stack = "\n".join(frames)
        if not ("TieringService" in stack or "TierRound" in stack or "Compact" in stack
                or any(k in frames[0] for k in LEAF_ONLY_KEYS)):
            continue
        tiering += 1
        name = next((n for n, keys in PROFILE_RULES
                     if any(k in (frames[0] if k in LEAF_ONLY_KEYS else stack)
                            for k in keys)), "other")
        counts[name] = counts.get(name, 0) + 1
    shares = sorted(((n, c / max(1, tiering)) for n, c in counts.items()), key=lambda x: -x[1])
    return [("tiering threads, of all oxbowd samples", tiering / max(1, total)),
            ("tiering threads, CPU in % of one core", tiering / 499 / seconds)] + shares


# Where oxbowd's CPU goes while producers put flat out into a table without tiering, by the
# first rule (in order) whose key is in a sample's call stack.
PRODUCE_PROFILE_RULES = [
    ("fsync of the log (group commit)", ("fdatasync", "fsync")),
    ("write(2) of the log into the page cache", ("pwrite", "ext4_buffered_write", "vfs_write")),
    ("TCP receive and send (kernel)", ("recvmsg", "sendmsg", "tcp_", "netif", "skb")),
    ("gRPC message copied into one buffer", ("memmove", "memcpy")),
    ("CRC-32C of the log frames", ("crc32c",)),
    ("UTF-8 validation", ("ValidateUtf8",)),
    ("IPC decode and batch checks", ("Validate", "DecodeRecordBatch", "ipc::")),
    ("scheduler (waits and wakeups)", ("schedule", "futex", "try_to_wake_up")),
]


def produce_profile_summary(perf_data: str, seconds: float) -> list:
    """(category, share of oxbowd's samples), after the cores oxbowd used over the `seconds`
    recorded."""
    stacks = perf_stacks(perf_data)
    counts: dict[str, int] = {}
    for frames in stacks:
        stack = "\n".join(frames)
        name = next((n for n, keys in PRODUCE_PROFILE_RULES if any(k in stack for k in keys)),
                    "other (gRPC, allocation, the put session)")
        counts[name] = counts.get(name, 0) + 1
    shares = sorted(((n, c / max(1, len(stacks))) for n, c in counts.items()), key=lambda x: -x[1])
    return [("oxbowd, CPU in % of one core", len(stacks) / 499 / seconds)] + shares


def percentile(values: list, p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def measure_visibility(server, address: str, table: str, rate: float, seconds: float,
                       producers: int, rows: int = ROWS_PER_MB) -> dict:
    """Produces into `table` (created) at `rate` MB/s for `seconds` while polling the lake."""
    schema = make_schema()
    # seq -> (its metadata seen, its scan returned, that metadata written)
    seen: dict[int, tuple[float, float, float]] = {}
    polls: list[float] = []
    stop = threading.Event()
    poller = threading.Thread(target=poll_visibility, args=(server, table, stop, seen, polls))
    poller.start()
    workers = [Producer(address, table, schema, rate / producers, i, producers, rows)
               for i in range(producers)]
    time.sleep(seconds)
    for w in workers:
        w.stop()
    acks = {seq: t for w in workers for seq, t in w.acks.items()}
    deadline = time.time() + 30
    while time.time() < deadline and not all(s in seen for s in acks):
        time.sleep(0.05)
    stop.set()
    poller.join()
    latencies = [seen[s][0] - t for s, t in acks.items() if s in seen] or [float("nan")]
    to_scan_end = [seen[s][1] - t for s, t in acks.items() if s in seen] or [float("nan")]
    to_commit = [seen[s][2] - t for s, t in acks.items() if s in seen] or [float("nan")]
    sent = sum(w.bytes for w in workers)
    return {"table": table, "rate_target_mb_s": rate, "rate_mb_s": sent / 1e6 / seconds,
            "batches": len(acks), "visible": sum(1 for s in acks if s in seen),
            "p50_ms": 1000 * percentile(latencies, 50),
            "p99_ms": 1000 * percentile(latencies, 99), "max_ms": 1000 * max(latencies),
            "p99_scan_end_ms": 1000 * percentile(to_scan_end, 99),
            "p99_commit_ms": 1000 * percentile(to_commit, 99),
            "poll_ms": 1000 * statistics.median(polls) if polls else 0.0}


def start_perf(server: Oxbowd, profile: str, seconds: float):
    """With `profile`, perf records oxbowd into that file for `seconds` (sampling at 499 Hz)."""
    if not profile:
        return None
    return subprocess.Popen(
        ["perf", "record", "-q", "-F", "499", "-g", "-e", "cpu-clock", "-p",
         str(server.proc.pid), "-o", profile, "--", "sleep", str(seconds)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def freshness(server: Oxbowd, rate: float, seconds: float, producers: int,
              profile: str = "") -> dict:
    """The ack -> visible run at `rate`; with `profile`, perf records oxbowd (from 1 s in, for
    all but the last 2 s of the run) into that file."""
    table = f"{TABLE}_{int(rate)}"
    create(server, table, make_schema(), lake=True)
    recorded = max(1.0, seconds - 3)
    perf = start_perf(server, profile, recorded)
    result = measure_visibility(server, server.address, table, rate, seconds, producers)
    if perf:
        perf.wait()
        result["profile"] = profile_summary(profile, recorded)
    files = live_files(lake_state(server, table)["metadata_location"])
    result["data_files"] = len(files)
    result["fresh_files"] = sum(1 for f in files if f.endswith(".fresh.parquet"))
    drop(server, [table])
    return result


def trickle_process(address: str, tables: list, rate: float, seconds: float, rows: int,
                    results) -> None:
    """The trickling tables of the mixed run, in their own process (pyiceberg scans hold the
    GIL): one producer and one poller per table; puts the per-table results on `results`."""
    actions = Actions(address)
    payload_pool()  # before the clock starts
    out = [None] * len(tables)

    def run(i: int, table: str):
        out[i] = measure_visibility(actions, address, table, rate, seconds, 1, rows)

    threads = [threading.Thread(target=run, args=(i, t)) for i, t in enumerate(tables)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results.put(out)


def mixed_load(server: Oxbowd, hot_rate: float, trickles: int, seconds: float,
               producers: int) -> list:
    """One hot table at `hot_rate` MB/s beside `trickles` tables getting a 100 KB batch every
    second, all at once; each table's ack -> visible."""
    hot = f"{TABLE}_mixed_hot"
    cold = [f"{TABLE}_mixed_{i:02d}" for i in range(trickles)]
    for table in [hot, *cold]:
        create(server, table, make_schema(), lake=True)
    context = multiprocessing.get_context("spawn")  # no fork of a process running gRPC threads
    results = context.Queue()
    child = context.Process(target=trickle_process,
                            args=(server.address, cold, 0.1, seconds, ROWS_PER_MB // 10, results))
    child.start()
    out = [measure_visibility(server, server.address, hot, hot_rate, seconds, producers)]
    out.extend(results.get())
    child.join()
    drop(server, [hot, *cold])
    return out


def ack_metrics(server: Oxbowd, table: str) -> tuple:
    """oxbowd's count and sum of `table`'s receipt-to-ack times and of its log fsyncs (all
    tables; only one takes puts at a time here)."""
    page = server.metrics()
    produce = "oxbow_produce_latency_seconds_"
    fsync = "oxbow_fsync_latency_seconds_"
    return (metric_sum(page, produce + "count", f'table="{table}"'),
            metric_sum(page, produce + "sum", f'table="{table}"'),
            metric_sum(page, fsync + "count"), metric_sum(page, fsync + "sum"))


def throughput(server: Oxbowd, lake: bool, seconds: float, producers: int, run: int,
               profile: str = "") -> dict:
    """MB/s of `producers` flat out into a new table for `seconds`, and the CPU that took in
    oxbowd and in this process (the producers: batch making and the Flight client), in ms per
    MB. With `profile`, perf records oxbowd from 1 s in for all but the last 2 s."""
    table = f"{TABLE}_{'on' if lake else 'off'}_{run}"
    schema = make_schema()
    create(server, table, schema, lake=lake)
    server_cpu, client_cpu = proc_cpu_faults(server.proc.pid)[0], time.process_time()
    before = ack_metrics(server, table)
    workers = [Producer(server.address, table, schema, 0, i, producers) for i in range(producers)]
    time.sleep(1)
    perf = start_perf(server, profile, max(1.0, seconds - 3))
    time.sleep(seconds - 1)
    for w in workers:
        w.stop()
    mb = sum(w.bytes for w in workers) / 1e6
    acks = sorted(s for w in workers for s in w.ack_seconds)
    after = ack_metrics(server, table)
    puts, syncs = after[0] - before[0], after[2] - before[2]
    result = {"mb_s": mb / seconds, "table": table,
              "ack_ms": (1000 * acks[len(acks) // 2], 1000 * acks[len(acks) * 99 // 100]),
              "server_ack_ms": 1000 * (after[1] - before[1]) / max(puts, 1),
              "fsync_ms": 1000 * (after[3] - before[3]) / max(syncs, 1),
              "server_ms_per_mb": 1000 * (proc_cpu_faults(server.proc.pid)[0] - server_cpu) / mb,
              "client_ms_per_mb": 1000 * (time.process_time() - client_cpu) / mb}
    if perf:
        perf.wait()
        result["profile"] = produce_profile_summary(profile, max(1.0, seconds - 3))
    return result


def wait_tiered(server: Oxbowd, table: str, timeout: float) -> float:
    """Seconds until the lake holds every row of `table` (lag_rows 0), at most `timeout`."""
    start = time.monotonic()
    while lake_state(server, table).get("lag_rows", 0) > 0 and time.monotonic() - start < timeout:
        time.sleep(0.2)
    return time.monotonic() - start


def live_files(location: str) -> list:
    """The paths of the live data files of the lake table at `location`."""
    return [t.file.file_path for t in StaticTable.from_metadata(location).scan().plan_files()]


def fresh_files(location: str) -> int:
    """Live data files of the lake table at `location` still in a fresh codec (docs/lake.md)."""
    return sum(1 for f in live_files(location) if f.endswith(".fresh.parquet"))


def catch_up(server: Oxbowd, mb: float, producers: int) -> dict:
    """The tiering's own cost: `mb` MB put flat out with the lake off, then lake.enabled turned
    on and oxbowd's CPU (rounds and maintenance, nothing else running) until the lake has every
    row, per MB; then until compaction rewrote every fresh file (lake.fresh-codec) too."""
    table = f"{TABLE}_catch_up"
    schema = make_schema()
    create(server, table, schema, lake=False)
    workers = [Producer(server.address, table, schema, 0, i, producers) for i in range(producers)]
    while sum(w.bytes for w in workers) < mb * 1e6:
        time.sleep(0.05)
    for w in workers:
        w.stop()
    put = sum(w.bytes for w in workers) / 1e6
    cpu, start = proc_cpu_faults(server.proc.pid)[0], time.monotonic()
    server.action("alter_table", {"table": table, "changes": [
        {"op": "set_properties", "properties": {"lake.enabled": "true"}}]})
    while lake_state(server, table).get("lag_rows", 0) == 0 and time.monotonic() - start < 5:
        time.sleep(0.02)  # until the lake counts the lag
    wait_tiered(server, table, 600)
    seconds = time.monotonic() - start
    used = proc_cpu_faults(server.proc.pid)[0] - cpu
    while (fresh_files(lake_state(server, table)["metadata_location"]) > 0 and
           time.monotonic() - start < 900):
        time.sleep(1)
    rewritten = proc_cpu_faults(server.proc.pid)[0] - cpu
    drop(server, [table])
    return {"mb": put, "seconds": seconds, "mb_s": put / seconds,
            "cpu_ms_per_mb": 1000 * used / put, "rewritten_cpu_ms_per_mb": 1000 * rewritten / put,
            "rewritten_seconds": time.monotonic() - start}


def mem_free_mb() -> float:
    """MemFree of /proc/meminfo, MB."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemFree:"):
                return int(line.split()[1]) / 1024
    return 0.0


def free_mb_at_start(ballast: str) -> float:
    """Reads `ballast` (if given) through the page cache, so free memory is low when a run starts:
    its log then gets page-cache pages by reclaim, not from free memory a VM with free page
    reporting has handed back to its host (bench.md, "Free page reporting"). Returns the free
    memory left."""
    if ballast:
        with open(ballast, "rb", buffering=0) as f:
            while f.read(8 << 20):
                pass
    return mem_free_mb()


def flat_out_pairs(server: Oxbowd, args) -> list:
    """--ratio-runs flat-out pairs: a run with tiering off, then one with it on; after the "on"
    run it waits (up to 120 s; not in --quick) until that table is tiered, and then drops both
    tables, which also ends the "on" table's maintenance. So no run shares the machine with an
    earlier run's tiering or compaction (when "on" ran first, its table's compaction ran during
    some "off" runs and slowed them)."""
    ratios = []
    # --quick: 1.5 s runs, so their backlog does not lengthen oxbowd's stop (it waits for rounds).
    seconds = 1.5 if args.quick else args.seconds
    for run in range(args.ratio_runs):
        free_off = free_mb_at_start(args.page_cache_ballast)
        off = throughput(server, False, seconds, args.producers, run,
                         args.profile if args.flat_out_only and run == 0 else "")
        free_on = free_mb_at_start(args.page_cache_ballast)
        on = throughput(server, True, seconds, args.producers, run)
        drain = wait_tiered(server, on["table"], 0 if args.quick else 120)
        ratios.append(on["mb_s"] / off["mb_s"])
        # A pair writes 10-20 GB (log and lake); three of them filled this machine's disk.
        drop(server, [on["table"], off["table"]])
        print(f"  produce flat out, run {run + 1}: tiering on {on['mb_s']:.0f} MB/s, "
              f"off {off['mb_s']:.0f} MB/s, ratio on/off {ratios[-1]:.2f}; CPU ms per MB "
              f"oxbowd {on['server_ms_per_mb']:.2f} / {off['server_ms_per_mb']:.2f}, producers "
              f"{on['client_ms_per_mb']:.2f} / {off['client_ms_per_mb']:.2f}; lake caught up "
              f"{drain:.1f} s after the on run; free memory at the start {free_on:.0f} / "
              f"{free_off:.0f} MB")
        print(f"    acks on / off: p50 {on['ack_ms'][0]:.2f} / {off['ack_ms'][0]:.2f} ms, p99 "
              f"{on['ack_ms'][1]:.2f} / {off['ack_ms'][1]:.2f} ms at the client; oxbowd's "
              f"receipt to ack {on['server_ack_ms']:.2f} / {off['server_ack_ms']:.2f} ms, of "
              f"which the log's fsync {on['fsync_ms']:.2f} / {off['fsync_ms']:.2f} ms (means)")
        for name, share in off.get("profile", []):
            print(f"    profile of the off run: {name}: {100 * share:.1f}%")
    print(f"  produce flat out: ratio on/off median {statistics.median(ratios):.2f}, "
          f"{sum(r >= 0.9 for r in ratios)}/{len(ratios)} runs >= 0.9")
    return ratios


def metadata_version(location: str | None) -> int:
    """N of the vN.metadata.json at `location`: every commit (appends and maintenance) adds one."""
    return int(pathlib.Path(location).name.split(".")[0][1:]) if location else 0


def metadata_footprint(location: str) -> dict:
    table = StaticTable.from_metadata(location)
    snapshot = table.current_snapshot()
    manifests = snapshot.manifests(table.io) if snapshot else []
    metadata_dir = pathlib.Path(location).parent
    data_dir = metadata_dir.parent / "data"
    return {"data_files_live": len(table.scan().plan_files()),
            "data_files_on_disk": sum(1 for p in data_dir.rglob("*.parquet")),
            "manifests": len(manifests),
            "snapshots": len(table.metadata.snapshots),
            "metadata_json_bytes": os.path.getsize(location),
            "metadata_json_files": len(list(metadata_dir.glob("v*.metadata.json"))),
            "metadata_dir_files": sum(1 for _ in metadata_dir.iterdir())}


def round_write_ms(log_path: pathlib.Path, skip_lines: int) -> tuple[list[float], int]:
    """The "write and commit" milliseconds of the rounds oxbowd logged (at --log-level debug)
    after its first `skip_lines` lines; and the lines read so far."""
    lines = log_path.read_text(errors="replace").splitlines()
    found = [float(m.group(1)) for line in lines[skip_lines:]
             if (m := re.search(r"round: .* write and commit (\d+) ms", line))]
    return found, len(lines)


def soak(workdir: pathlib.Path, args) -> dict:
    """Commits at --soak-freshness-ms with maintenance every second until --soak-commits
    metadata versions exist or --soak-seconds passed; prints the lake's footprint every
    --soak-sample-seconds."""
    data = pathlib.Path(tempfile.mkdtemp(prefix="oxbow-lake-soak-", dir=workdir))
    log_path = data / "oxbowd.log"
    expiry = (["--lake-snapshot-max-age-ms", str(args.soak_snapshot_max_age_ms)]
              if args.soak_snapshot_max_age_ms > 0 else [])
    server = Oxbowd(data / "data", log_path,
                    extra_args=["--warehouse", str(data / "warehouse"),
                                "--lake-freshness-ms", str(args.soak_freshness_ms),
                                "--lake-maintenance-interval-ms", "1000", "--log-level", "debug",
                                *expiry])
    try:
        schema = make_schema()
        table = f"{TABLE}_soak"
        create(server, table, schema, lake=True)
        workers = [Producer(server.address, table, schema, 2.0 / args.producers, i, args.producers)
                   for i in range(args.producers)]
        start = time.time()
        next_sample, log_lines = start + args.soak_sample_seconds, 0

        def done() -> bool:
            if args.soak_seconds > 0:
                return time.time() - start >= args.soak_seconds
            location = lake_state(server, table)["metadata_location"]
            return metadata_version(location) >= args.soak_commits

        if args.soak_sample_seconds > 0:
            print("  soak: minutes, metadata version, live data files, data files on disk, "
                  "manifests, snapshots, metadata.json KB, files in metadata/, one pyiceberg load "
                  "ms, rounds' write+commit median/max ms since the last line, RSS MB, load average")
        while not done():
            time.sleep(0.5)
            if args.soak_sample_seconds > 0 and time.time() >= next_sample:
                next_sample += args.soak_sample_seconds
                location = lake_state(server, table)["metadata_location"]
                load_start = time.time()
                f = metadata_footprint(location)
                load_ms = 1000 * (time.time() - load_start)
                rounds, log_lines = round_write_ms(log_path, log_lines)
                rounds_text = (f"{statistics.median(rounds):.0f}/{max(rounds):.0f}" if rounds
                               else "-")
                print(f"  soak: {(time.time() - start) / 60:5.1f} min  v{metadata_version(location)}"
                      f"  {f['data_files_live']}  {f['data_files_on_disk']}  {f['manifests']}"
                      f"  {f['snapshots']}  {f['metadata_json_bytes'] / 1e3:.1f}"
                      f"  {f['metadata_dir_files']}  {load_ms:.0f}  {rounds_text}"
                      f"  {proc_status(server.proc.pid, 'VmRSS') / 1e6:.0f}"
                      f"  {os.getloadavg()[0]:.1f}", flush=True)
        for w in workers:
            w.stop()
        elapsed = time.time() - start
        deadline = time.time() + 30
        while lake_state(server, table)["lag_rows"] and time.time() < deadline:
            time.sleep(0.1)
        state = lake_state(server, table)
        footprint = metadata_footprint(state["metadata_location"])
        footprint.update({"commits": metadata_version(state["metadata_location"]),
                          "seconds": elapsed,
                          "rss_mb": proc_status(server.proc.pid, "VmRSS") / 1e6,
                          "anon_mb": proc_status(server.proc.pid, "RssAnon") / 1e6})
        return footprint
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)


def main() -> int:
    # A kill runs the `finally` blocks too: they stop oxbowd and delete its data, tens of GB.
    signal.signal(signal.SIGTERM, lambda signum, _: sys.exit(128 + signum))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="seconds, not minutes (CI)")
    parser.add_argument("--rates", default="50,100", help="MB/s, comma-separated")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument("--ratio-runs", type=int, default=3,
                        help="flat-out tiering on/off pairs (the target holds in every one)")
    parser.add_argument("--catch-up-mb", type=float, default=0,
                        help="put this many MB with the lake off, turn it on and print the "
                             "tiering's CPU per MB while it catches up (0: skip)")
    parser.add_argument("--mixed-tables", type=int, default=20,
                        help="tables of the mixed run: one hot, the rest trickling (0: skip)")
    parser.add_argument("--mixed-hot-rate", type=float, default=80, help="MB/s into the hot table")
    parser.add_argument("--soak-commits", type=int, default=3600)
    parser.add_argument("--soak-seconds", type=float, default=0,
                        help="soak for this long instead of --soak-commits commits")
    parser.add_argument("--soak-freshness-ms", type=int, default=100)
    parser.add_argument("--soak-snapshot-max-age-ms", type=int, default=5000,
                        help="snapshot expiry in the soak (0: oxbowd's default)")
    parser.add_argument("--soak-sample-seconds", type=float, default=0,
                        help="print the lake's footprint this often during the soak")
    parser.add_argument("--soak-only", action="store_true", help="skip all but the soak")
    parser.add_argument("--flat-out-only", action="store_true",
                        help="only the --ratio-runs flat-out on/off pairs (no soak)")
    parser.add_argument("--workdir", default=str(REPO_ROOT / "build"))
    parser.add_argument("--profile", default="",
                        help="perf-record oxbowd during the last --rates run into this file and "
                             "print where the tiering's CPU goes; with --flat-out-only, during "
                             "the first run without tiering: where the produce path's goes "
                             "(needs perf)")
    parser.add_argument("--page-cache-ballast", default="",
                        help="a large file read before each flat-out run, so both runs of a "
                             "pair start with little free memory (bench.md, \"Free page "
                             "reporting\")")
    parser.add_argument("--oxbowd-arg", action="append", default=[],
                        help="extra oxbowd flag, e.g. --oxbowd-arg=--log-level=debug")
    args = parser.parse_args()
    if args.quick:
        args.rates, args.seconds, args.soak_commits = "5", 3, 30
        args.ratio_runs, args.mixed_tables, args.mixed_hot_rate = 1, 3, 5
    if args.flat_out_only:
        args.rates, args.mixed_tables = "", 0
    payload_pool()  # before the clock starts
    workdir = pathlib.Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if not args.soak_only and run_freshness_and_throughput(workdir, args) != 0:
        return 1
    if args.flat_out_only:
        return 0
    s = soak(workdir, args)
    print(f"lake_bench: after {s['commits']} commits at {args.soak_freshness_ms} ms freshness "
          f"({s['seconds']:.0f} s): "
          f"{s['data_files_live']} live data files ({s['data_files_on_disk']} on disk), "
          f"{s['manifests']} manifests, {s['snapshots']} snapshots, metadata.json "
          f"{s['metadata_json_bytes']} bytes, {s['metadata_json_files']} metadata versions kept, "
          f"{s['metadata_dir_files']} files in metadata/, RSS {s['rss_mb']:.0f} MB "
          f"({s['anon_mb']:.0f} MB anonymous)")
    return 0


def run_freshness_and_throughput(workdir: pathlib.Path, args) -> int:
    data = pathlib.Path(tempfile.mkdtemp(prefix="oxbow-lake-", dir=workdir))
    server = Oxbowd(data / "data", data / "oxbowd.log",
                    extra_args=["--warehouse", str(data / "warehouse"), *args.oxbowd_arg])
    rss = RssSampler(server.proc.pid)
    try:
        rates = [float(r) for r in args.rates.split(",") if r]
        if rates:
            print(f"lake_bench: ack -> visible in a fresh pyiceberg scan "
                  f"({args.producers} producers, 1 MB batches, freshness 1 s)")
        for i, rate in enumerate(rates):
            r = freshness(server, rate, args.seconds, args.producers,
                          args.profile if i == len(rates) - 1 else "")
            print(f"  {r['rate_target_mb_s']:5.0f} MB/s target ({r['rate_mb_s']:.1f} achieved): "
                  f"p50 {r['p50_ms']:.0f} ms, p99 {r['p99_ms']:.0f} ms, max {r['max_ms']:.0f} ms "
                  f"over {r['visible']}/{r['batches']} batches; poll {r['poll_ms']:.0f} ms "
                  f"(p99 to the commit {r['p99_commit_ms']:.0f} ms, to the scan's end "
                  f"{r['p99_scan_end_ms']:.0f} ms); then "
                  f"{r['data_files']} data files, {r['fresh_files']} of them fresh")
            for name, share in r.get("profile", []):
                print(f"    profile: {name}: {100 * share:.1f}%")
        if args.mixed_tables > 0:
            mixed = mixed_load(server, args.mixed_hot_rate, args.mixed_tables - 1, args.seconds,
                               args.producers)
            print(f"  mixed load: {args.mixed_tables} tables, one at {args.mixed_hot_rate:.0f} MB/s, "
                  f"{args.mixed_tables - 1} getting a 100 KB batch per second (ack -> visible):")
            for r in mixed:
                print(f"    {r['table']:24s} {r['rate_mb_s']:6.1f} MB/s: p50 {r['p50_ms']:5.0f} ms, "
                      f"p99 {r['p99_ms']:5.0f} ms over {r['visible']}/{r['batches']} batches; "
                      f"poll {r['poll_ms']:.0f} ms (p99 to the commit {r['p99_commit_ms']:.0f} ms, "
                      f"to the scan's end {r['p99_scan_end_ms']:.0f} ms)")
            worst = max(mixed, key=lambda r: r["p99_ms"])
            print(f"  mixed load: worst p99 {worst['p99_ms']:.0f} ms ({worst['table']})")
        if args.catch_up_mb > 0:
            c = catch_up(server, args.catch_up_mb, args.producers)
            print(f"  tiering alone: {c['mb']:.0f} MB put with the lake off, then caught up in "
                  f"{c['seconds']:.1f} s ({c['mb_s']:.0f} MB/s), oxbowd CPU "
                  f"{c['cpu_ms_per_mb']:.2f} ms per MB; with every fresh file rewritten "
                  f"({c['rewritten_seconds']:.0f} s): {c['rewritten_cpu_ms_per_mb']:.2f} ms per MB")
        if args.ratio_runs > 0:
            flat_out_pairs(server, args)
        print(f"  oxbowd RSS peak {rss.stop() / 1e6:.0f} MB, of which anonymous now "
              f"{proc_status(server.proc.pid, 'RssAnon') / 1e6:.0f} MB (the rest is mapped log "
              f"segments: page cache)")
    finally:
        code = server.stop()
        shutil.rmtree(data, ignore_errors=True)
    if code != 0:
        print(f"lake_bench: oxbowd exited {code}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
