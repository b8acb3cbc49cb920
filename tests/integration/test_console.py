"""The web console (docs/console.md) in a real Chromium: Debian's chromium, driven by Selenium
through Debian's chromedriver. Each page loads with no error in the browser's console and shows
the figures that Flight (describe_table, DoGet) and the console's JSON API give for a scripted
workload; the charts move while rows are written; a user without a login, or without a grant on
a table, is refused it; the page carries on across a SIGKILL and restart of oxbowd. Screenshots
of each page are kept under build/test-artifacts/console/."""

from __future__ import annotations

import base64
import http.client
import shutil
import threading
import time

import pyarrow as pa
import pytest
import requests
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from oxbowtest.auth import add_user
from oxbowtest.cluster import Cluster
from oxbowtest.flight import put
from oxbowtest.server import REPO_ROOT

ARTIFACTS = REPO_ROOT / "build" / "test-artifacts" / "console"
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
SAMPLE_MS = "300"  # the console's sampling, fast enough for a test to see a chart move


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.fail("chromium and chromedriver are missing: run scripts/setup.sh")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1280,1000",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    chrome = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    yield chrome
    chrome.quit()


def console(server) -> str:
    return f"http://127.0.0.1:{server.console_port}"


def log_in(browser, user: str | None, password: str = "") -> None:
    """Every request of the browser from now on carries this user's Basic login (None: none)."""
    browser.execute_cdp_cmd("Network.enable", {})
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    browser.execute_cdp_cmd("Network.setExtraHTTPHeaders",
                            {"headers": {"Authorization": f"Basic {token}"} if user else {}})


def field(browser, name: str, timeout: float = 15) -> str:
    """The text of the page's [data-field=name] once it is drawn."""
    return WebDriverWait(browser, timeout).until(
        lambda b: (b.find_elements(By.CSS_SELECTOR, f"[data-field='{name}']") or [None])[0]).text


def wait_text(browser, name: str, expected: str, timeout: float = 15) -> None:
    try:
        WebDriverWait(browser, timeout).until(lambda b: field(b, name) == expected)
    except TimeoutException:
        raise AssertionError(f"[data-field={name}] shows {field(browser, name)!r}, not "
                             f"{expected!r}") from None


def show(browser, url: str, screenshot: str | None = None) -> None:
    browser.get(url)
    WebDriverWait(browser, 15).until(
        lambda b: b.find_element(By.ID, "status").text.startswith("updated"))
    if screenshot:
        browser.save_screenshot(str(ARTIFACTS / screenshot))


def errors_logged(browser) -> list[dict]:
    return [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def records(server, table: str) -> tuple[int, list[int]]:
    """What Flight's describe_table says: the log records of the table and each bucket's end."""
    buckets = server.describe(table)["bucket_offsets"]
    return (sum(b["next_offset"] - b["earliest_offset"] for b in buckets),
            [b["next_offset"] for b in sorted(buckets, key=lambda b: b["bucket"])])


def rows(first: int, count: int) -> pa.RecordBatch:
    return pa.record_batch({"id": list(range(first, first + count)),
                            "name": [f"n{i}" for i in range(first, first + count)]},
                           schema=SCHEMA)


def test_each_page_shows_what_flight_shows_and_moves_live(make_server, browser):
    server = make_server(extra_args=("--console-sample-ms", SAMPLE_MS))
    server.create_table("shop.events", SCHEMA, buckets=3, bucket_key=["id"])
    server.create_table("shop.users", SCHEMA, primary_key=["id"], buckets=2)
    server.put("shop.events", [rows(0, 500), rows(500, 700)])
    server.put("shop.users", [rows(0, 40)])

    show(browser, console(server) + "/#/", "overview.png")
    assert field(browser, "tables") == "2"
    events, _ = records(server, "shop.events")
    users, _ = records(server, "shop.users")
    assert events == 1200 and users == 40
    wait_text(browser, "log_records", f"{events + users:,}")
    api = requests.get(console(server) + "/api/overview", timeout=10).json()
    assert api["log_records"] == events + users and api["mode"] == "embedded"

    # The charts move: while rows are written the rate shown is above zero, and the total
    # follows once they stop.
    stop = threading.Event()

    def write() -> None:
        client = server.new_client()
        for i in range(200):
            if stop.is_set():
                break
            put(client, "shop.events", [rows(1200 + 100 * i, 100)], SCHEMA)
            time.sleep(0.05)
        client.close()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        WebDriverWait(browser, 15).until(
            lambda b: field(b, "put_rows_per_s") not in ("0/s", ""))
        browser.save_screenshot(str(ARTIFACTS / "overview-live.png"))
    finally:
        stop.set()
        writer.join()
    written, _ = records(server, "shop.events")
    assert written > events
    wait_text(browser, "log_records", f"{written + users:,}")

    show(browser, console(server) + "/#/tables", "tables.png")
    wait_text(browser, "table_count", "2")
    row = browser.find_element(By.CSS_SELECTOR, "tr[data-table='shop.events']")
    assert row.find_element(By.CSS_SELECTOR, "[data-field='log_records']").text == f"{written:,}"

    show(browser, console(server) + "/#/tables/shop.events", "table.png")
    wait_text(browser, "table_name", "shop.events")
    _, ends = records(server, "shop.events")
    shown = [browser.find_element(By.CSS_SELECTOR, f"tr[data-bucket='{b}'] [data-field="
                                                  f"'next_offset']").text for b in range(3)]
    assert shown == [f"{end:,}" for end in ends]
    assert field(browser, "kind") == "log table"

    show(browser, console(server) + "/#/tables/shop.users", "table-primary-key.png")
    wait_text(browser, "kind", "primary-key table")
    assert errors_logged(browser) == []


def test_logins_and_grants_decide_what_a_user_sees(make_server, browser, tmp_path):
    data = tmp_path / "secured"
    data.mkdir()
    add_user(data, "admin", "*=admin")
    add_user(data, "reader", "shop.open=read")
    plain = make_server(data_dir=data)  # the tables first, without logins
    for table in ("shop.open", "shop.closed"):
        plain.create_table(table, SCHEMA)
    plain.stop()
    server = make_server(extra_args=("--auth", "--console-sample-ms", SAMPLE_MS), data_dir=data)
    base = console(server)
    refused = requests.get(base + "/", timeout=10)
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"].startswith("Basic")
    assert requests.get(base + "/api/overview", auth=("reader", "wrong"),
                        timeout=10).status_code == 401
    admin, reader = ("admin", "pw-admin-123"), ("reader", "pw-reader-123")
    listed = lambda login: [t["name"] for t in requests.get(  # noqa: E731
        base + "/api/tables", auth=login, timeout=10).json()["tables"]]
    assert sorted(listed(admin)) == ["shop.closed", "shop.open"]
    assert listed(reader) == ["shop.open"]
    assert requests.get(base + "/api/tables/shop.closed", auth=reader,
                        timeout=10).status_code == 403
    assert requests.get(base + "/api/tables/shop.open", auth=reader, timeout=10).ok
    assert requests.post(base + "/api/tables", auth=admin, timeout=10).status_code == 405
    # In the browser, the reader sees the table it may read only.
    log_in(browser, *reader)
    try:
        show(browser, base + "/#/tables", "tables-reader.png")
        wait_text(browser, "table_count", "1")
        assert browser.find_elements(By.CSS_SELECTOR, "tr[data-table='shop.closed']") == []
        assert errors_logged(browser) == []
    finally:
        log_in(browser, None)


def test_the_page_carries_on_across_a_restart(make_server, browser):
    server = make_server(extra_args=("--console-sample-ms", SAMPLE_MS))
    server.stable_ports = True
    server.create_table("shop.kept", SCHEMA)
    server.put("shop.kept", [rows(0, 300)])
    show(browser, console(server) + "/#/tables")
    wait_text(browser, "table_count", "1")
    server.kill()
    WebDriverWait(browser, 15).until(
        lambda b: not b.find_element(By.ID, "status").text.startswith("updated"))
    server.start()
    server.put("shop.kept", [rows(300, 200)])
    WebDriverWait(browser, 20).until(
        lambda b: b.find_element(By.ID, "status").text.startswith("updated"))
    row = browser.find_element(By.CSS_SELECTOR, "tr[data-table='shop.kept']")
    assert row.find_element(By.CSS_SELECTOR, "[data-field='log_records']").text == "500"
    browser.save_screenshot(str(ARTIFACTS / "after-restart.png"))


def test_assets_and_errors_over_plain_http(make_server):
    server = make_server()
    base = console(server)
    page = requests.get(base + "/", timeout=10)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    assert requests.get(base + "/console.js", timeout=10).headers["Content-Type"].startswith(
        "text/javascript")
    assert requests.get(base + "/api/tables/no.such", timeout=10).status_code == 404
    assert requests.get(base + "/api/nothing", timeout=10).status_code == 404
    raw = http.client.HTTPConnection("127.0.0.1", server.console_port, timeout=10)
    raw.request("GET", "/api/tables/%zz")  # as sent: requests would escape the '%'
    assert raw.getresponse().status == 400
    raw.close()


def test_a_cluster_shows_its_servers_and_each_buckets_leader(oxbowd_bin, zookeeper, tmp_path):
    cluster = Cluster(oxbowd_bin, zookeeper.chroot("console"), tmp_path).start()
    try:
        cluster.create_table("shop.replicated", buckets=3)
        leaders = [cluster.leader_of("shop.replicated", b) for b in range(3)]
        base = console(cluster.servers[2])
        overview = requests.get(base + "/api/overview", timeout=10).json()
        assert overview["mode"] == "cluster"
        assert sorted(s["id"] for s in overview["servers"]) == [1, 2, 3]
        assert sum(s["controller"] for s in overview["servers"]) == 1
        page = requests.get(base + "/api/tables/shop.replicated", timeout=10).json()
        assert [b["leader"] for b in page["buckets"]] == leaders
    finally:
        cluster.stop()
