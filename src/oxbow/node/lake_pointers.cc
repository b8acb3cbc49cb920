#include <spdlog/spdlog.h>

#include <cstring>

#include "oxbow/lake/lake.h"
#include "oxbow/node/lake_pointers_internal.h"

namespace oxbow::node::internal {

namespace {

// The table a lake table belongs to: ns.t for {"ns", "t"} and {"ns", "t$changelog"}.
struct LakeOf {
  std::string table;
  bool changelog = false;
};

LakeOf Owner(const iceberg::TableIdentifier& id) {
  std::string name = id.name;
  const bool changelog = name.ends_with(lake::kChangelogSuffix);
  if (changelog) name.resize(name.size() - std::strlen(lake::kChangelogSuffix));
  return {id.namespace_name + "." + name, changelog};
}

// Where a table's pointer lives, for errors.
std::string ZnodeOf(const LakeOf& lake) {
  return "in ZooKeeper of " + Quote(lake.table) + (lake.changelog ? "'s changelog lake" : "");
}

}  // namespace

Result<cluster::Cluster*> ClusterLakePointers::Joined() const {
  cluster::Cluster* cluster = cluster_.load();
  if (!cluster) return Status::Unavailable("this server has not joined its cluster yet");
  return cluster;
}

Result<iceberg::MetadataPointer> ClusterLakePointers::Read(const iceberg::TableIdentifier& table) {
  ASSIGN_OR_RAISE(cluster::Cluster * cluster, Joined());
  const LakeOf lake = Owner(table);
  auto node = cluster->ReadLakePointer(lake.table, lake.changelog);
  if (node.status().IsNotFound()) {
    return Status::NotFound("no Iceberg table " + table.ToString() + " in the catalog");
  }
  RETURN_NOT_OK(node.status());
  return iceberg::PointerFromJson(node->first, ZnodeOf(lake));
}

Status ClusterLakePointers::Replace(const iceberg::TableIdentifier& table,
                                    const std::optional<iceberg::MetadataPointer>& expected,
                                    const iceberg::MetadataPointer& next) {
  ASSIGN_OR_RAISE(cluster::Cluster * cluster, Joined());
  const LakeOf lake = Owner(table);
  std::optional<int32_t> version;
  auto node = cluster->ReadLakePointer(lake.table, lake.changelog);
  if (node.ok()) {
    ASSIGN_OR_RAISE(auto stored, iceberg::PointerFromJson(node->first, ZnodeOf(lake)));
    if (!expected || stored.version != expected->version || stored.location != expected->location) {
      return Status::AlreadyExists("commit conflict: the pointer of " + table.ToString() +
                                   " changed meanwhile");
    }
    version = node->second;
  } else if (!node.status().IsNotFound()) {
    return node.status();
  } else if (expected) {
    return Status::AlreadyExists("commit conflict: the pointer of " + table.ToString() +
                                 " was removed meanwhile");
  }
  return cluster->ReplaceLakePointer(lake.table, lake.changelog, version,
                                     iceberg::PointerToJson(next));
}

Result<std::vector<iceberg::TableIdentifier>> ClusterLakePointers::List(
    const std::string& namespace_name) {
  ASSIGN_OR_RAISE(cluster::Cluster * cluster, Joined());
  std::vector<iceberg::TableIdentifier> tables;
  const std::string prefix = namespace_name + ".";
  for (const auto& [name, table] : cluster->Metadata()->tables) {
    if (!name.starts_with(prefix)) continue;
    const std::string short_name = name.substr(prefix.size());
    for (const bool changelog : {false, true}) {
      auto node = cluster->ReadLakePointer(name, changelog);
      if (node.status().IsNotFound()) continue;
      RETURN_NOT_OK(node.status());
      tables.push_back(
          {namespace_name, changelog ? short_name + lake::kChangelogSuffix : short_name});
    }
  }
  std::sort(tables.begin(), tables.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return tables;
}

Result<iceberg::MetadataPointer> CopiedLakePointers::Read(const iceberg::TableIdentifier& table) {
  return store_->Read(table);
}

Result<std::vector<iceberg::TableIdentifier>> CopiedLakePointers::List(
    const std::string& namespace_name) {
  return store_->List(namespace_name);
}

Status CopiedLakePointers::Replace(const iceberg::TableIdentifier& table,
                                   const std::optional<iceberg::MetadataPointer>& expected,
                                   const iceberg::MetadataPointer& next) {
  RETURN_NOT_OK(store_->Replace(table, expected, next));
  std::vector<iceberg::TableIdentifier> pending = {table};
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, id] : uncopied_) {
      if (name != table.ToString()) pending.push_back(id);
    }
  }
  for (const auto& id : pending) {
    if (Status st = Copy(id); !st.ok()) {
      spdlog::warn(
          "lake: copying the pointer of {} to the warehouse: {} (retried at the next "
          "commit)",
          id.ToString(), st.message());
    }
  }
  return Status::OK();
}

Status CopiedLakePointers::Copy(const iceberg::TableIdentifier& table) {
  const std::string name = table.ToString();
  auto pointer = store_->Read(table);
  Status st = pointer.status().IsNotFound() ? Status::OK() : pointer.status();
  if (pointer.ok()) {
    st = copy_fs_->CreateDirs(copy_dir_);
    if (st.ok()) {
      st = WriteWholeFile(*copy_fs_, JoinPath(copy_dir_, name + ".json"),
                          iceberg::PointerToJson(*pointer));
    }
  }
  std::lock_guard lock(mu_);
  if (st.ok()) {
    uncopied_.erase(name);
  } else {
    uncopied_.emplace(name, table);
  }
  return st;
}

Result<int> CopiedLakePointers::Restore(FileSystem& copy_fs, const std::string& copy_dir,
                                        iceberg::PointerStore& store) {
  auto names = copy_fs.ListDir(copy_dir);
  if (names.status().IsNotFound()) return 0;
  RETURN_NOT_OK(names.status());
  int restored = 0;
  for (const std::string& file : *names) {
    const size_t dot = file.find('.');
    if (!file.ends_with(".json") || dot == std::string::npos || dot + 5 >= file.size()) continue;
    const std::string path = JoinPath(copy_dir, file);
    ASSIGN_OR_RAISE(auto bytes, ReadWholeFile(copy_fs, path));
    ASSIGN_OR_RAISE(auto pointer, iceberg::PointerFromJson(bytes->view(), path));
    const iceberg::TableIdentifier id{file.substr(0, dot),
                                      file.substr(dot + 1, file.size() - dot - 6)};
    // Stored over what an unfinished rebuild restored before.
    auto stored = store.Read(id);
    if (!stored.ok() && !stored.status().IsNotFound()) return stored.status();
    RETURN_NOT_OK(store.Replace(
        id, stored.ok() ? std::optional<iceberg::MetadataPointer>(*stored) : std::nullopt,
        pointer));
    ++restored;
  }
  return restored;
}

}  // namespace oxbow::node::internal
