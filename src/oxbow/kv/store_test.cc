#include "oxbow/kv/store.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace oxbow::kv {
namespace {

namespace fs = std::filesystem;

// Every test runs on both kinds of table: sorted memtables and hashed ones.
class StoreTest : public ::testing::TestWithParam<KeyAccess> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("oxbow-kv-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Store> Open(std::vector<int64_t> live) {
    StoreOptions options;
    options.dir = dir_.string();
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 8 << 20;
    std::map<int64_t, KeyAccess> tables;
    for (int64_t id : live) tables[id] = GetParam();
    auto store = Store::Open(options, tables);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).ValueOrDie() : nullptr;
  }

  fs::path dir_;
};

std::string Key(int32_t bucket, const std::string& k) { return BucketPrefix(bucket) + k; }

// The values of `keys` in order, std::nullopt where absent, through MultiGetEach.
Result<std::vector<std::optional<std::string>>> MultiGet(TableStore* table,
                                                         const std::vector<std::string>& keys) {
  std::vector<std::optional<std::string>> out(keys.size());
  RETURN_NOT_OK(table->MultiGetEach(keys, [&](size_t i, std::string_view value) {
    out[i].emplace(value);
    return Status::OK();
  }));
  return out;
}

TEST_P(StoreTest, WritesReadsAndAppliedOffsets) {
  auto store = Open({7});
  auto table = store->OpenTable(7, GetParam());
  ASSERT_TRUE(table.ok());
  EXPECT_FALSE((*table)->AppliedOffset(0)->has_value());
  ASSERT_TRUE((*table)->Write(0, {{Key(0, "a"), "1"}, {Key(0, "b"), "2"}}, 5).ok());
  ASSERT_TRUE((*table)->Write(1, {{Key(1, "a"), "3"}}, 9).ok());
  ASSERT_TRUE((*table)->Write(0, {{Key(0, "b"), std::nullopt}}, 6).ok());
  auto got = MultiGet(*table, {Key(0, "a"), Key(0, "b"), Key(1, "a"), Key(2, "a")});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0], "1");
  EXPECT_FALSE((*got)[1].has_value());
  EXPECT_EQ((*got)[2], "3");
  EXPECT_FALSE((*got)[3].has_value());
  EXPECT_EQ(*(*table)->AppliedOffset(0), std::optional<int64_t>(6));
  EXPECT_EQ(*(*table)->AppliedOffset(1), std::optional<int64_t>(9));
}

TEST_P(StoreTest, TheFlushGuardRunsBeforeATablesRowsAreWrittenToFiles) {
  auto store = Open({1, 2});
  auto guarded = store->OpenTable(1, GetParam());
  auto other = store->OpenTable(2, GetParam());
  ASSERT_TRUE(guarded.ok() && other.ok());
  // What the guard saw when it ran: the rows were not in any file yet.
  std::vector<std::string> seen;
  (*guarded)->SetFlushGuard([&] {
    seen.push_back(fs::exists(dir_ / "kv-checkpoints" / "1") ? "after" : "before");
    return Status::OK();
  });
  ASSERT_TRUE((*guarded)->Write(0, {{Key(0, "a"), "1"}}, 1).ok());
  ASSERT_TRUE((*other)->Write(0, {{Key(0, "b"), "2"}}, 1).ok());
  ASSERT_TRUE(store->Checkpoint().ok());  // flushes every memtable first
  EXPECT_EQ(seen, std::vector<std::string>{"before"});
  // Removed, it runs no more.
  (*guarded)->SetFlushGuard(nullptr);
  ASSERT_TRUE((*guarded)->Write(0, {{Key(0, "a"), "3"}}, 2).ok());
  ASSERT_TRUE(store->Checkpoint().ok());
  EXPECT_EQ(seen.size(), 1u);
}

TEST_P(StoreTest, ViewsAreConsistentAndScanOneBucket) {
  auto store = Open({1});
  TableStore* table = *store->OpenTable(1, GetParam());
  ASSERT_TRUE(
      table->Write(3, {{Key(3, "a"), "1"}, {Key(3, "b"), "2"}, {Key(3, "c"), "3"}}, 3).ok());
  ASSERT_TRUE(table->Write(4, {{Key(4, "a"), "x"}}, 1).ok());
  auto view = table->NewView();
  ASSERT_TRUE(table->Write(3, {{Key(3, "d"), "4"}}, 4).ok());
  std::vector<std::string> seen;
  ASSERT_TRUE(view->Scan(BucketPrefix(3), {},
                         [&](std::string_view k, std::string_view v) {
                           seen.push_back(std::string(k.substr(4)) + "=" + std::string(v));
                           return true;
                         })
                  .ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"a=1", "b=2", "c=3"}));
  EXPECT_EQ(*view->AppliedOffset(3), std::optional<int64_t>(3));
  seen.clear();
  ASSERT_TRUE(view->Scan(BucketPrefix(3), Key(3, "b"),
                         [&](std::string_view k, std::string_view) {
                           seen.emplace_back(k.substr(4));
                           return seen.size() < 1;
                         })
                  .ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"b"}));
}

TEST_P(StoreTest, RowsSurviveReopenAndACheckpointRestoresALostStore) {
  {
    auto store = Open({1});
    TableStore* table = *store->OpenTable(1, GetParam());
    ASSERT_TRUE(table->Write(0, {{Key(0, "k"), "v1"}}, 1).ok());
    auto checkpoint = store->Checkpoint();
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
    ASSERT_EQ(checkpoint->offsets.size(), 1u);
    EXPECT_EQ(checkpoint->offsets[0].offset, 1);
    ASSERT_TRUE(table->Write(0, {{Key(0, "k"), "v2"}}, 2).ok());
    ASSERT_TRUE(store->Close().ok());
  }
  {
    auto store = Open({1});
    TableStore* table = *store->OpenTable(1, GetParam());
    EXPECT_EQ((*MultiGet(table, {Key(0, "k")}))[0], "v2");
    ASSERT_TRUE(store->Close().ok());
  }
  fs::remove_all(dir_ / "kv");
  auto store = Open({1});
  TableStore* table = *store->OpenTable(1, GetParam());
  EXPECT_EQ((*MultiGet(table, {Key(0, "k")}))[0], "v1");
  EXPECT_EQ(*table->AppliedOffset(0), std::optional<int64_t>(1));
}

TEST_P(StoreTest, CheckpointsAreBoundedAndDroppedTablesDisappear) {
  auto store = Open({1, 2});
  ASSERT_TRUE((*store->OpenTable(1, GetParam()))->Write(0, {{Key(0, "a"), "1"}}, 1).ok());
  ASSERT_TRUE((*store->OpenTable(2, GetParam()))->Write(0, {{Key(0, "a"), "2"}}, 1).ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(store->Checkpoint().ok());
  int checkpoints = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "kv-checkpoints"))
    checkpoints += e.is_directory();
  EXPECT_EQ(checkpoints, 2);
  ASSERT_TRUE(store->DropTable(2).ok());
  ASSERT_TRUE(store->Close().ok());
  store.reset();
  // Table 1 is gone from the catalog too: its column family is dropped at open.
  auto reopened = Open({});
  auto fresh = reopened->OpenTable(1, GetParam());
  ASSERT_TRUE(fresh.ok());
  EXPECT_FALSE((*MultiGet(*fresh, {Key(0, "a")}))[0].has_value());
}

TEST_P(StoreTest, ADumpedBucketRestoresIntoAnotherBucketStateAlone) {
  auto store = Open({7});
  TableStore* table = *store->OpenTable(7, GetParam());
  std::vector<KeyWrite> rows;
  uint64_t noise = 1;
  for (int i = 0; i < 3000; ++i) {
    std::string value;
    for (int k = 0; k < 8; ++k) {
      noise = noise * 6364136223846793005ULL + 1442695040888963407ULL;
      value += std::to_string(noise);
    }
    rows.push_back({Key(0, std::to_string(10000 + i)), value});
  }
  ASSERT_TRUE(table->Write(0, rows, 42).ok());
  ASSERT_TRUE(table->Write(1, {{Key(1, "other"), "x"}}, 7).ok());
  fs::create_directories(dir_ / "dump");
  auto dump = table->DumpBucket(0, (dir_ / "dump").string(), 16 << 10);
  ASSERT_TRUE(dump.ok()) << dump.status().ToString();
  EXPECT_EQ(dump->applied_offset, 42);
  EXPECT_EQ(dump->rows, 3000);
  EXPECT_GT(dump->files.size(), 1u);  // split at about 16 KiB
  // Bucket 0 moves on; restoring the dump takes it back to offset 42 and leaves bucket 1 alone.
  ASSERT_TRUE(table->Write(0, {{Key(0, "10000"), std::nullopt}, {Key(0, "new"), "n"}}, 50).ok());
  ASSERT_TRUE(table->RestoreBucket(0, dump->files, dump->applied_offset).ok());
  EXPECT_EQ(**table->AppliedOffset(0), 42);
  EXPECT_EQ(**table->AppliedOffset(1), 7);
  auto got = MultiGet(table, {Key(0, "10000"), Key(0, "12999"), Key(0, "new"), Key(1, "other")});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0], rows.front().value);
  EXPECT_EQ((*got)[1], rows.back().value);
  EXPECT_FALSE((*got)[2].has_value());
  EXPECT_EQ((*got)[3], "x");
  // An empty bucket dumps to no file and restores to no row.
  auto empty = table->DumpBucket(2, (dir_ / "dump").string(), 16 << 10);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->files.empty());
  ASSERT_TRUE(table->RestoreBucket(1, {}, 3).ok());
  EXPECT_FALSE((*MultiGet(table, {Key(1, "other")}))[0].has_value());
}

TEST_P(StoreTest, ATableKeepsItsKeyAccess) {
  auto store = Open({1});
  const KeyAccess other =
      GetParam() == KeyAccess::kWholeKey ? KeyAccess::kPrefix : KeyAccess::kWholeKey;
  ASSERT_TRUE(store->OpenTable(1, GetParam()).ok());
  EXPECT_TRUE(store->OpenTable(1, other).status().IsInvalid());
  ASSERT_TRUE(store->Close().ok());
  store.reset();
  EXPECT_TRUE(Open({1})->OpenTable(1, other).status().IsInvalid()) << "after a reopen too";
}

// A view pages through many keys in order (over a hashed memtable and files both), and does
// not see rows written after it.
TEST_P(StoreTest, AViewPagesThroughEveryKeyInOrder) {
  auto store = Open({1});
  TableStore* table = *store->OpenTable(1, GetParam());
  std::vector<KeyWrite> rows;
  for (int i = 0; i < 2000; ++i)
    rows.push_back({Key(0, std::to_string(100000 + i * 7 % 2000)), "v"});
  ASSERT_TRUE(table->Write(0, {rows.begin(), rows.begin() + 1000}, 1).ok());
  ASSERT_TRUE(store->Checkpoint().ok());  // the first half in files, the rest in the memtable
  ASSERT_TRUE(table->Write(0, {rows.begin() + 1000, rows.end()}, 2).ok());
  auto view = table->NewView();
  ASSERT_TRUE(table->Write(0, {{Key(0, "100000x"), "late"}}, 3).ok());
  std::vector<std::string> seen;
  std::string resume;
  for (bool more = true; more;) {
    more = false;
    ASSERT_TRUE(view->Scan(BucketPrefix(0), resume,
                           [&](std::string_view k, std::string_view) {
                             seen.emplace_back(k.substr(4));
                             if (seen.size() % 300 != 0) return true;
                             resume = std::string(k) + '\0';
                             more = true;
                             return false;
                           })
                    .ok());
  }
  ASSERT_EQ(seen.size(), 2000u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], std::to_string(100000 + i));
}

INSTANTIATE_TEST_SUITE_P(BothKeyAccesses, StoreTest,
                         ::testing::Values(KeyAccess::kPrefix, KeyAccess::kWholeKey),
                         [](const auto& info) {
                           return info.param == KeyAccess::kPrefix ? "Sorted" : "Hashed";
                         });

}  // namespace
}  // namespace oxbow::kv
