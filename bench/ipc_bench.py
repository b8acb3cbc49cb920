#!/usr/bin/env python3
"""Arrow IPC encode/decode: Oxbow (bench/ipc_bench, C++) and pyarrow side by side, same run.

    python bench/ipc_bench.py [--quick] [--reps 3] [--rounds 2] [--project id,ts]

The C++ program generates the 20-column dataset of bench/datagen.h as an uncompressed Arrow IPC
file (about 1 GB; --quick: about 3 MB). pyarrow reads that file and writes it as an IPC stream
per codec (none, lz4, zstd level 1); those stream bytes are what both sides decode. Both sides
encode the same batches into memory. Every timing is single-threaded (pyarrow: cpu and io thread
counts 1, use_threads=False) and in memory; each is repeated --reps times in each of --rounds
rounds (rounds alternate Oxbow and pyarrow so that noise from other processes hits both), and
the best (minimum) time is reported. MB/s is the uncompressed stream size (10^6 bytes) over time.

The C++ binary is $OXBOW_BUILD_DIR/bench/ipc_bench (default: <repo>/build/release).
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

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
CODECS = ["none", "lz4", "zstd"]


def build_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("OXBOW_BUILD_DIR", REPO_ROOT / "build" / "release"))


def run_cpp(args: list[str]) -> list[dict]:
    binary = build_dir() / "bench" / "ipc_bench"
    if not binary.is_file():
        sys.exit(f"ipc_bench.py: {binary} not found: build the ipc_bench target or set OXBOW_BUILD_DIR")
    proc = subprocess.run([str(binary), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"ipc_bench.py: {binary.name} exited {proc.returncode}: {proc.stderr.strip()}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def pa_codec(name: str):
    if name == "none":
        return None
    return pa.Codec(name, compression_level=1) if name == "zstd" else pa.Codec(name)


def timed(reps: int, fn) -> float:
    """Best of `reps` runs of fn(); whatever fn returns is freed outside the clock."""
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        keep = fn()
        best = min(best, time.perf_counter() - start)
        del keep
    return best


def encode(schema: pa.Schema, batches: list[pa.RecordBatch], codec: str, pool=None) -> pa.Buffer:
    sink = pa.BufferOutputStream(memory_pool=pool)
    options = ipc.IpcWriteOptions(compression=pa_codec(codec), use_threads=False)
    with ipc.new_stream(sink, schema, options=options) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return sink.getvalue()


def encode_presized(schema, batches, codec: str, buf: pa.Buffer) -> None:
    sink = pa.FixedSizeBufferWriter(buf)
    options = ipc.IpcWriteOptions(compression=pa_codec(codec), use_threads=False)
    with ipc.new_stream(sink, schema, options=options) as writer:
        for batch in batches:
            writer.write_batch(batch)


def decode(stream: pa.Buffer, included_fields=None, validate_full: bool = False) -> pa.Table:
    options = ipc.IpcReadOptions(use_threads=False, included_fields=included_fields or [])
    table = ipc.open_stream(stream, options=options).read_all()
    if validate_full:
        table.validate(full=True)
    return table


def bench_pyarrow(schema, batches, streams, project_idx, reps) -> dict:
    out = {}
    for codec in CODECS:
        out[("encode", codec)] = timed(reps, lambda: encode(schema, batches, codec))
        # The default pool (mimalloc) keeps freed pages mapped for the next rep; glibc's malloc
        # hands a large block back to the kernel, so every rep faults in fresh pages.
        system_pool = pa.system_memory_pool()
        out[("encode_system", codec)] = timed(reps, lambda: encode(schema, batches, codec, system_pool))
        stream = streams[codec]
        presized = pa.allocate_buffer(stream.size + (1 << 20))
        encode_presized(schema, batches, codec, presized)  # maps its pages before the clock
        out[("encode_presized", codec)] = timed(reps, lambda: encode_presized(schema, batches, codec, presized))
        out[("decode", codec)] = timed(reps, lambda: decode(stream))
        out[("decode_full_validate", codec)] = timed(reps, lambda: decode(stream, validate_full=True))
        out[("decode_projected", codec)] = timed(reps, lambda: decode(stream, included_fields=project_idx))
    return out


def bench_oxbow(data_path, stream_paths, project, reps) -> tuple[dict, dict]:
    args = ["--input", str(data_path), "--reps", str(reps), "--project", project]
    for codec in CODECS:
        args += [f"--stream-{codec}", str(stream_paths[codec])]
    times, info = {}, {}
    for rec in run_cpp(args):
        op, codec = rec["op"], rec.get("codec")
        if op == "encode":
            times[(f"encode_{rec['sink']}", codec)] = rec["best"]
            info[("encoded_bytes", rec["sink"], codec)] = rec["bytes"]
        elif op == "decode":
            times[("decode_validate" if rec["validate"] else "decode_novalidate", codec)] = rec["best"]
        elif op == "project":
            times[("full", codec)] = rec["full_best"]
            times[("projected", codec)] = rec["projected_best"]
            times[("project_only", codec)] = rec["project_only_best"]
            info[("full_bytes", codec)] = rec["full_bytes"]
            info[("projected_bytes", codec)] = rec["projected_bytes"]
        elif op == "load":
            info["rows"] = rec["rows"]
    return times, info


def merge_best(acc: dict, new: dict) -> None:
    for key, value in new.items():
        acc[key] = min(acc.get(key, float("inf")), value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a few MB, one round, one rep")
    parser.add_argument("--reps", type=int, help="timed repetitions per measurement and round (default 3)")
    parser.add_argument("--rounds", type=int, help="alternating Oxbow/pyarrow rounds (default 2)")
    parser.add_argument("--batches", type=int, help="record batches (default 82; quick 2)")
    parser.add_argument("--rows", type=int, help="rows per batch (default 65536; quick 8192)")
    parser.add_argument("--project", default="id,ts", help="the 2 columns of the projected decode")
    parser.add_argument("--workdir", help="where the data files go (default: a temp dir, removed)")
    args = parser.parse_args()
    reps = args.reps or (1 if args.quick else 3)
    rounds = args.rounds or (1 if args.quick else 2)
    batches_n = args.batches or (2 if args.quick else 82)
    rows = args.rows or (8192 if args.quick else 65536)

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)

    with tempfile.TemporaryDirectory(prefix="oxbow-ipc-bench-", dir=args.workdir) as tmp:
        tmp = pathlib.Path(tmp)
        data_path = tmp / "data.arrow"
        run_cpp(["generate", "--out", str(data_path), "--batches", str(batches_n), "--rows", str(rows)])
        table = ipc.open_file(pa.OSFile(str(data_path)).read_buffer()).read_all()
        schema, batches = table.schema, table.to_batches()
        project_names = args.project.split(",")
        project_idx = [schema.get_field_index(n) for n in project_names]
        assert all(i >= 0 for i in project_idx), f"unknown column in --project {args.project}"

        streams, stream_paths = {}, {}
        for codec in CODECS:
            streams[codec] = encode(schema, batches, codec)
            stream_paths[codec] = tmp / f"stream-{codec}.arrows"
            with open(stream_paths[codec], "wb") as f:
                f.write(streams[codec])
        logical = streams["none"].size
        # Oxbow must decode pyarrow's bytes to the same data (a correctness guard for the timings).
        assert decode(streams["zstd"]).equals(table)

        ox, py, info = {}, {}, {}
        for _ in range(rounds):
            t, info = bench_oxbow(data_path, stream_paths, args.project, reps)
            merge_best(ox, t)
            merge_best(py, bench_pyarrow(schema, batches, streams, project_idx, reps))

    mb = logical / 1e6
    print(f"dataset: {table.num_rows} rows x {table.num_columns} columns in {batches_n} batches, "
          f"uncompressed IPC stream {mb:.1f} MB; best of {reps} reps x {rounds} rounds; "
          f"pyarrow {pa.__version__} ({pa.default_memory_pool().backend_name} pool), single-threaded")
    print()
    print("| operation | codec | Oxbow MB/s | pyarrow MB/s | Oxbow/pyarrow |")
    print("|---|---|---:|---:|---:|")
    rows_out = []

    def line(label, codec, ox_s, py_s):
        ratio = py_s / ox_s
        print(f"| {label} | {codec} | {mb / ox_s:,.0f} | {mb / py_s:,.0f} | {ratio:.2f} |")
        rows_out.append((label, codec, ratio))

    for codec in CODECS:
        line("encode to one buffer", codec, ox[("encode_contiguous", codec)], py[("encode", codec)])
    for codec in CODECS:
        line("encode to one buffer, pyarrow on the system allocator", codec,
             ox[("encode_contiguous", codec)], py[("encode_system", codec)])
    for codec in CODECS:
        line("encode into a pre-sized buffer", codec, ox[("encode_presized", codec)],
             py[("encode_presized", codec)])
    for codec in CODECS:
        line("encode zero-copy (Oxbow BufferListSink)", codec, ox[("encode_buffer_list", codec)],
             py[("encode", codec)])
    for codec in CODECS:
        line("decode, Oxbow validate=true vs pyarrow read", codec, ox[("decode_validate", codec)],
             py[("decode", codec)])
    for codec in CODECS:
        line("decode, Oxbow validate=false vs pyarrow read", codec, ox[("decode_novalidate", codec)],
             py[("decode", codec)])
    for codec in CODECS:
        line("decode, Oxbow validate=true vs pyarrow read+validate(full)", codec,
             ox[("decode_validate", codec)], py[("decode_full_validate", codec)])
    print()
    print("| codec | Oxbow stream bytes | pyarrow stream bytes |")
    print("|---|---:|---:|")
    for codec in CODECS:
        print(f"| {codec} | {info[('encoded_bytes', 'contiguous', codec)]:,} | {streams[codec].size:,} |")
    print()
    print(f"projected decode of {args.project} (2 of {table.num_columns} columns) vs full decode, "
          f"validation on; Oxbow = RecordBatchProjector::Project + decode, pyarrow = "
          f"IpcReadOptions(included_fields)")
    print()
    print("| codec | Oxbow full ms | Oxbow projected ms | Oxbow cost ratio | bytes ratio "
          "| pyarrow full ms | pyarrow projected ms | pyarrow cost ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for codec in CODECS:
        full, proj = ox[("full", codec)], ox[("projected", codec)]
        bytes_ratio = info[("projected_bytes", codec)] / info[("full_bytes", codec)]
        py_full, py_proj = py[("decode", codec)], py[("decode_projected", codec)]
        print(f"| {codec} | {full * 1e3:.2f} | {proj * 1e3:.2f} | {proj / full:.1%} | {bytes_ratio:.1%} "
              f"| {py_full * 1e3:.2f} | {py_proj * 1e3:.2f} | {py_proj / py_full:.1%} |")
    print()
    for label, codec, ratio in rows_out:
        print(f"ratio oxbow/pyarrow {label} [{codec}]: {ratio:.2f}")
    for codec in CODECS:
        cost = ox[("projected", codec)] / ox[("full", codec)]
        target = "meets" if cost <= 0.15 else "MISSES"
        print(f"ratio projected/full cost [{codec}]: {cost:.3f} ({target} target <= 0.15)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
