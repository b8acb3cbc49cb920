"""The Grafana dashboard of contrib/grafana/oxbow.json (docs/metrics.md#grafana): a dashboard
Grafana can import, whose every query names series that oxbowd serves, with the type the query
treats them as (rate() of counters and histogram buckets, gauges as they are), checked against
the /metrics pages of a standalone oxbowd and of a three-server cluster after a workload; with
Prometheus installed (Debian's `prometheus`, scripts/setup.sh), promtool parses every query and
a real Prometheus scraping those servers answers each of them with at least one series."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import urllib.parse
import urllib.request

import pyarrow as pa
import pyarrow.flight as fl
import pytest

from oxbowtest.cluster import ROW_SCHEMA, Cluster, wait_for
from oxbowtest.flight import schema_json
from oxbowtest.lake import wait_lake
from oxbowtest.metrics import sample_types
from oxbowtest.server import REPO_ROOT, OxbowServer, free_port

DASHBOARD = REPO_ROOT / "contrib" / "grafana" / "oxbow.json"
METRICS_DOC = REPO_ROOT / "docs" / "metrics.md"
DATASOURCE = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}

# What Grafana puts in place of its variables when the test runs a query itself: "All" of a
# variable is its allValue, `.*`; the interval variables become one minute (Prometheus below
# scrapes every second, so a minute's range holds many samples).
GRAFANA_BUILTINS = {"__rate_interval": "1m", "__interval": "1m", "__range": "1m",
                    "__range_s": "60", "__interval_ms": "60000"}

# Series oxbowd serves that the dashboard leaves off on purpose (none so far): a new series
# fails test_the_dashboard_shows_every_series until it gets a panel or a line here.
LEFT_OFF: set[str] = set()

PROMQL_KEYWORDS = {"and", "or", "unless", "bool", "by", "without", "on", "ignoring",
                   "group_left", "group_right", "offset", "inf", "nan", "atan2"}
RATE_FUNCTIONS = ("rate", "irate", "increase")
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


# --- reading the dashboard ---------------------------------------------------------------------

def load_dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def all_panels(panels: list[dict]):
    """Every panel, those inside collapsed rows included."""
    for panel in panels:
        yield panel
        yield from all_panels(panel.get("panels", []))


def variable_query(variable: dict) -> str:
    query = variable["query"]
    return query["query"] if isinstance(query, dict) else query


def queries(dashboard: dict) -> list[tuple[str, str]]:
    """(where, query) of every panel target and every query variable."""
    found = []
    for panel in all_panels(dashboard["panels"]):
        for target in panel.get("targets", []):
            found.append((f"panel {panel['id']} {panel['title']!r} {target.get('refId')}",
                          target.get("expr", "")))
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            found.append((f"variable ${variable['name']}", variable_query(variable)))
    return found


def _balanced(text: str, open_at: int) -> int:
    """The index just past the parenthesis that closes the one at `open_at`."""
    depth = 0
    for i in range(open_at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    raise ValueError(f"unbalanced parentheses in {text!r}")


def _split_arguments(inner: str) -> list[str]:
    """The top-level comma-separated arguments of a call's inside."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(inner):
        depth += {"(": 1, "{": 1, "[": 1, ")": -1, "}": -1, "]": -1}.get(c, 0)
        if c == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return [p.strip() for p in parts]


def promql_of(query: str) -> str:
    """The PromQL in a query: a panel's expr as it is; of a variable's Grafana function
    (label_values(selector, label), query_result(expr)) the selector or expression it runs.
    A variable query of another form (label_values(label), metrics(...)) names no metric and
    returns ""."""
    call = re.match(r"\s*(label_values|query_result|label_names|metrics)\s*\(", query)
    if not call:
        return query
    inner = query[call.end() - 1:_balanced(query, call.end() - 1)][1:-1]
    if call.group(1) == "query_result":
        return inner
    if call.group(1) == "label_values":
        args = _split_arguments(inner)
        return args[0] if len(args) == 2 else ""
    return ""


def _strip(expr: str) -> str:
    """The expression without string literals, label matchers, ranges and grouping labels:
    what is left names only metrics, functions, keywords and numbers."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    expr = re.sub(r"\{[^}]*\}", " ", expr)
    expr = re.sub(r"\[[^\]]*\]", " ", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    return re.sub(r"\$\{?\w+\}?", " ", expr)


def metric_names(expr: str) -> set[str]:
    """Every metric name a PromQL expression selects (identifiers that are not functions,
    aggregations or keywords). A name given as {__name__=...} is refused: the dashboard names
    its metrics plainly, so this checker sees them."""
    assert "__name__" not in expr, f"name metrics plainly, not by __name__: {expr}"
    names = set()
    for m in re.finditer(r"(?<![\w.:])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?", _strip(expr)):
        if m.group(2) is None and m.group(1).lower() not in PROMQL_KEYWORDS:
            names.add(m.group(1))
    return names


def names_under(expr: str, functions: tuple[str, ...]) -> set[str]:
    """Metric names inside calls of `functions` (e.g. what rate() is taken of)."""
    names = set()
    for m in re.finditer(r"\b(" + "|".join(functions) + r")\s*\(", expr):
        names |= metric_names(expr[m.end() - 1:_balanced(expr, m.end() - 1)])
    return names


def names_outside(expr: str, functions: tuple[str, ...]) -> set[str]:
    """Metric names outside every call of `functions`."""
    while m := re.search(r"\b(" + "|".join(functions) + r")\s*\(", expr):
        expr = expr[:m.start()] + " 0 " + expr[_balanced(expr, m.end() - 1):]
    return metric_names(expr)


def family_of(name: str, types: dict[str, str]) -> str:
    """The family a sample name belongs to, as docs/metrics.md names it: a histogram's
    _bucket/_sum/_count map to the histogram; counters keep their _total."""
    if types.get(name) == "histogram":
        for suffix in HISTOGRAM_SUFFIXES:
            if name.endswith(suffix):
                return name[:-len(suffix)]
    return name


def problems(dashboard: dict, types: dict[str, str]) -> list[str]:
    """What is wrong with the dashboard's queries against `types` ({sample name: family type}
    of the pages oxbowd serves): names not served, rate() of gauges, counters or histogram
    parts shown raw, histogram_quantile() of anything but histogram buckets."""
    found = []
    for where, query in queries(dashboard):
        expr = promql_of(query)
        names = metric_names(expr)
        if not names:
            found.append(f"{where}: names no metric: {query!r}")
        for name in sorted(names - set(types)):
            found.append(f"{where}: {name} is not served by oxbowd")
        for name in sorted(names_under(expr, RATE_FUNCTIONS) & set(types)):
            if types[name] not in ("counter", "histogram"):
                found.append(f"{where}: rate/increase of {name}, a {types[name]}")
        if not where.startswith("variable"):
            for name in sorted(names_outside(expr, RATE_FUNCTIONS) & set(types)):
                if types[name] in ("counter", "histogram"):
                    found.append(f"{where}: {name} (a {types[name]}) shown without rate/increase")
        for name in sorted(names_under(expr, ("histogram_quantile",)) & set(types)):
            if not (types[name] == "histogram" and name.endswith("_bucket")):
                found.append(f"{where}: histogram_quantile of {name}, not a histogram's _bucket")
    return found


def substituted(expr: str) -> str:
    """The query as Grafana sends it with every variable at "All" (its allValue, `.*`)."""
    for name, value in GRAFANA_BUILTINS.items():
        expr = expr.replace("${" + name + "}", value).replace("$" + name, value)
    return re.sub(r"\$\{?(instance|table)\}?", ".*", expr)


# --- the checker itself --------------------------------------------------------------------

def test_metric_names_are_read_out_of_promql():
    expr = ('histogram_quantile(0.99, sum by (table, le) (rate(oxbow_produce_latency_seconds_bucket'
            '{instance=~"$instance", table=~"a.b|c"}[$__rate_interval]))) / ignoring(x) '
            'group_left oxbow_x:y offset 5m + 1e3 - time() > bool 0')
    assert metric_names(expr) == {"oxbow_produce_latency_seconds_bucket", "oxbow_x:y"}
    assert names_under(expr, RATE_FUNCTIONS) == {"oxbow_produce_latency_seconds_bucket"}
    assert names_outside(expr, RATE_FUNCTIONS) == {"oxbow_x:y"}
    assert promql_of('label_values(oxbow_log_next_offset{instance=~"$instance"}, table)') == \
        'oxbow_log_next_offset{instance=~"$instance"}'
    assert promql_of("label_values(instance)") == ""
    types = {"oxbow_fsync_latency_seconds_count": "histogram", "oxbow_rows_in_total": "counter"}
    assert family_of("oxbow_fsync_latency_seconds_count", types) == "oxbow_fsync_latency_seconds"
    assert family_of("oxbow_rows_in_total", types) == "oxbow_rows_in_total"


def test_the_checker_catches_a_made_up_name_and_a_rate_of_a_gauge():
    """A copy of the dashboard with one query renamed to a series oxbowd does not serve, and
    one taking rate() of a gauge: the checker names both, and nothing else."""
    dashboard = copy.deepcopy(load_dashboard())

    def kind(name: str) -> str:  # oxbowd's naming, standing in for a page here
        return ("counter" if name.endswith("_total") else
                "histogram" if name.endswith(HISTOGRAM_SUFFIXES) else "gauge")
    types = {name: kind(name) for _, q in queries(dashboard) for name in metric_names(promql_of(q))}
    assert problems(dashboard, types) == []
    targets = [t for p in all_panels(dashboard["panels"]) for t in p.get("targets", [])]
    assert "oxbow_rows_in_total" in targets[0]["expr"]
    targets[0]["expr"] = targets[0]["expr"].replace("oxbow_rows_in_total", "oxbow_rows_inn_total")
    targets[-1]["expr"] = "rate(oxbow_process_open_fds[5m])"
    found = problems(dashboard, types)
    assert len(found) == 2, found
    assert "oxbow_rows_inn_total is not served by oxbowd" in found[0]
    assert "rate/increase of oxbow_process_open_fds, a gauge" in found[1]


# --- the dashboard as Grafana imports it ----------------------------------------------------

def test_the_dashboard_is_importable():
    dashboard = load_dashboard()
    assert dashboard["id"] is None, "a dashboard for import has no id (Grafana assigns one)"
    assert isinstance(dashboard["uid"], str) and 0 < len(dashboard["uid"]) <= 40
    assert dashboard["title"] and 36 <= dashboard["schemaVersion"] <= 41
    inputs = {i["name"]: i for i in dashboard["__inputs"]}
    assert inputs == {"DS_PROMETHEUS": {**inputs["DS_PROMETHEUS"], "type": "datasource",
                                        "pluginId": "prometheus"}}
    panels = list(all_panels(dashboard["panels"]))
    ids = [p["id"] for p in panels]
    assert all(isinstance(i, int) for i in ids) and len(ids) == len(set(ids)), "panel ids repeat"
    required = {r["id"] for r in dashboard["__requires"] if r["type"] == "panel"}
    cells: dict[tuple[int, int], int] = {}
    for panel in panels:
        grid = panel["gridPos"]
        assert all(isinstance(grid[k], int) for k in "hwxy"), panel["title"]
        assert grid["w"] > 0 and grid["h"] > 0 and grid["x"] >= 0 and grid["x"] + grid["w"] <= 24
        for x in range(grid["x"], grid["x"] + grid["w"]):  # no two panels overlap
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"panels {cells[(x, y)]} and {panel['id']} overlap"
                cells[(x, y)] = panel["id"]
        if panel["type"] == "row":
            assert not panel.get("targets")
            continue
        assert panel["type"] in required, f"panel type {panel['type']} not in __requires"
        assert panel["title"] and panel["datasource"] == DATASOURCE, panel["title"]
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), f"refIds repeat in {panel['title']!r}"
        for target in panel["targets"]:
            assert target["datasource"] == DATASOURCE, panel["title"]
            assert isinstance(target.get("expr"), str) and target["expr"].strip(), panel["title"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert "instance" in variables
    assert variable_query(variables["instance"]).startswith("label_values(oxbow_")
    assert variable_query(variables["instance"]).endswith(", instance)")
    for variable in variables.values():
        assert variable["type"] == "query" and variable["datasource"] == DATASOURCE
        assert variable.get("allValue") == ".*" or not variable.get("includeAll")
    # Every variable a query uses is the dashboard's or Grafana's own.
    for where, query in queries(dashboard):
        for used in re.findall(r"\$\{?(\w+)\}?", query):
            assert used in variables or used in GRAFANA_BUILTINS, f"{where}: unknown ${used}"
        assert "DS_PROMETHEUS" not in query


def test_every_series_the_dashboard_names_is_documented():
    """docs/metrics.md names each family the dashboard shows (histograms by their family name,
    counters with their _total), so the dashboard uses no undocumented series."""
    doc = METRICS_DOC.read_text()
    dashboard = load_dashboard()
    names = {name for _, q in queries(dashboard) for name in metric_names(promql_of(q))}

    def documented(name: str) -> bool:
        return f"`{name}`" in doc or any(
            name.endswith(s) and f"`{name[:-len(s)]}`" in doc for s in HISTOGRAM_SUFFIXES)
    undocumented = {n for n in names if not documented(n)}
    assert not undocumented, f"not in docs/metrics.md: {sorted(undocumented)}"
    assert "contrib/grafana/oxbow.json" in doc


# --- against real servers --------------------------------------------------------------------

@pytest.fixture(scope="module")
def standalone(oxbowd_bin, tmp_path_factory):
    """One oxbowd after a workload that makes every standalone series appear: a log table tiered
    in three rounds and compacted, a filtered union read that prunes its files, reads, a follow,
    a primary-key table (the RocksDB store), a refused read (an error)."""
    base = tmp_path_factory.mktemp("grafana")
    server = OxbowServer(oxbowd_bin, base / "data", base / "oxbowd.log",
                         ("--lake-freshness-ms", "100", "--lake-compaction-min-files", "2",
                          "--lake-maintenance-interval-ms", "200")).start()
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    server.create_table("grafana.log", schema, buckets=2)
    for n in range(3):  # three tiering rounds, three small files: compaction merges them
        server.put("grafana.log", [pa.record_batch([pa.array(range(n * 10, n * 10 + 10), pa.int64())],
                                                   schema=schema)])
        wait_lake(server, "grafana.log")
    ticket = {"table": "grafana.log", "union": True,
              "filter": [{"column": "id", "op": ">", "value": 1000}]}
    assert server.client.do_get(fl.Ticket(json.dumps(ticket).encode())).read_all().num_rows == 0
    assert server.read_all("grafana.log").num_rows == 30
    follow = server.new_client()
    reader = follow.do_get(fl.Ticket(json.dumps({"table": "grafana.log", "bucket": 0,
                                                 "follow": True}).encode()))
    assert reader.read_chunk().data.num_rows > 0
    reader.cancel()
    follow.close()
    pk = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    server.action("create_table", {"table": "grafana.pk", "schema": schema_json(pk),
                                   "primary_key": ["id"]})
    server.put("grafana.pk", [pa.record_batch([pa.array(range(500), pa.int64()),
                                               pa.array(["v"] * 500)], schema=pk)])
    assert server.client.do_get(fl.Ticket(json.dumps(
        {"table": "grafana.pk", "lookup": {"id": [1, 2, 3]}}).encode())).read_all().num_rows == 3
    with pytest.raises(pa.ArrowKeyError):
        server.client.do_get(fl.Ticket(b'{"table": "no.such"}')).read_all()
    wait_for(lambda: "oxbow_lake_compaction_duration_seconds_count" in sample_types(server),
             what="a compaction step")
    yield server
    if server.proc is not None:
        assert server.stop() == 0, server.log_tail()


@pytest.fixture(scope="module")
def cluster(oxbowd_bin, zookeeper, tmp_path_factory):
    """Three oxbowd on the session's ZooKeeper, with a replicated table written and in sync:
    the cluster-only series (docs/cluster.md)."""
    c = Cluster(oxbowd_bin, zookeeper.chroot("grafana"), tmp_path_factory.mktemp("cluster")).start()
    try:
        c.create_table("grafana.replicated", buckets=2)
        leader = c.leader_of("grafana.replicated", 0)
        c.servers[leader].put("grafana.replicated", [pa.record_batch(
            [pa.array([1, 2, 3], pa.int64()), pa.array(["w"] * 3)], schema=ROW_SCHEMA)])
        c.wait_in_sync("grafana.replicated", 0)
        c.leader_of("grafana.replicated", 1)
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def served(standalone, cluster) -> dict[str, str]:
    """{sample name: family type} over the standalone server's page and every cluster page."""
    types = dict(sample_types(standalone))
    for server in cluster.servers.values():
        for name, kind in sample_types(server).items():
            assert types.setdefault(name, kind) == kind, f"{name} is a {kind} and a {types[name]}"
    return types


def test_every_query_names_a_series_oxbowd_serves(served):
    dashboard = load_dashboard()
    found = problems(dashboard, served)
    assert not found, "\n".join(found)
    names = {name for _, q in queries(dashboard) for name in metric_names(promql_of(q))}
    assert len(names) > 40, sorted(names)  # the extraction found the dashboard's metrics


def test_the_dashboard_shows_every_series(served):
    """Each family oxbowd served after the workload is on some panel, or in LEFT_OFF."""
    dashboard = load_dashboard()
    shown = {family_of(name, served) for _, q in queries(dashboard)
             for name in metric_names(promql_of(q))}
    not_shown = {family_of(name, served) for name in served} - shown - LEFT_OFF
    assert not not_shown, (f"series without a panel in {DASHBOARD.relative_to(REPO_ROOT)}: "
                           f"{sorted(not_shown)} (add one, or list them in LEFT_OFF)")


# --- Prometheus's own tools ------------------------------------------------------------------

def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (Debian's `prometheus` package, which "
                    f"scripts/setup.sh installs): the query checks of Prometheus itself are skipped")
    return path


def _promql_queries() -> list[tuple[str, str]]:
    return [(where, substituted(promql_of(q))) for where, q in queries(load_dashboard())
            if promql_of(q)]


def test_promtool_parses_every_query(tmp_path):
    """Each query, its variables as Grafana fills them for "All", is a recording rule that
    `promtool check rules` accepts; a broken one is refused (the check is not vacuous)."""
    promtool = _tool("promtool")

    def check(exprs: list[str]) -> subprocess.CompletedProcess:
        rules = {"groups": [{"name": "oxbow_dashboard", "rules": [
            {"record": f"oxbow_dashboard:query_{k}", "expr": e} for k, e in enumerate(exprs)]}]}
        path = tmp_path / "rules.yml"
        path.write_text(json.dumps(rules, indent=1))  # JSON is YAML
        return subprocess.run([promtool, "check", "rules", str(path)], capture_output=True,
                              text=True, timeout=60)

    exprs = [e for _, e in _promql_queries()]
    ok = check(exprs)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in ok.stdout, ok.stdout
    broken = check([exprs[0].rstrip(")")])
    assert broken.returncode != 0 and "parse error" in broken.stdout + broken.stderr


@pytest.fixture(scope="module")
def prometheus(standalone, cluster, tmp_path_factory):
    """A real Prometheus on a free loopback port scraping the standalone server and the cluster
    every second; yields (its URL, the scraped instances). Stopped at the module's end."""
    binary = _tool("prometheus")
    base = tmp_path_factory.mktemp("prometheus")
    servers = [standalone, *cluster.servers.values()]
    instances = [s.metrics_url.removeprefix("http://") for s in servers]
    config = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
              "scrape_configs": [{"job_name": "oxbowd", "static_configs": [{"targets": instances}]}]}
    (base / "prometheus.yml").write_text(json.dumps(config))
    port = free_port()
    with open(base / "prometheus.log", "wb") as log:
        proc = subprocess.Popen([binary, f"--config.file={base / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={base / 'data'}",
                                 f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        def ready():
            assert proc.poll() is None, (base / "prometheus.log").read_text()[-3000:]
            try:
                return urllib.request.urlopen(url + "/-/ready", timeout=2).status == 200
            except OSError:
                return False
        wait_for(ready, what="prometheus to start")
        yield url, instances
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _api(url: str, path: str, **params) -> list:
    query = urllib.parse.urlencode(params, doseq=True)
    with urllib.request.urlopen(f"{url}/api/v1/{path}?{query}", timeout=10) as response:
        answer = json.load(response)
    assert answer["status"] == "success", answer
    return answer["data"]


def test_prometheus_answers_every_query(prometheus):
    """Prometheus scraping the servers answers every panel's query with at least one series,
    and the variables' label_values with the servers scraped and the tables written."""
    url, instances = prometheus
    pending = dict(_promql_queries())

    def answered():
        for where, expr in list(pending.items()):
            if _api(url, "query", query=expr)["result"]:
                del pending[where]
        return not pending
    try:
        wait_for(answered, timeout=60, interval=0.5, what="every query to return a series")
    except AssertionError:
        raise AssertionError("queries without a series: "
                             + json.dumps({w: pending[w] for w in pending}, indent=1)) from None
    variables = {v["name"]: v for v in load_dashboard()["templating"]["list"]}
    selector = substituted(promql_of(variable_query(variables["instance"])))
    assert sorted(_api(url, "label/instance/values", **{"match[]": selector})) == sorted(instances)
    selector = substituted(promql_of(variable_query(variables["table"])))
    tables = _api(url, "label/table/values", **{"match[]": selector})
    assert {"grafana.log", "grafana.pk", "grafana.replicated"} <= set(tables), tables
