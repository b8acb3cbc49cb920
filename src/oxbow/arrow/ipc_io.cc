// Output sinks and memory-mapped input for the IPC readers and writers.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

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
