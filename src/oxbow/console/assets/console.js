// The Oxbow console: one page, routed by the URL's #fragment, that reads the JSON API
// (docs/console.md#the-json-api) every two seconds and draws what it answers. A page is a
// skeleton drawn when the route changes (its forms keep what is typed in them) and parts that
// each refresh fills. No dependencies.
"use strict";

const REFRESH_MS = 2000;
const TABLES_PER_PAGE = 100;
const view = document.getElementById("view");
const statusLine = document.getElementById("status");

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({
    "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

const NUMBERS = new Intl.NumberFormat("en-US");  // one formatter: toLocaleString makes one a call

function number(n) {
  return n === null || n === undefined ? "–" : NUMBERS.format(Number(n));
}

function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = Number(n), unit = 0;
  while (value >= 1000 && unit < units.length - 1) { value /= 1000; unit += 1; }
  return (unit === 0 ? value : value.toFixed(1)) + " " + units[unit];
}

function time(ms) {
  return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

function list(values) {
  return values === null || values === undefined ? "" : values.join(", ");
}

function card(label, value, field) {
  return `<div class="card"><div class="label">${escapeHtml(label)}</div>` +
         `<div class="value" data-field="${field}">${escapeHtml(value)}</div></div>`;
}

function table(headers, rows, attributes = "") {
  const head = headers.map((h) =>
    h.startsWith("#") ? `<th class="num">${escapeHtml(h.slice(1))}</th>` : `<th>${escapeHtml(h)}</th>`);
  return `<table ${attributes}><tr>${head.join("")}</tr>${rows.join("")}</table>`;
}

// A line chart of `values` (one per interval) in an SVG, its latest value in the title.
function chart(title, values, format, field) {
  const width = 360, height = 90;
  const max = Math.max(1e-9, ...values);
  const step = values.length > 1 ? width / (values.length - 1) : width;
  const points = values.map((v, i) =>
    `${(i * step).toFixed(1)},${(height - 4 - (v / max) * (height - 8)).toFixed(1)}`).join(" ");
  const latest = values.length ? values[values.length - 1] : 0;
  return `<div class="chart"><div class="title"><span>${escapeHtml(title)}</span>` +
         `<span data-field="${field}">${escapeHtml(format(latest))}</span></div>` +
         `<svg viewBox="0 0 ${width} ${height}" preserveAspectRatio="none">` +
         `<polyline points="${points}"></polyline></svg></div>`;
}

async function api(path, options = {}) {
  const response = await fetch(path, {credentials: "same-origin", ...options});
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || `${path}: HTTP ${response.status}`);
  return body;
}

function part(name) {
  return view.querySelector(`[data-part="${name}"]`);
}

// --- Overview -------------------------------------------------------------------------------

async function overview() {
  const o = await api("/api/overview");
  const s = o.series;
  const perSecond = (v) => number(Math.round(v)) + "/s";
  const ms = (v) => v.toFixed(2) + " ms";
  const servers = o.servers.map((server) =>
    `<tr><td>${server.id === null ? "this server" : server.id}</td>` +
    `<td>${escapeHtml(server.flight || "")}</td><td>${escapeHtml(server.kafka || "")}</td>` +
    `<td>${server.controller ? "controller" : ""}</td>` +
    `<td class="num">${server.leader_of_buckets === undefined ? "" : number(server.leader_of_buckets)}</td></tr>`);
  const disk = o.disk ? card("Disk free", bytes(o.disk.free_bytes) + " of " +
                             bytes(o.disk.total_bytes), "disk_free") : "";
  part("main").innerHTML = `<h1>Overview <span class="muted">(${escapeHtml(o.mode)})</span></h1>
    <div class="cards">
      ${card("Servers", number(o.servers.length), "servers")}
      ${card("Tables", number(o.tables), "tables")}
      ${card("Log records", number(o.log_records), "log_records")}
      ${card("Log bytes", bytes(o.log_bytes), "log_bytes")}
      ${card("Errors", number(o.errors), "errors")}
      ${disk}
    </div>
    <h2>The last hour <span class="muted">(every ${s.interval_ms / 1000} s)</span></h2>
    <div class="charts">
      ${chart("Rows written", s.put_rows_per_s, perSecond, "put_rows_per_s")}
      ${chart("Rows read", s.fetch_rows_per_s, perSecond, "fetch_rows_per_s")}
      ${chart("Write latency (ack)", s.put_latency_ms, ms, "put_latency_ms")}
      ${chart("Read latency (per batch)", s.fetch_latency_ms, ms, "fetch_latency_ms")}
      ${chart("Bytes written", s.put_bytes_per_s, (v) => bytes(v) + "/s", "put_bytes_per_s")}
      ${chart("Errors", s.errors_per_s, (v) => v.toFixed(2) + "/s", "errors_per_s")}
    </div>
    <h2>Servers</h2>
    ${table(["Id", "Flight", "Kafka", "Role", "#Leads buckets"], servers)}`;
}

// --- Tables ---------------------------------------------------------------------------------

const tablesState = {filter: "", page: 0};

function tablesSkeleton() {
  return `<h1>Tables <span class="muted" data-field="table_count"></span></h1>
    <div class="controls">
      <input type="search" data-input="filter" placeholder="Filter by name"
             value="${escapeHtml(tablesState.filter)}">
      <button data-action="previous">Previous</button>
      <span data-field="page"></span>
      <button data-action="next">Next</button>
    </div>
    <div data-part="main"></div>`;
}

function tablesBind() {
  view.querySelector("[data-input=filter]").addEventListener("input", (event) => {
    tablesState.filter = event.target.value;
    tablesState.page = 0;
    refresh();
  });
  view.querySelector("[data-action=previous]").addEventListener("click", () => {
    tablesState.page = Math.max(0, tablesState.page - 1);
    refresh();
  });
  view.querySelector("[data-action=next]").addEventListener("click", () => {
    tablesState.page += 1;
    refresh();
  });
}

async function tables() {
  const query = new URLSearchParams({filter: tablesState.filter, limit: TABLES_PER_PAGE,
                                     offset: tablesState.page * TABLES_PER_PAGE});
  const t = await api("/api/tables?" + query);
  const pages = Math.max(1, Math.ceil(t.total / TABLES_PER_PAGE));
  if (tablesState.page >= pages) { tablesState.page = pages - 1; return tables(); }
  view.querySelector("[data-field=table_count]").textContent = number(t.total);
  view.querySelector("[data-field=page]").textContent = `page ${tablesState.page + 1} of ${pages}`;
  const rows = t.tables.map((table) =>
    `<tr data-table="${escapeHtml(table.name)}">` +
    `<td><a href="#/tables/${encodeURIComponent(table.name)}">${escapeHtml(table.name)}</a></td>` +
    `<td>${table.kind === "log" ? "log" : "primary key"}</td>` +
    `<td class="num">${number(table.buckets)}</td>` +
    `<td class="num" data-field="log_records">${number(table.log_records)}</td>` +
    `<td class="num">${bytes(table.log_bytes)}</td>` +
    `<td class="num">${table.retention === null ? "default" : escapeHtml(table.retention)}</td>` +
    `<td>${table.lake.enabled ? "on" : "off"}</td>` +
    `<td class="num" data-field="lake_lag_rows">${table.lake.enabled ? number(table.lake.lag_rows) : ""}</td>` +
    `<td class="num">${table.lake.enabled ? number(table.lake.lag_ms) + " ms" : ""}</td></tr>`);
  part("main").innerHTML = table(["Name", "Kind", "#Buckets", "#Log records", "#Log bytes",
                                  "#Retention", "Lake", "#Lake lag (rows)", "#Lake lag (time)"],
                                 rows);
}

// --- A table --------------------------------------------------------------------------------

const tableState = {name: null, bucket: 0, before: null, columns: null, lookup: null};

function tableSkeleton(name) {
  if (tableState.name !== name) {
    Object.assign(tableState, {name, bucket: 0, before: null, columns: null, lookup: null});
  }
  return `<div data-part="summary"></div>
    <h2>Last rows</h2>
    <div class="controls">
      <label>Bucket <select data-input="bucket"></select></label>
      <button data-action="older">Older</button>
      <button data-action="newest">Newest</button>
      <span data-field="row_range" class="muted"></span>
    </div>
    <div class="controls" data-part="columns"></div>
    <div data-part="rows"></div>
    <div data-part="lookup"></div>
    <h2>Lake</h2><div data-part="lake"></div>
    <h2>Properties</h2><div data-part="properties"></div>
    <form class="controls" data-form="properties">
      <input data-input="property_key" placeholder="property" required>
      <input data-input="property_value" placeholder="value (empty: remove)">
      <button>Set (admin)</button>
      <span data-field="properties_result"></span>
    </form>`;
}

function tableBind(name) {
  view.querySelector("[data-input=bucket]").addEventListener("change", (event) => {
    tableState.bucket = Number(event.target.value);
    tableState.before = null;
    refresh();
  });
  view.querySelector("[data-action=older]").addEventListener("click", () => {
    const from = Number(view.querySelector("[data-part=rows]").dataset.from || 0);
    tableState.before = Math.max(0, from);
    refresh();
  });
  view.querySelector("[data-action=newest]").addEventListener("click", () => {
    tableState.before = null;
    refresh();
  });
  view.querySelector("[data-form=properties]").addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = view.querySelector("[data-input=property_key]").value;
    const value = view.querySelector("[data-input=property_value]").value;
    const result = view.querySelector("[data-field=properties_result]");
    try {
      await api(`/api/tables/${encodeURIComponent(name)}/properties`, {
        method: "POST", headers: {"Content-Type": "application/json"},
        body: JSON.stringify({properties: {[key]: value === "" ? null : value}})});
      result.textContent = "saved";
      result.className = "";
      refresh();
    } catch (error) {
      result.textContent = error.message;
      result.className = "error";
    }
  });
}

function bucketsTable(t) {
  const placed = t.buckets.some((b) => b.replicas !== null);
  const headers = ["#Bucket", "#Earliest offset", "#Next offset", "#Log bytes", "#Segments"]
      .concat(placed ? ["Leader", "Replicas", "ISR"] : []);
  const rows = t.buckets.map((b) =>
    `<tr data-bucket="${b.bucket}"><td class="num">${b.bucket}</td>` +
    `<td class="num">${number(b.earliest_offset)}</td>` +
    `<td class="num" data-field="next_offset">${number(b.next_offset)}</td>` +
    `<td class="num">${bytes(b.log_bytes)}</td><td class="num">${number(b.segments)}</td>` +
    (placed ? `<td>${b.leader < 0 ? "none" : b.leader}</td><td>${list(b.replicas)}</td>` +
              `<td>${list(b.isr)}</td>` : "") + `</tr>`);
  return table(headers, rows);
}

function drawSummary(t) {
  const current = t.schema_versions[t.schema_versions.length - 1];
  const fields = current.fields.map((f) =>
    `<tr><td>${escapeHtml(f.name)}</td><td>${escapeHtml(f.type)}</td>` +
    `<td>${f.nullable ? "nullable" : "not null"}</td>` +
    `<td>${t.primary_key.includes(f.name) ? "key" : ""}</td></tr>`);
  const versions = t.schema_versions.map((v) =>
    `<tr><td class="num">${v.schema_id}</td>` +
    `<td>${escapeHtml(v.fields.map((f) => f.name + " " + f.type).join(", "))}</td></tr>`);
  part("summary").innerHTML = `<h1 data-field="table_name">${escapeHtml(t.name)}</h1>
    <div class="cards">
      ${card("Kind", t.kind === "log" ? "log table" : "primary-key table", "kind")}
      ${card("Buckets", number(t.buckets.length), "buckets")}
      ${card("Schema version", number(t.schema_id), "schema_id")}
      ${card("Versions", number(t.schema_versions.length), "schema_versions")}
    </div>
    <h2>Buckets</h2>${bucketsTable(t)}
    <h2>Schema <span class="muted">(version ${t.schema_id})</span></h2>
    ${table(["Column", "Type", "Null", ""], fields)}
    <h2>Schema versions</h2>${table(["#Version", "Columns"], versions, 'data-part-name="versions"')}`;
  const properties = Object.entries(t.properties).map(([k, v]) =>
    `<tr data-property="${escapeHtml(k)}"><td>${escapeHtml(k)}</td><td>${escapeHtml(v)}</td></tr>`);
  part("properties").innerHTML = properties.length ? table(["Property", "Value"], properties)
                                                   : `<p class="muted">No properties.</p>`;
}

function drawColumnChoice(t) {
  const area = part("columns");
  if (area.dataset.table === t.name) return;  // drawn once per table: keeps the ticks
  area.dataset.table = t.name;
  area.innerHTML = "Columns: " + t.read_columns.map((c) =>
    `<label><input type="checkbox" data-column="${escapeHtml(c)}" checked>${escapeHtml(c)}</label>`)
    .join(" ");
  area.querySelectorAll("input").forEach((box) => box.addEventListener("change", () => {
    const ticked = [...area.querySelectorAll("input:checked")].map((b) => b.dataset.column);
    tableState.columns = ticked.length === t.read_columns.length ? null : ticked;
    refresh();
  }));
  const select = view.querySelector("[data-input=bucket]");
  select.innerHTML = t.buckets.map((b) => `<option value="${b.bucket}">${b.bucket}</option>`).join("");
  select.value = String(tableState.bucket);
}

async function drawRows(name) {
  const query = new URLSearchParams({bucket: tableState.bucket, limit: 20});
  if (tableState.before !== null) query.set("before", tableState.before);
  if (tableState.columns !== null) query.set("columns", tableState.columns.join(","));
  const area = part("rows");
  let r;
  try {
    r = await api(`/api/tables/${encodeURIComponent(name)}/rows?` + query);
  } catch (error) {
    // Cluster mode: another server leads the bucket (its answer names the leader).
    const refusal = error.message.startsWith("{") ? JSON.parse(error.message) : null;
    area.innerHTML = refusal && refusal.error === "not_leader"
        ? `<p class="muted" data-field="rows_elsewhere">Server ${refusal.leader} leads bucket
             ${refusal.bucket}: its console shows the bucket's rows.</p>`
        : `<p class="error">${escapeHtml(error.message)}</p>`;
    return;
  }
  area.dataset.from = r.from;
  view.querySelector("[data-field=row_range]").textContent =
      `offsets ${number(r.from)} to ${number(r.to - 1)} of ${number(r.earliest_offset)}–${number(r.next_offset - 1)}`;
  const rows = r.rows.map((row) => `<tr data-offset="${row.offset}"><td class="num">${row.offset}</td>` +
      r.columns.map((c) => `<td>${escapeHtml(JSON.stringify(row.row[c] ?? null))}</td>`).join("") +
      `</tr>`);
  area.innerHTML = r.rows.length ? table(["#Offset"].concat(r.columns), rows, 'class="rows"')
                                 : `<p class="muted">No rows here.</p>`;
}

function drawLookupForm(t) {
  const area = part("lookup");
  if (t.kind !== "primary_key" || area.dataset.table === t.name) return;
  area.dataset.table = t.name;
  area.innerHTML = `<h2>Look up a key</h2>
    <form class="controls" data-form="lookup">
      ${t.primary_key.map((k) =>
        `<label>${escapeHtml(k)} <input data-key="${escapeHtml(k)}" required></label>`).join(" ")}
      <button>Look up</button>
    </form>
    <div data-field="lookup_result"></div>`;
  const types = Object.fromEntries(
      t.schema_versions[t.schema_versions.length - 1].fields.map((f) => [f.name, f.type]));
  area.querySelector("form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = {};
    area.querySelectorAll("[data-key]").forEach((input) => {
      const type = types[input.dataset.key];
      // Numbers go as JSON numbers, everything else as text (docs/text-formats.md).
      key[input.dataset.key] = /^u?int|^float|^double/.test(type) ? Number(input.value) : input.value;
    });
    const result = area.querySelector("[data-field=lookup_result]");
    try {
      const found = await api(`/api/tables/${encodeURIComponent(t.name)}/lookup?` +
                              new URLSearchParams({key: JSON.stringify(key)}));
      result.innerHTML = found.found
          ? table(Object.keys(found.row), [`<tr>${Object.values(found.row).map((v) =>
                `<td>${escapeHtml(JSON.stringify(v))}</td>`).join("")}</tr>`], 'class="found"')
          : `<p class="muted">No row has this key.</p>`;
    } catch (error) {
      result.innerHTML = `<p class="error">${escapeHtml(error.message)}</p>`;
    }
  });
}

async function drawLake(t) {
  const area = part("lake");
  if (!t.lake.enabled) {
    area.innerHTML = `<p class="muted">The lake is off for this table.</p>`;
    return;
  }
  const lake = await api(`/api/tables/${encodeURIComponent(t.name)}/lake`);
  const history = t.lake.lag_history;
  const snapshots = lake.snapshots.slice(0, 20).map((s) =>
    `<tr><td class="num">${s.snapshot_id}</td><td>${time(s.timestamp_ms)}</td>` +
    `<td>${escapeHtml(s.operation)}</td>` +
    `<td class="num">${number(s.summary["added-records"])}</td>` +
    `<td class="num">${number(s.summary["total-records"])}</td>` +
    `<td class="num">${number(s.summary["total-data-files"])}</td></tr>`);
  const files = lake.files.map((f) =>
    `<tr><td class="path">${escapeHtml(f.path.split("/").slice(-2).join("/"))}</td>` +
    `<td>${escapeHtml(f.content)}</td><td class="num">${number(f.records)}</td>` +
    `<td class="num">${bytes(f.bytes)}</td></tr>`);
  area.innerHTML = `<div class="cards">
      ${card("Lag (rows)", number(t.lake.lag_rows), "lake_lag_rows")}
      ${card("Lag (time)", number(t.lake.lag_ms) + " ms", "lake_lag_ms")}
      ${card("Snapshots", number(lake.snapshots.length), "lake_snapshots")}
      ${card("Data files", number(lake.data_files), "lake_data_files")}
      ${card("Delete files", number(lake.delete_files), "lake_delete_files")}
      ${card("Lake rows", number(lake.records), "lake_records")}
    </div>
    <div class="charts">
      ${chart("Lake lag (rows)", history.lag_rows, number, "lake_lag_rows_now")}
      ${chart("Lake lag (ms)", history.lag_ms, number, "lake_lag_ms_now")}
    </div>` + (t.lake.error ? `<p class="error">${escapeHtml(t.lake.error)}</p>` : "") +
    `<h3>Snapshots <span class="muted">(newest first)</span></h3>` +
    table(["#Snapshot", "Committed", "Operation", "#Added rows", "#Total rows", "#Data files"],
          snapshots, 'data-part-name="snapshots"') +
    `<h3>Files <span class="muted">(${number(lake.files.length)} of
      ${number(lake.data_files + lake.delete_files)})</span></h3>` +
    table(["File", "Content", "#Rows", "#Bytes"], files, 'data-part-name="files"');
}

async function tablePage(name) {
  const t = await api("/api/tables/" + encodeURIComponent(name));
  drawSummary(t);
  drawColumnChoice(t);
  drawLookupForm(t);
  await Promise.all([drawRows(name), drawLake(t)]);
}

// --- Kafka ----------------------------------------------------------------------------------

async function kafka() {
  const k = await api("/api/kafka");
  if (!k.enabled) {
    part("main").innerHTML = `<h1>Kafka</h1><p class="muted">The Kafka listener is off.</p>`;
    return;
  }
  const topics = k.topics.map((t) =>
    `<tr data-topic="${escapeHtml(t.topic)}"><td>${escapeHtml(t.topic)}</td>` +
    `<td><a href="#/tables/${encodeURIComponent(t.table)}">${escapeHtml(t.table)}</a></td>` +
    `<td class="num">${number(t.partitions)}</td><td class="num">${number(t.messages)}</td>` +
    `<td>${escapeHtml(t.value_format)}</td><td>${t.compacted ? "compacted" : ""}</td></tr>`);
  const groups = k.groups.map((g) => {
    const clientOf = Object.fromEntries(g.members.map((m) => [m.member_id, m]));
    const partitions = g.partitions.map((p) => {
      const m = clientOf[p.member_id];
      return `<tr data-partition="${escapeHtml(p.topic)}-${p.partition}">` +
        `<td>${escapeHtml(p.topic)}</td><td class="num">${p.partition}</td>` +
        `<td class="num">${number(p.committed_offset)}</td>` +
        `<td class="num">${number(p.log_end_offset)}</td>` +
        `<td class="num" data-field="lag">${number(p.lag)}</td>` +
        `<td>${m ? escapeHtml(m.member_id) : "–"}</td>` +
        `<td>${m ? escapeHtml(m.host) : "–"}</td><td>${m ? escapeHtml(m.client_id) : "–"}</td></tr>`;
    });
    const members = g.members.map((m) =>
      `<tr><td>${escapeHtml(m.member_id)}</td><td>${escapeHtml(m.client_id)}</td>` +
      `<td>${escapeHtml(m.host)}</td><td>${escapeHtml(m.assignment.map((a) =>
        a.topic + ": " + a.partitions.join(",")).join("; "))}</td></tr>`);
    return `<section class="group" data-group="${escapeHtml(g.group_id)}">
      <h3>${escapeHtml(g.group_id)} <span class="muted">${escapeHtml(g.state)}
        ${g.protocol ? "(" + escapeHtml(g.protocol) + ")" : ""}, ${number(g.members.length)}
        members, lag <span data-field="group_lag">${number(g.lag)}</span></span></h3>
      ${table(["Topic", "#Partition", "#Committed offset", "#Log end offset", "#Lag", "Member",
               "Host", "Client id"], partitions)}
      ${members.length ? table(["Member", "Client id", "Host", "Assignment"], members) : ""}
    </section>`;
  });
  part("main").innerHTML = `<h1>Kafka</h1>
    <h2>Consumer groups <span class="muted" data-field="group_count">${number(k.groups.length)}</span></h2>
    ${groups.length ? groups.join("") : `<p class="muted">No consumer group yet.</p>`}
    <h2>Topics <span class="muted" data-field="topic_count">${number(k.topics.length)}</span></h2>
    ${table(["Topic", "Table", "#Partitions", "#Messages", "Value format", ""], topics)}`;
}

// --- Cluster --------------------------------------------------------------------------------

async function cluster() {
  const c = await api("/api/cluster");
  if (c.mode !== "cluster") {
    part("main").innerHTML = `<h1>Cluster</h1>
      <p class="muted">This server runs in embedded mode: it is the whole of Oxbow.</p>`;
    return;
  }
  const servers = c.servers.map((s) =>
    `<tr data-server="${s.id}"><td>${s.id}</td><td>${escapeHtml(s.flight)}</td>` +
    `<td>${escapeHtml(s.kafka)}</td><td>${escapeHtml(s.rack || "")}</td>` +
    `<td>${s.controller ? "controller" : ""}</td><td class="num">${number(s.leader_of_buckets)}</td></tr>`);
  const bucketRow = (b, extra) =>
    `<tr data-bucket="${escapeHtml(b.table)}/${b.bucket}">` +
    `<td><a href="#/tables/${encodeURIComponent(b.table)}">${escapeHtml(b.table)}</a></td>` +
    `<td class="num">${b.bucket}</td><td>${b.leader < 0 ? "none" : b.leader}</td>` +
    `<td>${list(b.replicas)}</td><td>${list(b.isr)}</td>${extra}</tr>`;
  const unhealthy = c.under_replicated.map((b) =>
    bucketRow(b, `<td>${b.offline ? "offline" : "under-replicated"}</td>`));
  const moves = c.reassignments.map((b) => bucketRow(b, `<td>${list(b.moving_to)}</td>`));
  part("main").innerHTML = `<h1>Cluster <span class="muted">(seen by server ${c.server_id})</span></h1>
    <div class="cards">
      ${card("Servers", number(c.servers.length), "servers")}
      ${card("Controller", c.controller, "controller")}
      ${card("Buckets", number(c.buckets), "buckets")}
      ${card("Under-replicated", number(c.under_replicated_buckets), "under_replicated")}
      ${card("Offline", number(c.offline_buckets), "offline")}
      ${card("Moving", number(c.reassignments.length), "reassignments")}
    </div>
    <h2>Servers</h2>
    ${table(["Id", "Flight", "Kafka", "Rack", "Role", "#Leads buckets"], servers)}
    <h2>Buckets short of their replicas</h2>
    ${unhealthy.length ? table(["Table", "#Bucket", "Leader", "Replicas", "ISR", "State"], unhealthy,
                               'data-part-name="under_replicated"')
                       : `<p class="muted">Every bucket has all its replicas in sync.</p>`}
    <h2>Reassignments in progress</h2>
    ${moves.length ? table(["Table", "#Bucket", "Leader", "Replicas", "ISR", "Moving to"], moves,
                           'data-part-name="reassignments"')
                   : `<p class="muted">No bucket is moving.</p>`}`;
}

// --- Routing --------------------------------------------------------------------------------

const simple = `<div data-part="main"></div>`;
const PAGES = {
  overview: {skeleton: () => simple, draw: overview},
  tables: {skeleton: tablesSkeleton, bind: tablesBind, draw: tables},
  table: {skeleton: tableSkeleton, bind: tableBind, draw: tablePage},
  kafka: {skeleton: () => simple, draw: kafka},
  cluster: {skeleton: () => simple, draw: cluster},
};
let drawnRoute = null;

function route() {
  const path = decodeURIComponent(location.hash.replace(/^#\/?/, ""));
  const [name, ...rest] = path.split("/");
  if (name === "tables" && rest.length) return {page: "table", nav: "tables", arg: rest.join("/")};
  if (PAGES[name]) return {page: name, nav: name, arg: null};
  return {page: "overview", nav: "overview", arg: null};
}

async function refresh() {
  const r = route();
  const key = r.page + "/" + r.arg;
  const page = PAGES[r.page];
  if (drawnRoute !== key) {
    drawnRoute = key;
    document.querySelectorAll("[data-nav]").forEach((a) =>
      a.classList.toggle("active", a.dataset.nav === r.nav));
    view.innerHTML = page.skeleton(r.arg);
    if (page.bind) page.bind(r.arg);
  }
  try {
    await page.draw(r.arg);
    statusLine.textContent = "updated " + new Date().toLocaleTimeString();
    statusLine.classList.remove("error");
    // Milliseconds from the navigation's start to the first page drawn (bench/console_bench.py).
    if (!document.body.dataset.firstDrawnMs) {
      document.body.dataset.firstDrawnMs = String(Math.round(performance.now()));
    }
  } catch (error) {
    statusLine.textContent = error.message;
    statusLine.classList.add("error");
  }
}

window.addEventListener("hashchange", refresh);
refresh();
setInterval(refresh, REFRESH_MS);
