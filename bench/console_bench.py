#!/usr/bin/env python3
"""The web console with many tables: how long its pages take, and what it costs oxbowd.

    .venv/bin/python bench/console_bench.py [--tables 1000] [--seconds 30] [--rounds 5]

Makes --tables log tables (3 buckets, 100 rows each, lake off) in one data dir, then starts
oxbowd on it twice, side by side in one run:
  - without the console (--console-listen ''), idle for --seconds: oxbowd's CPU;
  - with the console, a client asking /api/overview and /api/tables (its first page of 100
    tables) once a second for --seconds (an open page refreshing once a second asks one of the
    two): oxbowd's CPU again.
The difference is what the console adds, in % of one core. Then, on the second server, the
latency of each API call (p50, p99 of --rounds x 10) and of a whole page load in Debian's
Chromium (Selenium navigates to the tables page; the time is the page's own, from the
navigation's start to its first drawing, performance.now(); best and median of --rounds). Peak RSS of oxbowd with and without the console.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request

import pyarrow as pa

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "bench"))
from server_bench import Oxbowd, RssSampler  # noqa: E402

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])


def cpu_seconds(pid: int) -> float:
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def console_port(log: pathlib.Path) -> int:
    """The console's port, from oxbowd's log (it starts the console after Flight answers)."""
    deadline = time.monotonic() + 15
    while True:
        found = re.findall(r"serving the console on \S+ \(port (\d+)\)", log.read_text())
        if found:
            return int(found[-1])
        if time.monotonic() > deadline:
            sys.exit("console_bench.py: oxbowd did not start its console within 15 s")
        time.sleep(0.02)


def get_ms(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as response:
        json.loads(response.read())
    return (time.perf_counter() - start) * 1000


def cpu_percent(server: Oxbowd, seconds: float, poll=None) -> float:
    """oxbowd's CPU (% of one core) over `seconds`, calling poll() once a second meanwhile."""
    start_cpu, start = cpu_seconds(server.proc.pid), time.monotonic()
    while time.monotonic() - start < seconds:
        tick = time.monotonic()
        if poll:
            poll()
        time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
    return 100 * (cpu_seconds(server.proc.pid) - start_cpu) / (time.monotonic() - start)


def page_loads_ms(url: str, tables: int, rounds: int) -> list[float]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    with tempfile.TemporaryDirectory() as profile:
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update",
                     "--disable-sync", f"--user-data-dir={profile}"):
            options.add_argument(flag)
        browser = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
        try:
            times = []
            for _ in range(rounds):
                browser.get("about:blank")
                browser.get(url + "/#/tables")
                WebDriverWait(browser, 30, poll_frequency=0.01).until(lambda b: b.find_elements(
                    By.CSS_SELECTOR, "[data-field='table_count']") and b.find_element(
                    By.CSS_SELECTOR, "[data-field='table_count']").text == f"{tables:,}")
                # The page notes when it first drew, from the navigation's start.
                times.append(float(browser.find_element(By.TAG_NAME, "body").get_attribute(
                    "data-first-drawn-ms")))
            return times
        finally:
            browser.quit()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="oxbow-console-bench-") as tmp:
        data, log = pathlib.Path(tmp) / "data", pathlib.Path(tmp) / "oxbowd.log"
        fields = [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in SCHEMA]
        maker = Oxbowd(data, log, ("--console-listen", ""))
        batch = pa.record_batch({"id": list(range(100)), "name": ["x"] * 100}, schema=SCHEMA)
        import pyarrow.flight as fl
        for i in range(args.tables):
            name = f"bench.t{i:05d}"
            maker.action("create_table", {"table": name, "schema": {"fields": fields},
                                          "buckets": 3,
                                          "properties": {"lake.enabled": "false"}})
            writer, acks = maker.client.do_put(fl.FlightDescriptor.for_path("bench", f"t{i:05d}"),
                                               SCHEMA)
            writer.write_batch(batch)
            writer.done_writing()
            acks.read()
            writer.close()
        if maker.stop() != 0:
            sys.exit("console_bench.py: oxbowd did not stop cleanly")

        without = Oxbowd(data, log, ("--console-listen", ""))
        rss = RssSampler(without.proc.pid)
        time.sleep(5)  # past the start
        cpu_without = cpu_percent(without, args.seconds)
        rss_without = rss.stop()
        without.stop()

        with_console = Oxbowd(data, log, ("--console-listen", "127.0.0.1:0"))
        url = f"http://127.0.0.1:{console_port(log)}"
        rss = RssSampler(with_console.proc.pid)
        time.sleep(5)
        calls: dict[str, list[float]] = {"/api/overview": [], "/api/tables": []}

        def poll() -> None:
            for path in calls:
                calls[path].append(get_ms(url + path))

        cpu_with = cpu_percent(with_console, args.seconds, poll)
        for _ in range(args.rounds * 10):
            poll()
        loads = page_loads_ms(url, args.tables, args.rounds)
        rss_with = rss.stop()
        if with_console.stop() != 0:
            sys.exit("console_bench.py: oxbowd did not stop cleanly")

    print(f"{args.tables:,} tables of 3 buckets; CPU over {args.seconds:.0f} s; "
          f"{args.rounds} page loads")
    print()
    print("| oxbowd | CPU (% of a core) | peak RSS (MB) |")
    print("|---|---:|---:|")
    print(f"| without the console | {cpu_without:.2f} | {rss_without / 1e6:,.0f} |")
    print(f"| with the console, polled once a second | {cpu_with:.2f} | {rss_with / 1e6:,.0f} |")
    print(f"| the console adds | {cpu_with - cpu_without:.2f} | |")
    print()
    print("| request | p50 (ms) | p99 (ms) |")
    print("|---|---:|---:|")
    for path, times in calls.items():
        times.sort()
        print(f"| GET {path} | {statistics.median(times):.1f} "
              f"| {times[max(0, int(len(times) * 0.99) - 1)]:.1f} |")
    print(f"| the tables page in Chromium, best; median | {min(loads):.0f} "
          f"| {statistics.median(loads):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
