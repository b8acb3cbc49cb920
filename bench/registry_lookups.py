#!/usr/bin/env python3
"""oxbowd's schema registry: schemas looked up by id from cold client caches, the way a
consumer's AvroDeserializer meets each new id (GET /schemas/ids/{id}).

    .venv/bin/python bench/registry_lookups.py [--schemas 1000] [--rounds 3] [--threads 1 4]

Registers --schemas distinct Avro records (one subject each), then, each round and for each
--threads count, looks every id up once through a new confluent-kafka SchemaRegistryClient per
thread (a cold cache: every lookup is a request), the ids split between the threads. Prints the
lookups per second (best round), the p50 and p99 latency of one lookup, and the peak RSS of
oxbowd and of this process. There is no peer: no other Confluent-compatible registry installs
on this machine (Karapace is not in the Python package index it reaches), so the figures are
absolute; the target is 1,000 lookups/s or more.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import statistics
import sys
import tempfile
import threading
import time

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "bench"))
from server_bench import Oxbowd, RssSampler  # noqa: E402

MB = 1e6


def record(i: int) -> Schema:
    fields = [{"name": f"f{k}", "type": ["null", "long", "string"][k % 3]} for k in range(8)]
    fields.append({"name": f"n{i}", "type": ["null", "string"], "default": None})
    return Schema(json.dumps({"type": "record", "name": f"R{i}", "namespace": "bench",
                              "fields": fields}), "AVRO")


def lookups(url: str, ids: list[int], threads: int) -> tuple[float, list[float]]:
    """Seconds for every id looked up once by `threads` cold clients, and each lookup's."""
    latencies: list[list[float]] = [[] for _ in range(threads)]

    def run(part: int) -> None:
        client = SchemaRegistryClient({"url": url})  # a new one: nothing cached
        for schema_id in ids[part::threads]:
            start = time.perf_counter()
            schema = client.get_schema(schema_id)
            latencies[part].append(time.perf_counter() - start)
            if not schema.schema_str:
                sys.exit(f"registry_lookups.py: schema {schema_id} came back empty")

    workers = [threading.Thread(target=run, args=(p,)) for p in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.perf_counter() - start, [t for part in latencies for t in part]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--schemas", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 4])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="oxbow-registry-bench-") as tmp:
        log = pathlib.Path(tmp) / "oxbowd.log"
        server = Oxbowd(pathlib.Path(tmp) / "data", log)
        port = re.findall(r"serving the schema registry on \S+ \(port (\d+)\)",
                          log.read_text())[-1]
        url = f"http://127.0.0.1:{port}"
        registrar = SchemaRegistryClient({"url": url})
        ids = [registrar.register_schema(f"bench-{i}-value", record(i))
               for i in range(args.schemas)]
        if len(set(ids)) != args.schemas:
            sys.exit("registry_lookups.py: the schemas did not get distinct ids")
        results: dict[int, list[tuple[float, list[float]]]] = {}
        server_rss, own_rss = RssSampler(server.proc.pid), RssSampler(os.getpid())
        for _ in range(args.rounds):
            for threads in args.threads:
                results.setdefault(threads, []).append(lookups(url, ids, threads))
        server_peak, own_peak = server_rss.stop(), own_rss.stop()
        if server.stop() != 0:
            sys.exit("registry_lookups.py: oxbowd did not stop cleanly")

    print(f"{args.schemas:,} schemas, each looked up once per round by id from a cold "
          f"confluent-kafka SchemaRegistryClient; {args.rounds} rounds, the best shown")
    print()
    print("| client threads | lookups/s | p50 latency (ms) | p99 latency (ms) "
          "| oxbowd peak RSS (MB) | Python peak RSS (MB) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for threads, runs in results.items():
        seconds, latencies = min(runs, key=lambda run: run[0])
        latencies.sort()
        print(f"| {threads} | {len(ids) / seconds:,.0f} "
              f"| {statistics.median(latencies) * 1e3:.2f} "
              f"| {latencies[int(len(latencies) * 0.99) - 1] * 1e3:.2f} "
              f"| {server_peak / MB:,.0f} | {own_peak / MB:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
