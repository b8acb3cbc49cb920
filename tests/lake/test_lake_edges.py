"""Lake edges: log retention waits for the lake, drops racing tiering rounds, system-column name
clashes, bucket-keyed tables."""

from __future__ import annotations

import os
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from oxbowtest.batches import id_batch
from oxbowtest.lake import assert_lake_equals_log, data_files, expected_lake, assert_same_columns, \
    lake_rows, wait_lake
from oxbowtest.flight import expect_error, put
from oxbowtest.server import refused_start

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("pad", pa.string())])
SMALL_SEGMENTS = ("--segment-bytes", "4096", "--retention-bytes", "4096")


def batch(first: int, rows: int = 20) -> pa.RecordBatch:
    return id_batch(SCHEMA, first, rows, lambda i: f"{i:050d}")


def produced_form(batches) -> pa.Table:
    t = pa.Table.from_batches(batches)
    return expected_lake(t.append_column("__bucket", pa.array([0] * t.num_rows, pa.int32()))
                         .append_column("__offset", pa.array(range(t.num_rows), pa.int64())))


def earliest(server, table) -> int:
    return server.describe(table)["bucket_offsets"][0]["earliest_offset"]


def test_retention_waits_for_the_lake(make_lake_server, table_name):
    """With 4 KiB segments and 4 KiB retention the log would drop old segments at each roll;
    rows not yet in the lake stay, and once tiered they may go: the lake has them all."""
    server = make_lake_server(*SMALL_SEGMENTS)
    server.create_table(table_name, SCHEMA, properties={"lake.freshness": "1500ms"})
    wait_lake(server, table_name)
    time.sleep(0.1)  # the first (empty) round is over: the next one is ~1.5 s away
    sent = [batch(i * 20) for i in range(30)]
    for b in sent[:15]:
        server.put(table_name, [b])
    status = server.describe(table_name)
    if status["lake"]["lag_rows"] > 0:  # still before the next round: nothing may be dropped
        assert earliest(server, table_name) == 0, "retention dropped rows the lake lacks"
    wait_lake(server, table_name)
    for b in sent[15:]:
        server.put(table_name, [b])
    location = wait_lake(server, table_name)["metadata_location"]
    assert earliest(server, table_name) > 0, "retention never ran: the test tested nothing"
    lake = lake_rows(location)
    assert_same_columns(lake, produced_form(sent))


def test_retention_after_restart_waits_for_the_lake(make_lake_server, table_name):
    """Rows not yet tiered at a clean stop survive the restart's retention until tiered.

    lake.freshness 60m: after the first round (due at once, so it usually finds the table
    empty) the next is 30 minutes away, so the puts stay untiered until the restart, whose first
    round comes at once. Whatever the first round did tier, retention never passes it."""
    server = make_lake_server(*SMALL_SEGMENTS)
    server.create_table(table_name, SCHEMA, properties={"lake.freshness": "60m"})
    wait_lake(server, table_name)
    time.sleep(0.5)  # lets the first round run on the empty table
    sent = [batch(i * 20) for i in range(30)]
    for b in sent:
        server.put(table_name, [b])
    lake = server.describe(table_name)["lake"]
    assert lake["lag_rows"] > 0
    assert earliest(server, table_name) <= lake["tiered_offsets"][0]
    server.restart()
    location = wait_lake(server, table_name)["metadata_location"]
    assert_same_columns(lake_rows(location), produced_form(sent))


def test_drop_while_tiering_leaves_no_lake_behind(make_lake_server, warehouse):
    """Tables dropped while rounds run (10 ms freshness, writers busy): no lake dir survives the
    drop, and the server stays healthy."""
    server = make_lake_server(freshness_ms=10)
    names = [f"race.t{i}" for i in range(20)]
    for name in names:
        server.create_table(name, SCHEMA)
    stop = threading.Event()

    def write(name):
        client = server.new_client()
        i = 0
        while not stop.is_set():
            try:
                put(client, name, [batch(i, 1000)])
            except pa.ArrowException:
                return  # dropped under us
            i += 1000

    writers = [threading.Thread(target=write, args=(n,), daemon=True) for n in names]
    for w in writers:
        w.start()
    time.sleep(0.5)
    errors = []
    for name in names:
        try:
            server.action("drop_table", {"table": name})
        except pa.ArrowException as e:
            errors.append(f"{name}: {e}")
        time.sleep(0.02)
    stop.set()
    for w in writers:
        w.join(timeout=10)
    time.sleep(0.3)  # a few more rounds
    assert server.crashed(grace_s=0.1) is None
    left = sorted(str(p.relative_to(warehouse)) for p in (warehouse / "race").glob("*"))
    assert not errors and not left, (f"drop_table failed: {errors}; "
                                     f"lake dirs of dropped tables left: {left}")


def test_system_column_name_clash_is_refused(lake_server, table_name):
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("__offset", pa.int64())])
    with expect_error("INVALID_ARGUMENT", "column '__offset'", "clashes with a lake system column"):
        lake_server.create_table(table_name, schema)
    lake_server.create_table(table_name, schema, properties={"lake.enabled": "false"})


def test_bucket_keyed_table(lake_server, table_name):
    """A bucket_key splits batches over buckets; the lake has each piece at its log offsets."""
    lake_server.create_table(table_name, SCHEMA, buckets=5, bucket_key=["id"],
                             properties={"lake.partition": "identity(__bucket)"})
    acks = lake_server.put(table_name, [batch(i * 50, 50) for i in range(6)])
    assert any(len(a["offsets"]) > 1 for a in acks), "batches should be split over buckets"
    location = wait_lake(lake_server, table_name)["metadata_location"]
    lake = assert_lake_equals_log(lake_server, table_name, location)
    assert sorted(lake["id"].to_pylist()) == list(range(300))
    assert len(set(lake["__bucket"].to_pylist())) == 5


def _nice_levels(pid: int) -> list[int]:
    """The nice level of each thread of `pid` (field 19 of /proc/<pid>/task/<tid>/stat)."""
    import pathlib

    levels = []
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except FileNotFoundError:
            continue  # the thread ended meanwhile
        levels.append(int(stat.rsplit(")", 1)[1].split()[16]))
    return levels


@pytest.mark.parametrize("round_nice,maintenance_nice", [(None, None), ("0", None), ("5", "12")])
def test_lake_nice_flags_set_the_rounds_and_the_maintenance_priority(make_lake_server, round_nice,
                                                                     maintenance_nice):
    """The two round workers run at nice 10 and the maintenance thread at 19 by default, beside
    the log's and the lake's scrubbers (also 19); --lake-round-nice moves the round workers and
    --lake-maintenance-nice the maintenance thread (docs/lake.md, "Threads and CPU budget").
    A thread can only lower its priority, so this needs an oxbowd started below nice 5."""
    args = []
    if round_nice is not None:
        args += ["--lake-round-nice", round_nice]
    if maintenance_nice is not None:
        args += ["--lake-maintenance-nice", maintenance_nice]
    server = make_lake_server(*args)
    base = os.getpriority(os.PRIO_PROCESS, server.proc.pid)
    if base >= 5:
        pytest.skip(f"oxbowd runs at nice {base}: its threads cannot show lower levels")
    rounds = 10 if round_nice is None else max(base, int(round_nice))
    maintenance = 19 if maintenance_nice is None else max(base, int(maintenance_nice))
    want = {19: 2}  # the scrubbers
    for level, threads in ((rounds, 2), (maintenance, 1)):
        want[level] = want.get(level, 0) + threads
    deadline = time.monotonic() + 10
    while True:
        levels = _nice_levels(server.proc.pid)
        if all(levels.count(level) == n for level, n in want.items() if level != base):
            break
        assert time.monotonic() < deadline, f"thread nice levels {sorted(levels)}, want {want}"
        time.sleep(0.05)


@pytest.mark.parametrize("flag,fresh", [(None, True), ("lz4", True), ("zstd", False)])
def test_lake_fresh_codec_flag_sets_the_rounds_codec(make_lake_server, table_name, flag, fresh):
    """Rounds write lz4 fresh files by default; --lake-fresh-codec zstd writes final files at once
    (docs/lake.md, "Fresh files"). Maintenance waits an hour, so no rewrite hides the round's."""
    args = ["--lake-maintenance-interval-ms", "3600000"]
    if flag is not None:
        args += ["--lake-fresh-codec", flag]
    server = make_lake_server(*args)
    server.create_table(table_name, SCHEMA)
    server.put(table_name, [batch(0, 50)])
    files = data_files(wait_lake(server, table_name)["metadata_location"])
    assert files and all(f.endswith(".fresh.parquet") == fresh for f in files), files
    codecs = {pq.ParquetFile(f).metadata.row_group(0).column(0).compression for f in files}
    assert codecs == ({"LZ4"} if fresh else {"ZSTD"}), codecs  # pyarrow calls LZ4_RAW "LZ4"


def test_lake_fresh_codec_flag_refuses_an_unknown_codec(oxbowd_bin, tmp_path):
    printed = refused_start(oxbowd_bin, tmp_path / "d", "--lake-fresh-codec", "brotli")
    assert "unknown compression 'brotli'" in printed, printed


def test_a_file_uri_warehouse_is_that_directory(make_server, tmp_path, table_name):
    """--warehouse file:///abs/wh puts metadata and data under /abs/wh, where pyiceberg reads
    them (data files once went to ./file:/abs/wh)."""
    warehouse = tmp_path / "wh"
    server = make_server(extra_args=("--warehouse", f"file://{warehouse}",
                                     "--lake-freshness-ms", "100"))
    server.create_table(table_name, SCHEMA, properties={"lake.enabled": "true"})
    sent = [batch(0), batch(20)]
    server.put(table_name, sent)
    location = wait_lake(server, table_name)["metadata_location"]
    assert location.startswith(str(warehouse) + "/"), location
    assert_same_columns(lake_rows(location), produced_form(sent))
    files = data_files(location)
    assert files and all(f.startswith(str(warehouse) + "/") for f in files), files


@pytest.mark.parametrize("spec, says", [
    ("hour(ts", "'(' at position 4 is never closed"),
    ("day(ts))", "unmatched ')' at position 7"),
])
def test_unbalanced_lake_partition_is_refused_naming_the_position(lake_server, table_name, spec,
                                                                  says):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("ts", pa.timestamp("us"))])
    with expect_error("INVALID_ARGUMENT", "lake.partition", says):
        lake_server.create_table(table_name, schema, properties={"lake.partition": spec})
    lake_server.create_table(table_name, schema)
    with expect_error("INVALID_ARGUMENT", "lake.partition", says):
        lake_server.action("alter_table", {"table": table_name, "changes": [
            {"op": "set_properties", "properties": {"lake.partition": spec}}]})
