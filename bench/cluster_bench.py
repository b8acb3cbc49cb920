#!/usr/bin/env python3
"""Three servers side by side in one run: a 3-broker Kafka 4.4 KRaft cluster and a 3-server Oxbow
cluster on one ZooKeeper, on this machine (docs/bench.md, "Cluster").

    .venv/bin/python bench/cluster_bench.py [--records 200000] [--record-size 1000] [--runs 3]
                                            [--kills 10] [--quick] [--workdir DIR]

- produce: Kafka's ProducerPerformance (kafka-tools 4.4.0, the Java client; acks=all, lz4,
  linger.ms=5) into a topic of 4 partitions, replication factor 3, min.insync.replicas 2, on
  each cluster; and into one oxbowd without ZooKeeper (the single-server ratio). Both clusters
  keep their defaults for durability: Kafka acknowledges from the page cache of the in-sync
  replicas; oxbowd runs --flush fsync (every replica fsyncs before it acknowledges) and, as a
  second figure, --flush interval (the page cache, as Kafka).
- failover: a confluent-kafka producer (acks=all, linger 0, retries on) sends to partition 0
  every 2 ms; the bench SIGKILLs that partition's leader (found in Metadata), takes the time
  from the kill to the first acknowledged record sent after it, restarts the node, waits for the
  partition's ISR to have 3 members again, and repeats --kills times. Both clusters declare a
  silent member dead after 2 s: Kafka broker.session.timeout.ms=2000 (heartbeats every 500 ms),
  oxbowd --zookeeper-session-timeout-ms 2000.
- rolling restart: an idempotent confluent-kafka producer (acks=all) sends to partition 0 every
  2 ms; after 10 s undisturbed, each node in turn gets SIGTERM (both do a controlled shutdown:
  leadership moves first), is started again and awaited back in the partition's ISR. Prints
  send-to-ack p50/p99/max steady and during the roll, and how many records failed.
- RSS: the peak of every server process (Kafka: each JVM; Oxbow: each oxbowd and ZooKeeper).
"""

from __future__ import annotations

import argparse
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from kafka_perf import PRODUCER, run_tool  # noqa: E402
from server_bench import REPO_ROOT, binary, free_port  # noqa: E402
from vs_kafka import (KAFKA_BROKER_JVM, MemorySampler, die_with_parent, fetch_kafka,  # noqa: E402
                      log, random_cluster_id)

SESSION_MS = 2000


class Node:
    """A server process the bench starts, SIGKILLs and starts again."""

    proc: subprocess.Popen | None = None

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class KafkaNode(Node):
    """One KRaft node (broker and controller) of a static 3-voter quorum; restartable."""

    def __init__(self, classpath: str, node_id: int, ports: dict, tmp: pathlib.Path,
                 cluster_id: str):
        self.classpath, self.node_id, self.port = classpath, node_id, ports[node_id][0]
        self.bootstrap = f"127.0.0.1:{self.port}"
        home = tmp / f"kafka{node_id}"
        home.mkdir()
        self.log_file = home / "server.log"
        listeners = (f"PLAINTEXT://127.0.0.1:{self.port},"
                     f"CONTROLLER://127.0.0.1:{ports[node_id][1]}")
        voters = ",".join(f"{i}@127.0.0.1:{p[1]}" for i, p in ports.items())
        properties = {
            "process.roles": "broker,controller", "node.id": str(node_id),
            "controller.quorum.voters": voters, "listeners": listeners,
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(home / "data"), "auto.create.topics.enable": "false",
            "broker.session.timeout.ms": str(SESSION_MS), "broker.heartbeat.interval.ms": "500",
            "offsets.topic.replication.factor": "3", "transaction.state.log.replication.factor": "3",
        }
        self.config = home / "server.properties"
        self.config.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
        self.log4j = home / "log4j2.properties"
        self.log4j.write_text(
            "rootLogger.level = INFO\nrootLogger.appenderRef.file.ref = file\n"
            "appender.file.type = File\nappender.file.name = file\n"
            f"appender.file.fileName = {self.log_file}\nappender.file.layout.type = PatternLayout\n"
            "appender.file.layout.pattern = [%d] %p %m (%c)%n\n")
        fmt = subprocess.run(["java", f"-Dlog4j2.configurationFile={self.log4j}", "-cp", classpath,
                              "kafka.tools.StorageTool", "format", "--cluster-id", cluster_id,
                              "--config", str(self.config)],
                             capture_output=True, text=True, timeout=120)
        if fmt.returncode != 0:
            sys.exit(f"cluster_bench.py: StorageTool format failed:\n{fmt.stdout}{fmt.stderr}")
    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["java", *KAFKA_BROKER_JVM, f"-Dlog4j2.configurationFile={self.log4j}", "-cp",
             self.classpath, "kafka.Kafka", str(self.config)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent)


class OxbowNode(Node):
    """One oxbowd of the cluster (or alone, without zookeeper); restartable on fixed ports."""

    def __init__(self, node_id: int, tmp: pathlib.Path, zookeeper: str | None, flush: str):
        self.node_id = node_id
        self.port, self.kafka_port = free_port(), free_port()
        self.bootstrap = f"127.0.0.1:{self.kafka_port}"
        self.home = tmp / f"oxbow{node_id}-{flush}"
        self.args = [str(binary("tools/oxbowd")), "--data-dir", str(self.home / "data"),
                     "--warehouse", str(self.home / "warehouse"),
                     "--listen", f"127.0.0.1:{self.port}",
                     "--kafka-listen", self.bootstrap, "--catalog-listen", "",
                     "--metrics-listen", "", "--flush", flush]
        if zookeeper:
            self.args += ["--zookeeper", zookeeper, "--server-id", str(node_id),
                          "--zookeeper-session-timeout-ms", str(SESSION_MS)]
        self.proc = None

    def start(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(self.args, stdout=open(self.home / "oxbowd.log", "ab"),
                                     stderr=subprocess.STDOUT, preexec_fn=die_with_parent)


def wait_brokers(bootstrap: str, count: int, timeout: float = 120) -> AdminClient:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if len(admin.list_topics(timeout=2).brokers) >= count:
                return admin
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.2)
    sys.exit(f"cluster_bench.py: {count} brokers did not come up at {bootstrap}")


def produce(classpath: str, bootstrap: str, args, replication: int, topic_config: list[str]) -> dict:
    topic = "perf-" + uuid.uuid4().hex[:8]
    run_tool(classpath, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap,
             "--create", "--topic", topic, "--partitions", 4, "--replication-factor", replication,
             *topic_config)
    out = run_tool(classpath, "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
                   "--num-records", args.records, "--record-size", args.record_size,
                   "--throughput", -1, "--command-property", f"bootstrap.servers={bootstrap}",
                   "acks=all", "compression.type=lz4", "linger.ms=5")
    last = PRODUCER.findall(out)[-1]
    return {"MB/s": float(last[2]), "records/s": float(last[1]), "p99 ms": float(last[7])}


def isr_of(admin: AdminClient, topic: str) -> tuple[int, list[int]]:
    partition = admin.list_topics(topic, timeout=5).topics[topic].partitions[0]
    return partition.leader, list(partition.isrs)


def wait_in_sync(admin: AdminClient, topic: str, nodes: dict, timeout: float = 120) -> int:
    """Until partition 0 of `topic` has 3 in-sync replicas and a leader; returns the leader."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            leader, isr = isr_of(admin, topic)
            if len(isr) == 3 and leader in nodes:
                return leader
        except Exception:  # noqa: BLE001 - metadata while electing
            pass
        time.sleep(0.2)
    sys.exit(f"cluster_bench.py: partition 0 of {topic} not fully in sync")


def failover(bootstrap: str, nodes: dict, kills: int, topic_config: dict) -> list[float]:
    """Kill-to-first-ack times (ms) of `kills` SIGKILLs of partition 0's leader."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = "failover-" + uuid.uuid4().hex[:8]
    admin.create_topics([NewTopic(topic, 1, 3, config=topic_config)])[topic].result(60)
    acks: list[tuple[float, float]] = []  # (sent, acknowledged)
    lock = threading.Lock()
    stop = threading.Event()

    def send() -> None:
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                             "retries": 1_000_000, "retry.backoff.ms": 20,
                             "message.timeout.ms": 120_000, "topic.metadata.refresh.interval.ms": 1000,
                             "enable.idempotence": False})
        while not stop.is_set():
            sent = time.monotonic()

            def delivered(err, msg, sent=sent):
                if err is None:
                    with lock:
                        acks.append((sent, time.monotonic()))
            producer.produce(topic, b"x" * 100, partition=0, on_delivery=delivered)
            producer.poll(0.002)
        producer.flush(30)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    times = []
    try:
        for k in range(kills):
            leader = wait_in_sync(admin, topic, nodes)
            time.sleep(0.5)
            killed_at = time.monotonic()
            nodes[leader].kill()
            while True:
                with lock:
                    after = [acked for sent, acked in acks if sent > killed_at]
                if after:
                    break
                if time.monotonic() - killed_at > 120:
                    sys.exit("cluster_bench.py: no acknowledged write within 120 s of a kill")
                time.sleep(0.01)
            # To the first acknowledgement of a record sent after the kill: the new leader's.
            times.append((min(after) - killed_at) * 1000)
            nodes[leader].start()
            log(f"kill {k + 1}/{kills}: {times[-1]:.0f} ms")
    finally:
        stop.set()
        sender.join(timeout=60)
    return times


def rolling_restart(bootstrap: str, nodes: dict, topic_config: dict,
                    steady_s: float = 10.0) -> tuple[list[float], list[float], int]:
    """Send-to-ack latencies (ms) of an idempotent producer (acks=all) sending every 2 ms:
    `steady_s` seconds undisturbed, then during a rolling restart (each node in turn SIGTERMed,
    started again, and awaited back in partition 0's ISR). Returns (steady, during the roll,
    records that failed)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = "roll-" + uuid.uuid4().hex[:8]
    admin.create_topics([NewTopic(topic, 1, 3, config=topic_config)])[topic].result(60)
    acks: list[tuple[float, float]] = []  # (sent, acknowledged)
    failed = []
    lock = threading.Lock()
    stop = threading.Event()

    def send() -> None:
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                             "enable.idempotence": True, "message.timeout.ms": 120_000})
        while not stop.is_set():
            sent = time.monotonic()

            def delivered(err, msg, sent=sent):
                with lock:
                    if err is None:
                        acks.append((sent, time.monotonic()))
                    else:
                        failed.append(err)
            producer.produce(topic, b"x" * 100, partition=0, on_delivery=delivered)
            producer.poll(0.002)
        producer.flush(60)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        wait_in_sync(admin, topic, nodes)
        time.sleep(2)
        steady_from = time.monotonic()
        time.sleep(steady_s)
        roll_from = time.monotonic()
        for i, node in nodes.items():
            node.stop()
            node.start()
            wait_in_sync(admin, topic, nodes, timeout=180)
            log(f"rolled node {i}")
        roll_to = time.monotonic()
    finally:
        stop.set()
        sender.join(timeout=120)
    steady = [(a - s) * 1000 for s, a in acks if steady_from <= s < roll_from]
    rolling = [(a - s) * 1000 for s, a in acks if roll_from <= s < roll_to]
    return steady, rolling, len(failed)


def summary(values: list[float]) -> str:
    values = sorted(values)
    p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
    return f"p50 {statistics.median(values):.0f}  p99 {p99:.0f}  max {values[-1]:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--record-size", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="20,000 records, one run, 3 kills")
    parser.add_argument("--workdir", type=pathlib.Path, default=REPO_ROOT / "build")
    args = parser.parse_args()
    if args.quick:
        args.records, args.runs, args.kills = 20_000, 1, 3
    classpath = fetch_kafka()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp_name:
        tmp = pathlib.Path(tmp_name)
        ports = {i: (free_port(), free_port()) for i in (1, 2, 3)}
        cluster_id = random_cluster_id()
        kafka = {i: KafkaNode(classpath, i, ports, tmp, cluster_id) for i in (1, 2, 3)}
        zk_port = free_port()
        subprocess.run([str(REPO_ROOT / "scripts" / "zookeeper.sh"), "start", str(zk_port),
                        str(tmp / "zookeeper")], check=True)
        zk_pid = int((tmp / "zookeeper" / "zookeeper.pid").read_text())
        zookeeper = f"127.0.0.1:{zk_port}/bench"
        oxbow = {i: OxbowNode(i, tmp, zookeeper, "fsync") for i in (1, 2, 3)}
        oxbow_interval = {i: OxbowNode(i, tmp, zookeeper + "-interval", "interval") for i in (1, 2, 3)}
        single = OxbowNode(0, tmp, None, "fsync")
        everything = [*kafka.values(), *oxbow.values(), *oxbow_interval.values(), single]
        try:
            for node in everything:
                node.start()
            kafka_bootstrap = ",".join(n.bootstrap for n in kafka.values())
            oxbow_bootstrap = ",".join(n.bootstrap for n in oxbow.values())
            interval_bootstrap = ",".join(n.bootstrap for n in oxbow_interval.values())
            wait_brokers(kafka_bootstrap, 3)
            wait_brokers(oxbow_bootstrap, 3)
            wait_brokers(interval_bootstrap, 3)
            wait_brokers(single.bootstrap, 1)
            pids = {f"kafka{i}": n.proc.pid for i, n in kafka.items()}
            pids.update({f"oxbowd{i}": n.proc.pid for i, n in oxbow.items()})
            pids["zookeeper"] = zk_pid
            sampler = MemorySampler(pids)
            systems = [("Kafka 4.4, 3 brokers", kafka_bootstrap, 3, ["--config", "min.insync.replicas=2"]),
                       ("Oxbow, 3 servers, --flush fsync", oxbow_bootstrap, 3, []),
                       ("Oxbow, 3 servers, --flush interval", interval_bootstrap, 3, []),
                       ("Oxbow, 1 server, --flush fsync", single.bootstrap, 1, [])]
            results = {name: [] for name, *_ in systems}
            for run in range(args.runs):
                order = systems if run % 2 == 0 else list(reversed(systems))
                for name, bootstrap, replication, config in order:
                    results[name].append(produce(classpath, bootstrap, args, replication, config))
                    log(f"{name}: {results[name][-1]}")
            rss, _ = sampler.peaks()
            print(f"\nproduce: {args.records} records of {args.record_size} B, lz4, acks=all, "
                  f"4 partitions, replication 3 (min ISR 2), median of {args.runs}")
            kafka_mb = statistics.median(r["MB/s"] for r in results[systems[0][0]])
            for name, *_ in systems:
                mb = statistics.median(r["MB/s"] for r in results[name])
                p99 = statistics.median(r["p99 ms"] for r in results[name])
                print(f"  {name:<38} {mb:8.1f} MB/s  p99 {p99:6.0f} ms  {mb / kafka_mb:5.2f}x Kafka")
            cluster_mb = statistics.median(r["MB/s"] for r in results[systems[1][0]])
            single_mb = statistics.median(r["MB/s"] for r in results[systems[3][0]])
            print(f"  Oxbow 3 servers / 1 server (fsync): {cluster_mb / single_mb:.2f}")
            print("peak RSS during produce (MiB): " +
                  ", ".join(f"{k} {v / (1 << 20):.0f}" for k, v in rss.items()))
            sampler.stop()
            print(f"\nfailover: {args.kills} SIGKILLs of partition 0's leader, session 2 s, "
                  "kill to first acknowledged record (ms)")
            # Oxbow's min.insync.replicas is 2 by default with replication 3; Kafka's is 1.
            kafka_times = failover(kafka_bootstrap, kafka, args.kills, {"min.insync.replicas": "2"})
            oxbow_times = failover(oxbow_bootstrap, oxbow, args.kills, {})
            print(f"  Kafka 4.4, 3 brokers      {summary(kafka_times)}")
            print(f"  Oxbow, 3 servers          {summary(oxbow_times)}")
            kafka_p99 = sorted(kafka_times)[min(len(kafka_times) - 1, int(len(kafka_times) * 0.99))]
            oxbow_p99 = sorted(oxbow_times)[min(len(oxbow_times) - 1, int(len(oxbow_times) * 0.99))]
            print(f"  ratio oxbow/kafka p99: {oxbow_p99 / kafka_p99:.2f}")
            print("\nrolling restart: each server SIGTERMed (controlled shutdown), started and "
                  "awaited back in the ISR in turn, under an idempotent producer (acks=all, "
                  "one record per 2 ms); send-to-ack latency (ms)")
            rolls = {"Kafka 4.4, 3 brokers": rolling_restart(
                         kafka_bootstrap, kafka, {"min.insync.replicas": "2"}),
                     "Oxbow, 3 servers": rolling_restart(oxbow_bootstrap, oxbow, {})}
            for name, (steady, rolling, failed) in rolls.items():
                print(f"  {name:<24} steady {summary(steady)}; during the roll "
                      f"{summary(rolling)}; {failed} failed")
            roll_p99 = {name: sorted(r)[min(len(r) - 1, int(len(r) * 0.99))]
                        for name, (_, r, _) in rolls.items()}
            print(f"  ratio oxbow/kafka p99 during the roll: "
                  f"{roll_p99['Oxbow, 3 servers'] / roll_p99['Kafka 4.4, 3 brokers']:.2f}")
        finally:
            for node in everything:
                node.stop()
            subprocess.run([str(REPO_ROOT / "scripts" / "zookeeper.sh"), "stop",
                            str(tmp / "zookeeper")], check=False)


if __name__ == "__main__":
    main()
