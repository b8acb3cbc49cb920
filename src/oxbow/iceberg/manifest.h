// Iceberg v2 manifests (data-file entries) and manifest lists, as Avro object container
// files whose schemas carry the spec's field ids. See docs/iceberg.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/common/file_system.h"
#include "oxbow/iceberg/avro.h"
#include "oxbow/iceberg/partition.h"
#include "oxbow/iceberg/types.h"

namespace oxbow::iceberg {

enum class FileContent : int32_t { kData = 0, kPositionDeletes = 1, kEqualityDeletes = 2 };

struct DataFile {
  FileContent content = FileContent::kData;
  std::string file_path;  // as readers will open it (absolute path or URI)
  std::string file_format = "PARQUET";
  PartitionValues partition;  // one value per partition field of its spec, in spec order
  // The partition spec of `partition`. Unset when written: the table's default spec. Filled by
  // DecodeManifest and ReadManifest (the manifest's spec).
  std::optional<int32_t> spec_id;
  int64_t record_count = 0;
  int64_t file_size_in_bytes = 0;
  // Metrics keyed by field id. Bounds use the single-value serialization (SerializeLiteral).
  std::map<int32_t, int64_t> column_sizes;
  std::map<int32_t, int64_t> value_counts;
  std::map<int32_t, int64_t> null_value_counts;
  std::map<int32_t, int64_t> nan_value_counts;
  std::map<int32_t, std::string> lower_bounds;
  std::map<int32_t, std::string> upper_bounds;
  std::vector<int64_t> split_offsets;  // row group offsets; empty: not written
  std::optional<int32_t> sort_order_id;
};

enum class EntryStatus : int32_t { kExisting = 0, kAdded = 1, kDeleted = 2 };

struct ManifestEntry {
  EntryStatus status = EntryStatus::kAdded;
  // Unset on write means "inherit from the manifest list" (the spec's rule for ADDED entries).
  // ReadManifest always fills them.
  std::optional<int64_t> snapshot_id;
  std::optional<int64_t> sequence_number;  // data sequence number
  std::optional<int64_t> file_sequence_number;
  DataFile data_file;
};

struct FieldSummary {
  bool contains_null = false;
  std::optional<bool> contains_nan;
  std::optional<std::string> lower_bound;  // single-value serialization
  std::optional<std::string> upper_bound;
};

// One entry of a manifest list.
struct ManifestFile {
  std::string manifest_path;
  int64_t manifest_length = 0;
  int32_t partition_spec_id = 0;
  int32_t content = 0;  // 0 data, 1 deletes
  int64_t sequence_number = 0;
  int64_t min_sequence_number = 0;
  int64_t added_snapshot_id = 0;
  int32_t added_files_count = 0;
  int32_t existing_files_count = 0;
  int32_t deleted_files_count = 0;
  int64_t added_rows_count = 0;
  int64_t existing_rows_count = 0;
  int64_t deleted_rows_count = 0;
  std::vector<FieldSummary> partitions;  // one per partition field; empty when unpartitioned
  std::optional<std::string> key_metadata;
};

// The Avro schema (JSON, with field ids) of a v2 manifest for this partition type.
Result<std::string> ManifestAvroSchema(const Schema& schema, const PartitionSpec& spec);
// The Avro schema (JSON, with field ids) of a v2 manifest list.
std::string ManifestListAvroSchema();

// A manifest's content (0 data, 1 deletes) as its entries say: Invalid when they mix data
// files with delete files (the spec keeps them in separate manifests). 0 when empty.
Result<int32_t> ManifestContent(const std::vector<ManifestEntry>& entries);

// Writes a v2 manifest at `path` (replacing any file there), content "data", or "deletes" when
// its entries are delete files, and returns its manifest list entry: content, counts, partition
// summaries, length, `snapshot_id` as added_snapshot_id, and `sequence_number` as the sequence
// number that entries without one inherit.
Result<ManifestFile> WriteManifest(FileSystem* fs, const std::string& path, const Schema& schema,
                                   const PartitionSpec& spec, int64_t snapshot_id,
                                   int64_t sequence_number,
                                   const std::vector<ManifestEntry>& entries,
                                   const AvroWriterOptions& options = {});
// The same, into memory.
Result<std::string> EncodeManifest(const Schema& schema, const PartitionSpec& spec,
                                   const std::vector<ManifestEntry>& entries,
                                   const AvroWriterOptions& options = {});

// Reads a manifest (ours, Java's or pyiceberg's; v1 or v2), resolving fields by field id,
// and applies the spec's inheritance of snapshot id and sequence numbers from `manifest`.
Result<std::vector<ManifestEntry>> ReadManifest(FileSystem* fs, const ManifestFile& manifest,
                                                const Schema& schema, const PartitionSpec& spec);
// Decodes manifest bytes without inheritance (unset stays unset).
Result<std::vector<ManifestEntry>> DecodeManifest(std::string_view bytes, const Schema& schema,
                                                  const PartitionSpec& spec);

struct ManifestListHeader {
  int64_t snapshot_id = 0;
  std::optional<int64_t> parent_snapshot_id;
  int64_t sequence_number = 0;
};

Status WriteManifestList(FileSystem* fs, const std::string& path, const ManifestListHeader& header,
                         const std::vector<ManifestFile>& manifests,
                         const AvroWriterOptions& options = {});
Result<std::string> EncodeManifestList(const ManifestListHeader& header,
                                       const std::vector<ManifestFile>& manifests,
                                       const AvroWriterOptions& options = {});
Result<std::vector<ManifestFile>> ReadManifestList(FileSystem* fs, const std::string& path);
Result<std::vector<ManifestFile>> DecodeManifestList(std::string_view bytes);

// "file:///x/y" and "file:/x/y" -> "/x/y"; other strings unchanged.
std::string LocalPath(const std::string& uri);

}  // namespace oxbow::iceberg
