#include "oxbow/common/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

namespace oxbow {

Status ErrnoToStatus(int errnum, std::string_view what, const std::string& path) {
  if (errnum == ENOSPC || errnum == EDQUOT) {
    return Status::ResourceExhausted("disk full: " + path);
  }
  std::string message = std::string(what) + " " + path + ": " + std::strerror(errnum);
  if (errnum == ENOENT) return Status::NotFound(std::move(message));
  if (errnum == EEXIST) return Status::AlreadyExists(std::move(message));
  return Status::IOError(std::move(message));
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

namespace {

class PosixFile : public File {
 public:
  PosixFile(std::string path, int fd) : File(std::move(path)), fd_(fd) {}
  ~PosixFile() override { close(fd_); }

  Status WriteAt(int64_t position, std::span<const ByteSpan> pieces) override {
    std::vector<iovec> iov;
    iov.reserve(pieces.size());
    for (const ByteSpan& piece : pieces) {
      if (!piece.empty()) iov.push_back({const_cast<uint8_t*>(piece.data()), piece.size()});
    }
    size_t next = 0;  // first iovec not yet fully written
    while (next < iov.size()) {
      int count = static_cast<int>(std::min<size_t>(iov.size() - next, IOV_MAX));
      ssize_t n = pwritev(fd_, &iov[next], count, position);
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoToStatus(errno, "write", path());
      }
      if (n == 0) return Status::IOError("write " + path() + ": wrote 0 bytes");
      position += n;
      auto left = static_cast<size_t>(n);
      while (next < iov.size() && left >= iov[next].iov_len) left -= iov[next++].iov_len;
      if (left > 0) {
        iov[next].iov_base = static_cast<uint8_t*>(iov[next].iov_base) + left;
        iov[next].iov_len -= left;
      }
    }
    return Status::OK();
  }

  Result<std::shared_ptr<Buffer>> ReadAt(int64_t position, int64_t length) override {
    if (position < 0 || length < 0) {
      return Status::Invalid("read " + path() + ": negative position or length");
    }
    if (length >= PosixFileSystem::kMmapThreshold) return MapAt(position, length);
    ASSIGN_OR_RAISE(auto buffer, MutableBuffer::Allocate(length));
    int64_t done = 0;
    while (done < length) {
      ssize_t n = pread(fd_, buffer->mutable_data() + done, static_cast<size_t>(length - done),
                        position + done);
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoToStatus(errno, "read", path());
      }
      if (n == 0) break;
      done += n;
    }
    buffer->Truncate(done);
    return std::shared_ptr<Buffer>(std::move(buffer));
  }

  Status Sync() override {
    if (fdatasync(fd_) != 0) return ErrnoToStatus(errno, "fsync", path());
    return Status::OK();
  }

  Status Truncate(int64_t size) override {
    if (ftruncate(fd_, size) != 0) return ErrnoToStatus(errno, "truncate", path());
    return Status::OK();
  }

  Result<int64_t> Size() override {
    struct stat st;
    if (fstat(fd_, &st) != 0) return ErrnoToStatus(errno, "stat", path());
    return static_cast<int64_t>(st.st_size);
  }

 private:
  // Serves [position, position + length) from the file's one read-only mapping, mapping (or
  // remapping, when the file has grown past it) on demand. The mapping reaches past the end of
  // the file, up to a power of two, so appends are covered without a remap; only the part below
  // the current end is ever handed out. Keeping one mapping means a page faulted in once stays
  // mapped for later reads, where a mapping per read re-faults every page on every scan.
  Result<std::shared_ptr<Buffer>> MapAt(int64_t position, int64_t length) {
    ASSIGN_OR_RAISE(int64_t size, Size());
    length = std::min(length, std::max<int64_t>(size - position, 0));
    if (length == 0) return Buffer::Empty();
    const int64_t end = position + length;
    std::shared_ptr<const void> mapping;
    {
      std::lock_guard lock(mapping_mutex_);
      if (end > mapped_length_) {
        int64_t map_length = kMinMapping;
        while (map_length < end) map_length *= 2;
        void* addr = mmap(nullptr, static_cast<size_t>(map_length), PROT_READ, MAP_SHARED, fd_, 0);
        if (addr == MAP_FAILED) return ErrnoToStatus(errno, "mmap", path());
        // Buffers handed out keep their mapping alive; munmap runs when the last one goes.
        mapping_.reset(addr, [map_length](const void* p) {
          munmap(const_cast<void*>(p), static_cast<size_t>(map_length));
        });
        mapped_length_ = map_length;
      }
      mapping = mapping_;
    }
    const auto* data = static_cast<const uint8_t*>(mapping.get()) + position;
    return std::make_shared<Buffer>(data, length, std::move(mapping));
  }

  static constexpr int64_t kMinMapping = int64_t{1} << 20;

  std::mutex mapping_mutex_;
  std::shared_ptr<const void> mapping_;  // of [0, mapped_length_); may reach past the end
  int64_t mapped_length_ = 0;
  int fd_;
};

// A file written front to back, past the page cache (O_DIRECT) where the file system allows:
// whole blocks go out from an aligned staging buffer as it fills; Sync() writes the partial
// last block zero-padded, cuts the file to its length and fdatasyncs, keeping that block staged
// so writing can go on.
class SequentialFile : public File {
 public:
  static constexpr int64_t kBlock = 4096;  // O_DIRECT alignment: any block size
  static constexpr int64_t kStageBytes = int64_t{1} << 20;

  // Opens `path` with O_DIRECT, or without it where the file system refuses it (EINVAL).
  static Result<std::unique_ptr<File>> Open(const std::string& path) {
    std::unique_ptr<uint8_t, decltype(&free)> stage(
        static_cast<uint8_t*>(std::aligned_alloc(kBlock, kStageBytes)), &free);
    if (!stage) {
      return Status::ResourceExhausted("open " + path + ": out of memory for its write buffer");
    }
    auto open_with = [&path](int flags) {
      int fd;
      do {
        fd = open(path.c_str(), flags | O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      } while (fd < 0 && errno == EINTR);
      return fd;
    };
    int fd = open_with(O_DIRECT);
    if (fd < 0 && errno == EINVAL) fd = open_with(0);
    if (fd < 0) return ErrnoToStatus(errno, "open", path);
    return std::unique_ptr<File>(new SequentialFile(path, fd, std::move(stage)));
  }
  ~SequentialFile() override { close(fd_); }

  Status WriteAt(int64_t position, std::span<const ByteSpan> pieces) override {
    if (position != flushed_ + staged_) {
      return Status::Invalid("write " + path() + " at " + std::to_string(position) +
                             ": the file is written front to back, next at " +
                             std::to_string(flushed_ + staged_));
    }
    for (ByteSpan piece : pieces) {
      while (!piece.empty()) {
        const auto n = std::min<size_t>(piece.size(), static_cast<size_t>(kStageBytes - staged_));
        std::memcpy(stage_.get() + staged_, piece.data(), n);
        staged_ += static_cast<int64_t>(n);
        piece = piece.subspan(n);
        if (staged_ == kStageBytes) RETURN_NOT_OK(FlushWholeBlocks());
      }
    }
    return Status::OK();
  }

  Result<std::shared_ptr<Buffer>> ReadAt(int64_t, int64_t) override {
    return Status::NotImplemented("read " + path() + ": opened to be written front to back");
  }

  Status Sync() override {
    RETURN_NOT_OK(FlushWholeBlocks());
    if (staged_ > 0) {
      std::memset(stage_.get() + staged_, 0, static_cast<size_t>(kBlock - staged_));
      RETURN_NOT_OK(WriteStage(kBlock));
    }
    if (ftruncate(fd_, flushed_ + staged_) != 0) return ErrnoToStatus(errno, "truncate", path());
    if (fdatasync(fd_) != 0) return ErrnoToStatus(errno, "fsync", path());
    return Status::OK();
  }

  Status Truncate(int64_t) override {
    return Status::NotImplemented("truncate " + path() + ": opened to be written front to back");
  }

  Result<int64_t> Size() override { return flushed_ + staged_; }

 private:
  // Writes the staged whole blocks at flushed_ and moves the partial rest to the front.
  Status FlushWholeBlocks() {
    const int64_t whole = staged_ / kBlock * kBlock;
    if (whole == 0) return Status::OK();
    RETURN_NOT_OK(WriteStage(whole));
    flushed_ += whole;
    staged_ -= whole;
    std::memmove(stage_.get(), stage_.get() + whole, static_cast<size_t>(staged_));
    return Status::OK();
  }

  // Writes the first `length` (a multiple of kBlock) staged bytes at flushed_.
  Status WriteStage(int64_t length) {
    int64_t done = 0;
    while (done < length) {
      ssize_t n =
          pwrite(fd_, stage_.get() + done, static_cast<size_t>(length - done), flushed_ + done);
      if (n < 0) {
        if (errno == EINTR) continue;
        // A device whose blocks are larger than kBlock, or a short write before: go on
        // through the page cache.
        if (errno == EINVAL && ClearDirect()) continue;
        return ErrnoToStatus(errno, "write", path());
      }
      if (n == 0) return Status::IOError("write " + path() + ": wrote 0 bytes");
      done += n;
    }
    return Status::OK();
  }

  SequentialFile(std::string path, int fd, std::unique_ptr<uint8_t, decltype(&free)> stage)
      : File(std::move(path)), fd_(fd), stage_(std::move(stage)) {}

  // Turns O_DIRECT off; false when it was off already or cannot be turned off.
  bool ClearDirect() {
    const int flags = fcntl(fd_, F_GETFL);
    return flags >= 0 && (flags & O_DIRECT) != 0 && fcntl(fd_, F_SETFL, flags & ~O_DIRECT) == 0;
  }

  int fd_;
  std::unique_ptr<uint8_t, decltype(&free)> stage_;
  int64_t flushed_ = 0;  // bytes written at the front of the file, whole blocks
  int64_t staged_ = 0;   // bytes after them, in stage_
};

class PosixFileLock : public FileLock {
 public:
  explicit PosixFileLock(int fd) : fd_(fd) {}
  ~PosixFileLock() override { close(fd_); }

 private:
  int fd_;
};

}  // namespace

std::shared_ptr<FileSystem> PosixFileSystem::Default() {
  static const std::shared_ptr<FileSystem> kInstance = std::make_shared<PosixFileSystem>();
  return kInstance;
}

Status PosixFileSystem::CreateDirs(const std::string& path) {
  if (path.empty()) return Status::Invalid("create directory: empty path");
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i != path.size() && path[i] != '/') continue;
    std::string prefix = path.substr(0, i);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoToStatus(errno, "create directory", prefix);
    }
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, "stat", path);
  if (!S_ISDIR(st.st_mode)) return Status::AlreadyExists(path + " exists and is not a directory");
  return Status::OK();
}

Result<std::vector<std::string>> PosixFileSystem::ListDir(const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return ErrnoToStatus(errno, "list directory", path);
  std::vector<std::string> names;
  errno = 0;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  int err = errno;
  closedir(dir);
  if (err != 0) return ErrnoToStatus(err, "list directory", path);
  return names;
}

Result<std::unique_ptr<File>> PosixFileSystem::OpenFile(const std::string& path, FileMode mode) {
  int flags = O_CLOEXEC;
  switch (mode) {
    case FileMode::kRead: flags |= O_RDONLY; break;
    case FileMode::kWrite: flags |= O_RDWR; break;
    case FileMode::kCreate:
    case FileMode::kCreatePrivate: flags |= O_RDWR | O_CREAT; break;
    case FileMode::kCreateSequential: return SequentialFile::Open(path);
  }
  const bool owner_only = mode == FileMode::kCreatePrivate;
  int fd;
  do {
    fd = open(path.c_str(), flags, owner_only ? 0600 : 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoToStatus(errno, "open", path);
  if (owner_only && fchmod(fd, 0600) != 0) {
    const int err = errno;
    close(fd);
    return ErrnoToStatus(err, "chmod 600", path);
  }
  return std::unique_ptr<File>(new PosixFile(path, fd));
}

Status PosixFileSystem::SyncDir(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "open directory", path);
  int rc = fsync(fd);
  int err = errno;
  close(fd);
  if (rc != 0) return ErrnoToStatus(err, "fsync directory", path);
  return Status::OK();
}

Status PosixFileSystem::Rename(const std::string& from, const std::string& to) {
  if (rename(from.c_str(), to.c_str()) != 0) {
    return ErrnoToStatus(errno, "rename to " + to + " from", from);
  }
  return Status::OK();
}

Status PosixFileSystem::RenameNoReplace(const std::string& from, const std::string& to) {
  if (renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) {
    return Status::OK();
  }
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) {
    return ErrnoToStatus(errno, "rename to " + to + " from", from);
  }
  // No RENAME_NOREPLACE on this file system: link(2) refuses an existing name just the same.
  if (link(from.c_str(), to.c_str()) != 0)
    return ErrnoToStatus(errno, "link to " + to + " from", from);
  return Remove(from);
}

Status PosixFileSystem::Remove(const std::string& path) {
  if (unlink(path.c_str()) != 0) return ErrnoToStatus(errno, "remove", path);
  return Status::OK();
}

Status PosixFileSystem::RemoveAll(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return ErrnoToStatus(ec.value(), "remove", path);
  return Status::OK();
}

Result<std::vector<std::string>> PosixFileSystem::ListFilesRecursively(const std::string& path) {
  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) files.push_back(it->path().string());
    if (ec) break;
  }
  if (ec) return ErrnoToStatus(ec.value(), "list directory", path);
  return files;
}

Result<std::unique_ptr<FileLock>> PosixFileSystem::LockFile(const std::string& path) {
  int fd;
  do {
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoToStatus(errno, "open", path);
  auto lock = std::make_unique<PosixFileLock>(fd);  // closes fd on every return
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return Status::AlreadyExists(path + " is locked by another holder");
    return ErrnoToStatus(errno, "lock", path);
  }
  return std::unique_ptr<FileLock>(std::move(lock));
}

Result<int64_t> PosixFileSystem::FileSize(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, "stat", path);
  return static_cast<int64_t>(st.st_size);
}

Result<std::shared_ptr<Buffer>> ReadWholeFile(FileSystem& fs, const std::string& path) {
  ASSIGN_OR_RAISE(auto file, fs.OpenFile(path, FileMode::kRead));
  ASSIGN_OR_RAISE(int64_t size, file->Size());
  ASSIGN_OR_RAISE(auto buffer, file->ReadAt(0, size));
  if (buffer->size() != size) {
    return Status::IOError("short read of " + path + ": " + std::to_string(buffer->size()) +
                           " of " + std::to_string(size) + " bytes");
  }
  return buffer;
}

Result<int64_t> PosixFileSystem::FreeSpace(const std::string& path) {
  struct statvfs st;
  if (statvfs(path.c_str(), &st) != 0) return ErrnoToStatus(errno, "statvfs", path);
  return static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_frsize);
}

Status WriteWholeFile(FileSystem& fs, const std::string& path, std::string_view content) {
  ASSIGN_OR_RAISE(auto file, fs.OpenFile(path, FileMode::kCreate));
  RETURN_NOT_OK(file->Truncate(0));
  if (!content.empty()) {
    RETURN_NOT_OK(file->WriteAt(
        0, ByteSpan(reinterpret_cast<const uint8_t*>(content.data()), content.size())));
  }
  return file->Sync();
}

Status WriteFileAtomically(FileSystem& fs, const std::string& dir, const std::string& name,
                           std::string_view content, FileMode mode) {
  const std::string tmp = JoinPath(dir, name + ".tmp");
  {
    ASSIGN_OR_RAISE(auto file, fs.OpenFile(tmp, mode));
    RETURN_NOT_OK(file->Truncate(0));
    RETURN_NOT_OK(file->WriteAt(
        0, ByteSpan(reinterpret_cast<const uint8_t*>(content.data()), content.size())));
    RETURN_NOT_OK(file->Sync());
  }
  RETURN_NOT_OK(fs.Rename(tmp, JoinPath(dir, name)));
  return fs.SyncDir(dir);
}

}  // namespace oxbow
