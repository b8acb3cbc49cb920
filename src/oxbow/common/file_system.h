// FileSystem: the one seam under every module's file I/O (the data dir's lock, the catalog,
// the logs, the lake's Parquet data and Iceberg metadata, compaction, drops, and the CLI's
// files), so tests can inject faults and an object store can slot in.
//
// PosixFileSystem is the real one; every errno it meets is translated into a Status in one
// place (ENOSPC -> ResourceExhausted "disk full: <path>", ENOENT -> NotFound, else IOError
// with strerror and the path).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "oxbow/common/buffer.h"
#include "oxbow/common/status.h"

namespace oxbow {

using ByteSpan = std::span<const uint8_t>;

enum class FileMode {
  kRead,    // read only; the file must exist
  kWrite,   // read and write; the file must exist
  kCreate,  // read and write; created empty when absent
  // As kCreate, and readable and writable by the owner only (0600; made so when the file
  // exists): credentials and secrets. Object stores treat it as kCreate.
  kCreatePrivate,
  // Write only, created empty (emptied when present), written front to back and synced once
  // whole: a file written once for others to read (Parquet data files). POSIX writes it past
  // the page cache (O_DIRECT) where the file system allows, sparing the copy into page-cache
  // pages that costs more CPU than encoding the file. Reads and truncation are refused.
  kCreateSequential,
};

// An open file. Positional reads and writes are safe from several threads at once.
class File {
 public:
  virtual ~File() = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const std::string& path() const { return path_; }

  // Writes the pieces back to back starting at `position` (one pwritev where possible).
  // Partial writes are continued; on error an unknown prefix may have been written.
  virtual Status WriteAt(int64_t position, std::span<const ByteSpan> pieces) = 0;
  Status WriteAt(int64_t position, ByteSpan bytes) { return WriteAt(position, {&bytes, 1}); }

  // Reads up to `length` bytes at `position`; fewer only at end of file. The Buffer either
  // maps the file (large reads) or owns a 64-byte aligned copy; either way data written
  // before the call is visible, and the Buffer stays valid after the file is closed,
  // truncated beyond the range, or removed.
  virtual Result<std::shared_ptr<Buffer>> ReadAt(int64_t position, int64_t length) = 0;

  // Makes the file's data durable (fdatasync).
  virtual Status Sync() = 0;
  virtual Status Truncate(int64_t size) = 0;
  virtual Result<int64_t> Size() = 0;

 protected:
  explicit File(std::string path) : path_(std::move(path)) {}

 private:
  std::string path_;
};

// An exclusive lock on a file, held until this object is destroyed.
class FileLock {
 public:
  virtual ~FileLock() = default;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 protected:
  FileLock() = default;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Creates `path` and any missing parents (like mkdir -p).
  virtual Status CreateDirs(const std::string& path) = 0;
  // Names (not paths) of the entries of a directory, without "." and "..", unsorted.
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) = 0;
  virtual Result<std::unique_ptr<File>> OpenFile(const std::string& path, FileMode mode) = 0;
  // Makes the directory's entries (creations, renames, removals) durable.
  virtual Status SyncDir(const std::string& path) = 0;
  // Atomically replaces `to` with `from`.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // Atomically moves `from` to `to` unless `to` exists: then AlreadyExists, and `from` stays.
  virtual Status RenameNoReplace(const std::string& from, const std::string& to) = 0;
  virtual Status Remove(const std::string& path) = 0;
  // Removes `path` and, when it is a directory, everything below it. A missing path is OK.
  virtual Status RemoveAll(const std::string& path) = 0;
  // Paths of the regular files anywhere below the directory `path`, unsorted.
  virtual Result<std::vector<std::string>> ListFilesRecursively(const std::string& path) = 0;
  // Takes an exclusive lock on `path` (created when absent) without waiting: AlreadyExists
  // when another holder (e.g. another process) has it.
  virtual Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) = 0;
  virtual Result<int64_t> FileSize(const std::string& path) = 0;
  // Bytes available to an unprivileged writer on the file system holding `path`.
  virtual Result<int64_t> FreeSpace(const std::string& path) = 0;
};

class PosixFileSystem : public FileSystem {
 public:
  // Reads at least this long are slices of one read-only mapping per open file (mapped once,
  // remapped when the file grows past it) instead of a pread into a heap buffer.
  static constexpr int64_t kMmapThreshold = 64 * 1024;

  // A process-wide instance.
  static std::shared_ptr<FileSystem> Default();

  Status CreateDirs(const std::string& path) override;
  Result<std::vector<std::string>> ListDir(const std::string& path) override;
  Result<std::unique_ptr<File>> OpenFile(const std::string& path, FileMode mode) override;
  Status SyncDir(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  // renameat2(RENAME_NOREPLACE), or link(2) + unlink where the file system lacks it.
  Status RenameNoReplace(const std::string& from, const std::string& to) override;
  Status Remove(const std::string& path) override;
  Status RemoveAll(const std::string& path) override;
  Result<std::vector<std::string>> ListFilesRecursively(const std::string& path) override;
  // flock(LOCK_EX | LOCK_NB): released when the lock's descriptor closes, or the process dies.
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;
  Result<int64_t> FileSize(const std::string& path) override;
  Result<int64_t> FreeSpace(const std::string& path) override;
};

// Reads all of `path`. Large files come back as a mapping (see PosixFileSystem), not a copy.
Result<std::shared_ptr<Buffer>> ReadWholeFile(FileSystem& fs, const std::string& path);

// The one place errno becomes a Status: `what` names the operation ("open", "fsync", ...).
Status ErrnoToStatus(int errnum, std::string_view what, const std::string& path);

// Durably replaces dir/name with `content`: writes and syncs dir/name.tmp (opened with
// `mode`, kCreate or kCreatePrivate), renames it over dir/name, then syncs the directory.
Status WriteFileAtomically(FileSystem& fs, const std::string& dir, const std::string& name,
                           std::string_view content, FileMode mode = FileMode::kCreate);

// Replaces `path` with `content` in one write, synced: on an object store one PUT (atomic); a
// local file may be torn by a crash (WriteFileAtomically is not), so its readers must check it.
Status WriteWholeFile(FileSystem& fs, const std::string& path, std::string_view content);

// Joins two path components with a single '/'.
std::string JoinPath(const std::string& dir, const std::string& name);

}  // namespace oxbow
