"""A full disk: oxbowd refuses new writes with RESOURCE_EXHAUSTED naming the problem, loses
nothing it acknowledged, keeps serving reads, and takes writes again once space returns.

The data dir lives on a small tmpfs mounted for the test, which needs root (CI runs as root).
"""

from __future__ import annotations

import json
import os
import subprocess

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.batches import id_batch
from oxbowtest.flight import descriptor

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("payload", pa.string())])


def batch(first: int, rows: int = 1000) -> pa.RecordBatch:
    return id_batch(SCHEMA, first, rows, lambda i: "x" * 200)


@pytest.fixture
def tiny_disk(tmp_path):
    mount = tmp_path / "tiny"
    mount.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"cannot mount a tmpfs for the disk-full test: {proc.stderr.strip()}")
        pytest.skip(f"mounting a tmpfs needs root: {proc.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_full_disk_refuses_writes_and_loses_nothing(tiny_disk, make_server):
    # tiny_disk first: fixtures are torn down in reverse, so the server stops before the umount.
    server = make_server(data_dir=tiny_disk / "data")
    server.create_table("ns.t", SCHEMA, properties={"lake.enabled": "false"})
    writer, acks = server.client.do_put(descriptor("ns.t"), SCHEMA)
    acked = 0
    for i in range(100):  # 100 x ~210 KB: far more than 6 MB
        try:
            writer.write_batch(batch(i * 1000))
        except pa.ArrowException:
            break
        reply = acks.read()
        if reply is None:  # the server ended the stream: its error comes with close()
            break
        assert json.loads(reply.to_pybytes())["offsets"][0]["base_offset"] == acked * 1000
        acked += 1
    with pytest.raises(pa.ArrowException) as excinfo:
        writer.close()
    message = str(excinfo.value)
    assert "resource exhausted" in message and "disk full: " in message, message
    assert 0 < acked < 100

    # Every acknowledged row is there, once; nothing of the refused batch is visible.
    table = server.read_all("ns.t")
    assert sorted(table.column("id").to_pylist()) == list(range(acked * 1000))
    assert server.describe("ns.t")["bucket_offsets"][0]["next_offset"] == acked * 1000

    # Space comes back when the table is dropped: writes work again.
    server.action("drop_table", {"table": "ns.t"})
    server.create_table("ns.t2", SCHEMA, properties={"lake.enabled": "false"})
    server.put("ns.t2", [batch(0)])
    assert server.read_all("ns.t2").num_rows == 1000
