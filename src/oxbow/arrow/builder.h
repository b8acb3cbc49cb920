// Builders append values into growing buffers and finish into an Array.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "oxbow/arrow/array.h"
#include "oxbow/common/buffer.h"

namespace oxbow::arrow {

class ArrayBuilder {
 public:
  explicit ArrayBuilder(DataType type) : type_(std::move(type)) {}
  virtual ~ArrayBuilder() = default;

  // The builder class for `type`: NumericBuilder<T>, BooleanBuilder, BinaryBuilder or
  // FixedSizeBinaryBuilder (also decimal128).
  static Result<std::unique_ptr<ArrayBuilder>> Make(const DataType& type);

  const DataType& type() const { return type_; }
  int64_t length() const { return length_; }
  int64_t null_count() const { return null_count_; }

  Status AppendNull();
  // Appends a valid slot holding the empty value (zero, "", zero bytes): a not-null child's
  // slot under a null parent.
  Status AppendEmpty();
  Result<Array> Finish();

 protected:
  // Appends the empty slot that a null occupies in the values buffers.
  virtual Status AppendEmptyValue() = 0;
  virtual Result<std::vector<std::shared_ptr<Buffer>>> FinishValueBuffers() = 0;
  Status AppendValidity(bool valid);

  DataType type_;
  int64_t length_ = 0;
  int64_t null_count_ = 0;

 private:
  BufferBuilder validity_;  // lazily filled: stays empty until the first null
};

template <typename T>
class NumericBuilder : public ArrayBuilder {
 public:
  using ArrayBuilder::ArrayBuilder;
  Status Append(T value) {
    RETURN_NOT_OK(AppendValidity(true));
    return values_.Append(&value, sizeof(T));
  }
  // Appends n values; `valid` (may be null) says which are non-null.
  Status AppendValues(const T* values, int64_t n, const uint8_t* valid = nullptr);

 protected:
  Status AppendEmptyValue() override { return values_.AppendZeros(sizeof(T)); }
  Result<std::vector<std::shared_ptr<Buffer>>> FinishValueBuffers() override;

 private:
  BufferBuilder values_;
};

class BooleanBuilder : public ArrayBuilder {
 public:
  BooleanBuilder() : ArrayBuilder(DataType::Bool()) {}
  Status Append(bool value);

 protected:
  Status AppendEmptyValue() override { return Append(false); }
  Result<std::vector<std::shared_ptr<Buffer>>> FinishValueBuffers() override;

 private:
  BufferBuilder bits_;
  int64_t bit_length_ = 0;
};

// string and binary (32-bit offsets).
class BinaryBuilder : public ArrayBuilder {
 public:
  explicit BinaryBuilder(DataType type);
  Status Append(std::string_view value);

 protected:
  Status AppendEmptyValue() override;
  Result<std::vector<std::shared_ptr<Buffer>>> FinishValueBuffers() override;

 private:
  BufferBuilder offsets_;
  BufferBuilder data_;
};

// fixed_size_binary[n] and decimal128 (16 bytes, little-endian two's complement).
class FixedSizeBinaryBuilder : public ArrayBuilder {
 public:
  using ArrayBuilder::ArrayBuilder;
  // `value` must be exactly byte_width() bytes.
  Status Append(std::string_view value);
  Status AppendDecimal(__int128 value) {
    return Append(std::string_view(reinterpret_cast<const char*>(&value), sizeof(value)));
  }

 protected:
  Status AppendEmptyValue() override { return values_.AppendZeros(type_.byte_width()); }
  Result<std::vector<std::shared_ptr<Buffer>>> FinishValueBuffers() override;

 private:
  BufferBuilder values_;
};

using Int8Builder = NumericBuilder<int8_t>;
using Int16Builder = NumericBuilder<int16_t>;
using Int32Builder = NumericBuilder<int32_t>;
using Int64Builder = NumericBuilder<int64_t>;
using UInt8Builder = NumericBuilder<uint8_t>;
using UInt16Builder = NumericBuilder<uint16_t>;
using UInt32Builder = NumericBuilder<uint32_t>;
using UInt64Builder = NumericBuilder<uint64_t>;
using FloatBuilder = NumericBuilder<float>;
using DoubleBuilder = NumericBuilder<double>;

}  // namespace oxbow::arrow
