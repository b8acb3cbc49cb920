#include "oxbow/arrow/compute.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "oxbow/common/civil_time.h"

namespace oxbow::arrow {
namespace {

Result<std::shared_ptr<Buffer>> TakeValidity(const Array& column, const std::vector<int32_t>& rows,
                                             int64_t* null_count) {
  *null_count = 0;
  if (column.null_count() == 0) return std::shared_ptr<Buffer>();
  const auto n = static_cast<int64_t>(rows.size());
  ASSIGN_OR_RAISE(auto bitmap, MutableBuffer::Allocate(bit_util::BytesForBits(n)));
  std::memset(bitmap->mutable_data(), 0, static_cast<size_t>(bitmap->size()));
  for (int64_t i = 0; i < n; ++i) {
    if (column.IsValid(rows[i])) {
      bit_util::SetBit(bitmap->mutable_data(), i);
    } else {
      ++*null_count;
    }
  }
  return std::shared_ptr<Buffer>(std::move(bitmap));
}

// The validity bitmap of `column` as a buffer starting at bit 0 (shared when already aligned).
Result<std::shared_ptr<Buffer>> ValidityFromZero(const Array& column) {
  if (column.null_count() == 0) return std::shared_ptr<Buffer>();
  if (column.offset() % 8 == 0) {
    const auto& v = column.buffer(0);
    return Buffer::Slice(v, column.offset() / 8, bit_util::BytesForBits(column.length()));
  }
  ASSIGN_OR_RAISE(auto bitmap, MutableBuffer::Allocate(bit_util::BytesForBits(column.length())));
  bit_util::CopyBitmap(column.validity(), column.offset(), column.length(), bitmap->mutable_data());
  return std::shared_ptr<Buffer>(std::move(bitmap));
}

template <typename From, typename To>
Result<Array> Widen(const Array& column, const DataType& to) {
  const int64_t n = column.length();
  ASSIGN_OR_RAISE(auto values, MutableBuffer::Allocate(n * static_cast<int64_t>(sizeof(To))));
  auto* dst = reinterpret_cast<To*>(values->mutable_data());
  const From* src = column.values<From>();
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<To>(src[i]);
  ASSIGN_OR_RAISE(auto validity, ValidityFromZero(column));
  return Array::Make(to, n, {std::move(validity), std::move(values)}, column.null_count());
}

template <typename From>
Result<Array> WidenTo(const Array& column, const DataType& to) {
  if (to.id() == TypeId::kInt16) return Widen<From, int16_t>(column, to);
  if (to.id() == TypeId::kInt32) return Widen<From, int32_t>(column, to);
  return Widen<From, int64_t>(column, to);
}

Result<Array> CastTimestamp(const Array& column, const DataType& to) {
  const int64_t from_per_s = UnitsPerSecond(column.type().unit());
  const int64_t to_per_s = UnitsPerSecond(to.unit());
  if (from_per_s == to_per_s) {
    return Array::Make(to, column.length(), column.data()->buffers, column.null_count(),
                       column.offset());
  }
  const int64_t n = column.length();
  ASSIGN_OR_RAISE(auto values, MutableBuffer::Allocate(n * 8));
  auto* dst = reinterpret_cast<int64_t*>(values->mutable_data());
  const int64_t* src = column.values<int64_t>();
  if (to_per_s > from_per_s) {
    const int64_t factor = to_per_s / from_per_s;
    for (int64_t i = 0; i < n; ++i) {
      if (column.IsValid(i) && __builtin_mul_overflow(src[i], factor, &dst[i])) {
        return Status::Invalid("timestamp " + std::to_string(src[i]) + " of " +
                               column.type().ToString() + " does not fit " + to.ToString());
      }
    }
  } else {
    const int64_t factor = from_per_s / to_per_s;
    for (int64_t i = 0; i < n; ++i) {
      dst[i] = FloorDiv(src[i], factor);
    }
  }
  ASSIGN_OR_RAISE(auto validity, ValidityFromZero(column));
  return Array::Make(to, n, {std::move(validity), std::move(values)}, column.null_count());
}

bool IsWideningTarget(TypeId id) { return id == TypeId::kInt32 || id == TypeId::kInt64; }

// int32/int64 back to a narrower integer type; a value that does not fit is refused.
template <typename From, typename To>
Result<Array> Narrow(const Array& column, const DataType& to) {
  const int64_t n = column.length();
  ASSIGN_OR_RAISE(auto values, MutableBuffer::Allocate(n * static_cast<int64_t>(sizeof(To))));
  auto* dst = reinterpret_cast<To*>(values->mutable_data());
  const From* src = column.values<From>();
  for (int64_t i = 0; i < n; ++i) {
    if (column.IsValid(i) && (src[i] < static_cast<From>(std::numeric_limits<To>::min()) ||
                              src[i] > static_cast<From>(std::numeric_limits<To>::max()))) {
      return Status::Invalid("value " + std::to_string(src[i]) + " of " + column.type().ToString() +
                             " does not fit " + to.ToString());
    }
    dst[i] = static_cast<To>(src[i]);
  }
  ASSIGN_OR_RAISE(auto validity, ValidityFromZero(column));
  return Array::Make(to, n, {std::move(validity), std::move(values)}, column.null_count());
}

// double back to float: values round to the nearest float; a finite one beyond float's range is
// refused.
Result<Array> NarrowDouble(const Array& column, const DataType& to) {
  const int64_t n = column.length();
  ASSIGN_OR_RAISE(auto values, MutableBuffer::Allocate(n * 4));
  auto* dst = reinterpret_cast<float*>(values->mutable_data());
  const double* src = column.values<double>();
  constexpr double kMax = std::numeric_limits<float>::max();
  for (int64_t i = 0; i < n; ++i) {
    if (column.IsValid(i) && std::isfinite(src[i]) && (src[i] > kMax || src[i] < -kMax)) {
      return Status::Invalid("value " + std::to_string(src[i]) + " of double does not fit float");
    }
    dst[i] = static_cast<float>(src[i]);
  }
  ASSIGN_OR_RAISE(auto validity, ValidityFromZero(column));
  return Array::Make(to, n, {std::move(validity), std::move(values)}, column.null_count());
}

// A decimal128 back to a smaller precision (same scale): the same 16-byte values, each checked
// to have at most the smaller precision's digits.
Result<Array> NarrowDecimal(const Array& column, const DataType& to) {
  __int128 limit = 1;
  for (int32_t i = 0; i < to.precision(); ++i) limit *= 10;
  for (int64_t i = 0; i < column.length(); ++i) {
    if (!column.IsValid(i)) continue;
    const __int128 v = column.Value<__int128>(i);
    if (v >= limit || v <= -limit) {
      return Status::Invalid("a value of " + column.type().ToString() + " at row " +
                             std::to_string(i) + " does not fit " + to.ToString());
    }
  }
  return Array::Make(to, column.length(), column.data()->buffers, column.null_count(),
                     column.offset());
}

// Whether `from` (int16, int32 or int64) narrows to `to`.
bool IsNarrowing(TypeId from, TypeId to) {
  const bool small =
      to == TypeId::kInt8 || to == TypeId::kInt16 || to == TypeId::kUInt8 || to == TypeId::kUInt16;
  if (from == TypeId::kInt16) return to == TypeId::kInt8;
  if (from == TypeId::kInt32) return small;
  return from == TypeId::kInt64 && (small || to == TypeId::kInt32 || to == TypeId::kUInt32);
}

template <typename From>
Result<Array> NarrowFrom(const Array& column, const DataType& to) {
  switch (to.id()) {
    case TypeId::kInt8: return Narrow<From, int8_t>(column, to);
    case TypeId::kInt16: return Narrow<From, int16_t>(column, to);
    case TypeId::kInt32: return Narrow<From, int32_t>(column, to);
    case TypeId::kUInt8: return Narrow<From, uint8_t>(column, to);
    case TypeId::kUInt16: return Narrow<From, uint16_t>(column, to);
    default: return Narrow<From, uint32_t>(column, to);
  }
}

}  // namespace

Result<Array> TakeRows(const Array& column, const std::vector<int32_t>& rows) {
  const auto n = static_cast<int64_t>(rows.size());
  const auto& type = column.type();
  int64_t null_count = 0;
  ASSIGN_OR_RAISE(auto validity, TakeValidity(column, rows, &null_count));
  if (type.is_nested()) {
    // Children take the rows' values: the same index (struct), the rows' ranges (list, map,
    // fixed_size_list).
    std::vector<Array> children;
    std::vector<std::shared_ptr<Buffer>> buffers{validity};
    std::vector<int32_t> child_rows;
    if (type.id() == TypeId::kStruct) {
      for (int32_t r : rows) child_rows.push_back(static_cast<int32_t>(column.offset() + r));
      for (int k = 0; k < column.num_children(); ++k) {
        ASSIGN_OR_RAISE(Array child, TakeRows(column.child(k), child_rows));
        children.push_back(std::move(child));
      }
    } else {
      const bool fixed = type.id() == TypeId::kFixedSizeList;
      ASSIGN_OR_RAISE(auto offsets, MutableBuffer::Allocate((n + 1) * 4));
      auto* out = reinterpret_cast<int32_t*>(offsets->mutable_data());
      out[0] = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t begin = fixed ? (column.offset() + rows[i]) * int64_t{type.list_size()}
                                    : column.raw_offsets()[rows[i]];
        const int64_t end =
            fixed ? begin + type.list_size() : int64_t{column.raw_offsets()[rows[i] + 1]};
        for (int64_t j = begin; j < end; ++j) child_rows.push_back(static_cast<int32_t>(j));
        if (child_rows.size() > static_cast<size_t>(INT32_MAX)) {
          return Status::Invalid("taken rows exceed 2^31 values of " + type.ToString());
        }
        out[i + 1] = static_cast<int32_t>(child_rows.size());
      }
      if (!fixed) buffers.push_back(std::move(offsets));
      ASSIGN_OR_RAISE(Array child, TakeRows(column.child(0), child_rows));
      children.push_back(std::move(child));
    }
    return Array::MakeNested(type, n, std::move(buffers), std::move(children), null_count);
  }
  const int bits = type.bit_width();
  if (bits == 1) {
    ASSIGN_OR_RAISE(auto values, MutableBuffer::Allocate(bit_util::BytesForBits(n)));
    std::memset(values->mutable_data(), 0, static_cast<size_t>(values->size()));
    for (int64_t i = 0; i < n; ++i) {
      if (column.BoolValue(rows[i])) bit_util::SetBit(values->mutable_data(), i);
    }
    return Array::Make(type, n, {validity, std::move(values)}, null_count);
  }
  if (bits > 0) {
    const int64_t w = bits / 8;
    ASSIGN_OR_RAISE(auto values, MutableBuffer::Allocate(n * w));
    const uint8_t* src = column.buffer(1)->data() + column.offset() * w;
    uint8_t* dst = values->mutable_data();
    for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * w, src + rows[i] * w, w);
    return Array::Make(type, n, {validity, std::move(values)}, null_count);
  }
  if (!type.is_variable_length()) {  // fixed_size_binary[0]
    return Array::Make(type, n, {validity, Buffer::Empty()}, null_count);
  }
  ASSIGN_OR_RAISE(auto offsets, MutableBuffer::Allocate((n + 1) * 4));
  auto* out_offsets = reinterpret_cast<int32_t*>(offsets->mutable_data());
  int64_t total = 0;
  out_offsets[0] = 0;
  for (int64_t i = 0; i < n; ++i) {
    total += static_cast<int64_t>(column.GetView(rows[i]).size());
    if (total > INT32_MAX) return Status::Invalid("taken rows exceed 2 GiB of " + type.ToString());
    out_offsets[i + 1] = static_cast<int32_t>(total);
  }
  ASSIGN_OR_RAISE(auto data, MutableBuffer::Allocate(total));
  for (int64_t i = 0; i < n; ++i) {
    auto view = column.GetView(rows[i]);
    if (!view.empty()) std::memcpy(data->mutable_data() + out_offsets[i], view.data(), view.size());
  }
  return Array::Make(type, n, {validity, std::move(offsets), std::move(data)}, null_count);
}

Result<RecordBatchPtr> TakeRows(const RecordBatch& batch, const std::vector<int32_t>& rows) {
  std::vector<Array> columns;
  columns.reserve(batch.num_columns());
  for (const auto& c : batch.columns()) {
    ASSIGN_OR_RAISE(Array taken, TakeRows(c, rows));
    columns.push_back(std::move(taken));
  }
  return std::make_shared<const RecordBatch>(batch.schema(), static_cast<int64_t>(rows.size()),
                                             std::move(columns));
}

// A list's items as a fixed_size_list's: every valid list must hold `list_size` items; a null
// one takes `list_size` placeholder items (its first item's index, or nulls).
Result<Array> ListToFixedSize(const Array& column, const DataType& to) {
  const int32_t size = to.list_size();
  const int32_t* offsets = column.raw_offsets();
  const Array items = column.child(0);
  std::vector<int32_t> rows;
  rows.reserve(static_cast<size_t>(column.length()) * static_cast<size_t>(size));
  for (int64_t i = 0; i < column.length(); ++i) {
    const int32_t n = offsets[i + 1] - offsets[i];
    if (n != size && column.IsValid(i)) {
      return Status::Invalid("a list of " + std::to_string(n) + " items does not fit " +
                             to.ToString());
    }
    for (int32_t k = 0; k < size; ++k) rows.push_back(n == size ? offsets[i] + k : 0);
  }
  Array taken;
  if (items.length() == 0) {
    ASSIGN_OR_RAISE(taken, MakeNullArray(items.type(), static_cast<int64_t>(rows.size())));
  } else {
    ASSIGN_OR_RAISE(taken, TakeRows(items, rows));
  }
  ASSIGN_OR_RAISE(auto child, Cast(taken, to.child(0).type));
  ASSIGN_OR_RAISE(auto validity, ValidityFromZero(column));
  return Array::MakeNested(to, column.length(), {std::move(validity)}, {std::move(child)},
                           column.null_count());
}

// A nested column of the same shape with each child cast (validity and offsets kept), or a
// fixed_size_list as a list (and back).
Result<Array> CastNested(const Array& column, const DataType& to) {
  const DataType& from = column.type();
  if (from.id() == TypeId::kList && to.id() == TypeId::kFixedSizeList) {
    return ListToFixedSize(column, to);
  }
  const ArrayData& d = *column.data();
  std::vector<Array> children;
  for (int k = 0; k < from.num_children(); ++k) {
    ASSIGN_OR_RAISE(auto child, Cast(column.child(k), to.child(k).type));
    children.push_back(std::move(child));
  }
  std::vector<std::shared_ptr<Buffer>> buffers = d.buffers;
  if (from.id() == TypeId::kFixedSizeList && to.id() == TypeId::kList) {
    // Element j of the child array starts at j * list_size().
    const int64_t end = d.offset + d.length;
    if (end * from.list_size() > std::numeric_limits<int32_t>::max()) {
      return Status::Invalid(from.ToString() + " of " + std::to_string(end) +
                             " values has too many items for a list");
    }
    ASSIGN_OR_RAISE(auto offsets, MutableBuffer::Allocate((end + 1) * 4));
    auto* out = reinterpret_cast<int32_t*>(offsets->mutable_data());
    for (int64_t j = 0; j <= end; ++j) out[j] = static_cast<int32_t>(j * from.list_size());
    buffers.push_back(std::move(offsets));
  }
  return Array::MakeNested(to, d.length, std::move(buffers), std::move(children), d.null_count,
                           d.offset);
}

// Whether every field of a struct carries a field id (then Cast matches its fields by id).
bool FieldsHaveIds(const DataType& t) {
  if (t.num_children() == 0) return false;
  for (const Field& f : t.children()) {
    if (!f.FieldId()) return false;
  }
  return true;
}

// Whether the nested fields of `a` and `b` (equal types) carry the same ids.
bool SameIds(const DataType& a, const DataType& b) {
  for (int k = 0; k < a.num_children(); ++k) {
    if (a.child(k).FieldId() != b.child(k).FieldId() ||
        !SameIds(a.child(k).type, b.child(k).type)) {
      return false;
    }
  }
  return true;
}

// A struct cast field by field id (schema evolution): a field of `to` the column lacks is null,
// one `to` lacks is gone, the others are cast and named as in `to`.
Result<Array> CastStructById(const Array& column, const DataType& to) {
  const ArrayData& d = *column.data();
  const DataType& from = column.type();
  const int64_t child_length = d.offset + d.length;
  std::vector<Array> children;
  for (const Field& f : to.children()) {
    int found = -1;
    for (int k = 0; k < from.num_children() && found < 0; ++k) {
      if (from.child(k).FieldId() == f.FieldId()) found = k;
    }
    if (found < 0) {
      ASSIGN_OR_RAISE(auto nulls, MakeNullArray(f.type, child_length));
      children.push_back(std::move(nulls));
      continue;
    }
    auto cast = Cast(column.child(found).Slice(0, child_length), f.type);
    if (!cast.ok()) return cast.status().WithContext("field " + Quote(f.name));
    children.push_back(std::move(cast).ValueOrDie());
  }
  return Array::MakeNested(to, d.length, d.buffers, std::move(children), d.null_count, d.offset);
}

bool IsNestedCast(const DataType& from, const DataType& to) {
  if (!from.is_nested() || !to.is_nested() || from.num_children() != to.num_children()) {
    return false;
  }
  if (from.id() == to.id()) return from.list_size() == to.list_size();
  return (from.id() == TypeId::kFixedSizeList && to.id() == TypeId::kList) ||
         (from.id() == TypeId::kList && to.id() == TypeId::kFixedSizeList);
}

Result<Array> Cast(const Array& column, const DataType& to) {
  const DataType& from = column.type();
  if (from.id() == TypeId::kStruct && to.id() == TypeId::kStruct && FieldsHaveIds(from) &&
      FieldsHaveIds(to)) {
    return CastStructById(column, to);
  }
  if (from == to && SameIds(from, to)) return column;
  if (IsNestedCast(from, to)) return CastNested(column, to);
  if (from.id() == TypeId::kTimestamp && to.id() == TypeId::kTimestamp) {
    return CastTimestamp(column, to);
  }
  if (IsWideningTarget(to.id())) {
    switch (from.id()) {
      case TypeId::kInt8: return WidenTo<int8_t>(column, to);
      case TypeId::kInt16: return WidenTo<int16_t>(column, to);
      case TypeId::kInt32: return WidenTo<int32_t>(column, to);  // to int64
      case TypeId::kUInt8: return WidenTo<uint8_t>(column, to);
      case TypeId::kUInt16: return WidenTo<uint16_t>(column, to);
      case TypeId::kUInt32:
        if (to.id() == TypeId::kInt64) return WidenTo<uint32_t>(column, to);
        break;
      default: break;
    }
  }
  if (from.id() == TypeId::kInt8 && to.id() == TypeId::kInt16) return WidenTo<int8_t>(column, to);
  if (from.id() == TypeId::kFloat32 && to.id() == TypeId::kFloat64) {
    return Widen<float, double>(column, to);
  }
  if (from.id() == TypeId::kDecimal128 && to.id() == TypeId::kDecimal128 &&
      from.scale() == to.scale() && to.precision() >= from.precision()) {
    // The same 16-byte values: every value of the smaller precision fits the larger one.
    return Array::Make(to, column.length(), column.data()->buffers, column.null_count(),
                       column.offset());
  }
  if (from.id() == TypeId::kDecimal128 && to.id() == TypeId::kDecimal128 &&
      from.scale() == to.scale()) {
    return NarrowDecimal(column, to);
  }
  if (from.id() == TypeId::kFloat64 && to.id() == TypeId::kFloat32) {
    return NarrowDouble(column, to);
  }
  if (IsNarrowing(from.id(), to.id())) {
    if (from.id() == TypeId::kInt16) return Narrow<int16_t, int8_t>(column, to);
    return from.id() == TypeId::kInt32 ? NarrowFrom<int32_t>(column, to)
                                       : NarrowFrom<int64_t>(column, to);
  }
  return Status::NotImplemented("cannot cast " + from.ToString() + " to " + to.ToString());
}

Result<Array> MakeNullArray(const DataType& type, int64_t length) {
  ASSIGN_OR_RAISE(auto validity, MutableBuffer::Allocate(bit_util::BytesForBits(length)));
  std::memset(validity->mutable_data(), 0, static_cast<size_t>(validity->size()));
  std::shared_ptr<Buffer> bits = std::move(validity);
  switch (type.id()) {
    case TypeId::kString:
    case TypeId::kBinary:
    case TypeId::kList:
    case TypeId::kMap: {
      ASSIGN_OR_RAISE(auto offsets, MutableBuffer::Allocate((length + 1) * 4));
      std::memset(offsets->mutable_data(), 0, static_cast<size_t>(offsets->size()));
      if (!type.is_nested()) {
        return Array::Make(type, length, {bits, std::move(offsets), Buffer::Empty()}, length);
      }
      ASSIGN_OR_RAISE(Array child, MakeNullArray(type.child(0).type, 0));
      return Array::MakeNested(type, length, {bits, std::move(offsets)}, {std::move(child)},
                               length);
    }
    case TypeId::kStruct:
    case TypeId::kFixedSizeList: {
      const int64_t child_length =
          type.id() == TypeId::kStruct ? length : length * type.list_size();
      std::vector<Array> children;
      for (const auto& f : type.children()) {
        ASSIGN_OR_RAISE(Array child, MakeNullArray(f.type, child_length));
        children.push_back(std::move(child));
      }
      return Array::MakeNested(type, length, {bits}, std::move(children), length);
    }
    default: {
      const int64_t bytes = type.id() == TypeId::kBool ? bit_util::BytesForBits(length)
                                                       : length * std::max(type.bit_width(), 0) / 8;
      ASSIGN_OR_RAISE(auto values, MutableBuffer::Allocate(bytes));
      std::memset(values->mutable_data(), 0, static_cast<size_t>(values->size()));
      return Array::Make(type, length, {bits, std::move(values)}, length);
    }
  }
}

}  // namespace oxbow::arrow
