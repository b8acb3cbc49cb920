// Fuzzes the cold-segment manifest decoder: the input as it is, and the input with its trailing
// CRC32C made right, so mutations reach the checks behind the checksum. Whatever decodes must
// encode and decode back to the same segments.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "oxbow/common/crc32c.h"
#include "oxbow/log/cold_manifest_internal.h"

namespace {

void DecodeAndRoundTrip(const std::string& bytes) {
  using namespace oxbow;
  const Buffer buffer(reinterpret_cast<const uint8_t*>(bytes.data()),
                      static_cast<int64_t>(bytes.size()), nullptr);
  auto decoded = log::internal::DecodeColdManifest(buffer);
  if (!decoded.ok()) return;
  const std::string encoded = log::internal::EncodeColdManifest(*decoded);
  const Buffer again_buffer(reinterpret_cast<const uint8_t*>(encoded.data()),
                            static_cast<int64_t>(encoded.size()), nullptr);
  auto again = log::internal::DecodeColdManifest(again_buffer);
  if (!again.ok() || *again != *decoded) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  DecodeAndRoundTrip(bytes);
  if (bytes.size() >= 4) {
    const uint32_t crc = oxbow::crc32c::Value(bytes.data(), bytes.size() - 4);
    std::memcpy(bytes.data() + bytes.size() - 4, &crc, 4);
    DecodeAndRoundTrip(bytes);
  }
  return 0;
}
