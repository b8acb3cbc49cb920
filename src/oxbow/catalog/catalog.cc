#include "oxbow/catalog/catalog.h"

#include <algorithm>
#include <chrono>

#include "oxbow/catalog/json_internal.h"

namespace oxbow::catalog {
namespace {

using nlohmann::json;

}  // namespace

Result<std::unique_ptr<Catalog>> Catalog::Open(std::shared_ptr<FileSystem> fs,
                                               const std::string& dir, CatalogCopy copy) {
  RETURN_NOT_OK(fs->CreateDirs(dir));
  std::unique_ptr<Catalog> catalog(new Catalog(fs, dir, std::move(copy)));
  const std::string path = JoinPath(dir, "catalog.json");
  auto content = ReadWholeFile(*fs, path);
  if (content.ok()) {
    RETURN_NOT_OK(catalog->Load((*content)->view(), path));
  } else if (!content.status().IsNotFound()) {  // NotFound: a new data dir
    return content.status();
  }
  // A data dir older than its copy, or one whose last copy failed, gets one now.
  if (catalog->copy_.fs) {
    const std::string& copy_path = catalog->copy_.path;
    RETURN_NOT_OK(catalog->copy_.fs->CreateDirs(copy_path.substr(0, copy_path.rfind('/'))));
    RETURN_NOT_OK(catalog->Persist(catalog->tables_));
  }
  return catalog;
}

Status Catalog::Load(std::string_view content, const std::string& path) {
  return TranslateJsonErrors("catalog.json", [&]() -> Status {
    ASSIGN_OR_RAISE(json j, ParseJson(content, path));
    if (!j.is_object() || !j.contains("tables") || !j["tables"].is_array()) {
      return Status::Corruption(path + " has no \"tables\" list");
    }
    next_table_id_ = j.value("next_table_id", int64_t{1});
    for (const auto& jt : j["tables"]) {
      auto t = DescriptorFrom(jt);
      if (!t.ok()) return t.status().WithContext(path);
      tables_[t->name] = *t;
    }
    return Status::OK();
  });
}

Status Catalog::RestoreFromCopy(const CatalogCopy& copy, FileSystem& fs, const std::string& dir) {
  auto content = ReadWholeFile(*copy.fs, copy.path);
  if (content.status().IsNotFound()) {
    return Status::NotFound("the warehouse holds no copy of a catalog (" + copy.path + ")");
  }
  RETURN_NOT_OK(content.status());
  Catalog parsed(nullptr, dir, {});
  RETURN_NOT_OK(parsed.Load((*content)->view(), copy.path));
  RETURN_NOT_OK(fs.CreateDirs(dir));
  return WriteFileAtomically(fs, dir, "catalog.json", (*content)->view());
}

Status Catalog::Persist(const std::map<std::string, TableDescriptor>& tables) const {
  json list = json::array();
  for (const auto& [name, t] : tables) list.push_back(DescriptorJson(t));
  json root = {{"version", 1}, {"next_table_id", next_table_id_}, {"tables", std::move(list)}};
  const std::string content = root.dump(2);
  if (copy_.fs) {
    RETURN_NOT_OK(WriteWholeFile(*copy_.fs, copy_.path, content)
                      .WithContext("writing the catalog's copy " + copy_.path));
  }
  return WriteFileAtomically(*fs_, dir_, "catalog.json", content);
}

Result<TableDescriptor> Catalog::Create(TableDescriptor table, bool if_not_exists) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = tables_.find(table.name); it != tables_.end()) {
    if (if_not_exists) return it->second;
    return Status::AlreadyExists("table " + Quote(table.name) + " already exists");
  }
  table.table_id = next_table_id_++;
  table.ResetSchemaVersions();  // versions are the catalog's, never the client's
  table.created_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  auto next = tables_;
  next[table.name] = table;
  RETURN_NOT_OK(Persist(next));
  tables_ = std::move(next);
  return table;
}

Status Catalog::Adopt(const TableDescriptor& table) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tables_.count(table.name)) {
    return Status::AlreadyExists("table " + Quote(table.name) + " already exists");
  }
  for (const auto& [name, existing] : tables_) {
    if (existing.table_id == table.table_id) {
      return Status::AlreadyExists("table id " + std::to_string(table.table_id) +
                                   " is taken by table " + Quote(name));
    }
  }
  auto next = tables_;
  next[table.name] = table;
  RETURN_NOT_OK(Persist(next));
  tables_ = std::move(next);
  next_table_id_ = std::max(next_table_id_, table.table_id + 1);
  return Status::OK();
}

Status Catalog::Drop(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!tables_.count(name)) return Status::NotFound("table " + Quote(name) + " does not exist");
  auto next = tables_;
  next.erase(name);
  RETURN_NOT_OK(Persist(next));
  tables_ = std::move(next);
  return Status::OK();
}

Status Catalog::Replace(const TableDescriptor& table) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tables_.find(table.name);
  if (it == tables_.end() || it->second.table_id != table.table_id) {
    return Status::NotFound("table " + Quote(table.name) + " does not exist");
  }
  auto next = tables_;
  next[table.name] = table;
  RETURN_NOT_OK(Persist(next));
  tables_ = std::move(next);
  return Status::OK();
}

Result<TableDescriptor> Catalog::Get(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tables_.find(name);
  if (it == tables_.end()) return Status::NotFound("table " + Quote(name) + " does not exist");
  return it->second;
}

std::vector<TableDescriptor> Catalog::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TableDescriptor> out;
  for (const auto& [name, t] : tables_) out.push_back(t);
  return out;
}

}  // namespace oxbow::catalog
