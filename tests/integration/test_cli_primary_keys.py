"""The `oxbow` CLI on primary-key tables against a real oxbowd: table create's primary-key flags,
produce as upsert (and partial update), delete, lookup, snapshot and consume --changelog, each
checked against what pyarrow.flight reads from the same server, and bad flags refused by name."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from oxbowtest.primary_keys import do_get as flight_get

SCHEMA_TEXT = "id int32 not null, tag string not null, v int64, s string, ver int64"
SCHEMA = pa.schema([
    pa.field("id", pa.int32(), nullable=False),
    pa.field("tag", pa.string(), nullable=False),
    pa.field("v", pa.int64()),
    pa.field("s", pa.string()),
    pa.field("ver", pa.int64()),
])


def cli(oxbow, server, *args, input: bytes | None = None):
    return oxbow.ok(*args, "--server", f"127.0.0.1:{server.port}", input=input)


def cli_fails(oxbow, server, *args, code: int = 1, input: bytes | None = None) -> str:
    return oxbow.fails(*args, "--server", f"127.0.0.1:{server.port}", code=code, input=input)


def jsonl(proc) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.decode().splitlines() if line]


def rows_jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def changelog(server, table: str) -> list[dict]:
    buckets = server.describe(table)["buckets"]
    rows = []
    for b in range(buckets):
        rows.extend(flight_get(server, {"table": table, "bucket": b})[0].to_pylist())
    return rows


def create(oxbow, server, table, *flags):
    return cli(oxbow, server, "table", "create", table, "--schema", SCHEMA_TEXT,
               "--primary-key", "id,tag", *flags)


ROWS = [{"id": i, "tag": t, "v": i * 10, "s": f"s{i}{t}", "ver": 1}
        for i in range(6) for t in ("a", "b,c")]


@pytest.fixture
def filled(oxbow, server, table_name):
    """A last_row table over 3 buckets holding ROWS, written by `oxbow produce`."""
    create(oxbow, server, table_name, "--buckets", "3", "--bucket-key", "id")
    cli(oxbow, server, "produce", table_name, "-", "--format", "jsonl", input=rows_jsonl(ROWS))
    return table_name


# --- table create -----------------------------------------------------------------------------


def test_create_flags_become_the_create_table_body(oxbow, server, table_name):
    out = create(oxbow, server, table_name, "--buckets", "2", "--bucket-key", "id",
                 "--merge-engine", "aggregate", "--agg", "v=sum", "--agg", "s=listagg",
                 "--property", "fields.s.listagg_delimiter=;", "--changelog-image", "none")
    assert out.stdout.decode() == f"created {table_name} (2 buckets, primary key id,tag)\n"
    d = server.describe(table_name)
    assert d["primary_key"] == ["id", "tag"] and d["bucket_key"] == ["id"]
    assert d["properties"] == {"merge_engine": "aggregate", "fields.v.agg": "sum",
                               "fields.s.agg": "listagg", "fields.s.listagg_delimiter": ";",
                               "changelog.image": "none"}
    text = cli(oxbow, server, "table", "describe", table_name).stdout.decode()
    assert "primary key: id tag\n" in text
    # The aggregate engine really runs with those functions: sum and listagg with ';'.
    for v, s in ((1, "x"), (2, "y")):
        cli(oxbow, server, "produce", table_name, "-", "--format", "jsonl",
            input=rows_jsonl([{"id": 1, "tag": "a", "v": v, "s": s}]))
    snap, _ = flight_get(server, {"table": table_name, "snapshot": True, "columns": ["v", "s"]})
    assert snap.to_pylist() == [{"v": 3, "s": "x;y"}]


def test_versioned_merge_engine_ignores_lower_versions(oxbow, server, table_name):
    create(oxbow, server, table_name, "--merge-engine", "versioned", "--version-column", "ver")
    assert server.describe(table_name)["properties"] == {
        "merge_engine": "versioned", "merge_engine.version_column": "ver"}
    for v, ver in ((1, 5), (2, 3), (3, 7)):
        cli(oxbow, server, "produce", table_name, "-", "--format", "jsonl",
            input=rows_jsonl([{"id": 1, "tag": "a", "v": v, "ver": ver}]))
    snap, _ = flight_get(server, {"table": table_name, "snapshot": True, "columns": ["v", "ver"]})
    assert snap.to_pylist() == [{"v": 3, "ver": 7}]


@pytest.mark.parametrize("flags, code, words", [
    (["--merge-engine", "first_row"], 1, ["--merge-engine needs --primary-key"]),
    (["--primary-key", "id,tag", "--version-column", "ver"], 1,
     ["--version-column needs --merge-engine versioned"]),
    (["--primary-key", "id,tag", "--agg", "v=sum"], 1, ["--agg needs --merge-engine aggregate"]),
    (["--primary-key", "id,tag", "--merge-engine", "aggregate", "--agg", "v"], 1,
     ["--agg 'v' must be column=function"]),
    (["--primary-key", "id,tag", "--merge-engine", "first_row", "--property",
      "merge_engine=last_row"], 1, ["--merge-engine and --property merge_engine"]),
    (["--primary-key", "id,tag", "--merge-engine", "newest"], 2, ["--merge-engine", "newest"]),
    (["--primary-key", "id,tag", "--changelog-image", "half"], 2, ["--changelog-image", "half"]),
    # Checked by the server, named in its INVALID_ARGUMENT.
    (["--primary-key", "id,nope"], 1, ["'nope'"]),
    (["--primary-key", "id,v"], 1, ["'v'", "null"]),
    (["--primary-key", "id,tag", "--merge-engine", "aggregate", "--agg", "s=sum"], 1, ["'s'", "sum"]),
])
def test_bad_create_flags_are_named(oxbow, server, table_name, flags, code, words):
    err = cli_fails(oxbow, server, "table", "create", table_name, "--schema", SCHEMA_TEXT, *flags,
                    code=code)
    for w in words:
        assert w in err, err
    assert table_name not in [t["table"] for t in server.action("list_tables")["tables"]]


# --- produce, consume --changelog ---------------------------------------------------------------


def test_produce_upserts_and_partial_updates(oxbow, server, filled):
    out = cli(oxbow, server, "produce", filled, "-", "--format", "jsonl",
              input=rows_jsonl([{"id": 0, "tag": "a", "v": -1, "s": "new", "ver": 2}]))
    assert out.stderr.decode() == f"upserted 1 rows to {filled} (2 changelog records)\n"
    # A CSV partial update: only v changes, s and ver keep their values.
    cli(oxbow, server, "produce", filled, "-", "--format", "csv", "--columns", "id,tag,v",
        input=b'id,tag,v\n1,"b,c",99\n')
    snap, _ = flight_get(server, {"table": filled, "snapshot": True})
    got = {(r["id"], r["tag"]): r for r in snap.to_pylist()}
    want = {(r["id"], r["tag"]): dict(r) for r in ROWS}
    want[(0, "a")].update(v=-1, s="new", ver=2)
    want[(1, "b,c")].update(v=99)
    assert got == want


def test_consume_changelog_puts_the_change_type_first(oxbow, server, filled):
    cli(oxbow, server, "produce", filled, "-", "--format", "jsonl",
        input=rows_jsonl([{"id": 2, "tag": "a", "v": 7}]))
    records = changelog(server, filled)
    out = jsonl(cli(oxbow, server, "consume", filled, "--changelog", "--format", "jsonl"))
    key = lambda r: (r["id"], r["tag"], r["_change_type"], r["v"] or 0)
    assert sorted(out, key=key) == sorted(records, key=key)
    assert all(list(r)[0] == "_change_type" for r in out)
    assert sorted(r["_change_type"] for r in out if r["id"] == 2 and r["tag"] == "a") == \
        ["+I", "+U", "-U"]
    # --columns picks the rest; the change type stays first.
    out = jsonl(cli(oxbow, server, "consume", filled, "--changelog", "--format", "jsonl",
                    "--columns", "v,id", "--bucket", "0"))
    want = flight_get(server, {"table": filled, "bucket": 0,
                               "columns": ["_change_type", "v", "id"]})[0].to_pylist()
    assert out == want and out and list(out[0]) == ["_change_type", "v", "id"]


def test_consume_changelog_of_a_log_table_is_refused(oxbow, server, table_name):
    cli(oxbow, server, "table", "create", table_name, "--schema", "id int64")
    err = cli_fails(oxbow, server, "consume", table_name, "--changelog")
    assert f"--changelog: {table_name} is a log table" in err


# --- lookup -------------------------------------------------------------------------------------


def flight_lookup(server, table, keys: dict, **extra) -> list[dict]:
    return flight_get(server, {"table": table, "lookup": keys, **extra})[0].to_pylist()


def test_lookup_keys_from_flags(oxbow, server, filled):
    out = jsonl(cli(oxbow, server, "lookup", filled, "--key", "id=3,tag=a", "--key",
                    "tag=b,c,id=5", "--key", "id=9,tag=a", "--format", "jsonl"))
    assert out == flight_lookup(server, filled, {"id": [3, 5, 9], "tag": ["a", "b,c", "a"]})
    assert [(r["id"], r["tag"]) for r in out] == [(3, "a"), (5, "b,c")]
    out = jsonl(cli(oxbow, server, "lookup", filled, "--key", "id=4,tag=a", "--columns", "s,v",
                    "--format", "jsonl"))
    assert out == [{"s": "s4a", "v": 40}]
    table = cli(oxbow, server, "lookup", filled, "--key", "id=4,tag=a", "--columns", "id,s")
    assert table.stdout.decode().splitlines()[2].split() == ["4", "s4a"]


def test_lookup_keys_from_files(oxbow, server, filled, tmp_path):
    keys = [{"id": 1, "tag": "b,c"}, {"id": 0, "tag": "zz"}, {"id": 4, "tag": "a"}]
    want = flight_lookup(server, filled, {"id": [k["id"] for k in keys],
                                          "tag": [k["tag"] for k in keys]})
    assert len(want) == 2
    (tmp_path / "keys.jsonl").write_bytes(rows_jsonl(keys))
    (tmp_path / "keys.csv").write_text("tag,id\n\"b,c\",1\nzz,0\na,4\n")
    # Arrow keys: any column order, extra columns, and a narrower int8 id cast up to int32 (a
    # wider int64 one is cast down too while its values fit: test_bad_lookups_are_named).
    key_table = pa.Table.from_pylist([{**k, "extra": 1} for k in keys]).select(["extra", "tag", "id"])
    key_table = key_table.set_column(2, "id", key_table.column("id").cast(pa.int8()))
    with pa.ipc.new_file(tmp_path / "keys.arrow", key_table.schema) as w:
        w.write_table(key_table)
    for name in ("keys.jsonl", "keys.csv", "keys.arrow"):
        out = jsonl(cli(oxbow, server, "lookup", filled, "--input", tmp_path / name,
                        "--format", "jsonl"))
        assert out == want, name
    # Many batches of keys through one exchange: every key of the table, twice.
    every = rows_jsonl([{"id": r["id"], "tag": r["tag"]} for r in ROWS] * 2)
    out = cli(oxbow, server, "lookup", filled, "--input", "-", "--input-format", "jsonl",
              "--format", "csv", "--columns", "id", input=every)
    assert out.stdout.decode().splitlines()[1:] == [str(r["id"]) for r in ROWS] * 2


def test_prefix_lookup(oxbow, server, filled):
    out = jsonl(cli(oxbow, server, "lookup", filled, "--prefix", "--key", "id=2", "--key", "id=5",
                    "--format", "jsonl"))
    assert out == flight_lookup(server, filled, {"id": [2, 5]}, prefix=True)
    assert sorted((r["id"], r["tag"]) for r in out) == [(2, "a"), (2, "b,c"), (5, "a"), (5, "b,c")]


@pytest.mark.parametrize("args, code, words", [
    (["--key", "id=1"], 1, ["--key 'id=1' lacks 'tag'", "the key columns are: id, tag"]),
    (["--key", "id=1,tag=a,v=3"], 1, ["'v=3' is not key_column=value"]),
    (["--key", "1,a"], 1, ["'1' is not key_column=value"]),
    (["--key", "id=1,id=2,tag=a"], 1, ["gives 'id' twice"]),
    (["--key", "id=4,tag=a", "--key", "id=x,tag=a"], 1, ["--key 'id=x,tag=a'", "'id'", "x"]),
    (["--key", "id=,tag=a"], 1, ["--key 'id=,tag=a'", "'id'", "null"]),
    (["--key", "id=1,tag=a", "--input", "k.jsonl"], 2, ["--input", "--key"]),
    ([], 1, ["give keys with --key"]),
    (["--input", "/nonexistent/keys.csv"], 1, ["cannot open '/nonexistent/keys.csv'"]),
    (["--input", "wide.arrow"], 1, ["'wide.arrow': key column 'id' is int64, the table's is int32",
                                    "value 1099511627776 of int64 does not fit int32"]),
    (["--input", "notag.arrow"], 1, ["'notag.arrow' has no key column 'tag'"]),
    (["--key", "id=1,tag=a", "--columns", "zzz"], 1, ["'zzz'"]),
    (["--prefix", "--key", "tag=a"], 1, ["'tag=a' is not key_column=value; the key columns are: id\n"]),
])
def test_bad_lookups_are_named(oxbow, server, filled, args, code, words, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, t in (("wide.arrow", pa.table({"id": pa.array([1 << 40], pa.int64()), "tag": ["a"]})),
                    ("notag.arrow", pa.table({"id": pa.array([1], pa.int32())}))):
        with pa.ipc.new_stream(name, t.schema) as w:
            w.write_table(t)
    err = cli_fails(oxbow, server, "lookup", filled, *args, code=code)
    for w in words:
        assert w in err, err


def test_key_commands_refuse_log_tables(oxbow, server, table_name):
    cli(oxbow, server, "table", "create", table_name, "--schema", "id int64")
    assert f"{table_name} is a log table: lookups need a primary key" in \
        cli_fails(oxbow, server, "lookup", table_name, "--key", "id=1")
    assert f"{table_name} is a log table: deletes need a primary key" in \
        cli_fails(oxbow, server, "delete", table_name, "--key", "id=1")
    assert "snapshots" in cli_fails(oxbow, server, "snapshot", table_name)


# --- snapshot -----------------------------------------------------------------------------------


def test_snapshot_prints_rows_and_offsets(oxbow, server, filled):
    proc = cli(oxbow, server, "snapshot", filled, "--format", "jsonl")
    snap, metas = flight_get(server, {"table": filled, "snapshot": True})
    assert sorted(jsonl(proc), key=lambda r: (r["id"], r["tag"])) == \
        sorted(snap.to_pylist(), key=lambda r: (r["id"], r["tag"]))
    assert len(snap) == len(ROWS)
    offsets = ", ".join(f"bucket {o['bucket']} < {o['next_offset']}" for o in metas[0]["offsets"])
    assert proc.stderr.decode() == (f"snapshot of {filled}: {len(ROWS)} rows, consistent with the "
                                    f"changelog before offsets {offsets}\n")
    proc = cli(oxbow, server, "snapshot", filled, "--bucket", "1", "--columns", "tag,id",
               "--format", "csv")
    part, metas = flight_get(server, {"table": filled, "snapshot": True, "bucket": 1,
                                      "columns": ["tag", "id"]})
    lines = proc.stdout.decode().splitlines()
    assert lines[0] == "tag,id" and len(lines) == len(part) + 1 > 1
    assert sorted(lines[1:]) == sorted((f'"{r["tag"]}"' if "," in r["tag"] else r["tag"]) +
                                       f',{r["id"]}' for r in part.to_pylist())
    assert proc.stderr.decode().endswith(f"offsets bucket 1 < {metas[0]['offsets'][0]['next_offset']}\n")


def test_bad_snapshots_are_named(oxbow, server, filled):
    assert "bucket 7" in cli_fails(oxbow, server, "snapshot", filled, "--bucket", "7")
    assert "'zzz'" in cli_fails(oxbow, server, "snapshot", filled, "--columns", "zzz")
    assert "json" in cli_fails(oxbow, server, "snapshot", filled, "--format", "json5")


# --- delete -------------------------------------------------------------------------------------


def test_delete_keys_from_a_file_and_flags(oxbow, server, filled, tmp_path):
    before = len(changelog(server, filled))
    # Whole rows name their keys too; a missing key deletes nothing.
    (tmp_path / "gone.jsonl").write_bytes(rows_jsonl(ROWS[:3] + [{"id": 77, "tag": "a"}]))
    out = cli(oxbow, server, "delete", filled, "--input", tmp_path / "gone.jsonl")
    assert out.stderr.decode() == f"deleted 3 rows from {filled} (4 keys given)\n"
    out = cli(oxbow, server, "delete", filled, "--key", "id=5,tag=b,c")
    assert out.stderr.decode() == f"deleted 1 rows from {filled} (1 keys given)\n"
    snap, _ = flight_get(server, {"table": filled, "snapshot": True})
    gone = {(r["id"], r["tag"]) for r in ROWS[:3]} | {(5, "b,c")}
    assert sorted((r["id"], r["tag"]) for r in snap.to_pylist()) == \
        sorted((r["id"], r["tag"]) for r in ROWS if (r["id"], r["tag"]) not in gone)
    records = changelog(server, filled)
    deletes = [r for r in records if r["_change_type"] == "-D"]
    assert len(records) == before + 4
    assert sorted((r["id"], r["tag"]) for r in deletes) == sorted(gone)
    assert all(r["v"] == r["id"] * 10 for r in deletes), "a -D carries the deleted row"


def test_bad_deletes_are_named(oxbow, server, filled):
    err = cli_fails(oxbow, server, "delete", filled, "--input", "-", "--input-format", "jsonl",
                    input=b'{"id": 1}\n')
    assert "'tag'" in err and "standard input" in err, err
    assert "give keys with --key" in cli_fails(oxbow, server, "delete", filled)
