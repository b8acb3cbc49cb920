#include <xxhash.h>

#include <cstring>

#include "oxbow/engine/bucketing_internal.h"

namespace oxbow::engine::internal {
namespace {

using arrow::Array;
using arrow::TypeId;

// Hashed in place of a null key value, so that null and empty values land apart.
constexpr uint64_t kNullMarker = 0x9E3779B97F4A7C15ull;

void HashColumn(const Array& column, std::vector<uint64_t>* hashes) {
  const int64_t n = column.length();
  const auto& type = column.type();
  const int bits = type.bit_width();
  for (int64_t i = 0; i < n; ++i) {
    uint64_t& h = (*hashes)[i];
    if (column.IsNull(i)) {
      h = XXH3_64bits_withSeed(&kNullMarker, sizeof(kNullMarker), h);
    } else if (bits == 1) {
      uint8_t v = column.BoolValue(i) ? 1 : 0;
      h = XXH3_64bits_withSeed(&v, 1, h);
    } else if (bits == 0 || type.id() == TypeId::kFixedSizeBinary ||
               type.id() == TypeId::kDecimal128) {
      auto view = column.GetView(i);
      h = XXH3_64bits_withSeed(view.data(), view.size(), h);
    } else {
      const int64_t w = bits / 8;
      h = XXH3_64bits_withSeed(column.buffer(1)->data() + (column.offset() + i) * w,
                               static_cast<size_t>(w), h);
    }
  }
}

Result<Array> TakeColumn(const Array& column, const std::vector<int32_t>& rows) {
  const auto n = static_cast<int64_t>(rows.size());
  const auto& type = column.type();
  std::shared_ptr<Buffer> validity;
  int64_t null_count = 0;
  if (column.null_count() > 0) {
    ASSIGN_OR_RAISE(auto bitmap, MutableBuffer::Allocate(bit_util::BytesForBits(n)));
    std::memset(bitmap->mutable_data(), 0, static_cast<size_t>(bitmap->size()));
    for (int64_t i = 0; i < n; ++i) {
      if (column.IsValid(rows[i])) {
        bit_util::SetBit(bitmap->mutable_data(), i);
      } else {
        ++null_count;
      }
    }
    validity = std::move(bitmap);
  }
  const int bits = type.bit_width();
  if (bits == 1) {
    ASSIGN_OR_RAISE(auto values, MutableBuffer::Allocate(bit_util::BytesForBits(n)));
    std::memset(values->mutable_data(), 0, static_cast<size_t>(values->size()));
    for (int64_t i = 0; i < n; ++i) {
      if (column.BoolValue(rows[i])) bit_util::SetBit(values->mutable_data(), i);
    }
    return Array::Make(type, n, {validity, std::move(values)}, null_count);
  }
  if (bits > 0) {
    const int64_t w = bits / 8;
    ASSIGN_OR_RAISE(auto values, MutableBuffer::Allocate(n * w));
    const uint8_t* src = column.buffer(1)->data() + column.offset() * w;
    uint8_t* dst = values->mutable_data();
    for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * w, src + rows[i] * w, w);
    return Array::Make(type, n, {validity, std::move(values)}, null_count);
  }
  ASSIGN_OR_RAISE(auto offsets, MutableBuffer::Allocate((n + 1) * 4));
  auto* out_offsets = reinterpret_cast<int32_t*>(offsets->mutable_data());
  int64_t total = 0;
  out_offsets[0] = 0;
  for (int64_t i = 0; i < n; ++i) {
    total += static_cast<int64_t>(column.GetView(rows[i]).size());
    if (total > INT32_MAX) return Status::Invalid("taken rows exceed 2 GiB of string data");
    out_offsets[i + 1] = static_cast<int32_t>(total);
  }
  ASSIGN_OR_RAISE(auto data, MutableBuffer::Allocate(total));
  for (int64_t i = 0; i < n; ++i) {
    auto view = column.GetView(rows[i]);
    if (!view.empty()) std::memcpy(data->mutable_data() + out_offsets[i], view.data(), view.size());
  }
  return Array::Make(type, n, {validity, std::move(offsets), std::move(data)}, null_count);
}

}  // namespace

std::vector<int32_t> ComputeBuckets(const arrow::RecordBatch& batch,
                                    const std::vector<int>& key_columns, int32_t num_buckets) {
  std::vector<uint64_t> hashes(static_cast<size_t>(batch.num_rows()), 0);
  for (int c : key_columns) HashColumn(batch.column(c), &hashes);
  std::vector<int32_t> buckets(hashes.size());
  for (size_t i = 0; i < hashes.size(); ++i) {
    buckets[i] = static_cast<int32_t>(hashes[i] % static_cast<uint64_t>(num_buckets));
  }
  return buckets;
}

Result<arrow::RecordBatchPtr> TakeRows(const arrow::RecordBatch& batch,
                                       const std::vector<int32_t>& rows) {
  std::vector<Array> columns;
  columns.reserve(batch.num_columns());
  for (const auto& c : batch.columns()) {
    ASSIGN_OR_RAISE(Array taken, TakeColumn(c, rows));
    columns.push_back(std::move(taken));
  }
  return std::make_shared<const arrow::RecordBatch>(
      batch.schema(), static_cast<int64_t>(rows.size()), std::move(columns));
}

}  // namespace oxbow::engine::internal
