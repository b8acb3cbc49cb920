// Merge engines: how a write to a key lands on the row the key already has (docs/primary-keys.md).
// Parsed from a table's properties: merge_engine, merge_engine.version_column,
// fields.<col>.agg, fields.<col>.listagg_delimiter and changelog.image.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "oxbow/kv/row.h"

namespace oxbow::kv {

enum class MergeEngine { kLastRow, kFirstRow, kVersioned, kAggregate };

enum class Aggregation {
  kLast,  // the default of a non-key column of an aggregate table is kLastNonNull
  kLastNonNull,
  kFirst,
  kFirstNonNull,
  kSum,
  kMin,
  kMax,
  kBoolAnd,
  kBoolOr,
  kListAgg,
};

struct MergeRules {
  MergeEngine engine = MergeEngine::kLastRow;
  int version_column = -1;                // kVersioned
  std::vector<Aggregation> aggregations;  // kAggregate: one per column (key columns unused)
  std::vector<std::string> delimiters;    // kListAgg: one per column
  // changelog.image=full: an update emits -U (the old row) before +U.
  bool full_image = true;

  // Whether a write of every column needs the key's old row: not for last_row without -U.
  bool upsert_reads_old_row() const { return engine != MergeEngine::kLastRow || full_image; }
};

// Parses and checks the merge properties of a table with primary-key columns `key_columns`;
// InvalidArgument naming the property or column otherwise.
Result<MergeRules> ParseMergeRules(const arrow::Schema& schema, const std::vector<int>& key_columns,
                                   const std::map<std::string, std::string>& properties);

// The row after `update` lands on `old` (null: the key has no row). `given[i]` says whether the
// write carries column i (a partial update does not carry them all; the others are null in
// `update`). std::nullopt: the merge engine ignores the write. InvalidArgument when a value
// cannot be merged (a decimal sum that leaves its precision).
Result<std::optional<Row>> Merge(const MergeRules& rules, const arrow::Schema& schema,
                                 const Row* old, Row update, const std::vector<bool>& given);

}  // namespace oxbow::kv
