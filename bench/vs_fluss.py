#!/usr/bin/env python3
"""Oxbow against a real Apache Fluss 0.6.0 on this machine, side by side in one run:
primary-key upserts, point lookups one at a time and pipelined (Fluss) or batched (Oxbow), log
appends of the 20-column events dataset, full and 2-column log scans, and every server's peak
RSS. Prints a table with Oxbow/Fluss ratios.

    bench/vs_fluss [--quick] [--runs 3] [--workdir DIR]

bench/vs_fluss builds oxbowd and server_bench (Release) and runs this script in the project venv;
binaries come from $OXBOW_BUILD_DIR (default <repo>/build/release). Fluss (fluss-server and
fluss-client 0.6.0, with log4j2) comes from Maven Central on first use and is cached in
build/fluss, where bench/FlussBench.java, the Fluss side's load generator on Fluss's own Java
client, is compiled with javac. docs/bench.md gives the method and the settings.

Everything runs on 127.0.0.1 with fresh directories in one temporary directory under --workdir
(default <repo>/build), each server started once: ZooKeeper (the one fluss-server ships), two
Fluss clusters (a coordinator and a tablet server each) on it, one with Fluss's default
durability (its log is never fsynced per write, log.flush.interval-messages unset) and one with
log.flush.interval-messages=1 (an fsync per appended batch), and two oxbowd, --flush interval
and --flush fsync, their peers. Primary-key upserts and log appends run against both pairs;
lookups and scans against the default pair. Each measurement runs on both systems back to back,
the order alternating between runs; --runs full runs give the median and range of every figure.

The same rows go to both: the keys and values of bench/pk_data.h (16-byte keys, 100-byte values,
200,000 upserts over 100,000 keys, 4 buckets), and the events dataset of bench/datagen.h for the
log (1024-row Arrow batches to Oxbow, one row per append to Fluss, LZ4 compression on both).
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow.ipc as ipc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from peers import (MemorySampler, compile_java, die_with_parent, fetch_classpath, log,  # noqa: E402
                   wait_until_quiet)
from server_bench import REPO_ROOT, Oxbowd, binary, free_port, run_json  # noqa: E402

FLUSS_VERSION = "0.6.0"
FLUSS_DIR = REPO_ROOT / "build" / "fluss"
LOG4J_VERSION = "2.17.1"  # what the Fluss 0.6.0 distribution ships
POM = f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>oxbow.bench</groupId>
  <artifactId>fluss</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>com.alibaba.fluss</groupId><artifactId>fluss-server</artifactId>
      <version>{FLUSS_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>com.alibaba.fluss</groupId><artifactId>fluss-client</artifactId>
      <version>{FLUSS_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId>
      <version>{LOG4J_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId>
      <version>{LOG4J_VERSION}</version>
    </dependency>
  </dependencies>
</project>
"""
# Java 17 needs the opening for the Arrow that Fluss shades; a 1 GB heap at most.
FLUSS_JVM = ["-Xmx1g", "-XX:+UseG1GC", "--add-opens=java.base/java.nio=ALL-UNNAMED"]
ZOOKEEPER_MAIN = "com.alibaba.fluss.shaded.zookeeper3.org.apache.zookeeper.server.quorum.QuorumPeerMain"
# Fluss's client batches writes like Kafka's producer; 5 ms is Kafka 4's linger.ms. A lone
# lookup waits client.lookup.batch-timeout (100 ms by default) for company before it is sent:
# one at a time, 20 µs gave Fluss its best rate here (1 ms: 855 keys/s; 200 µs: 2.9k; 50 µs:
# 3.6k-5.9k; 20 µs: 5.2k; 5 µs: 4.2k; 0 never sends).
WRITER_CLIENT = "client.writer.batch-timeout=5ms"
SINGLE_LOOKUP_CLIENT = "client.lookup.batch-timeout=20micros"
# Scans fetch as vs_kafka's Kafka consumer does (OpenMessaging Benchmark's sizes): 16 MB per
# bucket and no cap on records per poll gave Fluss 2.7x its default full-scan rate here.
SCAN_CLIENT = ("client.scanner.log.max-poll-records=1000000,"
               "client.scanner.log.fetch.max-bytes-for-bucket=16mb,"
               "client.scanner.log.fetch.max-bytes=64mb")
BUCKETS = 4
# Each measurement waits until the machine is idle (the other system's flushes, compactions and
# collections done), at most this long.
QUIET_TIMEOUT = 30.0
KEY_BYTES, VALUE_BYTES = 16, 100
BATCH_ROWS = 1024
SCAN_COLUMNS = ["event_time", "price"]


class Fluss:
    """One Fluss cluster (a coordinator and a tablet server) on the shared ZooKeeper."""

    def __init__(self, name: str, classpath: str, zookeeper: str, tmp: pathlib.Path,
                 log_dir: pathlib.Path, extra: dict[str, str]):
        self.name, self.port = name, free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        conf = tmp / f"{name}-conf"
        conf.mkdir()
        settings = {"zookeeper.address": zookeeper, "zookeeper.path.root": f"/{name}",
                    "default.bucket.number": "1", "default.replication.factor": "1",
                    "remote.data.dir": str(tmp / f"{name}-remote"),
                    "coordinator.host": "127.0.0.1", "coordinator.port": str(self.port),
                    "tablet-server.host": "127.0.0.1", "tablet-server.port": str(free_port()),
                    "tablet-server.id": "0", "data.dir": str(tmp / f"{name}-data"), **extra}
        (conf / "server.yaml").write_text("".join(f"{k}: {v}\n" for k, v in settings.items()))
        self.coordinator = f"{name} coordinator"
        self._start_coordinator = lambda: java_server(
            classpath, "com.alibaba.fluss.server.coordinator.CoordinatorServer",
            ["--configDir", str(conf)], log_dir / f"{name}-coordinator.log")
        self.procs = {
            self.coordinator: self._start_coordinator(),
            f"{name} tablet server": java_server(classpath, "com.alibaba.fluss.server.tablet."
                                                 "TabletServer", ["--configDir", str(conf)],
                                                 log_dir / f"{name}-tablet.log")}

    def restart_coordinator(self) -> subprocess.Popen:
        """Fluss 0.6.0's start-up race (apache/fluss#413) can leave the coordinator's own
        connection to the tablet server stuck (a NullPointerException in its log), after which
        no table is ever created: a new coordinator process connects again."""
        stop(self.procs[self.coordinator])
        self.procs[self.coordinator] = self._start_coordinator()
        wait_port(self.port, self.procs[self.coordinator], self.coordinator)
        return self.procs[self.coordinator]


def java_server(classpath: str, main: str, args: list[str], log_file: pathlib.Path,
                jvm: list[str] = FLUSS_JVM) -> subprocess.Popen:
    log4j = log_file.with_suffix(".log4j2.properties")
    log4j.write_text("rootLogger.level = INFO\nrootLogger.appenderRef.file.ref = file\n"
                     "appender.file.type = File\nappender.file.name = file\n"
                     f"appender.file.fileName = {log_file}\n"
                     "appender.file.layout.type = PatternLayout\n"
                     "appender.file.layout.pattern = %d{HH:mm:ss,SSS} %-5p %c{1} - %m%n\n")
    stdout = open(log_file.with_suffix(".stdout"), "wb")
    return subprocess.Popen(["java", *jvm, f"-Dlog4j.configurationFile=file:{log4j}", "-cp",
                             classpath, main, *args],
                            stdout=stdout, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)


def wait_port(port: int, proc: subprocess.Popen, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"vs_fluss.py: {what} did not start (exit {proc.poll()})")
        time.sleep(0.1)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Bench:
    def __init__(self, args, tmp: pathlib.Path, classpath: str, classes: pathlib.Path,
                 log_dir: pathlib.Path):
        self.args, self.tmp, self.log_dir = args, tmp, log_dir
        jars = classpath.split(":")
        self.server_cp = ":".join(j for j in jars if "fluss-client" not in j)
        self.client_cp = ":".join([str(classes), *(j for j in jars if "fluss-server" not in j)])
        self.load = binary("bench/server_bench")
        quick = args.quick
        self.upserts = 20_000 if quick else 200_000
        self.keyspace = self.upserts // 2
        self.single_lookups = 500 if quick else 20_000
        self.many_lookups = 5_000 if quick else 200_000
        events = tmp / "events"
        generated = run_json([self.load, "generate-events", "--batches", 5 if quick else 100,
                              "--rows", BATCH_ROWS, "--arrow", events.with_suffix(".arrow"),
                              "--records", events.with_suffix(".rows")], timeout=600)
        self.events_rows, self.raw_bytes = generated["rows"], generated["raw_bytes"]
        self.events_fields = [{"name": f.name, "type": str(f.type), "nullable": f.nullable}
                              for f in ipc.open_file(str(events.with_suffix(".arrow"))).schema]
        self.timeout = 300 if quick else 1800

    # ---- servers ----

    def start(self) -> None:
        log("starting ZooKeeper, two Fluss clusters and two oxbowd")
        zk_port = free_port()
        (self.tmp / "zookeeper").mkdir()
        zk_conf = self.tmp / "zookeeper.properties"
        zk_conf.write_text(f"dataDir={self.tmp / 'zookeeper'}\nclientPort={zk_port}\n"
                           "maxClientCnxns=0\nadmin.enableServer=false\n")
        self.zookeeper = java_server(self.server_cp, ZOOKEEPER_MAIN, [str(zk_conf)],
                                     self.log_dir / "zookeeper.log",
                                     ["-Xmx512m", "--add-opens=java.base/java.nio=ALL-UNNAMED"])
        wait_port(zk_port, self.zookeeper, "ZooKeeper")
        zookeeper = f"127.0.0.1:{zk_port}"
        self.fluss = {fsync: Fluss(name, self.server_cp, zookeeper, self.tmp, self.log_dir, extra)
                      for fsync, name, extra in (
                          (False, "fluss", {}),
                          (True, "fluss-fsync", {"log.flush.interval-messages": "1"}))}
        self.oxbow = {fsync: Oxbowd(self.tmp / f"oxbow-{policy}",
                                    self.log_dir / f"oxbowd-{policy}.log", ["--flush", policy])
                      for fsync, policy in ((False, "interval"), (True, "fsync"))}
        for cluster in self.fluss.values():
            for what, proc in cluster.procs.items():
                if "coordinator" in what:
                    wait_port(cluster.port, proc, what)
        pids = {"ZooKeeper": self.zookeeper.pid,
                **{what: proc.pid for what, proc in self.fluss[False].procs.items()},
                "oxbowd": self.oxbow[False].proc.pid}
        self.memory = MemorySampler(pids)
        # The tablet servers register a moment after the coordinators answer: the first table
        # of each waits for them (FlussBench retries a create that finds no tablet server).
        for fsync in (False, True):
            self.create(fsync, "warm_pk", "pk")
            self.create(fsync, "warm_events", "events")

    def stop(self) -> None:
        self.memory.stop()
        for server in self.oxbow.values():
            server.proc.send_signal(signal.SIGTERM)
            server.proc.wait(timeout=60)
            server.log.close()
        for cluster in self.fluss.values():
            for proc in cluster.procs.values():
                stop(proc)
        stop(self.zookeeper)

    # ---- one workload on each side ----

    def fluss_bench(self, command: str, fsync: bool, *flags, jvm=("-Xmx2g",)) -> dict:
        return run_json(["java", *jvm, "--add-opens=java.base/java.nio=ALL-UNNAMED", "-cp",
                         self.client_cp, "FlussBench", command, "--bootstrap",
                         self.fluss[fsync].bootstrap, *flags], timeout=self.timeout)

    def oxbow_bench(self, command: str, fsync: bool, *flags) -> dict:
        return run_json([self.load, command, "--address", self.oxbow[fsync].address, *flags],
                        timeout=self.timeout)

    def create(self, fsync: bool, table: str, kind: str) -> None:
        deadline = time.monotonic() + 120
        restart_at = time.monotonic() + 30
        while True:
            proc = subprocess.run(
                ["java", "--add-opens=java.base/java.nio=ALL-UNNAMED", "-cp", self.client_cp,
                 "FlussBench", "create", "--bootstrap", self.fluss[fsync].bootstrap, "--table",
                 f"bench.{table}", "--kind", kind, "--buckets", str(BUCKETS), "--codec",
                 "LZ4_FRAME"], capture_output=True, text=True, timeout=300)
            if proc.returncode == 0:
                break
            if time.monotonic() > deadline:
                sys.exit(f"vs_fluss.py: creating Fluss table {table} failed:\n{proc.stderr[-2000:]}")
            if time.monotonic() > restart_at:
                cluster = self.fluss[fsync]
                log(f"creating {table} has failed for 30 s: restarting {cluster.coordinator}")
                pid = cluster.restart_coordinator().pid
                if cluster.coordinator in self.memory.pids:  # the sampled pair's
                    self.memory.pids[cluster.coordinator] = pid
                restart_at = time.monotonic() + 30
            time.sleep(1)
        oxbow = self.oxbow[fsync]
        properties = {"lake.enabled": "false"}
        if kind == "pk":
            schema = [{"name": "k", "type": "string", "nullable": False},
                      {"name": "v", "type": "binary", "nullable": True}]
            oxbow.action("create_table", {"table": f"bench.{table}", "schema": {"fields": schema},
                                          "primary_key": ["k"], "buckets": BUCKETS,
                                          "properties": properties})
        else:
            oxbow.action("create_table", {
                "table": f"bench.{table}", "buckets": BUCKETS, "properties": properties,
                "schema": {"fields": self.events_fields}})

    def upsert(self, system: str, fsync: bool, table: str) -> float:
        common = ["--table", f"bench.{table}", "--rows", self.upserts, "--keyspace", self.keyspace,
                  "--key-bytes", KEY_BYTES, "--value-bytes", VALUE_BYTES,
                  "--warmup-table", "bench.warm_pk"]
        if system == "fluss":
            return self.fluss_bench("upsert", fsync, *common, "--client", WRITER_CLIENT)[
                "rows_per_second"]
        return self.oxbow_bench("upsert", fsync, *common)["rows_per_second"]

    def lookup_one(self, system: str, table: str) -> dict:
        common = ["--table", f"bench.{table}", "--lookups", self.single_lookups, "--keyspace",
                  self.keyspace, "--key-bytes", KEY_BYTES]
        if system == "fluss":
            return self.fluss_bench("lookup", False, *common, "--window", 1,
                                    "--client", SINGLE_LOOKUP_CLIENT)
        return self.oxbow_bench("lookup", False, *common, "--batch", 1)

    def lookup_many(self, system: str, table: str) -> float:
        common = ["--table", f"bench.{table}", "--lookups", self.many_lookups, "--keyspace",
                  self.keyspace, "--key-bytes", KEY_BYTES]
        if system == "fluss":
            return self.fluss_bench("lookup", False, *common, "--window", 1000)["keys_per_second"]
        return self.oxbow_bench("lookup", False, *common, "--batch", 1000)["keys_per_second"]

    def append(self, system: str, fsync: bool, table: str) -> float:
        if system == "fluss":
            out = self.fluss_bench("append", fsync, "--table", f"bench.{table}", "--records",
                                   self.tmp / "events.rows", "--warmup-table",
                                   "bench.warm_events", "--client", WRITER_CLIENT,
                                   jvm=("-Xmx4g",))
            seconds = out["seconds"]
        else:
            out = self.oxbow_bench("produce", fsync, "--table", f"bench.{table}", "--input",
                                   self.tmp / "events.arrow", "--producers", 1, "--window", 8,
                                   "--codec", "lz4")
            seconds = out["seconds"]
        return self.raw_bytes / seconds / 1e6

    def scan(self, system: str, table: str, columns: list[str] | None) -> float:
        if system == "fluss":
            flags = ["--table", f"bench.{table}", "--expect", self.events_rows, "--reps", 3,
                     "--client", SCAN_CLIENT]
            if columns:
                flags += ["--columns", ",".join(columns)]
            return self.fluss_bench("scan", False, *flags, jvm=("-Xmx4g",))["rows_per_second"]
        flags = ["--table", f"bench.{table}", "--buckets", BUCKETS, "--reps", 3]
        if columns:
            flags += ["--columns", ",".join(columns)]
        out = self.oxbow_bench("consume", False, *flags)
        return self.events_rows / out["median"]

    def run(self, index: int) -> dict:
        """One run of every workload; the side that goes first alternates between runs."""
        order = ("fluss", "oxbow") if index % 2 == 0 else ("oxbow", "fluss")
        figures: dict = {}

        def quiet():
            if not wait_until_quiet(timeout=QUIET_TIMEOUT):
                log(f"the machine stayed busy for {QUIET_TIMEOUT} s; measuring anyway")

        def both(key, measure):
            figures[key] = {}
            for system in order:
                quiet()
                figures[key][system] = measure(system)

        for fsync in (False, True):
            table = f"pk_{index}"
            self.create(fsync, table, "pk")
            log(f"run {index + 1}: upserts, {'fsync' if fsync else 'default'} durability")
            both(("upserts/s", fsync), lambda s: self.upsert(s, fsync, table))
            if not fsync:
                log(f"run {index + 1}: lookups")
                both(("lookup", 1), lambda s: self.lookup_one(s, table))
                quiet()
                figures["echo"] = run_json([self.load, "lookup-echo", "--lookups",
                                            self.single_lookups], timeout=self.timeout)
                both(("lookups/s", 1000), lambda s: self.lookup_many(s, table))
            events = f"events_{index}"
            self.create(fsync, events, "events")
            log(f"run {index + 1}: log appends, {'fsync' if fsync else 'default'} durability")
            both(("append MB/s", fsync), lambda s: self.append(s, fsync, events))
            if not fsync:
                log(f"run {index + 1}: scans")
                both(("scan rows/s", None), lambda s: self.scan(s, events, None))
                both(("scan rows/s", 2), lambda s: self.scan(s, events, SCAN_COLUMNS))
        return figures


def summary(values: list[float], digits: int = 0) -> str:
    text = f"{statistics.median(values):,.{digits}f}"
    if len(values) > 1:
        text += f" ({min(values):,.{digits}f}–{max(values):,.{digits}f})"
    return text


def report(bench: Bench, runs: list[dict], seconds: float) -> None:
    durability = {False: "default durability", True: "an fsync per batch"}
    rows = [
        (("upserts/s", False), f"primary-key upserts/s, {durability[False]}", None),
        (("upserts/s", True), f"primary-key upserts/s, {durability[True]}", None),
        (("lookup", 1), "point lookups/s, one key at a time", "keys_per_second"),
        (("lookup", 1), "point lookup p50 µs, one key at a time (lower is better)", "p50_us"),
        (("lookups/s", 1000), "lookups/s, Fluss 1,000 in flight, Oxbow batches of 1,000", None),
        (("append MB/s", False), f"log append MB/s (20 columns), {durability[False]}", None),
        (("append MB/s", True), f"log append MB/s (20 columns), {durability[True]}", None),
        (("scan rows/s", None), "full log scan rows/s", None),
        (("scan rows/s", 2), "2-of-20-column scan rows/s", None),
    ]
    print(f"\n## Oxbow vs Fluss {FLUSS_VERSION}: {len(runs)} run(s), {seconds:.0f} s\n")
    print("| workload | Fluss | Oxbow | Oxbow/Fluss |")
    print("|---|---|---|---|")
    ratios = []
    for key, label, field in rows:
        def value(run, system):
            v = run[key][system]
            return v[field] if field else v
        fluss = [value(r, "fluss") for r in runs]
        oxbow = [value(r, "oxbow") for r in runs]
        lower_better = field == "p50_us"
        per_run = [(f / o if lower_better else o / f) for f, o in zip(fluss, oxbow)]
        print(f"| {label} | {summary(fluss)} | {summary(oxbow)} | {summary(per_run, 2)} |")
        ratios.append((label, statistics.median(per_run)))
    echo = [r["echo"]["p50_us"] for r in runs]
    print("\nThe floor under Oxbow's one-key lookups: the same round trips against an in-process "
          "Flight server that echoes each message (server_bench lookup-echo), "
          f"p50 {summary(echo)} µs.")
    rss, anon = bench.memory.peaks()
    fluss_total = sum(v for k, v in rss.items() if k != "oxbowd")
    print("\n| process | peak RSS (MB) | peak anonymous RSS (MB) |")
    print("|---|---|---|")
    for name in rss:
        print(f"| {name} | {rss[name] / 1e6:,.0f} | {anon[name] / 1e6:,.0f} |")
    print()
    for label, ratio in ratios:
        print(f"ratio oxbow/fluss {label}: {ratio:.2f}")
    print(f"ratio oxbowd RSS/Fluss's three processes' RSS: {rss['oxbowd'] / fluss_total:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI mode: small data, one run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workdir", type=pathlib.Path, default=REPO_ROOT / "build")
    parser.add_argument("--log-dir", type=pathlib.Path, default=REPO_ROOT / "build" / "vs_fluss-logs")
    args = parser.parse_args()
    runs = 1 if args.quick else args.runs
    classpath = fetch_classpath(f"Fluss {FLUSS_VERSION}", POM, FLUSS_DIR)
    classes = compile_java("FlussBench", ":".join(j for j in classpath.split(":")
                                                  if "fluss-server" not in j),
                           FLUSS_DIR / "classes")
    shutil.rmtree(args.log_dir, ignore_errors=True)
    args.log_dir.mkdir(parents=True)
    args.workdir.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=args.workdir, prefix="vs_fluss-") as tmp:
        bench = Bench(args, pathlib.Path(tmp), classpath, classes, args.log_dir)
        bench.start()
        try:
            results = [bench.run(i) for i in range(runs)]
        finally:
            bench.stop()
        report(bench, results, time.monotonic() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
