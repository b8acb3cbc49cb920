#include "pk_data.h"

#include <algorithm>
#include <cstdio>

namespace oxbow::bench {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::string KeyOf(uint64_t index, int64_t bytes) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(index * 0x9E3779B97F4A7C15ull));
  return std::string(static_cast<size_t>(std::max<int64_t>(bytes - 16, 0)), 'k') + hex;
}

std::string ValueOf(uint64_t row, int64_t bytes) {
  std::string value(static_cast<size_t>(bytes), '\0');
  uint64_t word = 0;
  for (int64_t j = 0; j < bytes; ++j) {
    if (j % 8 == 0) word = SplitMix64(row * 65536 + static_cast<uint64_t>(j / 8));
    value[static_cast<size_t>(j)] = static_cast<char>(33 + ((word >> (8 * (j % 8))) & 0xff) % 94);
  }
  return value;
}

}  // namespace oxbow::bench
