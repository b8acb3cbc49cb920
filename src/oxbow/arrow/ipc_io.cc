// Output sinks for the IPC writers.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "oxbow/arrow/ipc.h"

namespace oxbow::arrow::ipc {

namespace {

// Small writes are gathered up to this size; larger buffers go straight to the file.
constexpr size_t kStagingCapacity = 1 << 20;
constexpr int64_t kDirectWriteThreshold = 64 << 10;

Status ErrnoStatus(const std::string& what, const std::string& path) {
  return Status::IOError(what + " '" + path + "': " + std::strerror(errno));
}

}  // namespace

// ---- FileSink ----

FileSink::FileSink(std::unique_ptr<File> file, int fd, bool owns, std::string path)
    : file_(std::move(file)), fd_(fd), owns_(owns), path_(std::move(path)) {}

Result<std::shared_ptr<FileSink>> FileSink::Open(FileSystem& fs, const std::string& path) {
  ASSIGN_OR_RAISE(auto file, fs.OpenFile(path, FileMode::kCreate));
  RETURN_NOT_OK(file->Truncate(0));
  return std::shared_ptr<FileSink>(new FileSink(std::move(file), -1, false, path));
}

std::shared_ptr<FileSink> FileSink::FromFd(int fd, bool take_ownership) {
  return std::shared_ptr<FileSink>(
      new FileSink(nullptr, fd, take_ownership, "fd " + std::to_string(fd)));
}

FileSink::~FileSink() { (void)Close(); }

Status FileSink::WriteFully(const char* data, int64_t size) {
  if (file_) {
    RETURN_NOT_OK(file_->WriteAt(
        position_, ByteSpan(reinterpret_cast<const uint8_t*>(data), static_cast<size_t>(size))));
    position_ += size;
    return Status::OK();
  }
  while (size > 0) {
    ssize_t n = ::write(fd_, data, static_cast<size_t>(size));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("cannot write to", path_);
    }
    data += n;
    size -= n;
  }
  return Status::OK();
}

Status FileSink::Write(std::string_view bytes) {
  if (closed_) return Status::Invalid("write to a closed sink " + path_);
  if (staging_.size() + bytes.size() > kStagingCapacity) RETURN_NOT_OK(Flush());
  if (bytes.size() >= kStagingCapacity) {
    return WriteFully(bytes.data(), static_cast<int64_t>(bytes.size()));
  }
  if (staging_.capacity() < kStagingCapacity) staging_.reserve(kStagingCapacity);
  staging_.append(bytes);
  return Status::OK();
}

Status FileSink::WriteBuffer(const std::shared_ptr<Buffer>& buffer) {
  if (buffer->size() < kDirectWriteThreshold) return Write(buffer->view());
  if (closed_) return Status::Invalid("write to a closed sink " + path_);
  RETURN_NOT_OK(Flush());
  return WriteFully(reinterpret_cast<const char*>(buffer->data()), buffer->size());
}

Status FileSink::Flush() {
  if (staging_.empty() || closed_) return Status::OK();
  Status st = WriteFully(staging_.data(), static_cast<int64_t>(staging_.size()));
  staging_.clear();
  return st;
}

Status FileSink::Sync() {
  RETURN_NOT_OK(Flush());
  if (closed_) return Status::OK();
  if (file_) return file_->Sync();
  if (::fsync(fd_) != 0) return ErrnoStatus("cannot fsync", path_);
  return Status::OK();
}

Status FileSink::Close() {
  if (closed_) return Status::OK();
  Status st = Flush();
  closed_ = true;
  file_.reset();
  if (owns_ && ::close(fd_) != 0 && st.ok()) st = ErrnoStatus("cannot close", path_);
  return st;
}

// ---- StringSink ----

namespace {

constexpr int64_t kMinSinkBlock = 64 << 10;

// The one released StringSink block kept for reuse, as an allocator keeps freed memory: a fresh
// anonymous page costs a fault and zeroing on first touch, a reused one costs nothing.
struct SinkBlock {
  uint8_t* data = nullptr;
  int64_t capacity = 0;
};
std::mutex cached_block_mutex;
SinkBlock cached_block;

SinkBlock TakeCachedBlock() {
  std::lock_guard<std::mutex> lock(cached_block_mutex);
  return std::exchange(cached_block, SinkBlock{});
}

// Keeps the larger of `block` and the cached block, unmaps the other.
void ReleaseSinkBlock(SinkBlock block) {
  if (block.data == nullptr) return;
  // The kernel may take these pages back under memory pressure instead of swapping them.
  (void)::madvise(block.data, static_cast<size_t>(block.capacity), MADV_FREE);
  {
    std::lock_guard<std::mutex> lock(cached_block_mutex);
    if (block.capacity > cached_block.capacity) std::swap(block, cached_block);
  }
  if (block.data != nullptr) ::munmap(block.data, static_cast<size_t>(block.capacity));
}

}  // namespace

StringSink::~StringSink() { ReleaseSinkBlock({data_, capacity_}); }

Status StringSink::Grow(int64_t needed) {
  if (data_ == nullptr) {
    SinkBlock block = TakeCachedBlock();
    data_ = block.data;
    capacity_ = block.capacity;
  }
  if (needed <= capacity_) return Status::OK();
  static const int64_t kPage = ::sysconf(_SC_PAGESIZE);
  int64_t capacity = std::max(capacity_, kMinSinkBlock);
  while (capacity < needed) capacity *= 2;
  capacity = (capacity + kPage - 1) / kPage * kPage;
  void* addr = data_ == nullptr ? ::mmap(nullptr, static_cast<size_t>(capacity),
                                         PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                                : ::mremap(data_, static_cast<size_t>(capacity_),
                                           static_cast<size_t>(capacity), MREMAP_MAYMOVE);
  if (addr == MAP_FAILED) {
    return Status::ResourceExhausted("StringSink: cannot grow to " + std::to_string(capacity) +
                                     " bytes: " + std::strerror(errno));
  }
  data_ = static_cast<uint8_t*>(addr);
  capacity_ = capacity;
  return Status::OK();
}

Status StringSink::Write(std::string_view bytes) {
  if (bytes.empty()) return Status::OK();
  const int64_t needed = size_ + static_cast<int64_t>(bytes.size());
  if (needed > capacity_) RETURN_NOT_OK(Grow(needed));
  std::memcpy(data_ + size_, bytes.data(), bytes.size());
  size_ = needed;
  return Status::OK();
}

std::string StringSink::Take() {
  std::string out(data());
  size_ = 0;
  return out;
}

std::shared_ptr<Buffer> StringSink::Finish() {
  if (size_ == 0) return Buffer::Empty();
  SinkBlock block{data_, capacity_};
  std::shared_ptr<const void> owner(block.data, [block](const void*) { ReleaseSinkBlock(block); });
  auto buffer = std::make_shared<Buffer>(data_, size_, std::move(owner));
  data_ = nullptr;
  size_ = 0;
  capacity_ = 0;
  return buffer;
}

// ---- BufferListSink ----

Status BufferListSink::Write(std::string_view bytes) {
  pending_.append(bytes);
  return Status::OK();
}

Status BufferListSink::WriteBuffer(const std::shared_ptr<Buffer>& buffer) {
  if (buffer->size() < 256) return Write(buffer->view());
  RETURN_NOT_OK(Flush());
  size_ += buffer->size();
  buffers_.push_back(buffer);
  return Status::OK();
}

Status BufferListSink::Flush() {
  if (pending_.empty()) return Status::OK();
  size_ += static_cast<int64_t>(pending_.size());
  ASSIGN_OR_RAISE(auto copy, Buffer::CopyFrom(pending_));
  buffers_.push_back(std::move(copy));
  pending_.clear();
  return Status::OK();
}

Result<std::shared_ptr<Buffer>> BufferListSink::Concatenate() {
  RETURN_NOT_OK(Flush());
  ASSIGN_OR_RAISE(auto out, MutableBuffer::Allocate(size_));
  int64_t pos = 0;
  for (const auto& b : buffers_) {
    if (b->size() > 0) std::memcpy(out->mutable_data() + pos, b->data(), b->size());
    pos += b->size();
  }
  return std::shared_ptr<Buffer>(std::move(out));
}

}  // namespace oxbow::arrow::ipc
