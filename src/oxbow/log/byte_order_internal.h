// Fixed-width fields of the log's on-disk structures (frame headers, the recovery checkpoint):
// little-endian, read and written in place. Not part of the module's face.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace oxbow::log::internal {

static_assert(std::endian::native == std::endian::little, "log files are little-endian");

template <typename T>
void Put(uint8_t* out, int64_t at, T value) {
  std::memcpy(out + at, &value, sizeof(T));
}

template <typename T>
T Get(const uint8_t* in, int64_t at) {
  T value;
  std::memcpy(&value, in + at, sizeof(T));
  return value;
}

}  // namespace oxbow::log::internal
