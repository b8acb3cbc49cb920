// Cluster mode: a primary-key table's rows live on the leaders of their buckets, which any
// server may not be. These route a put, a lookup or a snapshot that names no bucket to the
// leaders (docs/cluster.md#primary-key-tables), so that a client needs no bucket function.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "oxbow/client/client.h"
#include "oxbow/cluster/cluster.h"
#include "oxbow/engine/table.h"
#include "oxbow/lake/lake.h"

namespace oxbow::node::internal {

// Flight clients of the other servers, one per location, made on first use.
class Peers {
 public:
  // The client of `location`; with `reconnect`, a new one (on a new connection).
  Result<client::Client*> Get(const std::string& location, bool reconnect = false);

 private:
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<client::Client>> clients_;
  std::vector<std::unique_ptr<client::Client>> retired_;
};

// Where the routed calls of one table go.
struct Route {
  cluster::Cluster* cluster;
  Peers* peers;
  std::shared_ptr<engine::Table> table;
};

// A put whose rows go to their buckets' leaders: this server's buckets locally, the others
// forwarded (a DoPut with "bucket" to each leader), each acknowledged under `acks`. With
// `only_bucket` (a forwarded put), every row must be in that bucket and this server must lead
// it.
Result<std::unique_ptr<engine::PutSession>> StartRoutedPut(const Route& route,
                                                           const arrow::SchemaPtr& client_schema,
                                                           engine::PutOp op, cluster::Acks acks,
                                                           std::optional<int32_t> only_bucket);

// Lets `request` look up the keys of buckets led elsewhere on their leaders (a DoExchange with
// "bucket"), or, when `forwarded` (the lookup came from another server), refuses them as not
// led here.
void RouteLookup(const Route& route, bool forwarded, engine::LookupRequest* request);

// Tiering's read of a bucket this server holds no replica of, on its leader
// (lake::LakeOptions::read_remote_bucket): the leader's offsets (describe_table), then a DoGet
// of the rows up to them.
Result<lake::RemoteBucketRead> ReadBucketOnLeader(const Route& route, int32_t bucket, int64_t from);

// A snapshot of every bucket: each read on its leader, one after the other.
Result<std::unique_ptr<engine::SnapshotReader>> OpenRoutedSnapshot(
    const Route& route, const engine::SnapshotRequest& request);

}  // namespace oxbow::node::internal
