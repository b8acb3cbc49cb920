#!/usr/bin/env python3
"""Cold-log DoGet beside local-log DoGet: one oxbowd whose warehouse is in the bucket of the test
S3 server on 127.0.0.1 (tests/oxbowtest/s3_server.py: --server moto, moto_server, the default; or
versitygw, the Versity S3 Gateway that scripts/install_versitygw.sh builds) holds two tables with
the same rows.
Table `cold` has log.local.retention 1ms, so its sealed segments move to S3; table `local` keeps
them on disk. Runs alternate a full DoGet of the same offsets (every sealed segment) on each, so
both see the same machine load.

    python bench/cold_log_bench.py [--server moto|versitygw] [--mib 64] [--runs 5] [--cache-mib 32]
                                   [--local-warehouse] [--perf FILE]

--cache-mib (the --cold-log-cache-bytes of oxbowd) is kept below the data so every cold run
fetches its bytes from S3 again rather than from the cache. Prints MB/s (Arrow buffer bytes
received) per run, the medians, the ratio cold / local, oxbowd's minor page faults and CPU time
(all threads) per DoGet, the S3 server's CPU time per cold DoGet and the client's per DoGet
(medians), and oxbowd's peak and current RSS. With S3 each run also GETs the cold objects whole
with boto3 (1 and 4 threads), the best a client gets from that server, and prints it as the
ceiling beside local DoGet.
--local-warehouse puts the warehouse (and so the cold segments) in a local directory instead of
S3: the cold path's own cost without the S3 server's.
--perf FILE: after the timed runs, `perf record -g` of oxbowd (and the S3 server) during three
more cold DoGets, into FILE (oxbowd) and FILE.server; read them with `perf report -i FILE`.
Binaries come from $OXBOW_BUILD_DIR (default <repo>/build/release).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.flight as fl

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from oxbowtest import s3_server  # noqa: E402
from oxbowtest.server import OxbowServer, oxbowd_binary  # noqa: E402

MIB = 1 << 20
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                    pa.field("v", pa.float64()), pa.field("w", pa.int64())])
BATCH_ROWS = 8192


def batch(first: int) -> pa.RecordBatch:
    ids = pa.array(range(first, first + BATCH_ROWS), pa.int64())
    return pa.record_batch([ids, pa.array([f"name-{i:012d}" for i in range(first, first + BATCH_ROWS)]),
                            pa.array([i * 0.5 for i in range(BATCH_ROWS)]), ids], schema=SCHEMA)


def rss_kib(pid: int) -> dict[str, int]:
    status = pathlib.Path(f"/proc/{pid}/status").read_text()
    return {k: int(line.split()[1]) for line in status.splitlines()
            for k in ("VmRSS", "VmHWM") if line.startswith(k + ":")}


def proc_stat(pid: int) -> tuple[int, float]:
    """The process's minor page faults so far (/proc/PID/stat field 10) and the CPU seconds its
    live threads have run (the sum of /proc/PID/task/*/schedstat: nanoseconds, unlike the
    10 ms ticks of /proc/PID/stat)."""
    stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    cpu_ns = 0
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            cpu_ns += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # the thread ended
    return int(stat[stat.rindex(")") + 2:].split()[7]), cpu_ns / 1e9


def timed_read(client, table: str, end: int) -> float:
    ticket = fl.Ticket(json.dumps({"table": table, "bucket": 0, "from": 0, "to": end}).encode())
    start = time.perf_counter()
    nbytes = rows = 0
    for chunk in client.do_get(ticket):
        nbytes += chunk.data.nbytes
        rows += chunk.data.num_rows
    elapsed = time.perf_counter() - start
    if rows != end:
        raise SystemExit(f"{table}: read {rows} rows, expected {end}")
    return nbytes / elapsed / 1e6


def boto3_read(s3, keys: list[str], threads: int) -> float:
    """MB/s of GETs of whole objects by boto3 on `threads` threads: the best pattern against
    moto_server (its cost per GET grows with the object, not the range) and no worse against
    versitygw, so the ceiling."""
    client = s3.client()
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        nbytes = sum(pool.map(lambda k: len(client.get_object(Bucket=s3.bucket, Key=k)["Body"]
                                            .read()), keys))
    return nbytes / (time.perf_counter() - start) / 1e6


def profile(path: pathlib.Path, pids: dict[str, int], work) -> None:
    """`perf record -g` of each process in `pids` (suffix of the output file -> pid) while
    `work()` runs."""
    recorders = [subprocess.Popen(["perf", "record", "-g", "-F", "999", "-o", f"{path}{suffix}",
                                   "-p", str(pid)], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) for suffix, pid in pids.items()]
    time.sleep(1)  # perf attaches
    print(f"profiled cold DoGets: {', '.join(f'{r:.1f}' for r in work())} MB/s", flush=True)
    for recorder in recorders:
        recorder.send_signal(2)  # SIGINT: perf writes its file and exits
        recorder.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=64, help="data per table")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cache-mib", type=int, default=32)
    parser.add_argument("--local-warehouse", action="store_true")
    parser.add_argument("--server", choices=s3_server.KINDS, default="moto")
    parser.add_argument("--perf", type=pathlib.Path, help="perf.data of extra cold DoGets")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        s3 = s3_server.start(tmp / f"{args.server}.log", kind=args.server)
        os.environ.update(s3.env())
        server = OxbowServer(oxbowd_binary(), tmp / "data",
                             tmp / "oxbowd.log",
                             ("--warehouse", str(tmp / "warehouse") if args.local_warehouse
                              else f"s3://{s3.bucket}/bench", "--segment-bytes",
                              str(8 * MIB), "--cold-log-check-ms", "200",
                              "--cold-log-cache-bytes", str(args.cache_mib * MIB)))
        try:
            server.start()
            client = server.client
            for name, props in (("cold", {"log.local.retention": "1ms"}), ("local", {})):
                server.create_table(f"bench.{name}", SCHEMA, buckets=1,
                                    properties={"lake.enabled": "false", **props})
            batches = [batch(i * BATCH_ROWS)
                       for i in range(max(1, args.mib * MIB // batch(0).nbytes))]
            for name in ("cold", "local"):
                for i in range(0, len(batches), 16):
                    server.put(f"bench.{name}", batches[i:i + 16])
            deadline = time.monotonic() + 600
            while True:
                b = server.describe("bench.cold")["bucket_offsets"][0]
                if b["local_segments"] == 1 and b["cold"]["segments"] > 0:
                    break
                if time.monotonic() > deadline:
                    raise SystemExit(f"segments never went cold: {b}")
                time.sleep(0.2)
            # The offsets both tables hold in sealed segments: the cold ones of `cold`.
            local_status = server.describe("bench.local")["bucket_offsets"][0]
            cold_status = server.describe("bench.cold")["bucket_offsets"][0]
            pid = server.proc.pid
            print(f"{cold_status['cold']['segments']} cold segments, "
                  f"{cold_status['cold']['bytes'] / MIB:.1f} MiB in the cold store; local table "
                  f"{local_status['local_segments']} segments", flush=True)
            # Where the cold offsets end: the base offset of the cold table's one local segment.
            cold_id = server.describe("bench.cold")["table_id"]
            end = min(int(p.stem) for p in
                      (tmp / "data" / "tables" / str(cold_id) / "0").glob("*.log"))
            cold_keys = [] if args.local_warehouse else sorted(
                o["Key"] for o in s3.client().list_objects_v2(
                    Bucket=s3.bucket, Prefix=f"bench/_log/{cold_id}/0/")["Contents"]
                if o["Key"].endswith(".log"))
            runs = {"cold": [], "local": [], "boto3 1": [], "boto3 4": []}
            faults = {"cold": [], "local": []}
            cpu = {"cold": [], "local": [], "server": [],  # CPU ms per DoGet
                   "client cold": [], "client local": []}
            for run in range(args.runs):
                for name in ("cold", "local"):
                    before, cpu_before = proc_stat(pid)
                    server_cpu_before = proc_stat(s3.proc.pid)[1]
                    client_cpu_before = time.process_time()
                    runs[name].append(timed_read(client, f"bench.{name}", end))
                    cpu[f"client {name}"].append((time.process_time() - client_cpu_before) * 1e3)
                    after, cpu_after = proc_stat(pid)
                    faults[name].append(after - before)
                    cpu[name].append((cpu_after - cpu_before) * 1e3)
                    if name == "cold":
                        cpu["server"].append((proc_stat(s3.proc.pid)[1] - server_cpu_before) * 1e3)
                for threads in (1, 4) if cold_keys else ():
                    runs[f"boto3 {threads}"].append(boto3_read(s3, cold_keys, threads))
                print(f"run {run}: " + ", ".join(f"{k} {v[-1]:.1f} MB/s"
                                                 for k, v in runs.items() if v), flush=True)
            med = {k: statistics.median(v) for k, v in runs.items() if v}
            rss = rss_kib(pid)
            s3_rss = rss_kib(s3.proc.pid)
            if args.perf:
                profile(args.perf, {"": pid, ".server": s3.proc.pid},
                        lambda: [timed_read(client, "bench.cold", end) for _ in range(3)])
            print(f"DoGet of offsets [0, {end}) ({args.mib} MiB a table): cold {med['cold']:.1f} "
                  f"MB/s, local {med['local']:.1f} MB/s, ratio {med['cold'] / med['local']:.2f}")
            if cold_keys:
                best = max(med["boto3 1"], med["boto3 4"])
                print(f"boto3 GETs of the {len(cold_keys)} cold objects, whole, from the same "
                      f"server: {med['boto3 1']:.1f} MB/s (1 thread), {med['boto3 4']:.1f} MB/s "
                      f"(4 threads); the server's ceiling / local DoGet {best / med['local']:.2f}, "
                      f"cold DoGet / ceiling {med['cold'] / best:.2f}")
            print(f"per DoGet (medians): oxbowd minor page faults cold "
                  f"{statistics.median(faults['cold']):.0f}, local "
                  f"{statistics.median(faults['local']):.0f}; oxbowd CPU ms cold "
                  f"{statistics.median(cpu['cold']):.0f}, local {statistics.median(cpu['local']):.0f}; "
                  f"{args.server} CPU ms during a cold DoGet {statistics.median(cpu['server']):.0f}; "
                  f"client (pyarrow) CPU ms cold {statistics.median(cpu['client cold']):.0f}, "
                  f"local {statistics.median(cpu['client local']):.0f}")
            print(f"oxbowd RSS {rss['VmRSS'] / 1024:.0f} MiB (peak {rss['VmHWM'] / 1024:.0f} MiB), "
                  f"cold cache {args.cache_mib} MiB, cold store "
                  f"{'a local directory' if args.local_warehouse else f'S3 ({args.server})'}; "
                  f"{args.server} RSS {s3_rss['VmRSS'] / 1024:.0f} MiB "
                  f"(peak {s3_rss['VmHWM'] / 1024:.0f} MiB)")
        finally:
            if server.proc is not None:
                server.stop()
            s3.stop()


if __name__ == "__main__":
    main()
