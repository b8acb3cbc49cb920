// Test fixtures shared by the modules' tests (library oxbow_testing, linked only into tests):
// a schema with every Arrow type Oxbow has, and random batches of any schema.
#pragma once

#include <cstdint>

#include "oxbow/arrow/record_batch.h"

namespace oxbow::testing {

// Every type: bool, int8..int64, uint8..uint64, float, double, string, binary, date32,
// timestamps (ms, us with "UTC", ns), decimal128 (9,2), (18,3), (38,10) and fixed_size_binary[5];
// fields "PARQUET:field_id" 1..n, all `nullable` or all required.
arrow::SchemaPtr EveryTypeSchema(bool nullable = true);

// `rows` random rows of `schema` from `seed`; `distinct` bounds the distinct values per column
// (dictionary-friendly when small). About every 7th value is null when the field is nullable.
arrow::RecordBatchPtr RandomBatch(const arrow::SchemaPtr& schema, int64_t rows, uint32_t seed,
                                  int64_t distinct = 1000);

}  // namespace oxbow::testing
