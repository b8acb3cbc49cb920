#include "oxbow/clientstate/offset_store.h"

#include <nlohmann/json.hpp>

namespace oxbow::clientstate {
namespace {

constexpr char kOffsetsFile[] = "offsets.json";

class FileOffsetStore final : public OffsetStore {
 public:
  FileOffsetStore(std::shared_ptr<FileSystem> fs, std::string dir)
      : fs_(std::move(fs)), dir_(std::move(dir)) {}

  Status Load();
  Status Commit(const std::string& group, const std::vector<OffsetCommit>& commits) override;
  std::optional<GroupOffsets> Offsets(const std::string& group) const override;
  bool HasGroup(const std::string& group) const override;
  std::vector<std::string> Groups() const override;
  Status ForgetTopics(const std::vector<std::string>& topics) override;
  Status Forget(const std::string& group, const std::vector<TopicPartition>& partitions) override;

 private:
  Status Save() const;  // under mu_

  const std::shared_ptr<FileSystem> fs_;
  const std::string dir_;
  mutable std::mutex mu_;
  std::map<std::string, GroupOffsets> groups_;  // guarded by mu_
};

}  // namespace

// offsets.json: {"groups": {group: {topic: {partition: {"offset", "metadata"}}}}}.
Result<std::unique_ptr<OffsetStore>> OffsetStore::Open(std::shared_ptr<FileSystem> fs,
                                                       std::string dir) {
  auto store = std::make_unique<FileOffsetStore>(std::move(fs), std::move(dir));
  RETURN_NOT_OK(store->Load());
  return std::unique_ptr<OffsetStore>(std::move(store));
}

Status FileOffsetStore::Load() {
  RETURN_NOT_OK(fs_->CreateDirs(dir_));
  const std::string path = JoinPath(dir_, kOffsetsFile);
  auto size = fs_->FileSize(path);
  if (size.status().IsNotFound()) return Status::OK();
  ASSIGN_OR_RAISE(auto buffer, ReadWholeFile(*fs_, path));
  const auto doc = nlohmann::json::parse(buffer->data(), buffer->data() + buffer->size(), nullptr,
                                         /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("groups") || !doc["groups"].is_object()) {
    return Status::Corruption(path + " is not a consumer group offsets file");
  }
  try {
    for (const auto& [group, topics] : doc["groups"].items()) {
      for (const auto& [topic, partitions] : topics.items()) {
        for (const auto& [partition, committed] : partitions.items()) {
          CommittedOffset& out = groups_[group][topic][std::stoi(partition)];
          out.offset = committed.at("offset").get<int64_t>();
          if (committed.contains("metadata") && !committed["metadata"].is_null()) {
            out.metadata = committed["metadata"].get<std::string>();
          }
        }
      }
    }
  } catch (const std::exception& e) {
    return Status::Corruption(path + ": " + e.what());
  }
  return Status::OK();
}

Status FileOffsetStore::Save() const {
  nlohmann::json groups = nlohmann::json::object();
  for (const auto& [group, topics] : groups_) {
    for (const auto& [topic, partitions] : topics) {
      for (const auto& [partition, committed] : partitions) {
        groups[group][topic][std::to_string(partition)] = {
            {"offset", committed.offset},
            {"metadata", committed.metadata ? nlohmann::json(*committed.metadata) : nullptr}};
      }
    }
  }
  const nlohmann::json doc = {{"groups", groups}};
  return WriteFileAtomically(*fs_, dir_, kOffsetsFile,
                             doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

Status FileOffsetStore::Commit(const std::string& group, const std::vector<OffsetCommit>& commits) {
  std::lock_guard lock(mu_);
  GroupOffsets& topics = groups_[group];
  for (const auto& c : commits) topics[c.topic][c.partition] = c.committed;
  return Save();
}

std::optional<GroupOffsets> FileOffsetStore::Offsets(const std::string& group) const {
  std::lock_guard lock(mu_);
  auto it = groups_.find(group);
  if (it == groups_.end()) return std::nullopt;
  return it->second;
}

bool FileOffsetStore::HasGroup(const std::string& group) const {
  std::lock_guard lock(mu_);
  return groups_.contains(group);
}

std::vector<std::string> FileOffsetStore::Groups() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> names;
  for (const auto& [group, topics] : groups_) names.push_back(group);
  return names;
}

Status FileOffsetStore::ForgetTopics(const std::vector<std::string>& topics) {
  std::lock_guard lock(mu_);
  bool changed = false;
  for (auto group = groups_.begin(); group != groups_.end();) {
    for (const auto& topic : topics) changed |= group->second.erase(topic) > 0;
    group = group->second.empty() ? groups_.erase(group) : std::next(group);
  }
  return changed ? Save() : Status::OK();
}

Status FileOffsetStore::Forget(const std::string& group,
                               const std::vector<TopicPartition>& partitions) {
  std::lock_guard lock(mu_);
  auto it = groups_.find(group);
  if (it == groups_.end()) return Status::OK();
  const GroupOffsets before = it->second;
  for (const auto& [topic, partition] : partitions) ErasePartition(it->second, topic, partition);
  if (it->second == before) return Status::OK();
  const bool gone = it->second.empty();
  if (gone) groups_.erase(it);
  Status saved = Save();
  if (!saved.ok()) groups_[group] = before;  // memory stays what the file holds
  return saved;
}

}  // namespace oxbow::clientstate
