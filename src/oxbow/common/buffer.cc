#include "oxbow/common/buffer.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "oxbow/common/bit_util.h"

namespace oxbow {

std::shared_ptr<Buffer> Buffer::Slice(const std::shared_ptr<Buffer>& parent, int64_t offset,
                                      int64_t length) {
  return std::make_shared<Buffer>(parent->data() + offset, length, parent);
}

Result<std::shared_ptr<Buffer>> Buffer::CopyFrom(std::string_view bytes) {
  ASSIGN_OR_RAISE(auto buf, MutableBuffer::Allocate(static_cast<int64_t>(bytes.size())));
  if (!bytes.empty()) std::memcpy(buf->mutable_data(), bytes.data(), bytes.size());
  return std::shared_ptr<Buffer>(std::move(buf));
}

std::shared_ptr<Buffer> Buffer::FromString(std::string bytes) {
  auto owner = std::make_shared<std::string>(std::move(bytes));
  const auto* data = reinterpret_cast<const uint8_t*>(owner->data());
  auto size = static_cast<int64_t>(owner->size());
  return std::make_shared<Buffer>(data, size, std::move(owner));
}

std::shared_ptr<Buffer> Buffer::Empty() {
  static const std::shared_ptr<Buffer> kEmpty = [] {
    static const uint8_t kZero[kBufferAlignment] = {};
    return std::make_shared<Buffer>(kZero, 0, nullptr);
  }();
  return kEmpty;
}

namespace {
uint8_t* AlignedAlloc(int64_t capacity) {
  return static_cast<uint8_t*>(std::aligned_alloc(kBufferAlignment, static_cast<size_t>(capacity)));
}
}  // namespace

Result<std::shared_ptr<MutableBuffer>> MutableBuffer::Allocate(int64_t size) {
  if (size < 0) return Status::Invalid("negative buffer size " + std::to_string(size));
  int64_t capacity = bit_util::RoundUp(size > 0 ? size : 1, kBufferAlignment);
  uint8_t* data = AlignedAlloc(capacity);
  if (data == nullptr) {
    return Status::ResourceExhausted("cannot allocate " + std::to_string(capacity) + " bytes");
  }
  std::memset(data + size, 0, static_cast<size_t>(capacity - size));
  return std::shared_ptr<MutableBuffer>(new MutableBuffer(data, size, capacity));
}

MutableBuffer::~MutableBuffer() { std::free(const_cast<uint8_t*>(data_)); }

Status MutableBuffer::Resize(int64_t new_size) {
  if (new_size <= capacity_) {
    size_ = new_size;
    return Status::OK();
  }
  int64_t new_capacity = bit_util::RoundUp(new_size, kBufferAlignment);
  uint8_t* data = AlignedAlloc(new_capacity);
  if (data == nullptr) {
    return Status::ResourceExhausted("cannot allocate " + std::to_string(new_capacity) + " bytes");
  }
  std::memcpy(data, data_, static_cast<size_t>(size_));
  // Only the padding: zeroing the new bytes would touch (fault in) memory the caller is about
  // to write anyway, or never uses (a builder's spare capacity).
  std::memset(data + new_size, 0, static_cast<size_t>(new_capacity - new_size));
  std::free(const_cast<uint8_t*>(data_));
  data_ = data;
  size_ = new_size;
  capacity_ = new_capacity;
  return Status::OK();
}

Status BufferBuilder::Reserve(int64_t additional) {
  int64_t needed = length_ + additional;
  if (!buffer_) {
    ASSIGN_OR_RAISE(buffer_, MutableBuffer::Allocate(std::max<int64_t>(needed, 64)));
    return Status::OK();
  }
  if (needed <= buffer_->capacity()) {
    if (needed > buffer_->size()) buffer_->Truncate(needed);
    return Status::OK();
  }
  return buffer_->Resize(std::max(needed, buffer_->capacity() * 2));
}

Status BufferBuilder::AppendZeros(int64_t n) {
  RETURN_NOT_OK(Reserve(n));
  if (n > 0) std::memset(buffer_->mutable_data() + length_, 0, static_cast<size_t>(n));
  length_ += n;
  return Status::OK();
}

Result<std::shared_ptr<Buffer>> BufferBuilder::Finish() {
  if (!buffer_) return std::static_pointer_cast<Buffer>(MutableBuffer::Allocate(0).ValueOrDie());
  buffer_->Truncate(length_);
  // Zero the padding past the content, so written files never carry stale bytes; the spare
  // capacity beyond it is never read, and zeroing it would fault it in.
  const int64_t padded =
      std::min(bit_util::RoundUp(length_, kBufferAlignment), buffer_->capacity());
  std::memset(buffer_->mutable_data() + length_, 0, static_cast<size_t>(padded - length_));
  std::shared_ptr<Buffer> out = std::move(buffer_);
  length_ = 0;
  return out;
}

}  // namespace oxbow
