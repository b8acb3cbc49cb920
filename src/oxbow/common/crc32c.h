// CRC32C (Castagnoli), hardware-accelerated where the CPU has SSE4.2.
#pragma once

#include <cstddef>
#include <cstdint>

namespace oxbow::crc32c {

// Extends `crc` (0 to start) over `n` bytes of `data`.
uint32_t Extend(uint32_t crc, const void* data, size_t n);
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

// The CRC32C of each `block_size`-byte block of `data` (the last block may be shorter), into
// out[0 .. ceil(n / block_size)). Independent blocks are computed three at a time, which runs
// at the instruction's throughput rather than its latency: about 3x Value() on one core.
// `block_size` must be a positive multiple of 8.
void BlockValues(const void* data, size_t n, size_t block_size, uint32_t* out);

}  // namespace oxbow::crc32c
