// Where lake tables' current-metadata pointers live beyond a data dir's own files. Cluster mode:
// in ZooKeeper (/oxbow/tables/<t>/lake), swapped by the tiering owner alone
// (docs/cluster.md#the-lake). Embedded mode with an object-store warehouse: in the data dir, each
// copied to the warehouse, from which a lost data dir is rebuilt (docs/operations.md).
#pragma once

#include <atomic>
#include <map>
#include <mutex>

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

// The pointers of `store`, each copied after every change to <copy_dir>/<ns>.<name>.json on
// `copy_fs`. A change stands when its copy fails: the failure is logged and the copy retried at
// the next change.
class CopiedLakePointers : public iceberg::PointerStore {
 public:
  CopiedLakePointers(std::shared_ptr<iceberg::PointerStore> store,
                     std::shared_ptr<FileSystem> copy_fs, std::string copy_dir)
      : store_(std::move(store)), copy_fs_(std::move(copy_fs)), copy_dir_(std::move(copy_dir)) {}

  Result<iceberg::MetadataPointer> Read(const iceberg::TableIdentifier& table) override;
  Status Replace(const iceberg::TableIdentifier& table,
                 const std::optional<iceberg::MetadataPointer>& expected,
                 const iceberg::MetadataPointer& next) override;
  Result<std::vector<iceberg::TableIdentifier>> List(const std::string& namespace_name) override;

  // Copies the pointer of `table` (nothing when it has none).
  Status Copy(const iceberg::TableIdentifier& table);
  // Stores every copied pointer of `copy_dir` in `store`, over any it holds (a lost data dir's
  // rebuild, maybe a second attempt); returns how many.
  static Result<int> Restore(FileSystem& copy_fs, const std::string& copy_dir,
                             iceberg::PointerStore& store);

 private:
  std::shared_ptr<iceberg::PointerStore> store_;
  std::shared_ptr<FileSystem> copy_fs_;
  std::string copy_dir_;
  std::mutex mu_;
  std::map<std::string, iceberg::TableIdentifier> uncopied_;  // last copy failed, by ToString()
};

}  // namespace oxbow::node::internal
