#include <cstring>
#include <nlohmann/json.hpp>

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

Result<iceberg::MetadataPointer> ParsePointer(const std::string& table, const std::string& data) {
  auto json = nlohmann::json::parse(data, nullptr, false);
  if (!json.is_object() || !json["location"].is_string() || !json["version"].is_number_integer()) {
    return Status::Corruption("the lake pointer of " + Quote(table) +
                              " in ZooKeeper is not valid: " + data);
  }
  return iceberg::MetadataPointer{json["location"].get<std::string>(),
                                  json["version"].get<int64_t>()};
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
  return ParsePointer(lake.table, node->first);
}

Status ClusterLakePointers::Replace(const iceberg::TableIdentifier& table,
                                    const std::optional<iceberg::MetadataPointer>& expected,
                                    const iceberg::MetadataPointer& next) {
  ASSIGN_OR_RAISE(cluster::Cluster * cluster, Joined());
  const LakeOf lake = Owner(table);
  std::optional<int32_t> version;
  auto node = cluster->ReadLakePointer(lake.table, lake.changelog);
  if (node.ok()) {
    ASSIGN_OR_RAISE(auto stored, ParsePointer(lake.table, node->first));
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
  const nlohmann::json data = {{"location", next.location}, {"version", next.version}};
  return cluster->ReplaceLakePointer(lake.table, lake.changelog, version, data.dump());
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

}  // namespace oxbow::node::internal
