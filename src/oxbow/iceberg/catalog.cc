#include "oxbow/iceberg/catalog.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "oxbow/common/parse.h"
#include "oxbow/iceberg/io_internal.h"
#include "oxbow/iceberg/manifest.h"

namespace oxbow::iceberg {

namespace {

constexpr char kVersionHint[] = "version-hint.text";

std::string VersionFileName(int64_t version) {
  // Appended piecewise: `"v" + std::string` trips GCC 12's -Wrestrict (GCC bug 105329).
  std::string name = "v";
  name += std::to_string(version);
  name += ".metadata.json";
  return name;
}

// ".v<N>.metadata.json.<uuid>.tmp": where version N is written before it is published.
std::string TemporaryVersionFileName(int64_t version) {
  std::string name = ".";
  name += VersionFileName(version);
  name += ".";
  name += RandomUuid();
  name += ".tmp";
  return name;
}

// N of "v<N>.metadata.json" (N >= 1), or nullopt.
std::optional<int64_t> ParseVersionFileName(std::string_view name) {
  constexpr std::string_view kSuffix = ".metadata.json";
  if (name.size() <= 1 + kSuffix.size() || name[0] != 'v' || !name.ends_with(kSuffix)) {
    return std::nullopt;
  }
  auto version = ParseInt64(name.substr(1, name.size() - 1 - kSuffix.size()));
  if (!version.ok() || *version < 1) return std::nullopt;
  return *version;
}

std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return s;
}

bool Exists(FileSystem* fs, const std::string& path) { return fs->FileSize(path).ok(); }

}  // namespace

std::string TableIdentifier::ToString() const {
  return namespace_name.empty() ? name : namespace_name + "." + name;
}

FileCatalog::FileCatalog(std::shared_ptr<FileSystem> fs, std::string warehouse,
                         FileCatalogOptions options)
    : fs_(std::move(fs)), warehouse_(std::move(warehouse)), options_(options) {}

std::string FileCatalog::TableLocation(const TableIdentifier& table) const {
  if (table.namespace_name.empty()) return JoinPath(warehouse_, table.name);
  return JoinPath(JoinPath(warehouse_, table.namespace_name), table.name);
}

std::string FileCatalog::MetadataDir(const TableIdentifier& table) const {
  return JoinPath(LocalPath(TableLocation(table)), "metadata");
}

MetadataPointer FileCatalog::Pointer(const TableIdentifier& table, int64_t version) const {
  return {TableLocation(table) + "/metadata/" + VersionFileName(version), version};
}

Result<MetadataPointer> FileCatalog::CurrentMetadata(const TableIdentifier& table) {
  const std::string dir = MetadataDir(table);
  int64_t version = 0;
  auto hint = ReadWholeFile(fs_.get(), JoinPath(dir, kVersionHint));
  if (hint.ok()) {
    auto hinted = ParseInt64(Trimmed(*hint));
    if (hinted.ok()) version = *hinted;
  }
  if (version < 1 || !Exists(fs_.get(), JoinPath(dir, VersionFileName(version)))) {
    auto names = fs_->ListDir(dir);
    if (!names.ok()) {
      return Status::NotFound("no Iceberg table at " + TableLocation(table) + ": " +
                              names.status().message());
    }
    version = 0;
    for (const auto& name : *names) {
      version = std::max(version, ParseVersionFileName(name).value_or(0));
    }
    if (version < 1) return Status::NotFound("no Iceberg table metadata in " + dir);
  }
  // The hint is written after the publish, so newer versions may exist.
  while (Exists(fs_.get(), JoinPath(dir, VersionFileName(version + 1)))) ++version;
  return Pointer(table, version);
}

Result<MetadataPointer> FileCatalog::SwapMetadata(const TableIdentifier& table,
                                                  const MetadataPointer& base,
                                                  std::string_view metadata_json) {
  const std::string dir = MetadataDir(table);
  if (base.version == 0) RETURN_NOT_OK(fs_->CreateDirs(dir));
  const int64_t version = base.version + 1;
  const std::string tmp = JoinPath(dir, TemporaryVersionFileName(version));
  Status st = WriteWholeFile(fs_.get(), tmp, metadata_json, options_.sync);
  if (st.ok()) st = fs_->RenameNoReplace(tmp, JoinPath(dir, VersionFileName(version)));
  if (!st.ok()) {
    (void)fs_->Remove(tmp);
    if (st.code() == StatusCode::kAlreadyExists) {
      return Status::AlreadyExists("commit conflict: version " + std::to_string(version) + " of " +
                                   TableLocation(table) + " was published by another writer");
    }
    return st;
  }
  if (options_.sync) RETURN_NOT_OK(fs_->SyncDir(dir));

  // The hint only speeds up CurrentMetadata, which probes past it, so failures are not fatal.
  std::string hint_name = ".";  // appended piecewise, see VersionFileName
  hint_name += kVersionHint;
  hint_name += ".";
  hint_name += RandomUuid();
  const std::string hint_tmp = JoinPath(dir, hint_name);
  if (WriteWholeFile(fs_.get(), hint_tmp, std::to_string(version), false).ok()) {
    if (!fs_->Rename(hint_tmp, JoinPath(dir, kVersionHint)).ok()) (void)fs_->Remove(hint_tmp);
  }
  return Pointer(table, version);
}

Result<bool> FileCatalog::TableExists(const TableIdentifier& table) {
  auto current = CurrentMetadata(table);
  if (current.ok()) return true;
  if (current.status().IsNotFound()) return false;
  return current.status();
}

Result<std::vector<TableIdentifier>> FileCatalog::ListTables(const std::string& namespace_name) {
  const std::string root = warehouse_.empty() ? std::string(".") : LocalPath(warehouse_);
  auto names = fs_->ListDir(namespace_name.empty() ? root : JoinPath(root, namespace_name));
  if (!names.ok()) {
    if (names.status().IsNotFound()) return std::vector<TableIdentifier>();
    return names.status();
  }
  std::sort(names->begin(), names->end());
  std::vector<TableIdentifier> tables;
  for (auto& name : *names) {
    TableIdentifier table{namespace_name, std::move(name)};
    ASSIGN_OR_RAISE(bool exists, TableExists(table));
    if (exists) tables.push_back(std::move(table));
  }
  return tables;
}

std::string PointerToJson(const MetadataPointer& pointer) {
  return nlohmann::json{{"version", pointer.version}, {"location", pointer.location}}.dump();
}

Result<MetadataPointer> PointerFromJson(std::string_view text, const std::string& where) {
  auto json = nlohmann::json::parse(text, nullptr, false);
  if (!json.is_object() || !json["location"].is_string() || !json["version"].is_number_integer()) {
    return Status::Corruption("the catalog pointer " + where +
                              " is not valid: " + std::string(text.substr(0, 200)));
  }
  return MetadataPointer{json["location"].get<std::string>(), json["version"].get<int64_t>()};
}

LocalPointerStore::LocalPointerStore(std::shared_ptr<FileSystem> fs, std::string dir)
    : fs_(std::move(fs)), dir_(std::move(dir)) {}

std::string LocalPointerStore::FileName(const TableIdentifier& table) const {
  return table.ToString() + ".json";
}

Result<MetadataPointer> LocalPointerStore::ReadLocked(const TableIdentifier& table) {
  auto text = ReadWholeFile(fs_.get(), JoinPath(dir_, FileName(table)));
  if (!text.ok()) {
    if (text.status().IsNotFound()) {
      return Status::NotFound("no Iceberg table " + table.ToString() + " in the catalog");
    }
    return text.status();
  }
  return PointerFromJson(*text, JoinPath(dir_, FileName(table)));
}

Result<MetadataPointer> LocalPointerStore::Read(const TableIdentifier& table) {
  std::lock_guard<std::mutex> lock(mu_);
  return ReadLocked(table);
}

Status LocalPointerStore::Replace(const TableIdentifier& table,
                                  const std::optional<MetadataPointer>& expected,
                                  const MetadataPointer& next) {
  std::lock_guard<std::mutex> lock(mu_);
  auto stored = ReadLocked(table);
  if (!stored.ok() && !stored.status().IsNotFound()) return stored.status();
  const bool matches = stored.ok() ? expected && stored->version == expected->version &&
                                         stored->location == expected->location
                                   : !expected;
  if (!matches) {
    return Status::AlreadyExists("commit conflict: the pointer of " + table.ToString() +
                                 " changed meanwhile");
  }
  RETURN_NOT_OK(fs_->CreateDirs(dir_));
  return WriteFileAtomically(*fs_, dir_, FileName(table), PointerToJson(next));
}

Result<std::vector<TableIdentifier>> LocalPointerStore::List(const std::string& namespace_name) {
  auto names = fs_->ListDir(dir_);
  if (!names.ok()) {
    if (names.status().IsNotFound()) return std::vector<TableIdentifier>();
    return names.status();
  }
  std::sort(names->begin(), names->end());
  std::vector<TableIdentifier> tables;
  const std::string prefix = namespace_name.empty() ? "" : namespace_name + ".";
  for (const auto& name : *names) {
    if (!name.ends_with(".json") || name.rfind(prefix, 0) != 0) continue;
    std::string rest = name.substr(prefix.size(), name.size() - prefix.size() - 5);
    if (rest.empty() || rest.find('.') != std::string::npos) continue;
    tables.push_back({namespace_name, std::move(rest)});
  }
  return tables;
}

PointerCatalog::PointerCatalog(std::shared_ptr<FileSystem> fs, std::string warehouse,
                               std::shared_ptr<PointerStore> pointers)
    : fs_(std::move(fs)), warehouse_(std::move(warehouse)), pointers_(std::move(pointers)) {
  while (warehouse_.size() > 1 && warehouse_.back() == '/') warehouse_.pop_back();
}

std::string PointerCatalog::TableLocation(const TableIdentifier& table) const {
  if (table.namespace_name.empty()) return warehouse_ + "/" + table.name;
  return warehouse_ + "/" + table.namespace_name + "/" + table.name;
}

Result<std::optional<MetadataPointer>> PointerCatalog::Stored(const TableIdentifier& table,
                                                              bool* file_exists) {
  *file_exists = false;
  auto stored = pointers_->Read(table);
  if (!stored.ok()) {
    if (stored.status().IsNotFound()) return std::optional<MetadataPointer>();
    return stored.status();
  }
  auto size = fs_->FileSize(LocalPath(stored->location));
  if (!size.ok() && !size.status().IsNotFound()) return size.status();
  *file_exists = size.ok();
  return std::optional<MetadataPointer>(std::move(stored).ValueOrDie());
}

Result<MetadataPointer> PointerCatalog::CurrentMetadata(const TableIdentifier& table) {
  bool file_exists = false;
  ASSIGN_OR_RAISE(auto stored, Stored(table, &file_exists));
  if (!stored) return Status::NotFound("no Iceberg table " + table.ToString() + " in the catalog");
  if (!file_exists) {
    return Status::NotFound("the metadata file " + stored->location + " of " + table.ToString() +
                            " is gone");
  }
  return *stored;
}

Result<MetadataPointer> PointerCatalog::SwapMetadata(const TableIdentifier& table,
                                                     const MetadataPointer& base,
                                                     std::string_view metadata_json) {
  bool file_exists = false;
  ASSIGN_OR_RAISE(auto stored, Stored(table, &file_exists));
  // A pointer whose file is gone (the table's files were removed) is no table: it may be made
  // anew from version 0.
  const bool matches = stored && file_exists
                           ? stored->version == base.version && stored->location == base.location
                           : base.version == 0;
  if (!matches) {
    return Status::AlreadyExists("commit conflict: " + table.ToString() +
                                 " is no longer at version " + std::to_string(base.version));
  }
  const int64_t version = base.version + 1;
  char number[24];
  std::snprintf(number, sizeof(number), "%05lld", static_cast<long long>(version));
  MetadataPointer next{
      TableLocation(table) + "/metadata/" + number + "-" + RandomUuid() + ".metadata.json",
      version};
  RETURN_NOT_OK(fs_->CreateDirs(LocalPath(TableLocation(table)) + "/metadata"));  // S3: nothing
  RETURN_NOT_OK(WriteWholeFile(fs_.get(), LocalPath(next.location), metadata_json, true));
  // On failure the new metadata file stays unreferenced (the old pointer holds), or, when the
  // store's outcome is unknown, maybe referenced: either way it is not removed here.
  Status replaced = pointers_->Replace(table, stored, next);
  if (replaced.ok() || replaced.code() == StatusCode::kAlreadyExists) {
    RETURN_NOT_OK(replaced);
    return next;
  }
  // The store failed without saying whether it took the pointer (a ZooKeeper connection lost
  // mid-call): the pointer itself tells, when it can be read.
  auto now = pointers_->Read(table);
  if (!now.ok()) return replaced;
  if (now->location == next.location) return next;
  return Status::AlreadyExists("commit conflict: the pointer of " + table.ToString() +
                               " is not this commit's (" + replaced.message() + ")");
}

Result<bool> PointerCatalog::TableExists(const TableIdentifier& table) {
  auto current = CurrentMetadata(table);
  if (current.ok()) return true;
  if (current.status().IsNotFound()) return false;
  return current.status();
}

Result<std::vector<TableIdentifier>> PointerCatalog::ListTables(const std::string& namespace_name) {
  ASSIGN_OR_RAISE(auto stored, pointers_->List(namespace_name));
  std::vector<TableIdentifier> tables;
  for (auto& table : stored) {
    ASSIGN_OR_RAISE(bool exists, TableExists(table));
    if (exists) tables.push_back(std::move(table));
  }
  return tables;
}

}  // namespace oxbow::iceberg
