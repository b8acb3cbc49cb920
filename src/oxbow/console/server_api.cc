// GET /api/overview and /api/cluster: the server or cluster as a whole.
#include <sys/statvfs.h>

#include <chrono>

#include "oxbow/console/service_internal.h"

namespace oxbow::console::internal {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The servers of the cluster (with their leaders' buckets), or this one in embedded mode.
json ServersJson(const cluster::ClusterMetadata* meta) {
  json servers = json::array();
  if (meta == nullptr) {
    servers.push_back({{"id", nullptr}, {"live", true}});
    return servers;
  }
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
    if (!lake::IsLakeEnabled(table)) continue;  // no lake status to ask for
    auto handle = node->GetTable(table.name);
    if (!handle.ok()) continue;
    auto lake = handle->LakeStatus();
    if (!lake.ok() || !lake->enabled) continue;
    sample.lake_lag[table.name] = {lake->lag_rows, lake->lag_ms};
  }
  return sample;
}

http::Response Service::Overview(const auth::User* user) const {
  int64_t tables = 0, records = 0, bytes = 0;
  for (const catalog::TableDescriptor& table : node_->ListTables()) {
    if (user != nullptr && !user->Allows(table.name, auth::Access::kRead)) continue;
    auto handle = node_->GetTable(table.name);
    if (!handle.ok()) continue;
    ++tables;
    const LogSize size = LogSizeOf(handle->Buckets());
    records += size.records;
    bytes += size.bytes;
  }
  const std::vector<Sample> samples = history_->samples();
  const Rates rates = RatesOf(samples);
  const auto meta = node_->cluster() ? node_->cluster()->Metadata() : nullptr;
  json overview = {{"mode", meta ? "cluster" : "embedded"},
                   {"servers", ServersJson(meta.get())},
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

http::Response Service::Cluster(const auth::User* user) const {
  if (node_->cluster() == nullptr) return Json(200, {{"mode", "embedded"}});
  const auto meta = node_->cluster()->Metadata();
  int64_t buckets = 0;
  json unhealthy = json::array(), moves = json::array();
  for (const auto& [name, table] : meta->tables) {
    if (user != nullptr && !user->Allows(name, auth::Access::kRead)) continue;
    for (size_t b = 0; b < table.states.size() && b < table.replicas.size(); ++b) {
      ++buckets;
      const cluster::BucketState& state = table.states[b];
      const std::vector<int32_t>& replicas = table.replicas[b];
      json bucket = {{"table", name},          {"bucket", b},
                     {"replicas", replicas},   {"isr", state.isr},
                     {"leader", state.leader}, {"leader_epoch", state.leader_epoch}};
      if (auto target = table.targets.find(static_cast<int32_t>(b));
          target != table.targets.end()) {
        json move = bucket;
        move["moving_to"] = target->second;
        moves.push_back(std::move(move));
      }
      if (state.leader < 0 || state.isr.size() < replicas.size()) {
        bucket["offline"] = state.leader < 0;
        unhealthy.push_back(std::move(bucket));
      }
    }
  }
  int64_t offline = 0;
  for (const json& b : unhealthy) offline += b["offline"].get<bool>() ? 1 : 0;
  return Json(200, {{"mode", "cluster"},
                    {"server_id", node_->cluster()->server_id()},
                    {"controller", meta->controller},
                    {"controller_epoch", meta->controller_epoch},
                    {"servers", ServersJson(meta.get())},
                    {"buckets", buckets},
                    {"under_replicated_buckets", static_cast<int64_t>(unhealthy.size())},
                    {"offline_buckets", offline},
                    {"under_replicated", std::move(unhealthy)},
                    {"reassignments", std::move(moves)}});
}

}  // namespace oxbow::console::internal
