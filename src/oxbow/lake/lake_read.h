// Reading the lake back, in the table's own types, together with the log: the union read (a
// lake snapshot plus each bucket's log after the snapshot's tiered offsets) and log reads of
// offsets retention already deleted, served from the lake's Parquet files (docs/catalog.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oxbow/common/file_system.h"
#include "oxbow/common/predicate.h"
#include "oxbow/engine/engine.h"
#include "oxbow/iceberg/catalog.h"

namespace oxbow::lake {

// The warehouse as a reader sees it: the catalog naming each table's current metadata and the
// file system of its files (TieringService::catalog() and file_system()).
struct LakeAccess {
  std::shared_ptr<iceberg::Catalog> catalog;
  std::shared_ptr<FileSystem> fs;
};

// A read of one bucket's log (engine::Engine::OpenRead) that also serves offsets the log's
// retention deleted, from the lake's files (which hold __bucket and __offset), whenever the lake
// has them: a read from such an offset, or one that retention overtakes, reads the lake until
// the log's first offset and then continues in the log. Offsets neither holds are OutOfRange
// naming the first offset readable after them. Tables outside the lake read the log only.
Result<std::unique_ptr<engine::ReadCursor>> OpenLogRead(engine::Engine* engine,
                                                        const LakeAccess& lake,
                                                        const engine::ReadRequest& request);

// Per bucket, the first offset of a log table's current lake snapshot (none: no row of that
// bucket), found by reading the __bucket and __offset columns of the files that may hold it.
// Buckets `known` gives an offset for keep it (the lake never drops a row), and a bucket the
// snapshot tiered nothing from has none: neither reads a data file.
Result<std::vector<std::optional<int64_t>>> EarliestLakeOffsets(
    const LakeAccess& lake, const catalog::TableDescriptor& table,
    const std::vector<std::optional<int64_t>>& known = {});

struct UnionReadRequest {
  std::string table;
  std::optional<std::vector<std::string>> columns;  // projection, in output order
  std::optional<int64_t> limit;                     // stop after this many rows
  // Log tables: after the log's ends, go on with each bucket's new rows until cancelled.
  bool follow = false;
  // Only rows matching every predicate (columns of integer, floating-point, date32 or string
  // type); lake files and row groups whose bounds exclude a match are not read.
  std::vector<ColumnPredicate> filter;
};

// What a filtered union read skipped in the lake, by Iceberg bounds and Parquet statistics.
struct UnionPruning {
  int64_t files_skipped = 0;
  int64_t row_groups_skipped = 0;
};

// Where a union read stands in one bucket: the lake snapshot holds the offsets below
// lake_offset, the log part covers [lake_offset, next_offset).
struct UnionBucket {
  int32_t bucket = 0;
  int64_t lake_offset = 0;
  int64_t next_offset = 0;
};

// One batch of a union read, encoded for sending.
struct UnionBatch {
  // kLake: rows of the lake snapshot. kLog: rows of `bucket`'s offsets [base_offset,
  // next_offset) (with a filter, those that match). kChanges (primary-key tables): current rows
  // of keys the changelog of `bucket` changed after the snapshot, as of next_offset.
  enum class Part { kLake, kLog, kChanges };
  Part part = Part::kLake;
  arrow::ipc::EncodedMessage message;
  int64_t rows = 0;
  int32_t bucket = -1;
  int64_t base_offset = 0;
  int64_t next_offset = 0;
};

// A table's whole contents as of the moment it was opened. Log tables: the rows of the current
// lake snapshot, then, bucket by bucket, the offsets after that snapshot's tiered offsets up to
// the log's end (then, when following, each bucket's new offsets). The snapshot is loaded before
// the log's ends are taken, so every offset below the ends comes exactly once. Primary-key
// tables: each key once with its current row, the lake's rows (less position deletes and keys
// the changelog changed after the snapshot) then the changed keys' last rows.
class UnionReader {
 public:
  virtual ~UnionReader() = default;
  virtual const arrow::SchemaPtr& schema() const = 0;
  // The lake snapshot read; none when the lake is empty or the table is not in the lake.
  virtual std::optional<int64_t> snapshot_id() const = 0;
  virtual const std::vector<UnionBucket>& buckets() const = 0;
  // The next batch; std::nullopt at the end or, when following, when `deadline` passes
  // without new rows.
  virtual Result<std::optional<UnionBatch>> Next(
      std::chrono::steady_clock::time_point deadline) = 0;
  // True once everything was delivered (never when following).
  virtual bool done() const = 0;
  virtual UnionPruning pruning() const = 0;
};

// A log table outside the lake reads its log from each bucket's earliest offset. A primary-key
// table must be in the lake and cannot be followed (InvalidArgument).
Result<std::unique_ptr<UnionReader>> OpenUnionRead(engine::Engine* engine, const LakeAccess& lake,
                                                   const UnionReadRequest& request);

}  // namespace oxbow::lake
