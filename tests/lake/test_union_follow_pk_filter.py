"""Union reads that follow the live tail, union reads of primary-key tables (checked against the
Python model of tests/integration/test_primary_keys.py) and filtered union reads (checked against
pyarrow.compute on the full union read), through pyarrow.flight only (docs/catalog.md)."""

from __future__ import annotations

import datetime
import json
import random
import re
import threading
import time
import urllib.request

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as fl
import pytest

from oxbowtest.lake import wait_lake
from oxbowtest.flight import ALIGNED, expect_error
from oxbowtest.primary_keys import (COLUMNS, ENGINES, SCHEMA as PK_SCHEMA, Model, command,
                                    create_pk_table, key_of, random_write, write)
from test_union_read import SCHEMA, SMALL_SEGMENTS, batch, produce, union

OPS = {"<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal,
       "==": pc.equal, "!=": pc.not_equal}


def union_ticket(table, **fields) -> fl.Ticket:
    return fl.Ticket(json.dumps({"table": table, "union": True, **fields}).encode())


def test_union_follow_while_producing_then_resume(make_lake_server, table_name):
    """A following union read while a producer writes and tiering commits every 50 ms: every row
    comes exactly once, the lake part first, then per bucket contiguous offsets from the lake
    offsets on. A second following read, cancelled midway, resumes with log reads from the
    next_offsets its messages gave, again without gap or duplicate."""
    server = make_lake_server(freshness_ms=50)
    server.create_table(table_name, SCHEMA, buckets=2, bucket_key=["id"])
    server.put(table_name, [batch(100_000 + 20 * i) for i in range(10)])
    wait_lake(server, table_name)  # a lake part for certain
    stop = threading.Event()
    errors = []
    producer = threading.Thread(target=produce, args=(server, table_name, stop, errors))
    producer.start()
    try:
        time.sleep(0.3)
        reader = server.new_client().do_get(union_ticket(table_name, follow=True), options=ALIGNED)
        cut = server.new_client().do_get(union_ticket(table_name, follow=True), options=ALIGNED)
        time.sleep(1.5)
    finally:
        stop.set()
        producer.join()
    assert not errors, errors
    ends = {o["bucket"]: o["next_offset"] for o in server.describe(table_name)["bucket_offsets"]}
    total = sum(ends.values())
    assert total > 400, "the producer wrote too little to test anything"

    def read(r, until_rows):
        ids, metas, position, parts = [], [], None, []
        deadline = time.monotonic() + 30
        while len(ids) < until_rows or "log" not in parts:  # a resume point past the lake
            assert time.monotonic() < deadline, f"the follow stopped at {len(ids)} of {until_rows}"
            chunk = r.read_chunk()
            meta = json.loads(chunk.app_metadata.to_pybytes())
            if position is None:
                position = {o["bucket"]: o["lake_offset"] for o in meta["offsets"]}
            if "part" in meta:
                parts.append(meta["part"])
            if meta.get("part") == "log":
                assert meta["base_offset"] == position[meta["bucket"]], f"gap or overlap: {meta}"
                assert meta["next_offset"] - meta["base_offset"] == chunk.data.num_rows
                position[meta["bucket"]] = meta["next_offset"]
            ids += chunk.data.column("id").to_pylist()
            metas.append(meta)
        return ids, position, parts

    ids, position, parts = read(reader, total)
    reader.cancel()
    assert len(ids) == len(set(ids)) == total, "a row came twice or not at all"
    assert position == ends
    assert "lake" in parts and parts.count("log") > 2
    assert parts.index("log") > max(i for i, p in enumerate(parts) if p == "lake"), (
        "a lake message after the log part began")

    # Resume: half of a following read, then ordinary log reads from its next_offsets.
    first_ids, position, _ = read(cut, total // 2)
    cut.cancel()
    rest = []
    for bucket, offset in position.items():
        got, _ = server.get({"table": table_name, "bucket": bucket, "from": offset,
                             "to": ends[bucket]}) if offset < ends[bucket] else (None, None)
        if got is not None:
            rest += got.column("id").to_pylist()
    everything = first_ids + rest
    assert len(everything) == len(set(everything)) == total


def union_rows(server, table, **fields):
    reader = server.client.do_get(union_ticket(table, **fields), options=ALIGNED)
    batches, parts = [], []
    for chunk in reader:
        batches.append(chunk.data)
        parts.append(json.loads(chunk.app_metadata.to_pybytes()).get("part"))
    return pa.Table.from_batches(batches, schema=reader.schema), parts


@pytest.mark.parametrize("engine", ["last_row", "last_row_image_none", "versioned", "aggregate"])
def test_primary_key_union_read_is_the_model(make_lake_server, table_name, engine):
    """Random upserts, partial updates and deletes while tiering commits every 50 ms: each union
    read returns every key of the model once with its current row (lake rows less position
    deletes and later changes, plus the changed keys' rows), projected and filtered too."""
    server = make_lake_server(freshness_ms=50)
    create_pk_table(server, table_name, buckets=3,
                    properties={**ENGINES[engine], "lake.enabled": "true"})
    model = Model(engine)
    rng = random.Random(hash(engine) & 0xFFFF)
    both_parts = 0
    for step in range(60):
        op, b, payload = random_write(rng, engine)
        write(server.client, command(table_name, op), [b])
        for item in payload:
            model.delete(item) if op == "delete" else model.upsert(item)
        if step % 4 != 3:
            continue
        got, parts = union_rows(server, table_name)
        rows = got.to_pylist()
        keys = [key_of(r) for r in rows]
        assert len(keys) == len(set(keys)), f"a key twice at step {step}"
        assert {key_of(r): r for r in rows} == model.rows, f"step {step}"
        both_parts += "lake" in parts and "changes" in parts
        filtered, _ = union_rows(server, table_name, columns=["v", "id"],
                                 filter=[{"column": "v", "op": ">=", "value": 0}])
        want = sorted((r["v"], r["id"]) for r in model.rows.values()
                      if r["v"] is not None and r["v"] >= 0)
        assert sorted(zip(*filtered.to_pydict().values())) == want, f"filtered, step {step}"
    assert both_parts > 0, "no read had both a lake part and changes after it"
    wait_lake(server, table_name)
    got, parts = union_rows(server, table_name)
    assert {key_of(r): r for r in got.to_pylist()} == model.rows and got.num_rows == len(model.rows)
    assert "changes" not in parts


def test_primary_key_union_read_refusals(make_lake_server, table_name):
    server = make_lake_server()
    create_pk_table(server, table_name, properties={"lake.enabled": "true"})
    with expect_error("INVALID_ARGUMENT", "has a primary key", "does not follow"):
        union(server, table_name) if False else server.get(
            {"table": table_name, "union": True, "follow": True})
    out = table_name + "_out"
    create_pk_table(server, out)
    with expect_error("INVALID_ARGUMENT", "needs lake.enabled \"true\""):
        union(server, out)


FILTER_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("x", pa.float64()),
                           pa.field("s", pa.string()), pa.field("d", pa.date32()),
                           pa.field("small", pa.int16()), pa.field("u", pa.uint32())])


def filter_batch(first: int, rows: int = 50) -> pa.RecordBatch:
    ids = list(range(first, first + rows))
    return pa.record_batch([
        pa.array(ids, pa.int64()),
        pa.array([None if i % 7 == 0 else (i % 13) / 4 - 1 for i in ids], pa.float64()),
        pa.array([None if i % 11 == 0 else f"k{i % 17:02d}" for i in ids]),
        pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=i // 10) for i in ids]),
        pa.array([i % 100 - 50 for i in ids], pa.int16()),
        pa.array([i * 3 for i in ids], pa.uint32())], schema=FILTER_SCHEMA)


def pruned(server, table) -> dict:
    text = urllib.request.urlopen(server.metrics_url + "/metrics", timeout=10).read().decode()
    out = {}
    for unit, value in re.findall(
            r'oxbow_union_read_pruned_total\{[^}]*table="' + re.escape(table) +
            r'",unit="(\w+)"\} (\S+)', text):
        out[unit] = float(value)
    return out


def test_filters_equal_pyarrow_on_the_full_read_and_prune_files(make_lake_server, table_name):
    """Lake files of disjoint id ranges plus a log tail: each filtered union read equals
    pyarrow.compute's filter of the full union read, and a selective filter skips lake files."""
    server = make_lake_server()
    server.create_table(table_name, FILTER_SCHEMA, buckets=2,
                        properties={"lake.freshness": "100ms"})
    for i in range(8):  # a round per batch: a data file per id range
        server.put(table_name, [filter_batch(100 * i, 100)])
        wait_lake(server, table_name)
    server.put(table_name, [filter_batch(800), filter_batch(850)])  # the tail (maybe tiered)
    full, _ = union_rows(server, table_name)
    assert full.num_rows == 900
    cases = [
        [{"column": "id", "op": ">=", "value": 650}],
        [{"column": "id", "op": "<", "value": 120}, {"column": "small", "op": "!=", "value": 0}],
        [{"column": "id", "op": "==", "value": 333}],
        [{"column": "x", "op": ">", "value": 1.5}],
        [{"column": "x", "op": "<=", "value": 0}],
        [{"column": "s", "op": "==", "value": "k03"}],
        [{"column": "s", "op": ">", "value": "k10"}, {"column": "id", "op": "<=", "value": 500}],
        [{"column": "d", "op": ">=", "value": 19723 + 60}],  # days since the epoch
        [{"column": "u", "op": "<", "value": 900}],
        [{"column": "small", "op": "==", "value": 1000}],
    ]
    for filter_ in cases:
        mask = None
        for p in filter_:
            column = full[p["column"]]
            value = p["value"]
            if p["column"] == "d":
                column = column.cast(pa.int32())
            m = OPS[p["op"]](column, value)
            mask = m if mask is None else pc.and_(mask, m)
        want = full.filter(mask)
        got, _ = union_rows(server, table_name, filter=filter_)
        assert got.sort_by("id").equals(want.sort_by("id")), filter_
        projected, _ = union_rows(server, table_name, filter=filter_, columns=["s"])
        assert sorted(projected["s"].to_pylist(), key=str) == sorted(want["s"].to_pylist(), key=str)
    before = pruned(server, table_name).get("file", 0)
    got, _ = union_rows(server, table_name, filter=[{"column": "id", "op": ">=", "value": 700}])
    assert got.num_rows == 200
    assert pruned(server, table_name).get("file", 0) >= before + 6, "no lake file was skipped"
    limited, _ = union_rows(server, table_name, limit=7,
                            filter=[{"column": "id", "op": ">=", "value": 400}])
    assert limited.num_rows == 7 and min(limited["id"].to_pylist()) >= 400


def test_filter_errors(make_lake_server, table_name):
    server = make_lake_server()
    schema = pa.schema([*SCHEMA, pa.field("flag", pa.bool_())])
    server.create_table(table_name, schema)
    cases = [
        ({"column": "nope", "op": "<", "value": 1}, ["filter column 'nope' is not a column"]),
        ({"column": "id", "op": "=", "value": 1}, ["unknown op \"=\"", "ops are <, <=, >, >="]),
        ({"column": "id", "op": "<", "value": "1"}, ["column 'id' of type int64 needs an integer"]),
        ({"column": "pad", "op": "<", "value": 1}, ["column 'pad' of type string needs a string"]),
        ({"column": "flag", "op": "==", "value": 1}, ["type bool is not supported"]),
        ({"column": "id", "op": "<", "value": None}, ["\"value\" must be a number"]),
        ({"column": "id", "op": "<"}, ["entry 0 must be {\"column\""]),
    ]
    for predicate, words in cases:
        with expect_error("INVALID_ARGUMENT", *words):
            server.get({"table": table_name, "union": True, "filter": [predicate]})
    with expect_error("INVALID_ARGUMENT", "\"filter\" applies to union reads"):
        server.get({"table": table_name, "filter": []})


def test_describe_reports_the_earliest_offsets_of_the_log_and_the_lake(make_lake_server,
                                                                       table_name):
    """Retention moves the log's earliest offsets up; the lake still starts at 0 in each bucket."""
    server = make_lake_server(*SMALL_SEGMENTS)
    server.create_table(table_name, SCHEMA, buckets=2, bucket_key=["id"],
                        properties={"lake.freshness": "100ms"})
    assert "earliest_offsets" not in server.describe(table_name)["lake"]  # nothing committed
    for i in range(40):
        server.put(table_name, [batch(20 * i)])
    wait_lake(server, table_name)
    # Retention runs when a bucket rolls a segment, below what the lake holds. A batch's rows
    # split over the buckets, so write until each bucket has rolled after a round.
    for i in range(40, 80):
        server.put(table_name, [batch(20 * i)])
        wait_lake(server, table_name)
        described = server.describe(table_name)
        log_earliest = [b["earliest_offset"] for b in described["bucket_offsets"]]
        if min(log_earliest) > 0:
            break
    assert min(log_earliest) > 0, f"retention deleted nothing: {log_earliest}"
    assert described["lake"]["earliest_offsets"] == [0, 0]
    pk = table_name + "_pk"
    create_pk_table(server, pk, properties={"lake.enabled": "true"})
    write(server.client, command(pk, "upsert"),
          [pa.Table.from_pylist([{"id": 1, "tag": "a"}],
                                schema=pa.schema([PK_SCHEMA.field("id"),
                                                  PK_SCHEMA.field("tag")])).to_batches()[0]])
    lake = wait_lake(server, pk)
    assert "earliest_offsets" not in lake, "a primary-key lake holds rows, not offsets"


def test_describe_finds_the_lake_start_of_a_bucket_written_later(make_lake_server, table_name):
    """A bucket without a lake row has no earliest offset; once tiering moves it, it has one."""
    server = make_lake_server()
    server.create_table(table_name, SCHEMA, buckets=2, bucket_key=["id"],
                        properties={"lake.freshness": "100ms"})

    def next_offsets():
        return [b["next_offset"] for b in server.describe(table_name)["bucket_offsets"]]

    server.put(table_name, [batch(0, 1)])
    first = next(b for b, o in enumerate(next_offsets()) if o > 0)
    wait_lake(server, table_name)
    expected = [None, None]
    expected[first] = 0
    assert server.describe(table_name)["lake"]["earliest_offsets"] == expected
    for i in range(1, 100):  # rows until one hashes into the other bucket
        server.put(table_name, [batch(i, 1)])
        if min(next_offsets()) > 0:
            break
    assert min(next_offsets()) > 0
    wait_lake(server, table_name)
    assert server.describe(table_name)["lake"]["earliest_offsets"] == [0, 0]


def test_pruning_survives_manifest_merging_and_compaction(make_lake_server, table_name):
    """Files whose manifests were merged (more than --lake-max-manifests) keep their bounds for
    the union read's pruning, as for pyiceberg's planning."""
    server = make_lake_server("--lake-max-manifests", "4", "--lake-maintenance-interval-ms", "100")
    server.create_table(table_name, FILTER_SCHEMA, properties={"lake.freshness": "100ms"})
    for i in range(12):
        server.put(table_name, [filter_batch(100 * i, 100)])
        wait_lake(server, table_name)
    time.sleep(1)  # a maintenance pass merges the manifests
    lake = wait_lake(server, table_name)
    from pyiceberg.table import StaticTable
    planned = len(list(StaticTable.from_metadata(lake["metadata_location"]).scan(
        row_filter="id >= 1150").plan_files()))
    before = pruned(server, table_name).get("file", 0)
    got, _ = union_rows(server, table_name, filter=[{"column": "id", "op": ">=", "value": 1150}])
    assert got.num_rows == 50
    skipped = pruned(server, table_name).get("file", 0) - before
    assert skipped >= lake["data_files"] - planned, (skipped, planned, lake["data_files"])


def test_union_read_of_nested_columns(make_lake_server, table_name):
    """A lake table with list, struct and map columns: a union read, whole, filtered and
    projected, returns the nested values of the lake files and of the log tail."""
    inner = pa.struct([("a", pa.int32()), ("m", pa.map_(pa.string(), pa.int64()))])
    schema = pa.schema([("id", pa.int64()), ("l", pa.list_(pa.int64())), ("s", inner)])

    def nested_batch(first, n):
        ids = range(first, first + n)
        return pa.record_batch([
            pa.array(ids, pa.int64()),
            pa.array([None if i % 5 == 0 else [i, None][: i % 3] for i in ids], pa.list_(pa.int64())),
            pa.array([None if i % 7 == 0 else {"a": i, "m": [("k", i)] if i % 2 else None}
                      for i in ids], inner),
        ], schema=schema)

    server = make_lake_server()
    server.create_table(table_name, schema, properties={"lake.freshness": "100ms"})
    batches = [nested_batch(0, 60)]
    server.put(table_name, batches)
    assert wait_lake(server, table_name)["snapshots"] >= 1
    batches.append(nested_batch(60, 15))
    server.put(table_name, batches[-1:])
    want = pa.Table.from_batches(batches).sort_by("id")
    full, parts = union_rows(server, table_name)
    assert "lake" in parts
    assert full.sort_by("id").to_pylist() == want.to_pylist()
    got, _ = union_rows(server, table_name, filter=[{"column": "id", "op": ">=", "value": 33}],
                        columns=["id", "s"])
    assert got.sort_by("id").to_pylist() == want.filter(pc.greater_equal(want["id"], 33)).select(
        ["id", "s"]).to_pylist()
