"""Union read (the lake snapshot plus each bucket's log after its tiered offsets) and old offsets
served from the lake, through pyarrow.flight only (docs/api.md, docs/catalog.md)."""

from __future__ import annotations

import json
import shutil
import threading
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as fl
import pytest

from oxbowtest.batches import id_batch
from oxbowtest import type_samples
from oxbowtest.lake import assert_same_columns, lake_type_samples, wait_lake, wait_settled
from oxbowtest.flight import ALIGNED, expect_error

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("pad", pa.string()),
                    pa.field("small", pa.int16())])
# 4 KiB segments and 4 KiB retention: every roll deletes the tiered segments before it.
SMALL_SEGMENTS = ("--segment-bytes", "4096", "--retention-bytes", "4096")
MAINTENANCE_FLAGS = ("--lake-compaction-min-files", "4", "--lake-maintenance-interval-ms", "200",
                     "--lake-retain-snapshots", "1", "--lake-snapshot-max-age-ms", "0")
# The same while union reads run: a read may take the data files of its snapshot only while
# expiry keeps them (docs/catalog.md, "Limits"), so snapshots live 5 s here instead of none.
MAINTENANCE_FLAGS_WHILE_READING = (*MAINTENANCE_FLAGS[:-1], "5000")
# A round at start, then none for 30 minutes: rows put afterwards stay in the log's tail until a
# restart (whose first round comes at once).
NO_ROUNDS = {"lake.freshness": "60m"}


def batch(first: int, rows: int = 20) -> pa.RecordBatch:
    return id_batch(SCHEMA, first, rows, lambda i: f"{i:050d}", lambda i: i % 30000 - 15000)


def union(server, table, columns=None, client=None, limit=None):
    """A union read: (table, first message's app_metadata, every message's app_metadata)."""
    ticket = {"table": table, "union": True}
    if columns is not None:
        ticket["columns"] = columns
    if limit is not None:
        ticket["limit"] = limit
    reader = (client or server.client).do_get(fl.Ticket(json.dumps(ticket).encode()),
                                              options=ALIGNED)
    batches, metas = [], []
    for chunk in reader:
        batches.append(chunk.data)
        metas.append(json.loads(chunk.app_metadata.to_pybytes()))
    table_ = pa.Table.from_batches(batches, schema=reader.schema)
    return table_, metas[0], metas


def by_id(t: pa.Table) -> pa.Table:
    return t.sort_by([("id", "ascending")])


def written(batches) -> pa.Table:
    return by_id(pa.Table.from_batches(batches))


def check_parts(first: dict, metas: list[dict]) -> dict:
    """The log part covers each bucket's [lake_offset, next_offset) exactly, in order; returns
    rows per part."""
    position = {o["bucket"]: o["lake_offset"] for o in first["offsets"]}
    rows = {"lake": 0, "log": 0}
    for m in metas:
        if "part" not in m:  # the empty first message of an empty read
            continue
        if m["part"] == "log":
            assert m["base_offset"] == position[m["bucket"]], f"gap or overlap at {m}"
            position[m["bucket"]] = m["next_offset"]
            rows["log"] += m["next_offset"] - m["base_offset"]
    for o in first["offsets"]:
        assert position[o["bucket"]] == o["next_offset"], f"bucket {o['bucket']} ends early"
    return rows


def test_union_read_is_lake_plus_tail_across_rounds_and_restarts(make_lake_server, table_name):
    """Two buckets; rows tiered in rounds at two restarts, plus an untiered tail: the union read
    returns every row written exactly once, lake rows and tail rows both present."""
    server = make_lake_server()
    server.create_table(table_name, SCHEMA, buckets=2, bucket_key=["id"], properties=NO_ROUNDS)
    wait_lake(server, table_name)
    sent = []
    for round_ in range(3):
        if round_:
            server.restart()
            wait_lake(server, table_name)  # the restart's round tiered everything before it
        new = [batch(1000 * round_ + 40 * i) for i in range(5)]
        server.put(table_name, new)
        sent += new
        got, first, metas = union(server, table_name)
        assert got.schema == SCHEMA
        assert by_id(got).equals(written(sent))
        rows = check_parts(first, metas)
        assert rows["log"] == 100, "the round's rows are in the log's tail"
        assert got.num_rows - rows["log"] == 100 * round_, "earlier rounds come from the lake"
        assert (first["snapshot_id"] is None) == (round_ == 0)


def test_limit_cuts_the_stream_after_n_rows(make_lake_server, table_name):
    """A limit inside the lake part, exactly at its end, and inside a log batch; 0 rows."""
    server = make_lake_server()
    server.create_table(table_name, SCHEMA, properties=NO_ROUNDS)
    wait_lake(server, table_name)
    server.put(table_name, [batch(0, 70_000)])  # one row group: two 64K-row messages
    server.restart()
    wait_lake(server, table_name)
    server.put(table_name, [batch(70_000, 20), batch(70_020, 20)])
    everything, _, _ = union(server, table_name)
    assert everything.num_rows == 70_040
    for limit in (0, 5, 65_536, 69_999, 70_000, 70_001, 70_030, 70_040, 10**9):
        got, first, metas = union(server, table_name, limit=limit)
        assert got.equals(everything.slice(0, min(limit, 70_040))), limit
        logs = [m for m in metas if m.get("part") == "log"]
        if logs:
            assert logs[-1]["next_offset"] == min(limit, 70_040), (limit, logs[-1])


def test_projection_and_every_type(make_lake_server, table_name):
    """Every type the lake holds, three buckets, lake and tail: the union read equals what was
    written (nanosecond timestamps of lake rows at microsecond precision, as the lake keeps
    them), with and without a projection."""
    samples = lake_type_samples()
    fields = [pa.field("id", pa.int64(), nullable=False)]
    fields += [pa.field(f"c{i}", t) for i, (t, _) in enumerate(samples.values())]
    fields += [pa.field("nn_int8", pa.int8(), nullable=False)]
    schema = pa.schema(fields)
    values = {f"c{i}": v for i, (_, v) in enumerate(samples.values())}
    values["nn_int8"] = [-128, 0, 127]
    server = make_lake_server()
    server.create_table(table_name, schema, buckets=3, properties=NO_ROUNDS)
    wait_lake(server, table_name)
    lake_part = type_samples.make_batches(schema, 6, 9, values)
    for b in lake_part:  # a stream per batch: round-robin over the buckets
        server.put(table_name, [b])
    server.restart()
    wait_lake(server, table_name)
    tail = type_samples.make_batches(schema, 3, 5, values, first_id=1000)
    for b in tail:
        server.put(table_name, [b])
    got, first, metas = union(server, table_name)
    assert check_parts(first, metas)["log"] == 15
    expected = by_id(pa.Table.from_batches(lake_part + tail))
    got = by_id(got)
    assert got.schema == schema
    # Lake rows hold nanosecond timestamps as microseconds (floor-divided, as the lake stores
    # them); the tail's come from the log as they were written.
    in_lake = pc.less(expected["id"], 1000).to_pylist()
    columns = {}
    for name in schema.names:
        want = expected[name].combine_chunks()
        if pa.types.is_timestamp(want.type) and want.type.unit == "ns":
            raw = want.view(pa.int64()).to_pylist()
            want = pa.array([None if v is None else (v // 1000 * 1000 if lake else v)
                             for v, lake in zip(raw, in_lake)], pa.int64()).view(want.type)
        columns[name] = want
    assert_same_columns(got, pa.table(columns))
    projected, _, _ = union(server, table_name, columns=["nn_int8", "id", "c0"])
    assert projected.schema.names == ["nn_int8", "id", "c0"]
    assert by_id(projected).equals(expected.select(["nn_int8", "id", "c0"]))
    empty, first, _ = union(server, table_name, columns=[])
    assert empty.num_columns == 0


def test_union_read_after_compaction_and_retention(make_lake_server, table_name):
    """Many small commits compacted into bigger files, and the log's old segments deleted by
    retention: the union read still returns every row once."""
    server = make_lake_server(*SMALL_SEGMENTS, *MAINTENANCE_FLAGS)
    server.create_table(table_name, SCHEMA, properties={"lake.freshness": "100ms"})
    sent = []
    for i in range(24):
        b = batch(30 * i, 30)
        server.put(table_name, [b])
        sent.append(b)
        wait_lake(server, table_name)  # one commit per batch: many small files

    def compacted(lake):
        return lake["data_files"] < 24 and lake["lag_rows"] == 0

    wait_settled(server, table_name, compacted, "compaction", timeout_s=30)
    assert server.describe(table_name)["bucket_offsets"][0]["earliest_offset"] > 0, (
        "retention deleted nothing: the test tested nothing")
    got, first, metas = union(server, table_name)
    assert by_id(got).equals(written(sent))
    assert first["offsets"][0]["lake_offset"] == sum(b.num_rows for b in sent)
    server.restart()
    got, _, _ = union(server, table_name)
    assert by_id(got).equals(written(sent))


def rolled_past_the_lake(make_lake_server, table_name):
    """A server with small segments and 41 batches of 20 in `table_name`, each tiered and the
    last put after a round, so retention may drop what the lake holds: (server, the batches)."""
    server = make_lake_server(*SMALL_SEGMENTS)
    server.create_table(table_name, SCHEMA, properties={"lake.freshness": "100ms"})
    sent = [batch(20 * i) for i in range(40)]
    for b in sent:
        server.put(table_name, [b])
    wait_lake(server, table_name)
    server.put(table_name, [batch(800)])  # rolls a segment: retention runs after the round
    sent.append(batch(800))
    wait_lake(server, table_name)
    return server, sent


def test_old_offsets_come_from_the_lake(make_lake_server, table_name):
    """Offsets retention deleted from the log are read from the lake: the same rows, columns and
    offsets as the log served before, from any offset, projected, with `to`, across the point
    where the log begins, and continuing to follow new rows."""
    server, sent = rolled_past_the_lake(make_lake_server, table_name)
    server.put(table_name, [batch(820)])
    sent.append(batch(820))
    earliest = server.describe(table_name)["bucket_offsets"][0]["earliest_offset"]
    assert earliest > 100, "retention deleted nothing: the test tested nothing"
    everything = written(sent)

    def read(ticket):
        reader = server.client.do_get(fl.Ticket(json.dumps(ticket).encode()), options=ALIGNED)
        batches, metas = [], []
        for chunk in reader:
            batches.append(chunk.data)
            metas.append(json.loads(chunk.app_metadata.to_pybytes()))
        for a, b in zip(metas, metas[1:]):
            assert b["base_offset"] == a["next_offset"], f"gap or overlap: {a} then {b}"
        for m, b in zip(metas, batches):
            assert m["next_offset"] - m["base_offset"] == b.num_rows
        return pa.Table.from_batches(batches, schema=reader.schema), metas

    got, metas = read({"table": table_name, "from": 0})
    assert got.equals(everything)  # one bucket: offset order is id order
    assert metas[0]["base_offset"] == 0 and metas[-1]["next_offset"] == everything.num_rows
    got, metas = read({"table": table_name, "from": 37, "to": earliest + 5, "columns": ["pad"]})
    assert metas[0]["base_offset"] == 37, "rows from the lake start at the offset asked for"
    assert got.column("pad").to_pylist() == everything["pad"].to_pylist()[37:metas[-1][
        "next_offset"]]
    assert metas[-1]["next_offset"] >= earliest + 5
    got, metas = read({"table": table_name, "from": 5, "to": 25})
    assert got.equals(everything.slice(5, 20)) and metas[-1]["next_offset"] == 25

    # A follow from an old offset continues into rows put later.
    reader = server.client.do_get(fl.Ticket(json.dumps(
        {"table": table_name, "from": 3, "follow": True}).encode()))
    ids = []
    server.put(table_name, [batch(10_000)])
    deadline = time.monotonic() + 20
    while 10_019 not in ids:
        assert time.monotonic() < deadline, "the follow did not reach the new rows"
        ids += reader.read_chunk().data.column("id").to_pylist()
    reader.cancel()
    assert ids == everything["id"].to_pylist()[3:] + list(range(10_000, 10_020))


def test_old_offsets_of_a_table_out_of_the_lake_stay_out_of_range(make_lake_server, table_name):
    """Without a lake, retention's deletions are final: OUT_OF_RANGE naming the valid offsets."""
    server = make_lake_server(*SMALL_SEGMENTS)
    server.create_table(table_name, SCHEMA, properties={"lake.enabled": "false"})
    for i in range(40):
        server.put(table_name, [batch(20 * i)])
    earliest = server.describe(table_name)["bucket_offsets"][0]["earliest_offset"]
    assert earliest > 0
    with expect_error("OUT_OF_RANGE", "valid offsets are", f"[{earliest}, 800]"):
        server.get({"table": table_name, "from": 0})
    # Its union read is the log that is left.
    got, first, metas = union(server, table_name)
    assert first["snapshot_id"] is None
    assert first["offsets"] == [{"bucket": 0, "lake_offset": earliest, "next_offset": 800}]
    assert by_id(got).equals(written([batch(20 * i) for i in range(40)]).slice(earliest))


def test_union_read_of_a_table_out_of_the_lake(make_lake_server, table_name):
    server = make_lake_server()
    server.create_table(table_name, SCHEMA, buckets=3, properties={"lake.enabled": "false"})
    sent = [batch(20 * i) for i in range(6)]
    for b in sent:
        server.put(table_name, [b])
    got, first, metas = union(server, table_name, columns=["id"])
    assert first["snapshot_id"] is None
    assert check_parts(first, metas)["log"] == 120
    assert by_id(got).equals(written(sent).select(["id"]))


def test_union_read_of_an_empty_table_and_an_empty_lake(make_lake_server, table_name):
    server = make_lake_server()
    server.create_table(table_name, SCHEMA, buckets=2, properties=NO_ROUNDS)
    got, first, metas = union(server, table_name)  # maybe before the first round: no metadata
    assert got.num_rows == 0 and got.schema == SCHEMA and len(metas) == 1
    assert first["offsets"] == [{"bucket": b, "lake_offset": 0, "next_offset": 0}
                                for b in range(2)]
    wait_lake(server, table_name)
    got, first, _ = union(server, table_name)
    assert got.num_rows == 0 and got.schema == SCHEMA
    server.put(table_name, [batch(0)])  # an empty lake and a tail
    got, first, metas = union(server, table_name)
    assert by_id(got).equals(written([batch(0)]))
    assert first["snapshot_id"] is None and check_parts(first, metas)["log"] == 20


def test_union_read_errors(make_lake_server, table_name):
    server = make_lake_server()
    server.create_table(table_name, SCHEMA)
    with expect_error("NOT_FOUND", "does not exist"):
        union(server, "nope.nothing")
    with expect_error("INVALID_ARGUMENT", "unknown column 'nope'"):
        union(server, table_name, columns=["id", "nope"])
    with expect_error("INVALID_ARGUMENT", "\"from\" applies to log reads"):
        server.get({"table": table_name, "union": True, "from": 0})
    with expect_error("INVALID_ARGUMENT", "\"follow\" must be true or false"):
        server.get({"table": table_name, "union": True, "follow": 1})
    with expect_error("INVALID_ARGUMENT", "\"limit\" must be a non-negative number"):
        union(server, table_name, limit=-1)
    with expect_error("INVALID_ARGUMENT", "\"union\" must be true or false"):
        server.get({"table": table_name, "union": "yes"})
    pk = table_name + "_pk"
    server.create_table(pk, SCHEMA, primary_key=["id"])  # out of the lake (the default)
    with expect_error("INVALID_ARGUMENT", "primary key", "needs lake.enabled \"true\""):
        union(server, pk)


def test_union_reads_while_producing_tiering_and_retention(make_lake_server, table_name):
    """Producers write, tiering commits every 50 ms and retention deletes tiered segments while
    union reads run: each read holds exactly the rows of the offsets below its next_offsets,
    each once."""
    server = make_lake_server(*SMALL_SEGMENTS, *MAINTENANCE_FLAGS_WHILE_READING)
    server.create_table(table_name, SCHEMA, buckets=2, bucket_key=["id"],
                        properties={"lake.freshness": "50ms"})
    stop = threading.Event()
    errors = []
    producer = threading.Thread(target=produce, args=(server, table_name, stop, errors))
    producer.start()
    reads = 0
    try:
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            got, first, metas = union(server, table_name, client=server.new_client())
            check_parts(first, metas)
            ids = got.column("id").to_pylist()
            assert len(ids) == len(set(ids)), "a row came twice"
            expected = sum(o["next_offset"] for o in first["offsets"])
            assert len(ids) == expected, f"{len(ids)} rows, offsets say {expected}"
            reads += 1
    finally:
        stop.set()
        producer.join()
    assert not errors, errors
    assert reads >= 3
    # Once the producer stopped, the union is every id written.
    wait_lake(server, table_name)
    got, first, _ = union(server, table_name)
    n = sum(o["next_offset"] for o in first["offsets"])
    assert sorted(got.column("id").to_pylist()) == list(range(n))
    assert server.describe(table_name)["bucket_offsets"][0]["earliest_offset"] > 0, (
        "retention deleted nothing: the test tested nothing")


def produce(server, table, stop, errors):
    client = server.new_client()
    i = 0
    try:
        while not stop.is_set():
            server.put(table, [batch(20 * i)], client=client)
            i += 1
            time.sleep(0.005)
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append(e)


def test_offsets_in_neither_the_log_nor_the_lake(make_lake_server, warehouse, table_name):
    """A lake lost while retention ran (its directory removed with the server down): tiering
    starts a new lake from the log's first offset, and a read of the offsets neither holds fails
    with OUT_OF_RANGE naming the earliest offset readable; reading from there works."""
    server, sent = rolled_past_the_lake(make_lake_server, table_name)
    earliest = server.describe(table_name)["bucket_offsets"][0]["earliest_offset"]
    assert earliest > 0
    server.stop()
    namespace, name = table_name.split(".")
    shutil.rmtree(warehouse / namespace / name)
    server.start()
    wait_lake(server, table_name)  # the new lake holds [earliest, end)
    assert server.describe(table_name)["lake"]["earliest_offsets"] == [earliest]
    with expect_error("OUT_OF_RANGE", f"offsets [0, {earliest}) of bucket 0",
                      "in neither the log", f"the earliest offset readable after them is {earliest}"):
        server.get({"table": table_name, "from": 0})
    got, _ = server.get({"table": table_name, "from": earliest})
    assert got.equals(written(sent).slice(earliest))
    # The union read is what both still hold.
    got, first, _ = union(server, table_name)
    assert by_id(got).equals(written(sent).slice(earliest))
