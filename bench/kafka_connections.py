#!/usr/bin/env python3
"""Many Kafka connections at once, against a real Kafka 4.4.0 broker and Oxbow's Kafka listener
side by side in one run (docs/bench.md): how long N idle connections take to open, what they
cost the server (RSS, threads), and the produce latency of M active connections while the idle
ones are held.

    .venv/bin/python bench/kafka_connections.py [--idle 10000] [--active 1000] [--rate 5]
                                                [--seconds 20] [--quick]

Every connection is a plain TCP connection speaking the Kafka protocol by hand: an idle one
sends ApiVersions (v0) once and then nothing; an active one sends a Produce (v7, acks=all) of one
100-byte record to a one-partition topic every 1/--rate seconds and waits for its response; the
latency is the time from sending a request to reading its response. The record batch is built
once (RecordBatch v2) and sent on every request. Kafka's default durability (page cache) is
matched with oxbowd --flush interval. Binaries come from $OXBOW_BUILD_DIR (default
build/release); Kafka from build/kafka (fetched like bench/vs_kafka).
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import resource
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from server_bench import REPO_ROOT, Oxbowd, free_port, proc_status  # noqa: E402
from vs_kafka import KafkaBroker, fetch_kafka  # noqa: E402

TOPIC = "connections"


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def varint(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)  # zigzag
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def record_batch(value: bytes) -> bytes:
    """A RecordBatch (magic 2) of one record with a null key."""
    body = bytes([0]) + varint(0) + varint(0) + varint(-1) + varint(len(value)) + value + varint(0)
    record = varint(len(body)) + body
    now = int(time.time() * 1000)
    after_crc = (struct.pack(">hiqqqhii", 0, 0, now, now, -1, -1, -1, 1) + record)
    after_length = struct.pack(">ibI", -1, 2, crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length


def request(api_key: int, version: int, correlation: int, body: bytes) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation, 5) + b"bench"
    return struct.pack(">i", len(header) + len(body)) + header + body


def produce_body(records: bytes) -> bytes:
    name = TOPIC.encode()
    return (struct.pack(">hhii", -1, -1, 30_000, 1) + struct.pack(">h", len(name)) + name +
            struct.pack(">iii", 1, 0, len(records)) + records)


async def read_response(reader: asyncio.StreamReader) -> bytes:
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return await reader.readexactly(size)


async def open_idle(host: str, port: int, count: int, parallel: int = 200) -> tuple[list, int]:
    """Opens `count` connections that each send ApiVersions once; returns them and the failures."""
    gate = asyncio.Semaphore(parallel)
    held, failed = [], 0

    async def one(i: int):
        nonlocal failed
        async with gate:
            try:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 30)
                writer.write(request(18, 0, i, b""))
                await writer.drain()
                await asyncio.wait_for(read_response(reader), 30)
                held.append((reader, writer))
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError):
                failed += 1

    await asyncio.gather(*(one(i) for i in range(count)))
    return held, failed


async def run_active(host: str, port: int, count: int, rate: float, seconds: float) -> dict:
    """`count` connections producing `rate` requests/s each for `seconds`; their latencies."""
    body = produce_body(record_batch(b"x" * 100))
    latencies: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds

    async def one(i: int):
        nonlocal errors
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            errors += 1
            return
        await asyncio.sleep(i / count / rate)  # spread the connections over one period
        correlation = 0
        next_send = time.monotonic()
        try:
            while time.monotonic() < deadline:
                correlation += 1
                sent = time.monotonic()
                writer.write(request(0, 7, correlation, body))
                await writer.drain()
                response = await read_response(reader)
                latencies.append(time.monotonic() - sent)
                # error_code of the one partition: after the correlation id, the topic array
                # (count, name), the partition array (count, index), then int16.
                name_len = struct.unpack(">h", response[8:10])[0]
                error = struct.unpack(">h", response[10 + name_len + 8:12 + name_len + 8])[0]
                if error != 0:
                    errors += 1
                next_send += 1 / rate
                await asyncio.sleep(max(0.0, next_send - time.monotonic()))
        except (OSError, asyncio.IncompleteReadError):
            errors += 1
        finally:
            writer.close()

    await asyncio.gather(*(one(i) for i in range(count)))
    latencies.sort()

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000 if latencies \
            else float("nan")
    return {"requests": len(latencies), "errors": errors, "p50 ms": pct(0.50),
            "p99 ms": pct(0.99), "requests/s": len(latencies) / seconds}


def server_figures(pid: int) -> dict:
    with open(f"/proc/{pid}/status") as f:
        threads = next(int(line.split()[1]) for line in f if line.startswith("Threads:"))
    return {"RSS MB": proc_status(pid, "VmRSS") / 1e6, "threads": threads}


async def measure(name: str, host: str, port: int, pid: int, args) -> dict:
    start = time.monotonic()
    held, failed = await open_idle(host, port, args.idle)
    figures = {"idle open s": time.monotonic() - start, "idle failed": failed}
    await asyncio.sleep(1)
    figures.update({f"idle {k}": v for k, v in server_figures(pid).items()})
    async def sample_midway() -> dict:
        await asyncio.sleep(args.seconds / 2)
        return server_figures(pid)

    active, loaded = await asyncio.gather(
        run_active(host, port, args.active, args.rate, args.seconds), sample_midway())
    figures.update({f"active {k}": v for k, v in active.items()})
    figures.update({f"loaded {k}": v for k, v in loaded.items()})
    for _, writer in held:
        writer.close()
    print(f"{name}: {figures}", file=sys.stderr, flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--idle", type=int, default=10_000)
    parser.add_argument("--active", type=int, default=1_000)
    parser.add_argument("--rate", type=float, default=5.0, help="requests/s per active connection")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--quick", action="store_true", help="200 idle, 50 active, 5 s")
    parser.add_argument("--workdir", type=pathlib.Path, default=REPO_ROOT / "build")
    parser.add_argument("--log-dir", type=pathlib.Path,
                        default=REPO_ROOT / "build" / "kafka_connections-logs")
    args = parser.parse_args()
    if args.quick:
        args.idle, args.active, args.seconds = 200, 50, 5.0
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < args.idle + args.active + 100:
        sys.exit(f"kafka_connections.py: {args.idle + args.active} connections need more than "
                 f"the {hard} open files this process may have")
    classpath = fetch_kafka()
    args.log_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp_name:
        tmp = pathlib.Path(tmp_name)
        (tmp / "kafka-config").mkdir()
        kafka = KafkaBroker(classpath, tmp / "kafka-data", tmp / "kafka-config", args.log_dir)
        port = free_port()
        oxbowd = Oxbowd(tmp / "oxbow", args.log_dir / "oxbowd.log",
                        ("--flush", "interval", "--kafka-listen", f"127.0.0.1:{port}"))
        results = {}
        try:
            for name, bootstrap, pid in (("Kafka", kafka.bootstrap, kafka.proc.pid),
                                         ("Oxbow", f"127.0.0.1:{port}", oxbowd.proc.pid)):
                subprocess.run(["java", "-cp", classpath, "org.apache.kafka.tools.TopicCommand",
                                "--bootstrap-server", bootstrap, "--create", "--topic", TOPIC,
                                "--partitions", "1"], check=True, capture_output=True,
                               timeout=300)
                host, port_text = bootstrap.rsplit(":", 1)
                results[name] = asyncio.run(measure(name, host, int(port_text), pid, args))
        finally:
            kafka.stop()
            oxbowd.stop()
    print(f"\n{args.idle} idle connections, {args.active} producing {args.rate:g} requests/s "
          f"each for {args.seconds:g} s (Kafka default durability vs oxbowd --flush interval)")
    print(f"{'figure':<22}{'Kafka':>12}{'Oxbow':>12}")
    for key in results["Kafka"]:
        print(f"{key:<22}{results['Kafka'][key]:>12.1f}{results['Oxbow'][key]:>12.1f}")
    for key in ("active p99 ms", "idle RSS MB", "loaded RSS MB"):
        kafka_value, oxbow_value = results["Kafka"][key], results["Oxbow"][key]
        print(f"ratio oxbow/kafka {key}: {oxbow_value / kafka_value:.2f}")


if __name__ == "__main__":
    main()
