// Cluster mode: each lake table's current-metadata pointer lives in ZooKeeper
// (/oxbow/tables/<t>/lake), swapped by the tiering owner alone (docs/cluster.md#the-lake).
#pragma once

#include <atomic>

#include "oxbow/cluster/cluster.h"
#include "oxbow/iceberg/catalog.h"

namespace oxbow::node::internal {

class ClusterLakePointers : public iceberg::PointerStore {
 public:
  // `cluster` is null until the server joined its cluster (calls then answer Unavailable).
  explicit ClusterLakePointers(const std::atomic<cluster::Cluster*>& cluster) : cluster_(cluster) {}

  Result<iceberg::MetadataPointer> Read(const iceberg::TableIdentifier& table) override;
  Status Replace(const iceberg::TableIdentifier& table,
                 const std::optional<iceberg::MetadataPointer>& expected,
                 const iceberg::MetadataPointer& next) override;
  Result<std::vector<iceberg::TableIdentifier>> List(const std::string& namespace_name) override;

 private:
  Result<cluster::Cluster*> Joined() const;

  const std::atomic<cluster::Cluster*>& cluster_;
};

}  // namespace oxbow::node::internal
