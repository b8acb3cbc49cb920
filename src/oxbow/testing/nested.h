// Nested-type fixtures shared by the Arrow and Parquet tests (library oxbow_testing).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "oxbow/arrow/array.h"
#include "oxbow/arrow/record_batch.h"
#include "oxbow/common/buffer.h"

namespace oxbow::testing {

// A buffer of little-endian int32 values (list offsets, int32 data).
std::shared_ptr<Buffer> Int32Buffer(const std::vector<int32_t>& values);

// An Arrow validity bitmap: bit i set where bits[i].
std::shared_ptr<Buffer> ValidityBitmap(const std::vector<bool>& bits);

// An int32 array of `values`, null where !valid[i].
arrow::Array Int32Array(const std::vector<int32_t>& values, const std::vector<bool>& valid);

// 6 rows of l: list<int32>, s: struct<a: int32, b: list<int32>>, f: fixed_size_list<int32>[2]
// (only `with_fixed_size_list`) and m: map<int32, int32>, with nulls at every level.
arrow::RecordBatchPtr NestedBatch(bool with_fixed_size_list = true);

}  // namespace oxbow::testing
