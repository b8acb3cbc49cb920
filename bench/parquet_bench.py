#!/usr/bin/env python3
"""Parquet write and read: Oxbow (bench/parquet_bench, C++) and pyarrow.parquet side by side.

    python bench/parquet_bench.py [--quick] [--reps 3] [--rounds 2] [--codecs zstd,snappy]

The C++ program generates the 20-column dataset of bench/datagen.h as an uncompressed Arrow IPC
file (about 1 GB; --quick: about 3 MB); pyarrow reads that file. For each codec (ZSTD level 1,
SNAPPY) both sides write the same batches into memory with ONE thread, dictionary encoding on,
the same row-group size (--row-group-rows, default 1Mi rows, pyarrow's default), data pages of
1 MiB / 20,000 rows (both defaults), statistics on. Both readers then read pyarrow's file and
Oxbow's file from memory, all columns, single-threaded (pyarrow: read_table(use_threads=False),
cpu and io thread counts 1). Each timing is the best of --reps runs in each of --rounds rounds
that alternate Oxbow and pyarrow. MB/s = the dataset's Arrow size (Table.nbytes, 10^6 bytes)
over time. Oxbow's files are checked to read back in pyarrow equal to the dataset.

The C++ binary is $OXBOW_BUILD_DIR/bench/parquet_bench (default: <repo>/build/release).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def build_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("OXBOW_BUILD_DIR", REPO_ROOT / "build" / "release"))


def run_cpp(args: list[str]) -> list[dict]:
    binary = build_dir() / "bench" / "parquet_bench"
    if not binary.is_file():
        sys.exit(f"parquet_bench.py: {binary} not found: build the parquet_bench target or set OXBOW_BUILD_DIR")
    proc = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"parquet_bench.py: {binary.name} exited {proc.returncode}: {proc.stderr.strip()}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def timed(reps: int, fn) -> float:
    """Best of `reps` runs of fn(); whatever fn returns is freed outside the clock."""
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        keep = fn()
        best = min(best, time.perf_counter() - start)
        del keep
    return best


def pa_write(table: pa.Table, codec: str, row_group_rows: int) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=codec, compression_level=1 if codec == "zstd" else None,
                   use_dictionary=True, row_group_size=row_group_rows, write_statistics=True)
    return sink.getvalue()


def pa_read(buf: pa.Buffer) -> pa.Table:
    return pq.read_table(pa.BufferReader(buf), use_threads=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a few MB, one round, one rep")
    parser.add_argument("--reps", type=int, help="timed repetitions per measurement and round (default 3)")
    parser.add_argument("--rounds", type=int, help="alternating Oxbow/pyarrow rounds (default 2)")
    parser.add_argument("--batches", type=int, help="record batches (default 82; quick 2)")
    parser.add_argument("--rows", type=int, help="rows per batch (default 65536; quick 8192)")
    parser.add_argument("--row-group-rows", type=int, default=1 << 20, help="rows per row group (default 1Mi)")
    parser.add_argument("--codecs", default="zstd,snappy")
    parser.add_argument("--workdir", help="where the data files go (default: a temp dir, removed)")
    args = parser.parse_args()
    reps = args.reps or (1 if args.quick else 3)
    rounds = args.rounds or (1 if args.quick else 2)
    batches_n = args.batches or (2 if args.quick else 82)
    rows = args.rows or (8192 if args.quick else 65536)
    codecs = args.codecs.split(",")

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)

    with tempfile.TemporaryDirectory(prefix="oxbow-parquet-bench-", dir=args.workdir) as tmp:
        tmp = pathlib.Path(tmp)
        data_path = tmp / "data.arrow"
        run_cpp(["generate", "--out", data_path, "--batches", batches_n, "--rows", rows])
        table = ipc.open_file(pa.OSFile(str(data_path)).read_buffer()).read_all()
        logical = table.nbytes

        # pyarrow's files, written once before the clock: what both readers read.
        py_files, py_paths = {}, {}
        for codec in codecs:
            py_files[codec] = pa_write(table, codec, args.row_group_rows)
            py_paths[codec] = tmp / f"pyarrow-{codec}.parquet"
            py_paths[codec].write_bytes(py_files[codec])
        ox_paths = {codec: tmp / f"oxbow-{codec}.parquet" for codec in codecs}

        ox, py, info = {}, {}, {}

        def best(acc, key, value):
            acc[key] = min(acc.get(key, float("inf")), value)

        for r in range(rounds):
            for codec in codecs:
                # Round 0 writes Oxbow's file; from then on both readers read it too.
                reads = [py_paths[codec]] + ([ox_paths[codec]] if ox_paths[codec].exists() else [])
                for rec in run_cpp(["--input", data_path, "--codec", codec, "--reps", reps,
                                    "--row-group-rows", args.row_group_rows,
                                    "--write-out", ox_paths[codec],
                                    "--read", ",".join(map(str, reads))]):
                    if rec["op"] == "write":
                        best(ox, ("write", codec), rec["best"])
                        info[("ox_size", codec)] = rec["bytes"]
                        info[("ox_row_groups", codec)] = rec["row_groups"]
                    elif rec["op"] == "read":
                        who = "pyarrow_file" if rec["path"] == str(py_paths[codec]) else "oxbow_file"
                        best(ox, ("read", who, codec), rec["best"])
                        if rec["rows"] != table.num_rows:
                            sys.exit(f"parquet_bench.py: Oxbow read {rec['rows']} rows of {rec['path']}, "
                                     f"expected {table.num_rows}")
                ox_file = pa.py_buffer(ox_paths[codec].read_bytes())
                if r == 0:
                    # Oxbow's file must read back in pyarrow as the dataset (a guard for the timings).
                    back = pa_read(ox_file)
                    if not back.equals(table):
                        sys.exit(f"parquet_bench.py: pyarrow reads Oxbow's {codec} file differently "
                                 f"from the dataset")
                    info[("py_row_groups", codec)] = pq.ParquetFile(pa.BufferReader(py_files[codec])).num_row_groups
                    del back
                best(py, ("write", codec), timed(reps, lambda: pa_write(table, codec, args.row_group_rows)))
                best(py, ("read", "pyarrow_file", codec), timed(reps, lambda: pa_read(py_files[codec])))
                if r > 0 or rounds == 1:
                    best(py, ("read", "oxbow_file", codec), timed(reps, lambda: pa_read(ox_file)))
        if rounds == 1:
            # With one round Oxbow's reader never saw its own file: read it once more.
            for codec in codecs:
                for rec in run_cpp(["--input", data_path, "--codec", codec, "--reps", reps,
                                    "--row-group-rows", args.row_group_rows,
                                    "--read", ox_paths[codec]]):
                    if rec["op"] == "read":
                        best(ox, ("read", "oxbow_file", codec), rec["best"])

    mb = logical / 1e6
    print(f"dataset: {table.num_rows} rows x {table.num_columns} columns in {batches_n} batches, "
          f"{mb:.1f} MB of Arrow data; row groups of {args.row_group_rows} rows; dictionary on; "
          f"best of {reps} reps x {rounds} rounds; pyarrow {pa.__version__}, one thread each")
    print()
    print("| operation | codec | Oxbow MB/s | pyarrow MB/s | Oxbow/pyarrow |")
    print("|---|---|---:|---:|---:|")
    ratios = []

    def line(label, codec, ox_s, py_s):
        ratio = py_s / ox_s
        print(f"| {label} | {codec} | {mb / ox_s:,.0f} | {mb / py_s:,.0f} | {ratio:.2f} |")
        ratios.append((label, codec, ratio))

    for codec in codecs:
        line("write", codec, ox[("write", codec)], py[("write", codec)])
    for codec in codecs:
        line("read pyarrow's file", codec, ox[("read", "pyarrow_file", codec)],
             py[("read", "pyarrow_file", codec)])
    for codec in codecs:
        line("read Oxbow's file", codec, ox[("read", "oxbow_file", codec)],
             py[("read", "oxbow_file", codec)])
    print()
    print("| codec | Oxbow file bytes | pyarrow file bytes | Oxbow/pyarrow | row groups (Oxbow, pyarrow) |")
    print("|---|---:|---:|---:|---|")
    for codec in codecs:
        ox_size, py_size = info[("ox_size", codec)], py_files[codec].size
        print(f"| {codec} | {ox_size:,} | {py_size:,} | {ox_size / py_size:.3f} "
              f"| {info[('ox_row_groups', codec)]}, {info[('py_row_groups', codec)]} |")
    print()
    targets = {"write": (">=", 1.0), "read pyarrow's file": (">=", 0.8), "read Oxbow's file": (">=", 0.8)}
    for label, codec, ratio in ratios:
        op, bound = targets[label]
        verdict = "meets" if ratio >= bound else "MISSES"
        print(f"ratio oxbow/pyarrow {label} [{codec}]: {ratio:.2f} ({verdict} target {op} {bound})")
    for codec in codecs:
        size_ratio = info[("ox_size", codec)] / py_files[codec].size
        verdict = "meets" if size_ratio <= 1.05 else "MISSES"
        print(f"ratio oxbow/pyarrow file size [{codec}]: {size_ratio:.3f} ({verdict} target <= 1.05)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
