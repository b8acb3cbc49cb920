#!/usr/bin/env python3
"""What the disk alone makes a log's fsync cost: 1 MiB appended then fdatasync'd, as a bucket log
does for each acknowledged 1 MB batch, against 1 MiB overwritten in already-written blocks (a
recycled segment: no size or extent to record), each alone and beside a second process doing
what the lake's rounds do to the disk: O_DIRECT 1 MiB writes, or reads, at a given rate.

Usage: fsync_probe.py [--quick] [--workdir DIR] [--syncs N] [--rates MIB_S,...]
Prints one line per case: fdatasync p50, mean and p99 in ms, and the ratio of each mean to the
append-alone mean.
"""

from __future__ import annotations

import argparse
import mmap
import multiprocessing
import os
import pathlib
import statistics
import tempfile
import time

MIB = 1 << 20


def sync_latencies(path: pathlib.Path, overwrite: bool, syncs: int) -> list[float]:
    """fdatasync after each 1 MiB pwrite, in ms; `overwrite` writes the blocks (and syncs) first."""
    data = os.urandom(MIB)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        if overwrite:
            for i in range(syncs):
                os.pwrite(fd, data, i * MIB)
            os.fsync(fd)
        latencies = []
        for i in range(syncs):
            os.pwrite(fd, data, i * MIB)
            start = time.perf_counter()
            os.fdatasync(fd)
            latencies.append((time.perf_counter() - start) * 1e3)
        return latencies
    finally:
        os.close(fd)
        path.unlink()


def direct_io(path: str, write: bool, mib_per_s: float, file_mib: int, ready, stop) -> None:
    """O_DIRECT 1 MiB writes (fsync'd every file_mib) or reads of a file of file_mib, paced to
    mib_per_s, from setting `ready` until `stop` is set."""
    block = mmap.mmap(-1, MIB)  # page-aligned, as O_DIRECT needs
    block.write(os.urandom(MIB))
    if not write:
        with open(path, "wb") as f:
            for _ in range(file_mib):
                f.write(os.urandom(MIB))
            os.fsync(f.fileno())
    flags = os.O_WRONLY | os.O_CREAT if write else os.O_RDONLY
    try:
        fd = os.open(path, flags | os.O_DIRECT, 0o644)
    except OSError:  # a file system without O_DIRECT (tmpfs before Linux 6.6)
        fd = os.open(path, flags, 0o644)
    try:
        start, done = time.monotonic(), 0
        ready.set()
        while not stop.is_set():
            offset = (done % file_mib) * MIB
            if write:
                os.pwritev(fd, [block], offset)
                if offset == (file_mib - 1) * MIB:
                    os.fsync(fd)
            else:
                os.preadv(fd, [block], offset)
            done += 1
            ahead = done / mib_per_s - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)
    finally:
        os.close(fd)
        os.unlink(path)


def measure(workdir: pathlib.Path, overwrite: bool, syncs: int, beside: tuple | None,
            file_mib: int) -> list[float]:
    if beside is None:
        return sync_latencies(workdir / "log", overwrite, syncs)
    kind, rate = beside
    ready, stop = multiprocessing.Event(), multiprocessing.Event()
    other = multiprocessing.Process(target=direct_io, args=(
        str(workdir / "lake"), kind == "writes", rate, file_mib, ready, stop))
    other.start()
    if not ready.wait(120):  # reads: after the file to read is written and synced
        stop.set()
        other.join()
        raise RuntimeError(f"the O_DIRECT {kind} did not start within 120 s")
    time.sleep(0.2)
    try:
        return sync_latencies(workdir / "log", overwrite, syncs)
    finally:
        stop.set()
        other.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="50 syncs, one rate (CI smoke)")
    parser.add_argument("--workdir", type=pathlib.Path, help="on the disk to measure")
    parser.add_argument("--syncs", type=int, default=2000)
    parser.add_argument("--rates", default="64,300", help="MiB/s of the O_DIRECT neighbour")
    args = parser.parse_args()
    syncs = 50 if args.quick else args.syncs
    rates = [16.0] if args.quick else [float(r) for r in args.rates.split(",")]
    file_mib = 64 if args.quick else 2048
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="fsync-probe-", dir=args.workdir))
    cases = [("alone", None)]
    cases += [(f"beside {r:g} MiB/s O_DIRECT {kind}", (kind, r))
              for kind in ("writes", "reads") for r in rates]
    base = None
    try:
        for label, beside in cases:
            for overwrite in (False, True):
                lat = sorted(measure(workdir, overwrite, syncs, beside, file_mib))
                mean = statistics.mean(lat)
                base = base or mean
                mode = "overwrite" if overwrite else "append"
                print(f"fdatasync after a 1 MiB {mode}, {label}: p50 {lat[len(lat) // 2]:.3f} ms, "
                      f"mean {mean:.3f} ms, p99 {lat[int(len(lat) * 0.99)]:.3f} ms; "
                      f"ratio to the append alone {mean / base:.2f}", flush=True)
    finally:
        workdir.rmdir()


if __name__ == "__main__":
    main()
