// Fuzzes DecodeRow, which reads row values back from the key-value store's files: any bytes
// must decode or fail with Corruption, never crash.
#include <cstddef>
#include <cstdint>

#include "oxbow/kv/row.h"
#include "oxbow/testing/every_type.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto schema = oxbow::testing::EveryTypeSchema();
  auto row =
      oxbow::kv::DecodeRow(std::string_view(reinterpret_cast<const char*>(data), size), *schema);
  if (row.ok()) {
    // What decodes re-encodes to bytes that decode to the same row.
    std::string again;
    oxbow::kv::EncodeRow(*row, *schema, &again);
    auto reread = oxbow::kv::DecodeRow(again, *schema);
    if (!reread.ok() || *reread != *row) __builtin_trap();
  }
  return 0;
}
