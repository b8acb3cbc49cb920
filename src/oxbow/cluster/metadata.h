// What cluster mode keeps in ZooKeeper (docs/cluster.md#zookeeper-layout): the znode paths, the
// JSON of each znode, and the assignment of bucket replicas to servers. Pure functions; the
// ZooKeeper calls are elsewhere.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/catalog/descriptor.h"
#include "oxbow/common/status.h"
#include "oxbow/engine/table.h"

namespace oxbow::cluster {

// /oxbow/servers/<id>: a live server and where clients reach it.
struct ServerInfo {
  int32_t id = -1;
  std::string flight;  // "grpc://host:port"
  std::string kafka;   // "host:port"; empty without a Kafka listener
  std::string rack;    // empty: none
  // Random, new at each start of the process (Kafka's broker epoch, KIP-380): a registration
  // with another incarnation is a server that restarted, maybe on an empty disk. 0: unknown.
  int64_t incarnation = 0;
};

// /oxbow/tables/<t>/buckets/<b>/state: who leads a bucket, since when, and who is in sync.
struct BucketState {
  int32_t leader = -1;  // -1: offline (no in-sync replica alive)
  int32_t leader_epoch = 0;
  std::vector<int32_t> isr;
  int32_t controller_epoch = 0;  // of the controller that last wrote it
  // The leader's incarnation when it was elected: a leader that restarted since does not lead
  // on (its log may be empty) until the controller elects again. 0: unknown.
  int64_t leader_incarnation = 0;
  int32_t version = -1;  // the znode's version (not stored in it)

  bool InSync(int32_t server) const;
};

// Everything a server knows of one table.
struct TableMeta {
  catalog::TableDescriptor descriptor;
  int32_t descriptor_version = -1;
  // Replicas of each bucket, preferred leader first; empty until the controller assigned them.
  std::vector<std::vector<int32_t>> replicas;
  // Buckets being moved: bucket -> its target replicas (Assignment::targets).
  std::map<int32_t, std::vector<int32_t>> targets;
  int32_t assignment_version = -1;
  std::vector<BucketState> states;  // per bucket; empty until assigned
};

// A server's picture of the cluster, rebuilt from ZooKeeper on every change.
struct ClusterMetadata {
  std::map<int32_t, ServerInfo> servers;  // live ones
  int32_t controller = -1;
  int32_t controller_epoch = 0;
  std::map<std::string, TableMeta> tables;

  const TableMeta* FindTable(const std::string& name) const;
};

namespace paths {
inline constexpr char kRoot[] = "/oxbow";
inline constexpr char kServers[] = "/oxbow/servers";
inline constexpr char kController[] = "/oxbow/controller";
inline constexpr char kControllerEpoch[] = "/oxbow/controller_epoch";
inline constexpr char kTables[] = "/oxbow/tables";
inline constexpr char kNextTableId[] = "/oxbow/next_table_id";
inline constexpr char kClusterSecret[] = "/oxbow/cluster_secret";
// The schema registry's state: registry.json's document (docs/schema-registry.md#durability).
inline constexpr char kSchemaRegistry[] = "/oxbow/schema_registry";
std::string Server(int32_t id);
std::string Table(std::string_view name);
std::string Assignment(std::string_view table);
std::string Buckets(std::string_view table);
std::string Bucket(std::string_view table, int32_t bucket);
std::string State(std::string_view table, int32_t bucket);
// {"offset": o, "path": "<warehouse>/_kv/..."}: the bucket's latest KV snapshot.
std::string KvSnapshot(std::string_view table, int32_t bucket);
// {"location": "<metadata file>", "version": n}: the table's current lake metadata (with
// `changelog`, its changelog lake table's).
std::string LakePointer(std::string_view table, bool changelog);
}  // namespace paths

std::string ServerInfoToJson(const ServerInfo& server);
Result<ServerInfo> ServerInfoFromJson(std::string_view json);
std::string BucketStateToJson(const BucketState& state);
std::string KvSnapshotToJson(const engine::KvSnapshotRef& snapshot);
Result<engine::KvSnapshotRef> KvSnapshotFromJson(std::string_view json);
Result<BucketState> BucketStateFromJson(std::string_view json);
// /oxbow/tables/<t>/assignment: each bucket's replicas, and the buckets being moved.
struct Assignment {
  std::vector<std::vector<int32_t>> replicas;  // per bucket, preferred leader first
  // Bucket -> the replicas it is being moved to (Cluster::ReassignBucket); the controller
  // drives each to completion and then removes it.
  std::map<int32_t, std::vector<int32_t>> targets;
};
std::string AssignmentToJson(const Assignment& assignment);
Result<Assignment> AssignmentFromJson(std::string_view json);
// /oxbow/controller: {"server": id, "epoch": e}.
std::string ControllerToJson(int32_t server, int32_t epoch);
Result<std::pair<int32_t, int32_t>> ControllerFromJson(std::string_view json);

// Replicas for `buckets` buckets on `servers` (sorted by id), as Kafka assigns partitions:
// round-robin from `start`, the followers of each bucket shifted by a per-bucket step, and when
// servers name racks, no two replicas of a bucket on one rack while racks remain unused.
// InvalidArgument when there are fewer servers than `replication_factor`.
Result<std::vector<std::vector<int32_t>>> AssignReplicas(const std::vector<ServerInfo>& servers,
                                                         int32_t buckets,
                                                         int32_t replication_factor, int32_t start);

// The table properties of cluster mode and their defaults.
inline constexpr char kReplicationFactorProperty[] = "replication.factor";
inline constexpr char kMinInsyncReplicasProperty[] = "min.insync.replicas";
inline constexpr char kUncleanLeaderElectionProperty[] = "unclean.leader.election";
// replication.factor: the property, else min(3, live servers).
Result<int32_t> ReplicationFactor(const catalog::TableDescriptor& table, int32_t live_servers);
// min.insync.replicas: the property, else min(2, replication factor).
Result<int32_t> MinInsyncReplicas(const catalog::TableDescriptor& table);
bool UncleanLeaderElection(const catalog::TableDescriptor& table);

}  // namespace oxbow::cluster
