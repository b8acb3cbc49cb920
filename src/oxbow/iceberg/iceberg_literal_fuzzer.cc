// libFuzzer target: single-value serialization (bounds in manifests, partition summaries) and
// the partition transforms applied to what it decodes. Byte 0 picks the type, byte 1 the
// transform width, the rest is the serialized value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "oxbow/iceberg/partition.h"
#include "oxbow/iceberg/types.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oxbow::iceberg;
  if (size < 2) return 0;
  static const Type kTypes[] = {Type::Boolean(),      Type::Int(),           Type::Long(),
                                Type::Float(),        Type::Double(),        Type::Decimal(9, 2),
                                Type::Decimal(38, 0), Type::Decimal(38, 38), Type::Date(),
                                Type::Timestamp(),    Type::TimestampTz(),   Type::String(),
                                Type::Fixed(1),       Type::Fixed(16),       Type::Binary()};
  const Type& type = kTypes[data[0] % (sizeof(kTypes) / sizeof(kTypes[0]))];
  int32_t width = data[1] == 0xff ? INT32_MAX : data[1] + 1;
  std::string_view bytes(reinterpret_cast<const char*>(data + 2), size - 2);

  auto literal = DeserializeLiteral(type, bytes);
  if (!literal.ok()) return 0;
  if (!CheckLiteral(type, *literal).ok()) abort();
  (void)LiteralToString(type, *literal);
  auto serialized = SerializeLiteral(type, *literal);
  if (!serialized.ok()) abort();
  auto again = DeserializeLiteral(type, *serialized);
  if (!again.ok() || CompareLiterals(*again, *literal) != 0) abort();

  const Transform transforms[] = {Transform::Identity(),      Transform::Bucket(width),
                                  Transform::Truncate(width), Transform::Year(),
                                  Transform::Month(),         Transform::Day(),
                                  Transform::Hour(),          Transform{TransformKind::kVoid, 0}};
  for (const Transform& t : transforms) {
    auto result_type = t.ResultType(type);
    auto applied = t.Apply(type, *literal);
    if (result_type.ok() != applied.ok()) abort();
    if (!applied.ok()) continue;
    if (t.kind == TransformKind::kVoid) {
      if (applied->has_value()) abort();
      continue;
    }
    if (!applied->has_value() || !CheckLiteral(*result_type, **applied).ok()) abort();
    if (t.kind == TransformKind::kBucket) {
      int32_t bucket = std::get<int32_t>(**applied);
      if (bucket < 0 || bucket >= width) abort();
    }
  }
  return 0;
}
