#include "oxbow/common/bit_util.h"

#include <bit>
#include <cstring>

namespace oxbow::bit_util {

int64_t CountSetBits(const uint8_t* bits, int64_t offset, int64_t length) {
  int64_t count = 0;
  int64_t i = offset;
  const int64_t end = offset + length;
  for (; i < end && (i & 7) != 0; ++i) count += GetBit(bits, i);
  for (; i + 64 <= end; i += 64) {
    uint64_t word;
    std::memcpy(&word, bits + (i >> 3), 8);
    count += std::popcount(word);
  }
  for (; i < end; ++i) count += GetBit(bits, i);
  return count;
}

void CopyBitmap(const uint8_t* src, int64_t src_offset, int64_t length, uint8_t* dst) {
  if ((src_offset & 7) == 0) {
    std::memcpy(dst, src + (src_offset >> 3), static_cast<size_t>(BytesForBits(length)));
    if (length & 7) dst[length >> 3] &= static_cast<uint8_t>((1u << (length & 7)) - 1);
    return;
  }
  std::memset(dst, 0, static_cast<size_t>(BytesForBits(length)));
  for (int64_t i = 0; i < length; ++i) {
    if (GetBit(src, src_offset + i)) SetBit(dst, i);
  }
}

}  // namespace oxbow::bit_util
