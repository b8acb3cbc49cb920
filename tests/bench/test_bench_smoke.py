"""Keeps the side-by-side benchmarks working: each runs in --quick mode (a few MB, seconds;
bench/pk_bench.py under a minute, bench/union_bench.py about 35 s, bench/vs_kafka, bench/vs_fluss and bench/kafka_perf.py about a minute
each, plus the Maven fetch of Kafka and Fluss the first time), exits 0 and prints its ratio lines. Binaries come from
$OXBOW_BUILD_DIR (default <repo>/build/release): bench/ipc_bench, bench/server_bench,
bench/parquet_bench, bench/kv_bench, tools/oxbowd.
"""

import os
import pathlib
import re
import subprocess
import sys

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD_DIR = pathlib.Path(os.environ.get("OXBOW_BUILD_DIR", REPO_ROOT / "build" / "release"))
NUMBER = r"-?[0-9]+\.[0-9]+"


def run_quick(script: str, *binaries: str, tmp_path, timeout: float = 50) -> str:
    for rel in binaries:
        if not (BUILD_DIR / rel).is_file():
            pytest.fail(f"{BUILD_DIR / rel} not found: build it or set OXBOW_BUILD_DIR")
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / script), "--quick", "--workdir", str(tmp_path)],
        capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "OXBOW_BUILD_DIR": str(BUILD_DIR)})
    assert proc.returncode == 0, f"{script} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert list(tmp_path.iterdir()) == [], f"{script} left files behind in its work dir"
    return proc.stdout


def test_ipc_bench_quick(tmp_path):
    out = run_quick("ipc_bench.py", "bench/ipc_bench", tmp_path=tmp_path)
    for op in ("encode to one buffer", "decode, Oxbow validate=true vs pyarrow read",
               "decode, Oxbow validate=false vs pyarrow read"):
        for codec in ("none", "lz4", "zstd"):
            assert re.search(rf"^ratio oxbow/pyarrow {re.escape(op)} \[{codec}\]: {NUMBER}$", out, re.M), (
                f"missing ratio line for {op} [{codec}]:\n{out}")
    for codec in ("none", "lz4", "zstd"):
        assert re.search(rf"^ratio projected/full cost \[{codec}\]: {NUMBER} ", out, re.M), out
    assert "| encode to one buffer | zstd |" in out


def test_server_bench_quick(tmp_path):
    out = run_quick("server_bench.py", "bench/server_bench", "bench/ipc_bench", "tools/oxbowd",
                    tmp_path=tmp_path)
    for label in ("oxbowd/pyarrow-in-memory full scan throughput",
                  "oxbowd/pyarrow-in-memory 2-column scan throughput",
                  "produce/disk write bandwidth",
                  "C++ client/pyarrow.flight produce throughput"):
        assert re.search(rf"^ratio {re.escape(label)}: {NUMBER}", out, re.M), f"missing ratio {label}:\n{out}"
    assert re.search(rf"^ack-to-tail p99: {NUMBER} ms", out, re.M), out
    assert re.search(r"^\| oxbowd RSS idle after start \(MB\) \| [0-9.,]+ \|$", out, re.M), out


def test_parquet_bench_quick(tmp_path):
    out = run_quick("parquet_bench.py", "bench/parquet_bench", tmp_path=tmp_path)
    for op in ("write", "read pyarrow's file", "read Oxbow's file"):
        for codec in ("zstd", "snappy"):
            assert re.search(rf"^ratio oxbow/pyarrow {re.escape(op)} \[{codec}\]: {NUMBER} ", out, re.M), (
                f"missing ratio line for {op} [{codec}]:\n{out}")
    for codec in ("zstd", "snappy"):
        assert re.search(rf"^ratio oxbow/pyarrow file size \[{codec}\]: {NUMBER} ", out, re.M), out


def test_lake_bench_quick(tmp_path):
    out = run_quick("lake_bench.py", "tools/oxbowd", tmp_path=tmp_path, timeout=120)
    assert re.search(r"MB/s target .* p50 \d+ ms, p99 \d+ ms.*\(p99 to the commit \d+ ms", out), out
    assert re.search(rf"ratio on/off {NUMBER}", out), out
    assert re.search(r"after \d+ commits .*: \d+ live data files .* \d+ manifests", out), out


def test_union_bench_quick(tmp_path):
    out = run_quick("union_bench.py", "tools/oxbowd", tmp_path=tmp_path, timeout=120)
    for label in ("all 20 columns", "2 of 20 columns"):
        for peer in ("pyiceberg", "log"):
            assert re.search(rf"^ratio union/{peer} {label}: {NUMBER}", out, re.M), (
                f"missing ratio union/{peer} {label}:\n{out}")


def test_pk_bench_quick(tmp_path):
    # 7 oxbowd and 18 RocksDB runs of a few thousand rows: 7 s, up to 45 s on a busy 2-core machine.
    out = run_quick("pk_bench.py", "bench/kv_bench", "tools/oxbowd", tmp_path=tmp_path, timeout=150)
    for size in ("16 B keys + 100 B values", "20 B keys + 400 B values"):
        for writers in ("1 writer", "4 writers"):
            for peer in ("put, no WAL", "MultiGet+put, no WAL", "MultiGet+put, WAL fsync per batch"):
                label = re.escape(f"upserts {size}, {writers}, vs {peer}")
                assert re.search(rf"^ratio oxbowd/rocksdb {label}: {NUMBER}", out, re.M), (
                    f"missing ratio {label}:\n{out}")
        for batch in (1, 100, 1000):
            label = re.escape(f"lookups {size}, batches of {batch}")
            assert re.search(rf"^ratio oxbowd/rocksdb {label}: {NUMBER}", out, re.M), (
                f"missing ratio {label}:\n{out}")
    for buckets in (1, 64, 512):
        assert re.search(rf"^RSS {buckets} buckets: VmHWM {NUMBER} MiB, budget .*: (within|OVER)",
                         out, re.M), f"missing RSS line for {buckets} buckets:\n{out}"


def test_utf8_bench_quick():
    binary = BUILD_DIR / "bench" / "utf8_bench"
    if not binary.is_file():
        pytest.fail(f"{binary} not found: build it or set OXBOW_BUILD_DIR")
    proc = subprocess.run([str(binary), "--benchmark_min_time=0.001"], capture_output=True,
                          text=True, timeout=50)
    assert proc.returncode == 0, f"utf8_bench exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    for name in ("BM_ValidateDatasetAscii", "BM_ValidateDatasetMultibyte"):
        assert re.search(rf"^{name} .* dataset_MBps=", proc.stdout, re.M), proc.stdout


def test_fsync_probe_quick(tmp_path):
    out = run_quick("fsync_probe.py", tmp_path=tmp_path)
    for mode in ("append", "overwrite"):
        for label in ("alone", "beside 16 MiB/s O_DIRECT writes", "beside 16 MiB/s O_DIRECT reads"):
            assert re.search(rf"^fdatasync after a 1 MiB {mode}, {label}: p50 {NUMBER} ms, mean "
                             rf"{NUMBER} ms, p99 {NUMBER} ms; ratio to the append alone {NUMBER}$",
                             out, re.M), f"missing line for {mode}, {label}:\n{out}"


def test_vs_kafka_quick(tmp_path):
    for rel in ("bench/server_bench", "tools/oxbowd"):
        if not (BUILD_DIR / rel).is_file():
            pytest.fail(f"{BUILD_DIR / rel} not found: build it or set OXBOW_BUILD_DIR")
    workdir, log_dir = tmp_path / "work", tmp_path / "logs"
    workdir.mkdir()
    proc = subprocess.run(
        [str(REPO_ROOT / "bench" / "vs_kafka"), "--quick", "--workdir", str(workdir),
         "--log-dir", str(log_dir)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "OXBOW_BUILD_DIR": str(BUILD_DIR)})
    out = proc.stdout
    assert proc.returncode == 0, f"vs_kafka exited {proc.returncode}\n{out}\n{proc.stderr}"
    assert list(workdir.iterdir()) == [], "vs_kafka left files behind in its work dir"
    assert (log_dir / "kafka-server.log").is_file() and (log_dir / "oxbowd-fsync.log").is_file()
    labels = [rf"produce {what}, {p}, {mode}" for mode in ("no fsync", "fsync every batch")
              for p in ("1 producer", "4 producers")
              for what in ("MB/s", r"CPU s per GB \(client \+ server\)")]
    labels += [rf"{kind} latency {q} ms at [0-9,]+ MB/s, {mode}"
               for mode in ("no fsync", "fsync every batch")
               for kind, qs in (("produce", ("p50", "p99", r"p99\.9")), ("end-to-end", ("p50", "p99")))
               for q in qs]
    labels += [rf"consume {what}, {columns}"
               for what in ("k rows/s", r"CPU s per GB \(client \+ server\)")
               for columns in ("all 20 columns", "Oxbow 10 of 20 columns, Kafka all",
                               "Oxbow 2 of 20 columns, Kafka all")]
    labels += [r"disk bytes per row, log segment files \(\.log\)",
               r"disk bytes per row, all files of the topic / table \(allocated\)",
               r"server RSS peak MB .*", r"server anonymous RSS peak MB .*"]
    for label in labels:
        assert re.search(rf"^ratio oxbow/kafka {label}: {NUMBER}", out, re.M), (
            f"missing ratio {label}:\n{out}")


def test_vs_fluss_quick(tmp_path):
    """bench/vs_fluss.py --quick: ZooKeeper, two Fluss 0.6.0 clusters (fetched with Maven into
    build/fluss the first time) and two oxbowd take the same upserts, lookups, appends and scans;
    every workload prints its Oxbow/Fluss ratio, and the servers' RSS is reported."""
    out = run_quick("vs_fluss.py", "bench/server_bench", "tools/oxbowd", tmp_path=tmp_path,
                    timeout=600)
    for label in ("primary-key upserts/s, default durability",
                  "primary-key upserts/s, an fsync per batch",
                  "point lookups/s, one key at a time",
                  "lookups/s, Fluss 1,000 in flight, Oxbow batches of 1,000",
                  "log append MB/s (20 columns), default durability",
                  "log append MB/s (20 columns), an fsync per batch",
                  "full log scan rows/s", "2-of-20-column scan rows/s"):
        assert re.search(rf"^ratio oxbow/fluss {re.escape(label)}: {NUMBER}$", out, re.M), (
            f"missing ratio {label}:\n{out}")
    for process in ("ZooKeeper", "fluss tablet server", "fluss coordinator", "oxbowd"):
        assert re.search(rf"^\| {process} \| [0-9,]+ \| [0-9,]+ \|$", out, re.M), out
    assert re.search(rf"^ratio oxbowd RSS/Fluss's three processes' RSS: {NUMBER}$", out, re.M), out
    assert re.search(r"^The floor under Oxbow's one-key lookups: .* p50 [0-9,]+ µs\.$", out,
                     re.M), out


def test_kafka_perf_quick(tmp_path):
    if not (BUILD_DIR / "tools/oxbowd").is_file():
        pytest.fail(f"{BUILD_DIR / 'tools/oxbowd'} not found: build it or set OXBOW_BUILD_DIR")
    workdir, log_dir = tmp_path / "work", tmp_path / "logs"
    workdir.mkdir()
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "kafka_perf.py"), "--quick", "--workdir",
         str(workdir), "--log-dir", str(log_dir)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "OXBOW_BUILD_DIR": str(BUILD_DIR)})
    out = proc.stdout
    assert proc.returncode == 0, f"kafka_perf exited {proc.returncode}\n{out}\n{proc.stderr}"
    assert list(workdir.iterdir()) == [], "kafka_perf left files behind in its work dir"
    for mode in ("no fsync", "fsync"):
        for metric in ("produce MB/s", "produce p99 ms", "consume MB/s"):
            assert re.search(rf"^ratio oxbow/kafka {re.escape(metric)}, {mode}: {NUMBER}$", out,
                             re.M), f"missing ratio {metric}, {mode}:\n{out}"
    # Transactions: a commit every 100 ms, read_committed consumers, on both.
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "kafka_perf.py"), "--quick", "--transactional",
         "--workdir", str(workdir), "--log-dir", str(log_dir)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "OXBOW_BUILD_DIR": str(BUILD_DIR)})
    out = proc.stdout
    assert proc.returncode == 0, f"kafka_perf exited {proc.returncode}\n{out}\n{proc.stderr}"
    for metric in ("produce MB/s", "produce p99 ms", "consume MB/s"):
        assert re.search(rf"^ratio oxbow/kafka transactional {re.escape(metric)}, no fsync: "
                         rf"{NUMBER}$", out, re.M), f"missing transactional {metric}:\n{out}"


def test_kafka_connections_quick(tmp_path):
    """bench/kafka_connections.py --quick: idle and producing Kafka connections, spoken by hand,
    against a real Kafka broker and oxbowd; every produce answered without error on both."""
    if not (BUILD_DIR / "tools/oxbowd").is_file():
        pytest.fail(f"{BUILD_DIR / 'tools/oxbowd'} not found: build it or set OXBOW_BUILD_DIR")
    workdir, log_dir = tmp_path / "work", tmp_path / "logs"
    workdir.mkdir()
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "kafka_connections.py"), "--quick",
         "--workdir", str(workdir), "--log-dir", str(log_dir)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "OXBOW_BUILD_DIR": str(BUILD_DIR)})
    out = proc.stdout
    assert proc.returncode == 0, f"kafka_connections exited {proc.returncode}\n{out}\n{proc.stderr}"
    assert list(workdir.iterdir()) == [], "kafka_connections left files behind in its work dir"
    rows = {m.group(1).strip(): (float(m.group(2)), float(m.group(3)))
            for m in re.finditer(r"^([a-z/ ]+?)\s+(\S+)\s+(\S+)$", out, re.M)
            if m.group(2)[0].isdigit()}
    assert rows["idle failed"] == (0, 0), out
    assert rows["active errors"] == (0, 0), out
    assert min(rows["active requests"]) > 0, out
    for metric in ("active p99 ms", "idle RSS MB", "loaded RSS MB"):
        assert re.search(rf"^ratio oxbow/kafka {metric}: {NUMBER}$", out, re.M), out


# Two CPUs, laid out as `perf script -F comm,pid,tid,cpu,time,event,trace` prints them. Second 0:
# the server's other thread (102) sleeps, so the gRPC thread's one wait (woken at .6, in at .7
# behind the client) is "background quiet", with CPU 1 idle meanwhile. Second 1: thread 102 runs
# half of it ("background busy") while the gRPC thread waits 50 ms behind the client.
SCHED_TRACE = """\
         swapper     0/0     [000]  1000.000000: sched:sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=grpcpp_sync_ser next_pid=101 next_prio=120
          oxbowd   100/102   [001]  1000.000000: sched:sched_switch: prev_comm=oxbowd prev_pid=102 prev_prio=130 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 grpcpp_sync_ser   100/101   [000]  1000.500000: sched:sched_switch: prev_comm=grpcpp_sync_ser prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=python next_pid=200 next_prio=120
          python   200/200   [000]  1000.600000: sched:sched_wakeup: comm=grpcpp_sync_ser pid=101 prio=120 target_cpu=000
          python   200/200   [000]  1000.700000: sched:sched_switch: prev_comm=python prev_pid=200 prev_prio=120 prev_state=R ==> next_comm=grpcpp_sync_ser next_pid=101 next_prio=120
         swapper     0/0     [001]  1001.000000: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=oxbowd next_pid=102 next_prio=130
 grpcpp_sync_ser   100/101   [000]  1001.400000: sched:sched_switch: prev_comm=grpcpp_sync_ser prev_pid=101 prev_prio=120 prev_state=R ==> next_comm=python next_pid=200 next_prio=120
          python   200/200   [000]  1001.450000: sched:sched_switch: prev_comm=python prev_pid=200 prev_prio=120 prev_state=S ==> next_comm=grpcpp_sync_ser next_pid=101 next_prio=120
          oxbowd   100/102   [001]  1001.500000: sched:sched_switch: prev_comm=oxbowd prev_pid=102 prev_prio=130 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 grpcpp_sync_ser   100/101   [000]  1002.000000: sched:sched_switch: prev_comm=grpcpp_sync_ser prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
         swapper     0/0     [001]  1002.000000: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=kworker/1:1 next_pid=50 next_prio=120
"""


def test_sched_wait_attributes_each_wait(tmp_path):
    trace = tmp_path / "sched.txt"
    trace.write_text(SCHED_TRACE)
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "bench" / "sched_wait.py"), str(trace),
                           "--pid", "100", "--client-pid", "200"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    busy, quiet = proc.stdout.split("background quiet:")
    assert "background busy: 1 s; grpc* threads waited for a CPU 1 times a second, 50.0 ms per s" in busy
    assert re.search(r"during those waits.*\n    (client|server, other threads): 50\.0\n    "
                     r"(client|server, other threads): 50\.0\n", busy), busy
    assert re.search(r"took the CPU from, ms of wait per s:\n    client: 50\.0\n", busy), busy
    assert quiet.startswith(" 1 s; grpc* threads waited for a CPU 1 times a second, 100.0 ms per s"), quiet
    assert re.search(r"during those waits.*\n    (client|idle): 100\.0\n    (client|idle): 100\.0\n", quiet), quiet
    assert re.search(r"took the CPU from, ms of wait per s:\n    client: 100\.0\n", quiet), quiet


def test_python_client_bench_small(tmp_path):
    """bench/python_client.py at 50 MB, one round: the client and raw pyarrow.flight side by
    side, both read back every row (the bench exits non-zero otherwise)."""
    if not (BUILD_DIR / "tools/oxbowd").is_file():
        pytest.fail(f"{BUILD_DIR / 'tools/oxbowd'} not found: build it or set OXBOW_BUILD_DIR")
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "python_client.py"), "--gb", "0.05",
         "--rounds", "1", "--workdir", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "OXBOW_BUILD_DIR": str(BUILD_DIR)})
    assert proc.returncode == 0, f"python_client exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    for operation in ("append", "read"):
        assert re.search(rf"^\| {operation} \| [0-9.]+; [0-9,]+ \| [0-9.]+; [0-9,]+ \| "
                         rf"{NUMBER} \| {NUMBER} \| {NUMBER}; {NUMBER} \|", proc.stdout, re.M), \
            proc.stdout


def test_registry_lookups_bench_small():
    """bench/registry_lookups.py with 50 schemas, one round: every id looked up from cold
    confluent-kafka clients (the bench exits non-zero when a lookup comes back empty)."""
    if not (BUILD_DIR / "tools/oxbowd").is_file():
        pytest.fail(f"{BUILD_DIR / 'tools/oxbowd'} not found: build it or set OXBOW_BUILD_DIR")
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "registry_lookups.py"), "--schemas", "50",
         "--rounds", "1"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "OXBOW_BUILD_DIR": str(BUILD_DIR)})
    assert proc.returncode == 0, f"registry_lookups exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    for threads in (1, 4):
        assert re.search(rf"^\| {threads} \| [0-9,]+ \| {NUMBER} \| {NUMBER} \| [0-9,]+ \| "
                         rf"[0-9,]+ \|$", proc.stdout, re.M), proc.stdout


def test_console_bench_small():
    """bench/console_bench.py with 20 tables, 2 s of CPU and one page load in Chromium: oxbowd
    without and with the console, the API's latencies and the page's own time."""
    if not (BUILD_DIR / "tools/oxbowd").is_file():
        pytest.fail(f"{BUILD_DIR / 'tools/oxbowd'} not found: build it or set OXBOW_BUILD_DIR")
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "console_bench.py"), "--tables", "20",
         "--seconds", "2", "--rounds", "1"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "OXBOW_BUILD_DIR": str(BUILD_DIR)})
    assert proc.returncode == 0, f"console_bench exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert re.search(rf"^\| the console adds \| {NUMBER} \|", proc.stdout, re.M), proc.stdout
    assert re.search(r"^\| GET /api/tables \| [0-9.]+ \| [0-9.]+ \|$", proc.stdout, re.M), \
        proc.stdout
    assert re.search(r"^\| the tables page in Chromium, best; median \| [0-9]+ \| [0-9]+ \|$",
                     proc.stdout, re.M), proc.stdout

