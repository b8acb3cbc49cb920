#include "oxbow/common/file_system.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "oxbow/common/fault_injection_file_system.h"

namespace oxbow {
namespace {

class TempDir {
 public:
  explicit TempDir(const std::filesystem::path& parent = std::filesystem::temp_directory_path()) {
    std::string tmpl = (parent / "oxbow_fs_XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

ByteSpan Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(FileSystemTest, ErrnoTranslation) {
  Status full = ErrnoToStatus(ENOSPC, "write", "/d/f");
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(full.message(), "disk full: /d/f");
  EXPECT_TRUE(ErrnoToStatus(ENOENT, "open", "/d/f").IsNotFound());
  Status io = ErrnoToStatus(EIO, "fsync", "/d/f");
  EXPECT_TRUE(io.IsIOError());
  EXPECT_NE(io.message().find("fsync /d/f"), std::string::npos);
}

TEST(FileSystemTest, WriteReadTruncateAndList) {
  TempDir tmp;
  auto fs = PosixFileSystem::Default();
  std::string dir = JoinPath(tmp.path(), "a/b");
  ASSERT_TRUE(fs->CreateDirs(dir).ok());
  ASSERT_TRUE(fs->CreateDirs(dir).ok());  // idempotent
  std::string path = JoinPath(dir, "f");
  EXPECT_TRUE(fs->OpenFile(path, FileMode::kRead).status().IsNotFound());

  auto file = fs->OpenFile(path, FileMode::kCreate).ValueOrDie();
  ByteSpan pieces[] = {Bytes("hello "), Bytes(""), Bytes("world")};
  ASSERT_TRUE(file->WriteAt(0, pieces).ok());
  ASSERT_TRUE(file->Sync().ok());
  EXPECT_EQ(file->Size().ValueOrDie(), 11);
  auto buf = file->ReadAt(6, 100).ValueOrDie();
  EXPECT_EQ(buf->view(), "world");  // clamped at end of file
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buf->data()) % 64, 0u);

  // Appended data is visible to later reads, both pread and mmap.
  std::string big(PosixFileSystem::kMmapThreshold * 2, 'x');
  big[1000] = 'y';
  ASSERT_TRUE(file->WriteAt(11, Bytes(big)).ok());
  auto mapped = file->ReadAt(11, static_cast<int64_t>(big.size())).ValueOrDie();
  ASSERT_EQ(mapped->size(), static_cast<int64_t>(big.size()));
  EXPECT_EQ(mapped->data()[1000], 'y');
  auto unaligned = file->ReadAt(13, PosixFileSystem::kMmapThreshold).ValueOrDie();
  EXPECT_EQ(unaligned->data()[998], 'y');

  file.reset();
  EXPECT_EQ(mapped->data()[1000], 'y');  // a mapping outlives its file handle
  mapped.reset();
  unaligned.reset();
  file = fs->OpenFile(path, FileMode::kWrite).ValueOrDie();
  ASSERT_TRUE(file->Truncate(5).ok());
  EXPECT_EQ(fs->FileSize(path).ValueOrDie(), 5);
  file.reset();

  ASSERT_TRUE(fs->Rename(path, JoinPath(dir, "g")).ok());
  ASSERT_TRUE(fs->SyncDir(dir).ok());
  auto names = fs->ListDir(dir).ValueOrDie();
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0], "g");
  ASSERT_TRUE(fs->Remove(JoinPath(dir, "g")).ok());
  EXPECT_TRUE(fs->Remove(JoinPath(dir, "g")).IsNotFound());
  EXPECT_GT(fs->FreeSpace(dir).ValueOrDie(), 0);
}

TEST(FileSystemTest, WritesManyPieces) {
  TempDir tmp;
  auto file = PosixFileSystem::Default()
                  ->OpenFile(JoinPath(tmp.path(), "f"), FileMode::kCreate)
                  .ValueOrDie();
  std::string data(5000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i % 251);
  std::vector<ByteSpan> pieces;  // more than IOV_MAX pieces
  for (size_t i = 0; i < data.size(); ++i) pieces.push_back(Bytes(data).subspan(i, 1));
  ASSERT_TRUE(file->WriteAt(0, pieces).ok());
  EXPECT_EQ(file->ReadAt(0, 5000).ValueOrDie()->view(), data);
}

Status WriteFile(FileSystem& fs, const std::string& path, std::string_view text) {
  ASSIGN_OR_RAISE(auto file, fs.OpenFile(path, FileMode::kCreate));
  return file->WriteAt(0, Bytes(text));
}

// Writes `data` in pieces of irregular sizes (some larger than the staging buffer), syncing
// at irregular points, and checks what a reader sees after each sync.
void CheckSequentialFile(const std::string& dir) {
  auto fs = PosixFileSystem::Default();
  const std::string path = JoinPath(dir, "seq");
  ASSERT_TRUE(WriteFile(*fs, path, std::string(9000, 'z')).ok());  // emptied on open
  auto file = fs->OpenFile(path, FileMode::kCreateSequential).ValueOrDie();
  EXPECT_EQ(fs->FileSize(path).ValueOrDie(), 0);
  std::string data(3 * 1024 * 1024 + 777, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 7919) % 251);
  const size_t sizes[] = {1, 4095, 4096, 3000, 1 << 20, 5, (1 << 21) + 13};
  const size_t sync_after[] = {1, 4, 6};
  size_t at = 0, step = 0;
  while (at < data.size()) {
    const size_t n = std::min(sizes[step % std::size(sizes)], data.size() - at);
    ByteSpan piece = Bytes(data).subspan(at, n);
    ASSERT_TRUE(file->WriteAt(static_cast<int64_t>(at), {&piece, 1}).ok()) << at;
    at += n;
    EXPECT_EQ(file->Size().ValueOrDie(), static_cast<int64_t>(at));
    if (std::find(std::begin(sync_after), std::end(sync_after), step) != std::end(sync_after)) {
      ASSERT_TRUE(file->Sync().ok());
      EXPECT_EQ(ReadWholeFile(*fs, path).ValueOrDie()->view(), data.substr(0, at)) << at;
    }
    ++step;
  }
  ASSERT_TRUE(file->Sync().ok());
  EXPECT_EQ(ReadWholeFile(*fs, path).ValueOrDie()->view(), data);

  Status rewrite = file->WriteAt(0, Bytes("x"));
  EXPECT_TRUE(rewrite.IsInvalid());
  EXPECT_NE(rewrite.message().find("written front to back, next at 3146505"), std::string::npos)
      << rewrite.message();
  EXPECT_EQ(file->ReadAt(0, 1).status().code(), StatusCode::kNotImplemented);
  EXPECT_EQ(file->Truncate(0).code(), StatusCode::kNotImplemented);
}

TEST(FileSystemTest, SequentialFilesOnDisk) {
  TempDir tmp;
  CheckSequentialFile(tmp.path());
}

TEST(FileSystemTest, SequentialFilesOnTmpfs) {
  if (!std::filesystem::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm (tmpfs)";
  TempDir tmp("/dev/shm");
  CheckSequentialFile(tmp.path());
}

// The calls every FileSystem must honour alike, run against POSIX and the fault injector.
void CheckTreeCalls(FileSystem& fs, const std::string& root) {
  const std::string x = JoinPath(root, "x"), y = JoinPath(root, "y");
  ASSERT_TRUE(WriteFile(fs, x, "x").ok());
  ASSERT_TRUE(WriteFile(fs, y, "y").ok());
  EXPECT_EQ(fs.RenameNoReplace(x, y).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(ReadWholeFile(fs, y).ValueOrDie()->view(), "y");
  EXPECT_EQ(ReadWholeFile(fs, x).ValueOrDie()->view(), "x");  // `from` stays
  ASSERT_TRUE(fs.Remove(y).ok());
  ASSERT_TRUE(fs.RenameNoReplace(x, y).ok());
  EXPECT_EQ(ReadWholeFile(fs, y).ValueOrDie()->view(), "x");
  EXPECT_TRUE(fs.FileSize(x).status().IsNotFound());

  const std::string tree = JoinPath(root, "tree");
  ASSERT_TRUE(fs.CreateDirs(JoinPath(tree, "a/b")).ok());
  ASSERT_TRUE(fs.CreateDirs(JoinPath(tree, "empty")).ok());
  ASSERT_TRUE(WriteFile(fs, JoinPath(tree, "top"), "1").ok());
  ASSERT_TRUE(WriteFile(fs, JoinPath(tree, "a/b/deep"), "2").ok());
  auto files = fs.ListFilesRecursively(tree).ValueOrDie();
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{JoinPath(tree, "a/b/deep"), JoinPath(tree, "top")}));
  EXPECT_TRUE(fs.ListFilesRecursively(JoinPath(root, "missing")).status().IsNotFound());

  ASSERT_TRUE(fs.RemoveAll(tree).ok());
  EXPECT_TRUE(fs.ListDir(tree).status().IsNotFound());
  EXPECT_TRUE(fs.RemoveAll(tree).ok());  // already gone
  ASSERT_TRUE(fs.RemoveAll(y).ok());     // a plain file
  EXPECT_TRUE(fs.FileSize(y).status().IsNotFound());

  const std::string lock_path = JoinPath(root, "LOCK");
  auto lock = fs.LockFile(lock_path);
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  EXPECT_EQ(fs.LockFile(lock_path).status().code(), StatusCode::kAlreadyExists);
  lock->reset();  // released
  EXPECT_TRUE(fs.LockFile(lock_path).ok());
}

TEST(FileSystemTest, TreeCallsOnPosix) {
  TempDir tmp;
  CheckTreeCalls(*PosixFileSystem::Default(), tmp.path());
}

TEST(FaultInjectionFileSystemTest, TreeCallsDelegate) {
  TempDir tmp;
  FaultInjectionFileSystem fs(PosixFileSystem::Default());
  CheckTreeCalls(fs, tmp.path());
}

TEST(FaultInjectionFileSystemTest, InjectsRemovalFaults) {
  TempDir tmp;
  FaultInjectionFileSystem fs(PosixFileSystem::Default());
  const std::string dir = JoinPath(tmp.path(), "victim");
  ASSERT_TRUE(fs.CreateDirs(dir).ok());
  ASSERT_TRUE(WriteFile(fs, JoinPath(dir, "f"), "f").ok());
  fs.FailRemovals(Status::IOError("injected"), /*count=*/1, "victim");
  EXPECT_TRUE(fs.RemoveAll(dir).IsIOError());
  EXPECT_TRUE(fs.FileSize(JoinPath(dir, "f")).ok());  // nothing removed
  ASSERT_TRUE(fs.RemoveAll(dir).ok());                // the fault was used up
  EXPECT_TRUE(fs.ListDir(dir).status().IsNotFound());
}

TEST(FaultInjectionFileSystemTest, RemovedTreeIsForgottenByCrash) {
  TempDir tmp;
  FaultInjectionFileSystem fs(PosixFileSystem::Default());
  const std::string dir = JoinPath(tmp.path(), "d");
  ASSERT_TRUE(fs.CreateDirs(dir).ok());
  ASSERT_TRUE(WriteFile(fs, JoinPath(dir, "f"), "unsynced").ok());
  ASSERT_TRUE(fs.RemoveAll(dir).ok());
  EXPECT_TRUE(fs.Crash().ok());  // would fail if it tried to cut back the removed file
  fs.Reboot();
  EXPECT_TRUE(fs.ListDir(dir).status().IsNotFound());
}

TEST(FaultInjectionFileSystemTest, CrashDropsUnsyncedDataAndFiles) {
  TempDir tmp;
  auto fs = std::make_shared<FaultInjectionFileSystem>(PosixFileSystem::Default());
  std::string synced = JoinPath(tmp.path(), "synced");
  std::string unsynced_entry = JoinPath(tmp.path(), "new");
  auto a = fs->OpenFile(synced, FileMode::kCreate).ValueOrDie();
  ASSERT_TRUE(a->WriteAt(0, Bytes("durable")).ok());
  ASSERT_TRUE(a->Sync().ok());
  ASSERT_TRUE(fs->SyncDir(tmp.path()).ok());
  ASSERT_TRUE(a->WriteAt(7, Bytes(" lost")).ok());
  auto b = fs->OpenFile(unsynced_entry, FileMode::kCreate).ValueOrDie();
  ASSERT_TRUE(b->WriteAt(0, Bytes("x")).ok());
  ASSERT_TRUE(b->Sync().ok());  // data synced, but the directory entry never was

  ASSERT_TRUE(fs->Crash().ok());
  EXPECT_TRUE(fs->OpenFile(synced, FileMode::kRead).status().IsIOError());  // down until reboot
  fs->Reboot();
  EXPECT_TRUE(a->Sync().IsIOError());  // old handles are dead
  EXPECT_EQ(fs->FileSize(synced).ValueOrDie(), 7);
  EXPECT_TRUE(fs->FileSize(unsynced_entry).status().IsNotFound());
  EXPECT_EQ(fs->counters().file_syncs, 2);
  EXPECT_EQ(fs->counters().dir_syncs, 1);
}

TEST(FaultInjectionFileSystemTest, InjectsWriteAndSyncFaults) {
  TempDir tmp;
  auto fs = std::make_shared<FaultInjectionFileSystem>(PosixFileSystem::Default());
  auto f = fs->OpenFile(JoinPath(tmp.path(), "f"), FileMode::kCreate).ValueOrDie();
  fs->FailWrites(Status::ResourceExhausted("disk full: f"), 3, 1);
  ByteSpan pieces[] = {Bytes("ab"), Bytes("cdef")};
  Status st = f->WriteAt(0, pieces);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(f->ReadAt(0, 10).ValueOrDie()->view(), "abc");  // a short write happened
  ASSERT_TRUE(f->WriteAt(0, pieces).ok());                  // the fault was used up

  fs->FailSyncs(Status::IOError("fsync f: Input/output error"));
  EXPECT_TRUE(f->Sync().IsIOError());
  fs->ClearFaults();
  ASSERT_TRUE(f->Sync().ok());
  auto c = fs->counters();
  EXPECT_EQ(c.writes, 2);
  EXPECT_EQ(c.bytes_written, 3 + 6);
  EXPECT_EQ(c.reads, 1);
  EXPECT_EQ(c.bytes_read, 3);
}

}  // namespace
}  // namespace oxbow
