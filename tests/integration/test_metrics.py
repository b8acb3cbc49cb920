"""The metrics listener: /metrics parsed by prometheus_client's own parser, counters that move as
the calls made, and /healthz and /readyz."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pyarrow as pa
import pyarrow.flight as fl
import pytest
from prometheus_client.parser import text_string_to_metric_families

from oxbowtest.flight import schema_json
from oxbowtest.metrics import scrape


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def by_bucket(samples, name, table) -> dict:
    """{bucket label: value} of a per-bucket counter of `table`."""
    return {dict(labels)["bucket"]: v for (n, labels), v in samples.items()
            if n == name and ("table", table) in labels}


def moved(after, before) -> dict:
    return {b: v - before.get(b, 0.0) for b, v in after.items() if v != before.get(b, 0.0)}


def test_counters_move_as_the_calls_made(server, table_name):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    server.create_table(table_name, schema, buckets=2, bucket_key=["id"])
    before = scrape(server)
    batch = pa.record_batch([pa.array(range(1000), pa.int64()), pa.array(["x"] * 1000)], schema=schema)
    acks = server.put(table_name, [batch, batch])
    read = {}
    for b in range(2):
        read[str(b)] = server.client.do_get(fl.Ticket(json.dumps({"table": table_name, "bucket": b}).encode())).read_all().num_rows
    after = scrape(server)
    # Per bucket: the rows each bucket holds (as pyarrow read them back), in and out, exactly.
    assert read["0"] > 0 and read["1"] > 0 and sum(read.values()) == 2000
    acked = {}
    for ack in acks:
        for o in ack["offsets"]:
            acked[str(o["bucket"])] = acked.get(str(o["bucket"]), 0) + o["rows"]
    assert acked == read
    for name in ("oxbow_rows_in_total", "oxbow_rows_out_total"):
        assert moved(by_bucket(after, name, table_name), by_bucket(before, name, table_name)) == read, name
    # A batch split over buckets shares its bytes among them by rows: the buckets add up to
    # the bytes received.
    bytes_in = by_bucket(after, "oxbow_bytes_in_total", table_name)
    assert set(bytes_in) == {"0", "1"} and sum(bytes_in.values()) >= 2 * 8000
    bytes_out = by_bucket(after, "oxbow_bytes_out_total", table_name)
    assert set(bytes_out) == {"0", "1"} and all(v > 8 * read[b] for b, v in bytes_out.items())
    assert value(after, "oxbow_produce_latency_seconds_count", table=table_name) == 2
    assert value(after, "oxbow_fetch_latency_seconds_count", table=table_name) >= 2
    assert value(after, "oxbow_fsync_latency_seconds_count") > value(before, "oxbow_fsync_latency_seconds_count")
    next_offsets = [value(after, "oxbow_log_next_offset", table=table_name, bucket=str(b)) for b in range(2)]
    assert next_offsets == [read["0"], read["1"]]
    assert all(value(after, "oxbow_log_size_bytes", table=table_name, bucket=str(b)) > 0 for b in range(2))
    assert value(after, "oxbow_log_segments", table=table_name, bucket="0") >= 1
    assert value(after, "oxbow_process_resident_memory_bytes") > 1 << 20
    assert value(after, "oxbow_process_open_fds") > 3
    assert ("oxbow_lake_lag_rows", frozenset({("table", table_name)})) in after


def test_reads_of_no_single_bucket_count_as_none(server, table_name):
    """Lookups and whole-table snapshots are counted under bucket="none"; a snapshot of one
    bucket under that bucket."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    server.action("create_table", {"table": table_name, "schema": schema_json(schema),
                                   "primary_key": ["id"], "buckets": 3})
    acks = server.put(table_name, [pa.record_batch([pa.array(range(300), pa.int64()), pa.array(["v"] * 300)],
                                                   schema=schema)])
    written = {str(o["bucket"]): o["rows"] for o in acks[0]["offsets"]}
    assert sum(written.values()) == 300 and len(written) == 3
    before = scrape(server)
    assert by_bucket(before, "oxbow_rows_in_total", table_name) == written
    get = lambda ticket: server.client.do_get(fl.Ticket(json.dumps({"table": table_name, **ticket}).encode())).read_all()  # noqa: E731
    assert get({"lookup": {"id": list(range(40))}}).num_rows == 40
    assert get({"snapshot": True}).num_rows == 300
    assert get({"snapshot": True, "bucket": 1}).num_rows == written["1"]
    after = scrape(server)
    assert moved(by_bucket(after, "oxbow_rows_out_total", table_name),
                 by_bucket(before, "oxbow_rows_out_total", table_name)) == {"none": 340, "1": written["1"]}


def test_errors_and_primary_key_store_memory(server, table_name):
    before = scrape(server)
    with pytest.raises(pa.ArrowKeyError):
        server.client.do_get(fl.Ticket(b'{"table": "no.such"}')).read_all()
    after = scrape(server)
    key = {"operation": "fetch", "code": "NotFound"}
    assert value(after, "oxbow_request_errors_total", **key) == value(before, "oxbow_request_errors_total", **key) + 1
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    server.action("create_table", {"table": table_name, "schema": schema_json(schema), "primary_key": ["id"]})
    server.put(table_name, [pa.record_batch([pa.array(range(5000), pa.int64()), pa.array(["v" * 50] * 5000)],
                                            schema=schema)])
    samples = scrape(server)
    assert value(samples, "oxbow_kv_block_cache_bytes") > 0
    assert value(samples, "oxbow_kv_memtable_bytes") > 0


def test_dropped_tables_leave_the_page(server, table_name):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    server.create_table(table_name, schema)
    server.put(table_name, [pa.record_batch([pa.array([1], pa.int64())], schema=schema)])
    assert value(scrape(server), "oxbow_rows_in_total", table=table_name, bucket="0") == 1
    server.action("drop_table", {"table": table_name})
    assert not [k for k in scrape(server) if ("table", table_name) in k[1]]


def test_health_and_readiness(server):
    for path in ("/healthz", "/readyz"):
        with urllib.request.urlopen(server.metrics_url + path, timeout=10) as response:
            assert response.status == 200
    try:
        urllib.request.urlopen(server.metrics_url + "/nope", timeout=10)
        raise AssertionError("an unknown path answered")
    except urllib.error.HTTPError as e:
        assert e.code == 404


def test_metrics_port_in_use_is_refused(make_server, server):
    port = server.metrics_url.rsplit(":", 1)[1]
    try:
        make_server(extra_args=("--metrics-listen", f"127.0.0.1:{port}"))
        raise AssertionError("a second server took a metrics port in use")
    except Exception as e:  # noqa: BLE001 - the harness reports the early exit with its log
        assert "cannot listen for metrics" in str(e), str(e)


def wait_for(predicate, what, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_tiering_compaction_and_commits_are_counted(make_server, table_name):
    server = make_server(extra_args=("--lake-freshness-ms", "100", "--lake-compaction-min-files", "2",
                                     "--lake-maintenance-interval-ms", "200"))
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    server.create_table(table_name, schema)
    started = time.time()
    t = {"table": table_name}
    commits = lambda kind: value(scrape(server), "oxbow_lake_commits_total", kind=kind, **t)  # noqa: E731
    for n in range(3):  # three rounds, three small files: compaction merges them
        server.put(table_name, [pa.record_batch([pa.array(range(n * 10, n * 10 + 10), pa.int64())], schema=schema)])
        wait_for(lambda: server.describe(table_name)["lake"]["lag_rows"] == 0, "tiering")
    wait_for(lambda: commits("compaction") >= 1, "a compaction commit")
    samples = scrape(server)
    appends = value(samples, "oxbow_lake_commits_total", kind="append", **t)
    assert appends >= 3
    # Every committed or failed round is timed; none failed.
    assert value(samples, "oxbow_lake_round_errors_total", **t) == 0
    assert value(samples, "oxbow_lake_round_duration_seconds_count", **t) == appends
    assert value(samples, "oxbow_lake_round_duration_seconds_sum", **t) > 0
    assert value(samples, "oxbow_lake_compaction_duration_seconds_count", **t) >= 1
    assert value(samples, "oxbow_lake_compaction_errors_total", **t) == 0
    last = value(samples, "oxbow_lake_last_tiered_timestamp_seconds", **t)
    assert started - 1 <= last <= time.time() + 1
    assert value(samples, "oxbow_lake_lag_rows", **t) == 0
    # Another put: one more append commit and a newer last-tiered time.
    server.put(table_name, [pa.record_batch([pa.array([99], pa.int64())], schema=schema)])
    wait_for(lambda: commits("append") == appends + 1, "the next append commit")
    assert value(scrape(server), "oxbow_lake_last_tiered_timestamp_seconds", **t) >= last
    server.action("drop_table", {"table": table_name})
    assert not [k for k in scrape(server) if ("table", table_name) in k[1]]


def test_primary_key_store_cache_figures(make_server, table_name):
    # Checkpoints flush the memtables, so lookups then read blocks through the cache.
    server = make_server(extra_args=("--kv-checkpoint-interval-ms", "100"))
    assert value(scrape(server), "oxbow_kv_block_cache_capacity_bytes") == 0  # no store yet
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    server.action("create_table", {"table": table_name, "schema": schema_json(schema), "primary_key": ["id"]})
    server.put(table_name, [pa.record_batch([pa.array(range(100), pa.int64()), pa.array(["v"] * 100)],
                                            schema=schema)])
    lookups = lambda s: value(s, "oxbow_kv_block_cache_hits_total") + value(s, "oxbow_kv_block_cache_misses_total")  # noqa: E731
    # A flushed file is opened through the cache (its index and filter blocks).
    wait_for(lambda: lookups(scrape(server)) > 0, "a flush of the memtables")
    before = scrape(server)
    assert value(before, "oxbow_kv_block_cache_capacity_bytes") > 0
    assert value(before, "oxbow_kv_block_cache_capacity_bytes") >= value(before, "oxbow_kv_block_cache_bytes")
    ticket = {"table": table_name, "lookup": {"id": list(range(50))}}
    found = server.client.do_get(fl.Ticket(json.dumps(ticket).encode())).read_all()
    assert found.num_rows == 50
    after = scrape(server)
    assert lookups(after) > lookups(before)
    assert "oxbow_kv_block_cache_hits" in {f.name for f in text_string_to_metric_families(
        urllib.request.urlopen(server.metrics_url + "/metrics", timeout=10).read().decode())}


def test_follow_readers_count_open_follows(server, table_name):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    server.create_table(table_name, schema)
    follows = lambda: value(scrape(server), "oxbow_follow_readers", table=table_name)  # noqa: E731
    assert follows() == 0
    client = server.new_client()
    reader = client.do_get(fl.Ticket(json.dumps({"table": table_name, "follow": True}).encode()))
    server.put(table_name, [pa.record_batch([pa.array([1], pa.int64())], schema=schema)])
    assert reader.read_chunk().data.num_rows == 1
    assert follows() == 1
    reader.cancel()
    client.close()
    wait_for(lambda: follows() == 0, "the follow to end")


def test_kafka_produce_and_fetch_count_like_flight(server):
    """Records produced and fetched through the Kafka listener move the same per-table and
    per-bucket counters and latency histograms as Flight puts and reads: a partition is a
    bucket."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = f"127.0.0.1:{server.kafka_port}"
    topic = "metrics_" + str(int(time.time() * 1000))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic].result(timeout=30)
    sent = {0: 300, 1: 0, 2: 200}
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition, n in sent.items():
        for i in range(n):
            producer.produce(topic, value=b"v%d" % i, partition=partition)
    assert producer.flush(30) == 0
    table = "kafka." + topic
    produced = scrape(server)
    assert by_bucket(produced, "oxbow_rows_in_total", table) == {"0": 300, "2": 200}
    bytes_in = by_bucket(produced, "oxbow_bytes_in_total", table)
    assert set(bytes_in) == {"0", "2"} and bytes_in["0"] > 300 * 2 and bytes_in["2"] > 200 * 2
    assert value(produced, "oxbow_produce_latency_seconds_count", table=table) >= 1
    assert by_bucket(produced, "oxbow_rows_out_total", table) == {}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "metrics-" + topic,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in sent])
    got = {p: 0 for p in sent}
    deadline = time.monotonic() + 30
    while sum(got.values()) < 500 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None:
            assert msg.error() is None, msg.error()
            got[msg.partition()] += 1
    consumer.close()
    assert got == sent
    fetched = scrape(server)
    # librdkafka fetches each offset once: rows out match rows in, bucket by bucket.
    assert by_bucket(fetched, "oxbow_rows_out_total", table) == {"0": 300, "2": 200}
    bytes_out = by_bucket(fetched, "oxbow_bytes_out_total", table)
    assert bytes_out["0"] > 300 * 2 and bytes_out["2"] > 200 * 2
    assert value(fetched, "oxbow_fetch_latency_seconds_count", table=table) >= 1
