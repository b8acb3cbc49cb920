"""Primary-key tables over pyarrow.flight: merge engines, partial updates, deletes, the changelog,
snapshots, lookups and recovery, each checked against a Python reference model."""

from __future__ import annotations

import random
import re
import shutil
import threading

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.flight import expect_error, schema_json
from oxbowtest.primary_keys import (COLUMNS, ENGINES, SCHEMA, Model, changelog, check_against_model,
                                    command, create_pk_table, delete, do_get, random_write,
                                    replay, snapshot, upsert)


# --- tests ------------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_random_writes_match_the_model(make_server, table_name, engine):
    server = make_server()
    buckets = 3
    create_pk_table(server, table_name, buckets=buckets, properties=ENGINES[engine])
    model = Model(engine)
    rng = random.Random(hash(engine) & 0xFFFF)
    for _ in range(60):
        op, batch, rows = random_write(rng, engine)
        if op == "delete":
            delete(server, table_name, batch)
            for k in rows:
                model.delete(k)
        else:
            upsert(server, table_name, batch)
            for r in rows:
                model.upsert(r)
    check_against_model(server, table_name, model, buckets, rng)
    server.restart()  # the rows come back from RocksDB, the changelog from the log
    check_against_model(server, table_name, model, buckets, rng)


def test_path_descriptor_upserts_and_acks_changelog_offsets(server, table_name):
    create_pk_table(server, table_name, buckets=1)
    rows = [{"id": 1, "tag": "a", "v": 1, "s": None, "flag": None, "ver": None}]
    acks = server.put(table_name, [pa.Table.from_pylist(rows, schema=SCHEMA).to_batches()[0]])
    assert acks == [{"offsets": [{"bucket": 0, "base_offset": 0, "rows": 1}]}]
    rows[0]["v"] = 2
    ack = upsert(server, table_name, pa.Table.from_pylist(rows, schema=SCHEMA).to_batches()[0])
    assert ack == {"offsets": [{"bucket": 0, "base_offset": 1, "rows": 2}]}  # -U and +U
    records = changelog(server, table_name, 1)
    assert [(r["_change_type"], r["v"]) for r in records] == [("+I", 1), ("-U", 1), ("+U", 2)]
    info = server.client.get_flight_info(fl.FlightDescriptor.for_path(*table_name.split(".")))
    assert info.schema.names == COLUMNS + ["_change_type"]


def test_changelog_reads_project_and_stop_at_to(server, table_name):
    create_pk_table(server, table_name, buckets=1)
    for v in range(3):
        upsert(server, table_name, pa.Table.from_pylist(
            [{"id": 1, "tag": "a", "v": v}],
            schema=pa.schema([SCHEMA.field(c) for c in ("id", "tag", "v")])).to_batches()[0])
    t, _ = do_get(server, {"table": table_name, "bucket": 0, "from": 1, "to": 3,
                           "columns": ["_change_type", "v"]})
    assert t.to_pylist() == [{"_change_type": "-U", "v": 0}, {"_change_type": "+U", "v": 1}]


def test_snapshot_of_one_bucket_and_projection(server, table_name):
    create_pk_table(server, table_name, buckets=4)
    rows = [{"id": i, "tag": "t", "v": i * 10, "s": str(i), "flag": None, "ver": None}
            for i in range(40)]
    upsert(server, table_name, pa.Table.from_pylist(rows, schema=SCHEMA).to_batches()[0])
    seen = []
    for b in range(4):
        t, metas = snapshot(server, table_name, bucket=b, columns=["v", "id"])
        assert t.schema.names == ["v", "id"]
        assert metas[0]["offsets"][0]["bucket"] == b
        seen.extend(t.to_pylist())
    assert sorted(r["id"] for r in seen) == list(range(40))
    assert all(r["v"] == r["id"] * 10 for r in seen)


def test_empty_snapshot_still_reports_offsets(server, table_name):
    create_pk_table(server, table_name, buckets=2)
    t, metas = snapshot(server, table_name)
    assert t.num_rows == 0 and t.schema.names == COLUMNS
    assert metas == [{"offsets": [{"bucket": 0, "next_offset": 0},
                                  {"bucket": 1, "next_offset": 0}]}]


def test_big_snapshot_spans_batches(server, table_name):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("pad", pa.string())])
    create_pk_table(server, table_name, schema=schema, primary_key=["id"], buckets=2)
    n = 150_000
    batch = pa.record_batch([pa.array(range(n), pa.int64()), pa.array(["p" * 20] * n)], schema=schema)
    upsert(server, table_name, batch)
    t, metas = snapshot(server, table_name)
    assert t.num_rows == n and sorted(t.column("id").to_pylist()) == list(range(n))
    assert metas[0] is not None and all(m is None for m in metas[1:]) and len(metas) > 2


def test_lookups_point_prefix_and_exchange(server, table_name):
    schema = pa.schema([pa.field("user", pa.int64(), nullable=False),
                        pa.field("item", pa.string(), nullable=False),
                        pa.field("qty", pa.int32())])
    create_pk_table(server, table_name, schema=schema, primary_key=["user", "item"],
                    bucket_key=["user"], buckets=3)
    rows = [{"user": u, "item": f"i{i}", "qty": u * 100 + i} for u in range(5) for i in range(u)]
    upsert(server, table_name, pa.Table.from_pylist(rows, schema=schema).to_batches()[0])
    found, _ = do_get(server, {"table": table_name,
                               "lookup": {"user": [3, 9, 4], "item": ["i1", "i0", "i3"]},
                               "columns": ["qty"]})
    assert found.to_pylist() == [{"qty": 301}, {"qty": 403}]
    prefix, _ = do_get(server, {"table": table_name, "lookup": {"user": [2, 0, 4]}, "prefix": True})
    assert prefix.to_pylist() == [r for r in rows if r["user"] == 2] + \
        [r for r in rows if r["user"] == 4]
    keys = pa.schema([schema.field("user"), schema.field("item")])
    writer, reader = server.client.do_exchange(command(table_name, "lookup", columns=["item", "qty"]))
    writer.begin(keys)
    for users, items in [([1, 1], ["i0", "nope"]), ([4, 4, 2], ["i2", "i3", "i1"]), ([], [])]:
        writer.write_batch(pa.record_batch([pa.array(users, pa.int64()), pa.array(items)],
                                           schema=keys))
        got = reader.read_chunk().data.to_pylist()
        want = [{"item": i, "qty": u * 100 + int(i[1:])} for u, i in zip(users, items)
                if i != "nope"]
        assert got == want
    writer.done_writing()
    writer.close()


def test_a_prefix_lookup_of_the_whole_primary_key_is_a_lookup(server, table_name):
    # The bucket key is the primary key (the default): the table's rows are in hashed memtables
    # and a "prefix" can only match its own key, so the lookup path answers it.
    schema = pa.schema([pa.field("k", pa.string(), nullable=False),
                        pa.field("n", pa.int32(), nullable=False), pa.field("v", pa.int64())])
    create_pk_table(server, table_name, schema=schema, primary_key=["k", "n"], buckets=3)
    rows = [{"k": k, "n": n, "v": i} for i, (k, n) in
            enumerate((k, n) for k in ["a", "ab", "abc", "b", ""] for n in range(3))]
    upsert(server, table_name, pa.Table.from_pylist(rows, schema=schema).to_batches()[0])
    asked = {"k": ["ab", "a", "zz", "", "ab"], "n": [1, 2, 0, 0, 1]}
    want = [r for k, n in zip(asked["k"], asked["n"]) for r in rows if (r["k"], r["n"]) == (k, n)]
    assert len(want) == 4
    prefix, _ = do_get(server, {"table": table_name, "lookup": asked, "prefix": True})
    found, _ = do_get(server, {"table": table_name, "lookup": asked})
    assert prefix.to_pylist() == want
    assert found.to_pylist() == want


def test_lookups_while_writing(make_server, table_name):
    server = make_server()
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int64())])
    create_pk_table(server, table_name, schema=schema, primary_key=["id"], buckets=4)
    stop = threading.Event()
    errors = []

    def writer():
        client = server.new_client()
        v = 0
        while not stop.is_set():
            v += 1
            upsert(server, table_name, pa.record_batch(
                [pa.array(range(100), pa.int64()), pa.array([v] * 100, pa.int64())],
                schema=schema), client=client)

    def reader():
        client = server.new_client()
        last = {}
        try:
            for _ in range(40):
                t, _ = do_get(server, {"table": table_name, "lookup": {"id": list(range(100))}},
                              client=client)
                seen = {r["id"]: r["v"] for r in t.to_pylist()}
                # A batch lands bucket by bucket; a key once seen never vanishes or goes back.
                assert set(last) <= set(seen), "a key vanished"
                assert all(seen[i] >= v for i, v in last.items()), "a value went back"
                last = seen
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    w = threading.Thread(target=writer)
    w.start()
    readers = [threading.Thread(target=reader) for _ in range(3)]
    for r in readers:
        r.start()
    for r in readers:
        r.join()
    stop.set()
    w.join()
    assert not errors, errors
    t, _ = snapshot(server, table_name)
    assert t.num_rows == 100 and len(set(t.column("v").to_pylist())) == 1


def test_snapshot_then_follow_has_no_gap_and_no_duplicate(make_server, table_name):
    server = make_server()
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int64())])
    buckets = 3
    create_pk_table(server, table_name, schema=schema, primary_key=["id"], buckets=buckets)
    stop = threading.Event()
    written = []

    def writer():
        client = server.new_client()
        rng = random.Random(3)
        v = 0
        while not stop.is_set() or v < 30:
            v += 1
            ids = rng.sample(range(200), 20)
            if v % 5 == 0:
                delete(server, table_name, pa.record_batch(
                    [pa.array(ids[:5], pa.int64())], schema=pa.schema([schema.field("id")])),
                    client=client)
            upsert(server, table_name, pa.record_batch(
                [pa.array(ids, pa.int64()), pa.array([v] * 20, pa.int64())], schema=schema),
                client=client)
            written.append(v)

    w = threading.Thread(target=writer)
    w.start()
    while len(written) < 10:
        threading.Event().wait(0.01)
    snap, metas = snapshot(server, table_name)  # taken while the writer writes
    state = {r["id"]: r for r in snap.to_pylist()}
    stop.set()
    w.join()
    for o in metas[0]["offsets"]:
        t, _ = do_get(server, {"table": table_name, "bucket": o["bucket"], "from": o["next_offset"]})
        for r in t.to_pylist():
            if r["_change_type"] in ("+I", "+U"):
                assert r["_change_type"] != "+I" or r["id"] not in state, "an insert of a key the snapshot had"
                state[r["id"]] = {"id": r["id"], "v": r["v"]}
            elif r["_change_type"] == "-D":
                assert r["id"] in state, "a delete of a key the snapshot did not have"
                del state[r["id"]]
            else:
                assert state[r["id"]] == {"id": r["id"], "v": r["v"]}, "-U must carry the current row"
    final, _ = snapshot(server, table_name)
    assert state == {r["id"]: r for r in final.to_pylist()}


def test_restart_from_checkpoint_plus_tail_and_full_replay(make_server, tmp_path, table_name):
    data = tmp_path / "pkdata"
    server = make_server(data_dir=data)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    create_pk_table(server, table_name, schema=schema, primary_key=["id"], buckets=2)
    model = {}

    def put(ids, v):
        upsert(server, table_name, pa.record_batch(
            [pa.array(ids, pa.int64()), pa.array([v] * len(ids))], schema=schema))
        model.update({i: {"id": i, "v": v} for i in ids})

    put(range(0, 50), "first")
    server.restart()  # opening checkpoints the store: it covers "first"
    put(range(25, 75), "second")
    server.kill()
    shutil.rmtree(data / "kv")  # the live store is lost: the checkpoint plus the tail rebuild it
    server.start()
    log = server.log_tail(80)
    assert "restoring checkpoint" in log
    # Only the tail after the checkpoint is replayed.
    replays = re.findall(r"replayed (\d+) changelog records from offset (\d+)", log)
    assert replays and all(int(start) > 0 for _, start in replays), log
    snap, _ = snapshot(server, table_name)
    assert by_id(snap) == model
    server.kill()
    shutil.rmtree(data / "kv")
    shutil.rmtree(data / "kv-checkpoints")  # nothing left but the changelog: a full replay
    server.start()
    snap, _ = snapshot(server, table_name)
    assert by_id(snap) == model
    assert "from offset 0" in server.log_tail(80)


def by_id(t: pa.Table) -> dict:
    return {r["id"]: r for r in t.to_pylist()}


# --- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize("body, words", [
    ({"primary_key": ["nope"]}, ["'nope'", "not in the schema"]),
    ({"primary_key": ["v"]}, ["'v'", "non-nullable"]),
    ({"primary_key": ["id", "id"]}, ["'id'", "twice"]),
    ({"primary_key": ["id"], "bucket_key": ["tag"]}, ["'tag'", "not part of the primary key"]),
    ({"primary_key": ["f"]}, ["'f'", "cannot be a key"]),
    ({"primary_key": ["id"], "properties": {"merge_engine": "newest"}}, ["'newest'", "last_row"]),
    ({"primary_key": ["id"], "properties": {"merge_engine": "versioned"}}, ["version_column"]),
    ({"primary_key": ["id"], "properties": {"merge_engine": "versioned",
                                            "merge_engine.version_column": "tag"}},
     ["integer or a timestamp"]),
    ({"primary_key": ["id"], "properties": {"merge_engine": "aggregate", "fields.tag.agg": "sum"}},
     ["'sum'", "'tag'", "string"]),
    ({"primary_key": ["id"], "properties": {"fields.v.agg": "sum"}}, ["needs merge_engine 'aggregate'"]),
    ({"primary_key": ["id"], "properties": {"changelog.image": "some"}}, ["'some'"]),
    ({"properties": {"merge_engine": "first_row"}}, ["'merge_engine'", "needs a primary key"]),
    ({"primary_key": ["id"], "properties": {"lake.enabled": "true",
                                            "lake.compaction.delete-ratio": "2"}},
     ["lake.compaction.delete-ratio", "(0, 1]"]),
])
def test_invalid_tables_are_refused(server, body, words):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("tag", pa.string(), nullable=False),
                        pa.field("v", pa.int64()), pa.field("f", pa.float64(), nullable=False)])
    with expect_error("INVALID_ARGUMENT", *words):
        server.action("create_table", {"table": "ns.t", "schema": schema_json(schema), **body})
    assert server.action("list_tables")["tables"] == []


def test_change_type_column_name_is_reserved(server):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("_change_type", pa.string())])
    with expect_error("INVALID_ARGUMENT", "_change_type", "reserved"):
        create_pk_table(server, "ns.t", schema=schema, primary_key=["id"])


def test_bad_writes_are_refused_before_anything_is_written(server, table_name):
    create_pk_table(server, table_name, buckets=2,
                    properties={"merge_engine": "aggregate", "fields.v.agg": "sum"})
    good = pa.Table.from_pylist([{"id": 1, "tag": "a", "v": 5}],
                                schema=pa.schema([SCHEMA.field(c) for c in ("id", "tag", "v")]))
    upsert(server, table_name, good.to_batches()[0])
    before = changelog(server, table_name, 2)
    nullable_key = pa.schema([pa.field("id", pa.int32()), pa.field("tag", pa.string()),
                              pa.field("v", pa.int64())])
    with expect_error("INVALID_ARGUMENT", "'id'", "not nullable"):
        upsert(server, table_name, pa.record_batch(
            [pa.array([2, None], pa.int32()), pa.array(["a", "b"]), pa.array([1, 1], pa.int64())],
            schema=nullable_key))
    with expect_error("INVALID_ARGUMENT", "whole primary key", "'tag'"):
        upsert(server, table_name, pa.record_batch([pa.array([1], pa.int32()), pa.array([1], pa.int64())],
                                                   names=["id", "v"]))
    with expect_error("INVALID_ARGUMENT", "'v'", "int32", "int64"):
        upsert(server, table_name, pa.record_batch(
            [pa.array([1], pa.int32()), pa.array(["a"]), pa.array([1], pa.int32())],
            names=["id", "tag", "v"]))
    with expect_error("INVALID_ARGUMENT", "unexpected field", "'nope'"):
        upsert(server, table_name, pa.record_batch(
            [pa.array([1], pa.int32()), pa.array(["a"]), pa.array([1], pa.int32())],
            names=["id", "tag", "nope"]))
    with expect_error("INVALID_ARGUMENT", "whole primary key"):
        delete(server, table_name, pa.record_batch([pa.array([1], pa.int32())], names=["id"]))
    assert changelog(server, table_name, 2) == before
    snap, _ = snapshot(server, table_name)
    assert snap.column("v").to_pylist() == [5]


def test_log_tables_refuse_primary_key_calls(server, table_name):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    server.create_table(table_name, schema)
    keys = pa.record_batch([pa.array([1], pa.int64())], schema=schema)
    with expect_error("INVALID_ARGUMENT", "log table", "deletes"):
        delete(server, table_name, keys)
    with expect_error("INVALID_ARGUMENT", "log table", "snapshots"):
        snapshot(server, table_name)
    with expect_error("INVALID_ARGUMENT", "log table", "lookups"):
        do_get(server, {"table": table_name, "lookup": {"id": [1]}})


@pytest.mark.parametrize("ticket, words", [
    ({"snapshot": True, "from": 3}, ['"from"', "snapshots"]),
    ({"lookup": {"id": [1]}, "follow": True}, ['"follow"', "lookups"]),
    ({"lookup": {"id": [1], "tag": []}}, ["same number"]),
    ({"lookup": {"id": []}}, ["no keys"]),
    ({"lookup": []}, ['"lookup"']),
    ({"lookup": {"id": ["x"], "tag": ["a"]}}, ['"lookup"', "id"]),
    ({"lookup": {"id": [1]}}, ["'tag'", "null"]),
    ({"lookup": {"tag": ["a"]}, "prefix": True}, ["prefix of the primary key"]),
    ({"snapshot": True, "bucket": 9}, ["bucket 9"]),
    ({"snapshot": True, "columns": ["zzz"]}, ["'zzz'"]),
])
def test_bad_tickets_name_the_problem(server, table_name, ticket, words):
    create_pk_table(server, table_name, buckets=2, bucket_key=["tag"])
    code = "OUT_OF_RANGE" if "bucket" in ticket else "INVALID_ARGUMENT"
    with expect_error(code, *words):
        do_get(server, {"table": table_name, **ticket})


def test_changelog_compression(make_server, tmp_path):
    data = tmp_path / "compressed"
    server = make_server(data_dir=data)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    batch = pa.record_batch([pa.array(range(20_000), pa.int64()), pa.array(["abcdefgh" * 8] * 20_000)],
                            schema=schema)
    sizes = {}
    for codec in ("none", "lz4", "zstd"):
        desc = create_pk_table(server, f"c.{codec}", schema=schema, primary_key=["id"], buckets=1,
                               properties={"changelog.compression": codec})
        upsert(server, f"c.{codec}", batch)
        t, _ = do_get(server, {"table": f"c.{codec}", "bucket": 0})
        assert t.column("s").to_pylist() == batch.column(1).to_pylist()
        sizes[codec] = sum(f.stat().st_size for f in (data / "tables" / str(desc["table_id"]) / "0").glob("*.log"))
    assert sizes["lz4"] * 4 < sizes["none"] and sizes["zstd"] * 4 < sizes["none"], sizes
    with expect_error("INVALID_ARGUMENT", "'brotli'"):
        create_pk_table(server, "c.bad", schema=schema, primary_key=["id"],
                        properties={"changelog.compression": "brotli"})
    with expect_error("INVALID_ARGUMENT", "'changelog.size'"):
        create_pk_table(server, "c.bad", schema=schema, primary_key=["id"],
                        properties={"changelog.size": "1"})
