#include <sys/statvfs.h>

#include <chrono>

#include "oxbow/catalog/descriptor.h"
#include "oxbow/console/assets_internal.h"
#include "oxbow/console/service_internal.h"
#include "oxbow/engine/engine.h"

namespace oxbow::console::internal {
namespace {

using json = nlohmann::json;

http::Response Json(int status, const json& body) {
  http::Response response;
  response.status = status;
  response.body = body.dump();
  return response;
}

http::Response Problem(int status, const std::string& message) {
  return Json(status, {{"error", message}});
}

const char* ContentType(std::string_view file) {
  if (file.ends_with(".html")) return "text/html; charset=utf-8";
  if (file.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (file.ends_with(".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Log records (rows of a log table; changes of a primary-key table) held and their bytes.
std::pair<int64_t, int64_t> LogSize(const std::vector<engine::BucketStatus>& buckets) {
  int64_t records = 0, bytes = 0;
  for (const auto& b : buckets) {
    records += b.next_offset - b.earliest_offset;
    bytes += b.size_bytes;
  }
  return {records, bytes};
}

json LakeJson(const lake::LakeTableStatus& lake) {
  json j = {{"enabled", lake.enabled}};
  if (!lake.enabled) return j;
  j["lag_rows"] = lake.lag_rows;
  j["lag_ms"] = lake.lag_ms;
  j["snapshots"] = lake.snapshots;
  j["data_files"] = lake.data_files;
  j["metadata_location"] = lake.metadata_location;
  if (!lake.error.empty()) j["error"] = lake.error;
  return j;
}

json SchemaJson(const arrow::Schema& schema) {
  return json::parse(catalog::SchemaToJson(schema))["fields"];
}

// The servers of the cluster (with their leaders' buckets), or this one in embedded mode.
json ServersJson(node::Node* node) {
  json servers = json::array();
  cluster::Cluster* cluster = node->cluster();
  if (cluster == nullptr) {
    servers.push_back({{"id", nullptr}, {"live", true}});
    return servers;
  }
  const auto meta = cluster->Metadata();
  std::map<int32_t, int64_t> leading;
  for (const auto& [name, table] : meta->tables) {
    for (const auto& state : table.states) ++leading[state.leader];
  }
  for (const auto& [id, server] : meta->servers) {
    servers.push_back({{"id", id},
                       {"flight", server.flight},
                       {"kafka", server.kafka},
                       {"rack", server.rack},
                       {"live", true},
                       {"controller", id == meta->controller},
                       {"leader_of_buckets", leading[id]}});
  }
  return servers;
}

}  // namespace

Sample Service::SampleOf(node::Node* node) {
  Sample sample;
  sample.time_ms = NowMs();
  sample.totals = node->metrics().totals();
  for (const catalog::TableDescriptor& table : node->ListTables()) {
    auto described = node->DescribeTable(table.name);
    if (!described.ok() || !described->lake.enabled) continue;
    sample.lake_lag[table.name] = {described->lake.lag_rows, described->lake.lag_ms};
  }
  return sample;
}

http::Response Service::Handle(const http::Request& request) const {
  std::optional<auth::User> user;
  if (authenticator_ != nullptr) {
    auto verified = authenticator_->VerifyHeader(request.authorization);
    if (!verified.ok()) {
      http::Response refused = Problem(401, "log in: " + verified.status().message());
      refused.headers.emplace("WWW-Authenticate", "Basic realm=\"oxbow console\"");
      return refused;
    }
    user = std::move(verified).ValueOrDie();
  }
  if (request.method != "GET" && request.method != "HEAD") {
    return Problem(405, "the console is read-only: " + request.method + " is not served");
  }
  auto segments = http::PathSegments(request.path);
  if (!segments) return Problem(400, "a malformed %-escape in " + Quote(request.path));
  const auth::User* who = user ? &*user : nullptr;
  const auto& s = *segments;
  if (s.empty() || (s.size() == 1 && Assets().contains(s[0]))) {
    const std::string file = s.empty() ? "index.html" : s[0];
    http::Response page;
    page.body = std::string(Assets().at(file));
    page.content_type = ContentType(file);
    return page;
  }
  if (s[0] == "api") {
    if (s.size() == 2 && s[1] == "overview") return Overview(who);
    if (s.size() == 2 && s[1] == "tables") return Tables(who);
    if (s.size() == 3 && s[1] == "tables") return TablePage(who, s[2]);
  }
  return Problem(404, "no page " + Quote(request.path));
}

http::Response Service::Overview(const auth::User* user) const {
  int64_t tables = 0, records = 0, bytes = 0;
  for (const catalog::TableDescriptor& table : node_->ListTables()) {
    if (user != nullptr && !user->Allows(table.name, auth::Access::kRead)) continue;
    auto handle = node_->GetTable(table.name);
    if (!handle.ok()) continue;
    ++tables;
    const auto [table_records, table_bytes] = LogSize(handle->Buckets());
    records += table_records;
    bytes += table_bytes;
  }
  const std::vector<Sample> samples = history_->samples();
  const Rates rates = RatesOf(samples);
  json overview = {{"mode", node_->cluster() ? "cluster" : "embedded"},
                   {"servers", ServersJson(node_)},
                   {"tables", tables},
                   {"log_records", records},
                   {"log_bytes", bytes},
                   {"errors", samples.empty() ? 0 : samples.back().totals.errors},
                   {"series",
                    {{"interval_ms", history_->interval().count()},
                     {"time_ms", rates.time_ms},
                     {"put_rows_per_s", rates.put_rows},
                     {"put_bytes_per_s", rates.put_bytes},
                     {"fetch_rows_per_s", rates.fetch_rows},
                     {"fetch_bytes_per_s", rates.fetch_bytes},
                     {"errors_per_s", rates.errors},
                     {"put_latency_ms", rates.put_latency_ms},
                     {"fetch_latency_ms", rates.fetch_latency_ms}}}};
  struct statvfs disk;
  if (!data_dir_.empty() && statvfs(data_dir_.c_str(), &disk) == 0) {
    overview["disk"] = {
        {"data_dir", data_dir_},
        {"total_bytes", static_cast<int64_t>(disk.f_blocks) * static_cast<int64_t>(disk.f_frsize)},
        {"free_bytes", static_cast<int64_t>(disk.f_bavail) * static_cast<int64_t>(disk.f_frsize)}};
  }
  return Json(200, overview);
}

http::Response Service::Tables(const auth::User* user) const {
  json tables = json::array();
  for (const catalog::TableDescriptor& table : node_->ListTables()) {
    if (user != nullptr && !user->Allows(table.name, auth::Access::kRead)) continue;
    auto described = node_->DescribeTable(table.name);
    if (!described.ok()) continue;
    const auto [records, bytes] = LogSize(described->table.buckets);
    auto retention = table.properties.find(engine::kRetentionProperty);
    tables.push_back({{"name", table.name},
                      {"kind", table.primary_key.empty() ? "log" : "primary_key"},
                      {"buckets", table.buckets},
                      {"log_records", records},
                      {"log_bytes", bytes},
                      {"retention", retention == table.properties.end() ? json(nullptr)
                                                                        : json(retention->second)},
                      {"schema_id", table.schema_id},
                      {"lake", LakeJson(described->lake)}});
  }
  return Json(200, {{"tables", std::move(tables)}});
}

http::Response Service::TablePage(const auth::User* user, const std::string& name) const {
  if (user != nullptr && !user->Allows(name, auth::Access::kRead)) {
    return Problem(403, "user " + Quote(user->name) + " may not read table " + Quote(name));
  }
  auto described = node_->DescribeTable(name);
  if (!described.ok()) return Problem(404, described.status().message());
  const catalog::TableDescriptor& table = described->table.table;
  json versions = json::array();
  for (const catalog::SchemaVersion& v : table.previous_schemas) {
    versions.push_back({{"schema_id", v.schema_id}, {"fields", SchemaJson(*v.schema)}});
  }
  versions.push_back({{"schema_id", table.schema_id}, {"fields", SchemaJson(*table.schema)}});
  // In cluster mode, each bucket's leader (-1: none in sync); null in embedded mode.
  std::vector<json> leaders(static_cast<size_t>(table.buckets), json(nullptr));
  if (node_->cluster() != nullptr) {
    const auto meta = node_->cluster()->Metadata();
    if (const cluster::TableMeta* t = meta->FindTable(name)) {
      for (size_t b = 0; b < t->states.size() && b < leaders.size(); ++b) {
        leaders[b] = t->states[b].leader;
      }
    }
  }
  json buckets = json::array();
  for (const engine::BucketStatus& b : described->table.buckets) {
    const size_t index = static_cast<size_t>(b.bucket);
    buckets.push_back({{"bucket", b.bucket},
                       {"earliest_offset", b.earliest_offset},
                       {"next_offset", b.next_offset},
                       {"log_bytes", b.size_bytes},
                       {"segments", b.segments},
                       {"leader", index < leaders.size() ? leaders[index] : json(nullptr)}});
  }
  json lake = LakeJson(described->lake);
  if (described->lake.enabled) {
    json time_ms = json::array(), lag_rows = json::array(), lag_ms = json::array();
    for (const Sample& sample : history_->samples()) {
      auto it = sample.lake_lag.find(name);
      if (it == sample.lake_lag.end()) continue;
      time_ms.push_back(sample.time_ms);
      lag_rows.push_back(it->second.rows);
      lag_ms.push_back(it->second.ms);
    }
    lake["lag_history"] = {{"time_ms", time_ms}, {"lag_rows", lag_rows}, {"lag_ms", lag_ms}};
  }
  return Json(200, {{"name", table.name},
                    {"kind", table.primary_key.empty() ? "log" : "primary_key"},
                    {"primary_key", table.primary_key},
                    {"bucket_key", table.bucket_key},
                    {"properties", table.properties},
                    {"schema_id", table.schema_id},
                    {"schema_versions", std::move(versions)},
                    {"buckets", std::move(buckets)},
                    {"lake", std::move(lake)}});
}

}  // namespace oxbow::console::internal
