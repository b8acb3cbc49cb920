#!/usr/bin/env python3
"""S3 client throughput: Oxbow's S3FileSystem (s3_tool bench-put / bench-get) beside boto3, the
reference client, against the same test server on 127.0.0.1 (tests/oxbowtest/s3_server.py: --server moto,
moto_server, the default; or versitygw, the Versity S3 Gateway that scripts/install_versitygw.sh
builds), alternating runs so both see the same machine load.

    python bench/s3_bench.py [--server moto|versitygw] [--object-mib 4] [--objects 8]
                             [--parts-in-flight 4] [--range-kib 1024] [--reads 64] [--runs 3]

Upload: --objects objects of --object-mib MiB each (one PUT each below the 8 MiB part size,
multipart above; boto3's upload_fileobj uses the same 8 MiB threshold and part size), with up to
--parts-in-flight parts of one object sent at once by both (Oxbow's
S3Options::upload_parts_in_flight, boto3's max_concurrency).
Ranged read: --reads GETs of --range-kib KiB at spread offsets of one 32 MiB object.
Prints MB/s per run, the medians and the ratio Oxbow / boto3. Binaries come from
$OXBOW_BUILD_DIR (default <repo>/build/release).
"""

from __future__ import annotations

import argparse
import io
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from oxbowtest import s3_server  # noqa: E402
from boto3.s3.transfer import TransferConfig  # noqa: E402

MIB = 1 << 20


def oxbow_run(tool, env, args) -> float:
    out = subprocess.run([str(tool), *map(str, args)], env=env, capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"s3_tool {args}: {out.stderr}")
    return float(re.search(r"([\d.]+) MB/s", out.stdout).group(1))


def boto_put(client, bucket, prefix, data, count, threads) -> float:
    config = TransferConfig(multipart_threshold=8 * MIB, multipart_chunksize=8 * MIB,
                            max_concurrency=threads, use_threads=threads > 1)
    start = time.perf_counter()
    for i in range(count):
        client.upload_fileobj(io.BytesIO(data), bucket, f"{prefix}/{i}", Config=config)
    return count * len(data) / (time.perf_counter() - start) / 1e6


def boto_get(client, bucket, key, size, range_bytes, reads) -> float:
    slots = max(1, size // range_bytes)
    total = 0
    start = time.perf_counter()
    for i in range(reads):
        offset = (i * 7919 % slots) * range_bytes
        body = client.get_object(Bucket=bucket, Key=key,
                                 Range=f"bytes={offset}-{offset + range_bytes - 1}")["Body"].read()
        total += len(body)
    return total / (time.perf_counter() - start) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--object-mib", type=int, default=4)
    parser.add_argument("--objects", type=int, default=8)
    parser.add_argument("--parts-in-flight", type=int, default=4)
    parser.add_argument("--range-kib", type=int, default=1024)
    parser.add_argument("--reads", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--server", choices=s3_server.KINDS, default="moto")
    args = parser.parse_args()
    build = pathlib.Path(os.environ.get("OXBOW_BUILD_DIR", REPO / "build" / "release"))
    tool = build / "src" / "oxbow" / "storage" / "s3_tool"
    with tempfile.TemporaryDirectory() as tmp:
        server = s3_server.start(pathlib.Path(tmp) / f"{args.server}.log", kind=args.server)
        try:
            env = dict(os.environ, **server.env(),
                       OXBOW_S3_PARTS_IN_FLIGHT=str(args.parts_in_flight))
            client = server.client()
            size = args.object_mib * MIB
            upload = bytes(((i * 131) >> 7) & 0xFF for i in range(size))  # s3_tool's bytes
            read_object = 32 * MIB
            client.put_object(Bucket=server.bucket, Key="read/object",
                              Body=bytes(((i * 7) >> 3) & 0xFF for i in range(read_object)))
            uri = f"s3://{server.bucket}"
            rows = {"put_oxbow": [], "put_boto3": [], "get_oxbow": [], "get_boto3": []}
            for run in range(args.runs):
                rows["put_oxbow"].append(oxbow_run(
                    tool, env, ["bench-put", f"{uri}/put-oxbow-{run}", size, args.objects]))
                rows["put_boto3"].append(boto_put(client, server.bucket, f"put-boto3-{run}",
                                                  upload, args.objects, args.parts_in_flight))
                rows["get_oxbow"].append(oxbow_run(
                    tool, env, ["bench-get", f"{uri}/read/object", args.range_kib * 1024,
                                args.reads]))
                rows["get_boto3"].append(boto_get(client, server.bucket, "read/object",
                                                  read_object, args.range_kib * 1024, args.reads))
                print(f"run {run}: " + ", ".join(f"{k} {v[-1]:.1f} MB/s" for k, v in rows.items()),
                      flush=True)
            med = {k: statistics.median(v) for k, v in rows.items()}
            print(f"server {args.server}, medians of {args.runs} runs:")
            print(f"upload  {args.objects} x {args.object_mib} MiB, up to {args.parts_in_flight} "
                  f"parts at once: Oxbow {med['put_oxbow']:.1f} MB/s, "
                  f"boto3 {med['put_boto3']:.1f} MB/s, ratio {med['put_oxbow'] / med['put_boto3']:.2f}")
            print(f"ranged read {args.reads} x {args.range_kib} KiB: Oxbow {med['get_oxbow']:.1f} MB/s, "
                  f"boto3 {med['get_boto3']:.1f} MB/s, ratio {med['get_oxbow'] / med['get_boto3']:.2f}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
