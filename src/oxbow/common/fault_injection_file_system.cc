#include "oxbow/common/fault_injection_file_system.h"

#include <thread>
#include <vector>

namespace oxbow {

namespace {
std::string ParentDir(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}
}  // namespace

class FaultInjectionFile : public File {
 public:
  FaultInjectionFile(FaultInjectionFileSystem* fs, std::unique_ptr<File> base, int64_t generation)
      : File(base->path()), fs_(fs), base_(std::move(base)), generation_(generation) {}

  Status WriteAt(int64_t position, std::span<const ByteSpan> pieces) override {
    RETURN_NOT_OK(CheckAlive());
    int64_t total = 0;
    for (const ByteSpan& p : pieces) total += static_cast<int64_t>(p.size());
    int64_t partial = 0;
    Status fault = fs_->TakeWriteFault(path(), &partial);
    {
      std::lock_guard lock(fs_->mutex_);
      fs_->counters_.writes++;
      fs_->counters_.bytes_written += fault.ok() ? total : std::min(partial, total);
    }
    if (fault.ok()) return base_->WriteAt(position, pieces);
    std::vector<ByteSpan> prefix;
    for (const ByteSpan& p : pieces) {
      if (partial <= 0) break;
      size_t n = std::min<size_t>(p.size(), static_cast<size_t>(partial));
      prefix.push_back(p.first(n));
      partial -= static_cast<int64_t>(n);
    }
    if (!prefix.empty()) RETURN_NOT_OK(base_->WriteAt(position, prefix));
    return fault;
  }

  Result<std::shared_ptr<Buffer>> ReadAt(int64_t position, int64_t length) override {
    RETURN_NOT_OK(CheckAlive());
    ASSIGN_OR_RAISE(auto buffer, base_->ReadAt(position, length));
    std::lock_guard lock(fs_->mutex_);
    fs_->counters_.reads++;
    fs_->counters_.bytes_read += buffer->size();
    return buffer;
  }

  Status Sync() override {
    RETURN_NOT_OK(CheckAlive());
    RETURN_NOT_OK(fs_->TakeSyncFault(path()));
    RETURN_NOT_OK(base_->Sync());
    ASSIGN_OR_RAISE(int64_t size, base_->Size());
    std::lock_guard lock(fs_->mutex_);
    fs_->files_[path()].synced_size = size;
    return Status::OK();
  }

  Status Truncate(int64_t size) override {
    RETURN_NOT_OK(CheckAlive());
    RETURN_NOT_OK(base_->Truncate(size));
    std::lock_guard lock(fs_->mutex_);
    auto& state = fs_->files_[path()];
    state.synced_size = std::min(state.synced_size, size);
    return Status::OK();
  }

  Result<int64_t> Size() override {
    RETURN_NOT_OK(CheckAlive());
    return base_->Size();
  }

 private:
  Status CheckAlive() {
    std::lock_guard lock(fs_->mutex_);
    if (fs_->down_) return Status::IOError(path() + ": the file system crashed");
    if (generation_ != fs_->generation_) {
      return Status::IOError(path() + ": file handle opened before the simulated crash");
    }
    return Status::OK();
  }

  FaultInjectionFileSystem* fs_;
  std::unique_ptr<File> base_;
  int64_t generation_;
};

FaultInjectionFileSystem::FaultInjectionFileSystem(std::shared_ptr<FileSystem> base)
    : base_(std::move(base)) {}

void FaultInjectionFileSystem::FailWrites(Status error, int64_t partial_bytes, int count,
                                          std::string path_contains) {
  std::lock_guard lock(mutex_);
  write_fault_ = {std::move(error), partial_bytes, count, std::move(path_contains)};
}

void FaultInjectionFileSystem::FailSyncs(Status error, int count) {
  std::lock_guard lock(mutex_);
  sync_error_ = std::move(error);
  sync_fault_count_ = count;
}

void FaultInjectionFileSystem::FailRemovals(Status error, int count, std::string path_contains) {
  std::lock_guard lock(mutex_);
  remove_fault_ = {std::move(error), count, std::move(path_contains)};
}

void FaultInjectionFileSystem::SetSyncDelay(std::chrono::microseconds delay,
                                            std::string path_contains) {
  std::lock_guard lock(mutex_);
  sync_delay_ = delay;
  sync_delay_path_contains_ = std::move(path_contains);
}

void FaultInjectionFileSystem::ClearFaults() {
  std::lock_guard lock(mutex_);
  write_fault_ = {};
  remove_fault_ = {};
  sync_error_ = Status::OK();
  sync_fault_count_ = 0;
}

Status FaultInjectionFileSystem::TakeWriteFault(const std::string& path, int64_t* partial_bytes) {
  std::lock_guard lock(mutex_);
  if (write_fault_.error.ok() || write_fault_.count == 0) return Status::OK();
  if (path.find(write_fault_.path_contains) == std::string::npos) return Status::OK();
  if (write_fault_.count > 0) write_fault_.count--;
  *partial_bytes = write_fault_.partial_bytes;
  return write_fault_.error;
}

Status FaultInjectionFileSystem::TakeRemoveFault(const std::string& path) {
  std::lock_guard lock(mutex_);
  if (remove_fault_.error.ok() || remove_fault_.count == 0) return Status::OK();
  if (path.find(remove_fault_.path_contains) == std::string::npos) return Status::OK();
  if (remove_fault_.count > 0) remove_fault_.count--;
  return remove_fault_.error;
}

Status FaultInjectionFileSystem::TakeSyncFault(const std::string& path) {
  std::chrono::microseconds delay{0};
  {
    std::lock_guard lock(mutex_);
    counters_.file_syncs++;
    if (!sync_error_.ok() && sync_fault_count_ != 0) {
      if (sync_fault_count_ > 0) sync_fault_count_--;
      return sync_error_;
    }
    if (path.find(sync_delay_path_contains_) != std::string::npos) delay = sync_delay_;
  }
  if (delay.count() > 0) std::this_thread::sleep_for(delay);
  return Status::OK();
}

Status FaultInjectionFileSystem::CheckUp() const {
  std::lock_guard lock(mutex_);
  if (down_) return Status::IOError("the file system crashed");
  return Status::OK();
}

void FaultInjectionFileSystem::Reboot() {
  std::lock_guard lock(mutex_);
  down_ = false;
}

Status FaultInjectionFileSystem::Crash() {
  std::lock_guard lock(mutex_);
  generation_++;
  down_ = true;
  for (auto it = files_.begin(); it != files_.end();) {
    const std::string& path = it->first;
    if (!it->second.durable_entry) {
      Status st = base_->Remove(path);
      if (!st.ok() && !st.IsNotFound()) return st;
      it = files_.erase(it);
      continue;
    }
    auto file = base_->OpenFile(path, FileMode::kWrite);
    if (file.ok()) {
      ASSIGN_OR_RAISE(int64_t size, (*file)->Size());
      if (size > it->second.synced_size) RETURN_NOT_OK((*file)->Truncate(it->second.synced_size));
    } else if (!file.status().IsNotFound()) {
      return file.status();
    }
    ++it;
  }
  return Status::OK();
}

FaultInjectionFileSystem::Counters FaultInjectionFileSystem::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

void FaultInjectionFileSystem::ResetCounters() {
  std::lock_guard lock(mutex_);
  counters_ = {};
}

Status FaultInjectionFileSystem::CreateDirs(const std::string& path) {
  RETURN_NOT_OK(CheckUp());
  return base_->CreateDirs(path);
}

Result<std::vector<std::string>> FaultInjectionFileSystem::ListDir(const std::string& path) {
  RETURN_NOT_OK(CheckUp());
  return base_->ListDir(path);
}

Result<std::unique_ptr<File>> FaultInjectionFileSystem::OpenFile(const std::string& path,
                                                                 FileMode mode) {
  RETURN_NOT_OK(CheckUp());
  bool existed = true;
  if (mode == FileMode::kCreate || mode == FileMode::kCreatePrivate ||
      mode == FileMode::kCreateSequential) {
    auto size = base_->FileSize(path);
    if (!size.ok() && !size.status().IsNotFound()) return size.status();
    existed = size.ok();
  }
  ASSIGN_OR_RAISE(auto file, base_->OpenFile(path, mode));
  std::lock_guard lock(mutex_);
  if (!files_.count(path)) {
    FileState state;
    if (existed) {
      ASSIGN_OR_RAISE(state.synced_size, file->Size());
    } else {
      state.durable_entry = false;
    }
    files_[path] = state;
  } else if (mode == FileMode::kCreateSequential) {
    files_[path].synced_size = 0;  // opening emptied it
  }
  return std::unique_ptr<File>(new FaultInjectionFile(this, std::move(file), generation_));
}

Status FaultInjectionFileSystem::SyncDir(const std::string& path) {
  RETURN_NOT_OK(CheckUp());
  {
    std::lock_guard lock(mutex_);
    counters_.dir_syncs++;
  }
  RETURN_NOT_OK(base_->SyncDir(path));
  std::lock_guard lock(mutex_);
  std::string dir = path;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  for (auto& [file_path, state] : files_) {
    if (ParentDir(file_path) == dir) state.durable_entry = true;
  }
  return Status::OK();
}

Status FaultInjectionFileSystem::Rename(const std::string& from, const std::string& to) {
  RETURN_NOT_OK(CheckUp());
  RETURN_NOT_OK(base_->Rename(from, to));
  Renamed(from, to);
  return Status::OK();
}

Status FaultInjectionFileSystem::RenameNoReplace(const std::string& from, const std::string& to) {
  RETURN_NOT_OK(CheckUp());
  RETURN_NOT_OK(base_->RenameNoReplace(from, to));
  Renamed(from, to);
  return Status::OK();
}

void FaultInjectionFileSystem::Renamed(const std::string& from, const std::string& to) {
  std::lock_guard lock(mutex_);
  auto it = files_.find(from);
  if (it != files_.end()) {
    FileState state = it->second;
    state.durable_entry = true;
    files_.erase(it);
    files_[to] = state;
  } else {
    files_.erase(to);
  }
}

Status FaultInjectionFileSystem::Remove(const std::string& path) {
  RETURN_NOT_OK(CheckUp());
  RETURN_NOT_OK(TakeRemoveFault(path));
  RETURN_NOT_OK(base_->Remove(path));
  std::lock_guard lock(mutex_);
  files_.erase(path);
  return Status::OK();
}

Status FaultInjectionFileSystem::RemoveAll(const std::string& path) {
  RETURN_NOT_OK(CheckUp());
  RETURN_NOT_OK(TakeRemoveFault(path));
  RETURN_NOT_OK(base_->RemoveAll(path));
  std::lock_guard lock(mutex_);
  const std::string below = path + "/";
  std::erase_if(files_, [&](const auto& entry) {
    return entry.first == path || entry.first.rfind(below, 0) == 0;
  });
  return Status::OK();
}

Result<std::vector<std::string>> FaultInjectionFileSystem::ListFilesRecursively(
    const std::string& path) {
  RETURN_NOT_OK(CheckUp());
  return base_->ListFilesRecursively(path);
}

Result<std::unique_ptr<FileLock>> FaultInjectionFileSystem::LockFile(const std::string& path) {
  RETURN_NOT_OK(CheckUp());
  return base_->LockFile(path);
}

Result<int64_t> FaultInjectionFileSystem::FileSize(const std::string& path) {
  RETURN_NOT_OK(CheckUp());
  return base_->FileSize(path);
}

Result<int64_t> FaultInjectionFileSystem::FreeSpace(const std::string& path) {
  RETURN_NOT_OK(CheckUp());
  return base_->FreeSpace(path);
}

}  // namespace oxbow
