// How a log table looks in the lake: its Iceberg schema (user columns plus the system columns
// __bucket, __offset, __timestamp), its partition spec, and the conversion of log batches into
// lake batches, partitions and data-file entries (docs/lake.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/arrow/record_batch.h"
#include "oxbow/catalog/descriptor.h"
#include "oxbow/iceberg/manifest.h"
#include "oxbow/iceberg/partition.h"
#include "oxbow/iceberg/table.h"
#include "oxbow/iceberg/types.h"
#include "oxbow/parquet/writer.h"

namespace oxbow::lake::internal {

inline constexpr char kBucketColumn[] = "__bucket";
inline constexpr char kOffsetColumn[] = "__offset";
inline constexpr char kTimestampColumn[] = "__timestamp";
// The changelog lake table's column of the change: "+I", "-U", "+U" or "-D" (docs/lake.md).
inline constexpr char kChangeTypeColumn[] = "_change_type";

// The snapshot summary key under which tiering records its progress: a JSON list of the next
// offset to tier per bucket (docs/lake.md, "Exactly once").
inline constexpr char kTieredOffsetsKey[] = "oxbow.tiered-offsets";
// Where the lake's copy of the log starts, per bucket, when that is not 0: offsets left the log
// before reaching the lake, so it holds every offset from here to the tiered one (docs/lake.md,
// "Holes"). Absent: zeros.
inline constexpr char kStartOffsetsKey[] = "oxbow.start-offsets";
// The table property naming the Oxbow table id a lake table belongs to (a re-created name starts
// a new lake).
inline constexpr char kTableIdProperty[] = "oxbow.table-id";

// The lake form of a log table's schema.
struct LakeSchema {
  arrow::SchemaPtr log_schema;    // the table's own schema
  arrow::SchemaPtr arrow_schema;  // lake columns with "PARQUET:field_id"; system columns last
  iceberg::Schema iceberg_schema;
  // A primary-key table's key columns (indices into both schemas); empty for a log table.
  std::vector<int> key_columns;
};

// Maps every column to the Arrow type whose Parquet form is the Iceberg type exactly
// (int8/16, uint8/16 -> int32; uint32 -> int64; timestamps -> microseconds) and appends the
// system columns. Field ids: 1..n for the table's columns, then n+1..n+3. The columns of
// `primary_key` become required and the Iceberg schema's identifier fields.
Result<LakeSchema> MakeLakeSchema(const arrow::SchemaPtr& log_schema,
                                  const std::vector<std::string>& primary_key = {});

// The lake form of `table`'s current schema version for a lake table whose current schema is
// `lake` (null: a lake table about to be created) and whose last-column-id is `last_column_id`
// (docs/lake.md, "Schema evolution"). The Iceberg schema's id is the table's schema_id. A lake
// schema of id v holds the columns of the table's version v in order, so a column keeps its
// Iceberg field id (matched through its Oxbow field id) across renames and widenings; a column
// new to the lake takes ids above last_column_id, and the system columns keep theirs. Invalid
// when the lake's schema is no version of the table, or a column's type changed in a way Iceberg
// does not allow.
// `extra` columns (the changelog lake table's _change_type) follow the table's, before the system
// columns, and keep their ids like them.
Result<LakeSchema> EvolvedLakeSchema(const catalog::TableDescriptor& table,
                                     const iceberg::Schema* lake, int32_t last_column_id,
                                     const std::vector<arrow::Field>& extra = {});

// The Iceberg field id of each column of `table`'s current schema in the lake schema `lake`
// (nullopt: a column the lake does not hold yet, read as null), found through the table's
// version lake.schema_id(); NotFound when the table has no such version.
Result<std::vector<std::optional<int32_t>>> LakeFieldIds(const catalog::TableDescriptor& table,
                                                         const iceberg::Schema& lake);

// The Iceberg field ids of the nested fields of each column of `table`'s current schema, in
// pre-order (as catalog::ChildIds; nullopt: a field the lake does not hold yet), found like
// LakeFieldIds through their Oxbow ids.
Result<std::vector<std::vector<std::optional<int32_t>>>> LakeChildFieldIds(
    const catalog::TableDescriptor& table, const iceberg::Schema& lake);

// `batch`, read from a lake data file of Arrow schema `file_schema` (whose fields carry
// "PARQUET:field_id"), in the lake schema `schema`: columns matched by field id and cast (a
// widened type), columns the file lacks null.
Result<arrow::RecordBatchPtr> ToLakeSchema(const LakeSchema& schema,
                                           const arrow::Schema& file_schema,
                                           const arrow::RecordBatch& batch);
// The field id of a lake file's field ("PARQUET:field_id"), if it has one.
std::optional<int32_t> FieldIdOf(const arrow::Field& field);

// Parses the table property lake.partition: "" (unpartitioned) or a comma-separated list of
// transform(column), e.g. "bucket[16](id), day(ts)" or "identity(__bucket)".
Result<iceberg::PartitionSpec> ParsePartitionSpec(std::string_view text,
                                                  const iceberg::Schema& schema);

// A log batch of `bucket` starting at `base_offset`, appended at `append_time_ms`, in lake form.
// `offset_step` 0 puts every row at `base_offset` (rows of a snapshot, whose own offsets are
// not known).
Result<arrow::RecordBatchPtr> ToLakeBatch(const LakeSchema& schema, const arrow::RecordBatch& batch,
                                          int32_t bucket, int64_t base_offset,
                                          int64_t append_time_ms, int64_t offset_step = 1);

// Rows of `batch` grouped by partition tuple (one group of every row when unpartitioned).
struct PartitionGroup {
  iceberg::PartitionValues values;
  std::string path;  // "name=value/..." for the data file's directory ("" when unpartitioned)
  arrow::RecordBatchPtr batch;
};
Result<std::vector<PartitionGroup>> SplitByPartition(const LakeSchema& schema,
                                                     const iceberg::PartitionSpec& spec,
                                                     const arrow::RecordBatch& batch);

// The data-file entry of a written Parquet file: metrics keyed by field id, with Parquet
// statistics bytes re-encoded as Iceberg single-value bounds.
Result<iceberg::DataFile> MakeDataFile(const LakeSchema& schema, std::string path,
                                       iceberg::PartitionValues partition,
                                       const parquet::FileMetrics& metrics);

// The offsets the current snapshot's summary records under `key` (kTieredOffsetsKey,
// kStartOffsetsKey): zeros before the first snapshot or without the key, else Corruption.
Result<std::vector<int64_t>> SummaryOffsets(const iceberg::IcebergTable& table, size_t buckets,
                                            const char* key = kTieredOffsetsKey);

}  // namespace oxbow::lake::internal
