// IcebergTable: an Iceberg v2 table that the tiering service commits Parquet files to. Layout,
// commit protocol and summary keys: docs/iceberg.md.
//
//   <location>/metadata/snap-<id>-<attempt>-<uuid>.avro   manifest lists
//   <location>/metadata/<uuid>-m<k>.avro       manifests
//
// Which metadata file is current is the Catalog's business (catalog.h): a commit writes new
// manifests and a manifest list, then asks the catalog to swap the table's metadata pointer
// from the loaded version to the next. Of two writers racing for the same version exactly one
// wins; the other re-reads the table and retries (appends) or re-plans (replace, expire).
//
// One IcebergTable is used by one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oxbow/common/file_system.h"
#include "oxbow/iceberg/avro.h"
#include "oxbow/iceberg/catalog.h"
#include "oxbow/iceberg/manifest.h"
#include "oxbow/iceberg/metadata.h"

namespace oxbow::iceberg {

// Table properties Oxbow reads (Java Iceberg's names and meanings).
inline constexpr char kPreviousVersionsMax[] = "write.metadata.previous-versions-max";
inline constexpr char kDeleteAfterCommit[] = "write.metadata.delete-after-commit.enabled";

struct TableOptions {
  // Attempts of one commit when other writers keep publishing the same version. Default: 8.
  int commit_attempts = 8;
  // Encoding of manifests and manifest lists. Default: deflate.
  AvroWriterOptions avro;
  // fsync manifests and manifest lists before a commit (and, for the location-based Create and
  // Load, the metadata files and directory). Default: true.
  bool sync = true;
};

struct ExpireOptions {
  // The newest snapshots of the current branch that are always kept. Default: 1.
  int retain_last = 1;
  // When set, only snapshots older than this (epoch ms) expire. Default: unset (every
  // snapshot beyond retain_last expires).
  std::optional<int64_t> older_than_ms;
  // Delete the manifest lists, manifests and data files only expired snapshots reached.
  // Default: true.
  bool delete_files = true;
};

struct ExpireResult {
  int64_t expired_snapshots = 0;
  int64_t deleted_manifest_lists = 0;
  int64_t deleted_manifests = 0;
  int64_t deleted_data_files = 0;
};

class IcebergTable {
 public:
  // Creates `table` in `catalog`, at the catalog's location for it: its first metadata, with no
  // snapshot. AlreadyExists when the table already has metadata. Unless given, the properties
  // kDeleteAfterCommit = "true" and kPreviousVersionsMax = "100" are set. `fs` reads and writes
  // the table's files.
  static Result<std::unique_ptr<IcebergTable>> Create(
      std::shared_ptr<FileSystem> fs, std::shared_ptr<Catalog> catalog, TableIdentifier table,
      Schema schema, PartitionSpec spec, std::map<std::string, std::string> properties = {},
      TableOptions options = {});
  // Opens the catalog's current version of `table`; NotFound when it has none.
  static Result<std::unique_ptr<IcebergTable>> Load(std::shared_ptr<FileSystem> fs,
                                                    std::shared_ptr<Catalog> catalog,
                                                    TableIdentifier table,
                                                    TableOptions options = {});
  // The same for a file-system table at `location` (a local path or file:// URI): a FileCatalog
  // whose warehouse is the location's parent.
  static Result<std::unique_ptr<IcebergTable>> Create(
      std::shared_ptr<FileSystem> fs, std::string location, Schema schema, PartitionSpec spec,
      std::map<std::string, std::string> properties = {}, TableOptions options = {});
  static Result<std::unique_ptr<IcebergTable>> Load(std::shared_ptr<FileSystem> fs,
                                                    std::string location,
                                                    TableOptions options = {});
  // Re-reads the catalog's current version.
  Status Refresh();
  // Whether the last failed commit may have landed after all: its swap failed without saying
  // (not AlreadyExists). Its files stay, and so must the caller's data files; a Refresh tells.
  bool commit_outcome_unknown() const { return commit_outcome_unknown_; }

  const TableMetadata& metadata() const { return metadata_; }
  const std::string& location() const { return metadata_.location; }
  // Version N of the loaded metadata and its file's location.
  int64_t version() const { return current_.version; }
  const std::string& metadata_file() const { return current_.location; }
  const Schema& schema() const { return *metadata_.CurrentSchema(); }
  const PartitionSpec& spec() const { return *metadata_.DefaultSpec(); }
  // Null before the first commit. Its summary holds the operation and the caller's keys.
  const Snapshot* CurrentSnapshot() const { return metadata_.CurrentSnapshot(); }

  // The ADDED and EXISTING entries of the current snapshot, data and delete files (sequence
  // numbers filled in), each with its partition spec's id and tuple.
  Result<std::vector<ManifestEntry>> LiveEntries() const;
  // The entries of one manifest of the table, partition tuples decoded with its spec.
  Result<std::vector<ManifestEntry>> ReadEntries(const ManifestFile& manifest) const;

  // Files are added in the partition spec of their `spec_id` (unset: the default spec), one
  // new manifest per spec.
  //
  // Fast append: one new manifest with `files`, the current snapshot's manifests reused by
  // reference. `summary` keys are added to the snapshot summary (operation "append").
  // Returns the new snapshot id. An empty `files` still commits (to record summary keys).
  Result<int64_t> AppendFiles(const std::vector<DataFile>& files,
                              const std::map<std::string, std::string>& summary = {});
  // Row-level change (merge-on-read): `data_files` and position `delete_files` added in one
  // snapshot, operation "overwrite" ("append" without deletes). The delete files take the
  // snapshot's sequence number, so they apply to the data files of earlier snapshots that
  // their rows name. Returns the new snapshot id.
  Result<int64_t> RowDelta(const std::vector<DataFile>& data_files,
                           const std::vector<DataFile>& delete_files,
                           const std::map<std::string, std::string>& summary = {});
  // Compaction: `deleted_paths` (data or delete files) (each must be live in the current snapshot)
  // are replaced by `added` in one snapshot with operation "replace". Manifests holding a deleted
  // file are rewritten (DELETED + EXISTING entries); the others are reused.
  // `added_deletes` are position delete files of the same snapshot (rows of `added` that are
  // already gone).
  Result<int64_t> ReplaceFiles(const std::vector<std::string>& deleted_paths,
                               const std::vector<DataFile>& added,
                               const std::map<std::string, std::string>& summary = {},
                               const std::vector<DataFile>& added_deletes = {});
  // The same with operation "overwrite": the data changes (readers of changes must not skip
  // it, as they skip a "replace"). A lake seeded afresh replaces all it held this way.
  Result<int64_t> OverwriteFiles(const std::vector<std::string>& deleted_paths,
                                 const std::vector<DataFile>& added,
                                 const std::map<std::string, std::string>& summary = {});
  // Merges the current snapshot's manifests into one (live entries kept as EXISTING with their
  // snapshot ids and sequence numbers, DELETED entries dropped) in a "replace" snapshot that
  // changes no data. Does nothing and returns nullopt while there are fewer than
  // `min_manifests`. Keeps the manifest list short under frequent appends.
  Result<std::optional<int64_t>> RewriteManifests(
      int min_manifests, const std::map<std::string, std::string>& summary = {});
  // Schema evolution: adds `schema` to the table's schemas (or reuses the one of its id, which
  // must then be equal) and makes it current, in a metadata-only commit as Java's
  // UpdateSchema does; last-column-id grows to its highest field id. Invalid when the current
  // partition spec does not apply to it. Snapshots after it record its id.
  Status SetCurrentSchema(const Schema& schema);
  // Partition evolution: makes the spec EvolvePartitionSpec (metadata.h) gives for `wanted`
  // (fields by source id, transform and name) the default spec, in a metadata-only commit
  // (nothing when it already is); last-partition-id grows to its highest field id. Invalid when
  // a field does not apply to the current schema. Returns the default spec. Files of earlier
  // specs keep theirs.
  Result<PartitionSpec> SetDefaultSpec(const PartitionSpec& wanted);
  // Drops old snapshots from the metadata (one commit) and then, optionally, their files.
  Result<ExpireResult> ExpireSnapshots(const ExpireOptions& options = {});

 private:
  IcebergTable(std::shared_ptr<FileSystem> fs, std::shared_ptr<Catalog> catalog, TableIdentifier id,
               TableOptions options)
      : fs_(std::move(fs)), catalog_(std::move(catalog)), id_(std::move(id)), options_(options) {}

  std::string NewManifestPath() const;  // as written into the manifest list
  // Makes `next` the catalog's version after the loaded one; AlreadyExists when another writer
  // got there first. Any other failure of the swap leaves it unknown whether `next` became
  // current (commit_outcome_unknown_), and then the files the commit wrote stay.
  Status Commit(TableMetadata next);
  // Removes the files a failed commit wrote, unless it may have landed.
  void RemoveUnlessCommitted(const std::vector<std::string>& written);
  // Adds `snapshot` to a copy of the current metadata, as the new current snapshot.
  TableMetadata WithSnapshot(const Snapshot& snapshot) const;
  // Totals for a new snapshot's summary.
  void AddTotals(const std::vector<ManifestFile>& manifests, int64_t added_size,
                 int64_t removed_size, std::map<std::string, std::string>* summary) const;
  Result<std::vector<ManifestFile>> CurrentManifests() const;
  // Writes `files` as ADDED entries of `snapshot_id`, one manifest per partition spec (their
  // paths go to `written`).
  Result<std::vector<ManifestFile>> WriteAddedManifests(const std::vector<DataFile>& files,
                                                        int64_t snapshot_id,
                                                        int64_t sequence_number,
                                                        std::vector<std::string>* written);
  // Writes `entries` (all of `spec`) as one manifest of `snapshot_id` at a new path.
  Result<ManifestFile> WriteSpecManifest(const PartitionSpec& spec, int64_t snapshot_id,
                                         int64_t sequence_number,
                                         const std::vector<ManifestEntry>& entries,
                                         std::vector<std::string>* written);
  Result<const PartitionSpec*> SpecOf(int32_t spec_id, const std::string& what) const;
  // A snapshot of the current one's child: ids, timestamp, schema and a new manifest list path
  // (the summary is the caller's).
  Snapshot NewSnapshot(int64_t snapshot_id, int64_t sequence_number, int attempt) const;
  // Runs `attempt` until it commits, refreshing the metadata before each retry; the files a
  // failed attempt wrote are removed. Only a lost race (AlreadyExists) is retried.
  template <typename T>
  Result<T> RetryCommit(const std::function<Result<T>(std::vector<std::string>* written)>& attempt);
  // `operation`: "replace" or "overwrite".
  Result<int64_t> TryReplace(const std::vector<std::string>& deleted_paths,
                             const std::vector<DataFile>& added,
                             const std::vector<DataFile>& added_deletes,
                             const std::map<std::string, std::string>& summary,
                             const char* operation, std::vector<std::string>* written);
  Result<std::optional<int64_t>> TryRewriteManifests(
      int min_manifests, const std::map<std::string, std::string>& summary,
      std::vector<std::string>* written);
  void RemoveQuietly(const std::string& path);

  std::shared_ptr<FileSystem> fs_;
  std::shared_ptr<Catalog> catalog_;
  TableIdentifier id_;
  TableOptions options_;
  // The last Commit's swap failed without saying whether it landed (not AlreadyExists).
  bool commit_outcome_unknown_ = false;
  TableMetadata metadata_;
  MetadataPointer current_;  // the loaded metadata's file (version 0 until the first commit)
};

}  // namespace oxbow::iceberg
