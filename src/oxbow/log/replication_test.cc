// The log's replication primitives (docs/cluster.md): the high watermark, verbatim appends of
// fetched batches, truncation, reset, leader epochs and append fences.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "oxbow/log/bucket_log.h"

namespace oxbow::log {
namespace {

std::string Bytes(int64_t id, size_t size) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>((id * 31 + i) % 251);
  return s;
}
ByteSpan Span(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string FileBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class ReplicationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/oxbow_replication_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    options_.segment_bytes = 2048;
    options_.index_interval_bytes = 256;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  std::unique_ptr<BucketLog> Open(const std::string& name) {
    auto log = BucketLog::Open(PosixFileSystem::Default(), root_ + "/" + name, options_);
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    return std::move(log).ValueOrDie();
  }

  // Batch `id`: `rows` rows, a metadata piece and a body in two pieces.
  static Result<AppendResult> Append(BucketLog& log, int64_t id, int32_t rows = 3) {
    const std::string metadata = Bytes(id, 24);
    const std::string body1 = Bytes(id + 1, 100 + static_cast<size_t>(id % 7) * 30);
    const std::string body2 = Bytes(id + 2, 40);
    const ByteSpan meta[] = {Span(metadata)};
    const ByteSpan body[] = {Span(body1), Span(body2)};
    return log.Append(BatchInfo{rows, id, id + 5, 1}, meta, body);
  }

  // Copies every batch of `from` the follower lacks, as a follower's fetch does.
  static void Replicate(BucketLog& from, BucketLog& to, int32_t epoch) {
    ReadOptions read;
    read.limit = ReadLimit::kDurable;
    while (to.next_offset() < from.durable_offset()) {
      auto batches = from.Read(to.next_offset(), 1 << 20, read);
      ASSERT_TRUE(batches.ok()) << batches.status().ToString();
      for (const LogBatch& b : *batches) {
        ReplicaBatchInfo info{{b.row_count, b.min_timestamp_ms, b.max_timestamp_ms, b.schema_id},
                              b.base_offset,
                              b.append_time_ms,
                              epoch};
        const ByteSpan meta[] = {
            ByteSpan(b.metadata->data(), static_cast<size_t>(b.metadata->size()))};
        const ByteSpan body[] = {ByteSpan(b.body->data(), static_cast<size_t>(b.body->size()))};
        auto appended = to.AppendReplica(info, meta, body);
        ASSERT_TRUE(appended.ok()) << appended.status().ToString();
      }
    }
  }

  std::string root_;
  LogOptions options_;
};

TEST_F(ReplicationTest, HighWatermarkBoundsReadersAndWakesThem) {
  auto log = Open("hw");
  EXPECT_EQ(log->high_watermark(), INT64_MAX);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Append(*log, i).ok());
  EXPECT_EQ(log->visible_offset(), 12);
  log->SetHighWatermark(6);
  EXPECT_EQ(log->visible_offset(), 6);
  auto visible = log->Read(0, 1 << 20);
  ASSERT_TRUE(visible.ok());
  ASSERT_EQ(visible->size(), 2u);
  EXPECT_EQ(visible->back().next_offset(), 6);
  EXPECT_EQ(log->Read(9, 1 << 20).status().code(), StatusCode::kOutOfRange);
  ReadOptions leader;
  leader.limit = ReadLimit::kDurable;
  EXPECT_EQ(log->Read(9, 1 << 20, leader)->size(), 1u);
  EXPECT_EQ(*log->LookupOffsetByTime(100), 6);
  // A reader waiting at the high watermark wakes when it moves.
  std::thread mover([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    log->SetHighWatermark(9);
  });
  auto woke = log->WaitForData(6, std::chrono::steady_clock::now() + std::chrono::seconds(10));
  mover.join();
  ASSERT_TRUE(woke.ok());
  EXPECT_EQ(*woke, 9);
  auto durable = log->WaitForData(9, std::chrono::steady_clock::now(), ReadLimit::kDurable);
  EXPECT_EQ(*durable, 12);
}

TEST_F(ReplicationTest, FollowersAreServedWhatIsWrittenBeforeItIsFsynced) {
  options_.flush_policy = FlushPolicy::kInterval;
  options_.flush_interval_ms = 3'600'000;  // nothing fsyncs on its own during the test
  auto log = Open("written");
  ASSERT_TRUE(Append(*log, 1).ok());
  ASSERT_TRUE(Append(*log, 2).ok());
  ASSERT_EQ(log->next_offset(), 6);
  ASSERT_EQ(log->durable_offset(), 0);
  EXPECT_TRUE(log->Read(0, 1 << 20)->empty());  // readers see only what is fsynced
  ReadOptions written;
  written.limit = ReadLimit::kWritten;
  auto batches = log->Read(0, 1 << 20, written);
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();
  ASSERT_EQ(batches->size(), 2u);
  EXPECT_EQ(batches->back().next_offset(), 6);
  // A follower waiting at the written end wakes on the next append, not on an fsync.
  std::thread appender([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_TRUE(Append(*log, 3).ok());
  });
  auto woke = log->WaitForData(6, std::chrono::steady_clock::now() + std::chrono::seconds(10),
                               ReadLimit::kWritten);
  appender.join();
  ASSERT_TRUE(woke.ok());
  EXPECT_EQ(*woke, 9);
  EXPECT_EQ(log->durable_offset(), 0);
}

TEST_F(ReplicationTest, AReplicaIsTheSameBytesAtTheSameOffsets) {
  auto leader = Open("leader");
  auto follower = Open("follower");
  ASSERT_TRUE(leader->AssignLeaderEpoch(0, 0).ok());
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(Append(*leader, i, 1 + i % 4).ok());
  ASSERT_GT(leader->segment_count(), 2);  // rolled several times
  Replicate(*leader, *follower, 0);
  EXPECT_EQ(follower->next_offset(), leader->next_offset());
  EXPECT_EQ(follower->segment_count(), leader->segment_count());
  ASSERT_TRUE(leader->Close().ok());
  ASSERT_TRUE(follower->Close().ok());
  int compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root_ + "/leader")) {
    if (entry.path().extension() != ".log") continue;
    EXPECT_EQ(FileBytes(entry.path()),
              FileBytes(root_ + "/follower/" + entry.path().filename().string()))
        << entry.path().filename();
    ++compared;
  }
  EXPECT_GT(compared, 2);
  // A batch that does not continue the log is refused, naming both offsets.
  auto reopened = Open("follower");
  ReplicaBatchInfo gap{{1, 0, 0, 1}, reopened->next_offset() + 5, 0, 0};
  const std::string m = Bytes(1, 8);
  const ByteSpan meta[] = {Span(m)};
  auto refused = reopened->AppendReplica(gap, meta, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("does not continue the log"), std::string::npos);
  EXPECT_EQ(reopened->LatestLeaderEpoch().epoch, 0);
}

TEST_F(ReplicationTest, TruncationCutsAtABatchBoundaryAndSurvivesReopening) {
  auto log = Open("cut");
  std::vector<int64_t> ends;
  for (int i = 0; i < 30; ++i) ends.push_back(Append(*log, i, 2)->next_offset);
  const int64_t segments = log->segment_count();
  ASSERT_GT(segments, 2);
  // Inside a batch: the cut is the end of the last whole batch before it.
  auto cut = log->TruncateTo(41);
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  EXPECT_EQ(*cut, 40);
  EXPECT_EQ(log->next_offset(), 40);
  EXPECT_EQ(log->durable_offset(), 40);
  EXPECT_LT(log->segment_count(), segments);
  // Appends continue at the cut, and reads see the old prefix then the new batches.
  ASSERT_EQ(Append(*log, 100, 2)->base_offset, 40);
  auto all = log->Read(0, 1 << 30);
  ASSERT_TRUE(all.ok());
  int64_t expected = 0;
  for (const auto& b : *all) {
    EXPECT_EQ(b.base_offset, expected);
    expected = b.next_offset();
  }
  // Reading everything may take several calls (segment ends).
  for (int reads = 0; expected < 42 && reads < 100; ++reads) {
    auto more = log->Read(expected, 1 << 30);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    ASSERT_FALSE(more->empty()) << "at " << expected << " of " << log->next_offset() << " durable "
                                << log->durable_offset() << " visible " << log->visible_offset();
    for (const auto& b : *more) expected = b.next_offset();
  }
  EXPECT_EQ(expected, 42);
  // At a segment's first offset, then to the very start.
  auto to_first = log->TruncateTo(ends[0]);
  ASSERT_TRUE(to_first.ok()) << to_first.status().ToString();
  EXPECT_EQ(log->next_offset(), 2);
  ASSERT_TRUE(log->TruncateTo(0).ok());
  EXPECT_EQ(log->next_offset(), 0);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Append(*log, 200 + i, 1).ok());
  ASSERT_TRUE(log->Close().ok());
  log.reset();
  auto reopened = Open("cut");
  EXPECT_EQ(reopened->next_offset(), 5);
  EXPECT_EQ(reopened->Read(0, 1 << 30)->size(), 5u);
}

TEST_F(ReplicationTest, ResetStartsEmptyAtTheGivenOffset) {
  auto log = Open("reset");
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Append(*log, i).ok());
  ASSERT_TRUE(log->AssignLeaderEpoch(3, 0).ok());
  ASSERT_TRUE(log->ResetTo(1000).ok());
  EXPECT_EQ(log->earliest_offset(), 1000);
  EXPECT_EQ(log->next_offset(), 1000);
  EXPECT_EQ(log->LatestLeaderEpoch().epoch, -1);
  ReplicaBatchInfo next{{2, 0, 0, 1}, 1000, 77, 4};
  const std::string m = Bytes(1, 8);
  const ByteSpan meta[] = {Span(m)};
  ASSERT_TRUE(log->AppendReplica(next, meta, {}).ok());
  ASSERT_TRUE(log->Close().ok());
  log.reset();
  auto reopened = Open("reset");
  EXPECT_EQ(reopened->earliest_offset(), 1000);
  EXPECT_EQ(reopened->next_offset(), 1002);
  EXPECT_EQ(reopened->Read(1000, 1 << 20)->front().append_time_ms, 77);
  EXPECT_EQ(reopened->LatestLeaderEpoch().epoch, 4);
}

TEST_F(ReplicationTest, LeaderEpochsAnswerAsKafkaDoesAndPersist) {
  auto log = Open("epochs");
  EXPECT_EQ(log->EndOffsetForEpoch(5).epoch, -1);
  ASSERT_TRUE(log->AssignLeaderEpoch(1, 0).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Append(*log, i).ok());  // [0, 9)
  ASSERT_TRUE(log->AssignLeaderEpoch(3, 9).ok());
  ASSERT_TRUE(log->AssignLeaderEpoch(3, 9).ok());  // the same again: nothing changes
  EXPECT_EQ(log->AssignLeaderEpoch(2, 9).code(), StatusCode::kInvalid);
  for (int i = 3; i < 5; ++i) ASSERT_TRUE(Append(*log, i).ok());  // [9, 15)
  EXPECT_EQ(log->LeaderEpochAt(0), 1);
  EXPECT_EQ(log->LeaderEpochAt(8), 1);
  EXPECT_EQ(log->LeaderEpochAt(9), 3);
  // The largest epoch <= the one asked, and where it ends.
  EXPECT_EQ(log->EndOffsetForEpoch(1).end_offset, 9);
  EXPECT_EQ(log->EndOffsetForEpoch(2).epoch, 1);
  EXPECT_EQ(log->EndOffsetForEpoch(2).end_offset, 9);
  EXPECT_EQ(log->EndOffsetForEpoch(3).end_offset, 15);
  EXPECT_EQ(log->EndOffsetForEpoch(7).epoch, 3);
  EXPECT_EQ(log->EndOffsetForEpoch(0).epoch, -1);
  // Truncation drops the epochs that started at or after the cut.
  ASSERT_TRUE(log->TruncateTo(9).ok());
  EXPECT_EQ(log->LatestLeaderEpoch().epoch, 1);
  ASSERT_TRUE(log->AssignLeaderEpoch(4, 9).ok());
  ASSERT_TRUE(log->Close().ok());
  log.reset();
  auto reopened = Open("epochs");
  EXPECT_EQ(reopened->LatestLeaderEpoch().epoch, 4);
  EXPECT_EQ(reopened->LatestLeaderEpoch().end_offset, 9);
  EXPECT_EQ(reopened->EndOffsetForEpoch(3).epoch, 1);
}

TEST_F(ReplicationTest, AFenceRefusesAppendsButNotReplicas) {
  auto log = Open("fence");
  log->FenceAppends(Status::Unavailable("not_leader"));
  auto refused = Append(*log, 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  ReplicaBatchInfo fetched{{1, 0, 0, 1}, 0, 5, 0};
  const std::string m = Bytes(1, 8);
  const ByteSpan meta[] = {Span(m)};
  EXPECT_TRUE(log->AppendReplica(fetched, meta, {}).ok());
  log->UnfenceAppends();
  EXPECT_TRUE(Append(*log, 2).ok());
}

}  // namespace
}  // namespace oxbow::log
