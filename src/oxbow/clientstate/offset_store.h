// The positions consumer groups committed (Kafka's OffsetCommit): in embedded mode durable in one
// file, <dir>/offsets.json (docs/kafka.md#consumer-groups). The group protocol itself (members,
// generations, rebalances) stays with the front end; this is the state it leaves behind.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "oxbow/common/file_system.h"

namespace oxbow::clientstate {

struct CommittedOffset {
  int64_t offset = -1;
  std::optional<std::string> metadata;
  bool operator==(const CommittedOffset&) const = default;
};

// One partition's position in a commit.
struct OffsetCommit {
  std::string topic;
  int32_t partition = 0;
  CommittedOffset committed;
};

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;
};

// Removes `partition` of `topic` from a topic -> partition -> position map, and the topic once
// it has none left.
template <typename Topics>
void ErasePartition(Topics& topics, const std::string& topic, int32_t partition) {
  auto t = topics.find(topic);
  if (t == topics.end()) return;
  t->second.erase(partition);
  if (t->second.empty()) topics.erase(t);
}

// A group's positions: topic -> partition -> position.
using GroupOffsets = std::map<std::string, std::map<int32_t, CommittedOffset>>;

// Where a group's commits go and come from. Embedded mode keeps them in one file (Open); cluster
// mode in a replicated table whose bucket leaders coordinate the groups (node's).
class OffsetStore {
 public:
  virtual ~OffsetStore() = default;
  // The file store: loads <dir>/offsets.json (absent: no commits yet); Corruption naming the file
  // otherwise.
  static Result<std::unique_ptr<OffsetStore>> Open(std::shared_ptr<FileSystem> fs, std::string dir);

  // The server that coordinates `group`; nullopt when this one coordinates every group.
  virtual Result<std::optional<int32_t>> Coordinator(const std::string& group) {
    (void)group;
    return std::optional<int32_t>();
  }
  // OK when this server can serve `group` now; Unavailable starting with kNotCoordinator or
  // kCoordinatorLoading otherwise.
  virtual Status Prepare(const std::string& group) {
    (void)group;
    return Status::OK();
  }
  // Records the commits of `group`; durable (in cluster mode: acknowledged by acks=all) when it
  // returns OK.
  virtual Status Commit(const std::string& group, const std::vector<OffsetCommit>& commits) = 0;
  // The group's positions; nullopt when it never committed (or all its topics were forgotten).
  virtual std::optional<GroupOffsets> Offsets(const std::string& group) const = 0;
  virtual bool HasGroup(const std::string& group) const = 0;
  // Every group with positions (that this server coordinates), sorted.
  virtual std::vector<std::string> Groups() const = 0;
  // Forgets every group's positions of these topics (deleted topics), as Kafka does.
  virtual Status ForgetTopics(const std::vector<std::string>& topics) = 0;
  // Forgets the group's positions of these partitions (OffsetDelete, DeleteGroups); a group left
  // with none is gone. Durable (in cluster mode: acknowledged by acks=all) when it returns OK.
  virtual Status Forget(const std::string& group,
                        const std::vector<TopicPartition>& partitions) = 0;
};

// The prefixes of Prepare's answers.
inline constexpr char kNotCoordinator[] = "not the coordinator";
inline constexpr char kCoordinatorLoading[] = "loading the group's offsets";

}  // namespace oxbow::clientstate
