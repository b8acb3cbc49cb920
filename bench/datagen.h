// The benchmarks' deterministic datasets. Batch `index` is a pure function of (seed, index, rows).
//
// The bench dataset: 20 columns, about 200 bytes a row. Types: int8/16/32/64, uint32/64, float,
// double (two), decimal128 (two), bool (two), string (three: short, 2-letter, long), binary,
// date32, timestamp[us, tz=UTC], timestamp[ms]. Nullable columns hold about 5% nulls.
//
// The events dataset (bench/vs_kafka.py): 20 columns, about 1 KB a row, shaped like the
// clickstream events of a shop: one timestamp, int64/int32 ids and counts, doubles, and ten
// strings from 2 characters to a few hundred (words of a 96-word vocabulary, so they compress
// like text). The first 10 columns are the ids, the price and the short strings plus the url.
#pragma once

#include <cstdint>
#include <string>

#include "oxbow/arrow/record_batch.h"

namespace oxbow::bench {

arrow::SchemaPtr BenchSchema();

// Batch number `index` of `rows` rows; the "id" column continues across batches.
Result<arrow::RecordBatchPtr> MakeBenchBatch(int64_t index, int64_t rows, uint64_t seed = 42);

arrow::SchemaPtr EventsSchema();
Result<arrow::RecordBatchPtr> MakeEventsBatch(int64_t index, int64_t rows, uint64_t seed = 42);

// Writes batches 0..num_batches-1 of the bench dataset as an uncompressed Arrow IPC file.
Status WriteBenchFile(const std::string& path, int64_t num_batches, int64_t rows,
                      uint64_t seed = 42);

}  // namespace oxbow::bench
