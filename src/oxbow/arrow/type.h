// Arrow logical types, as a small value class. Names print and parse as pyarrow's str(type).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/common/status.h"

namespace oxbow::arrow {

struct Field;

enum class TypeId : uint8_t {
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kFloat32,
  kFloat64,
  kString,  // utf8, 32-bit offsets
  kBinary,  // 32-bit offsets
  kDate32,  // days since the UNIX epoch
  kTimestamp,
  kDecimal128,
  kFixedSizeBinary,
  // Nested types: their children are Fields.
  kList,           // one child ("item"), 32-bit offsets
  kStruct,         // any number of children
  kMap,            // one non-null child "entries": struct<key not null, value>
  kFixedSizeList,  // one child, list_size() values per element
};

enum class TimeUnit : uint8_t { kSecond, kMilli, kMicro, kNano };
std::string_view TimeUnitName(TimeUnit unit);  // "s", "ms", "us", "ns"
// 1, 1000, 1000000 or 1000000000.
int64_t UnitsPerSecond(TimeUnit unit);

class DataType {
 public:
  DataType() = default;  // bool
  static DataType Bool() { return DataType(TypeId::kBool); }
  static DataType Int8() { return DataType(TypeId::kInt8); }
  static DataType Int16() { return DataType(TypeId::kInt16); }
  static DataType Int32() { return DataType(TypeId::kInt32); }
  static DataType Int64() { return DataType(TypeId::kInt64); }
  static DataType UInt8() { return DataType(TypeId::kUInt8); }
  static DataType UInt16() { return DataType(TypeId::kUInt16); }
  static DataType UInt32() { return DataType(TypeId::kUInt32); }
  static DataType UInt64() { return DataType(TypeId::kUInt64); }
  static DataType Float32() { return DataType(TypeId::kFloat32); }
  static DataType Float64() { return DataType(TypeId::kFloat64); }
  static DataType String() { return DataType(TypeId::kString); }
  static DataType Binary() { return DataType(TypeId::kBinary); }
  static DataType Date32() { return DataType(TypeId::kDate32); }
  static DataType Timestamp(TimeUnit unit, std::string timezone = {});
  // precision in [1, 38]; checked by Validate().
  static DataType Decimal128(int32_t precision, int32_t scale);
  static DataType FixedSizeBinary(int32_t byte_width);
  static DataType List(Field item);
  static DataType Struct(std::vector<Field> fields);
  // entries: struct<key: `key` not null, value: `value`> (nullable per `value_nullable`).
  static DataType Map(DataType key, DataType value, bool value_nullable = true);
  static DataType FixedSizeList(Field item, int32_t list_size);
  // A nested type of `id` with these children, as read from IPC (checked by Validate()).
  static DataType Nested(TypeId id, std::vector<Field> children, int32_t list_size = 0);

  // Parses pyarrow's names: "int64", "float"/"float32", "double"/"float64", "string"/"utf8",
  // "date32[day]", "timestamp[us, tz=UTC]", "decimal128(10, 2)", "fixed_size_binary[16]",
  // "list<item: int64>" (also "list<int64>"), "struct<a: int32, b: string not null>",
  // "map<string, int64>", "fixed_size_list<item: int32>[3]" (also "fixed_size_list<int32>[3]").
  static Result<DataType> Parse(std::string_view text);

  TypeId id() const { return id_; }
  TimeUnit unit() const { return unit_; }
  const std::string& timezone() const { return timezone_; }
  int32_t precision() const { return precision_; }
  int32_t scale() const { return scale_; }
  // Bytes per value for fixed-size binary and decimal128 (16).
  int32_t byte_width() const { return byte_width_; }
  // Values per element of a fixed_size_list.
  int32_t list_size() const { return byte_width_; }
  // Child fields of a nested type (empty otherwise).
  const std::vector<Field>& children() const;
  int num_children() const;
  const Field& child(int i) const;
  bool is_nested() const { return id_ >= TypeId::kList; }

  // Bits per value in the values buffer: 1 for bool, 0 for variable-length types.
  int bit_width() const;
  bool is_variable_length() const { return id_ == TypeId::kString || id_ == TypeId::kBinary; }
  bool is_integer() const { return id_ >= TypeId::kInt8 && id_ <= TypeId::kUInt64; }
  bool is_signed_integer() const { return id_ >= TypeId::kInt8 && id_ <= TypeId::kInt64; }
  bool is_unsigned_integer() const { return id_ >= TypeId::kUInt8 && id_ <= TypeId::kUInt64; }
  bool is_floating() const { return id_ == TypeId::kFloat32 || id_ == TypeId::kFloat64; }
  // Number of buffers of this node in the Arrow layout (children not counted): 2 for fixed
  // width (validity, values), 3 for variable length (validity, offsets, data), 2 for list and map
  // (validity, offsets), 1 for struct and fixed_size_list (validity).
  int num_buffers() const;
  // Field nodes and buffers of the whole tree (this node and all descendants), as IPC counts them.
  int num_nodes_in_tree() const;
  int num_buffers_in_tree() const;

  // pyarrow's str(type).
  std::string ToString() const;
  // Checks parameters (decimal precision/scale, fixed width).
  Status Validate() const;

  bool operator==(const DataType& other) const;
  bool operator!=(const DataType& other) const { return !(*this == other); }

 private:
  explicit DataType(TypeId id) : id_(id) {}
  TypeId id_ = TypeId::kBool;
  TimeUnit unit_ = TimeUnit::kSecond;
  std::string timezone_;
  int32_t precision_ = 0;
  int32_t scale_ = 0;
  int32_t byte_width_ = 0;  // also the list size of a fixed_size_list
  std::shared_ptr<const std::vector<Field>> children_;
};

}  // namespace oxbow::arrow
