// Consumer groups' committed offsets in cluster mode: rows of the replicated log table
// __oxbow.group_offsets (docs/cluster.md#consumer-groups). A group's commits go to bucket
// FNV-1a(group) mod buckets; the leader of that bucket coordinates the group, appends each commit
// with acks=all and serves the group's offsets from memory, read from the bucket's log once per
// leader epoch.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "oxbow/clientstate/offset_store.h"
#include "oxbow/cluster/cluster.h"
#include "oxbow/engine/engine.h"

namespace oxbow::node {

class Node;

inline constexpr char kGroupOffsetsTable[] = "__oxbow.group_offsets";
inline constexpr int32_t kGroupOffsetsBuckets = 8;

class ReplicatedOffsetStore final : public clientstate::OffsetStore {
 public:
  // `node`, `engine` and `cluster` outlive the store.
  ReplicatedOffsetStore(Node* node, engine::Engine* engine, cluster::Cluster* cluster,
                        std::function<Result<std::string>(std::string_view)> table_for_topic)
      : node_(node),
        engine_(engine),
        cluster_(cluster),
        table_for_topic_(std::move(table_for_topic)) {}

  Result<std::optional<int32_t>> Coordinator(const std::string& group) override;
  Status Prepare(const std::string& group) override;
  Status Commit(const std::string& group,
                const std::vector<clientstate::OffsetCommit>& commits) override;
  std::optional<clientstate::GroupOffsets> Offsets(const std::string& group) const override;
  bool HasGroup(const std::string& group) const override;
  std::vector<std::string> Groups() const override;
  // Nothing to write: each commit names its topic's table id, and a commit of a table that no
  // longer exists (or was created anew) is not shown.
  Status ForgetTopics(const std::vector<std::string>& topics) override;
  // Appends a tombstone row per partition (topic_table_id kForgotten).
  Status Forget(const std::string& group,
                const std::vector<clientstate::TopicPartition>& partitions) override;

 private:
  // The topic_table_id of a row that forgets the partition's position.
  static constexpr int64_t kForgotten = -2;
  // Appends one row per commit to the group's bucket, acks=all; returns each topic's table id.
  Result<std::vector<int64_t>> Append(const std::string& group,
                                      const std::vector<clientstate::OffsetCommit>& commits,
                                      bool forget);
  struct Committed {
    clientstate::CommittedOffset position;
    int64_t table_id = -1;  // of the topic's table when committed; -1: no such table
  };
  using Partitions = std::map<int32_t, Committed>;
  using Topics = std::map<std::string, Partitions>;
  struct Bucket {
    int32_t loaded_epoch = -1;  // the leader epoch its groups were read in
    std::map<std::string, Topics> groups;
  };

  // The offsets table, created on first use (replication as for any table).
  Status EnsureTable();
  // Loads the group's bucket when this server leads it in an epoch not loaded yet. Under mu_.
  Result<Bucket*> Ready(const std::string& group);
  Status Load(int32_t bucket, Bucket* into);
  int64_t TableId(const std::string& topic) const;
  // The group's visible offsets. Under mu_.
  std::optional<clientstate::GroupOffsets> Visible(const Topics& topics) const;

  Node* const node_;
  engine::Engine* const engine_;
  cluster::Cluster* const cluster_;
  const std::function<Result<std::string>(std::string_view)> table_for_topic_;
  mutable std::mutex mu_;
  std::map<int32_t, Bucket> buckets_;  // guarded by mu_
};

}  // namespace oxbow::node
