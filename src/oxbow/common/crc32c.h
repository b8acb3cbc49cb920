// CRC32C (Castagnoli), hardware-accelerated where the CPU has SSE4.2.
#pragma once

#include <cstddef>
#include <cstdint>

namespace oxbow::crc32c {

// Extends `crc` (0 to start) over `n` bytes of `data`.
uint32_t Extend(uint32_t crc, const void* data, size_t n);
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

}  // namespace oxbow::crc32c
