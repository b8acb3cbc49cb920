"""Small promises the docs make, each once broken: an unknown command "op" is echoed, the empty
"--flag=" form of oxbowd's flags, min/max aggregates of fixed-size binaries, and warehouse
schemes that are not served refused at start (file:// is in tests/lake/test_lake_edges.py)."""

from __future__ import annotations

import json
import subprocess

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.flight import expect_error, schema_json
from oxbowtest.server import free_port, refused_start
from oxbowtest.primary_keys import create_pk_table, snapshot, upsert


def test_an_unknown_command_op_is_echoed(server):
    create_pk_table(server, "ns.pk", schema=pa.schema([pa.field("id", pa.int32(), nullable=False),
                                                       pa.field("v", pa.int64())]),
                    primary_key=["id"])
    batch = pa.record_batch([pa.array([1], pa.int32()), pa.array([2], pa.int64())],
                            names=["id", "v"])
    for op, says in (("upsrt", "\"op\" 'upsrt' is unknown"), (7, "\"op\" '7' is unknown")):
        descriptor = fl.FlightDescriptor.for_command(json.dumps({"table": "ns.pk", "op": op}))
        with expect_error("INVALID_ARGUMENT", says, '"upsert", "delete" or "lookup"'):
            writer, _ = server.client.do_put(descriptor, batch.schema)
            writer.write_batch(batch)
            writer.close()
    descriptor = fl.FlightDescriptor.for_command(json.dumps({"table": "ns.pk"}))
    with expect_error("INVALID_ARGUMENT", 'needs "op"'):
        writer, _ = server.client.do_put(descriptor, batch.schema)
        writer.write_batch(batch)
        writer.close()


def test_empty_flag_values_do_not_swallow_the_next_flag(oxbowd_bin, tmp_path):
    """"--catalog-listen= --metrics-listen=" turns both off (the first once took the second
    flag as its address)."""
    port = free_port()
    proc = subprocess.Popen([str(oxbowd_bin), "--data-dir", str(tmp_path / "d"), "--warehouse",
                             str(tmp_path / "w"), "--listen", f"127.0.0.1:{port}",
                             "--catalog-listen=", "--metrics-listen=", "--kafka-listen=",
                             "--schema-registry-listen=", "--console-listen="],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        printed = []
        for line in proc.stdout:
            printed.append(line)
            if "serving Arrow Flight" in line or "cannot start" in line:
                break
        assert any("serving Arrow Flight" in line for line in printed), printed
    finally:
        proc.terminate()
        printed += proc.communicate(timeout=30)[0].splitlines(keepends=True)
    text = "".join(printed)
    assert proc.returncode == 0, text
    for listener in ("serving metrics", "serving Kafka", "REST catalog"):
        assert listener not in text, text


def test_min_and_max_aggregate_fixed_size_binaries_by_unsigned_bytes(server):
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False),
                        pa.field("lo", pa.binary(2)), pa.field("hi", pa.binary(2))])
    create_pk_table(server, "ns.agg", schema=schema, primary_key=["id"],
                    properties={"merge_engine": "aggregate", "fields.lo.agg": "min",
                                "fields.hi.agg": "max"})
    for value in (b"\x80\x00", b"\x01\xff", b"\x7f\x00"):
        upsert(server, "ns.agg", pa.record_batch(
            [pa.array([1], pa.int32()), pa.array([value], pa.binary(2)),
             pa.array([value], pa.binary(2))], schema=schema))
    rows, _ = snapshot(server, "ns.agg")
    assert rows.to_pylist() == [{"id": 1, "lo": b"\x01\xff", "hi": b"\x80\x00"}]


@pytest.mark.parametrize("warehouse, says", [
    ("gs://bucket/x", "scheme 'gs' is not served"),
    ("s3a://bucket/x", "scheme 's3a' is not served"),
    ("S3://bucket/x", "scheme 'S3' is not served"),
    ("file://host/x", "a file URI names an absolute path on this host"),
])
def test_warehouse_schemes_that_are_not_served_stop_the_start(oxbowd_bin, tmp_path, warehouse,
                                                              says):
    printed = refused_start(oxbowd_bin, tmp_path / "d", "--warehouse", warehouse, cwd=tmp_path)
    # Nothing was made of the URI as a relative directory ("gs:", "file:").
    assert says in printed, printed
    assert not any(p.name.endswith(":") for p in tmp_path.iterdir()), list(tmp_path.iterdir())
