"""Integrity: one byte changed on disk is never served, and every drop at recovery is logged.

Each test writes 100 batches of 20 rows to a one-bucket log table (small segments, so several
are sealed), stops oxbowd cleanly or with SIGKILL, changes one byte of a real segment file (or
cuts its tail), restarts, and reads everything back through pyarrow.flight. Every row served must
equal the row written; the damaged batch must be refused with INTERNAL naming the table, the
bucket, the segment path and its offsets; every other batch must still be served; and what
recovery cut or kept must be in oxbowd's log at WARN and in describe_table. The frame layout
parsed here is docs/log-format.md's.
"""

from __future__ import annotations

import pathlib
import re
import struct
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from oxbowtest.batches import id_batch
from oxbowtest.flight import assert_tables_equal, expect_error, read_ticket

TABLE = "integrity.t"
BATCHES = 100
ROWS = 20
SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("payload", pa.string(), nullable=False),
])
SERVER_ARGS = ("--segment-bytes", "65536", "--scrub-interval-ms", "0")


def batch(i: int) -> pa.RecordBatch:
    return id_batch(SCHEMA, i * ROWS, ROWS, lambda r: f"batch {i} row {r} " + "x" * 40)


EXPECTED = pa.Table.from_batches([batch(i) for i in range(BATCHES)])


def frames(path: pathlib.Path) -> list[dict]:
    """The frames of a segment file: position, offsets, where the payload lies, length."""
    data = path.read_bytes()
    out, position = [], 0
    while position + 64 <= len(data):
        magic, _crc, version, shift, _hlen = struct.unpack_from("<IIBBH", data, position)
        assert magic == 0x424C584F, f"no frame at {position} of {path}"
        base, rows, meta_len, body_len = struct.unpack_from("<qiiq", data, position + 16)
        payload = meta_len + body_len
        table = 0 if version == 1 else ((payload + (1 << shift) - 1) >> shift) * 4
        table = (table + 7) // 8 * 8
        length = 64 + table + (payload + 7) // 8 * 8
        out.append({"position": position, "base": base, "next": base + rows,
                    "payload_position": position + 64 + table, "payload_length": payload,
                    "length": length})
        position += length
    return out


def segments(data_dir: pathlib.Path) -> list[pathlib.Path]:
    return sorted((data_dir / "tables").glob("*/0/*.log"))


def flip(path: pathlib.Path, position: int) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)[0]
        f.seek(position)
        f.write(bytes([byte ^ 0x20]))


def produce(server, batches=range(BATCHES)) -> None:
    server.create_table(TABLE, SCHEMA, buckets=1, properties={"lake.enabled": "false"},
                        if_not_exists=True)
    acks = server.put(TABLE, [batch(i) for i in batches])
    assert [a["offsets"][0]["base_offset"] for a in acks] == [i * ROWS for i in batches]


def read(server, start: int, to: int | None = None, columns=None) -> pa.Table:
    return read_ticket(server.client, table=TABLE, bucket=0, **{"from": start}, to=to, columns=columns)


def expect_only_damage(server, damaged_from: int, damaged_to: int, segment: pathlib.Path) -> None:
    """Every offset outside [damaged_from, damaged_to) reads back exactly; the range is refused."""
    assert_tables_equal(read(server, 0, damaged_from), EXPECTED.slice(0, damaged_from))
    for start in (0, damaged_from, (damaged_from + damaged_to) // 2):
        with expect_error("INTERNAL", f"table '{TABLE}' bucket 0",
                          f"offsets [{damaged_from}, {damaged_to}) are damaged in segment "
                          f"{segment}"):
            read(server, start)
    total = BATCHES * ROWS
    assert_tables_equal(read(server, damaged_to), EXPECTED.slice(damaged_to, total - damaged_to))
    bucket = server.describe(TABLE)["bucket_offsets"][0]
    assert [(d["from_offset"], d["to_offset"], d["segment"]) for d in bucket["damaged"]] == [
        (damaged_from, damaged_to, str(segment))]


def warnings(server) -> str:
    return "\n".join(line for line in server.log_path.read_text().splitlines() if " warn" in line)


@pytest.mark.parametrize("where", ["body", "header", "metadata"])
def test_damage_in_a_sealed_segment_is_refused_and_skipped(make_server, tmp_path, where):
    server = make_server(SERVER_ARGS)
    produce(server)
    server.stop()
    sealed = segments(server.data_dir)[0]
    frame = frames(sealed)[3]
    byte = {"body": frame["payload_position"] + frame["payload_length"] - 10,
            "header": frame["position"] + 24,  # the row count
            "metadata": frame["payload_position"] + 40}[where]
    flip(sealed, byte)
    server.start()
    expect_only_damage(server, frame["base"], frame["next"], sealed)


@pytest.mark.parametrize("frame_index", [2, -1], ids=["prefix", "last-frame"])
def test_damage_in_the_active_segment_after_a_clean_stop(make_server, frame_index):
    server = make_server(SERVER_ARGS)
    produce(server)
    server.stop()  # the checkpoint now covers the whole active segment: open rescans nothing
    active = segments(server.data_dir)[-1]
    frame = frames(active)[frame_index]
    flip(active, frame["payload_position"] + 5)
    server.start()
    expect_only_damage(server, frame["base"], frame["next"], active)


def test_sigkill_then_damage_in_the_middle_keeps_the_intact_frames_after_it(make_server):
    server = make_server(SERVER_ARGS)
    produce(server)
    server.kill()  # the last checkpoint is from before the produce: open rescans the tail
    active = segments(server.data_dir)[-1]
    all_frames = frames(active)
    frame = all_frames[len(all_frames) // 2]
    flip(active, frame["payload_position"] + 3)
    server.start()
    assert server.describe(TABLE)["bucket_offsets"][0]["next_offset"] == BATCHES * ROWS
    log = warnings(server)
    assert re.search(rf"recovery found damage in segment {re.escape(str(active))} at byte "
                     rf"{frame['position']} .*offsets \[{frame['base']}, {frame['next']}\)", log), log
    expect_only_damage(server, frame["base"], frame["next"], active)
    # New writes go after the intact frames.
    server.put(TABLE, [batch(BATCHES)])
    assert read(server, BATCHES * ROWS).num_rows == ROWS


@pytest.mark.parametrize("damage", ["flip", "cut"])
def test_sigkill_then_a_torn_tail_is_cut_and_logged(make_server, damage):
    server = make_server(SERVER_ARGS)
    produce(server)
    server.kill()
    active = segments(server.data_dir)[-1]
    last = frames(active)[-1]
    if damage == "flip":
        flip(active, last["payload_position"] + 7)
    else:
        with open(active, "r+b") as f:
            f.truncate(last["position"] + last["length"] - 5)
    server.start()
    last_offset = (BATCHES - 1) * ROWS
    bucket = server.describe(TABLE)["bucket_offsets"][0]
    assert bucket["next_offset"] == last_offset
    cut = bucket["recovery_truncated"]
    assert (cut["segment"], cut["position"], cut["from_offset"]) == (
        str(active), last["position"], last_offset)
    log = warnings(server)
    assert re.search(rf"recovery cut a torn tail of \d+ bytes from segment "
                     rf"{re.escape(str(active))} at byte {last['position']}: offsets from "
                     rf"{last_offset} on were dropped", log), log
    assert_tables_equal(read(server, 0), EXPECTED.slice(0, last_offset))


def test_projection_serves_columns_whose_bytes_are_intact(make_server):
    """Checksums cover 4 KiB blocks: a projection is refused only if it touches the damage."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("blob", pa.string(), nullable=False)])
    wide = pa.record_batch([pa.array(range(20), pa.int64()),
                            pa.array([str(i) * 1000 for i in range(20)])], schema=schema)
    server = make_server(SERVER_ARGS)
    server.create_table(TABLE, schema, buckets=1, properties={"lake.enabled": "false"})
    server.put(TABLE, [wide, wide])
    server.stop()
    segment = segments(server.data_dir)[-1]
    first = frames(segment)[0]
    assert first["payload_length"] > 3 * 4096
    flip(segment, first["payload_position"] + first["payload_length"] - 100)  # in blob's data
    server.start()
    ids = read(server, 0, columns=["id"])
    assert ids.column("id").to_pylist() == list(range(20)) * 2
    for columns in (["blob"], None):
        with expect_error("INTERNAL", "offsets [0, 20) are damaged"):
            read(server, 0, columns=columns)
    assert read(server, 20, columns=["blob"]).column("blob").to_pylist() == wide.column(1).to_pylist()


def test_scrubber_finds_damage_without_any_read(make_server):
    server = make_server(SERVER_ARGS)
    produce(server)
    server.stop()
    sealed = segments(server.data_dir)[1]
    frame = frames(sealed)[1]
    flip(sealed, frame["payload_position"] + 9)
    server.extra_args = ("--segment-bytes", "65536", "--scrub-interval-ms", "3600000")
    server.start()
    deadline = time.monotonic() + 20
    while not server.describe(TABLE)["bucket_offsets"][0].get("damaged"):
        assert time.monotonic() < deadline, "the scrubber found nothing\n" + server.log_tail()
        time.sleep(0.1)
    damaged = server.describe(TABLE)["bucket_offsets"][0]["damaged"]
    assert [(d["from_offset"], d["to_offset"]) for d in damaged] == [(frame["base"], frame["next"])]
    assert "the scrubber found damage in segment " + str(sealed) in warnings(server)


def test_tiering_never_copies_damaged_bytes_into_the_lake(make_server):
    """The lake reads the log through the same checks: it stops before the damage and says so."""
    pyiceberg = pytest.importorskip("pyiceberg.table")
    args = ("--segment-bytes", "65536", "--scrub-interval-ms", "0")
    server = make_server(args + ("--lake-freshness-ms", "3600000"))
    server.create_table(TABLE, SCHEMA, buckets=1)
    server.put(TABLE, [batch(i) for i in range(BATCHES)])
    server.stop()
    sealed = segments(server.data_dir)[1]
    frame = frames(sealed)[2]
    flip(sealed, frame["payload_position"] + frame["payload_length"] - 20)
    server.extra_args = args + ("--lake-freshness-ms", "200")
    server.start()
    deadline = time.monotonic() + 30
    while True:
        lake = server.describe(TABLE)["lake"]
        if lake.get("error") and lake["tiered_offsets"] == [frame["base"]]:
            break
        assert time.monotonic() < deadline, f"no lake error: {lake}\n{server.log_tail()}"
        time.sleep(0.1)
    assert f"offsets [{frame['base']}, {frame['next']}) are damaged" in lake["error"]
    # Everything before the damage reaches the lake; nothing at or after it does.
    time.sleep(1)
    assert server.describe(TABLE)["lake"]["tiered_offsets"] == [frame["base"]]
    scanned = pyiceberg.StaticTable.from_metadata(lake["metadata_location"]).scan().to_arrow()
    scanned = scanned.select(["id", "payload"]).sort_by("id")
    assert_tables_equal(scanned.cast(SCHEMA), EXPECTED.slice(0, frame["base"]))
    assert warnings(server).count("are damaged") <= 3, "a stuck table is logged once, not every round"


def data_page_byte(path) -> int:
    """A byte in the data pages of the file's largest column chunk, past their first page
    header: inside a page body that a page checksum covers (a byte at a fixed fraction of the
    file may fall in a dictionary page's header, which no checksum covers)."""
    meta = pq.ParquetFile(path).metadata
    chunks = [meta.row_group(r).column(c)
              for r in range(meta.num_row_groups) for c in range(meta.num_columns)]

    def data_region(chunk):
        start = chunk.dictionary_page_offset or chunk.data_page_offset
        return chunk.data_page_offset, start + chunk.total_compressed_size

    begin, end = max((data_region(c) for c in chunks), key=lambda r: r[1] - r[0])
    return begin + (end - begin) * 3 // 4


def expect_scrubber_to_find(server, table, damaged, args):
    """Damages `damaged` inside a page, restarts `server` (stopped) with the scrubber on and
    waits until it names that file, and only it, in the table's damaged_files and its log."""
    flip(damaged, data_page_byte(damaged))
    server.extra_args = args + ("--scrub-interval-ms", "3600000")
    server.start()
    deadline = time.monotonic() + 20
    while not server.describe(table)["lake"].get("damaged_files"):
        assert time.monotonic() < deadline, "the scrubber found nothing\n" + server.log_tail()
        time.sleep(0.1)
    files = server.describe(table)["lake"]["damaged_files"]
    assert [f["path"] for f in files] == [str(damaged)]
    assert files[0]["problem"], files  # a page checksum, or the page layout around it
    assert f"the scrubber found damage in data file {damaged}" in warnings(server)


def test_scrubber_finds_a_damaged_lake_data_file(make_server):
    """Data files carry page checksums; the scrubber re-verifies them and reports damage."""
    args = ("--segment-bytes", "65536", "--lake-freshness-ms", "200")
    server = make_server(args + ("--scrub-interval-ms", "0"))
    server.create_table(TABLE, SCHEMA, buckets=1)
    server.put(TABLE, [batch(i) for i in range(BATCHES)])
    deadline = time.monotonic() + 30
    while server.describe(TABLE)["lake"]["tiered_offsets"] != [BATCHES * ROWS]:
        assert time.monotonic() < deadline, server.log_tail()
        time.sleep(0.1)
    server.stop()
    warehouse = server.data_dir.with_name(server.data_dir.name + "-warehouse")
    data_files = sorted(warehouse.rglob("*.parquet"))
    assert data_files
    damaged = data_files[0]
    expect_scrubber_to_find(server, TABLE, damaged, args)


def test_scrubber_finds_a_damaged_file_of_the_changelog_lake_table(make_server):
    """The scrubber verifies the changelog lake table's files (lake.changelog) too, and lists
    damage there in the primary-key table's damaged_files."""
    table = "integrity.pk"
    args = ("--lake-freshness-ms", "200")
    server = make_server(args + ("--scrub-interval-ms", "0"))
    server.create_table(table, SCHEMA, buckets=1, primary_key=["id"],
                        properties={"lake.enabled": "true", "lake.changelog": "true"})
    server.put(table, [batch(i) for i in range(5)])
    deadline = time.monotonic() + 30
    while server.describe(table)["lake"].get("changelog", {}).get("tiered_offsets") != [5 * ROWS]:
        assert time.monotonic() < deadline, server.log_tail()
        time.sleep(0.1)
    server.stop()
    warehouse = server.data_dir.with_name(server.data_dir.name + "-warehouse")
    changelog_files = sorted((warehouse / "integrity" / "pk$changelog").rglob("*.parquet"))
    assert changelog_files and sorted((warehouse / "integrity" / "pk").rglob("*.parquet"))
    damaged = changelog_files[0]
    expect_scrubber_to_find(server, table, damaged, args)  # and only it
