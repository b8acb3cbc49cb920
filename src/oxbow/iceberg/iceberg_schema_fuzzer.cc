// libFuzzer target: Iceberg schema and partition spec JSON, type names and transform names.
// The input is split at the first NUL: a schema, then a partition spec. What parses must print
// and parse back equal.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "oxbow/iceberg/manifest.h"
#include "oxbow/iceberg/partition.h"
#include "oxbow/iceberg/types.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oxbow::iceberg;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t split = input.find('\0');
  std::string_view schema_json = input.substr(0, split);
  std::string_view spec_json = split == std::string_view::npos ? "" : input.substr(split + 1);

  if (auto type = Type::Parse(input); type.ok()) {
    auto again = Type::Parse(type->ToString());
    if (!again.ok() || *again != *type) abort();
  }
  if (auto transform = Transform::Parse(input); transform.ok()) {
    auto again = Transform::Parse(transform->ToString());
    if (!again.ok() || !(*again == *transform)) abort();
  }

  auto schema = Schema::FromJson(schema_json);
  if (schema.ok()) {
    auto again = Schema::FromJson(schema->ToJson());
    if (!again.ok() || !(*again == *schema)) abort();
  }
  auto spec = PartitionSpec::FromJson(spec_json);
  if (spec.ok()) {
    auto again = PartitionSpec::FromJson(spec->ToJson());
    if (!again.ok() || !(*again == *spec)) abort();
  }
  if (schema.ok() && spec.ok()) {
    auto types = spec->PartitionTypes(*schema);
    if (types.ok()) (void)EncodeManifest(*schema, *spec, {});
  }
  return 0;
}
