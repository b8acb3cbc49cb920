#!/usr/bin/env python3
"""Kafka's own perf tools (ProducerPerformance, ConsumerPerformance from kafka-tools 4.4.0) against
a real Kafka 4.4.0 broker and against Oxbow's Kafka listener, side by side in one run: produce
throughput and latency percentiles, consume throughput, each server's peak RSS, with Oxbow/Kafka
ratios (docs/bench.md).

    .venv/bin/python bench/kafka_perf.py [--records 200000] [--record-size 1000] [--codec lz4]
                                         [--runs 3] [--quick] [--transactional]
                                         [--workdir DIR] [--log-dir DIR]

Same durability on both sides, in two rounds: Kafka's default (acks=all, the page cache, no
fsync) against oxbowd --flush interval, and Kafka's flush.messages=1 (an fsync per append)
against oxbowd --flush fsync. One topic of one partition per measurement; the order of the two
systems alternates between runs, and the median of --runs is printed. --transactional produces
in transactions (ProducerPerformance --transaction-duration-ms 100: a commit every 100 ms, as
Kafka Streams' exactly-once commits) and consumes read_committed, in the first round only (Kafka
does not fsync transactions either). Binaries come from
$OXBOW_BUILD_DIR (default build/release); Kafka from build/kafka (fetched like bench/vs_kafka).
"""

from __future__ import annotations

import argparse
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import uuid

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from peers import MemorySampler  # noqa: E402
from server_bench import REPO_ROOT, Oxbowd, free_port  # noqa: E402
from vs_kafka import KafkaBroker, fetch_kafka  # noqa: E402

PRODUCER = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), "
                      r"([\d.]+) ms avg latency, ([\d.]+) ms max latency, (\d+) ms 50th, "
                      r"(\d+) ms 95th, (\d+) ms 99th")


def run_tool(classpath: str, main: str, *args) -> str:
    proc = subprocess.run(["java", "-cp", classpath, main, *map(str, args)], capture_output=True,
                          text=True, timeout=900)
    if proc.returncode != 0:
        sys.exit(f"kafka_perf.py: {main} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc.stdout


def measure(classpath: str, bootstrap: str, args, topic_config: list[str]) -> dict:
    """One produce and one consume run; `topic_config` goes to kafka-topics --create."""
    topic = "perf-" + uuid.uuid4().hex[:8]
    run_tool(classpath, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap,
             "--create", "--topic", topic, "--partitions", 1, *topic_config)
    transactions = (["--transaction-duration-ms", 100, "--transactional-id", "tx-" + topic]
                    if args.transactional else [])
    out = run_tool(classpath, "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
                   "--num-records", args.records, "--record-size", args.record_size,
                   "--throughput", -1, *transactions, "--command-property",
                   f"bootstrap.servers={bootstrap}", "acks=all", f"compression.type={args.codec}",
                   "linger.ms=5")
    last = PRODUCER.findall(out)[-1]
    result = {"produce MB/s": float(last[2]), "produce p50 ms": float(last[5]),
              "produce p99 ms": float(last[7])}
    isolation = ["--consumer.config", args.read_committed] if args.transactional else []
    out = run_tool(classpath, "org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server",
                   bootstrap, "--topic", topic, "--num-records", args.records, "--group",
                   "g-" + topic, *isolation)
    fields = out.strip().splitlines()[-1].split(", ")
    result["consume MB/s"] = float(fields[3])  # MB.sec, including the group's join
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--record-size", type=int, default=1000)
    parser.add_argument("--codec", default="lz4", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="20,000 records, one run")
    parser.add_argument("--transactional", action="store_true",
                        help="produce in transactions, consume read_committed (no fsync only)")
    parser.add_argument("--workdir", type=pathlib.Path, default=REPO_ROOT / "build",
                        help="where the servers' data dirs go (removed on exit)")
    parser.add_argument("--log-dir", type=pathlib.Path,
                        default=REPO_ROOT / "build" / "kafka_perf-logs")
    args = parser.parse_args()
    if args.quick:
        args.records, args.runs = 20_000, 1
    classpath = fetch_kafka()
    log_dir = args.log_dir
    log_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp_name:
        tmp = pathlib.Path(tmp_name)
        (tmp / "kafka-config").mkdir()
        args.read_committed = tmp / "read_committed.properties"
        args.read_committed.write_text("isolation.level=read_committed\n")
        kafka = KafkaBroker(classpath, tmp / "kafka-data", tmp / "kafka-config", log_dir)
        servers = {}
        try:
            for policy in ("interval", "fsync"):
                port = free_port()
                servers[policy] = (Oxbowd(tmp / f"oxbow-{policy}", log_dir / f"oxbowd-{policy}.log",
                                          ("--flush", policy, "--kafka-listen",
                                           f"127.0.0.1:{port}")), f"127.0.0.1:{port}")
            memory = MemorySampler({"Kafka": kafka.proc.pid,
                                    **{p: s.proc.pid for p, (s, _) in servers.items()}})
            rounds = [("interval", False)] + ([] if args.transactional else [("fsync", True)])
            kind = "transactional " if args.transactional else ""
            for policy, fsync in rounds:
                memory.reset()
                results = {"Kafka": [], "Oxbow": []}
                for run in range(args.runs):
                    # Kafka fsyncs every append with flush.messages=1; oxbowd with --flush fsync.
                    kafka_config = ["--config", "flush.messages=1"] if fsync else []
                    order = [("Kafka", kafka.bootstrap, kafka_config),
                             ("Oxbow", servers[policy][1], [])]
                    for name, bootstrap, config in order if run % 2 == 0 else reversed(order):
                        results[name].append(measure(classpath, bootstrap, args, config))
                title = ("Kafka default (no fsync) vs oxbowd --flush interval" if not fsync else
                         "Kafka flush.messages=1 vs oxbowd --flush fsync")
                print(f"\n{title}: {args.records} records of {args.record_size} B, "
                      f"{args.codec}, acks=all, {kind}median of {args.runs}")
                print(f"{'metric':<16}{'Kafka':>10}{'Oxbow':>10}{'Oxbow/Kafka':>13}")
                for metric in results["Kafka"][0]:
                    k = statistics.median(r[metric] for r in results["Kafka"])
                    o = statistics.median(r[metric] for r in results["Oxbow"])
                    print(f"{metric:<16}{k:>10.1f}{o:>10.1f}{o / k if k else float('nan'):>12.2f}x")
                rss, _ = memory.peaks()
                k, o = rss["Kafka"] / 1e6, rss[policy] / 1e6
                print(f"{'peak RSS MB':<16}{k:>10.1f}{o:>10.1f}{o / k if k else float('nan'):>12.2f}x")
                for metric in ("produce MB/s", "produce p99 ms", "consume MB/s"):
                    k = statistics.median(r[metric] for r in results["Kafka"])
                    o = statistics.median(r[metric] for r in results["Oxbow"])
                    print(f"ratio oxbow/kafka {kind}{metric}, {'fsync' if fsync else 'no fsync'}: "
                          f"{o / k if k else float('nan'):.2f}")
        finally:
            kafka.stop()
            for server, _ in servers.values():
                server.stop()


if __name__ == "__main__":
    main()
