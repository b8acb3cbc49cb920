// Routing rows to buckets: a stable hash of the bucket key (docs/bucketing.md), and a gather
// that splits a batch into per-bucket batches.
#pragma once

#include <cstdint>
#include <vector>

#include "oxbow/arrow/record_batch.h"

namespace oxbow::engine::internal {

// The bucket of every row: XXH3-64 over the key columns' canonical bytes, modulo num_buckets.
std::vector<int32_t> ComputeBuckets(const arrow::RecordBatch& batch,
                                    const std::vector<int>& key_columns, int32_t num_buckets);

// A new batch holding `rows` of `batch`, in that order (values are copied).
Result<arrow::RecordBatchPtr> TakeRows(const arrow::RecordBatch& batch,
                                       const std::vector<int32_t>& rows);

}  // namespace oxbow::engine::internal
