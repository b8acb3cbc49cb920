// Output sinks and memory-mapped input for the IPC readers and writers.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
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

FileSink::FileSink(int fd, bool owns, std::string path)
    : fd_(fd), owns_(owns), path_(std::move(path)) {}

Result<std::shared_ptr<FileSink>> FileSink::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("cannot create", path);
  return std::shared_ptr<FileSink>(new FileSink(fd, true, path));
}

std::shared_ptr<FileSink> FileSink::FromFd(int fd, bool take_ownership) {
  return std::shared_ptr<FileSink>(new FileSink(fd, take_ownership, "fd " + std::to_string(fd)));
}

FileSink::~FileSink() {
  if (fd_ >= 0) {
    (void)Flush();
    if (owns_) ::close(fd_);
  }
}

Status FileSink::WriteFully(const char* data, int64_t size) {
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
  if (fd_ < 0) return Status::Invalid("write to a closed sink " + path_);
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
  if (fd_ < 0) return Status::Invalid("write to a closed sink " + path_);
  RETURN_NOT_OK(Flush());
  return WriteFully(reinterpret_cast<const char*>(buffer->data()), buffer->size());
}

Status FileSink::Flush() {
  if (staging_.empty() || fd_ < 0) return Status::OK();
  Status st = WriteFully(staging_.data(), static_cast<int64_t>(staging_.size()));
  staging_.clear();
  return st;
}

Status FileSink::Sync() {
  RETURN_NOT_OK(Flush());
  if (fd_ >= 0 && ::fsync(fd_) != 0) return ErrnoStatus("cannot fsync", path_);
  return Status::OK();
}

Status FileSink::Close() {
  if (fd_ < 0) return Status::OK();
  Status st = Flush();
  if (owns_ && ::close(fd_) != 0 && st.ok()) st = ErrnoStatus("cannot close", path_);
  fd_ = -1;
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

// ---- MapFile ----

Result<std::shared_ptr<Buffer>> MapFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("cannot open", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = ErrnoStatus("cannot stat", path);
    ::close(fd);
    return s;
  }
  const int64_t size = st.st_size;
  if (size == 0) {
    ::close(fd);
    return Buffer::Empty();
  }
  void* addr = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
  Status map_status = addr == MAP_FAILED ? ErrnoStatus("cannot mmap", path) : Status::OK();
  ::close(fd);
  RETURN_NOT_OK(map_status);
  auto owner =
      std::shared_ptr<void>(addr, [size](void* p) { ::munmap(p, static_cast<size_t>(size)); });
  return std::make_shared<Buffer>(static_cast<const uint8_t*>(addr), size, std::move(owner));
}

}  // namespace oxbow::arrow::ipc
