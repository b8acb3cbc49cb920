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

}  // namespace oxbow::engine::internal
