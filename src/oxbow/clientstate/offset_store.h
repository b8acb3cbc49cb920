// The positions consumer groups committed (Kafka's OffsetCommit), durable in one file:
// <dir>/offsets.json (docs/kafka.md#consumer-groups). The group protocol itself (members,
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
};

// One partition's position in a commit.
struct OffsetCommit {
  std::string topic;
  int32_t partition = 0;
  CommittedOffset committed;
};

// A group's positions: topic -> partition -> position.
using GroupOffsets = std::map<std::string, std::map<int32_t, CommittedOffset>>;

class OffsetStore {
 public:
  // Loads <dir>/offsets.json (absent: no commits yet); Corruption naming the file otherwise.
  static Result<std::unique_ptr<OffsetStore>> Open(std::shared_ptr<FileSystem> fs, std::string dir);

  // Records the commits of `group`; durable when it returns OK.
  Status Commit(const std::string& group, const std::vector<OffsetCommit>& commits);
  // The group's positions; nullopt when it never committed (or all its topics were forgotten).
  std::optional<GroupOffsets> Offsets(const std::string& group) const;
  bool HasGroup(const std::string& group) const;
  // Every group with positions, sorted.
  std::vector<std::string> Groups() const;
  // Forgets every group's positions of these topics (deleted topics), as Kafka does.
  Status ForgetTopics(const std::vector<std::string>& topics);

 private:
  OffsetStore(std::shared_ptr<FileSystem> fs, std::string dir)
      : fs_(std::move(fs)), dir_(std::move(dir)) {}
  Status Save();  // under mu_

  const std::shared_ptr<FileSystem> fs_;
  const std::string dir_;
  mutable std::mutex mu_;
  std::map<std::string, GroupOffsets> groups_;  // guarded by mu_
};

}  // namespace oxbow::clientstate
