// Buffer: an immutable, reference-counted byte range. Slices share their parent's memory.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "oxbow/common/status.h"

namespace oxbow {

// Allocations are aligned and padded to this many bytes, as Arrow recommends.
inline constexpr int64_t kBufferAlignment = 64;

class Buffer {
 public:
  // Wraps memory kept alive by `owner` (a parent buffer, an mmap, a gRPC slice, ...).
  Buffer(const uint8_t* data, int64_t size, std::shared_ptr<const void> owner)
      : data_(data), size_(size), owner_(std::move(owner)) {}
  virtual ~Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  const uint8_t* data() const { return data_; }
  int64_t size() const { return size_; }
  std::string_view view() const {
    return {reinterpret_cast<const char*>(data_), static_cast<size_t>(size_)};
  }
  bool Equals(const Buffer& other) const {
    return size_ == other.size_ && (size_ == 0 || std::memcmp(data_, other.data_, size_) == 0);
  }

  // A zero-copy view of [offset, offset + length) that keeps `parent` alive.
  static std::shared_ptr<Buffer> Slice(const std::shared_ptr<Buffer>& parent, int64_t offset,
                                       int64_t length);
  // Copies `bytes` into a new aligned buffer.
  static Result<std::shared_ptr<Buffer>> CopyFrom(std::string_view bytes);
  // Takes ownership of `bytes` without copying.
  static std::shared_ptr<Buffer> FromString(std::string bytes);
  static std::shared_ptr<Buffer> Empty();

 protected:
  const uint8_t* data_;
  int64_t size_;
  std::shared_ptr<const void> owner_;
};

// A heap buffer with 64-byte alignment and zeroed padding; writable until shared.
class MutableBuffer : public Buffer {
 public:
  static Result<std::shared_ptr<MutableBuffer>> Allocate(int64_t size);
  ~MutableBuffer() override;

  uint8_t* mutable_data() { return const_cast<uint8_t*>(data_); }
  int64_t capacity() const { return capacity_; }
  // Shrinks the visible size (never grows past capacity).
  void Truncate(int64_t size) { size_ = size < capacity_ ? size : capacity_; }
  // Grows to `new_size` bytes keeping the content (the bytes after it are uninitialized, the
  // padding after new_size zeroed), or fails when memory is exhausted.
  Status Resize(int64_t new_size);

 private:
  MutableBuffer(uint8_t* data, int64_t size, int64_t capacity)
      : Buffer(data, size, nullptr), capacity_(capacity) {}
  int64_t capacity_;
};

// Appends bytes into a growing MutableBuffer; Finish() hands it over.
class BufferBuilder {
 public:
  Status Reserve(int64_t additional);
  Status Append(const void* data, int64_t n) {
    RETURN_NOT_OK(Reserve(n));
    UnsafeAppend(data, n);
    return Status::OK();
  }
  void UnsafeAppend(const void* data, int64_t n) {
    if (n > 0) std::memcpy(buffer_->mutable_data() + length_, data, static_cast<size_t>(n));
    length_ += n;
  }
  template <typename T>
  void UnsafeAppendValue(T v) {
    std::memcpy(buffer_->mutable_data() + length_, &v, sizeof(T));
    length_ += sizeof(T);
  }
  // Appends n zero bytes.
  Status AppendZeros(int64_t n);
  uint8_t* mutable_data() { return buffer_ ? buffer_->mutable_data() : nullptr; }
  int64_t length() const { return length_; }
  void Rewind(int64_t length) { length_ = length; }
  Result<std::shared_ptr<Buffer>> Finish();

 private:
  std::shared_ptr<MutableBuffer> buffer_;
  int64_t length_ = 0;
};

}  // namespace oxbow
