#include "oxbow/arrow/builder.h"

#include <cstring>
#include <string>

namespace oxbow::arrow {

Result<std::unique_ptr<ArrayBuilder>> ArrayBuilder::Make(const DataType& type) {
  RETURN_NOT_OK(type.Validate());
  switch (type.id()) {
    case TypeId::kBool: return std::unique_ptr<ArrayBuilder>(new BooleanBuilder());
    case TypeId::kInt8: return std::unique_ptr<ArrayBuilder>(new Int8Builder(type));
    case TypeId::kInt16: return std::unique_ptr<ArrayBuilder>(new Int16Builder(type));
    case TypeId::kInt32:
    case TypeId::kDate32: return std::unique_ptr<ArrayBuilder>(new Int32Builder(type));
    case TypeId::kInt64:
    case TypeId::kTimestamp: return std::unique_ptr<ArrayBuilder>(new Int64Builder(type));
    case TypeId::kUInt8: return std::unique_ptr<ArrayBuilder>(new UInt8Builder(type));
    case TypeId::kUInt16: return std::unique_ptr<ArrayBuilder>(new UInt16Builder(type));
    case TypeId::kUInt32: return std::unique_ptr<ArrayBuilder>(new UInt32Builder(type));
    case TypeId::kUInt64: return std::unique_ptr<ArrayBuilder>(new UInt64Builder(type));
    case TypeId::kFloat32: return std::unique_ptr<ArrayBuilder>(new FloatBuilder(type));
    case TypeId::kFloat64: return std::unique_ptr<ArrayBuilder>(new DoubleBuilder(type));
    case TypeId::kString:
    case TypeId::kBinary: return std::unique_ptr<ArrayBuilder>(new BinaryBuilder(type));
    case TypeId::kDecimal128:
    case TypeId::kFixedSizeBinary:
      return std::unique_ptr<ArrayBuilder>(new FixedSizeBinaryBuilder(type));
    case TypeId::kList:
    case TypeId::kStruct:
    case TypeId::kMap:
    case TypeId::kFixedSizeList: break;
  }
  return Status::NotImplemented("no builder for " + type.ToString());
}

Status ArrayBuilder::AppendValidity(bool valid) {
  if (!valid && null_count_ == 0) {
    // First null: materialize the bitmap with every earlier slot valid.
    RETURN_NOT_OK(validity_.AppendZeros(bit_util::BytesForBits(length_ + 1)));
    for (int64_t i = 0; i < length_; ++i) bit_util::SetBit(validity_.mutable_data(), i);
  }
  if (null_count_ > 0 || !valid) {
    int64_t bytes = bit_util::BytesForBits(length_ + 1);
    if (bytes > validity_.length())
      RETURN_NOT_OK(validity_.AppendZeros(bytes - validity_.length()));
    if (valid) bit_util::SetBit(validity_.mutable_data(), length_);
  }
  if (!valid) ++null_count_;
  ++length_;
  return Status::OK();
}

Status ArrayBuilder::AppendNull() {
  RETURN_NOT_OK(AppendValidity(false));
  return AppendEmptyValue();
}

Status ArrayBuilder::AppendEmpty() {
  RETURN_NOT_OK(AppendValidity(true));
  return AppendEmptyValue();
}

Result<Array> ArrayBuilder::Finish() {
  ASSIGN_OR_RAISE(auto buffers, FinishValueBuffers());
  std::shared_ptr<Buffer> validity;
  if (null_count_ > 0) {
    ASSIGN_OR_RAISE(validity, validity_.Finish());
  }
  buffers.insert(buffers.begin(), std::move(validity));
  Array out = Array::Make(type_, length_, std::move(buffers), null_count_);
  length_ = 0;
  null_count_ = 0;
  return out;
}

template <typename T>
Status NumericBuilder<T>::AppendValues(const T* values, int64_t n, const uint8_t* valid) {
  RETURN_NOT_OK(values_.Append(values, n * static_cast<int64_t>(sizeof(T))));
  if (valid == nullptr && null_count_ == 0) {
    length_ += n;
    return Status::OK();
  }
  for (int64_t i = 0; i < n; ++i) RETURN_NOT_OK(AppendValidity(valid == nullptr || valid[i]));
  return Status::OK();
}

template <typename T>
Result<std::vector<std::shared_ptr<Buffer>>> NumericBuilder<T>::FinishValueBuffers() {
  ASSIGN_OR_RAISE(auto values, values_.Finish());
  return std::vector<std::shared_ptr<Buffer>>{std::move(values)};
}

template class NumericBuilder<int8_t>;
template class NumericBuilder<int16_t>;
template class NumericBuilder<int32_t>;
template class NumericBuilder<int64_t>;
template class NumericBuilder<uint8_t>;
template class NumericBuilder<uint16_t>;
template class NumericBuilder<uint32_t>;
template class NumericBuilder<uint64_t>;
template class NumericBuilder<float>;
template class NumericBuilder<double>;

Status BooleanBuilder::Append(bool value) {
  if (bit_util::BytesForBits(bit_length_ + 1) > bits_.length()) RETURN_NOT_OK(bits_.AppendZeros(1));
  if (value) bit_util::SetBit(bits_.mutable_data(), bit_length_);
  ++bit_length_;
  if (bit_length_ > length_) return AppendValidity(true);  // a value, not a null's slot
  return Status::OK();
}

Result<std::vector<std::shared_ptr<Buffer>>> BooleanBuilder::FinishValueBuffers() {
  ASSIGN_OR_RAISE(auto bits, bits_.Finish());
  bit_length_ = 0;
  return std::vector<std::shared_ptr<Buffer>>{std::move(bits)};
}

BinaryBuilder::BinaryBuilder(DataType type) : ArrayBuilder(std::move(type)) {}

Status BinaryBuilder::Append(std::string_view value) {
  if (offsets_.length() == 0) RETURN_NOT_OK(offsets_.AppendZeros(sizeof(int32_t)));
  if (data_.length() + static_cast<int64_t>(value.size()) > INT32_MAX) {
    return Status::ResourceExhausted(type_.ToString() +
                                     " array exceeds 2 GiB of data; split the batch");
  }
  RETURN_NOT_OK(AppendValidity(true));
  RETURN_NOT_OK(data_.Append(value.data(), static_cast<int64_t>(value.size())));
  RETURN_NOT_OK(offsets_.Reserve(sizeof(int32_t)));
  offsets_.UnsafeAppendValue(static_cast<int32_t>(data_.length()));
  return Status::OK();
}

Status BinaryBuilder::AppendEmptyValue() {
  if (offsets_.length() == 0) RETURN_NOT_OK(offsets_.AppendZeros(sizeof(int32_t)));
  RETURN_NOT_OK(offsets_.Reserve(sizeof(int32_t)));
  offsets_.UnsafeAppendValue(static_cast<int32_t>(data_.length()));
  return Status::OK();
}

Result<std::vector<std::shared_ptr<Buffer>>> BinaryBuilder::FinishValueBuffers() {
  if (offsets_.length() == 0) RETURN_NOT_OK(offsets_.AppendZeros(sizeof(int32_t)));
  ASSIGN_OR_RAISE(auto offsets, offsets_.Finish());
  ASSIGN_OR_RAISE(auto data, data_.Finish());
  return std::vector<std::shared_ptr<Buffer>>{std::move(offsets), std::move(data)};
}

Status FixedSizeBinaryBuilder::Append(std::string_view value) {
  if (static_cast<int64_t>(value.size()) != type_.byte_width()) {
    return Status::Invalid(type_.ToString() + " value must be " +
                           std::to_string(type_.byte_width()) + " bytes, got " +
                           std::to_string(value.size()));
  }
  RETURN_NOT_OK(AppendValidity(true));
  return values_.Append(value.data(), static_cast<int64_t>(value.size()));
}

Result<std::vector<std::shared_ptr<Buffer>>> FixedSizeBinaryBuilder::FinishValueBuffers() {
  ASSIGN_OR_RAISE(auto values, values_.Finish());
  return std::vector<std::shared_ptr<Buffer>>{std::move(values)};
}

}  // namespace oxbow::arrow
