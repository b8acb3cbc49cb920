// libFuzzer target: table metadata JSON (v<N>.metadata.json as any writer may leave it). What
// parses must print and parse back to the same document.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "oxbow/iceberg/metadata.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oxbow::iceberg;
  auto metadata =
      TableMetadata::FromJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!metadata.ok()) return 0;
  (void)metadata->CurrentSnapshot();
  std::string json = metadata->ToJson();
  auto again = TableMetadata::FromJson(json);
  if (!again.ok() || again->ToJson() != json) abort();
  return 0;
}
