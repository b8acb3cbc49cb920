// Partition transforms (identity, bucket[N], truncate[W], year, month, day, hour, void) and
// partition specs, with the spec's Murmur3 bucket hash.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/common/status.h"
#include "oxbow/iceberg/types.h"

namespace oxbow::iceberg {

enum class TransformKind : uint8_t {
  kIdentity,
  kBucket,
  kTruncate,
  kYear,
  kMonth,
  kDay,
  kHour,
  kVoid,
};

struct Transform {
  TransformKind kind = TransformKind::kIdentity;
  int32_t param = 0;  // N of bucket[N], W of truncate[W]

  static Transform Identity() { return {TransformKind::kIdentity, 0}; }
  static Transform Bucket(int32_t n) { return {TransformKind::kBucket, n}; }
  static Transform Truncate(int32_t w) { return {TransformKind::kTruncate, w}; }
  static Transform Year() { return {TransformKind::kYear, 0}; }
  static Transform Month() { return {TransformKind::kMonth, 0}; }
  static Transform Day() { return {TransformKind::kDay, 0}; }
  static Transform Hour() { return {TransformKind::kHour, 0}; }

  // "identity", "bucket[16]", "truncate[4]", "year", "month", "day", "hour", "void".
  static Result<Transform> Parse(std::string_view text);
  std::string ToString() const;

  // The partition value's type for a source of type `source`; Invalid when the transform does
  // not apply (bucket of a float, day of a long, ...).
  Result<Type> ResultType(const Type& source) const;
  // Transforms one source value (null stays null, void gives null).
  Result<std::optional<Literal>> Apply(const Type& source,
                                       const std::optional<Literal>& value) const;
  bool operator==(const Transform& other) const {
    return kind == other.kind && param == other.param;
  }
};

// Murmur3 x86 32-bit, seed 0, of `bytes`.
int32_t Murmur3Hash32(std::string_view bytes);
// The spec's bucket hash of a value (ints and longs hash as 8-byte little-endian longs,
// decimals as their minimal big-endian unscaled bytes, strings as UTF-8).
Result<int32_t> BucketHash(const Type& type, const Literal& value);

struct PartitionField {
  int32_t source_id = 0;
  int32_t field_id = 0;  // 1000 and up
  std::string name;
  Transform transform;
  bool operator==(const PartitionField& other) const;
};

// What a caller asks for: a source column by name and a transform.
struct PartitionFieldRequest {
  std::string source_name;
  Transform transform;
  std::string name;  // empty: Java's default ("id_bucket", "ts_day", identity keeps the name)
};

class PartitionSpec {
 public:
  PartitionSpec() = default;
  PartitionSpec(int32_t spec_id, std::vector<PartitionField> fields)
      : spec_id_(spec_id), fields_(std::move(fields)) {}

  // Resolves names against `schema`, checks every transform applies, and numbers the fields
  // from `first_field_id` (1000 for a new table).
  static Result<PartitionSpec> Make(const Schema& schema,
                                    const std::vector<PartitionFieldRequest>& requests,
                                    int32_t spec_id = 0, int32_t first_field_id = 1000);
  static PartitionSpec Unpartitioned() { return {}; }

  int32_t spec_id() const { return spec_id_; }
  const std::vector<PartitionField>& fields() const { return fields_; }
  bool is_unpartitioned() const { return fields_.empty(); }
  int32_t HighestFieldId() const;  // 999 when unpartitioned

  // Result types of the fields, in order.
  Result<std::vector<Type>> PartitionTypes(const Schema& schema) const;
  // The partition tuple of a row whose source values are looked up by source field id.
  Result<PartitionValues> PartitionFor(
      const Schema& schema,
      const std::vector<std::pair<int32_t, std::optional<Literal>>>& source_values) const;

  // {"spec-id":N,"fields":[...]} and the bare fields array (manifest header "partition-spec").
  std::string ToJson() const;
  std::string FieldsJson() const;
  static Result<PartitionSpec> FromJson(std::string_view json);
  bool operator==(const PartitionSpec& other) const;

 private:
  int32_t spec_id_ = 0;
  std::vector<PartitionField> fields_;
};

}  // namespace oxbow::iceberg
