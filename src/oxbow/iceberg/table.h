// IcebergTable: a file-system (Hadoop-style) Iceberg v2 table that the tiering service commits
// Parquet files to. Layout, commit protocol and summary keys: docs/iceberg.md.
//
//   <location>/metadata/v<N>.metadata.json     table metadata, one file per commit
//   <location>/metadata/version-hint.text      N of the newest version (a hint; may lag)
//   <location>/metadata/snap-<id>-<attempt>-<uuid>.avro   manifest lists
//   <location>/metadata/<uuid>-m<k>.avro       manifests
//
// A commit writes v<N+1>.metadata.json under a temporary name and publishes it with a rename
// that refuses to replace, so of two writers racing for version N+1 exactly one wins; the
// other re-reads the table and retries (appends) or re-plans (replace, expire).
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
#include "oxbow/iceberg/manifest.h"
#include "oxbow/iceberg/metadata.h"

namespace oxbow::iceberg {

// Table properties Oxbow reads (Java Iceberg's names and meanings).
inline constexpr char kPreviousVersionsMax[] = "write.metadata.previous-versions-max";
inline constexpr char kDeleteAfterCommit[] = "write.metadata.delete-after-commit.enabled";
// The summary key under which the tiering records the offsets it has tiered per bucket.
inline constexpr char kTieredOffsetsKey[] = "oxbow.tiered-offsets";

struct TableOptions {
  // Attempts of one commit when other writers keep publishing the same version. Default: 8.
  int commit_attempts = 8;
  // Encoding of manifests and manifest lists. Default: deflate.
  AvroWriterOptions avro;
  // fsync metadata files and the metadata directory before a commit counts. Default: true.
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
  // Creates the table at `location` (a local path or file:// URI): metadata/v1.metadata.json
  // with no snapshot. AlreadyExists when the location already holds table metadata. Unless
  // given, the properties kDeleteAfterCommit = "true" and kPreviousVersionsMax = "100" are set.
  static Result<std::unique_ptr<IcebergTable>> Create(
      std::shared_ptr<FileSystem> fs, std::string location, Schema schema, PartitionSpec spec,
      std::map<std::string, std::string> properties = {}, TableOptions options = {});
  // Opens the newest version (version-hint.text, then probing forward for later versions).
  static Result<std::unique_ptr<IcebergTable>> Load(std::shared_ptr<FileSystem> fs,
                                                    std::string location,
                                                    TableOptions options = {});
  // Re-reads the newest version.
  Status Refresh();

  const TableMetadata& metadata() const { return metadata_; }
  const std::string& location() const { return metadata_.location; }
  // Version N of the loaded metadata and the path of its file.
  int64_t version() const { return version_; }
  std::string metadata_file() const;
  const Schema& schema() const { return *metadata_.CurrentSchema(); }
  const PartitionSpec& spec() const { return *metadata_.DefaultSpec(); }
  // Null before the first commit. Its summary holds the operation and the caller's keys.
  const Snapshot* CurrentSnapshot() const { return metadata_.CurrentSnapshot(); }

  // The ADDED and EXISTING entries of the current snapshot (sequence numbers filled in).
  Result<std::vector<ManifestEntry>> LiveEntries() const;

  // Fast append: one new manifest with `files`, the current snapshot's manifests reused by
  // reference. `summary` keys are added to the snapshot summary (operation "append").
  // Returns the new snapshot id. An empty `files` still commits (to record summary keys).
  Result<int64_t> AppendFiles(const std::vector<DataFile>& files,
                              const std::map<std::string, std::string>& summary = {});
  // Compaction: `deleted_paths` (each must be live in the current snapshot) are replaced by
  // `added` in one snapshot with operation "replace". Manifests holding a deleted file are
  // rewritten (DELETED + EXISTING entries); the others are reused.
  Result<int64_t> ReplaceFiles(const std::vector<std::string>& deleted_paths,
                               const std::vector<DataFile>& added,
                               const std::map<std::string, std::string>& summary = {});
  // Merges the current snapshot's manifests into one (live entries kept as EXISTING with their
  // snapshot ids and sequence numbers, DELETED entries dropped) in a "replace" snapshot that
  // changes no data. Does nothing and returns nullopt while there are fewer than
  // `min_manifests`. Keeps the manifest list short under frequent appends.
  Result<std::optional<int64_t>> RewriteManifests(
      int min_manifests, const std::map<std::string, std::string>& summary = {});
  // Drops old snapshots from the metadata (one commit) and then, optionally, their files.
  Result<ExpireResult> ExpireSnapshots(const ExpireOptions& options = {});

 private:
  IcebergTable(std::shared_ptr<FileSystem> fs, TableOptions options)
      : fs_(std::move(fs)), options_(options) {}

  std::string MetadataDir() const;
  std::string VersionPath(int64_t version) const;  // file-system path
  std::string NewManifestPath() const;             // as written into the manifest list
  // Publishes `next` as version_ + 1; AlreadyExists when another writer got there first.
  Status Commit(TableMetadata next);
  // Adds `snapshot` to a copy of the current metadata, as the new current snapshot.
  TableMetadata WithSnapshot(const Snapshot& snapshot) const;
  // Totals for a new snapshot's summary.
  void AddTotals(const std::vector<ManifestFile>& manifests, int64_t added_size,
                 int64_t removed_size, std::map<std::string, std::string>* summary) const;
  Result<std::vector<ManifestFile>> CurrentManifests() const;
  // A snapshot of the current one's child: ids, timestamp, schema and a new manifest list path
  // (the summary is the caller's).
  Snapshot NewSnapshot(int64_t snapshot_id, int64_t sequence_number, int attempt) const;
  // Runs `attempt` until it commits, refreshing the metadata before each retry; the files a
  // failed attempt wrote are removed. Only a lost race (AlreadyExists) is retried.
  template <typename T>
  Result<T> RetryCommit(const std::function<Result<T>(std::vector<std::string>* written)>& attempt);
  Result<int64_t> TryReplace(const std::vector<std::string>& deleted_paths,
                             const std::vector<DataFile>& added,
                             const std::map<std::string, std::string>& summary,
                             std::vector<std::string>* written);
  Result<std::optional<int64_t>> TryRewriteManifests(
      int min_manifests, const std::map<std::string, std::string>& summary,
      std::vector<std::string>* written);
  void RemoveQuietly(const std::string& path);

  std::shared_ptr<FileSystem> fs_;
  TableOptions options_;
  TableMetadata metadata_;
  int64_t version_ = 0;
};

}  // namespace oxbow::iceberg
