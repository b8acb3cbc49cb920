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

Result<std::shared_ptr<Table>> OpenLogTable(const catalog::TableDescriptor& descriptor,
                                            LogTableOptions options);

// Logs at WARN what a log found damaged, naming who found it ("recovery", "the scrubber").
void WarnAboutDamage(const std::string& table, int32_t bucket, const log::DamagedRange& damage,
                     const char* found_by);

}  // namespace oxbow::engine::internal
