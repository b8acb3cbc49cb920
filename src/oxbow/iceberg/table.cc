#include "oxbow/iceberg/table.h"

#include <algorithm>
#include <set>

#include "oxbow/common/parse.h"
#include "oxbow/iceberg/io_internal.h"

namespace oxbow::iceberg {

namespace {

int64_t SummaryLong(const Snapshot* s, const char* key) {
  if (s == nullptr) return 0;
  auto it = s->summary.find(key);
  if (it == s->summary.end()) return 0;
  auto value = ParseInt64(it->second);
  return value.ok() ? *value : 0;
}

// A FileCatalog over `location`'s parent and the table's name in it, so that the catalog's
// location for the table is `location` itself.
Result<std::pair<std::shared_ptr<Catalog>, TableIdentifier>> CatalogOfLocation(
    std::shared_ptr<FileSystem> fs, std::string location, const TableOptions& options) {
  while (location.size() > 1 && location.back() == '/') location.pop_back();
  if (location.empty()) return Status::Invalid("table location is empty");
  const size_t slash = location.rfind('/');
  std::string parent = slash == std::string::npos ? "" : location.substr(0, slash + 1);
  std::string name = slash == std::string::npos ? location : location.substr(slash + 1);
  auto catalog = std::make_shared<FileCatalog>(std::move(fs), std::move(parent),
                                               FileCatalogOptions{.sync = options.sync});
  return std::make_pair(std::shared_ptr<Catalog>(std::move(catalog)),
                        TableIdentifier{"", std::move(name)});
}

// ADDED entries for `files`, stamped with `snapshot_id` (sequence numbers are inherited).
std::vector<ManifestEntry> AddedEntries(const std::vector<DataFile>& files, int64_t snapshot_id) {
  std::vector<ManifestEntry> entries;
  for (const auto& f : files) {
    ManifestEntry e;
    e.status = EntryStatus::kAdded;
    e.snapshot_id = snapshot_id;
    e.data_file = f;
    entries.push_back(std::move(e));
  }
  return entries;
}

int64_t Sum(const std::vector<DataFile>& files, int64_t DataFile::*member) {
  int64_t total = 0;
  for (const auto& f : files) total += f.*member;
  return total;
}

// A string equal for files of equal partitions, spec and tuple (for changed-partition-count).
std::string PartitionKey(const DataFile& file) {
  std::string key = std::to_string(file.spec_id.value_or(-1)) + ":";
  for (const auto& v : file.partition) {
    if (!v) {
      key += "n;";
      continue;
    }
    key += std::to_string(v->index()) + "=";
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::string>) {
            key += std::to_string(x.size()) + ":" + x;
          } else if constexpr (std::is_same_v<T, Decimal>) {
            key += DecimalToBytes(x.unscaled);
          } else {
            key += std::to_string(x);
          }
        },
        *v);
    key += ";";
  }
  return key;
}

}  // namespace

std::string IcebergTable::NewManifestPath() const {
  return metadata_.location + "/metadata/" + RandomUuid() + "-m0.avro";
}

void IcebergTable::RemoveQuietly(const std::string& path) { (void)fs_->Remove(LocalPath(path)); }

void IcebergTable::RemoveUnlessCommitted(const std::vector<std::string>& written) {
  if (commit_outcome_unknown_) return;  // referenced if it landed: orphan removal decides later
  for (const auto& path : written) RemoveQuietly(path);
}

Snapshot IcebergTable::NewSnapshot(int64_t snapshot_id, int64_t sequence_number,
                                   int attempt) const {
  Snapshot snap;
  snap.snapshot_id = snapshot_id;
  if (const Snapshot* parent = CurrentSnapshot()) snap.parent_snapshot_id = parent->snapshot_id;
  snap.sequence_number = sequence_number;
  snap.timestamp_ms = std::max(NowMillis(), metadata_.last_updated_ms);
  snap.schema_id = schema().schema_id();
  snap.manifest_list = metadata_.location + "/metadata/snap-" + std::to_string(snapshot_id) + "-" +
                       std::to_string(attempt) + "-" + RandomUuid() + ".avro";
  return snap;
}

template <typename T>
Result<T> IcebergTable::RetryCommit(
    const std::function<Result<T>(std::vector<std::string>* written)>& attempt) {
  Status last;
  for (int i = 0; i < options_.commit_attempts; ++i) {
    if (i > 0) RETURN_NOT_OK(Refresh());
    std::vector<std::string> written;
    commit_outcome_unknown_ = false;
    auto r = attempt(&written);
    if (r.ok()) return r;
    RemoveUnlessCommitted(written);
    last = r.status();
    if (last.code() != StatusCode::kAlreadyExists) break;
  }
  return last;
}

Result<std::unique_ptr<IcebergTable>> IcebergTable::Create(
    std::shared_ptr<FileSystem> fs, std::shared_ptr<Catalog> catalog, TableIdentifier table_id,
    Schema schema, PartitionSpec spec, std::map<std::string, std::string> properties,
    TableOptions options) {
  RETURN_NOT_OK(schema.Validate());
  RETURN_NOT_OK(spec.PartitionTypes(schema).status());
  std::unique_ptr<IcebergTable> table(
      new IcebergTable(std::move(fs), std::move(catalog), std::move(table_id), options));
  TableMetadata& m = table->metadata_;
  m.table_uuid = RandomUuid();
  m.location = table->catalog_->TableLocation(table->id_);
  m.last_updated_ms = NowMillis();
  m.last_column_id = schema.HighestFieldId();
  m.current_schema_id = schema.schema_id();
  m.schemas.push_back(std::move(schema));
  m.default_spec_id = spec.spec_id();
  m.last_partition_id = spec.HighestFieldId();
  m.partition_specs.push_back(std::move(spec));
  properties.emplace(kDeleteAfterCommit, "true");
  properties.emplace(kPreviousVersionsMax, "100");
  m.properties = std::move(properties);

  auto existing = table->catalog_->CurrentMetadata(table->id_);
  if (existing.ok()) {
    return Status::AlreadyExists("an Iceberg table exists at " + m.location + " (" +
                                 existing->location + ")");
  }
  if (!existing.status().IsNotFound()) return existing.status();
  // Version 0 is "nothing yet": the commit publishes version 1 and fails if someone else did.
  TableMetadata first = m;
  RETURN_NOT_OK(table->Commit(std::move(first)));
  return table;
}

Status IcebergTable::SetCurrentSchema(const Schema& schema) {
  RETURN_NOT_OK(schema.Validate());
  return RetryCommit<bool>([&](std::vector<std::string>*) -> Result<bool> {
           RETURN_NOT_OK(spec().PartitionTypes(schema).status());
           TableMetadata next = metadata_;
           if (const Schema* known = next.SchemaById(schema.schema_id())) {
             if (!(*known == schema)) {
               return Status::Invalid("schema " + std::to_string(schema.schema_id()) +
                                      " exists with other fields");
             }
           } else {
             next.schemas.push_back(schema);
           }
           if (next.current_schema_id == schema.schema_id()) return false;
           next.current_schema_id = schema.schema_id();
           next.last_column_id = std::max(next.last_column_id, schema.HighestFieldId());
           RETURN_NOT_OK(Commit(std::move(next)));
           return true;
         })
      .status();
}

Result<PartitionSpec> IcebergTable::SetDefaultSpec(const PartitionSpec& wanted) {
  return RetryCommit<PartitionSpec>([&](std::vector<std::string>*) -> Result<PartitionSpec> {
    RETURN_NOT_OK(wanted.PartitionTypes(schema()).status());
    PartitionSpec spec = EvolvePartitionSpec(metadata_, wanted);
    if (spec.spec_id() == metadata_.default_spec_id) return spec;
    TableMetadata next = metadata_;
    if (next.SpecById(spec.spec_id()) == nullptr) next.partition_specs.push_back(spec);
    next.default_spec_id = spec.spec_id();
    next.last_partition_id = std::max(next.last_partition_id, spec.HighestFieldId());
    RETURN_NOT_OK(Commit(std::move(next)));
    return spec;
  });
}

Result<std::unique_ptr<IcebergTable>> IcebergTable::Load(std::shared_ptr<FileSystem> fs,
                                                         std::shared_ptr<Catalog> catalog,
                                                         TableIdentifier table_id,
                                                         TableOptions options) {
  std::unique_ptr<IcebergTable> table(
      new IcebergTable(std::move(fs), std::move(catalog), std::move(table_id), options));
  RETURN_NOT_OK(table->Refresh());
  return table;
}

Result<std::unique_ptr<IcebergTable>> IcebergTable::Create(
    std::shared_ptr<FileSystem> fs, std::string location, Schema schema, PartitionSpec spec,
    std::map<std::string, std::string> properties, TableOptions options) {
  ASSIGN_OR_RAISE(auto catalog, CatalogOfLocation(fs, std::move(location), options));
  return Create(std::move(fs), std::move(catalog.first), std::move(catalog.second),
                std::move(schema), std::move(spec), std::move(properties), options);
}

Result<std::unique_ptr<IcebergTable>> IcebergTable::Load(std::shared_ptr<FileSystem> fs,
                                                         std::string location,
                                                         TableOptions options) {
  ASSIGN_OR_RAISE(auto catalog, CatalogOfLocation(fs, std::move(location), options));
  return Load(std::move(fs), std::move(catalog.first), std::move(catalog.second), options);
}

Status IcebergTable::Refresh() {
  ASSIGN_OR_RAISE(MetadataPointer current, catalog_->CurrentMetadata(id_));
  const std::string path = LocalPath(current.location);
  ASSIGN_OR_RAISE(std::string json, ReadWholeFile(fs_.get(), path));
  auto parsed = TableMetadata::FromJson(json);
  if (!parsed.ok()) return parsed.status().WithContext(path);
  metadata_ = std::move(*parsed);
  current_ = std::move(current);
  return Status::OK();
}

Status IcebergTable::Commit(TableMetadata next) {
  next.last_updated_ms = std::max(next.last_updated_ms, NowMillis());
  if (current_.version > 0) {
    next.metadata_log.push_back({metadata_.last_updated_ms, current_.location});
  }
  auto max_previous = ParseInt64(next.Property(kPreviousVersionsMax, "100"));
  const int64_t kept = std::max<int64_t>(0, max_previous.ok() ? *max_previous : 100);
  std::vector<std::string> dropped;
  while (static_cast<int64_t>(next.metadata_log.size()) > kept) {
    dropped.push_back(next.metadata_log.front().metadata_file);
    next.metadata_log.erase(next.metadata_log.begin());
  }
  auto swapped = catalog_->SwapMetadata(id_, current_, next.ToJson());
  commit_outcome_unknown_ = !swapped.ok() && swapped.status().code() != StatusCode::kAlreadyExists;
  ASSIGN_OR_RAISE(current_, std::move(swapped));
  metadata_ = std::move(next);
  if (metadata_.Property(kDeleteAfterCommit, "false") == "true") {
    for (const auto& path : dropped) RemoveQuietly(path);
  }
  return Status::OK();
}

TableMetadata IcebergTable::WithSnapshot(const Snapshot& snapshot) const {
  TableMetadata next = metadata_;
  next.snapshots.push_back(snapshot);
  next.current_snapshot_id = snapshot.snapshot_id;
  next.last_sequence_number = snapshot.sequence_number;
  next.last_updated_ms = snapshot.timestamp_ms;
  next.snapshot_log.push_back({snapshot.timestamp_ms, snapshot.snapshot_id});
  next.refs["main"] = SnapshotRef{snapshot.snapshot_id, "branch",
                                  next.refs.count("main") ? next.refs["main"].extra_json : ""};
  return next;
}

void IcebergTable::AddTotals(const std::vector<ManifestFile>& manifests, int64_t added_size,
                             int64_t removed_size,
                             std::map<std::string, std::string>* summary) const {
  int64_t files = 0, records = 0, delete_files = 0, deletes = 0;
  for (const auto& m : manifests) {
    if (m.content == 0) {
      files += m.added_files_count + m.existing_files_count;
      records += m.added_rows_count + m.existing_rows_count;
    } else {
      delete_files += m.added_files_count + m.existing_files_count;
      deletes += m.added_rows_count + m.existing_rows_count;
    }
  }
  int64_t size = SummaryLong(CurrentSnapshot(), "total-files-size") + added_size - removed_size;
  (*summary)["total-data-files"] = std::to_string(files);
  (*summary)["total-records"] = std::to_string(records);
  (*summary)["total-files-size"] = std::to_string(std::max<int64_t>(0, size));
  (*summary)["total-delete-files"] = std::to_string(delete_files);
  (*summary)["total-position-deletes"] = std::to_string(deletes);
  (*summary)["total-equality-deletes"] = "0";
}

Result<std::vector<ManifestFile>> IcebergTable::CurrentManifests() const {
  const Snapshot* current = CurrentSnapshot();
  if (current == nullptr) return std::vector<ManifestFile>();
  return ReadManifestList(fs_.get(), current->manifest_list);
}

Result<const PartitionSpec*> IcebergTable::SpecOf(int32_t spec_id, const std::string& what) const {
  const PartitionSpec* spec = metadata_.SpecById(spec_id);
  if (spec == nullptr) {
    return Status::Corruption(what + " has unknown partition spec " + std::to_string(spec_id));
  }
  return spec;
}

Result<std::vector<ManifestEntry>> IcebergTable::ReadEntries(const ManifestFile& manifest) const {
  ASSIGN_OR_RAISE(const PartitionSpec* spec,
                  SpecOf(manifest.partition_spec_id, manifest.manifest_path));
  const Schema* schema = metadata_.SchemaForSpec(*spec);
  if (schema == nullptr) {
    return Status::Corruption(manifest.manifest_path + ": no schema of the table holds the " +
                              "source columns of partition spec " +
                              std::to_string(spec->spec_id()));
  }
  return ReadManifest(fs_.get(), manifest, *schema, *spec);
}

Result<ManifestFile> IcebergTable::WriteSpecManifest(const PartitionSpec& spec, int64_t snapshot_id,
                                                     int64_t sequence_number,
                                                     const std::vector<ManifestEntry>& entries,
                                                     std::vector<std::string>* written) {
  const Schema* schema = metadata_.SchemaForSpec(spec);
  if (schema == nullptr) {
    return Status::Invalid("no schema of the table holds the source columns of partition spec " +
                           std::to_string(spec.spec_id()));
  }
  std::string path = NewManifestPath();
  written->push_back(path);
  return WriteManifest(fs_.get(), path, *schema, spec, snapshot_id, sequence_number, entries,
                       options_.avro);
}

Result<std::vector<ManifestFile>> IcebergTable::WriteAddedManifests(
    const std::vector<DataFile>& files, int64_t snapshot_id, int64_t sequence_number,
    std::vector<std::string>* written) {
  std::map<int32_t, std::vector<DataFile>> by_spec;
  for (const auto& f : files) by_spec[f.spec_id.value_or(metadata_.default_spec_id)].push_back(f);
  std::vector<ManifestFile> out;
  for (const auto& [spec_id, group] : by_spec) {
    ASSIGN_OR_RAISE(const PartitionSpec* spec, SpecOf(spec_id, "data file " + group[0].file_path));
    ASSIGN_OR_RAISE(auto manifest, WriteSpecManifest(*spec, snapshot_id, sequence_number,
                                                     AddedEntries(group, snapshot_id), written));
    out.push_back(std::move(manifest));
  }
  return out;
}

Result<std::vector<ManifestEntry>> IcebergTable::LiveEntries() const {
  ASSIGN_OR_RAISE(auto manifests, CurrentManifests());
  std::vector<ManifestEntry> out;
  for (const auto& m : manifests) {
    ASSIGN_OR_RAISE(auto entries, ReadEntries(m));
    for (auto& e : entries) {
      if (e.status != EntryStatus::kDeleted) out.push_back(std::move(e));
    }
  }
  return out;
}

Result<int64_t> IcebergTable::AppendFiles(const std::vector<DataFile>& files,
                                          const std::map<std::string, std::string>& summary) {
  return RowDelta(files, {}, summary);
}

Result<int64_t> IcebergTable::RowDelta(const std::vector<DataFile>& data_files,
                                       const std::vector<DataFile>& delete_files,
                                       const std::map<std::string, std::string>& summary) {
  for (const auto& f : data_files) {
    if (f.content != FileContent::kData) {
      return Status::Invalid("RowDelta: " + f.file_path + " is not a data file");
    }
  }
  for (const auto& f : delete_files) {
    if (f.content != FileContent::kPositionDeletes) {
      return Status::Invalid("RowDelta: " + f.file_path + " is not a position delete file");
    }
  }
  const int64_t snapshot_id = RandomId();
  std::optional<std::vector<ManifestFile>> data_manifests;
  std::optional<std::vector<ManifestFile>> delete_manifests;
  std::vector<std::string> written;  // the manifests, reused by every attempt
  std::set<std::string> partitions;
  for (const auto& f : data_files) partitions.insert(PartitionKey(f));
  for (const auto& f : delete_files) partitions.insert(PartitionKey(f));
  Status last;
  commit_outcome_unknown_ = false;
  for (int attempt = 0; attempt < options_.commit_attempts; ++attempt) {
    if (attempt > 0) {
      last = Refresh();
      if (!last.ok()) break;
    }
    const int64_t seq = metadata_.last_sequence_number + 1;
    if (!data_manifests) {
      auto added = WriteAddedManifests(data_files, snapshot_id, seq, &written);
      if (!added.ok()) {
        last = added.status();
        break;
      }
      data_manifests = std::move(*added);
    }
    if (!delete_manifests) {
      auto added = WriteAddedManifests(delete_files, snapshot_id, seq, &written);
      if (!added.ok()) {
        last = added.status();
        break;
      }
      delete_manifests = std::move(*added);
    }
    std::vector<ManifestFile> manifests;
    // Entries inherit the sequence number, so a retry only re-stamps the list entries. Deletes
    // of this snapshot carry its sequence number, so they apply to data files of earlier
    // snapshots (a position delete applies to data sequence numbers <= its own; the paths it
    // names are of earlier files).
    for (auto* added : {&*data_manifests, &*delete_manifests}) {
      for (auto& m : *added) {
        m.sequence_number = seq;
        m.min_sequence_number = seq;
        manifests.push_back(m);
      }
    }
    auto previous = CurrentManifests();
    if (!previous.ok()) {
      last = previous.status();
      break;
    }
    for (auto& m : *previous) {
      if (m.added_files_count + m.existing_files_count > 0) manifests.push_back(std::move(m));
    }
    Snapshot snap = NewSnapshot(snapshot_id, seq, attempt + 1);
    snap.summary = summary;
    snap.summary["operation"] = delete_files.empty() ? "append" : "overwrite";
    int64_t added_size = Sum(data_files, &DataFile::file_size_in_bytes) +
                         Sum(delete_files, &DataFile::file_size_in_bytes);
    if (!data_files.empty()) {
      snap.summary["added-data-files"] = std::to_string(data_files.size());
      snap.summary["added-records"] = std::to_string(Sum(data_files, &DataFile::record_count));
    }
    if (!delete_files.empty()) {
      snap.summary["added-delete-files"] = std::to_string(delete_files.size());
      snap.summary["added-position-delete-files"] = std::to_string(delete_files.size());
      snap.summary["added-position-deletes"] =
          std::to_string(Sum(delete_files, &DataFile::record_count));
    }
    if (!partitions.empty()) {
      snap.summary["added-files-size"] = std::to_string(added_size);
      snap.summary["changed-partition-count"] = std::to_string(partitions.size());
    }
    AddTotals(manifests, added_size, 0, &snap.summary);
    last = WriteManifestList(fs_.get(), LocalPath(snap.manifest_list),
                             {snapshot_id, snap.parent_snapshot_id, seq}, manifests, options_.avro);
    if (last.ok()) last = Commit(WithSnapshot(snap));
    if (last.ok()) return snapshot_id;
    RemoveUnlessCommitted({snap.manifest_list});
    if (last.code() != StatusCode::kAlreadyExists) break;
  }
  RemoveUnlessCommitted(written);
  return last;
}

Result<int64_t> IcebergTable::TryReplace(const std::vector<std::string>& deleted_paths,
                                         const std::vector<DataFile>& added,
                                         const std::vector<DataFile>& added_deletes,
                                         const std::map<std::string, std::string>& summary,
                                         const char* operation, std::vector<std::string>* written) {
  for (const auto& f : added_deletes) {
    if (f.content != FileContent::kPositionDeletes) {
      return Status::Invalid("ReplaceFiles: " + f.file_path + " is not a position delete file");
    }
  }
  const int64_t snapshot_id = RandomId();
  const int64_t seq = metadata_.last_sequence_number + 1;
  std::set<std::string> remaining(deleted_paths.begin(), deleted_paths.end());
  if (remaining.size() != deleted_paths.size()) {
    return Status::Invalid("ReplaceFiles: a deleted path is listed twice");
  }
  ASSIGN_OR_RAISE(auto previous, CurrentManifests());
  std::vector<ManifestFile> manifests;
  int64_t deleted_records = 0, removed_size = 0, deleted_files = 0, removed_delete_files = 0;
  for (auto& m : previous) {
    if (m.added_files_count + m.existing_files_count == 0) continue;
    ASSIGN_OR_RAISE(const PartitionSpec* spec, SpecOf(m.partition_spec_id, m.manifest_path));
    ASSIGN_OR_RAISE(auto entries, ReadEntries(m));
    bool touched = false;
    for (const auto& e : entries) {
      if (e.status != EntryStatus::kDeleted && remaining.count(e.data_file.file_path)) {
        touched = true;
      }
    }
    if (!touched) {
      manifests.push_back(std::move(m));
      continue;
    }
    std::vector<ManifestEntry> rewritten;
    for (auto& e : entries) {
      if (e.status == EntryStatus::kDeleted) continue;
      if (remaining.erase(e.data_file.file_path)) {
        e.status = EntryStatus::kDeleted;
        e.snapshot_id = snapshot_id;
        removed_size += e.data_file.file_size_in_bytes;
        if (e.data_file.content != FileContent::kData) {
          ++removed_delete_files;
        } else {
          ++deleted_files;
          deleted_records += e.data_file.record_count;
        }
      } else {
        e.status = EntryStatus::kExisting;
      }
      rewritten.push_back(std::move(e));
    }
    ASSIGN_OR_RAISE(auto mf, WriteSpecManifest(*spec, snapshot_id, seq, rewritten, written));
    manifests.push_back(std::move(mf));
  }
  if (!remaining.empty()) {
    return Status::NotFound("ReplaceFiles: " + *remaining.begin() +
                            " is not a live data file of the current snapshot");
  }
  ASSIGN_OR_RAISE(auto added_manifests, WriteAddedManifests(added, snapshot_id, seq, written));
  ASSIGN_OR_RAISE(auto delete_manifests,
                  WriteAddedManifests(added_deletes, snapshot_id, seq, written));
  manifests.insert(manifests.begin(), added_manifests.begin(), added_manifests.end());
  manifests.insert(manifests.begin(), delete_manifests.begin(), delete_manifests.end());
  // A fresh snapshot id per attempt, so always attempt 1 of it.
  Snapshot snap = NewSnapshot(snapshot_id, seq, 1);
  written->push_back(snap.manifest_list);
  snap.summary = summary;
  snap.summary["operation"] = operation;
  int64_t added_size =
      Sum(added, &DataFile::file_size_in_bytes) + Sum(added_deletes, &DataFile::file_size_in_bytes);
  if (!added_deletes.empty()) {
    snap.summary["added-delete-files"] = std::to_string(added_deletes.size());
    snap.summary["added-position-deletes"] =
        std::to_string(Sum(added_deletes, &DataFile::record_count));
  }
  snap.summary["added-data-files"] = std::to_string(added.size());
  snap.summary["added-records"] = std::to_string(Sum(added, &DataFile::record_count));
  snap.summary["added-files-size"] = std::to_string(added_size);
  snap.summary["deleted-data-files"] = std::to_string(deleted_files);
  snap.summary["deleted-records"] = std::to_string(deleted_records);
  snap.summary["removed-files-size"] = std::to_string(removed_size);
  if (removed_delete_files > 0) {
    snap.summary["removed-delete-files"] = std::to_string(removed_delete_files);
  }
  AddTotals(manifests, added_size, removed_size, &snap.summary);
  RETURN_NOT_OK(WriteManifestList(fs_.get(), LocalPath(snap.manifest_list),
                                  {snapshot_id, snap.parent_snapshot_id, seq}, manifests,
                                  options_.avro));
  RETURN_NOT_OK(Commit(WithSnapshot(snap)));
  return snapshot_id;
}

Result<int64_t> IcebergTable::ReplaceFiles(const std::vector<std::string>& deleted_paths,
                                           const std::vector<DataFile>& added,
                                           const std::map<std::string, std::string>& summary,
                                           const std::vector<DataFile>& added_deletes) {
  return RetryCommit<int64_t>([&](std::vector<std::string>* written) {
    return TryReplace(deleted_paths, added, added_deletes, summary, "replace", written);
  });
}

Result<int64_t> IcebergTable::OverwriteFiles(const std::vector<std::string>& deleted_paths,
                                             const std::vector<DataFile>& added,
                                             const std::map<std::string, std::string>& summary) {
  return RetryCommit<int64_t>([&](std::vector<std::string>* written) {
    return TryReplace(deleted_paths, added, {}, summary, "overwrite", written);
  });
}

Result<std::optional<int64_t>> IcebergTable::TryRewriteManifests(
    int min_manifests, const std::map<std::string, std::string>& summary,
    std::vector<std::string>* written) {
  ASSIGN_OR_RAISE(auto previous, CurrentManifests());
  if (static_cast<int>(previous.size()) < std::max(min_manifests, 2)) {
    return std::optional<int64_t>();
  }
  const int64_t snapshot_id = RandomId();
  const int64_t seq = metadata_.last_sequence_number + 1;
  // Data and delete files go to separate manifests (the spec's rule), one per partition spec.
  std::map<std::pair<int32_t, bool>, std::vector<ManifestEntry>> live;  // (spec, deletes)
  for (const auto& m : previous) {
    ASSIGN_OR_RAISE(auto entries, ReadEntries(m));
    for (auto& e : entries) {
      if (e.status == EntryStatus::kDeleted) continue;
      e.status = EntryStatus::kExisting;
      live[{m.partition_spec_id, e.data_file.content != FileContent::kData}].push_back(
          std::move(e));
    }
  }
  std::vector<ManifestFile> manifests;
  for (const auto& [key, entries] : live) {
    ASSIGN_OR_RAISE(const PartitionSpec* spec, SpecOf(key.first, "a live file"));
    ASSIGN_OR_RAISE(auto mf, WriteSpecManifest(*spec, snapshot_id, seq, entries, written));
    manifests.push_back(std::move(mf));
  }
  // A fresh snapshot id per attempt, so always attempt 1 of it.
  Snapshot snap = NewSnapshot(snapshot_id, seq, 1);
  written->push_back(snap.manifest_list);
  snap.summary = summary;
  snap.summary["operation"] = "replace";
  snap.summary["manifests-replaced"] = std::to_string(previous.size());
  snap.summary["manifests-created"] = std::to_string(manifests.size());
  AddTotals(manifests, 0, 0, &snap.summary);
  RETURN_NOT_OK(WriteManifestList(fs_.get(), LocalPath(snap.manifest_list),
                                  {snapshot_id, snap.parent_snapshot_id, seq}, manifests,
                                  options_.avro));
  RETURN_NOT_OK(Commit(WithSnapshot(snap)));
  return std::optional<int64_t>(snapshot_id);
}

Result<std::optional<int64_t>> IcebergTable::RewriteManifests(
    int min_manifests, const std::map<std::string, std::string>& summary) {
  return RetryCommit<std::optional<int64_t>>([&](std::vector<std::string>* written) {
    return TryRewriteManifests(min_manifests, summary, written);
  });
}

Result<ExpireResult> IcebergTable::ExpireSnapshots(const ExpireOptions& options) {
  ExpireResult result;
  std::vector<Snapshot> expired;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) RETURN_NOT_OK(Refresh());
    std::set<int64_t> keep;
    int kept = 0;
    for (const Snapshot* s = CurrentSnapshot(); s != nullptr && kept < options.retain_last;
         s = s->parent_snapshot_id ? metadata_.SnapshotById(*s->parent_snapshot_id) : nullptr) {
      keep.insert(s->snapshot_id);
      ++kept;
    }
    for (const auto& [name, ref] : metadata_.refs) keep.insert(ref.snapshot_id);
    expired.clear();
    TableMetadata next = metadata_;
    next.snapshots.clear();
    for (const auto& s : metadata_.snapshots) {
      bool old_enough = !options.older_than_ms || s.timestamp_ms < *options.older_than_ms;
      if (keep.count(s.snapshot_id) || !old_enough) {
        next.snapshots.push_back(s);
      } else {
        expired.push_back(s);
      }
    }
    if (expired.empty()) return result;
    std::set<int64_t> remaining_ids;
    for (const auto& s : next.snapshots) remaining_ids.insert(s.snapshot_id);
    std::erase_if(next.snapshot_log,
                  [&](const SnapshotLogEntry& e) { return !remaining_ids.count(e.snapshot_id); });
    Status st = Commit(std::move(next));
    if (st.ok()) break;
    if (st.code() != StatusCode::kAlreadyExists || attempt + 1 >= options_.commit_attempts) {
      return st;
    }
  }
  result.expired_snapshots = static_cast<int64_t>(expired.size());
  if (!options.delete_files) return result;

  // What the remaining snapshots still reach.
  std::set<std::string> live_lists, live_manifests, live_files;
  for (const auto& s : metadata_.snapshots) {
    live_lists.insert(s.manifest_list);
    ASSIGN_OR_RAISE(auto manifests, ReadManifestList(fs_.get(), s.manifest_list));
    for (const auto& m : manifests) {
      if (!live_manifests.insert(m.manifest_path).second) continue;
      ASSIGN_OR_RAISE(auto entries, ReadEntries(m));
      for (const auto& e : entries) {
        if (e.status != EntryStatus::kDeleted) live_files.insert(e.data_file.file_path);
      }
    }
  }
  std::set<std::string> dead_manifests, dead_files;
  for (const auto& s : expired) {
    auto manifests = ReadManifestList(fs_.get(), s.manifest_list);
    if (!manifests.ok()) continue;  // already gone
    for (const auto& m : *manifests) {
      if (live_manifests.count(m.manifest_path) || !dead_manifests.insert(m.manifest_path).second) {
        continue;
      }
      auto entries = ReadEntries(m);
      if (!entries.ok()) continue;
      for (const auto& e : *entries) {
        if (!live_files.count(e.data_file.file_path)) dead_files.insert(e.data_file.file_path);
      }
    }
  }
  for (const auto& path : dead_files) {
    if (fs_->Remove(LocalPath(path)).ok()) ++result.deleted_data_files;
  }
  for (const auto& path : dead_manifests) {
    if (fs_->Remove(LocalPath(path)).ok()) ++result.deleted_manifests;
  }
  for (const auto& s : expired) {
    if (!live_lists.count(s.manifest_list) && fs_->Remove(LocalPath(s.manifest_list)).ok()) {
      ++result.deleted_manifest_lists;
    }
  }
  return result;
}

}  // namespace oxbow::iceberg
