#include "oxbow/arrow/array.h"

#include <algorithm>
#include <string>
#include <utility>

namespace oxbow::arrow {

Array Array::Make(DataType type, int64_t length, std::vector<std::shared_ptr<Buffer>> buffers,
                  int64_t null_count, int64_t offset) {
  auto data = std::make_shared<ArrayData>();
  data->type = std::move(type);
  data->length = length;
  data->offset = offset;
  data->buffers = std::move(buffers);
  if (null_count < 0) {
    const auto& validity = data->buffers.empty() ? nullptr : data->buffers[0];
    null_count = validity ? length - bit_util::CountSetBits(validity->data(), offset, length) : 0;
  }
  data->null_count = null_count;
  return Array(std::move(data));
}

Array Array::MakeNested(DataType type, int64_t length, std::vector<std::shared_ptr<Buffer>> buffers,
                        std::vector<Array> children, int64_t null_count, int64_t offset) {
  Array parent = Make(std::move(type), length, std::move(buffers), null_count, offset);
  auto data = std::const_pointer_cast<ArrayData>(parent.data_);
  for (auto& c : children) data->children.push_back(c.data());
  return parent;
}

std::string_view Array::GetView(int64_t i) const {
  const auto* base = reinterpret_cast<const char*>(data_->buffers[1]->data());
  if (type().is_variable_length()) {
    const int32_t* offsets = raw_offsets();
    const auto* bytes = reinterpret_cast<const char*>(data_->buffers[2]->data());
    return {bytes + offsets[i], static_cast<size_t>(offsets[i + 1] - offsets[i])};
  }
  const int64_t width = type().byte_width();
  return {base + (data_->offset + i) * width, static_cast<size_t>(width)};
}

Array Array::Slice(int64_t offset, int64_t length) const {
  offset = std::clamp<int64_t>(offset, 0, data_->length);
  length = std::clamp<int64_t>(length, 0, data_->length - offset);
  auto data = std::make_shared<ArrayData>(*data_);
  data->offset = data_->offset + offset;
  data->length = length;
  const auto& validity = data->buffers.empty() ? nullptr : data->buffers[0];
  data->null_count =
      validity ? length - bit_util::CountSetBits(validity->data(), data->offset, length) : 0;
  return Array(std::move(data));
}

namespace {

std::string Num(int64_t v) { return std::to_string(v); }

// Checks the children of a valid nested parent [offset, offset + length).
Status ValidateChildren(const Array& a, const std::string& what) {
  const ArrayData& d = *a.data();
  const DataType& t = d.type;
  if (static_cast<int>(d.children.size()) != t.num_children()) {
    return Status::Invalid(what + ": expected " + Num(t.num_children()) + " child arrays, got " +
                           Num(d.children.size()));
  }
  const int64_t end = d.offset + d.length;
  int64_t needed = 0;  // child elements the parent can reach
  if (t.id() == TypeId::kStruct) {
    needed = end;
  } else if (t.id() == TypeId::kFixedSizeList) {
    if (__builtin_mul_overflow(end, int64_t{t.list_size()}, &needed)) {
      return Status::Invalid(what + ": length overflows");
    }
  } else {  // list, map
    if (d.length == 0 && (!d.buffers[1] || d.buffers[1]->size() == 0)) {
      needed = 0;
    } else {
      if (!d.buffers[1]) return Status::Invalid(what + ": missing offsets buffer");
      if (end > INT64_MAX / 4 - 1 || d.buffers[1]->size() < (end + 1) * 4) {
        return Status::Invalid(what + ": offsets buffer has " + Num(d.buffers[1]->size()) +
                               " bytes, needs " + Num((end + 1) * 4));
      }
      const int32_t* offsets = a.raw_offsets();
      if (offsets[0] < 0) return Status::Invalid(what + ": negative first offset");
      for (int64_t i = 0; i < d.length; ++i) {
        if (offsets[i + 1] < offsets[i]) {
          return Status::Invalid(what + ": offsets decrease at index " + Num(i));
        }
      }
      needed = offsets[d.length];
    }
  }
  for (int k = 0; k < t.num_children(); ++k) {
    const Field& f = t.child(k);
    const Array child = a.child(k);
    const std::string child_what = what + " child " + Quote(f.name);
    if (!child.data() || child.type() != f.type) {
      return Status::Invalid(child_what + ": child array does not have type " + f.type.ToString());
    }
    if (child.length() < needed) {
      return Status::Invalid(child_what + " has " + Num(child.length()) + " values, needs " +
                             Num(needed));
    }
    RETURN_NOT_OK(child.Validate().WithContext(child_what));
    if (t.id() == TypeId::kMap && (child.null_count() > 0 || child.child(0).null_count() > 0)) {
      return Status::Invalid(child_what + ": map entries and keys must not be null");
    }
  }
  return Status::OK();
}

}  // namespace

Status Array::Validate() const {
  const auto& d = *data_;
  const std::string what = "array of " + d.type.ToString();
  RETURN_NOT_OK(d.type.Validate());
  if (d.length < 0 || d.offset < 0 || d.null_count < 0 || d.null_count > d.length) {
    return Status::Invalid(what + ": bad length " + std::to_string(d.length) + ", offset " +
                           std::to_string(d.offset) + " or null count " +
                           std::to_string(d.null_count));
  }
  if (static_cast<int>(d.buffers.size()) != d.type.num_buffers()) {
    return Status::Invalid(what + ": expected " + std::to_string(d.type.num_buffers()) +
                           " buffers, got " + std::to_string(d.buffers.size()));
  }
  const int64_t end = d.offset + d.length;
  if (end < d.offset) return Status::Invalid(what + ": offset + length overflows");
  if (d.buffers[0]) {
    if (d.buffers[0]->size() < bit_util::BytesForBits(end)) {
      return Status::Invalid(what + ": validity bitmap too short for " + std::to_string(end) +
                             " values");
    }
    int64_t nulls = d.length - bit_util::CountSetBits(d.buffers[0]->data(), d.offset, d.length);
    if (nulls != d.null_count) {
      return Status::Invalid(what + ": null count " + std::to_string(d.null_count) +
                             " disagrees with the bitmap (" + std::to_string(nulls) + ")");
    }
  } else if (d.null_count != 0) {
    return Status::Invalid(what + ": nulls claimed but no validity bitmap");
  }
  if (d.type.is_nested()) return ValidateChildren(*this, what);
  if (d.length == 0 && !d.type.is_variable_length() && !d.buffers[1]) return Status::OK();
  if (!d.buffers[1]) return Status::Invalid(what + ": missing values buffer");
  if (!d.type.is_variable_length()) {
    const int bits = d.type.bit_width();
    if (bits == 0 && d.type.id() == TypeId::kFixedSizeBinary) return Status::OK();
    const int64_t max_elements = bits == 1 ? INT64_MAX : INT64_MAX / (bits / 8);
    if (end > max_elements) return Status::Invalid(what + ": length overflows");
    int64_t needed = bits == 1 ? bit_util::BytesForBits(end) : end * (bits / 8);
    if (d.buffers[1]->size() < needed) {
      return Status::Invalid(what + ": values buffer has " + std::to_string(d.buffers[1]->size()) +
                             " bytes, needs " + std::to_string(needed));
    }
    return Status::OK();
  }
  if (end > INT64_MAX / 4 - 1) return Status::Invalid(what + ": length overflows");
  if (d.buffers[1]->size() < (end + 1) * 4) {
    return Status::Invalid(what + ": offsets buffer has " + std::to_string(d.buffers[1]->size()) +
                           " bytes, needs " + std::to_string((end + 1) * 4));
  }
  const int64_t data_size = d.buffers[2] ? d.buffers[2]->size() : 0;
  const int32_t* offsets = raw_offsets();
  if (offsets[0] < 0) return Status::Invalid(what + ": negative first offset");
  // Branch-free blocks so the compiler vectorizes the common, valid case.
  constexpr int64_t kBlock = 4096;
  for (int64_t start = 0; start < d.length; start += kBlock) {
    const int64_t stop = std::min(d.length, start + kBlock);
    int decreasing = 0;
    for (int64_t i = start; i < stop; ++i) {
      decreasing |= static_cast<int>(offsets[i + 1] < offsets[i]);
    }
    if (!decreasing) continue;
    for (int64_t i = start; i < stop; ++i) {
      if (offsets[i + 1] < offsets[i]) {
        return Status::Invalid(what + ": offsets decrease at index " + std::to_string(i));
      }
    }
  }
  if (offsets[d.length] > data_size) {
    return Status::Invalid(what + ": last offset " + std::to_string(offsets[d.length]) +
                           " exceeds the data buffer (" + std::to_string(data_size) + " bytes)");
  }
  if (!d.buffers[2] && d.length > 0) return Status::Invalid(what + ": missing data buffer");
  return Status::OK();
}

bool Array::Equals(const Array& other) const {
  if (type() != other.type() || length() != other.length() || null_count() != other.null_count()) {
    return false;
  }
  for (int64_t i = 0; i < length(); ++i) {
    if (!ElementEquals(i, other, i)) return false;
  }
  return true;
}

namespace {

// The child elements [begin, end) of element i of a valid nested parent `a`.
std::pair<int64_t, int64_t> ChildRange(const Array& a, int64_t i) {
  const DataType& t = a.type();
  if (t.id() == TypeId::kStruct) return {a.offset() + i, a.offset() + i + 1};
  if (t.id() == TypeId::kFixedSizeList) {
    return {(a.offset() + i) * t.list_size(), (a.offset() + i + 1) * t.list_size()};
  }
  return {a.raw_offsets()[i], a.raw_offsets()[i + 1]};
}

// Whether a not-null field under element i of `a` is null: its path, else empty.
std::string NullInNotNullField(const Array& a, int64_t i) {
  if (!a.type().is_nested() || a.IsNull(i)) return "";
  const auto [begin, end] = ChildRange(a, i);
  for (int k = 0; k < a.num_children(); ++k) {
    const Field& f = a.type().child(k);
    const Array child = a.child(k);
    for (int64_t j = begin; j < end; ++j) {
      if (!f.nullable && child.IsNull(j)) return f.name;
      if (std::string below = NullInNotNullField(child, j); !below.empty()) {
        return f.name + "." + below;
      }
    }
  }
  return "";
}

bool HasNotNullField(const DataType& t) {
  for (const Field& f : t.children()) {
    if (!f.nullable || HasNotNullField(f.type)) return true;
  }
  return false;
}

}  // namespace

Status Array::CheckNestedNulls() const {
  if (!HasNotNullField(type())) return Status::OK();
  for (int64_t i = 0; i < length(); ++i) {
    if (std::string path = NullInNotNullField(*this, i); !path.empty()) {
      return Status::Invalid("its not-null field " + Quote(path) + " holds a null in row " +
                             Num(i));
    }
  }
  return Status::OK();
}

bool Array::ElementEquals(int64_t i, const Array& other, int64_t j) const {
  if (IsValid(i) != other.IsValid(j)) return false;
  if (!IsValid(i)) return true;
  const DataType& t = type();
  switch (t.id()) {
    case TypeId::kBool: return BoolValue(i) == other.BoolValue(j);
    case TypeId::kString:
    case TypeId::kBinary:
    case TypeId::kFixedSizeBinary:
    case TypeId::kDecimal128: return GetView(i) == other.GetView(j);
    case TypeId::kStruct:
      for (int k = 0; k < num_children(); ++k) {
        if (!child(k).ElementEquals(offset() + i, other.child(k), other.offset() + j)) {
          return false;
        }
      }
      return true;
    case TypeId::kList:
    case TypeId::kMap:
    case TypeId::kFixedSizeList: {
      int64_t a_start, a_end, b_start, b_end;
      if (t.id() == TypeId::kFixedSizeList) {
        a_start = (offset() + i) * t.list_size();
        b_start = (other.offset() + j) * t.list_size();
        a_end = a_start + t.list_size();
        b_end = b_start + t.list_size();
      } else {
        a_start = raw_offsets()[i];
        a_end = raw_offsets()[i + 1];
        b_start = other.raw_offsets()[j];
        b_end = other.raw_offsets()[j + 1];
      }
      if (a_end - a_start != b_end - b_start) return false;
      const Array a_child = child(0);
      const Array b_child = other.child(0);
      for (int64_t k = 0; k < a_end - a_start; ++k) {
        if (!a_child.ElementEquals(a_start + k, b_child, b_start + k)) return false;
      }
      return true;
    }
    default: {
      const int64_t w = t.bit_width() / 8;
      return std::memcmp(buffer(1)->data() + (offset() + i) * w,
                         other.buffer(1)->data() + (other.offset() + j) * w, w) == 0;
    }
  }
}

}  // namespace oxbow::arrow
