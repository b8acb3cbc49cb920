// Iceberg primitive types, schemas with field ids, literal values and their single-value
// binary serialization (Iceberg spec Appendix D), and the Arrow -> Iceberg type mapping.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "oxbow/arrow/schema.h"
#include "oxbow/common/status.h"

namespace oxbow::iceberg {

enum class TypeKind : uint8_t {
  kBoolean,
  kInt,
  kLong,
  kFloat,
  kDouble,
  kDecimal,
  kDate,
  kTimestamp,    // microseconds since the epoch, no zone
  kTimestampTz,  // microseconds since the epoch, UTC
  kString,
  kFixed,
  kBinary,
  // Nested types ("Nested Types" in the spec): their children are NestedFields with ids.
  kStruct,
  kList,
  kMap,
};

struct NestedField;

class Type {
 public:
  Type() = default;  // boolean
  static Type Boolean() { return Type(TypeKind::kBoolean); }
  static Type Int() { return Type(TypeKind::kInt); }
  static Type Long() { return Type(TypeKind::kLong); }
  static Type Float() { return Type(TypeKind::kFloat); }
  static Type Double() { return Type(TypeKind::kDouble); }
  static Type Date() { return Type(TypeKind::kDate); }
  static Type Timestamp() { return Type(TypeKind::kTimestamp); }
  static Type TimestampTz() { return Type(TypeKind::kTimestampTz); }
  static Type String() { return Type(TypeKind::kString); }
  static Type Binary() { return Type(TypeKind::kBinary); }
  static Type Decimal(int32_t precision, int32_t scale);
  static Type Fixed(int32_t length);
  static Type Struct(std::vector<NestedField> fields);
  // `element`: its id is the list's element-id, required its element-required.
  static Type List(NestedField element);
  static Type Map(NestedField key, NestedField value);

  // Parses the JSON names: "boolean", "int", "long", ..., "decimal(9,2)", "fixed[16]".
  static Result<Type> Parse(std::string_view name);

  TypeKind kind() const { return kind_; }
  int32_t precision() const { return precision_; }
  int32_t scale() const { return scale_; }
  int32_t length() const { return length_; }
  bool is_nested() const { return kind_ >= TypeKind::kStruct; }
  // Struct fields; a list's element; a map's key and value. Empty for primitive types.
  const std::vector<NestedField>& fields() const;

  // The JSON name as Java Iceberg writes it: "long", "decimal(9, 2)", "fixed[16]"; nested
  // types print as "struct<...>", "list<...>", "map<..., ...>" (their JSON is an object).
  std::string ToString() const;
  bool operator==(const Type& other) const;
  bool operator!=(const Type& other) const { return !(*this == other); }

 private:
  explicit Type(TypeKind kind) : kind_(kind) {}
  TypeKind kind_ = TypeKind::kBoolean;
  int32_t precision_ = 0;
  int32_t scale_ = 0;
  int32_t length_ = 0;
  std::shared_ptr<const std::vector<NestedField>> children_;
};

struct NestedField {
  int32_t id = 0;
  std::string name;
  Type type;
  bool required = false;
  std::string doc;  // empty: none

  bool operator==(const NestedField& other) const;
};

class Schema {
 public:
  Schema() = default;
  Schema(int32_t schema_id, std::vector<NestedField> fields,
         std::vector<int32_t> identifier_field_ids = {})
      : schema_id_(schema_id),
        fields_(std::move(fields)),
        identifier_field_ids_(std::move(identifier_field_ids)) {}

  int32_t schema_id() const { return schema_id_; }
  const std::vector<NestedField>& fields() const { return fields_; }
  // The fields that identify a row (a primary key): "identifier-field-ids" in JSON.
  const std::vector<int32_t>& identifier_field_ids() const { return identifier_field_ids_; }
  // Top-level fields only.
  const NestedField* FindField(int32_t id) const;
  const NestedField* FindField(std::string_view name) const;
  // Over nested fields too.
  int32_t HighestFieldId() const;
  // Field ids (nested ones too) positive and unique, names unique within a struct; identifier
  // fields exist, are required and are not float or double (the spec's rule).
  Status Validate() const;

  // {"type":"struct","schema-id":N,"fields":[{"id":..,"name":..,"required":..,"type":..}]},
  // plus "identifier-field-ids":[..] when there are any. A nested type is an object:
  // {"type":"struct","fields":[..]}, {"type":"list","element-id":..,"element":..,
  // "element-required":..}, {"type":"map","key-id":..,"key":..,"value-id":..,"value":..,
  // "value-required":..}.
  std::string ToJson() const;
  static Result<Schema> FromJson(std::string_view json);
  bool operator==(const Schema& other) const;

 private:
  int32_t schema_id_ = 0;
  std::vector<NestedField> fields_;
  std::vector<int32_t> identifier_field_ids_;
};

// Arrow -> Iceberg (see docs/iceberg.md): bool->boolean, int8/16/32 and uint8/16->int,
// int64 and uint32->long, uint64 rejected, float->float, double->double, string->string,
// binary->binary, date32->date, timestamp without zone->timestamp, with zone->timestamptz
// (any unit; values are microseconds in Iceberg), decimal128(p,s)->decimal(p,s) (rejected
// unless 0 <= s <= p), fixed_size_binary(n)->fixed[n] (rejected for n = 0); list->list,
// struct->struct, map->map, with their children's ids from field metadata "PARQUET:field_id"
// (required on every child); fixed_size_list is rejected (Iceberg has no fixed-size list).
Result<Type> TypeFromArrow(const arrow::DataType& type);
// A child of a nested Arrow type (list item, map key or value, struct field) as a NestedField.
Result<NestedField> ChildFromArrow(const arrow::Field& field);
// Field ids come from field metadata "PARQUET:field_id" when every top-level field has one,
// else they are 1..n in order (nested children then need ids of their own). required =
// !nullable; a "doc" metadata entry is the field's doc.
Result<Schema> SchemaFromArrow(const arrow::Schema& schema, int32_t schema_id = 0);

// A decimal's unscaled value.
struct Decimal {
  __int128 unscaled = 0;
  bool operator==(const Decimal& other) const { return unscaled == other.unscaled; }
};

// A value of a primitive type. Which alternative goes with which type:
// boolean: bool; int, date: int32_t; long, timestamp, timestamptz: int64_t; float; double;
// string, binary, fixed: std::string; decimal: Decimal.
using Literal = std::variant<bool, int32_t, int64_t, float, double, std::string, Decimal>;
// One partition tuple: a value (or null) per partition field, in spec order.
using PartitionValues = std::vector<std::optional<Literal>>;

// Invalid when `value` is not the alternative `type` takes (or a fixed has the wrong length).
Status CheckLiteral(const Type& type, const Literal& value);

// Appendix D: little-endian ints, longs, floats, doubles; 0x00/0x01 booleans; UTF-8 strings;
// raw binary/fixed; decimals as minimal big-endian two's complement of the unscaled value.
Result<std::string> SerializeLiteral(const Type& type, const Literal& value);
Result<Literal> DeserializeLiteral(const Type& type, std::string_view bytes);

// Orders two literals of `type` (<0, 0, >0): signed numbers, unsigned bytes for strings and
// binary, -0.0 < 0.0 and NaN last for floats.
int CompareLiterals(const Literal& a, const Literal& b);

// Minimal big-endian two's complement bytes of `v` (at least one byte).
std::string DecimalToBytes(__int128 v);
Result<__int128> DecimalFromBytes(std::string_view bytes);

// A readable form for messages and tests: 42, "abc", 0x0a0b, 12.34 (decimals with scale).
std::string LiteralToString(const Type& type, const Literal& value);

}  // namespace oxbow::iceberg
