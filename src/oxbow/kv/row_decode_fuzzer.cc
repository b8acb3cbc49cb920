// Fuzzes RowFormat::Decode, which reads row values back from the key-value store's files (both
// formats, any schema version, converted to the current one): any bytes must decode or fail
// with Corruption, never crash.
#include <cstddef>
#include <cstdint>

#include "oxbow/kv/row.h"
#include "oxbow/kv/row_testing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto format = oxbow::kv::RowFormat::Make(oxbow::kv::EveryTypeVersions());
  auto row = format->Decode(std::string_view(reinterpret_cast<const char*>(data), size));
  if (row.ok()) {
    // What decodes re-encodes (in the current version) to bytes that decode to the same row.
    std::string again;
    format->Encode(*row, &again);
    auto reread = format->Decode(again);
    if (!reread.ok() || *reread != *row) __builtin_trap();
  } else if (!row.status().IsCorruption()) {
    __builtin_trap();
  }
  return 0;
}
