// Bit and alignment helpers for validity bitmaps and buffer padding.
#pragma once

#include <cstdint>

namespace oxbow::bit_util {

constexpr int64_t RoundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}
constexpr int64_t BytesForBits(int64_t bits) { return (bits + 7) >> 3; }
inline bool GetBit(const uint8_t* bits, int64_t i) { return (bits[i >> 3] >> (i & 7)) & 1; }
inline void SetBit(uint8_t* bits, int64_t i) { bits[i >> 3] |= static_cast<uint8_t>(1 << (i & 7)); }
inline void ClearBit(uint8_t* bits, int64_t i) {
  bits[i >> 3] &= static_cast<uint8_t>(~(1 << (i & 7)));
}
inline void SetBitTo(uint8_t* bits, int64_t i, bool v) { v ? SetBit(bits, i) : ClearBit(bits, i); }

// Number of set bits in [offset, offset + length) of `bits`.
int64_t CountSetBits(const uint8_t* bits, int64_t offset, int64_t length);

// Copies `length` bits starting at `src_offset` into `dst` starting at bit 0.
void CopyBitmap(const uint8_t* src, int64_t src_offset, int64_t length, uint8_t* dst);

}  // namespace oxbow::bit_util
