"""The web console (docs/console.md) in a real Chromium: Debian's chromium, driven by Selenium
through Debian's chromedriver. Each page loads with no error in the browser's console and shows
the figures that Flight (describe_table, DoGet) and the console's JSON API give for a scripted
workload; the charts move while rows are written; a user without a login, or without a grant on
a table, is refused it; the page carries on across a SIGKILL and restart of oxbowd. Screenshots
of each page are kept under build/test-artifacts/console/."""

from __future__ import annotations

import base64
import http.client
import json
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
from oxbowtest.cluster import ROW_SCHEMA, Cluster, wait_for
from oxbowtest.flight import action, put, read_ticket
from oxbowtest.kafka import (bootstrap, create_topic, group_consumer, new_topic, poll_until,
                             produce)
from oxbowtest.lake import iceberg_table, wait_lake
from oxbowtest.server import REPO_ROOT

from test_kafka_java import fetch_kafka, tool  # noqa: E402  (tests/integration is on the path)

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
    """The text of the page's [data-field=name] once it is drawn (read in one script: a redraw
    may replace the element at any moment)."""
    return WebDriverWait(browser, timeout).until(lambda b: b.execute_script(
        "const e = document.querySelector(`[data-field='${arguments[0]}']`);"
        "return e === null ? null : e.innerText;", name))


def wait_text(browser, name: str, expected: str, timeout: float = 15) -> None:
    try:
        WebDriverWait(browser, timeout).until(lambda b: field(b, name) == expected)
    except TimeoutException:
        raise AssertionError(f"[data-field={name}] shows {field(browser, name)!r}, not "
                             f"{expected!r}") from None


def show(browser, url: str, screenshot: str | None = None) -> None:
    browser.get("about:blank")  # the last page stops polling (its server may be gone)
    browser.get_log("browser")  # and what it logged is dropped
    browser.get(url)
    WebDriverWait(browser, 15).until(
        lambda b: b.find_element(By.ID, "status").text.startswith("updated"))
    if screenshot:
        browser.save_screenshot(str(ARTIFACTS / screenshot))


def screenshot(browser, name: str, section: str) -> None:
    """A screenshot with `section` (a CSS selector) near the top of the window, its heading
    above it."""
    browser.execute_script("document.querySelector(arguments[0]).scrollIntoView();"
                           "window.scrollBy(0, -70);", section)
    browser.save_screenshot(str(ARTIFACTS / name))


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
    for part in ("rows", "lake", "lookup?key=%7B%7D"):
        assert requests.get(f"{base}/api/tables/shop.closed/{part}", auth=reader,
                            timeout=10).status_code == 403
    assert requests.get(base + "/api/tables/shop.open/rows", auth=reader, timeout=10).ok
    # Properties: admin only.
    change = {"properties": {"owner": "someone"}}
    assert requests.post(base + "/api/tables/shop.open/properties", json=change, auth=reader,
                         timeout=10).status_code == 403
    assert requests.post(base + "/api/tables/shop.open/properties", json=change,
                         timeout=10).status_code == 401
    assert "owner" not in requests.get(base + "/api/tables/shop.open", auth=reader,
                                       timeout=10).json()["properties"]
    assert requests.post(base + "/api/tables/shop.open/properties", json=change, auth=admin,
                         timeout=10).json()["properties"]["owner"] == "someone"
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


def test_a_cluster_shows_its_servers_leaders_isr_and_moves(oxbowd_bin, zookeeper, tmp_path,
                                                           browser):
    """Four servers: the overview and a table page show each bucket's leader as cluster_status
    gives it; the cluster page shows a (throttled) bucket move while it is under way, then the
    buckets a SIGKILLed server leaves short of their replicas, as cluster_status counts them,
    and none once it is back."""
    cluster = Cluster(oxbowd_bin, zookeeper.chroot("console"), tmp_path, size=4,
                      extra_args=("--replication-throttle-bytes", "300000")).start()
    try:
        cluster.create_table("shop.replicated", buckets=3)
        leaders = [cluster.leader_of("shop.replicated", b) for b in range(3)]
        watcher = cluster.servers[1]
        base = console(watcher)
        overview = requests.get(base + "/api/overview", timeout=10).json()
        assert overview["mode"] == "cluster"
        assert sorted(s["id"] for s in overview["servers"]) == [1, 2, 3, 4]
        assert sum(s["controller"] for s in overview["servers"]) == 1
        page = requests.get(base + "/api/tables/shop.replicated", timeout=10).json()
        assert [b["leader"] for b in page["buckets"]] == leaders
        assert [sorted(b["replicas"]) for b in page["buckets"]] == [
            sorted(cluster.bucket("shop.replicated", b)["replicas"]) for b in range(3)]
        # A move of a bucket of about 1.5 MB onto the server without a replica, paced at 0.3 MB/s.
        cluster.create_table("shop.moving")
        leader = cluster.leader_of("shop.moving")
        filler = "x" * 300
        for n in range(5):
            batch = pa.record_batch([pa.array(range(n * 1000, (n + 1) * 1000), pa.int64()),
                                     pa.array([filler] * 1000)], schema=ROW_SCHEMA)
            put(cluster.client(leader), "shop.moving", [batch], ROW_SCHEMA)
        state = cluster.wait_in_sync("shop.moving")
        new = next(i for i in sorted(cluster.servers) if i not in state["replicas"])
        target = [leader] + [i for i in state["replicas"] if i != leader][:1] + [new]
        action(cluster.client(leader), "reassign_bucket",
               {"table": "shop.moving", "bucket": 0, "replicas": target})
        show(browser, base + "/#/cluster")
        wait_text(browser, "reassignments", "1")
        moving = cells(browser, "[data-part-name=reassignments]")
        assert moving[0][:2] == ["shop.moving", "0"]
        assert moving[0][-1] == ", ".join(map(str, target))
        browser.save_screenshot(str(ARTIFACTS / "cluster-moving.png"))
        wait_text(browser, "reassignments", "0", timeout=60)
        # The last rows are the leader's, as Flight reads them; any other server's console
        # names the leader.
        state = cluster.wait_in_sync("shop.moving")
        newest = requests.get(console(cluster.servers[state["leader"]]) +
                              "/api/tables/shop.moving/rows", timeout=10).json()
        flight = cluster.read_bucket("shop.moving", 0)
        assert [(r["offset"], r["row"]["id"]) for r in newest["rows"]] == flight[-20:]
        for i in sorted(set(cluster.servers) - {state["leader"]}):
            refused = requests.get(console(cluster.servers[i]) + "/api/tables/shop.moving/rows",
                                   timeout=10)
            assert refused.status_code == 503
            assert json.loads(refused.json()["error"])["leader"] == state["leader"]
        if state["leader"] != 1:
            show(browser, base + "/#/tables/shop.moving")
            assert "leads bucket" in field(browser, "rows_elsewhere")
            show(browser, base + "/#/cluster")

        # A server killed: the buckets it held are short of a replica until it is back.
        victim = next(i for i in sorted(cluster.servers) if i != 1 and i != leader)
        cluster.kill(victim)

        def short() -> int:
            return sum(1 for b in cluster.status(1)["buckets"]
                       if len(b["isr"]) < len(b["replicas"]))
        wait_for(lambda: short() > 0, timeout=30, what="the ISRs to shrink")
        WebDriverWait(browser, 30).until(lambda b: field(b, "under_replicated") == str(short()))
        assert field(browser, "servers") == "3"
        shown = {tuple(row[:2]) for row in cells(browser, "[data-part-name=under_replicated]")}
        assert shown == {(b["table"], str(b["bucket"])) for b in cluster.status(1)["buckets"]
                         if len(b["isr"]) < len(b["replicas"])}
        browser.save_screenshot(str(ARTIFACTS / "cluster.png"))
        cluster.restart(victim)
        wait_text(browser, "under_replicated", "0", timeout=60)
        assert errors_logged(browser) == []
    finally:
        cluster.stop()


def cells(browser, selector: str) -> list[list[str]]:
    """The text of each row's cells of the tables matching `selector` (headers left out), read
    in one script so that a redraw cannot come between two cells."""
    return browser.execute_script(
        "return [...document.querySelectorAll(arguments[0] + ' tr')]"
        "  .map((tr) => [...tr.querySelectorAll('td')].map((td) => td.innerText.trim()))"
        "  .filter((row) => row.length > 0);", selector)


def test_a_tables_rows_lookup_lake_and_properties(make_server, browser):
    """The table page's last rows (paged, column-pruned) are the rows a Flight DoGet of the
    bucket gives, its lookup form answers what a Flight lookup does, its lake's snapshots and
    files are what pyiceberg reads from the table's metadata, and a property set in the page is
    what describe_table then shows."""
    server = make_server(extra_args=("--console-sample-ms", SAMPLE_MS))
    server.create_table("shop.orders", SCHEMA, buckets=2, bucket_key=["id"],
                        properties={"lake.enabled": "true", "lake.freshness": "1s"})
    server.put("shop.orders", [rows(0, 300)])
    server.create_table("shop.people", SCHEMA, primary_key=["id"], buckets=2)
    server.put("shop.people", [rows(0, 40)])
    wait_lake(server, "shop.orders")
    base = console(server)

    show(browser, base + "/#/tables/shop.orders")
    bucket = read_ticket(server.client, table="shop.orders", bucket=0)
    expected = [[str(len(bucket) - 20 + i), str(r["id"]), f'"{r["name"]}"']
                for i, r in enumerate(bucket.slice(len(bucket) - 20).to_pylist())]
    WebDriverWait(browser, 15).until(lambda b: cells(b, "table.rows") == expected)
    screenshot(browser, "table-rows.png", "[data-input=bucket]")
    # Older rows: the 20 before.
    browser.find_element(By.CSS_SELECTOR, "[data-action=older]").click()
    older = [[str(len(bucket) - 40 + i), str(r["id"]), f'"{r["name"]}"']
             for i, r in enumerate(bucket.slice(len(bucket) - 40, 20).to_pylist())]
    WebDriverWait(browser, 15).until(lambda b: cells(b, "table.rows") == older)
    # Column-pruned: without `name` the server is asked for `id` only.
    browser.find_element(By.CSS_SELECTOR, "input[data-column=name]").click()
    WebDriverWait(browser, 15).until(
        lambda b: cells(b, "table.rows") == [row[:2] for row in older])
    api = requests.get(base + "/api/tables/shop.orders/rows",
                       params={"bucket": 0, "limit": 5, "columns": "name"}, timeout=10).json()
    assert api["columns"] == ["name"]
    assert [r["row"] for r in api["rows"]] == [{"name": n} for n in
                                                bucket.column("name").to_pylist()[-5:]]
    assert requests.get(base + "/api/tables/shop.orders/rows", params={"columns": "nope"},
                        timeout=10).status_code == 400

    # The lake: what pyiceberg reads of the same metadata file.
    lake_api = requests.get(base + "/api/tables/shop.orders/lake", timeout=10).json()
    iceberg = iceberg_table(lake_api["metadata_location"])
    assert sorted(int(s["snapshot_id"]) for s in lake_api["snapshots"]) == sorted(
        s.snapshot_id for s in iceberg.metadata.snapshots)
    assert lake_api["current_snapshot_id"] == str(iceberg.metadata.current_snapshot_id)
    shown = [row[0] for row in cells(browser, "[data-part-name=snapshots]")]
    assert shown == [s["snapshot_id"] for s in lake_api["snapshots"]]  # exact, not as a double
    planned = {task.file.file_path: task.file.record_count for task in iceberg.scan().plan_files()}
    assert {f["path"]: f["records"] for f in lake_api["files"]} == planned
    assert lake_api["records"] == sum(planned.values()) == 300
    wait_text(browser, "lake_records", "300")
    assert len(cells(browser, "[data-part-name=files]")) == len(planned)
    screenshot(browser, "table-lake.png", "[data-part=lake]")

    # A lookup, as Flight's.
    show(browser, base + "/#/tables/shop.people")
    WebDriverWait(browser, 15).until(lambda b: b.find_elements(By.CSS_SELECTOR, "[data-key=id]"))
    browser.find_element(By.CSS_SELECTOR, "[data-key=id]").send_keys("17")
    browser.find_element(By.CSS_SELECTOR, "[data-form=lookup] button").click()
    flight = read_ticket(server.client, table="shop.people", lookup={"id": [17]}).to_pylist()
    assert flight == [{"id": 17, "name": "n17"}]
    WebDriverWait(browser, 15).until(
        lambda b: cells(b, "table.found") == [["17", '"n17"']])
    screenshot(browser, "table-lookup.png", "[data-part=lookup]")
    missing = requests.get(base + "/api/tables/shop.people/lookup",
                           params={"key": '{"id": 4000}'}, timeout=10).json()
    assert missing == {"found": False}
    assert requests.get(base + "/api/tables/shop.orders/lookup", params={"key": '{"id": 1}'},
                        timeout=10).status_code == 400

    # A property set in the page (no --auth: everyone may, as on Flight).
    browser.find_element(By.CSS_SELECTOR, "[data-input=property_key]").send_keys("owner")
    browser.find_element(By.CSS_SELECTOR, "[data-input=property_value]").send_keys("team-a")
    browser.find_element(By.CSS_SELECTOR, "[data-form=properties] button").click()
    wait_text(browser, "properties_result", "saved")
    assert server.describe("shop.people")["properties"]["owner"] == "team-a"
    WebDriverWait(browser, 15).until(
        lambda b: b.find_elements(By.CSS_SELECTOR, "tr[data-property=owner]"))
    refused = requests.post(base + "/api/tables/shop.people/properties",
                            data='{"properties": {"owner": "x"}}', timeout=10)
    assert refused.status_code == 415  # no JSON content type: what a form of another site sends
    assert requests.get(base + "/api/tables/shop.people/properties", timeout=10).status_code == 405
    bad = requests.post(base + "/api/tables/shop.people/properties",
                        json={"properties": {"log.retention": "soon"}}, timeout=10)
    assert bad.status_code == 400 and "log.retention" in bad.json()["error"]
    assert server.describe("shop.people")["properties"]["owner"] == "team-a"
    assert errors_logged(browser) == []


def test_the_kafka_page_shows_what_kafka_consumer_groups_describes(make_server, browser):
    """Two consumers of a group read a three-partition topic and commit, then more arrive; the
    Kafka page
    shows each partition's committed offset, log end, lag and owner exactly as Kafka's own
    `kafka-consumer-groups --describe` (ConsumerGroupCommand 4.4) prints them."""
    classpath = fetch_kafka()
    server = make_server(extra_args=("--console-sample-ms", SAMPLE_MS))
    topic = new_topic()
    create_topic(server, topic, 3)
    produce(server, topic, [(i % 3, f"k{i}".encode(), f"v{i}".encode(), None)
                            for i in range(300)])
    group = "g-" + topic
    stop = threading.Event()
    poller = None
    consumers = [group_consumer(server, group, topic, **{"client.id": f"reader-{n}"})
                 for n in range(2)]
    try:
        got = poll_until(consumers, 300)
        assert sum(len(v) for v in got.values()) >= 300
        for consumer in consumers:
            consumer.commit(asynchronous=False)
        produce(server, topic, [(i % 3, b"k", b"later", None) for i in range(60)])
        # The members stay in the group (polling, never committing again) while they are looked at.
        poller = threading.Thread(target=lambda: [c.poll(0.1) for _ in iter(stop.is_set, True)
                                                  for c in consumers])
        poller.start()
        out = tool(classpath, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                   "--bootstrap-server", bootstrap(server), "--describe", "--group", group)
        # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
        described = sorted(line.split()[1:] for line in out.splitlines()
                           if line.startswith(group + " "))
        assert len(described) == 3, out
        show(browser, console(server) + "/#/kafka")
        shown = lambda n: "–" if n == "-" else f"{int(n):,}"  # noqa: E731
        expected = [[t, p, shown(c), shown(e), shown(lag), member, host, client]
                    for t, p, c, e, lag, member, host, client in described]
        assert all(int(row[4]) >= 20 for row in described)  # what came after the commits
        selector = f"section[data-group='{group}'] table:first-of-type"
        try:
            WebDriverWait(browser, 20).until(lambda b: sorted(cells(b, selector)) == expected)
        except TimeoutException:
            raise AssertionError(f"the page shows {sorted(cells(browser, selector))}, "
                                 f"kafka-consumer-groups {expected}") from None
        browser.save_screenshot(str(ARTIFACTS / "kafka.png"))
        api = requests.get(console(server) + "/api/kafka", timeout=10).json()
        seen = next(g for g in api["groups"] if g["group_id"] == group)
        assert seen["state"] == "Stable" and len(seen["members"]) == 2
        assert seen["lag"] == sum(int(row[4]) for row in described)
        listed = next(t for t in api["topics"] if t["topic"] == topic)
        assert listed["partitions"] == 3 and listed["messages"] == 360
        assert errors_logged(browser) == []
    finally:
        stop.set()
        if poller:
            poller.join()
        for consumer in consumers:
            consumer.close()
