// FaultInjectionFileSystem: wraps a real FileSystem for tests. It injects short writes, write
// errors (e.g. disk full), fsync failures and failed removals, counts operations, and simulates
// a crash by dropping everything that was not made durable.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "oxbow/common/file_system.h"

namespace oxbow {

class FaultInjectionFileSystem : public FileSystem {
 public:
  struct Counters {
    int64_t file_syncs = 0;  // File::Sync calls, including failed ones
    int64_t dir_syncs = 0;
    int64_t writes = 0;  // WriteAt calls
    int64_t bytes_written = 0;
    int64_t reads = 0;  // ReadAt calls
    int64_t bytes_read = 0;
  };

  explicit FaultInjectionFileSystem(std::shared_ptr<FileSystem> base);

  // The next `count` writes (-1: all, until ClearFaults) to paths containing `path_contains`
  // write at most `partial_bytes` and then fail with `error`.
  void FailWrites(Status error, int64_t partial_bytes = 0, int count = -1,
                  std::string path_contains = "");
  // The next `count` File::Sync calls (-1: all) fail with `error` and sync nothing.
  void FailSyncs(Status error, int count = -1);
  // The next `count` Remove and RemoveAll calls (-1: all) on paths containing `path_contains`
  // fail with `error` and remove nothing.
  void FailRemovals(Status error, int count = -1, std::string path_contains = "");
  // Every File::Sync of a path containing `path_contains` takes at least this long (to make
  // group commit observable, or to hold a writer mid-file).
  void SetSyncDelay(std::chrono::microseconds delay, std::string path_contains = "");
  void ClearFaults();

  // Simulates power loss: every file written through this object is cut back to the length
  // it had at its last Sync, and files created since their directory's last SyncDir
  // disappear. Renames count as durable. Until Reboot(), every operation fails (so code
  // still running cannot write), and handles opened before the crash fail forever.
  Status Crash();
  void Reboot();

  Counters counters() const;
  void ResetCounters();

  Status CreateDirs(const std::string& path) override;
  Result<std::vector<std::string>> ListDir(const std::string& path) override;
  Result<std::unique_ptr<File>> OpenFile(const std::string& path, FileMode mode) override;
  Status SyncDir(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status RenameNoReplace(const std::string& from, const std::string& to) override;
  Status Remove(const std::string& path) override;
  Status RemoveAll(const std::string& path) override;
  Result<std::vector<std::string>> ListFilesRecursively(const std::string& path) override;
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override;
  Result<int64_t> FileSize(const std::string& path) override;
  Result<int64_t> FreeSpace(const std::string& path) override;

 private:
  friend class FaultInjectionFile;

  struct FileState {
    int64_t synced_size = 0;
    bool durable_entry = true;  // false until the parent directory is synced after creation
  };
  struct WriteFault {
    Status error;
    int64_t partial_bytes = 0;
    int count = 0;
    std::string path_contains;
  };
  struct RemoveFault {
    Status error;
    int count = 0;
    std::string path_contains;
  };

  Status CheckUp() const;
  // Returns the fault to apply to a write to `path`, or OK.
  Status TakeWriteFault(const std::string& path, int64_t* partial_bytes);
  Status TakeSyncFault(const std::string& path);
  Status TakeRemoveFault(const std::string& path);
  // Bookkeeping after `from` became `to`.
  void Renamed(const std::string& from, const std::string& to);

  std::shared_ptr<FileSystem> base_;
  mutable std::mutex mutex_;
  std::map<std::string, FileState> files_;
  WriteFault write_fault_;
  RemoveFault remove_fault_;
  Status sync_error_;
  int sync_fault_count_ = 0;
  std::chrono::microseconds sync_delay_{0};
  std::string sync_delay_path_contains_;
  int64_t generation_ = 0;
  bool down_ = false;
  Counters counters_;
};

}  // namespace oxbow
