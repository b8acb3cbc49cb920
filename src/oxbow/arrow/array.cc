#include "oxbow/arrow/array.h"

#include <algorithm>
#include <string>

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
  return Make(data_->type, length, data_->buffers, -1, data_->offset + offset);
}

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
  const int bits = type().bit_width();
  for (int64_t i = 0; i < length(); ++i) {
    if (IsValid(i) != other.IsValid(i)) return false;
    if (!IsValid(i)) continue;
    if (bits == 1) {
      if (BoolValue(i) != other.BoolValue(i)) return false;
    } else if (type().is_variable_length() || type().id() == TypeId::kFixedSizeBinary ||
               type().id() == TypeId::kDecimal128) {
      if (GetView(i) != other.GetView(i)) return false;
    } else {
      const int64_t w = bits / 8;
      if (std::memcmp(buffer(1)->data() + (offset() + i) * w,
                      other.buffer(1)->data() + (other.offset() + i) * w, w) != 0) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace oxbow::arrow
