"""Buckets with and without a bucket_key, and concurrent writers."""

import collections
import threading

import pyarrow as pa
import pytest

from oxbowtest.batches import id_batch
from oxbowtest.flight import assert_tables_equal, put

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False),
                    pa.field("k", pa.string()),
                    pa.field("n", pa.int32())])


def batch(first_id, rows, key=lambda i: f"key-{i % 37}"):
    return id_batch(SCHEMA, first_id, rows, key, lambda i: i % 1000)


def read_bucket(server, table, bucket):
    table_, metas = server.get({"table": table, "bucket": bucket})
    return table_, metas


def check_offsets_contiguous(server, table, buckets):
    """Each bucket's messages tile [earliest, next_offset) with no gap and no overlap."""
    offsets = server.describe(table)["bucket_offsets"]
    for b in range(buckets):
        data, metas = read_bucket(server, table, b)
        expected_start = offsets[b]["earliest_offset"]
        for meta in metas:
            assert meta["bucket"] == b
            assert meta["base_offset"] == expected_start, f"bucket {b}: gap or overlap at {meta}"
            expected_start = meta["next_offset"]
        assert expected_start == offsets[b]["next_offset"]
        assert data.num_rows == offsets[b]["next_offset"] - offsets[b]["earliest_offset"]


@pytest.mark.parametrize("buckets", [2, 4, 7])
@pytest.mark.parametrize("key_column, key_fn", [
    ("k", lambda i: f"key-{i % 37}"),
    ("n", None),
    ("id", None),
], ids=["string-key", "int32-key", "int64-key"])
def test_bucket_key_routes_each_key_to_one_bucket(server, buckets, key_column, key_fn):
    server.create_table("ns.t", SCHEMA, buckets=buckets, bucket_key=[key_column])
    batches = [batch(300 * i, 300, key=key_fn or (lambda i: f"key-{i % 37}")) for i in range(4)]
    # Two streams, so the mapping must hold across streams too.
    acks = put(server.client, "ns.t", batches[:2]) + put(server.client, "ns.t", batches[2:])
    for b, ack in zip(batches, acks):
        assert sum(e["rows"] for e in ack["offsets"]) == b.num_rows
        assert len({e["bucket"] for e in ack["offsets"]}) == len(ack["offsets"])
    home = {}
    used = set()
    for bucket in range(buckets):
        data, _ = read_bucket(server, "ns.t", bucket)
        for key in data.column(key_column).to_pylist():
            assert home.setdefault(key, bucket) == bucket, f"key {key!r} is in two buckets"
        if data.num_rows:
            used.add(bucket)
    assert len(used) > 1, "hashing put every key into one bucket"
    everything = pa.concat_tables(read_bucket(server, "ns.t", b)[0] for b in range(buckets))
    assert_tables_equal(everything.sort_by("id"), pa.Table.from_batches(batches))
    check_offsets_contiguous(server, "ns.t", buckets)


def test_bucket_key_with_nulls_and_two_columns(server):
    server.create_table("ns.t", SCHEMA, buckets=4, bucket_key=["k", "n"])
    b = pa.record_batch([pa.array(range(200), pa.int64()),
                         pa.array([None if i % 5 == 0 else f"k{i % 7}" for i in range(200)]),
                         pa.array([None if i % 3 == 0 else i % 4 for i in range(200)], pa.int32())],
                        schema=SCHEMA)
    server.put("ns.t", [b, b.slice(10, 50)])
    home = {}
    for bucket in range(4):
        data, _ = read_bucket(server, "ns.t", bucket)
        for k, n in zip(data.column("k").to_pylist(), data.column("n").to_pylist()):
            assert home.setdefault((k, n), bucket) == bucket, f"key {(k, n)} is in two buckets"
    assert server.read_all("ns.t").num_rows == 250


def test_without_key_each_batch_lands_whole_in_one_bucket(server):
    server.create_table("ns.t", SCHEMA, buckets=3)
    batches = [batch(100 * i, 17 + i) for i in range(9)]
    acks = []
    for i in range(0, 9, 3):  # three streams of three batches
        acks += put(server.client, "ns.t", batches[i:i + 3])
    where = {}
    for b, ack in zip(batches, acks):
        (entry,) = ack["offsets"]
        assert entry["rows"] == b.num_rows
        where[entry["bucket"], entry["base_offset"]] = b
    for bucket in range(3):
        data, metas = read_bucket(server, "ns.t", bucket)
        offset = 0
        for meta in metas:
            stored = where.pop((bucket, meta["base_offset"]))
            rows = meta["next_offset"] - meta["base_offset"]
            chunk = data.slice(offset, rows)
            assert_tables_equal(chunk, pa.Table.from_batches([stored]))
            offset += rows
    assert not where, "acknowledged batches missing from the read"


def test_without_key_new_streams_round_robin(server):
    server.create_table("ns.t", SCHEMA, buckets=4)
    buckets = [put(server.client, "ns.t", [batch(10 * i, 10)])[0]["offsets"][0]["bucket"]
               for i in range(8)]
    assert sorted(buckets[:4]) == [0, 1, 2, 3], buckets
    assert buckets[4:] == buckets[:4], "round-robin repeats in the same order"
    # A stream sticks to its bucket for all its batches.
    acks = put(server.client, "ns.t", [batch(1000 + 10 * i, 10) for i in range(5)])
    assert len({a["offsets"][0]["bucket"] for a in acks}) == 1


@pytest.mark.parametrize("bucket_key", [[], ["k"]], ids=["no-key", "keyed"])
def test_concurrent_writers(server, bucket_key):
    threads_n, batches_n, rows = 4, 25, 40
    buckets = 3
    server.create_table("ns.t", SCHEMA, buckets=buckets, bucket_key=bucket_key)
    acks = collections.defaultdict(list)
    errors = []

    def writer(w):
        client = server.new_client()
        try:
            # Several streams per writer so round-robin and hashing both get exercised.
            for s in range(5):
                first = [w * 1_000_000 + (s * 5 + j) * rows for j in range(batches_n // 5)]
                bs = [batch(f, rows) for f in first]
                for b, ack in zip(bs, put(client, "ns.t", bs)):
                    acks[w].append((b, ack))
        except Exception as e:  # reported below, on the main thread
            errors.append(e)
        finally:
            client.close()

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    all_acks = [a for w in acks.values() for a in w]
    assert len(all_acks) == threads_n * batches_n

    # Offsets in acks: contiguous and non-overlapping per bucket.
    intervals = collections.defaultdict(list)
    for b, ack in all_acks:
        assert sum(e["rows"] for e in ack["offsets"]) == b.num_rows
        for e in ack["offsets"]:
            intervals[e["bucket"]].append((e["base_offset"], e["base_offset"] + e["rows"]))
    offsets = server.describe("ns.t")["bucket_offsets"]
    for bucket in range(buckets):
        spans = sorted(intervals[bucket])
        end = 0
        for start, stop in spans:
            assert start == end, f"bucket {bucket}: acks overlap or leave a gap at {start}"
            end = stop
        assert end == offsets[bucket]["next_offset"]

    # Every acked row readable exactly once.
    everything = server.read_all("ns.t")
    ids = everything.column("id").to_pylist()
    assert len(ids) == len(set(ids)), "a row was stored twice"
    expected = pa.Table.from_batches([b for b, _ in all_acks]).sort_by("id")
    assert_tables_equal(everything.sort_by("id"), expected)
    check_offsets_contiguous(server, "ns.t", buckets)
