#include "oxbow/log/cold_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "oxbow/common/fault_injection_file_system.h"

namespace oxbow::log {
namespace {

constexpr int64_t kBlock = 1024;

class ColdReadCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/oxbow_cold_cache_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    fs_ = std::make_shared<FaultInjectionFileSystem>(PosixFileSystem::Default());
    for (const char* name : {"a", "b"}) {
      std::string bytes(10 * kBlock, '\0');
      for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + name[0]);
      ASSERT_TRUE(WriteFileAtomically(*fs_, dir_, name, bytes).ok());
      content_[name] = bytes;
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<File> Open(ColdReadCache& cache, const std::string& name) {
    return cache.Open(fs_, JoinPath(dir_, name), static_cast<int64_t>(content_[name].size()));
  }
  void ExpectRead(File& file, const std::string& name, int64_t position, int64_t length) {
    auto read = file.ReadAt(position, length);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    EXPECT_EQ(std::string_view(reinterpret_cast<const char*>((*read)->data()), (*read)->size()),
              std::string_view(content_[name]).substr(position, length));
  }
  int64_t Reads() const { return fs_->counters().reads; }
  static void WaitForPrefetched(const ColdReadCache& cache, int64_t blocks) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (cache.figures().prefetched < blocks) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the read-ahead never ran";
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  std::string dir_;
  std::shared_ptr<FaultInjectionFileSystem> fs_;
  std::map<std::string, std::string> content_;
};

TEST_F(ColdReadCacheTest, AMissFetchesTheReadAheadWindowInOneRead) {
  ColdReadCache cache(64 * kBlock, kBlock);  // read-ahead: 16 blocks, more than an object
  EXPECT_EQ(cache.read_ahead_bytes(), 16 * kBlock);
  auto a = Open(cache, "a");
  ExpectRead(*a, "a", 100, 50);
  EXPECT_EQ(Reads(), 1);  // the whole object
  ExpectRead(*a, "a", 3000, 6000);
  ExpectRead(*a, "a", 9 * kBlock, kBlock);
  EXPECT_EQ(Reads(), 1);
  EXPECT_EQ(cache.figures().misses, 1);
  EXPECT_GT(cache.figures().hits, 0);
}

TEST_F(ColdReadCacheTest, BlocksAreViewsOfTheFetchCountedOnce) {
  ColdReadCache cache(64 * kBlock, kBlock);
  auto a = Open(cache, "a");
  ExpectRead(*a, "a", 10, 6000);  // one fetch of the whole object, 10 blocks
  EXPECT_EQ(cache.figures().bytes, 10 * kBlock);
  // Reads within one block and across blocks of that fetch point into its buffer: no copies.
  auto whole = a->ReadAt(0, 10 * kBlock);
  auto span = a->ReadAt(3000, 6000);
  auto inner = a->ReadAt(5 * kBlock + 7, 100);
  ASSERT_TRUE(whole.ok() && span.ok() && inner.ok());
  EXPECT_EQ((*span)->data(), (*whole)->data() + 3000);
  EXPECT_EQ((*inner)->data(), (*whole)->data() + 5 * kBlock + 7);
  EXPECT_EQ(Reads(), 1);
  // The buffer counts until its last block goes.
  auto b = Open(cache, "b");
  ExpectRead(*b, "b", 0, 10);
  EXPECT_EQ(cache.figures().bytes, 20 * kBlock);
  cache.Forget(JoinPath(dir_, "a"));
  EXPECT_EQ(cache.figures().bytes, 10 * kBlock);
}

TEST_F(ColdReadCacheTest, ReadsStartFetchingTheNextWindowInTheBackground) {
  ColdReadCache cache(8 * kBlock, kBlock);  // read-ahead: 2 blocks
  EXPECT_EQ(cache.read_ahead_bytes(), 2 * kBlock);
  auto a = Open(cache, "a");
  ExpectRead(*a, "a", 0, 10);  // fetches blocks 0-1, then 2-3 in the background
  WaitForPrefetched(cache, 2);
  EXPECT_EQ(Reads(), 2);
  const int64_t misses = cache.figures().misses;
  ExpectRead(*a, "a", 2 * kBlock + 5, 10);  // found, and 4-5 are fetched behind it
  EXPECT_EQ(cache.figures().misses, misses);
  WaitForPrefetched(cache, 4);
  ExpectRead(*a, "a", 4 * kBlock, 2 * kBlock);
  EXPECT_EQ(cache.figures().misses, misses);
  EXPECT_LE(cache.figures().bytes, 8 * kBlock);
}

TEST_F(ColdReadCacheTest, PrefetchFetchesTheStartOfTheNextObject) {
  ColdReadCache cache(64 * kBlock, kBlock);
  auto a = Open(cache, "a");
  auto b = Open(cache, "b");
  cache.Prefetch(b.get());
  WaitForPrefetched(cache, 10);
  cache.Prefetch(b.get());  // cached already: nothing to do
  ExpectRead(*b, "b", 0, 10 * kBlock);
  EXPECT_EQ(Reads(), 1);
  EXPECT_EQ(cache.figures().misses, 0);
  EXPECT_EQ(cache.figures().prefetched, 10);
  ExpectRead(*a, "a", 0, 10);
  EXPECT_EQ(cache.figures().misses, 1);
}

TEST_F(ColdReadCacheTest, AFailedReadAheadLeavesTheErrorToTheRead) {
  ColdReadCache cache(4 * kBlock, kBlock);
  auto a = Open(cache, "a");
  std::filesystem::remove(JoinPath(dir_, "a"));
  cache.Prefetch(a.get());  // fails in the background
  auto read = a->ReadAt(0, 10);
  EXPECT_TRUE(read.status().IsNotFound()) << read.status().ToString();
  EXPECT_EQ(cache.figures().prefetched, 0);
}

}  // namespace
}  // namespace oxbow::log
