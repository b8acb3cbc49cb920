#include "oxbow/common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace oxbow::crc32c {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // reflected Castagnoli

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr auto kTable = MakeTable();

uint32_t ExtendPortable(uint32_t crc, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t ExtendHardware(uint32_t crc, const uint8_t* p,
                                                          size_t n) {
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (n-- > 0) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}
const bool kHasHardware = __builtin_cpu_supports("sse4.2");

// Three whole blocks at once: three independent dependency chains keep the CRC unit busy. The
// hardware prefetcher stops at page boundaries, and each lane starts a new 4 KiB page, so the
// next three blocks are prefetched by hand (prefetches never fault, even past the end): from
// memory this runs at about twice the speed.
__attribute__((target("sse4.2"))) void ThreeBlocksHardware(const uint8_t* p, size_t block_size,
                                                           uint32_t* out) {
  uint64_t a = 0xFFFFFFFFu, b = 0xFFFFFFFFu, c = 0xFFFFFFFFu;
  const uint8_t* pb = p + block_size;
  const uint8_t* pc = pb + block_size;
  for (size_t i = 0; i < block_size; i += 8) {
    if ((i & 63) == 0) {
      __builtin_prefetch(pc + block_size + i);
      __builtin_prefetch(pc + 2 * block_size + i);
      __builtin_prefetch(pc + 3 * block_size + i);
    }
    uint64_t wa, wb, wc;
    std::memcpy(&wa, p + i, 8);
    std::memcpy(&wb, pb + i, 8);
    std::memcpy(&wc, pc + i, 8);
    a = _mm_crc32_u64(a, wa);
    b = _mm_crc32_u64(b, wb);
    c = _mm_crc32_u64(c, wc);
  }
  out[0] = ~static_cast<uint32_t>(a);
  out[1] = ~static_cast<uint32_t>(b);
  out[2] = ~static_cast<uint32_t>(c);
}
#endif

}  // namespace

uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  crc = kHasHardware ? ExtendHardware(crc, p, n) : ExtendPortable(crc, p, n);
#else
  crc = ExtendPortable(crc, p, n);
#endif
  return ~crc;
}

void BlockValues(const void* data, size_t n, size_t block_size, uint32_t* out) {
  const auto* p = static_cast<const uint8_t*>(data);
  size_t whole = n / block_size;
  size_t i = 0;
#if defined(__x86_64__)
  if (kHasHardware) {
    for (; i + 3 <= whole; i += 3) ThreeBlocksHardware(p + i * block_size, block_size, out + i);
  }
#endif
  for (; i < whole; ++i) out[i] = Value(p + i * block_size, block_size);
  if (n % block_size != 0) out[whole] = Value(p + whole * block_size, n % block_size);
}

}  // namespace oxbow::crc32c
