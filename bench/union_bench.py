#!/usr/bin/env python3
"""Union read vs pyiceberg: the same lake snapshot read by oxbowd's union read (its own C++
Parquet reader, streamed over Arrow Flight) and by pyiceberg's scan (Arrow C++), side by side;
plus a pure log read of the same rows. Full rows and 2 of 20 columns.

    python bench/union_bench.py [--quick] [--rows 1000000] [--runs 5] [--buckets 2] [--workdir DIR]

A table of 20 columns (ints, doubles, timestamps, strings) gets --rows rows; once the lake holds
them all (no log tail: the union read is the lake snapshot only) each reader runs --runs times,
interleaved, every run in a fresh child process that reports its wall time and peak RSS (VmHWM).
Then a filtered read of the last 1% of ids (all columns): the union read's "filter" (lake files
and row groups pruned by their bounds) against pyiceberg's row_filter and a log read filtered by
pyarrow.compute in the client.
oxbowd's RSS is sampled during its reads. Ratio = pyiceberg's best time / the union read's best
(above 1: the union read is faster); medians are printed too. --quick: 20,000 rows, 1 run. Binaries come from $OXBOW_BUILD_DIR (default
<repo>/build/release).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as fl

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from server_bench import Oxbowd, RssSampler, metric_sum, proc_status  # noqa: E402

TABLE = "bench.union"
BATCH_ROWS = 50_000
PROJECTION = ["c03", "c12"]  # a double and a string


def make_schema() -> pa.Schema:
    fields = [pa.field("id", pa.int64(), nullable=False)]
    kinds = [pa.int64(), pa.int32(), pa.float64(), pa.float64(), pa.timestamp("us", tz="UTC"),
             pa.string()]
    for i in range(1, 20):
        fields.append(pa.field(f"c{i:02d}", kinds[i % len(kinds)]))
    return pa.schema(fields)


def make_batch(schema: pa.Schema, first: int, rows: int) -> pa.RecordBatch:
    ids = pa.array(range(first, first + rows), pa.int64())
    columns = [ids]
    for field in list(schema)[1:]:
        t = field.type
        if t == pa.string():
            columns.append(pa.array([f"s{(i * 7919) % 100000:08d}-{field.name}"
                                     for i in range(first, first + rows)]))
        elif pa.types.is_floating(t):
            columns.append(pa.array([(i % 1000) * 0.25 for i in range(first, first + rows)], t))
        elif pa.types.is_timestamp(t):
            columns.append(pa.array(range(1_700_000_000_000_000 + first,
                                          1_700_000_000_000_000 + first + rows), t))
        else:
            columns.append(pa.array([(i * 31) % 100000 for i in range(first, first + rows)], t))
    return pa.record_batch(columns, schema=schema)


def run_union(location: str, columns, min_id, out):
    client = fl.FlightClient(location)
    ticket = {"table": TABLE, "union": True}
    if columns:
        ticket["columns"] = columns
    if min_id is not None:
        ticket["filter"] = [{"column": "id", "op": ">=", "value": min_id}]
    start = time.perf_counter()
    table = client.do_get(fl.Ticket(json.dumps(ticket).encode())).read_all()
    seconds = time.perf_counter() - start
    out.put((seconds, table.num_rows, table.nbytes, proc_status(os.getpid(), "VmHWM")))


def run_pyiceberg(metadata_location: str, columns, min_id, out):
    from pyiceberg.table import StaticTable
    start = time.perf_counter()
    scan = StaticTable.from_metadata(metadata_location).scan(
        selected_fields=tuple(columns) if columns else ("*",),
        row_filter=f"id >= {min_id}" if min_id is not None else "True")
    table = scan.to_arrow()
    seconds = time.perf_counter() - start
    out.put((seconds, table.num_rows, table.nbytes, proc_status(os.getpid(), "VmHWM")))


def run_log(location: str, columns, min_id, out):
    client = fl.FlightClient(location)
    start = time.perf_counter()
    info = client.get_flight_info(fl.FlightDescriptor.for_path(*TABLE.split(".")))
    parts = []
    for ep in info.endpoints:
        ticket = json.loads(ep.ticket.ticket)
        if columns:
            ticket["columns"] = columns
        parts.append(client.do_get(fl.Ticket(json.dumps(ticket).encode())).read_all())
    table = pa.concat_tables(parts)
    if min_id is not None:
        table = table.filter(pc.greater_equal(table["id"], min_id))
    seconds = time.perf_counter() - start
    out.put((seconds, table.num_rows, table.nbytes, proc_status(os.getpid(), "VmHWM")))


def pruned(server: Oxbowd) -> str:
    """oxbow_union_read_pruned_total of the bench table, from oxbowd's metrics listener."""
    page = server.metrics()
    found = {unit: metric_sum(page, "oxbow_union_read_pruned_total",
                              f'table="{TABLE}",unit="{unit}"') for unit in ("file", "row_group")}
    return f"{found['file']:.0f} data files, {found['row_group']:.0f} row groups"


def in_child(target, *args):
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    p = ctx.Process(target=target, args=(*args, out))
    p.start()
    result = out.get()
    p.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--buckets", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="20,000 rows, one run (CI)")
    parser.add_argument("--workdir", default=None, help="temporary files go here")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.runs = 20_000, 1
    schema = make_schema()
    with tempfile.TemporaryDirectory(prefix="union-bench-", dir=args.workdir) as tmp:
        base = pathlib.Path(tmp)
        server = Oxbowd(base / "data", base / "oxbowd.log")
        try:
            fields = [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in schema]
            server.action("create_table", {"table": TABLE, "schema": {"fields": fields},
                                           "buckets": args.buckets})
            for first in range(0, args.rows, BATCH_ROWS):
                b = make_batch(schema, first, min(BATCH_ROWS, args.rows - first))
                writer, acks = server.client.do_put(
                    fl.FlightDescriptor.for_path(*TABLE.split(".")), schema)
                writer.write_batch(b)
                acks.read()
                writer.close()
            deadline = time.monotonic() + 300
            while True:
                described = server.action("describe_table", {"table": TABLE})
                if described["lake"]["lag_rows"] == 0:
                    break
                if time.monotonic() > deadline:
                    sys.exit(f"the lake did not catch up: {described['lake']}")
                time.sleep(0.2)
            # Compaction (every 10 s) must be done before the reads: pyiceberg reads the snapshot
            # pinned here, the union read the current one, and a compaction in between would
            # make them read different files. Settled: no new metadata over a whole interval.
            described = server.action("describe_table", {"table": TABLE})
            while True:
                time.sleep(11)
                again = server.action("describe_table", {"table": TABLE})
                if again["lake"]["metadata_location"] == described["lake"]["metadata_location"]:
                    break
                if time.monotonic() > deadline:
                    sys.exit("the lake's maintenance did not settle")
                described = again
            metadata = described["lake"]["metadata_location"]
            print(f"{args.rows} rows, {args.buckets} buckets, {described['lake']['data_files']} "
                  f"data files, lake snapshot {metadata}")
            location = f"grpc://{server.address}"
            print(f"oxbowd RSS before the reads {proc_status(server.proc.pid, 'VmRSS')/2**20:.0f} MiB "
                  f"(after ingest and tiering)")
            min_id = args.rows - args.rows // 100
            cases = (("all 20 columns", None, None), ("2 of 20 columns", PROJECTION, None),
                     (f"id >= {min_id} (1% of rows), all columns", None, min_id))
            for label, columns, filter_min in cases:
                want_rows = args.rows if filter_min is None else args.rows - filter_min
                times = {"union": [], "pyiceberg": [], "log": []}
                rss = {"union": 0, "pyiceberg": 0, "log": 0}
                server_rss = 0
                shape = {}
                for _ in range(args.runs):
                    for name in ("union", "pyiceberg", "log"):
                        sampler = RssSampler(server.proc.pid)
                        if name == "union":
                            result = in_child(run_union, location, columns, filter_min)
                        elif name == "pyiceberg":
                            result = in_child(run_pyiceberg, metadata, columns, filter_min)
                        else:
                            result = in_child(run_log, location, columns, filter_min)
                        peak = sampler.stop()
                        if name == "union":
                            server_rss = max(server_rss, peak)
                        seconds, rows, nbytes, hwm = result
                        assert rows == want_rows, f"{name} read {rows} rows, not {want_rows}"
                        shape[name] = nbytes
                        times[name].append(seconds)
                        rss[name] = max(rss[name], hwm)
                best = {k: min(v) for k, v in times.items()}
                med = {k: statistics.median(v) for k, v in times.items()}
                mb = shape["pyiceberg"] / 1e6
                print(f"\n{label} ({mb:.0f} MB of Arrow data), best (median) of {args.runs}:")
                for name in ("union", "pyiceberg", "log"):
                    print(f"  {name:10s} {best[name]*1000:7.0f} ms ({med[name]*1000:5.0f})  "
                          f"{want_rows/best[name]/1e6:6.2f} M rows/s  "
                          f"{shape[name]/1e6/best[name]:6.0f} MB/s  client peak RSS "
                          f"{rss[name]/2**20:5.0f} MiB")
                print(f"  oxbowd peak RSS during the union reads {server_rss/2**20:.0f} MiB")
                print(f"ratio union/pyiceberg {label}: {best['pyiceberg']/best['union']:.2f} "
                      f"(medians {med['pyiceberg']/med['union']:.2f})")
                print(f"ratio union/log {label}: {best['log']/best['union']:.2f}")
                if filter_min is not None:
                    from pyiceberg.table import StaticTable
                    planned = len(list(StaticTable.from_metadata(metadata).scan(
                        row_filter=f"id >= {filter_min}").plan_files()))
                    print(f"  the {args.runs} filtered union reads skipped "
                          f"{pruned(server)}; pyiceberg plans {planned} of "
                          f"{described['lake']['data_files']} data files")
        finally:
            server.stop()
    print("\nload:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
