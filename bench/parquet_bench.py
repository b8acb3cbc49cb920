#!/usr/bin/env python3
"""Parquet write and read: Oxbow (bench/parquet_bench, C++) and pyarrow.parquet side by side.

    python bench/parquet_bench.py [--quick] [--reps 3] [--rounds 2] [--codecs zstd,snappy]
                                  [--page-checksums on|off] [--baseline-build DIR] [--clock wall|cpu]

The C++ program generates the 20-column dataset of bench/datagen.h as an uncompressed Arrow IPC
file (about 1 GB; --quick: about 3 MB); pyarrow reads that file. For each codec (ZSTD level 1,
SNAPPY) both sides write the same batches into memory with ONE thread, dictionary encoding on,
the same row-group size (--row-group-rows, default 1Mi rows, pyarrow's default), data pages of
1 MiB / 20,000 rows (both defaults), statistics on, page checksums as --page-checksums says
(default on, Oxbow's default; pyarrow: write_page_checksum). Both readers then read pyarrow's
file and Oxbow's file from memory, all columns, single-threaded (pyarrow: read_table(
use_threads=False), cpu and io thread counts 1), verifying page checksums when they are on
(pyarrow: page_checksum_verification). Each timing is the best of --reps runs in each of
--rounds rounds that alternate Oxbow and pyarrow. MB/s = the dataset's Arrow size
(Table.nbytes, 10^6 bytes) over time: wall time, or with --clock cpu the process's CPU time
(Oxbow: CLOCK_PROCESS_CPUTIME_ID; pyarrow: time.process_time()), which on a machine shared
with other work measures the code rather than the queue for a core. Oxbow's files are checked to read back in pyarrow equal to
the dataset.

--baseline-build DIR also runs DIR/bench/parquet_bench, an older build of the C++ side, in the
same rounds (in alternating order with the current one, with its own defaults: it is given no
--page-checksums), and prints the current build against it: the before/after of a change.

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


def bench_binary(build: pathlib.Path) -> pathlib.Path:
    binary = build / "bench" / "parquet_bench"
    if not binary.is_file():
        sys.exit(f"parquet_bench.py: {binary} not found: build the parquet_bench target or set OXBOW_BUILD_DIR")
    return binary


def run_cpp(args: list[str], binary: pathlib.Path | None = None) -> list[dict]:
    binary = binary or bench_binary(build_dir())
    proc = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"parquet_bench.py: {binary.name} exited {proc.returncode}: {proc.stderr.strip()}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def timed(reps: int, fn, clock: str = "wall") -> float:
    """Best of `reps` runs of fn() on `clock`; whatever fn returns is freed outside the clock."""
    now = CLOCKS[clock]
    best = float("inf")
    for _ in range(reps):
        start = now()
        keep = fn()
        best = min(best, now() - start)
        del keep
    return best


def pa_write(table: pa.Table, codec: str, row_group_rows: int, checksums: bool) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=codec, compression_level=1 if codec == "zstd" else None,
                   use_dictionary=True, row_group_size=row_group_rows, write_statistics=True,
                   write_page_checksum=checksums)
    return sink.getvalue()


def pa_read(buf: pa.Buffer, checksums: bool) -> pa.Table:
    return pq.read_table(pa.BufferReader(buf), use_threads=False, page_checksum_verification=checksums)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a few MB, one round, one rep")
    parser.add_argument("--reps", type=int, help="timed repetitions per measurement and round (default 3)")
    parser.add_argument("--rounds", type=int, help="alternating Oxbow/pyarrow rounds (default 2)")
    parser.add_argument("--batches", type=int, help="record batches (default 82; quick 2)")
    parser.add_argument("--rows", type=int, help="rows per batch (default 65536; quick 8192)")
    parser.add_argument("--row-group-rows", type=int, default=1 << 20, help="rows per row group (default 1Mi)")
    parser.add_argument("--codecs", default="zstd,snappy")
    parser.add_argument("--page-checksums", choices=["on", "off"], default="on",
                        help="write and verify page CRCs, both sides (default on)")
    parser.add_argument("--baseline-build", help="an older build dir whose bench/parquet_bench runs alongside")
    parser.add_argument("--workdir", help="where the data files go (default: a temp dir, removed)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="time each run by the wall clock (default) or by the process's CPU "
                             "time, which a loaded machine's waits for a core do not inflate")
    args = parser.parse_args()
    reps = args.reps or (1 if args.quick else 3)
    rounds = args.rounds or (1 if args.quick else 2)
    batches_n = args.batches or (2 if args.quick else 82)
    rows = args.rows or (8192 if args.quick else 65536)
    codecs = args.codecs.split(",")
    checksums = args.page_checksums == "on"
    current = bench_binary(build_dir())
    baseline = bench_binary(pathlib.Path(args.baseline_build)) if args.baseline_build else None

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
            py_files[codec] = pa_write(table, codec, args.row_group_rows, checksums)
            py_paths[codec] = tmp / f"pyarrow-{codec}.parquet"
            py_paths[codec].write_bytes(py_files[codec])
        # The current build ("ox") and, with --baseline-build, the older one ("base").
        sides = {"ox": (current, ["--page-checksums", args.page_checksums])}
        if baseline:
            sides["base"] = (baseline, [])
        own_paths = {side: {codec: tmp / f"{side}-{codec}.parquet" for codec in codecs} for side in sides}
        ox_paths = own_paths["ox"]

        ox, base, py, info = {}, {}, {}, {}
        timings = {"ox": ox, "base": base}

        def best(acc, key, value):
            acc[key] = min(acc.get(key, float("inf")), value)

        def run_side(side, codec, write):
            """One run of a side's C++ program: write its file (if `write`), read pyarrow's and its own."""
            binary, extra = sides[side]
            own = own_paths[side][codec]
            reads = [py_paths[codec]] + ([own] if own.exists() else [])
            cmd = ["--input", data_path, "--codec", codec, "--reps", reps,
                   "--row-group-rows", args.row_group_rows, *extra, "--read", ",".join(map(str, reads))]
            if write:
                cmd += ["--write-out", own]
            for rec in run_cpp(cmd, binary):
                acc = timings[side]
                if args.clock == "cpu" and "cpu_best" not in rec:
                    sys.exit(f"parquet_bench.py: {binary} reports no CPU times (older than --clock cpu)")
                seconds = rec["cpu_best" if args.clock == "cpu" else "best"]
                if rec["op"] == "write":
                    best(acc, ("write", codec), seconds)
                    info[(f"{side}_size", codec)] = rec["bytes"]
                    info[(f"{side}_row_groups", codec)] = rec["row_groups"]
                elif rec["op"] == "read":
                    who = "pyarrow_file" if rec["path"] == str(py_paths[codec]) else "oxbow_file"
                    best(acc, ("read", who, codec), seconds)
                    if rec["rows"] != table.num_rows:
                        sys.exit(f"parquet_bench.py: {side} read {rec['rows']} rows of {rec['path']}, "
                                 f"expected {table.num_rows}")

        for r in range(rounds):
            for codec in codecs:
                # Round 0 writes each side's file; from then on the readers read it too. Sides
                # take turns going first.
                order = list(sides) if r % 2 == 0 else list(reversed(sides))
                for side in order:
                    run_side(side, codec, write=True)
                ox_file = pa.py_buffer(ox_paths[codec].read_bytes())
                if r == 0:
                    # Oxbow's file must read back in pyarrow as the dataset (a guard for the timings).
                    back = pa_read(ox_file, checksums)
                    if not back.equals(table):
                        sys.exit(f"parquet_bench.py: pyarrow reads Oxbow's {codec} file differently "
                                 f"from the dataset")
                    info[("py_row_groups", codec)] = pq.ParquetFile(pa.BufferReader(py_files[codec])).num_row_groups
                    del back
                best(py, ("write", codec),
                     timed(reps, lambda: pa_write(table, codec, args.row_group_rows, checksums),
                           args.clock))
                best(py, ("read", "pyarrow_file", codec),
                     timed(reps, lambda: pa_read(py_files[codec], checksums), args.clock))
                if r > 0 or rounds == 1:
                    best(py, ("read", "oxbow_file", codec),
                         timed(reps, lambda: pa_read(ox_file, checksums), args.clock))
        if rounds == 1:
            # With one round no C++ reader saw its own file: read it once more.
            for codec in codecs:
                for side in sides:
                    run_side(side, codec, write=False)

    mb = logical / 1e6
    print(f"dataset: {table.num_rows} rows x {table.num_columns} columns in {batches_n} batches, "
          f"{mb:.1f} MB of Arrow data; row groups of {args.row_group_rows} rows; dictionary on; "
          f"page checksums {args.page_checksums}; "
          f"best of {reps} reps x {rounds} rounds, {args.clock} clock; pyarrow {pa.__version__}, "
          f"one thread each")
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
    if baseline:
        print()
        print(f"Against the baseline build {baseline} (its own defaults; each reads its own file as Oxbow's):")
        print()
        print("| operation | codec | baseline MB/s | Oxbow MB/s | Oxbow/baseline |")
        print("|---|---|---:|---:|---:|")
        base_ratios = []
        for label, key in [("write", "write"), ("read pyarrow's file", "pyarrow_file"),
                           ("read Oxbow's file", "oxbow_file")]:
            for codec in codecs:
                k = ("write", codec) if key == "write" else ("read", key, codec)
                ratio = base[k] / ox[k]
                print(f"| {label} | {codec} | {mb / base[k]:,.0f} | {mb / ox[k]:,.0f} | {ratio:.3f} |")
                base_ratios.append((label, codec, ratio))
        for codec in codecs:
            print(f"| file bytes | {codec} | {info[('base_size', codec)]:,} | {info[('ox_size', codec)]:,} "
                  f"| {info[('ox_size', codec)] / info[('base_size', codec)]:.5f} |")
        print()
        for label, codec, ratio in base_ratios:
            print(f"ratio oxbow/baseline {label} [{codec}]: {ratio:.3f}")
    print()
    targets = {"write": (">=", 1.0), "read pyarrow's file": (">=", 1.0), "read Oxbow's file": (">=", 1.0)}
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
