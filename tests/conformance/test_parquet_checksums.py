"""Parquet page checksums (PageHeader.crc): Oxbow against pyarrow, the reference.

- Oxbow writes -> pyarrow reads with page_checksum_verification=True, every codec and page
  version; `oxbow parquet verify` checks every page.
- pyarrow writes with write_page_checksum=True -> `oxbow parquet verify` and Oxbow's reader
  accept it, checking every page.
- One flipped byte inside a page's bytes (ours or pyarrow's) -> pyarrow with verification, our
  reader and `oxbow parquet verify` all fail, ours naming the file, row group, column and page.
- pyarrow's default file (no checksums) -> read as before; verify counts its pages as unchecked.
"""

import itertools
import re

import pyarrow.parquet as pq
import pytest

from test_parquet import (CODECS, N, all_types_table, assert_tables_equal, expected_after_parquet,
                          oxbow_to_arrow, write_stream)

ROWS_PER_GROUP = 7
ROW_GROUPS = (N + ROWS_PER_GROUP - 1) // ROWS_PER_GROUP


def verify_report(oxbow, path):
    """`oxbow parquet verify` on a sound file: its key: value lines as ints (result aside)."""
    out = oxbow.ok("parquet", "verify", path).stdout.decode().splitlines()
    assert out[-1] == "result: ok"
    return {k: int(v) for k, v in (line.split(": ", 1) for line in out[:-1])}


def write_oxbow(oxbow, tmp_path, table, codec, dictionary, page_version):
    src = tmp_path / "in.arrows"
    write_stream(src, table)
    out = tmp_path / "oxbow.parquet"
    oxbow.ok("parquet", "write", src, out, "--compression", codec, "--dictionary", dictionary,
             "--row-group-rows", ROWS_PER_GROUP, "--page-version", page_version)
    return out


@pytest.mark.parametrize("codec,dictionary,page_version",
                         list(itertools.product(CODECS, ["on", "off"], [1, 2])))
def test_pyarrow_verifies_our_checksums(oxbow, tmp_path, codec, dictionary, page_version):
    table = all_types_table()
    out = write_oxbow(oxbow, tmp_path, table, codec, dictionary, page_version)
    want = expected_after_parquet(table)
    assert_tables_equal(pq.read_table(out, page_checksum_verification=True), want)
    assert_tables_equal(pq.ParquetFile(out, page_checksum_verification=True).read(), want)

    report = verify_report(oxbow, out)
    assert report["file_size"] == out.stat().st_size
    assert report["row_groups"] == ROW_GROUPS
    assert report["column_chunks"] == ROW_GROUPS * table.num_columns
    assert report["pages_without_crc"] == 0
    assert report["pages_checked"] == report["pages"] >= report["column_chunks"]


@pytest.mark.parametrize("compression", ["NONE", "SNAPPY", "GZIP", "ZSTD", "LZ4"])
@pytest.mark.parametrize("use_dictionary", [True, False])
@pytest.mark.parametrize("data_page_version", ["1.0", "2.0"])
def test_pyarrow_checksums_pass_our_verify_and_reader(oxbow, tmp_path, compression,
                                                      use_dictionary, data_page_version):
    table = all_types_table(with_seconds=False, with_local_tz=False)
    path = tmp_path / "pa.parquet"
    pq.write_table(table, path, compression=compression, use_dictionary=use_dictionary,
                   data_page_version=data_page_version, row_group_size=10, write_page_checksum=True)
    report = verify_report(oxbow, path)
    assert report["pages_without_crc"] == 0
    assert report["pages_checked"] == report["pages"] > 0
    assert report["column_chunks"] == pq.ParquetFile(path).num_row_groups * table.num_columns
    assert_tables_equal(oxbow_to_arrow(oxbow, path, tmp_path), table)


def flip_byte(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    bad = path.with_name("flipped.parquet")
    bad.write_bytes(bytes(data))
    return bad


def assert_everyone_rejects(oxbow, tmp_path, bad, row_group, column, page_offset=None):
    """pyarrow (verifying), our reader and our verifier all reject `bad`, naming the page."""
    with pytest.raises(OSError, match="CRC checksum verification failed"):
        pq.read_table(bad, page_checksum_verification=True)
    offset = str(page_offset) if page_offset is not None else r"\d+"
    where = (rf": row group {row_group}: column '{column}': page at offset {offset} fails its "
             rf"checksum \(crc 0x[0-9a-f]{{8}} in the header, 0x[0-9a-f]{{8}} computed over its "
             rf"\d+ bytes\)\n")
    path = re.escape(str(bad))
    # The CLI's reader commands quote file names; the verifier names the file as it opened it.
    err = oxbow.fails("parquet", "to-arrow", bad, tmp_path / "x.arrows")
    assert re.fullmatch(f"oxbow: error: '{path}'{where}", err), err
    proc = oxbow.run("parquet", "verify", bad)
    assert proc.returncode == 1
    assert proc.stdout.decode().splitlines()[-1] == "result: failed"
    assert re.fullmatch(f"oxbow: error: {path}{where}", proc.stderr.decode()), proc.stderr


@pytest.mark.parametrize("codec,page_version", [("zstd", 1), ("zstd", 2), ("snappy", 1),
                                                ("none", 2), ("gzip", 1), ("lz4", 2)])
@pytest.mark.parametrize("page", ["dictionary", "last_data"])
def test_flipped_byte_in_our_page_fails_everywhere(oxbow, tmp_path, codec, page_version, page):
    table = all_types_table()
    out = write_oxbow(oxbow, tmp_path, table, codec, "on", page_version)
    row_group, column = ROW_GROUPS // 2, "string"
    chunk = pq.ParquetFile(out).metadata.row_group(row_group).column(
        table.schema.get_field_index(column))
    assert chunk.has_dictionary_page
    if page == "dictionary":
        # The dictionary page comes first; its bytes end where the first data page starts.
        bad = flip_byte(out, chunk.data_page_offset - 1)
        assert_everyone_rejects(oxbow, tmp_path, bad, row_group, column, chunk.dictionary_page_offset)
    else:
        # Pages tile the chunk, so its last byte is the last data page's last byte.
        bad = flip_byte(out, chunk.dictionary_page_offset + chunk.total_compressed_size - 1)
        assert_everyone_rejects(oxbow, tmp_path, bad, row_group, column)


@pytest.mark.parametrize("data_page_version", ["1.0", "2.0"])
def test_flipped_byte_in_pyarrow_page_fails_everywhere(oxbow, tmp_path, data_page_version):
    table = all_types_table(with_seconds=False, with_local_tz=False)
    path = tmp_path / "pa.parquet"
    pq.write_table(table, path, compression="zstd", data_page_version=data_page_version,
                   row_group_size=10, write_page_checksum=True)
    column = "int64"
    chunk = pq.ParquetFile(path).metadata.row_group(2).column(table.schema.get_field_index(column))
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    bad = flip_byte(path, start + chunk.total_compressed_size - 1)
    assert_everyone_rejects(oxbow, tmp_path, bad, 2, column)


def test_file_without_checksums_is_read_and_reported_unchecked(oxbow, tmp_path):
    table = all_types_table(with_seconds=False, with_local_tz=False)
    path = tmp_path / "plain.parquet"
    pq.write_table(table, path, row_group_size=10)  # pyarrow's default: no page checksums
    assert_tables_equal(oxbow_to_arrow(oxbow, path, tmp_path), table)
    report = verify_report(oxbow, path)
    assert report["pages_without_crc"] == report["pages"] > 0
    assert report["pages_checked"] == 0 and report["bytes_checked"] == 0


def test_verify_rejects_damaged_files(oxbow, tmp_path):
    good = write_oxbow(oxbow, tmp_path, all_types_table(), "zstd", "on", 1)
    data = good.read_bytes()
    for name, damaged in [("empty", b""), ("truncated", data[: len(data) // 2]),
                          ("bad_magic", data[:-1] + b"X")]:
        bad = tmp_path / f"{name}.parquet"
        bad.write_bytes(damaged)
        proc = oxbow.run("parquet", "verify", bad)
        assert proc.returncode == 1, name
        assert proc.stderr.decode().startswith(f"oxbow: error: {bad}: parquet"), proc.stderr
    assert "No such file" in oxbow.fails("parquet", "verify", tmp_path / "missing.parquet")
