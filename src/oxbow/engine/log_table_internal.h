// The log table: a table that is its buckets' logs (docs/log-format.md), the first kind of
// engine::Table.
#pragma once

#include <memory>
#include <string>

#include "oxbow/engine/table.h"

namespace oxbow::engine::internal {

struct LogTableOptions {
  // Where the table's bucket directories live: <dir>/<bucket>.
  std::string dir;
  // Options of every bucket log.
  log::LogOptions log;
  std::shared_ptr<FileSystem> fs;
  // Run on every batch put, after the schema, null and UTF-8 checks; empty: none.
  BatchCheck batch_check;
};

// A log table, with the per-bucket appends a primary-key table writes its changelog with.
class LogTable : public Table {
 public:
  // Appends `batch` to `bucket` as one batch, encoded with `options` (no checks: the caller
  // made them).
  virtual Result<log::AppendResult> AppendToBucket(int32_t bucket, const arrow::RecordBatch& batch,
                                                   const arrow::ipc::WriteOptions& options) = 0;
};

Result<std::shared_ptr<LogTable>> OpenLogTable(const catalog::TableDescriptor& descriptor,
                                               LogTableOptions options);

// The indices of `names` in `schema`, in their order; InvalidArgument naming an unknown column
// and listing the table's.
Result<std::vector<int>> ColumnIndices(const std::string& table, const arrow::Schema& schema,
                                       const std::vector<std::string>& names);

// Checks of a put batch against the table's schema, shared by every kind of table: no nulls
// in non-nullable fields, valid UTF-8 in strings. InvalidArgument naming the field otherwise.
Status CheckNulls(const std::string& table, const arrow::Schema& expected,
                  const arrow::RecordBatch& batch);
Status CheckUtf8(const std::string& table, const arrow::Schema& schema,
                 const arrow::RecordBatch& batch);

// Logs at WARN what a log found damaged, naming who found it ("recovery", "the scrubber").
void WarnAboutDamage(const std::string& table, int32_t bucket, const log::DamagedRange& damage,
                     const char* found_by);

}  // namespace oxbow::engine::internal
