// Primary-key tables in the lake (docs/lake.md, "Primary-key tables"): where each key's current
// row lives among the lake's data files, so a tiering round finds the rows to delete without
// reading the lake, and the position delete files rounds write.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "oxbow/arrow/record_batch.h"
#include "oxbow/iceberg/manifest.h"
#include "oxbow/lake/lake_schema_internal.h"

namespace oxbow::lake::internal {

// Iceberg's reserved field ids and names of a position delete file's columns.
inline constexpr int32_t kDeleteFilePathId = 2147483546;
inline constexpr int32_t kDeletePosId = 2147483545;

// The row of a key in the lake: data file (an id of KeyIndex) and position in it.
struct RowLocation {
  int32_t file = -1;
  int64_t pos = 0;
  bool operator==(const RowLocation& other) const = default;
};

// Where a lake file sits: its partition spec, its tuple in that spec, and its directory under
// data/ ("" when unpartitioned). A position delete file takes the partition (spec and tuple) of
// the data files it names, as the spec's scan rule matches them.
struct FilePartition {
  int32_t spec_id = 0;
  iceberg::PartitionValues values;
  std::string path;
};

// The live data files of a primary-key lake table and, for each key, where its live row is.
// Built from the lake's committed files at open and changed only after a commit succeeds, so it
// always equals the committed snapshot. Keys are EncodeLakeKey's bytes.
class KeyIndex {
 public:
  struct DataFileInfo {
    std::string path;
    FilePartition partition;
    int64_t rows = 0;
    int64_t deleted = 0;  // rows of it a delete file removed
  };

  // Registers a live data file whose rows have `keys`, in position order, all of them live: they
  // become the keys' locations, and a row a key had elsewhere counts as deleted there (a delete
  // file of the same commit removes it). Returns its id.
  int32_t AddFile(std::string path, FilePartition partition, std::vector<std::string> keys);
  // The same for a file read back from the lake, whose row at `deleted` positions is gone:
  // its other rows become the keys' locations. Corruption when a key is live twice.
  Result<int32_t> AddCommittedFile(std::string path, FilePartition partition,
                                   const std::vector<std::string>& keys,
                                   const std::set<int64_t>& deleted);
  // Where `key`'s live row is, if it has one.
  std::optional<RowLocation> Find(const std::string& key) const;
  // Forgets `key`'s row (a delete file now removes it); counts it in its file's `deleted`.
  void Remove(const std::string& key);
  // Forgets a data file (compaction removed it); its keys must have moved or been removed.
  void RemoveFile(int32_t file);

  // Compaction rewrites files while rounds go on. From Watch(file) on, the positions of the
  // file's rows whose key moves or is removed are recorded; Unwatch returns them, so the rows
  // compaction copied that changed meanwhile are found without looking up every copied key.
  void Watch(int32_t file);
  std::vector<int64_t> Unwatch(int32_t file);
  // Registers compaction's output, `rows` rows of which `deleted` a delete file removes; its
  // keys still point into the inputs until Move and Settle.
  int32_t AddMovedFile(std::string path, FilePartition partition, int64_t rows, int64_t deleted);
  // After the commit that replaced `from` by `to`: `from`'s row at pos is now `to`'s row at
  // moved[pos] (-1: not copied). Find and Remove follow the move until EndMove, so the keys can
  // be settled a slice at a time (Settle) without holding the table's lock throughout.
  void Move(int32_t from, int32_t to, std::vector<int64_t> moved);
  void Settle(const std::string& key);
  void EndMove(int32_t from);  // forgets `from` (its keys settled)

  const DataFileInfo& file(int32_t id) const { return files_.at(id); }
  const std::unordered_map<int32_t, DataFileInfo>& files() const { return files_; }
  std::optional<int32_t> FileId(const std::string& path) const;
  size_t keys() const { return keys_.size(); }

  // Delete files and the data files their rows name; a delete file whose data files are all
  // gone is obsolete (compaction drops it).
  void AddDeleteFile(std::string path, std::set<std::string> data_files);
  std::vector<std::string> ObsoleteDeleteFiles(const std::set<std::string>& removed_data) const;
  void RemoveDeleteFile(const std::string& path) { delete_files_.erase(path); }
  size_t delete_files() const { return delete_files_.size(); }

 private:
  int32_t next_id_ = 0;
  std::unordered_map<int32_t, DataFileInfo> files_;
  std::unordered_map<std::string, int32_t> ids_;
  std::unordered_map<std::string, RowLocation> keys_;
  std::unordered_map<std::string, std::set<std::string>> delete_files_;
  struct Moved {
    int32_t to;
    std::vector<int64_t> positions;
  };
  std::unordered_map<int32_t, Moved> moves_;
  std::unordered_map<int32_t, std::vector<int64_t>> watched_;

  RowLocation Resolve(RowLocation at) const;
  void Unlink(RowLocation at);  // `at` loses its key: recorded when watched
};

// The key of `batch`'s row (a lake batch: the columns of MakeLakeSchema) from the columns at
// `key_columns`: kv's order-preserving encoding of the lake values, so a key read back from a
// data file encodes as it did when the row was tiered.
std::string EncodeLakeKey(const arrow::RecordBatch& batch, const std::vector<int>& key_columns,
                          int64_t row);

// The Arrow schema of a position delete file: file_path (string) and pos (long), required,
// with Iceberg's reserved field ids.
const arrow::SchemaPtr& PositionDeleteSchema();

// A position delete file's rows, sorted by (file_path, pos) as the spec requires.
Result<arrow::RecordBatchPtr> PositionDeleteBatch(
    std::vector<std::pair<std::string, int64_t>> deletes);

// The manifest entry of a written position delete file (content 1) with the column metrics of
// file_path and pos.
iceberg::DataFile MakeDeleteFile(std::string path, const FilePartition& partition,
                                 const parquet::FileMetrics& metrics);

}  // namespace oxbow::lake::internal
