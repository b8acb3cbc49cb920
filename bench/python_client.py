#!/usr/bin/env python3
"""The Python client (python/oxbow) beside raw pyarrow.flight, in one run on one oxbowd: an
append (DoPut) and a read (DoGet) of --gb GB each, with the times, the ratio client/raw and
the peak RSS of oxbowd and of this Python process.

    .venv/bin/python bench/python_client.py [--gb 1] [--rounds 5] [--workdir DIR]

oxbowd is $OXBOW_BUILD_DIR/tools/oxbowd (default <repo>/build/release), on a fresh data dir
under --workdir (default <repo>/build, the checkout's disk), with its default --flush fsync.
The data is one batch of 65,536 rows (int64, timestamp[us, tz=UTC], double, a 24-byte string,
int32; 3.7 MB of Arrow buffers) sent as many times as --gb needs; GB = 10^9 buffer bytes.
Each side appends into a one-bucket table of its own (lake off), keeping the client's number
of batches in flight; raw pyarrow reads with do_get(...).read_all(), the client with
Table.read(). Each round runs every measurement once, raw and client in alternating order; a
time is the best round's, a peak RSS the highest of all rounds; the ratio is given for the best
rounds and for the median ones (less at the mercy of one lucky round on a shared machine), and
the Python process's CPU time (user + system, median) shows what the client itself costs.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as fl

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "python"))
sys.path.insert(0, str(REPO_ROOT / "bench"))
import oxbow  # noqa: E402
from oxbow.table import PUT_WINDOW  # noqa: E402
from server_bench import Oxbowd, RssSampler, put_windowed  # noqa: E402

ROWS = 65_536
MB = 1e6


def make_batch() -> pa.RecordBatch:
    ids = pa.array(range(ROWS), pa.int64())
    return pa.record_batch({
        "id": ids,
        "ts": pc.add(ids, 1_764_000_000_000_000).cast(pa.timestamp("us", tz="UTC")),
        "price": pc.multiply(ids.cast(pa.float64()), 0.25),
        "customer": pa.array([f"customer-{i:015d}" for i in range(ROWS)]),
        "qty": pc.bit_wise_and(ids, 1023).cast(pa.int32()),
    })


def measure(run: Callable[[], object],
            server_pid: int) -> tuple[tuple[float, float, int, int], object]:
    """Seconds, CPU seconds of this process, peak RSS of oxbowd and of this process during
    run(); and its result."""
    server_rss, own_rss = RssSampler(server_pid), RssSampler(os.getpid())
    start, cpu_start = time.perf_counter(), time.process_time()
    result = run()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return (seconds, cpu, server_rss.stop(), own_rss.stop()), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=1.0, help="GB appended and read by each side")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workdir", default=str(REPO_ROOT / "build"),
                        help="parent of the temporary data dir (default <repo>/build)")
    args = parser.parse_args()
    batch = make_batch()
    batches = [batch] * max(1, round(args.gb * 1e9 / batch.nbytes))
    data_bytes = batch.nbytes * len(batches)
    pathlib.Path(args.workdir).mkdir(parents=True, exist_ok=True)
    results: dict[tuple[str, str], list[tuple[float, float, int, int]]] = {}
    with tempfile.TemporaryDirectory(prefix="oxbow-python-client-", dir=args.workdir) as tmp:
        server = Oxbowd(pathlib.Path(tmp) / "data", pathlib.Path(tmp) / "oxbowd.log")
        raw = fl.FlightClient(f"grpc://{server.address}")
        client = oxbow.connect(f"grpc://{server.address}")
        fields = [{"name": f.name, "type": str(f.type), "nullable": f.nullable}
                  for f in batch.schema]
        for r in range(args.rounds):
            tables = {side: f"bench.{side}_{r}" for side in ("raw", "client")}
            for table in tables.values():
                server.action("create_table", {"table": table, "schema": {"fields": fields},
                                               "properties": {"lake.enabled": "false"}})
            runs = {
                ("append", "raw"): lambda: put_windowed(raw, tables["raw"], batch.schema, batches,
                                                       PUT_WINDOW),
                ("append", "client"): lambda: client.table(tables["client"]).append(
                    pa.Table.from_batches(batches)),
                ("read", "raw"): lambda: raw.do_get(fl.Ticket(json.dumps(
                    {"table": tables["raw"]}).encode())).read_all(),
                ("read", "client"): lambda: client.table(tables["client"]).read(),
            }
            sides = ("raw", "client") if r % 2 == 0 else ("client", "raw")
            for operation in ("append", "read"):
                for side in sides:
                    figures, result = measure(runs[operation, side], server.proc.pid)
                    if operation == "read" and result.num_rows != len(batches) * ROWS:
                        sys.exit(f"python_client.py: the {side} read returned "
                                 f"{result.num_rows} rows, not {len(batches) * ROWS}")
                    del result
                    results.setdefault((operation, side), []).append(figures)
            for table in tables.values():
                server.action("drop_table", {"table": table})
        client.close()
        raw.close()
        if server.stop() != 0:
            sys.exit("python_client.py: oxbowd did not stop cleanly")

    print(f"data: {len(batches)} batches of {ROWS:,} rows, {data_bytes / MB:,.0f} MB; "
          f"{args.rounds} rounds; {PUT_WINDOW} batches in flight per put")
    print()
    print("| operation | raw pyarrow.flight (s; MB/s) | oxbow client (s; MB/s) | client/raw "
          "| client/raw, medians | Python CPU s, medians raw; client "
          "| oxbowd peak RSS raw; client (MB) | Python peak RSS raw; client (MB) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for operation in ("append", "read"):
        raw_runs, client_runs = results[operation, "raw"], results[operation, "client"]
        raw_s, client_s = min(r[0] for r in raw_runs), min(r[0] for r in client_runs)
        medians = (statistics.median(r[0] for r in client_runs) /
                   statistics.median(r[0] for r in raw_runs))
        print(f"| {operation} | {raw_s:.3f}; {data_bytes / MB / raw_s:,.0f} "
              f"| {client_s:.3f}; {data_bytes / MB / client_s:,.0f} | {client_s / raw_s:.3f} "
              f"| {medians:.3f} "
              f"| {statistics.median(r[1] for r in raw_runs):.3f}; "
              f"{statistics.median(r[1] for r in client_runs):.3f} "
              f"| {max(r[2] for r in raw_runs) / MB:,.0f}; {max(r[2] for r in client_runs) / MB:,.0f} "
              f"| {max(r[3] for r in raw_runs) / MB:,.0f}; {max(r[3] for r in client_runs) / MB:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
