// The Oxbow console: one page, routed by the URL's #fragment, that reads the JSON API
// (docs/console.md#the-json-api) every two seconds and draws what it answers. No dependencies.
"use strict";

const REFRESH_MS = 2000;
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

function card(label, value, field) {
  return `<div class="card"><div class="label">${escapeHtml(label)}</div>` +
         `<div class="value" data-field="${field}">${escapeHtml(value)}</div></div>`;
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

async function api(path) {
  const response = await fetch(path, {credentials: "same-origin"});
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || `${path}: HTTP ${response.status}`);
  return body;
}

async function overview() {
  const o = await api("/api/overview");
  const s = o.series;
  const perSecond = (v) => number(Math.round(v)) + "/s";
  const ms = (v) => v.toFixed(2) + " ms";
  const servers = o.servers.map((server) =>
    `<tr><td>${server.id === null ? "this server" : server.id}</td>` +
    `<td>${escapeHtml(server.flight || "")}</td><td>${escapeHtml(server.kafka || "")}</td>` +
    `<td>${server.controller ? "controller" : ""}</td>` +
    `<td class="num">${server.leader_of_buckets === undefined ? "" : number(server.leader_of_buckets)}</td></tr>`
  ).join("");
  const disk = o.disk ? card("Disk free", bytes(o.disk.free_bytes) + " of " +
                             bytes(o.disk.total_bytes), "disk_free") : "";
  return `<h1>Overview <span class="muted">(${escapeHtml(o.mode)})</span></h1>
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
    <table><tr><th>Id</th><th>Flight</th><th>Kafka</th><th>Role</th>
      <th class="num">Leads buckets</th></tr>${servers}</table>`;
}

async function tables() {
  const t = await api("/api/tables");
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
    `<td class="num">${table.lake.enabled ? number(table.lake.lag_ms) + " ms" : ""}</td></tr>`
  ).join("");
  return `<h1>Tables <span class="muted" data-field="table_count">${number(t.tables.length)}</span></h1>
    <table><tr><th>Name</th><th>Kind</th><th class="num">Buckets</th>
      <th class="num">Log records</th><th class="num">Log bytes</th><th class="num">Retention</th>
      <th>Lake</th><th class="num">Lake lag (rows)</th><th class="num">Lake lag (time)</th></tr>
    ${rows}</table>`;
}

async function tablePage(name) {
  const t = await api("/api/tables/" + encodeURIComponent(name));
  const buckets = t.buckets.map((b) =>
    `<tr data-bucket="${b.bucket}"><td class="num">${b.bucket}</td>` +
    `<td class="num">${number(b.earliest_offset)}</td>` +
    `<td class="num" data-field="next_offset">${number(b.next_offset)}</td>` +
    `<td class="num">${bytes(b.log_bytes)}</td><td class="num">${number(b.segments)}</td>` +
    `<td>${b.leader === null ? "" : b.leader}</td></tr>`).join("");
  const current = t.schema_versions[t.schema_versions.length - 1];
  const fields = current.fields.map((f) =>
    `<tr><td>${escapeHtml(f.name)}</td><td>${escapeHtml(f.type)}</td>` +
    `<td>${f.nullable ? "nullable" : "not null"}</td>` +
    `<td>${t.primary_key.includes(f.name) ? "key" : ""}</td></tr>`).join("");
  let lake = `<p class="muted">The lake is off for this table.</p>`;
  if (t.lake.enabled) {
    const history = t.lake.lag_history;
    lake = `<div class="cards">
        ${card("Lag (rows)", number(t.lake.lag_rows), "lake_lag_rows")}
        ${card("Lag (time)", number(t.lake.lag_ms) + " ms", "lake_lag_ms")}
        ${card("Snapshots", number(t.lake.snapshots), "lake_snapshots")}
        ${card("Data files", number(t.lake.data_files), "lake_data_files")}
      </div>
      <div class="charts">
        ${chart("Lake lag (rows)", history.lag_rows, number, "lake_lag_rows_now")}
        ${chart("Lake lag (ms)", history.lag_ms, number, "lake_lag_ms_now")}
      </div>` + (t.lake.error ? `<p class="error">${escapeHtml(t.lake.error)}</p>` : "");
  }
  return `<h1 data-field="table_name">${escapeHtml(t.name)}</h1>
    <div class="cards">
      ${card("Kind", t.kind === "log" ? "log table" : "primary-key table", "kind")}
      ${card("Buckets", number(t.buckets.length), "buckets")}
      ${card("Schema version", number(t.schema_id), "schema_id")}
      ${card("Versions", number(t.schema_versions.length), "schema_versions")}
    </div>
    <h2>Buckets</h2>
    <table><tr><th class="num">Bucket</th><th class="num">Earliest offset</th>
      <th class="num">Next offset</th><th class="num">Log bytes</th><th class="num">Segments</th>
      <th>Leader</th></tr>${buckets}</table>
    <h2>Schema <span class="muted">(version ${t.schema_id})</span></h2>
    <table><tr><th>Column</th><th>Type</th><th>Null</th><th></th></tr>${fields}</table>
    <h2>Lake</h2>${lake}`;
}

async function render() {
  const route = decodeURIComponent(location.hash.replace(/^#\/?/, ""));
  const [page, ...rest] = route.split("/");
  document.querySelectorAll("[data-nav]").forEach((a) =>
    a.classList.toggle("active", a.dataset.nav === (page || "overview")));
  try {
    if (page === "tables" && rest.length) view.innerHTML = await tablePage(rest.join("/"));
    else if (page === "tables") view.innerHTML = await tables();
    else view.innerHTML = await overview();
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

window.addEventListener("hashchange", render);
render();
setInterval(render, REFRESH_MS);
