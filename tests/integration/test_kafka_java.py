"""Kafka's own Java client and tools (the 4.4.0 jars bench/vs_kafka uses, fetched by Maven into
build/kafka on first use) against Oxbow's Kafka listener: the console producer with every codec,
the console consumer in a group, the perf tools, and kafka-topics (docs/kafka.md).
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import uuid

import pytest

from oxbowtest.kafka import bootstrap

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
from vs_kafka import fetch_kafka  # noqa: E402

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.fixture(scope="module")
def classpath() -> str:
    return fetch_kafka()


@pytest.fixture(scope="module")
def server(module_server):
    return module_server


def tool(classpath: str, main: str, *args, stdin: str | None = None) -> str:
    # Each tool is a short-lived JVM: the quick JIT tier and the serial collector start it in
    # about half the time (and CPU) of the defaults.
    proc = subprocess.run(["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", classpath,
                           main, *map(str, args)], input=stdin,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{main} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_console_producer_every_codec_and_console_consumer_group(server, classpath):
    topic = "java-" + uuid.uuid4().hex[:8]
    tool(classpath, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap(server),
         "--create", "--topic", topic, "--partitions", 1)
    sent = []
    for codec in CODECS:
        lines = [f"{codec}-{i}" for i in range(50)]
        tool(classpath, "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server",
             bootstrap(server), "--topic", topic, "--compression-codec", codec,
             stdin="\n".join(lines) + "\n")
        sent += lines
    out = tool(classpath, "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server",
               bootstrap(server), "--topic", topic, "--from-beginning", "--group", "g-" + topic,
               "--max-messages", len(sent))
    assert out.split() == sent
    # The group committed its position: a new consumer of the group resumes after the end.
    tool(classpath, "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server",
         bootstrap(server), "--topic", topic, stdin="after\n")
    out = tool(classpath, "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server",
               bootstrap(server), "--topic", topic, "--group", "g-" + topic, "--max-messages", 1)
    assert out.split() == ["after"]
    # The tools that inspect topics and groups.
    assert topic in tool(classpath, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
                         bootstrap(server), "--list").split()
    out = tool(classpath, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
               bootstrap(server), "--describe", "--topic", topic)
    assert re.search(rf"Topic: {topic}\s+Partition: 0\s+Leader: 0", out), out
    out = tool(classpath, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
               "--bootstrap-server", bootstrap(server), "--describe", "--group", "g-" + topic)
    total = len(sent) + 1
    assert re.search(rf"g-{topic}\s+{topic}\s+0\s+{total}\s+{total}\s+0", out), out
    assert "g-" + topic in tool(classpath,
                                "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                                "--bootstrap-server", bootstrap(server), "--list").split()
    # The rows through Flight, in order.
    values = server.read_all("kafka." + topic).column("value").to_pylist()
    assert [v.decode() for v in values] == sent + ["after"]
    # The group's offsets deleted (OffsetDelete), then the group itself (DeleteGroups).
    out = tool(classpath, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
               "--bootstrap-server", bootstrap(server), "--delete-offsets", "--group",
               "g-" + topic, "--topic", topic)
    assert re.search(rf"{topic}\s+0\s+Successful", out), out
    out = tool(classpath, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
               "--bootstrap-server", bootstrap(server), "--delete", "--group", "g-" + topic)
    assert f"Deletion of requested consumer groups ('g-{topic}') was successful." in out, out
    assert "g-" + topic not in tool(classpath,
                                    "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                                    "--bootstrap-server", bootstrap(server), "--list").split()


def test_perf_tools(server, classpath):
    topic = "perf-" + uuid.uuid4().hex[:8]
    out = tool(classpath, "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
               "--num-records", 20000, "--record-size", 200, "--throughput", -1,
               "--command-property", f"bootstrap.servers={bootstrap(server)}", "acks=all",
               "compression.type=lz4")
    assert "20000 records sent" in out, out
    out = tool(classpath, "org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server",
               bootstrap(server), "--topic", topic, "--num-records", 20000, "--group",
               "perf-" + topic)
    assert ", 20000, " in out, out
    assert server.read_all("kafka." + topic).num_rows == 20000


def test_compacted_topic_with_keys_and_tombstones(server, classpath):
    """kafka-topics --config cleanup.policy=compact makes a primary-key table; the console
    producer (idempotent, as every Java producer is by default) upserts keys and sends a
    tombstone (null.marker), and the console consumer prints the changes."""
    topic = "java-compact-" + uuid.uuid4().hex[:8]
    tool(classpath, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap(server),
         "--create", "--topic", topic, "--partitions", 2, "--config", "cleanup.policy=compact")
    lines = [f"k{i % 4}:v{i}" for i in range(12)] + ["k2:NULL"]
    tool(classpath, "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server",
         bootstrap(server), "--topic", topic, "--reader-property", "parse.key=true",
         "--reader-property", "key.separator=:", "--reader-property", "null.marker=NULL",
         stdin="\n".join(lines) + "\n")
    out = tool(classpath, "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server",
               bootstrap(server), "--topic", topic, "--from-beginning", "--max-messages", 13,
               "--formatter-property", "print.key=true", "--formatter-property", "key.separator=:")
    state = {}
    for line in out.split():
        key, value = line.split(":")
        if value == "null":
            state.pop(key)
        else:
            state[key] = value
    assert state == {"k0": "v8", "k1": "v9", "k3": "v11"}
    rows = server.read_all("kafka." + topic)  # the changelog, through Flight
    assert rows.num_rows == 13
    out = tool(classpath, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
               bootstrap(server), "--describe", "--topic", topic)
    assert "cleanup.policy=compact" in out, out


def test_topic_command_adds_partitions(server, classpath):
    topic = "java-grow-" + uuid.uuid4().hex[:8]
    tool(classpath, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap(server),
         "--create", "--topic", topic, "--partitions", 1)
    tool(classpath, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap(server),
         "--alter", "--topic", topic, "--partitions", 3)
    out = tool(classpath, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
               bootstrap(server), "--describe", "--topic", topic)
    assert re.search(r"PartitionCount:\s*3", out), out
    assert len(server.describe("kafka." + topic)["bucket_offsets"]) == 3
