// Array: an immutable column in the Arrow columnar layout. Slicing never copies.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/arrow/schema.h"
#include "oxbow/arrow/type.h"
#include "oxbow/common/bit_util.h"
#include "oxbow/common/buffer.h"

namespace oxbow::arrow {

// The buffers of one column, shared between an array and its slices.
//   fixed width:     buffers = {validity, values}
//   string / binary: buffers = {validity, offsets (int32), data}
//   list / map:      buffers = {validity, offsets (int32)}, one child
//   struct:          buffers = {validity}, one child per field, indexed like the parent
//   fixed_size_list: buffers = {validity}, one child holding list_size values per element
// A null validity buffer means no nulls. `offset` is in elements (bits for bool); it applies
// to the children of struct (same index) and fixed_size_list (index * list_size).
struct ArrayData {
  DataType type;
  int64_t length = 0;
  int64_t null_count = 0;
  int64_t offset = 0;
  std::vector<std::shared_ptr<Buffer>> buffers;
  std::vector<std::shared_ptr<const ArrayData>> children;
};

class Array {
 public:
  Array() = default;
  explicit Array(std::shared_ptr<const ArrayData> data) : data_(std::move(data)) {}

  // Makes an array from parts; null_count < 0 means "count it from the bitmap".
  static Array Make(DataType type, int64_t length, std::vector<std::shared_ptr<Buffer>> buffers,
                    int64_t null_count = -1, int64_t offset = 0);
  // The same for a nested type, with its child arrays.
  static Array MakeNested(DataType type, int64_t length,
                          std::vector<std::shared_ptr<Buffer>> buffers, std::vector<Array> children,
                          int64_t null_count = -1, int64_t offset = 0);

  const std::shared_ptr<const ArrayData>& data() const { return data_; }
  const DataType& type() const { return data_->type; }
  int64_t length() const { return data_->length; }
  int64_t null_count() const { return data_->null_count; }
  int64_t offset() const { return data_->offset; }
  const std::shared_ptr<Buffer>& buffer(int i) const { return data_->buffers[i]; }
  int num_children() const { return static_cast<int>(data_->children.size()); }
  // Child i of a nested array, whole (the parent's offset is not applied).
  Array child(int i) const { return Array(data_->children[static_cast<size_t>(i)]); }
  const uint8_t* validity() const {
    return data_->buffers[0] ? data_->buffers[0]->data() : nullptr;
  }

  bool IsValid(int64_t i) const {
    const uint8_t* v = validity();
    return v == nullptr || bit_util::GetBit(v, data_->offset + i);
  }
  bool IsNull(int64_t i) const { return !IsValid(i); }

  // Fixed-width values, already adjusted for the offset.
  template <typename T>
  const T* values() const {
    return reinterpret_cast<const T*>(data_->buffers[1]->data()) + data_->offset;
  }
  template <typename T>
  T Value(int64_t i) const {
    return values<T>()[i];
  }
  bool BoolValue(int64_t i) const {
    return bit_util::GetBit(data_->buffers[1]->data(), data_->offset + i);
  }
  // string/binary/list/map: offsets adjusted for the array offset (length() + 1 entries).
  const int32_t* raw_offsets() const {
    return reinterpret_cast<const int32_t*>(data_->buffers[1]->data()) + data_->offset;
  }
  // The bytes of value i for string, binary, fixed_size_binary and decimal128.
  std::string_view GetView(int64_t i) const;

  // A zero-copy view of [offset, offset + length), clamped to this array.
  Array Slice(int64_t offset, int64_t length) const;

  // Checks buffer sizes, null count and offsets; never reads out of bounds.
  Status Validate() const;
  // Checks that every not-null field nested in this array's type holds a value wherever its
  // parent does (Validate() does not: Arrow allows it, Parquet and Iceberg do not); the error
  // names the field's path and the row.
  Status CheckNestedNulls() const;
  // Logical equality: same type, length, nulls and values (ignores offsets and padding).
  bool Equals(const Array& other) const;
  // Element i of this array equals element j of `other` (same type assumed).
  bool ElementEquals(int64_t i, const Array& other, int64_t j) const;

 private:
  std::shared_ptr<const ArrayData> data_;
};

}  // namespace oxbow::arrow
