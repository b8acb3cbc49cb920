"""Restart persistence: SIGTERM, start again on the same data dir, everything is still there."""

import json
import subprocess
import time

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.batches import id_batch
from oxbowtest.flight import assert_tables_equal, descriptor

from oxbowtest.type_samples import LOG_ONLY, make_batches, wide_schema, wide_values

KEYED = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("k", pa.string())])


def keyed_batch(first, rows):
    return id_batch(KEYED, first, rows, lambda i: f"k{i % 11}")


def snapshot(server):
    """Everything a client can observe: descriptors with offsets and every bucket's contents."""
    tables = {t["table"]: t for t in server.action("list_tables")["tables"]}
    # The lake's state moves on by itself (rounds, lag); it has its own tests in tests/lake.
    described = {name: {k: v for k, v in server.describe(name).items() if k != "lake"}
                 for name in tables}
    data = {}
    for name, desc in described.items():
        for b in range(desc["buckets"]):
            data[name, b] = server.get({"table": name, "bucket": b})
    return described, data


def assert_same_snapshot(before, after):
    described_before, data_before = before
    described_after, data_after = after
    assert described_after == described_before
    assert data_after.keys() == data_before.keys()
    for key, (table, metas) in data_before.items():
        assert data_after[key][1] == metas, f"{key}: message offsets changed"
        assert_tables_equal(data_after[key][0], table)


def wait_visible(server, table, rows, timeout=5.0):
    """Under --flush interval a batch is readable once the flusher made it durable."""
    deadline = time.monotonic() + timeout
    while sum(o["next_offset"] for o in server.describe(table)["bucket_offsets"]) < rows:
        assert time.monotonic() < deadline, f"{table}: acknowledged rows not readable in {timeout}s"
        time.sleep(0.01)


@pytest.mark.parametrize("flush", ["fsync", "interval"])
def test_restart_keeps_tables_schemas_and_rows(make_server, flush):
    server = make_server(extra_args=("--flush", flush))
    server.create_table("ns.wide", wide_schema(), buckets=3, properties={"p": "1", **LOG_ONLY})
    server.create_table("ns.keyed", KEYED, buckets=4, bucket_key=["k"])
    server.create_table("other.empty", KEYED, buckets=2)
    batches = make_batches(wide_schema(), 6, 30, wide_values())
    for i in range(3):
        server.put("ns.wide", batches[2 * i:2 * i + 2])
    server.put("ns.keyed", [keyed_batch(100 * i, 100) for i in range(5)])
    wait_visible(server, "ns.wide", 180)
    wait_visible(server, "ns.keyed", 500)
    before = snapshot(server)

    server.restart()
    assert_same_snapshot(before, snapshot(server))
    schema = server.client.get_schema(descriptor("ns.wide")).schema
    assert schema == wide_schema()
    assert_tables_equal(server.read_all("ns.wide").sort_by("id"), pa.Table.from_batches(batches))

    # Writing continues at the old ends, and a second restart keeps both generations.
    ends = {o["bucket"]: o["next_offset"] for o in before[0]["ns.keyed"]["bucket_offsets"]}
    acks = server.put("ns.keyed", [keyed_batch(10_000, 200)])
    for entry in acks[0]["offsets"]:
        assert entry["base_offset"] == ends[entry["bucket"]]
    wait_visible(server, "ns.keyed", 700)
    before = snapshot(server)
    server.restart()
    assert_same_snapshot(before, snapshot(server))
    assert server.read_all("ns.keyed").num_rows == 700


def test_restart_with_small_segments(make_server):
    """Many rolled segments (and their indexes) come back in order after a restart."""
    server = make_server(extra_args=("--segment-bytes", "2048"))
    server.create_table("ns.keyed", KEYED)
    for i in range(30):
        server.put("ns.keyed", [keyed_batch(50 * i, 50)])
    before = snapshot(server)
    server.restart()
    assert_same_snapshot(before, snapshot(server))
    # Offset reads land on the right batch in any segment.
    for start in [0, 733, 1449]:
        table, metas = server.get({"table": "ns.keyed", "from": start})
        assert metas[0]["base_offset"] == start - start % 50
        assert table.column("id").to_pylist() == list(range(start - start % 50, 1500))


def test_dropped_table_stays_dropped_after_restart(server):
    server.create_table("ns.a", KEYED)
    server.create_table("ns.b", KEYED)
    server.put("ns.a", [keyed_batch(0, 10)])
    server.action("drop_table", {"table": "ns.a"})
    server.restart()
    assert [t["table"] for t in server.action("list_tables")["tables"]] == ["ns.b"]
    with pytest.raises(pa.ArrowException, match="does not exist"):
        server.describe("ns.a")
    # Recreating it gives an empty table with a new id.
    server.create_table("ns.a", KEYED)
    assert server.read_all("ns.a").num_rows == 0


def test_table_ids_not_reused_after_restart(server):
    first = server.create_table("ns.a", KEYED)["table_id"]
    server.action("drop_table", {"table": "ns.a"})
    server.restart()
    second = server.create_table("ns.a", KEYED)["table_id"]
    assert second != first


def test_sigint_is_a_clean_shutdown_too(server):
    import signal

    server.create_table("ns.a", KEYED)
    server.put("ns.a", [keyed_batch(0, 10)])
    code = server._signal(signal.SIGINT)
    assert code == 0, server.log_tail()
    server.start()
    assert server.read_all("ns.a").num_rows == 10


def test_shutdown_with_an_open_follow_stream(server):
    """SIGTERM while a follow reader is connected still exits 0, within the stop deadline."""
    import json
    import threading

    server.create_table("ns.a", KEYED)
    server.put("ns.a", [keyed_batch(0, 10)])
    client = server.new_client()
    reader = client.do_get(fl.Ticket(json.dumps({"table": "ns.a", "follow": True}).encode()))
    assert reader.read_chunk().data.num_rows == 10
    done = threading.Event()

    def drain():
        try:
            for _ in reader:
                pass
        except pa.ArrowException:
            pass
        done.set()

    threading.Thread(target=drain, daemon=True).start()
    server.stop()
    assert done.wait(10), "the follow stream did not end when the server stopped"
    client.close()
    server.start()


def test_sigterm_with_an_idle_put_stream_open(server):
    """A writer that holds its DoPut stream open does not block a clean shutdown."""
    server.create_table("ns.a", KEYED)
    client = server.new_client()
    writer, acks = client.do_put(descriptor("ns.a"), KEYED)
    writer.write_batch(keyed_batch(0, 10))
    assert acks.read() is not None
    server.stop()
    with pytest.raises(pa.ArrowException):
        writer.close()
    client.close()
    server.start()
    assert server.read_all("ns.a").num_rows == 10, "the acknowledged batch survives"


@pytest.mark.parametrize("flush", ["fsync", "interval"])
def test_acknowledged_rows_become_readable(make_server, flush):
    """Under fsync an ack means readable now; under interval within --flush-interval-ms."""
    server = make_server(extra_args=("--flush", flush, "--flush-interval-ms", "300"))
    server.create_table("ns.a", KEYED, buckets=2)
    server.put("ns.a", [keyed_batch(0, 10)])
    if flush == "fsync":
        assert server.read_all("ns.a").num_rows == 10
    wait_visible(server, "ns.a", 10, timeout=0.3 + 2.0)
    assert server.read_all("ns.a").num_rows == 10


def test_clean_shutdown_flushes_under_interval(make_server):
    """Acked but not yet fsynced batches (a 10 s flush interval) survive SIGTERM + restart."""
    server = make_server(extra_args=("--flush", "interval", "--flush-interval-ms", "10000"))
    server.create_table("ns.a", KEYED, buckets=2)
    acks = server.put("ns.a", [keyed_batch(100 * i, 100) for i in range(5)])
    assert len(acks) == 5
    server.restart()
    assert server.read_all("ns.a").num_rows == 500


def test_second_server_on_the_same_data_dir_refuses_to_start(server):
    other = subprocess.run(
        [str(server.binary), "--data-dir", str(server.data_dir), "--listen", "127.0.0.1:0",
         "--metrics-listen", "127.0.0.1:0", "--kafka-listen", "127.0.0.1:0",
         "--catalog-listen", "127.0.0.1:0", "--schema-registry-listen", "127.0.0.1:0",
         "--console-listen", "127.0.0.1:0"],
        capture_output=True, timeout=15)
    assert other.returncode != 0
    assert b"LOCK" in other.stdout + other.stderr or b"lock" in other.stdout + other.stderr, (
        other.stdout + other.stderr)
    # The running server is unharmed.
    server.create_table("ns.a", KEYED)
    server.put("ns.a", [keyed_batch(0, 3)])
    assert server.read_all("ns.a").num_rows == 3


@pytest.mark.parametrize("ticket", [
    {"table": "ns.followed", "bucket": 0, "follow": True},
    {"table": "ns.followed", "union": True, "follow": True},
], ids=["log", "union"])
def test_a_stopping_server_ends_a_follow_with_unavailable_not_a_clean_end(make_server, ticket):
    """SIGTERM ends every read in progress with UNAVAILABLE naming the shutdown: a follow, which
    never ends by itself, and a read cut short must not look finished to the client."""
    server = make_server()
    server.action("create_table", {"table": "ns.followed", "schema": {"fields": [
        {"name": "id", "type": "int64", "nullable": False}]}})
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    server.put("ns.followed", [id_batch(schema, 0, 10)])
    client = fl.FlightClient(server.location)
    reader = client.do_get(fl.Ticket(json.dumps(ticket).encode()))
    rows = 0
    while rows < 10:
        rows += reader.read_chunk().data.num_rows
    server.stop()
    with pytest.raises(fl.FlightUnavailableError, match="shutting down"):
        while True:
            reader.read_chunk()
    client.close()
