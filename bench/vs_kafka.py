#!/usr/bin/env python3
"""Oxbow against a real Apache Kafka 4.4.0 broker on this machine, side by side in one run:
produce throughput (1 and 4 producers, acks=all, with and without an fsync per batch), produce
and end-to-end latency at a fixed rate, consume throughput (Oxbow also reading 2 and 10 of the
20 columns), the CPU time clients and servers spend per GB, disk bytes per row and the servers'
RSS. Prints a table with Oxbow/Kafka ratios.

    bench/vs_kafka [--quick] [--runs 3] [--batches 1024] [--codec lz4|zstd] [--workdir DIR]

bench/vs_kafka builds oxbowd and server_bench (Release) and runs this script in the project venv;
binaries come from $OXBOW_BUILD_DIR (default <repo>/build/release). Kafka (kafka_2.13 and
kafka-tools 4.4.0, with log4j2 as the slf4j binding) comes from Maven Central on first use and is
cached in build/kafka, where bench/KafkaBench.java, the Kafka side's load generator on Kafka's
own Java client, is compiled with javac. See docs/bench.md for the method and the settings.

Both servers run on 127.0.0.1 with fresh data dirs in one temporary directory under --workdir
(default <repo>/build, the checkout's disk): one Kafka broker (KRaft, combined broker and
controller) and two oxbowd, one per flush policy (--flush fsync and --flush interval). Each is
started once. Their logs are kept in --log-dir (default <repo>/build/vs_kafka-logs). Everything
is stopped and the temporary directory removed on every exit.

The same rows (the events dataset of bench/datagen.h: 20 columns, about 1 KB a row) go to Kafka
as one record per row (bench/row_encoding.h) and to Oxbow as Arrow batches of 1024 rows, both
compressed with --codec by the client. Throughput is rows/s times the raw row size (the row
encoding's bytes, the same for both): MB/s of rows, MB = 10^6 bytes. Each measurement runs on
both systems back to back, the order alternating between runs; --runs full runs give the median
and the range of every figure and of every Oxbow/Kafka ratio.
"""

from __future__ import annotations

import argparse
import base64
import os
import pathlib
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import pyarrow.ipc as ipc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from peers import MemorySampler, compile_java, die_with_parent, fetch_classpath, log  # noqa: E402
from server_bench import REPO_ROOT, Oxbowd, binary, free_port, run_json  # noqa: E402

KAFKA_VERSION = "4.4.0"
KAFKA_DIR = REPO_ROOT / "build" / "kafka"
# Kafka's slf4j-api is 1.7, so its log4j2 binding is log4j-slf4j-impl, at the version of the
# log4j-core that Kafka's dependencies bring.
POM = f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>oxbow.bench</groupId>
  <artifactId>kafka-broker</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId>
      <version>{KAFKA_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId>
      <version>{KAFKA_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId>
      <version>2.25.5</version>
    </dependency>
  </dependencies>
</project>
"""
# The JVM flags of Kafka's bin/kafka-server-start.sh and bin/kafka-run-class.sh.
KAFKA_BROKER_JVM = ["-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                    "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                    "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"]

BATCH_ROWS = 1024  # rows per Arrow batch (about 1 MB); Kafka's batch.size is 1 MiB
LINGER_MS = 5  # Kafka 4's default linger.ms; Oxbow's fixed-rate producer batches the same way


def producer_config(codec: str) -> str:
    """The Kafka producer's settings (all others are Kafka 4.4's defaults)."""
    return f"acks=all,compression.type={codec},linger.ms={LINGER_MS},batch.size=1048576"


# Consumer settings: OpenMessaging Benchmark's fetch size and the socket buffer of Kafka's own
# ConsumerPerformance tool; fetch.max.wait.ms and fetch.min.bytes stay at their defaults.
CONSUMER_CONFIG = "max.partition.fetch.bytes=10485760,receive.buffer.bytes=2097152"
PROJECTIONS = {  # Oxbow's server-side projections: 2 and 10 of the 20 columns
    2: ["event_time", "price"],
    10: ["event_id", "event_time", "user_id", "item_id", "quantity", "price", "country",
         "currency", "event_type", "url"],
}


# ---- Kafka: fetch, compile, broker ----

def fetch_kafka() -> str:
    """Kafka's classpath, resolved by Maven into build/kafka on first use."""
    return fetch_classpath(f"Kafka {KAFKA_VERSION}", POM, KAFKA_DIR)


def compile_kafka_bench(classpath: str) -> pathlib.Path:
    """Compiles bench/KafkaBench.java into build/kafka/classes when the source is newer."""
    return compile_java("KafkaBench", classpath, KAFKA_DIR / "classes")


def random_cluster_id() -> str:
    """A cluster id as Kafka's Uuid.randomUuid makes it: never starting with "-",
    which kafka-storage's argument parser would read as an option."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


class KafkaBroker:
    """One KRaft node, broker and controller, on 127.0.0.1 with a fresh log dir."""

    def __init__(self, classpath: str, data_dir: pathlib.Path, config_dir: pathlib.Path,
                 log_dir: pathlib.Path):
        self.port, controller_port = free_port(), free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.data_dir = data_dir
        self.log_file = log_dir / "kafka-server.log"
        listeners = f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{controller_port}"
        self.properties = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
            "listeners": listeners,
            "advertised.listeners": listeners,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(data_dir),
            # A single node: every internal topic has one replica.
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "auto.create.topics.enable": "false",
            # Deleted topics leave the disk within a second (default 60 s), between runs.
            "file.delete.delay.ms": "1000",
        }
        config = config_dir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.properties.items()))
        log4j = config_dir / "log4j2.properties"
        log4j.write_text(
            "rootLogger.level = INFO\n"
            "rootLogger.appenderRef.file.ref = file\n"
            "appender.file.type = File\n"
            "appender.file.name = file\n"
            f"appender.file.fileName = {self.log_file}\n"
            "appender.file.layout.type = PatternLayout\n"
            "appender.file.layout.pattern = [%d] %p %m (%c)%n\n")
        java = ["java", f"-Dlog4j2.configurationFile={log4j}", "-cp", classpath]
        cluster_id = random_cluster_id()
        fmt = subprocess.run(java + ["kafka.tools.StorageTool", "format", "--standalone",
                                     "--cluster-id", cluster_id, "--config", str(config)],
                             capture_output=True, text=True, timeout=120)
        if fmt.returncode != 0:
            sys.exit(f"vs_kafka.py: kafka StorageTool format failed:\n{fmt.stdout}{fmt.stderr}")
        self.stdout = open(log_dir / "kafka-stdout.log", "wb")
        self.proc = subprocess.Popen(
            ["java", *KAFKA_BROKER_JVM, f"-Dlog4j2.configurationFile={log4j}", "-cp", classpath,
             "kafka.Kafka", str(config)],
            stdout=self.stdout, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        deadline = time.monotonic() + 120
        while not self._started():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                sys.exit(f"vs_kafka.py: the Kafka broker did not start; see {self.log_file}")
            time.sleep(0.1)

    def _started(self) -> bool:
        if not self.log_file.is_file() or "Kafka Server started" not in self.log_file.read_text():
            return False
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stdout.close()


def disk_bytes(directories: list[pathlib.Path]) -> tuple[int, int]:
    """Bytes of the log segment files (*.log) and blocks allocated to every file, under dirs."""
    log_bytes = allocated = 0
    for directory in directories:
        for path in directory.rglob("*"):
            if path.is_file():
                st = path.stat()
                allocated += st.st_blocks * 512
                if path.suffix == ".log":
                    log_bytes += st.st_size
    return log_bytes, allocated


# ---- the benchmark ----

class Bench:
    def __init__(self, args, tmp: pathlib.Path, classpath: str, classes: pathlib.Path,
                 log_dir: pathlib.Path):
        self.args, self.tmp, self.classpath, self.classes = args, tmp, classpath, classes
        self.log_dir = log_dir
        self.load = binary("bench/server_bench")
        self.arrow_path, self.records_path = tmp / "events.arrow", tmp / "events.rows"
        generated = run_json([self.load, "generate-events", "--batches", args.batches,
                              "--rows", BATCH_ROWS, "--arrow", self.arrow_path,
                              "--records", self.records_path], timeout=600)
        self.rows, self.raw_bytes = generated["rows"], generated["raw_bytes"]
        self.arrow_bytes = generated["arrow_bytes"]
        self.schema = ipc.open_file(str(self.arrow_path)).schema
        self.timeout = 120 if args.quick else 1800
        dataset_gb = os.path.getsize(self.records_path) / 1e9
        self.client_jvm = [f"-Xmx{int(1.5 * dataset_gb) + 1}g", "-XX:+UseG1GC"]
        self.servers: list = []
        self.kafka_producer_metrics: dict = {}  # of the last KafkaBench produce

    def start_servers(self) -> None:
        for name in ("kafka-data", "oxbow-fsync", "oxbow-interval", "kafka-config"):
            (self.tmp / name).mkdir()
        log("starting oxbowd --flush fsync and --flush interval, and the Kafka broker")
        self.oxbow = {
            fsync: Oxbowd(self.tmp / f"oxbow-{policy}",
                          self.log_dir / f"oxbowd-{policy}.log", ["--flush", policy])
            for fsync, policy in ((True, "fsync"), (False, "interval"))}
        self.servers += self.oxbow.values()
        self.kafka = KafkaBroker(self.classpath, self.tmp / "kafka-data", self.tmp / "kafka-config",
                                 self.log_dir)
        self.servers.append(self.kafka)
        self.memory = MemorySampler({"kafka": self.kafka.proc.pid,
                                     "oxbowd-fsync": self.oxbow[True].proc.pid,
                                     "oxbowd-interval": self.oxbow[False].proc.pid})

    def stop_servers(self) -> None:
        if hasattr(self, "memory"):
            self.memory.stop()
        for server in reversed(self.servers):
            try:
                server.stop()
            except Exception as e:  # keep stopping the others
                log(f"stopping {type(server).__name__}: {e}")

    # -- one system's side of a measurement --

    def kafka_bench(self, command: str, *flags) -> dict:
        return run_json(["java", *self.client_jvm, "-Dlog4j2.configurationFile=" +
                         str(self.tmp / "kafka-config" / "log4j2.properties"),
                         "-cp", f"{self.classes}:{self.classpath}", "KafkaBench", command,
                         "--bootstrap", self.kafka.bootstrap, *flags], timeout=self.timeout)

    def create_table(self, fsync: bool, table: str, buckets: int) -> None:
        fields = [{"name": f.name, "type": str(f.type), "nullable": f.nullable}
                  for f in self.schema]
        # No tiering to the lake: Kafka has none here either.
        self.oxbow[fsync].action("create_table", {
            "table": table, "schema": {"fields": fields}, "buckets": buckets,
            "properties": {"lake.enabled": "false"}})

    def kafka_produce(self, topic: str, fsync: bool, producers: int) -> dict:
        flags = ["--topic", topic, "--records", self.records_path, "--batch-rows", BATCH_ROWS,
                 "--producers", producers, "--partitions", 4, "--server-pid", self.kafka.proc.pid,
                 "--producer", producer_config(self.args.codec),
                 "--warmup-records", min(self.rows // 10, 100_000)]
        if fsync:
            flags += ["--topic-config", "flush.messages=1"]
        result = self.kafka_bench("produce", *flags)
        assert result["records"] == self.rows, result
        self.kafka_producer_metrics = result
        return {**result, "rows_per_second": self.rows / result["seconds"]}

    def oxbow_produce(self, table: str, fsync: bool, producers: int) -> dict:
        self.create_table(fsync, table, 4)
        server = self.oxbow[fsync]
        result = run_json([self.load, "produce", "--address", server.address, "--table", table,
                           "--input", self.arrow_path, "--producers", producers, "--window", 4,
                           "--codec", self.args.codec, "--server-pid", server.proc.pid],
                          timeout=self.timeout)
        assert result["rows"] == self.rows, result
        # Under --flush interval rows are readable (and counted) from the next fsync, <= 10 ms
        # after their ack.
        deadline = time.monotonic() + 5
        while (stored := server.rows(table)) != self.rows and time.monotonic() < deadline:
            time.sleep(0.01)
        assert stored == self.rows, f"oxbowd holds {stored} rows of {table}, produced {self.rows}"
        return {**result, "rows_per_second": self.rows / result["seconds"]}

    def kafka_rate(self, topic: str, fsync: bool, rows_per_second: float) -> dict:
        flags = ["--topic", topic, "--records", self.records_path, "--partitions", 4,
                 "--rows-per-second", f"{rows_per_second:.0f}", "--seconds", self.args.seconds,
                 "--warmup-seconds", self.args.warmup_seconds,
                 "--producer", producer_config(self.args.codec), "--consumer", CONSUMER_CONFIG]
        if fsync:
            flags += ["--topic-config", "flush.messages=1"]
        return self.kafka_bench("rate", *flags)

    def oxbow_rate(self, table: str, fsync: bool, rows_per_second: float) -> dict:
        self.create_table(fsync, table, 1)
        return run_json([self.load, "rate", "--address", self.oxbow[fsync].address,
                         "--table", table, "--input", self.arrow_path,
                         "--rows-per-second", f"{rows_per_second:.0f}",
                         "--seconds", self.args.seconds,
                         "--warmup-seconds", self.args.warmup_seconds,
                         "--linger-ms", LINGER_MS, "--max-batch-rows", BATCH_ROWS,
                         "--window", 5, "--codec", self.args.codec], timeout=self.timeout)

    def kafka_consume(self, topic: str) -> dict:
        result = self.kafka_bench("consume", "--topic", topic, "--expect", self.rows,
                                  "--reps", self.args.reps, "--consumer", CONSUMER_CONFIG,
                                  "--server-pid", self.kafka.proc.pid)
        assert result["records"] == self.rows and result["bytes"] == self.raw_bytes, result
        return {**result, "rows_per_second": self.rows / result["best"]}

    def oxbow_consume(self, table: str, columns: list[str]) -> dict:
        server = self.oxbow[True]
        cmd = [self.load, "consume", "--address", server.address, "--table", table,
               "--buckets", 4, "--reps", self.args.reps, "--server-pid", server.proc.pid]
        if columns:
            cmd += ["--columns", ",".join(columns)]
        result = run_json(cmd, timeout=self.timeout)
        assert result["rows"] == self.rows, result
        return {**result, "rows_per_second": self.rows / result["best"]}

    def oxbow_table_dir(self, table: str) -> pathlib.Path:
        table_id = self.oxbow[True].action("describe_table", {"table": table})["table_id"]
        return self.tmp / "oxbow-fsync" / "tables" / str(table_id)

    def warm_up(self) -> None:
        """One untimed produce per server, so the first measurement does not meet a cold JIT
        in the broker (the clients warm up on their own: KafkaBench sends to a warm-up topic
        first)."""
        log("warm-up: one untimed produce per server")
        self.kafka_produce("warmup", False, 4)
        for fsync in (False, True):
            self.oxbow_produce("bench.warmup", fsync, 4)
            self.oxbow[fsync].action("drop_table", {"table": "bench.warmup"})
        self.kafka_bench("delete-topics", "--topics", "warmup,warmup-warmup")

    # -- one full run: every measurement, both systems --

    def run(self, index: int) -> dict:
        """Every measurement once; returns {key: (kafka, oxbow)}."""
        kafka_first = index % 2 == 0
        figures, topics, tables = {}, [], []
        load_start = os.getloadavg()[0]
        self.memory.reset()

        def pair(key, kafka_side, oxbow_side):
            sides = [("kafka", kafka_side), ("oxbow", oxbow_side)]
            values = dict((name, side()) for name, side in (sides if kafka_first else sides[::-1]))
            figures[key] = (values["kafka"], values["oxbow"])
            return figures[key]

        mode_name = {False: "nofsync", True: "fsync"}
        for fsync in (False, True):
            for producers in (1, 4):
                name = f"r{index}-{mode_name[fsync]}-p{producers}"
                topics += [name, name + "-warmup"]
                table = "bench." + name.replace("-", "_")
                tables.append((fsync, table))
                log(f"run {index + 1}: produce, {producers} producer(s), {mode_name[fsync]}")
                pair(("produce", fsync, producers),
                     lambda: self.kafka_produce(name, fsync, producers),
                     lambda: self.oxbow_produce(table, fsync, producers))
                if fsync and producers == 4:  # read by the consumers below
                    consume_topic, consume_table = name, table
                    partitions = sorted(self.kafka.data_dir.glob(name + "-[0-9]*"))
                    kafka_log, kafka_all = disk_bytes(partitions)
                    oxbow_log, oxbow_all = disk_bytes([self.oxbow_table_dir(table)])
                    figures["disk_log"] = (kafka_log / self.rows, oxbow_log / self.rows)
                    figures["disk_all"] = (kafka_all / self.rows, oxbow_all / self.rows)
                    figures["kafka_producer"] = self.kafka_producer_metrics

        for fsync in (False, True):
            slower = min(side["rows_per_second"] for side in figures[("produce", fsync, 1)])
            rows_per_second = slower / 2
            name = f"r{index}-{mode_name[fsync]}-rate"
            topics.append(name)
            table = "bench." + name.replace("-", "_")
            tables.append((fsync, table))
            mbs = rows_per_second * self.raw_bytes / self.rows / 1e6
            log(f"run {index + 1}: fixed rate {mbs:,.1f} MB/s, {mode_name[fsync]}")
            kafka, oxbow = pair(("rate", fsync),
                                lambda: self.kafka_rate(name, fsync, rows_per_second),
                                lambda: self.oxbow_rate(table, fsync, rows_per_second))
            figures[("rate_rows", fsync)] = (rows_per_second, rows_per_second)
            for system, result in (("Kafka", kafka), ("Oxbow", oxbow)):
                if result["achieved_rows_per_second"] < 0.95 * rows_per_second:
                    log(f"warning: {system} reached {result['achieved_rows_per_second']:,.0f} of "
                        f"{rows_per_second:,.0f} rows/s")

        log(f"run {index + 1}: consume")
        kafka_full, _ = pair(("consume", 20), lambda: self.kafka_consume(consume_topic),
                             lambda: self.oxbow_consume(consume_table, []))
        for ncols in (10, 2):  # Kafka cannot prune columns: it reads everything
            figures[("consume", ncols)] = (
                kafka_full, self.oxbow_consume(consume_table, PROJECTIONS[ncols]))

        log(f"run {index + 1}: dropping its topics and tables")
        self.kafka_bench("delete-topics", "--topics", ",".join(topics))
        for fsync, table in tables:
            self.oxbow[fsync].action("drop_table", {"table": table})
        figures["load"] = (load_start, os.getloadavg()[0])
        peak_rss, peak_anon = self.memory.peaks()
        oxbowd = max(("oxbowd-fsync", "oxbowd-interval"), key=lambda name: peak_rss[name])
        figures["rss"] = (peak_rss["kafka"], peak_rss[oxbowd])
        figures["rss_anon"] = (peak_anon["kafka"], max(peak_anon["oxbowd-fsync"],
                                                       peak_anon["oxbowd-interval"]))
        return figures


def summary(values: list[float], digits: int) -> str:
    """The median, and [min-max] when there are several values."""
    text = f"{statistics.median(values):,.{digits}f}"
    if len(values) > 1:
        text += f" [{min(values):,.{digits}f}-{max(values):,.{digits}f}]"
    return text


def report(args, bench: Bench, runs: list[dict], seconds: float) -> None:
    row_bytes = bench.raw_bytes / bench.rows
    mode = {False: "no fsync", True: "fsync every batch"}
    consume_label = {20: "all 20 columns", 10: "Oxbow 10 of 20 columns, Kafka all",
                     2: "Oxbow 2 of 20 columns, Kafka all"}

    def cpu_per_gb(side: dict) -> float:
        """Client + server CPU seconds per GB of rows produced or read."""
        return (side["client_cpu_seconds"] + side["server_cpu_seconds"]) / (bench.raw_bytes / 1e9)

    def per_run(key, value) -> list[tuple[float, float]]:
        return [tuple(value(side) for side in r[key]) for r in runs]

    # (label, per-run (kafka, oxbow) values, digits, which way is better, target on the ratio)
    lines = []
    produce_label = {
        (fsync, producers): f"{producers} producer{'s' * (producers > 1)}, {mode[fsync]}"
        for fsync in (False, True) for producers in (1, 4)}
    for (fsync, producers), label in produce_label.items():
        lines.append((f"produce MB/s, {label}", per_run(
            ("produce", fsync, producers), lambda side: side["rows_per_second"] * row_bytes / 1e6),
            1, "higher", 2.0))
    for (fsync, producers), label in produce_label.items():
        lines.append((f"produce CPU s per GB (client + server), {label}", per_run(
            ("produce", fsync, producers), cpu_per_gb),
            2, "lower", None))
    for fsync in (False, True):
        rate = [r[("rate_rows", fsync)][0] * row_bytes / 1e6 for r in runs]
        for stat, label in (("ack_p50_ms", "p50"), ("ack_p99_ms", "p99"),
                            ("ack_p999_ms", "p99.9")):
            lines.append((f"produce latency {label} ms at {summary(rate, 0)} MB/s, {mode[fsync]}",
                          [(r[("rate", fsync)][0][stat], r[("rate", fsync)][1][stat])
                           for r in runs], 2, "lower", 1.0 if label == "p99" else None))
        for stat, label in (("e2e_p50_ms", "p50"), ("e2e_p99_ms", "p99")):
            lines.append((f"end-to-end latency {label} ms at {summary(rate, 0)} MB/s, "
                          f"{mode[fsync]}",
                          [(r[("rate", fsync)][0][stat], r[("rate", fsync)][1][stat])
                           for r in runs], 2, "lower", None))
    for ncols in (20, 10, 2):
        lines.append((f"consume k rows/s, {consume_label[ncols]}", per_run(
            ("consume", ncols), lambda side: side["rows_per_second"] / 1e3),
            1, "higher", 5.0 if ncols == 2 else None))
    for ncols in (20, 10, 2):
        lines.append((f"consume CPU s per GB (client + server), {consume_label[ncols]}", per_run(
            ("consume", ncols), cpu_per_gb),
            2, "lower", None))
    lines.append(("disk bytes per row, log segment files (.log)",
                  [r["disk_log"] for r in runs], 1, "lower", None))
    lines.append(("disk bytes per row, all files of the topic / table (allocated)",
                  [r["disk_all"] for r in runs], 1, "lower", 1.0))
    lines.append(("server RSS peak MB (VmRSS; oxbowd: the larger of its two)",
                  [tuple(v / 1e6 for v in r["rss"]) for r in runs], 0, "lower", None))
    lines.append(("server anonymous RSS peak MB (RssAnon)",
                  [tuple(v / 1e6 for v in r["rss_anon"]) for r in runs], 0, "lower", None))

    producer = runs[-1]["kafka_producer"]
    print(f"Oxbow vs Apache Kafka {KAFKA_VERSION}: {bench.rows:,} rows x 20 columns, "
          f"{row_bytes:.0f} raw bytes a row ({bench.raw_bytes / 1e6:,.1f} MB of rows; Arrow "
          f"{bench.arrow_bytes / 1e6:,.1f} MB), codec {args.codec}; {len(runs)} run"
          f"{'s' * (len(runs) > 1)}{': median [min-max]' if len(runs) > 1 else ''}")
    print(f"Kafka: one KRaft broker+controller, 4 partitions, replication factor 1; producer "
          f"{producer_config(args.codec)} (last run, 4 producers with fsync: batch-size-avg "
          f"{producer['batch_size_avg']:,.0f} B, records-per-request-avg "
          f"{producer['records_per_request_avg']:,.0f}, compression-rate-avg "
          f"{producer['compression_rate_avg']:.2f}); consumer {CONSUMER_CONFIG}; fsync = topic "
          f"flush.messages=1")
    print(f"Oxbow: oxbowd --flush fsync / --flush interval, 4 buckets, lake off; Arrow batches of "
          f"{BATCH_ROWS} rows, 4 unacknowledged per producer; fixed rate: linger {LINGER_MS} ms, "
          f"at most {BATCH_ROWS} rows a batch, 5 unacknowledged")
    print(f"fixed rate: the same for both, half the slower 1-producer maximum of the run; "
          f"{args.warmup_seconds:g} s warm-up + {args.seconds:g} s measured")
    print("load average (1 min) at the start and end of each run: " +
          ", ".join(f"{a:.1f}-{b:.1f}" for a, b in (r["load"] for r in runs)))
    print()
    print("| measurement | Kafka | Oxbow | Oxbow/Kafka |")
    print("|---|---:|---:|---:|")
    ratio_lines = []
    for label, pairs, digits, better, target in lines:
        ratios = [oxbow / kafka if kafka else float("inf") for kafka, oxbow in pairs]
        print(f"| {label} | {summary([k for k, _ in pairs], digits)} | "
              f"{summary([o for _, o in pairs], digits)} | {summary(ratios, 2)} |")
        ratio = statistics.median(ratios)
        verdict = ""
        if target is not None:
            met = ratio >= target if better == "higher" else ratio <= target
            verdict = (f" ({'meets' if met else 'MISSES'} target "
                       f"{'>=' if better == 'higher' else '<='} {target:g})")
        ratio_lines.append(f"ratio oxbow/kafka {label}: {ratio:.2f}{verdict}")
    print()
    print("\n".join(ratio_lines))
    print()
    print("CPU seconds per GB of rows, medians: client / server")
    print()
    print("| measurement | Kafka client | Kafka server | Oxbow client | Oxbow server |")
    print("|---|---:|---:|---:|---:|")
    gigabytes = bench.raw_bytes / 1e9
    for key, label in ([(("produce",) + k, f"produce, {v}") for k, v in produce_label.items()] +
                       [(("consume", n), f"consume, {v}") for n, v in consume_label.items()]):
        cells = [statistics.median(r[key][side][part] for r in runs) / gigabytes
                 for side in (0, 1) for part in ("client_cpu_seconds", "server_cpu_seconds")]
        print(f"| {label} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    print()
    for ncols in (20, 10, 2):
        moved = statistics.median(r[("consume", ncols)][1]["bytes"] for r in runs)
        print(f"Oxbow {ncols} of 20 columns: {moved / 1e6:,.1f} MB of Arrow buffers read "
              f"({moved / bench.arrow_bytes:.1%} of the rows)")
    print(f"vs_kafka.py took {seconds:.0f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="16 MB, one run, short fixed-rate phases: about a minute")
    parser.add_argument("--runs", type=int, help="full runs (default 3; quick 1)")
    parser.add_argument("--batches", type=int,
                        help=f"batches of {BATCH_ROWS} rows in the dataset (default 1024, "
                             f"about 1 GB; quick 16)")
    parser.add_argument("--codec", choices=("lz4", "zstd"), default="lz4",
                        help="compression on both sides (default lz4)")
    parser.add_argument("--seconds", type=float, help="measured seconds at the fixed rate "
                                                      "(default 20; quick 2)")
    parser.add_argument("--warmup-seconds", type=float,
                        help="seconds at the fixed rate before measuring (default 5; quick 1)")
    parser.add_argument("--reps", type=int, help="consumer reps, best counts (default 3; quick 1)")
    parser.add_argument("--workdir", default=str(REPO_ROOT / "build"),
                        help="parent of the temporary data dirs (default <repo>/build)")
    parser.add_argument("--log-dir", default=str(REPO_ROOT / "build" / "vs_kafka-logs"),
                        help="where the servers' logs are kept "
                             "(default <repo>/build/vs_kafka-logs)")
    args = parser.parse_args()
    q = args.quick
    args.runs = args.runs or (1 if q else 3)
    args.batches = args.batches or (16 if q else 1024)
    args.seconds = args.seconds or (2 if q else 20)
    args.warmup_seconds = args.warmup_seconds or (1 if q else 5)
    args.reps = args.reps or (1 if q else 3)
    # SIGTERM unwinds like Ctrl-C, so the servers stop and the temporary directory goes.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    started = time.monotonic()
    classpath = fetch_kafka()
    classes = compile_kafka_bench(classpath)
    log_dir = pathlib.Path(args.log_dir)
    shutil.rmtree(log_dir, ignore_errors=True)
    log_dir.mkdir(parents=True)
    pathlib.Path(args.workdir).mkdir(parents=True, exist_ok=True)
    runs = []
    with tempfile.TemporaryDirectory(prefix="oxbow-vs-kafka-", dir=args.workdir) as tmp:
        bench = Bench(args, pathlib.Path(tmp), classpath, classes, log_dir)
        try:
            bench.start_servers()
            bench.warm_up()
            for index in range(args.runs):
                runs.append(bench.run(index))
        finally:
            bench.stop_servers()
    report(args, bench, runs, time.monotonic() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
