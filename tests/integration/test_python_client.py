"""The Python client (python/oxbow, docs/python.md) against real oxbowd servers. Every result
is compared with raw pyarrow.flight reads of the same table (the reference), not only with
what the client itself wrote."""

from __future__ import annotations

import datetime
import json
import re
import subprocess
import sys
import threading
import time

import duckdb
import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.auth import users_dir
from oxbowtest.cluster import Cluster, wait_for
from oxbowtest.flight import assert_tables_equal, descriptor, put, put_one
from oxbowtest.server import REPO_ROOT, kill_while_writing

sys.path.insert(0, str(REPO_ROOT / "python"))
import oxbow  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string()),
                    pa.field("score", pa.float64())])
DOCS = REPO_ROOT / "docs" / "python.md"


def rows(first: int, count: int) -> pa.Table:
    ids = list(range(first, first + count))
    return pa.table({"id": ids, "name": [f"n{i}" for i in ids], "score": [i / 4 for i in ids]},
                    schema=SCHEMA)


class ArrowStream:
    """Stands in for a polars DataFrame: an object with the Arrow PyCapsule interface only."""

    def __init__(self, table: pa.Table):
        self._table = table

    def __arrow_c_stream__(self, requested_schema=None):
        return self._table.__arrow_c_stream__(requested_schema)


def raw_read(server, table: str, bucket: int, options=None, **ticket) -> tuple[pa.Table, list]:
    """One bucket through pyarrow.flight: the rows and each message's app_metadata."""
    return server.get({"table": table, "bucket": bucket, **ticket}, options=options)


def raw_buckets(server, table: str, buckets: int, **ticket) -> pa.Table:
    return pa.concat_tables([raw_read(server, table, b, **ticket)[0] for b in range(buckets)])


def raw_error(call) -> str:
    """The text of the pyarrow exception `call` raises."""
    with pytest.raises(pa.ArrowException) as raised:
        call()
    return str(raised.value)


def test_every_input_type_appends_and_reads_back(module_server, table_name):
    client = oxbow.connect(module_server.location)
    table = client.create_table(table_name, SCHEMA)
    # The PyCapsule stand-in holds polars' kind of data: string_view, another column order.
    capsule = pa.table({"score": rows(17, 3)["score"],
                        "name": rows(17, 3)["name"].cast(pa.string_view()),
                        "id": rows(17, 3)["id"]})
    relation = duckdb.sql("SELECT i AS id, 'n' || i AS name, i / 4 AS score "
                          "FROM range(20, 23) t(i)")
    inputs = [
        (pa.concat_tables([rows(0, 3), rows(3, 2)]), [rows(0, 3), rows(3, 2)]),
        (rows(5, 4).to_batches()[0], [rows(5, 4)]),
        (pa.RecordBatchReader.from_batches(SCHEMA, rows(9, 6).to_batches(max_chunksize=2)),
         [rows(9, 2), rows(11, 2), rows(13, 2)]),
        ({"id": [15, 16], "name": ["n15", "n16"], "score": [3.75, 4.0]}, [rows(15, 2)]),
        (ArrowStream(capsule), [rows(17, 3)]),
        (relation, [rows(20, 3)]),
    ]
    next_offset = 0
    for data, batches in inputs:
        acked = table.append(data)
        assert [(r.bucket, r.base_offset, r.rows) for r in acked] == [
            (0, next_offset + sum(b.num_rows for b in batches[:i]), b.num_rows)
            for i, b in enumerate(batches)]
        for ack, batch in zip(acked, batches):
            stored, metas = raw_read(module_server, table_name, 0, **{"from": ack.base_offset,
                                                                        "to": ack.next_offset})
            assert_tables_equal(stored, batch)
            assert (metas[0]["base_offset"], metas[-1]["next_offset"]) == (ack.base_offset,
                                                                          ack.next_offset)
        next_offset = acked[-1].next_offset
    read = table.read()
    assert_tables_equal(read, module_server.read_all(table_name))
    assert read.column("id").to_pylist() == list(range(23))
    assert read.column("name").to_pylist() == [f"n{i}" for i in range(23)]


def test_pandas_frames_append_without_their_index(module_server, table_name):
    pd = pytest.importorskip("pandas")
    table = oxbow.connect(module_server.location).create_table(table_name, SCHEMA)
    frame = pd.DataFrame({"name": ["a", None, "c"], "id": [1, 2, 3], "score": [0.5, 1.5, 2.5]},
                         index=[10, 11, 12])
    assert [r.rows for r in table.append(frame)] == [3]
    stored = module_server.read_all(table_name)
    assert stored.to_pylist() == [{"id": 1, "name": "a", "score": 0.5},
                                  {"id": 2, "name": None, "score": 1.5},
                                  {"id": 3, "name": "c", "score": 2.5}]
    assert_tables_equal(table.read(), stored)


def test_polars_frames_append_through_the_arrow_stream(module_server, table_name):
    pl = pytest.importorskip("polars")
    table = oxbow.connect(module_server.location).create_table(table_name, SCHEMA)
    frame = pl.DataFrame({"id": [1, 2], "name": ["a", None], "score": [0.5, None]})
    assert [r.rows for r in table.append(frame)] == [2]
    stored = module_server.read_all(table_name)
    assert stored.to_pylist() == [{"id": 1, "name": "a", "score": 0.5},
                                  {"id": 2, "name": None, "score": None}]
    assert_tables_equal(table.read(), stored)


def test_reads_project_and_range_like_raw_tickets(module_server, table_name):
    client = oxbow.connect(module_server.location)
    table = client.create_table(table_name, SCHEMA, buckets=3, bucket_key=["id"])
    acked = []
    for first in range(0, 60, 10):
        acked += table.append(rows(first, 10))
        time.sleep(0.002)  # each append its own append_time_ms
    assert sum(r.rows for r in acked) == 60 and {r.bucket for r in acked} == {0, 1, 2}
    whole = raw_buckets(module_server, table_name, 3)
    assert_tables_equal(table.read(), whole)
    assert sorted(whole.column("id").to_pylist()) == list(range(60))
    assert_tables_equal(table.read(columns=["name", "id"]),
                        raw_buckets(module_server, table_name, 3, columns=["name", "id"]))
    assert_tables_equal(table.reader(columns=["score"]).read_all(),
                        raw_buckets(module_server, table_name, 3, columns=["score"]))
    # align_buffers: each value buffer at a multiple of its type's width, values unchanged.
    aligned = oxbow.connect(module_server.location, align_buffers=True).table(table_name).read()
    assert_tables_equal(aligned, whole)
    assert all(chunk.buffers()[1].address % 8 == 0
               for name in ("id", "score") for chunk in aligned.column(name).chunks)
    # Per-bucket starts and ends, some buckets only.
    ranged = table.read(start={0: 2}, end={1: 3}, buckets=[0, 1])
    assert_tables_equal(ranged, pa.concat_tables([
        raw_read(module_server, table_name, 0, **{"from": 2})[0],
        raw_read(module_server, table_name, 1, to=3)[0]]))
    # A start time: the batches appended at or after it.
    _, metas = raw_read(module_server, table_name, 2)
    middle = metas[len(metas) // 2]["append_time_ms"]
    since = datetime.datetime.fromtimestamp(middle / 1000, datetime.timezone.utc)
    later = table.read(start=since, buckets=[2])
    assert_tables_equal(later, raw_read(module_server, table_name, 2,
                                        **{"from": {"timestamp_ms": middle}})[0])
    assert 0 < later.num_rows < whole.num_rows
    assert table.read(start="latest").num_rows == 0
    # A union read with a filter and a limit.
    union = table.read(union=True, columns=["id"], filter=[("id", ">=", 25)])
    raw_union, _ = module_server.get({"table": table_name, "union": True, "columns": ["id"],
                                      "filter": [{"column": "id", "op": ">=", "value": 25}]})
    assert sorted(union.column("id").to_pylist()) == sorted(
        raw_union.column("id").to_pylist()) == list(range(25, 60))
    assert table.read(union=True, limit=7).num_rows == 7
    with pytest.raises(ValueError, match="no bucket 7"):
        table.read(buckets=[7])
    with pytest.raises(ValueError, match="union reads only"):
        table.read(limit=3)
    with pytest.raises(ValueError, match="time zone"):
        table.read(start=datetime.datetime(2026, 1, 1))


def test_primary_key_writes_lookups_and_snapshots(module_server, table_name):
    schema = pa.schema([pa.field("sku", pa.string(), nullable=False),
                        pa.field("store", pa.int32(), nullable=False),
                        pa.field("qty", pa.int64()), pa.field("note", pa.string())])
    client = oxbow.connect(module_server.location)
    table = client.create_table(table_name, schema, primary_key=["sku", "store"], buckets=2,
                                bucket_key=["sku"])
    inserted = table.upsert(pa.table({"sku": ["a1", "b7", "c3", "a1"], "store": [3, 3, 5, 4],
                                      "qty": [10, 4, 7, 1], "note": ["x", "y", "z", "w"]},
                                     schema=schema))
    updated = table.upsert({"sku": ["a1"], "store": [3], "qty": [99]})  # partial: note stays
    deleted = table.delete({"store": [5], "sku": ["c3"]})

    def change_types(acked) -> list[str]:
        types = []
        for r in acked:
            changes, _ = raw_read(module_server, table_name, r.bucket, **{
                "from": r.base_offset, "to": r.next_offset})
            types += changes.column("_change_type").to_pylist()
        return types

    assert change_types(inserted) == ["+I"] * 4
    assert change_types(updated) == ["-U", "+U"]
    assert change_types(deleted) == ["-D"]
    # The changelog, with _change_type, as the raw reads give it.
    assert_tables_equal(table.read(), raw_buckets(module_server, table_name, 2))
    # Lookups: python ints become the key's int32; found rows in the order of the keys.
    keys = {"sku": ["b7", "zz", "a1", "c3"], "store": [3, 1, 3, 5]}
    found = table.lookup(keys, columns=["sku", "qty", "note"])
    raw_found = module_server.client.do_get(fl.Ticket(json.dumps(
        {"table": table_name, "lookup": keys, "columns": ["sku", "qty", "note"]}).encode())
    ).read_all()
    assert found.to_pylist() == raw_found.to_pylist() == [
        {"sku": "b7", "qty": 4, "note": "y"}, {"sku": "a1", "qty": 99, "note": "x"}]
    prefix = table.lookup(pa.table({"sku": ["a1"]}), columns=["store", "qty"], prefix=True)
    raw_prefix = module_server.client.do_get(fl.Ticket(json.dumps(
        {"table": table_name, "lookup": {"sku": ["a1"]}, "prefix": True,
         "columns": ["store", "qty"]}).encode())).read_all()
    assert prefix.to_pylist() == raw_prefix.to_pylist() == [{"store": 3, "qty": 99},
                                                            {"store": 4, "qty": 1}]
    # A snapshot, then the changelog from its offsets: each later change once.
    snapshot = table.snapshot()
    reader = module_server.client.do_get(fl.Ticket(json.dumps(
        {"table": table_name, "snapshot": True}).encode()))
    first = reader.read_chunk()
    raw_snapshot = pa.Table.from_batches([first.data, *reader.read_all().to_batches()])
    assert_tables_equal(snapshot.data, raw_snapshot)
    raw_offsets = json.loads(first.app_metadata.to_pybytes())["offsets"]
    assert snapshot.offsets == {o["bucket"]: o["next_offset"] for o in raw_offsets}
    assert sorted(snapshot.data.column("sku").to_pylist()) == ["a1", "a1", "b7"]
    later = table.upsert({"sku": ["b7", "d2"], "store": [3, 8], "qty": [5, 6]})
    ends = {r.bucket: r.next_offset for r in later}
    received: dict[int, list] = {0: [], 1: []}
    with table.follow(from_=snapshot.offsets) as changes:
        while any(changes.positions.get(b, snapshot.offsets[b]) < end for b, end in ends.items()):
            batch = changes.poll(timeout=10)
            assert batch is not None, f"follow stopped at {changes.positions}, wanted {ends}"
            received[batch.bucket] += batch.data.to_pylist()
    for bucket in (0, 1):
        expected, _ = raw_read(module_server, table_name, bucket,
                               **{"from": snapshot.offsets[bucket]})
        assert received[bucket] == expected.to_pylist()
    assert sorted(r["_change_type"] for b in received.values() for r in b) == ["+I", "+U", "-U"]


def test_follow_survives_sigkills_with_every_row_once(make_server, table_name):
    server = make_server()
    server.stable_ports = True  # restarted on the same address, as a real server is
    table = oxbow.connect(server.location).create_table(table_name, SCHEMA, buckets=2,
                                                        bucket_key=["id"])
    table.append(rows(0, 50))
    seen: list[oxbow.Batch] = []
    done = threading.Event()
    follow = table.follow(columns=["id"])

    def collect():
        while not done.is_set():
            batch = follow.poll(timeout=0.2)
            if batch is not None:
                seen.append(batch)

    collector = threading.Thread(target=collect, daemon=True)
    collector.start()
    next_id = iter(range(1000, 10**9, 20))

    def writer(stop: threading.Event) -> None:
        client = None
        while not stop.is_set():
            try:
                client = client or fl.connect(server.location)
                put_one(client, descriptor(table_name), rows(next(next_id), 20).to_batches()[0])
            except (pa.ArrowException, ConnectionError):
                client = None
                time.sleep(0.05)
            time.sleep(0.01)

    for _ in range(2):
        kill_while_writing(server, [writer], delay=0.7)
    table.append(rows(500, 10))  # after the last restart
    ends = {o["bucket"]: o["next_offset"] for o in server.describe(table_name)["bucket_offsets"]}
    wait_for(lambda: all(follow.positions.get(b) == end for b, end in ends.items()), 30,
             what=f"the follow to reach {ends}")
    done.set()
    collector.join(10)
    follow.close()
    for bucket in (0, 1):
        got = [(b.base_offset + k, i) for b in seen if b.bucket == bucket
               for k, i in enumerate(b.data.column("id").to_pylist())]
        stored, metas = raw_read(server, table_name, bucket, columns=["id"])
        expected = [(m["base_offset"] + k, i) for m, batch in zip(metas, stored.to_batches())
                    for k, i in enumerate(batch.column("id").to_pylist())]
        assert got == expected, f"bucket {bucket}: the follow differs from the log"
        assert [o for o, _ in got] == list(range(ends[bucket]))
    ids = {i for b in seen for i in b.data.column("id").to_pylist()}
    assert set(range(500, 510)) <= ids and len(ids) > 60, "nothing came after the restarts"


def test_a_client_dropped_by_one_thread_still_serves_calls_already_on_it(module_server,
                                                                         table_name):
    # A follow reads each bucket on its own thread over one client per server. When one
    # thread's call fails UNAVAILABLE (its server restarted) it drops that client; a call
    # another thread is making on it must not fail with "FlightClient is closed" (CI saw a
    # follow end so).
    db = oxbow.connect(module_server.location)
    table = db.create_table(table_name, SCHEMA)
    table.append(rows(0, 5))
    connections = db._connections

    def dropped_then_used(client, options):
        connections.drop(module_server.location, client)  # as the other thread would
        return list(client.list_actions(options))

    assert connections.call(dropped_then_used)
    assert table.read().num_rows == 5  # a new client, connected anew
    assert connections.get(module_server.location) is not None


def test_follow_reopens_after_an_alter_and_raises_what_retries_cannot_cure(make_server,
                                                                          table_name):
    server = make_server()
    client = oxbow.connect(server.location, retry_for=1.0)
    table = client.create_table(table_name, SCHEMA)
    table.append(rows(0, 2))
    with table.follow() as tail:
        assert tail.poll(timeout=10).data.column("id").to_pylist() == [0, 1]
        # The alter ends the server's stream; the follow opens it again at offset 2.
        table.alter({"op": "add_column", "name": "note", "type": pa.string()})
        table.append({"id": [2], "name": ["n2"], "score": [0.5], "note": ["new"]})
        batch = tail.poll(timeout=10)
        assert (batch.base_offset, batch.next_offset) == (2, 3)
        assert batch.data.to_pylist() == raw_read(server, table_name, 0, **{"from": 2})[0] \
            .to_pylist() == [{"id": 2, "name": "n2", "score": 0.5, "note": "new"}]
        client.drop_table(table_name)
        with pytest.raises(oxbow.TableNotFound):
            tail.poll(timeout=10)
    other = client.create_table(table_name, SCHEMA)
    with other.follow() as tail:
        server.kill()  # and not started again: after retry_for the follow gives up
        started = time.monotonic()
        with pytest.raises(oxbow.Unavailable):
            tail.poll(timeout=30)
        assert time.monotonic() - started < 10


def test_logins_and_a_login_again_after_a_restart(make_server, tmp_path, table_name):
    data = users_dir(tmp_path / "secured", {"root": "*=admin", "reader": "it.*=read"})
    server = make_server(data_dir=data, extra_args=("--auth",))
    server.stable_ports = True
    with pytest.raises(oxbow.Unauthenticated) as wrong:
        oxbow.connect(server.location, "root", "not the password")
    assert wrong.value.message in raw_error(
        lambda: server.new_client().authenticate_basic_token("root", "not the password"))
    with pytest.raises(oxbow.Unauthenticated, match="requires authentication"):
        oxbow.connect(server.location).list_tables()
    root = oxbow.connect(server.location, "root", "pw-root-123")
    table = root.create_table(table_name, SCHEMA)
    table.append(rows(0, 5))
    reader = oxbow.connect(server.location, "reader", "pw-reader-123").table(table_name)
    with pytest.raises(oxbow.PermissionDenied, match="'reader'") as denied:
        reader.append(rows(5, 1))
    assert denied.value.code == "PERMISSION_DENIED"
    raw = server.new_client()
    options = fl.FlightCallOptions(headers=[raw.authenticate_basic_token("root", "pw-root-123")])
    assert_tables_equal(reader.read(), raw_read(server, table_name, 0, options=options)[0])
    server.stop()
    server.start()  # every token is gone: each client logs in again
    table.append(rows(5, 5))
    assert reader.read().column("id").to_pylist() == list(range(10))
    with root.table(table_name).follow(columns=["id"]) as tail:
        assert tail.poll(timeout=10).data.column("id").to_pylist() == list(range(5))


def test_tls_and_mutual_tls(make_server, pki, table_name):
    tls = ("--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "server.key"))
    server = make_server(extra_args=(*tls, "--tls-client-ca", str(pki / "ca.pem")),
                         client_args={"tls_root_certs": (pki / "ca.pem").read_bytes(),
                                      "cert_chain": (pki / "client.pem").read_bytes(),
                                      "private_key": (pki / "client.key").read_bytes()})
    assert server.location.startswith("grpc+tls://")
    # Certificates as file paths, and as bytes.
    client = oxbow.connect(server.location, tls_root_certs=pki / "ca.pem",
                           cert_chain=(pki / "client.pem").read_bytes(),
                           private_key=str(pki / "client.key"))
    table = client.create_table(table_name, SCHEMA)
    table.append(rows(0, 4))
    assert_tables_equal(table.read(), server.read_all(table_name))
    assert table.read().column("id").to_pylist() == [0, 1, 2, 3]
    without_certificate = oxbow.connect(server.location, tls_root_certs=pki / "ca.pem",
                                        retry_for=0.2)
    with pytest.raises(oxbow.Unavailable):
        without_certificate.list_tables()


def test_errors_are_typed_and_carry_the_servers_message(module_server, table_name):
    client = oxbow.connect(module_server.location)
    raw = module_server.client

    def same(raised: oxbow.OxbowError, raw_call) -> None:
        assert raised.message and raised.message in raw_error(raw_call)
        assert isinstance(raised, oxbow.OxbowError) and str(raised) == raised.message

    missing = table_name + "_missing"
    with pytest.raises(oxbow.TableNotFound) as e:
        client.table(missing).read()
    assert (e.value.code, e.value.message) == ("NOT_FOUND", f"table '{missing}' does not exist")
    same(e.value, lambda: raw.do_get(fl.Ticket(json.dumps({"table": missing}).encode())).read_all())
    with pytest.raises(oxbow.TableNotFound):
        client.table(missing).describe()

    lake_schema = pa.schema([pa.field("u", pa.uint64())])
    with pytest.raises(oxbow.InvalidArgument, match="'u'") as e:
        client.create_table(table_name, lake_schema)
    same(e.value, lambda: module_server.create_table(table_name, lake_schema))

    table = client.create_table(table_name, SCHEMA)
    with pytest.raises(oxbow.AlreadyExists) as e:
        client.create_table(table_name, SCHEMA)
    same(e.value, lambda: module_server.create_table(table_name, SCHEMA))
    assert client.create_table(table_name, SCHEMA, if_not_exists=True).name == table_name

    bogus = pa.table({"id": [1], "bogus": [2], "score": [0.5]})
    with pytest.raises(oxbow.InvalidArgument, match="'bogus'") as e:
        table.append(bogus)
    same(e.value, lambda: put(raw, table_name, bogus.to_batches()))
    with pytest.raises(oxbow.InvalidArgument, match="not nullable") as e:
        table.append({"id": [1, None], "name": ["a", "b"], "score": [1.0, 2.0]})
    narrow = client.create_table(table_name + "_narrow", pa.schema([pa.field("x", pa.int32())]))
    with pytest.raises(oxbow.InvalidArgument, match="column 'x' of type int64") as e:
        narrow.append({"x": [1, 2**40]})
    assert e.value.code == "INVALID_ARGUMENT"
    assert module_server.read_all(table_name).num_rows == 0
    assert module_server.read_all(table_name + "_narrow").num_rows == 0

    with pytest.raises(oxbow.OutOfRange) as e:
        table.read(start=10**6)
    same(e.value, lambda: raw.do_get(fl.Ticket(json.dumps(
        {"table": table_name, "from": 10**6}).encode())).read_all())
    with pytest.raises(oxbow.PermissionDenied, match="__oxbow"):
        client.create_table("__oxbow.mine", SCHEMA)
    with pytest.raises(oxbow.Unimplemented, match="unknown action 'nope'"):
        client.action("nope")
    with pytest.raises(oxbow.Unavailable):
        oxbow.connect("grpc://127.0.0.1:1", retry_for=0.2).list_tables()
    with pytest.raises(TypeError, match="cannot write a builtins.int"):
        table.append(42)


def test_alter_describe_and_writers_of_an_earlier_version(module_server, table_name):
    client = oxbow.connect(module_server.location)
    table = client.create_table(table_name, SCHEMA)
    table.append(rows(0, 2))
    described = table.alter({"op": "add_column", "name": "note", "type": pa.string()})
    assert described["schema_id"] == table.describe()["schema_id"] == 1
    assert table.schema.names == ["id", "name", "score", "note"]
    table.append(rows(2, 2))  # schema version 0, as it was
    table.append({"id": [4], "name": ["n4"], "score": [1.0], "note": ["new"]})
    read = table.read()
    assert_tables_equal(read, module_server.read_all(table_name))
    assert read.column("note").to_pylist() == [None] * 4 + ["new"]


def python_blocks() -> list[tuple[str, str | None]]:
    """docs/python.md's ```python blocks, each with the ```text block right after it (its
    output) or None."""
    blocks = re.findall(r"```(\w+)\n(.*?)```", DOCS.read_text(), re.DOTALL)
    return [(code, blocks[i + 1][1] if i + 1 < len(blocks) and blocks[i + 1][0] == "text"
             else None) for i, (lang, code) in enumerate(blocks) if lang == "python"]


def run_python(code: str, timeout: float = 120) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, env={"PYTHONPATH": str(REPO_ROOT / "python")})
    assert done.returncode == 0, f"exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done.stdout


def test_the_quickstart_runs_verbatim(module_server):
    code, output = python_blocks()[0]
    assert 'oxbow.connect("grpc://127.0.0.1:8815")' in code
    printed = run_python(code.replace("grpc://127.0.0.1:8815", module_server.location))
    assert printed == output
    stored = module_server.read_all("shop.orders")
    assert stored.to_pylist() == [{"id": 1, "item": "tea"}, {"id": 2, "item": "jam"},
                                  {"id": 3, "item": "oats"}]


def test_every_docs_example_runs_in_order(make_server):
    server = make_server()
    marker = "=== block "
    blocks = python_blocks()
    program = "\n".join(
        f"print({marker + str(i)!r})\n{code}" for i, (code, _) in enumerate(blocks))
    printed = run_python(program.replace("grpc://127.0.0.1:8815", server.location))
    outputs = re.split(rf"^{marker}\d+\n", printed, flags=re.MULTILINE)[1:]
    assert len(outputs) == len(blocks)
    for i, ((code, expected), got) in enumerate(zip(blocks, outputs)):
        if expected is not None:
            assert got == expected, f"docs/python.md block {i} printed:\n{got}\n{code}"


def test_a_cluster_reads_from_leaders_and_follows_across_a_failover(oxbowd_bin, zookeeper,
                                                                     tmp_path, table_name):
    cluster = Cluster(oxbowd_bin, zookeeper.chroot("python-client"), tmp_path).start()
    try:
        # A client that knows a follower only: its put answered not_leader goes to the leader.
        single = table_name + "_single"
        cluster.create_table(single, buckets=1)
        leader = cluster.leader_of(single)
        follower = next(i for i in cluster.servers if i != leader)
        via_follower = oxbow.connect(cluster.servers[follower].location).table(single)
        acked = via_follower.append({"id": [1, 2], "writer": ["f", "f"]})
        assert [(r.bucket, r.rows) for r in acked] == [(0, 2)]
        assert via_follower.read().column("id").to_pylist() == [
            i for _, i in cluster.read_bucket(single, 0)] == [1, 2]

        cluster.create_table(table_name, buckets=3)
        victim = cluster.leader_of(table_name, 0)  # killed below; the client tries it first
        order = [victim, *(i for i in cluster.servers if i != victim)]
        client = oxbow.connect([cluster.servers[i].location for i in order], retry_for=60)
        table = client.table(table_name)
        # Appends on any server land in a bucket it leads; reads go to each bucket's leader.
        for i in range(6):
            table.append({"id": [i * 10 + k for k in range(10)], "writer": [f"w{i}"] * 10})
        expected = {b: [i for _, i in cluster.read_bucket(table_name, b)] for b in range(3)}
        assert sum(len(ids) for ids in expected.values()) == 60
        assert table.read().column("id").to_pylist() == [i for b in range(3) for i in expected[b]]
        # A follow goes on from the next offset on the bucket's new leader.
        follow = table.follow(columns=["id"])
        cluster.kill(victim)
        wait_for(lambda: cluster.leader_of(table_name, 0) != victim, 60, what="a new leader")
        # The new leader of bucket 0 puts in each bucket it leads in turn: bucket 0 too. The
        # client of every server skips the one that is down (and was its first).
        survivor = oxbow.connect(cluster.servers[cluster.leader_of(table_name, 0)].location)
        for i in range(6, 12):
            writer = survivor if i < 9 else client
            writer.table(table_name).append(
                {"id": [i * 10 + k for k in range(10)], "writer": [f"w{i}"] * 10})
        cluster.restart(victim)
        final = {b: [i for _, i in cluster.read_bucket(table_name, b)] for b in range(3)}
        got: dict[int, list[int]] = {b: [] for b in range(3)}
        deadline = time.monotonic() + 60
        while any(len(got[b]) < len(final[b]) for b in range(3)) and time.monotonic() < deadline:
            batch = follow.poll(timeout=1)
            if batch is not None:
                got[batch.bucket] += batch.data.column("id").to_pylist()
        follow.close()
        assert got == final
        assert len(got[0]) > len(expected[0]), "bucket 0 got no rows after the failover"
        assert sorted(i for ids in got.values() for i in ids) == list(range(120))
    finally:
        cluster.stop()


def test_schema_json_is_what_create_table_takes(module_server, table_name):
    """Types, nullability and docs reach create_table as a raw client's JSON does."""
    schema = pa.schema([pa.field("t", pa.timestamp("us", tz="UTC")),
                        pa.field("d", pa.decimal128(10, 2), nullable=False),
                        pa.field("l", pa.list_(pa.int32()), metadata={"doc": "a list"})])
    oxbow.connect(module_server.location).create_table(table_name, schema)
    module_server.create_table(table_name + "_raw", schema)
    described = [module_server.describe(n)["schema"] for n in (table_name, table_name + "_raw")]
    assert described[0] == described[1]
    assert oxbow.connect(module_server.location).table(table_name).schema.equals(
        module_server.client.get_schema(descriptor(table_name)).schema, check_metadata=True)


def test_api_md_names_the_clients_calls_as_they_are():
    """docs/api.md's table of Python client calls: each `Client.x(...)`, `Table.x(...)` and
    `oxbow.x(...)` exists, with the keyword parameters it names."""
    import inspect

    from oxbow.table import Table

    text = (REPO_ROOT / "docs" / "api.md").read_text()
    table = text[text.index("| this page | the Python client"):text.index("`test_api_md_names")]
    owners = {"Client": oxbow.Client, "Table": Table, "oxbow": oxbow}
    calls = re.findall(r"`(Client|Table|oxbow)\.(\w+)\(([^`]*)\)`", table)
    assert len(calls) >= 15, calls
    for owner, name, args in calls:
        target = getattr(owners[owner], name, None)
        assert callable(target), f"{owner}.{name} does not exist"
        parameters = inspect.signature(target).parameters
        for keyword in re.findall(r"(\w+)=", args):
            assert keyword in parameters, f"{owner}.{name} has no parameter {keyword}"
    for exception in re.findall(r"`oxbow\.(\w+)`", table):
        assert issubclass(getattr(oxbow, exception), Exception), exception

