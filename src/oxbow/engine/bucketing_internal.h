// Routing rows to buckets: a stable hash of the bucket key (docs/data-dir.md).
#pragma once

#include <cstdint>
#include <vector>

#include "oxbow/arrow/record_batch.h"

namespace oxbow::engine::internal {

// The bucket of every row: XXH3-64 over the key columns' canonical bytes, modulo num_buckets.
std::vector<int32_t> ComputeBuckets(const arrow::RecordBatch& batch,
                                    const std::vector<int>& key_columns, int32_t num_buckets);

}  // namespace oxbow::engine::internal
