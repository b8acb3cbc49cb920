// Reading the lake back, in the table's own types, together with the log: the union read (a
// lake snapshot plus each bucket's log after the snapshot's tiered offsets) and log reads of
// offsets retention already deleted, served from the lake's Parquet files (docs/catalog.md).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oxbow/common/file_system.h"
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

struct UnionReadRequest {
  std::string table;
  std::optional<std::vector<std::string>> columns;  // projection, in output order
  std::optional<int64_t> limit;                     // stop after this many rows
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
  arrow::ipc::EncodedMessage message;
  int64_t rows = 0;
  // -1: rows of the lake snapshot (one row group of a data file). Otherwise rows of this
  // bucket's offsets [base_offset, next_offset).
  int32_t bucket = -1;
  int64_t base_offset = 0;
  int64_t next_offset = 0;
};

// A log table's whole contents as of the moment it was opened: the rows of its current lake
// snapshot, then, bucket by bucket, the offsets after that snapshot's tiered offsets up to the
// log's end. The snapshot is loaded before the log's ends are taken, so every offset below the
// ends comes exactly once.
class UnionReader {
 public:
  virtual ~UnionReader() = default;
  virtual const arrow::SchemaPtr& schema() const = 0;
  // The lake snapshot read; none when the lake is empty or the table is not in the lake.
  virtual std::optional<int64_t> snapshot_id() const = 0;
  virtual const std::vector<UnionBucket>& buckets() const = 0;
  // The next batch; std::nullopt at the end.
  virtual Result<std::optional<UnionBatch>> Next() = 0;
};

// Log tables only (InvalidArgument for a primary-key table). A table outside the lake reads
// its log from each bucket's earliest offset.
Result<std::unique_ptr<UnionReader>> OpenUnionRead(engine::Engine* engine, const LakeAccess& lake,
                                                   const UnionReadRequest& request);

}  // namespace oxbow::lake
