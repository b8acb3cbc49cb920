"""The cold log on S3: sealed log segments older than the table property log.local.retention
move to <warehouse>/_log/<table id>/<bucket>/ in the bucket of a real S3 server and leave the
local disk; DoGet (whole, projected, following) reads them back exactly. Faults on the way keep
the segment local until an upload is verified, and the orphans of a failed attempt go."""

from __future__ import annotations

import time

import pytest

from oxbowtest.cold_log import (SCHEMA, SERVER_ARGS, Follower, assert_exact, batch, bucket, create,
                                expected, produce, read, wait_cold)
from fault_proxy import FaultProxy
from oxbowtest.lake import assert_same_columns, expected_lake, read_log, wait_lake
from test_s3_lake import keys_under, s3_lake, s3_lake_rows  # noqa: F401 (the fixture)


def local_segments(server, table_id: int) -> set[str]:
    return {p.name for p in (server.data_dir / "tables" / str(table_id) / "0").glob("*.log")}


def cold_keys(s3, s3_lake, table_id: int, suffix: str = ".log") -> set[str]:
    prefix = f"{s3_lake.prefix}/_log/{table_id}/0/"
    return {k[len(prefix):] for k in keys_under(s3, prefix) if k.endswith(suffix)}


@pytest.fixture
def cold_server(s3_lake):
    return s3_lake(*SERVER_ARGS)


def test_old_segments_move_to_the_bucket_and_read_back_exactly(s3_env, s3_lake, cold_server,
                                                               table_name):
    server = cold_server
    table_id = create(server, table_name)["table_id"]
    rows = produce(server, table_name, 0, 40)
    status = wait_cold(server, table_name, 4)
    # Everything sealed goes cold; wait for the pass to finish with the last sealed segment.
    deadline = time.monotonic() + 30
    while bucket(server, table_name)["local_segments"] > 1:
        assert time.monotonic() < deadline, bucket(server, table_name)
        time.sleep(0.1)
    status = bucket(server, table_name)
    cold = cold_keys(s3_env, s3_lake, table_id)
    assert len(cold) == status["cold"]["segments"] >= 4
    assert cold_keys(s3_env, s3_lake, table_id, ".index").__len__() == len(cold)
    assert cold_keys(s3_env, s3_lake, table_id, ".timeindex").__len__() == len(cold)
    assert status["cold"]["bytes"] > 0 and "error" not in status["cold"]
    local = local_segments(server, table_id)
    assert len(local) == status["local_segments"] == 1
    assert not (cold & local), "a segment is both local and cold"
    assert status["earliest_offset"] == 0 and status["next_offset"] == rows

    assert_exact(server, table_name, rows)
    # From an offset inside a cold segment, mid-batch.
    got, metas = read(server, table_name, start=7 * 500 + 123)
    assert got.column("id").to_pylist() == list(range(7 * 500, rows))
    assert metas[0]["base_offset"] == 7 * 500

    # A restart serves the cold segments from the manifest.
    server.restart()
    assert bucket(server, table_name)["cold"] == status["cold"]
    assert_exact(server, table_name, rows)


def test_follow_from_a_cold_offset_runs_into_the_live_tail(s3_env, cold_server, table_name):
    server = cold_server
    create(server, table_name)
    rows = produce(server, table_name, 0, 20)
    wait_cold(server, table_name, 2)
    follower = Follower(server, table_name, 0)
    try:
        assert follower.collect(rows) == list(range(rows))
        more = produce(server, table_name, rows, 3)
        assert follower.collect(more - rows) == list(range(rows, more))
    finally:
        follower.cancel()


def test_retention_deletes_cold_segments_too(s3_env, s3_lake, table_name):
    server = s3_lake(*SERVER_ARGS, "--retention-ms", "3000")
    table_id = create(server, table_name)["table_id"]
    rows = produce(server, table_name, 0, 20)
    wait_cold(server, table_name, 2)
    # Retention runs every 60 s by default: a restart enforces it at open.
    time.sleep(3.5)
    produce(server, table_name, rows, 1)
    server.restart()
    status = bucket(server, table_name)
    assert status["earliest_offset"] > 0
    assert status["cold"]["segments"] == len(cold_keys(s3_env, s3_lake, table_id))
    got, _ = read(server, table_name, start=status["earliest_offset"])
    assert got.column("id").to_pylist() == list(range(status["earliest_offset"], rows + 500))


def test_drop_table_removes_its_cold_objects(s3_env, s3_lake, cold_server, table_name):
    server = cold_server
    table_id = create(server, table_name)["table_id"]
    produce(server, table_name, 0, 10)
    wait_cold(server, table_name, 1)
    assert cold_keys(s3_env, s3_lake, table_id)
    server.action("drop_table", {"table": table_name})
    assert keys_under(s3_env, f"{s3_lake.prefix}/_log/{table_id}/") == []


def test_s3_faults_keep_segments_local_until_an_upload_verifies(s3_env, s3_lake, monkeypatch,
                                                                table_name):
    proxy = FaultProxy(s3_env.endpoint)
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
        # Every index upload answers 503: each attempt leaves its .log object behind.
        fault = proxy.add("PUT", ".index", times=-1)
        server = s3_lake(*SERVER_ARGS)
        table_id = create(server, table_name)["table_id"]
        rows = produce(server, table_name, 0, 20)
        deadline = time.monotonic() + 60
        while "error" not in bucket(server, table_name)["cold"]:
            assert time.monotonic() < deadline, bucket(server, table_name)
            time.sleep(0.2)
        status = bucket(server, table_name)
        assert fault.hits > 0
        assert status["cold"]["segments"] == 0 and status["cold"]["bytes"] == 0
        assert "503" in status["cold"]["error"] or "SlowDown" in status["cold"]["error"], status
        assert status["local_segments"] >= 3
        # Each pass first sweeps the last attempt's orphans, so poll for one between passes.
        deadline = time.monotonic() + 10
        while not cold_keys(s3_env, s3_lake, table_id):
            assert time.monotonic() < deadline, "no failed attempt left a .log object"
            time.sleep(0.05)
        assert "moving old segments to the cold store failed" in server.log_tail(200)
        assert_exact(server, table_name, rows)  # nothing acknowledged is lost

        # S3 recovers: the orphans go, every sealed segment moves, and reads stay exact.
        proxy.faults.clear()
        deadline = time.monotonic() + 60
        while (bucket(server, table_name)["local_segments"] > 1
               or "error" in bucket(server, table_name)["cold"]):
            assert time.monotonic() < deadline, bucket(server, table_name)
            time.sleep(0.2)
        status = bucket(server, table_name)
        assert len(cold_keys(s3_env, s3_lake, table_id)) == status["cold"]["segments"]
        assert len(cold_keys(s3_env, s3_lake, table_id, ".index")) == status["cold"]["segments"]
        assert_exact(server, table_name, rows)

        # S3 down for reads: a cold read fails with a clear error; the live tail still serves.
        proxy.add("GET", "/_log/", times=-1, action="drop")
        server.restart()  # an empty cache
        with pytest.raises(Exception) as failed:
            read(server, table_name)
        assert "_log" in str(failed.value)
        proxy.faults.clear()
        assert_exact(server, table_name, rows)
    finally:
        proxy.close()


def test_a_lake_table_tiers_from_cold_segments_and_retention_waits_for_the_lake(
        s3_env, s3_lake, table_name):
    """The rule: moving a segment to the cold log does not wait for the lake (the tiering
    round reads cold offsets back from S3 like any reader), deleting one does (retention never
    passes the tiered offsets). lake.freshness 3s: the segments go cold (100 ms pass) before the
    round after the first (empty) one; retention-bytes 64 KiB would delete them at once."""
    server = s3_lake(*SERVER_ARGS, "--retention-bytes", "65536")
    table_id = server.create_table(table_name, SCHEMA, buckets=1, properties={
        "log.local.retention": "1ms", "lake.freshness": "3s"})["table_id"]
    wait_lake(server, table_name)
    rows = produce(server, table_name, 0, 20)
    status = wait_cold(server, table_name, 4)
    tiered = server.describe(table_name)["lake"]["tiered_offsets"][0]
    cold_end = min(int(name[:-4]) for name in local_segments(server, table_id))
    assert tiered < cold_end, "the lake tiered before the segments went cold: tested nothing"
    assert status["earliest_offset"] == 0, "retention deleted segments the lake lacks"

    lake = wait_lake(server, table_name)
    assert_same_columns(s3_lake_rows(s3_env, lake["metadata_location"]),
                        expected_lake(read_log(server, table_name)))
    # Tiered now: the next roll wakes retention, which may delete the cold segments.
    rows = produce(server, table_name, rows, 2)
    deadline = time.monotonic() + 30
    while True:  # the manifest changes first, then the objects go
        status = bucket(server, table_name)
        if status["earliest_offset"] > 0 and \
                status["cold"]["segments"] == len(cold_keys(s3_env, s3_lake, table_id)):
            break
        assert time.monotonic() < deadline, f"retention deleted no tiered cold segment: {status}"
        time.sleep(0.1)
    lake = wait_lake(server, table_name)
    in_lake = s3_lake_rows(s3_env, lake["metadata_location"])
    assert in_lake.column("id").to_pylist() == list(range(rows)), "the lake lost rows"
    assert read(server, table_name, start=status["earliest_offset"])[0].column("id").to_pylist() \
        == list(range(status["earliest_offset"], rows))
