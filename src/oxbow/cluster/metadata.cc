#include "oxbow/cluster/metadata.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

namespace oxbow::cluster {

using json = nlohmann::json;

namespace {

Result<json> Parse(std::string_view text, const char* what) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Corruption(std::string(what) +
                              " in ZooKeeper is not a JSON object: " + Quote(text));
  }
  return j;
}

template <typename T>
Result<T> Field(const json& j, const char* name, const char* what) {
  auto it = j.find(name);
  if (it == j.end()) {
    return Status::Corruption(std::string(what) + " in ZooKeeper lacks \"" + name + "\"");
  }
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return Status::Corruption(std::string(what) + " in ZooKeeper has a bad \"" + name + "\"");
  }
}

Result<int32_t> IntProperty(const catalog::TableDescriptor& table, const char* name,
                            int32_t fallback) {
  auto it = table.properties.find(name);
  if (it == table.properties.end()) return fallback;
  int32_t value = 0;
  try {
    size_t used = 0;
    value = std::stoi(it->second, &used);
    if (used != it->second.size()) throw std::invalid_argument(it->second);
  } catch (const std::exception&) {
    return Status::Invalid("table property " + std::string(name) + " must be an integer, not " +
                           Quote(it->second));
  }
  if (value < 1) return Status::Invalid("table property " + std::string(name) + " must be >= 1");
  return value;
}

}  // namespace

bool BucketState::InSync(int32_t server) const {
  return std::find(isr.begin(), isr.end(), server) != isr.end();
}

const TableMeta* ClusterMetadata::FindTable(const std::string& name) const {
  auto it = tables.find(name);
  return it == tables.end() ? nullptr : &it->second;
}

namespace paths {
std::string Server(int32_t id) { return std::string(kServers) + "/" + std::to_string(id); }
std::string Table(std::string_view name) { return std::string(kTables) + "/" + std::string(name); }
std::string Assignment(std::string_view table) { return Table(table) + "/assignment"; }
std::string Buckets(std::string_view table) { return Table(table) + "/buckets"; }
std::string Bucket(std::string_view table, int32_t bucket) {
  return Buckets(table) + "/" + std::to_string(bucket);
}
std::string State(std::string_view table, int32_t bucket) {
  return Bucket(table, bucket) + "/state";
}
std::string KvSnapshot(std::string_view table, int32_t bucket) {
  return Bucket(table, bucket) + "/kv_snapshot";
}
std::string LakePointer(std::string_view table, bool changelog) {
  return Table(table) + (changelog ? "/changelog_lake" : "/lake");
}
}  // namespace paths

std::string ServerInfoToJson(const ServerInfo& server) {
  return json{{"id", server.id},
              {"flight", server.flight},
              {"kafka", server.kafka},
              {"rack", server.rack},
              {"incarnation", server.incarnation}}
      .dump();
}

Result<ServerInfo> ServerInfoFromJson(std::string_view text) {
  ASSIGN_OR_RAISE(json j, Parse(text, "a server"));
  ServerInfo server;
  ASSIGN_OR_RAISE(server.id, Field<int32_t>(j, "id", "a server"));
  ASSIGN_OR_RAISE(server.flight, Field<std::string>(j, "flight", "a server"));
  ASSIGN_OR_RAISE(server.kafka, Field<std::string>(j, "kafka", "a server"));
  ASSIGN_OR_RAISE(server.rack, Field<std::string>(j, "rack", "a server"));
  if (j.contains("incarnation")) {
    ASSIGN_OR_RAISE(server.incarnation, Field<int64_t>(j, "incarnation", "a server"));
  }
  return server;
}

std::string BucketStateToJson(const BucketState& state) {
  return json{{"leader", state.leader},
              {"leader_epoch", state.leader_epoch},
              {"isr", state.isr},
              {"controller_epoch", state.controller_epoch},
              {"leader_incarnation", state.leader_incarnation}}
      .dump();
}

Result<BucketState> BucketStateFromJson(std::string_view text) {
  ASSIGN_OR_RAISE(json j, Parse(text, "a bucket state"));
  BucketState state;
  ASSIGN_OR_RAISE(state.leader, Field<int32_t>(j, "leader", "a bucket state"));
  ASSIGN_OR_RAISE(state.leader_epoch, Field<int32_t>(j, "leader_epoch", "a bucket state"));
  ASSIGN_OR_RAISE(state.isr, Field<std::vector<int32_t>>(j, "isr", "a bucket state"));
  ASSIGN_OR_RAISE(state.controller_epoch, Field<int32_t>(j, "controller_epoch", "a bucket state"));
  if (j.contains("leader_incarnation")) {
    ASSIGN_OR_RAISE(state.leader_incarnation,
                    Field<int64_t>(j, "leader_incarnation", "a bucket state"));
  }
  return state;
}

std::string KvSnapshotToJson(const engine::KvSnapshotRef& snapshot) {
  return json{
      {"offset", snapshot.offset}, {"path", snapshot.path}, {"leader_epoch", snapshot.leader_epoch}}
      .dump();
}

Result<engine::KvSnapshotRef> KvSnapshotFromJson(std::string_view text) {
  ASSIGN_OR_RAISE(json j, Parse(text, "a KV snapshot"));
  engine::KvSnapshotRef snapshot;
  ASSIGN_OR_RAISE(snapshot.offset, Field<int64_t>(j, "offset", "a KV snapshot"));
  ASSIGN_OR_RAISE(snapshot.path, Field<std::string>(j, "path", "a KV snapshot"));
  if (j.contains("leader_epoch")) {
    ASSIGN_OR_RAISE(snapshot.leader_epoch, Field<int32_t>(j, "leader_epoch", "a KV snapshot"));
  }
  return snapshot;
}

std::string AssignmentToJson(const Assignment& assignment) {
  json j{{"buckets", assignment.replicas}};
  if (!assignment.targets.empty()) {
    json targets = json::array();
    for (const auto& [bucket, replicas] : assignment.targets) {
      targets.push_back({{"bucket", bucket}, {"replicas", replicas}});
    }
    j["moving"] = std::move(targets);
  }
  return j.dump();
}

Result<Assignment> AssignmentFromJson(std::string_view text) {
  ASSIGN_OR_RAISE(json j, Parse(text, "an assignment"));
  Assignment assignment;
  ASSIGN_OR_RAISE(assignment.replicas,
                  (Field<std::vector<std::vector<int32_t>>>(j, "buckets", "an assignment")));
  if (j.contains("moving")) {
    ASSIGN_OR_RAISE(json moving, Field<json>(j, "moving", "an assignment"));
    for (const json& m : moving) {
      ASSIGN_OR_RAISE(int32_t bucket, Field<int32_t>(m, "bucket", "a bucket move"));
      ASSIGN_OR_RAISE(assignment.targets[bucket],
                      Field<std::vector<int32_t>>(m, "replicas", "a bucket move"));
    }
  }
  return assignment;
}

std::string ControllerToJson(int32_t server, int32_t epoch) {
  return json{{"server", server}, {"epoch", epoch}}.dump();
}

Result<std::pair<int32_t, int32_t>> ControllerFromJson(std::string_view text) {
  ASSIGN_OR_RAISE(json j, Parse(text, "the controller"));
  ASSIGN_OR_RAISE(int32_t server, Field<int32_t>(j, "server", "the controller"));
  ASSIGN_OR_RAISE(int32_t epoch, Field<int32_t>(j, "epoch", "the controller"));
  return std::make_pair(server, epoch);
}

Result<std::vector<std::vector<int32_t>>> AssignReplicas(const std::vector<ServerInfo>& servers,
                                                         int32_t buckets,
                                                         int32_t replication_factor,
                                                         int32_t start) {
  const int32_t n = static_cast<int32_t>(servers.size());
  if (replication_factor > n) {
    return Status::Invalid("replication.factor " + std::to_string(replication_factor) +
                           " needs as many live servers; the cluster has " + std::to_string(n));
  }
  std::vector<std::vector<int32_t>> out;
  for (int32_t b = 0; b < buckets; ++b) {
    const int32_t first = (start + b) % n;
    std::vector<int32_t> chosen{first};
    std::set<std::string> racks;
    if (!servers[first].rack.empty()) racks.insert(servers[first].rack);
    // Followers: the next servers round the ring, those on a rack not yet used first.
    for (int pass = 0; pass < 2 && static_cast<int32_t>(chosen.size()) < replication_factor;
         ++pass) {
      for (int32_t k = 1; k < n && static_cast<int32_t>(chosen.size()) < replication_factor; ++k) {
        const int32_t candidate = (first + k) % n;
        if (std::find(chosen.begin(), chosen.end(), candidate) != chosen.end()) continue;
        const std::string& rack = servers[candidate].rack;
        if (pass == 0 && !rack.empty() && racks.count(rack)) continue;
        chosen.push_back(candidate);
        if (!rack.empty()) racks.insert(rack);
      }
    }
    std::vector<int32_t> ids;
    for (int32_t index : chosen) ids.push_back(servers[index].id);
    out.push_back(std::move(ids));
  }
  return out;
}

Result<int32_t> ReplicationFactor(const catalog::TableDescriptor& table, int32_t live_servers) {
  return IntProperty(table, kReplicationFactorProperty, std::min(3, std::max(1, live_servers)));
}

Result<int32_t> MinInsyncReplicas(const catalog::TableDescriptor& table) {
  ASSIGN_OR_RAISE(int32_t factor, ReplicationFactor(table, 3));
  ASSIGN_OR_RAISE(int32_t min_insync,
                  IntProperty(table, kMinInsyncReplicasProperty, std::min(2, factor)));
  return min_insync;
}

bool UncleanLeaderElection(const catalog::TableDescriptor& table) {
  auto it = table.properties.find(kUncleanLeaderElectionProperty);
  return it != table.properties.end() && it->second == "true";
}

}  // namespace oxbow::cluster
