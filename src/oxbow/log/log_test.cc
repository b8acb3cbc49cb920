#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "oxbow/common/crc32c.h"
#include "oxbow/common/fault_injection_file_system.h"
#include "oxbow/log/bucket_log.h"
#include "oxbow/log/segment_internal.h"

namespace oxbow::log {
namespace {

using internal::FrameHeader;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "oxbow_log_XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Batch `id`: 16 bytes of metadata naming it, and a body whose size and bytes derive from it.
std::string MetadataOf(int64_t id) {
  std::string m(16, 'm');
  std::memcpy(m.data(), &id, sizeof(id));
  return m;
}
std::string BodyOf(int64_t id) {
  std::string b(static_cast<size_t>((id * 37) % 300), '\0');
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>((id + i) % 251);
  return b;
}
ByteSpan Span(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

struct Expected {
  int64_t id;
  int64_t base_offset;
  int32_t rows;
  int64_t max_ts;
};

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_ = std::make_shared<FaultInjectionFileSystem>(PosixFileSystem::Default());
    dir_ = JoinPath(tmp_.path(), "t/0");
    options_.segment_bytes = 4096;
    options_.index_interval_bytes = 256;
    options_.clock = [this] { return now_.load(); };
  }

  std::unique_ptr<BucketLog> OpenLog() {
    auto log = BucketLog::Open(fs_, dir_, options_);
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    return log.ok() ? std::move(log).ValueOrDie() : nullptr;
  }

  static int32_t RowsOf(int64_t id) { return static_cast<int32_t>(1 + id % 5); }

  Result<AppendResult> AppendBatch(BucketLog* log, int64_t id, int64_t max_ts = -1,
                                   bool async = false) {
    std::string metadata = MetadataOf(id);
    std::string body = BodyOf(id);
    ByteSpan meta_pieces[] = {Span(metadata).first(5), Span(metadata).subspan(5)};
    ByteSpan body_pieces[] = {Span(body)};
    BatchInfo info;
    info.row_count = RowsOf(id);
    info.max_timestamp_ms = max_ts < 0 ? 1000 + id : max_ts;
    info.min_timestamp_ms = info.max_timestamp_ms - 5;
    info.schema_id = 7;
    if (async) return log->AppendAsync(info, meta_pieces, body_pieces);
    return log->Append(info, meta_pieces, body_pieces);
  }

  // Appends batches first_id..first_id+n-1, recording them.
  void AppendMany(BucketLog* log, int64_t first_id, int n) {
    for (int64_t id = first_id; id < first_id + n; ++id) {
      auto r = AppendBatch(log, id);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (!expected_.empty()) {
        ASSERT_EQ(r->base_offset, expected_.back().base_offset + expected_.back().rows);
      }
      ASSERT_EQ(r->next_offset, r->base_offset + RowsOf(id));
      expected_.push_back({id, r->base_offset, RowsOf(id), 1000 + id});
    }
  }

  // Reads everything from `from` and compares with expected_.
  void CheckReadAll(BucketLog* log, int64_t from, int64_t max_bytes = 1 << 20) {
    std::vector<LogBatch> all;
    int64_t offset = from;
    while (offset < log->durable_offset()) {
      auto batches = log->Read(offset, max_bytes);
      ASSERT_TRUE(batches.ok()) << batches.status().ToString();
      ASSERT_FALSE(batches->empty());
      for (auto& b : *batches) all.push_back(b);
      offset = batches->back().next_offset();
    }
    auto it = std::find_if(expected_.begin(), expected_.end(),
                           [&](const Expected& e) { return e.base_offset + e.rows > from; });
    ASSERT_EQ(all.size(), static_cast<size_t>(expected_.end() - it));
    for (const LogBatch& b : all) {
      ASSERT_EQ(b.base_offset, it->base_offset);
      ASSERT_EQ(b.row_count, it->rows);
      ASSERT_EQ(b.max_timestamp_ms, it->max_ts);
      ASSERT_EQ(b.min_timestamp_ms, it->max_ts - 5);
      ASSERT_EQ(b.schema_id, 7);
      ASSERT_EQ(b.metadata->view(), MetadataOf(it->id));
      ASSERT_EQ(b.body->view(), BodyOf(it->id));
      ASSERT_EQ(reinterpret_cast<uintptr_t>(b.body->data()) % 8, 0u);
      // Zero-copy: metadata and body are adjacent slices of one read.
      ASSERT_EQ(b.metadata->data() + b.metadata->size(), b.body->data());
      ++it;
    }
  }

  std::string ActiveSegmentPath() {
    int64_t base = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      std::string name = entry.path().filename().string();
      if (name.size() == 24 && name.ends_with(".log")) {
        base = std::max<int64_t>(base, std::stoll(name.substr(0, 20)));
      }
    }
    return JoinPath(dir_, internal::SegmentFileName(base, ".log"));
  }

  // Where the frame of the id-th batch appended by AppendMany(…, 0, …) starts in its
  // segment, when all batches share one segment.
  static int64_t FramePosition(int64_t id) {
    int64_t position = 0;
    for (int64_t i = 0; i < id; ++i) {
      FrameHeader h;
      h.metadata_length = 16;
      h.body_length = static_cast<int64_t>(BodyOf(i).size());
      position += h.frame_length();
    }
    return position;
  }
  void FlipByte(const std::string& path, int64_t position) {
    auto file = fs_->OpenFile(path, FileMode::kWrite).ValueOrDie();
    uint8_t flipped = file->ReadAt(position, 1).ValueOrDie()->data()[0] ^ 0x40;
    ASSERT_TRUE(file->WriteAt(position, ByteSpan(&flipped, 1)).ok());
  }
  // The batch appended as `id` is damaged: reads of it fail naming it, reads stop before
  // it, and a read from the next batch goes on to the end.
  void ExpectDamageRefusedAndSkipped(BucketLog* log, size_t id) {
    const int64_t damaged = expected_[id].base_offset;
    const int64_t after = expected_[id + 1].base_offset;
    auto before = log->Read(0, 1 << 30);
    ASSERT_TRUE(before.ok()) << before.status().ToString();
    ASSERT_EQ(before->back().next_offset(), damaged);
    auto refused = log->Read(damaged, 1 << 30);
    ASSERT_TRUE(refused.status().IsCorruption()) << refused.status().ToString();
    const std::string& message = refused.status().message();
    EXPECT_NE(message.find("offsets [" + std::to_string(damaged) + ", " + std::to_string(after) +
                           ") are damaged in segment " + dir_),
              std::string::npos)
        << message;
    std::vector<Expected> all = expected_;
    expected_.erase(expected_.begin(), expected_.begin() + static_cast<int64_t>(id) + 1);
    CheckReadAll(log, after);
    expected_ = all;
  }

  // Simulates power loss under a live log, then restarts the machine.
  void CrashAndReboot(std::unique_ptr<BucketLog>& log) {
    ASSERT_TRUE(fs_->Crash().ok());
    log.reset();  // anything it still tries to write fails
    fs_->Reboot();
  }

  TempDir tmp_;
  std::shared_ptr<FaultInjectionFileSystem> fs_;
  std::string dir_;
  LogOptions options_;
  std::atomic<int64_t> now_{1'700'000'000'000};
  std::vector<Expected> expected_;
};

TEST(FrameFormatTest, HeaderLayoutAndChecksums) {
  FrameHeader h;
  h.schema_id = 3;
  h.base_offset = 0x0102030405060708;
  h.row_count = 9;
  h.metadata_length = 16;
  h.body_length = 4096 + 21;  // two checksum blocks, the second one short
  h.min_timestamp_ms = -4;
  h.max_timestamp_ms = 11;
  h.append_time_ms = 12;
  ASSERT_EQ(h.checksum_blocks(), 2);
  ASSERT_EQ(h.checksum_table_length(), 8);
  ASSERT_EQ(h.frame_length(), 64 + 8 + 4136);  // 4133 payload bytes padded to 4136
  std::string payload(static_cast<size_t>(h.payload_length()), '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 7);
  ByteSpan metadata[] = {Span(payload).first(16)};
  ByteSpan body[] = {Span(payload).subspan(16, 100), Span(payload).subspan(116)};
  std::string table = internal::EncodeChecksumTable(metadata, body, h.payload_length());
  ASSERT_EQ(table.size(), 8u);
  uint32_t block_crcs[2];
  std::memcpy(block_crcs, table.data(), 8);
  EXPECT_EQ(block_crcs[0], crc32c::Value(payload.data(), 4096));
  EXPECT_EQ(block_crcs[1], crc32c::Value(payload.data() + 4096, 37));

  std::string frame(static_cast<size_t>(h.frame_length()), '\0');
  auto* p = reinterpret_cast<uint8_t*>(frame.data());
  internal::EncodeFrameHeader(h, table, p);
  std::memcpy(p + 64, table.data(), table.size());
  std::memcpy(p + 72, payload.data(), payload.size());
  EXPECT_EQ(frame.substr(0, 4), "OXLB");
  EXPECT_EQ(p[8], 2);      // version
  EXPECT_EQ(p[9], 12);     // 4 KiB checksum blocks
  EXPECT_EQ(p[10], 64);    // header length
  EXPECT_EQ(p[16], 0x08);  // base offset, little-endian
  EXPECT_EQ(p[23], 0x01);
  EXPECT_EQ(p[24], 9);
  EXPECT_EQ(p[28], 16);
  uint32_t crc;
  std::memcpy(&crc, p + 4, 4);
  EXPECT_EQ(crc, crc32c::Extend(crc32c::Value(p + 8, 56), table.data(), 8));

  auto decoded = internal::DecodeFrameHeader(p, 0);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->base_offset, h.base_offset);
  EXPECT_EQ(decoded->body_length, 4096 + 21);
  EXPECT_EQ(decoded->min_timestamp_ms, -4);
  EXPECT_TRUE(internal::VerifyFrameHeader(p, *decoded).ok());
  EXPECT_TRUE(internal::VerifyFramePayload(p, *decoded, 0, h.payload_length()).ok());
  // A flipped byte in the second block fails only reads that touch that block.
  p[72 + 4100] ^= 1;
  EXPECT_TRUE(internal::VerifyFramePayload(p, *decoded, 0, 4096).ok());
  auto bad = internal::VerifyFramePayload(p, *decoded, 4000, 200);
  EXPECT_TRUE(bad.IsCorruption());
  EXPECT_NE(bad.message().find("payload bytes [4096, 4133)"), std::string::npos) << bad.message();
  // A flipped header field fails the header checksum.
  p[72 + 4100] ^= 1;
  p[24] ^= 2;
  EXPECT_TRUE(internal::VerifyFrameHeader(p, *decoded).IsCorruption());
  p[0] = 'X';
  EXPECT_TRUE(internal::DecodeFrameHeader(p, 128).status().IsCorruption());
}

TEST_F(LogTest, RoundTripAcrossSegmentRolls) {
  auto log = OpenLog();
  EXPECT_EQ(log->next_offset(), 0);
  EXPECT_EQ(log->durable_offset(), 0);
  AppendMany(log.get(), 0, 200);
  EXPECT_GT(log->segment_count(), 5);
  EXPECT_EQ(log->durable_offset(), log->next_offset());
  CheckReadAll(log.get(), 0);
  CheckReadAll(log.get(), 0, 1);  // one batch per read
  // Starting inside a batch returns that batch first.
  for (const Expected& e : expected_) {
    auto batches = log->Read(e.base_offset + e.rows - 1, 1);
    ASSERT_TRUE(batches.ok());
    ASSERT_EQ(batches->size(), 1u);
    EXPECT_EQ((*batches)[0].base_offset, e.base_offset);
  }
  EXPECT_TRUE(log->Read(log->durable_offset(), 100).ValueOrDie().empty());
  EXPECT_TRUE(log->Read(log->durable_offset() + 1, 100).status().IsOutOfRange());
  EXPECT_TRUE(log->Read(-1, 100).status().IsOutOfRange());

  // Reopen: sealed segments load their index files lazily.
  ASSERT_TRUE(log->Close().ok());
  log = OpenLog();
  EXPECT_EQ(log->recovery_info().bytes_verified, 0);
  EXPECT_EQ(log->next_offset(), expected_.back().base_offset + expected_.back().rows);
  CheckReadAll(log.get(), 0);
  AppendMany(log.get(), 200, 20);
  CheckReadAll(log.get(), expected_[150].base_offset);
}

TEST_F(LogTest, ReadHonorsMaxBytes) {
  auto log = OpenLog();
  AppendMany(log.get(), 0, 30);
  auto batches = log->Read(0, 600).ValueOrDie();
  int64_t bytes = 0;
  for (const auto& b : batches) bytes += 64 + (b.metadata->size() + b.body->size() + 7) / 8 * 8;
  EXPECT_GT(batches.size(), 1u);
  EXPECT_LE(bytes, 600);
  EXPECT_EQ(log->Read(0, 0).ValueOrDie().size(), 1u);  // at least one batch
}

TEST_F(LogTest, MissingOrCorruptIndexesAreRebuilt) {
  auto log = OpenLog();
  AppendMany(log.get(), 0, 150);
  ASSERT_TRUE(log->Close().ok());
  log.reset();
  int damaged = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    std::string name = entry.path().string();
    if (name.ends_with(".index") && damaged % 2 == 0) {
      std::filesystem::remove(name);
    } else if (name.ends_with(".timeindex")) {
      std::filesystem::resize_file(name, std::filesystem::file_size(name) / 2 + 1);
    }
    damaged++;
  }
  log = OpenLog();
  CheckReadAll(log.get(), 0);
  for (const Expected& e : expected_) {
    EXPECT_EQ(log->LookupOffsetByTime(e.max_ts).ValueOrDie(), e.base_offset);
  }
}

TEST_F(LogTest, TimeLookup) {
  auto log = OpenLog();
  // Timestamps mostly rise, with some batches out of order.
  std::vector<int64_t> ts;
  for (int64_t id = 0; id < 300; ++id) {
    int64_t t = 1000 + 10 * id - (id % 7 == 3 ? 45 : 0);
    auto r = AppendBatch(log.get(), id, t);
    ASSERT_TRUE(r.ok());
    expected_.push_back({id, r->base_offset, RowsOf(id), t});
  }
  auto check = [&](BucketLog* l) {
    for (int64_t q = 900; q <= 1000 + 10 * 300 + 10; q += 3) {
      int64_t want = l->durable_offset();
      for (const Expected& e : expected_) {
        if (e.max_ts >= q) {
          want = e.base_offset;
          break;
        }
      }
      ASSERT_EQ(l->LookupOffsetByTime(q).ValueOrDie(), want) << "timestamp " << q;
    }
  };
  check(log.get());
  ASSERT_TRUE(log->Close().ok());
  log = OpenLog();
  check(log.get());
}

TEST_F(LogTest, RollsByAge) {
  options_.segment_bytes = 1 << 20;
  options_.segment_ms = 1000;
  auto log = OpenLog();
  AppendMany(log.get(), 0, 10);
  EXPECT_EQ(log->segment_count(), 1);
  now_ += 1000;
  AppendMany(log.get(), 10, 10);
  EXPECT_EQ(log->segment_count(), 2);
  CheckReadAll(log.get(), 0);
}

TEST_F(LogTest, RetentionBySizeRespectsFloor) {
  options_.retention_bytes = 10000;
  options_.retention_ms = -1;
  auto log = OpenLog();
  log->SetRetentionFloor(0);  // nothing is tiered yet
  AppendMany(log.get(), 0, 300);
  EXPECT_EQ(log->earliest_offset(), 0);
  int64_t all_segments = log->segment_count();

  log->SetRetentionFloor(expected_[150].base_offset);
  ASSERT_TRUE(log->EnforceRetention().ok());
  int64_t earliest = log->earliest_offset();
  EXPECT_GT(earliest, 0);
  EXPECT_LE(earliest, expected_[150].base_offset);
  EXPECT_LT(log->segment_count(), all_segments);
  EXPECT_TRUE(log->Read(0, 100).status().IsOutOfRange());

  log->SetRetentionFloor(INT64_MAX);
  ASSERT_TRUE(log->EnforceRetention().ok());
  EXPECT_GE(log->size_bytes(), 10000);
  EXPECT_LT(log->size_bytes(), 10000 + 4096 + 512);
  earliest = log->earliest_offset();
  CheckReadAll(log.get(), earliest);

  // Deleted segments stay deleted after a restart.
  ASSERT_TRUE(log->Close().ok());
  log = OpenLog();
  EXPECT_EQ(log->earliest_offset(), earliest);
  CheckReadAll(log.get(), earliest);
}

TEST_F(LogTest, DeleteBeforeMovesTheStartDurablyAndDropsWholeSegmentsBelowIt) {
  auto log = OpenLog();
  AppendMany(log.get(), 0, 300);
  const int64_t all_segments = log->segment_count();
  const int64_t start = expected_[150].base_offset + 1;  // inside a batch
  ASSERT_TRUE(log->DeleteBefore(start).ok());
  EXPECT_EQ(log->earliest_offset(), start);
  EXPECT_TRUE(log->Read(start - 1, 100).status().IsOutOfRange());
  ASSERT_TRUE(log->Read(start, 100).ok());
  EXPECT_TRUE(log->DeleteBefore(start - 10).ok());  // lower: nothing changes
  EXPECT_EQ(log->earliest_offset(), start);
  EXPECT_TRUE(log->DeleteBefore(log->next_offset() + 1).IsOutOfRange());
  EXPECT_GT(log->EnforceRetention().ValueOrDie(), 0);
  EXPECT_LT(log->segment_count(), all_segments);
  EXPECT_EQ(log->earliest_offset(), start);
  // The start survives a restart, and a time lookup never answers below it.
  ASSERT_TRUE(log->Close().ok());
  log = OpenLog();
  EXPECT_EQ(log->earliest_offset(), start);
  EXPECT_EQ(log->LookupOffsetByTime(0).ValueOrDie(), start);
  EXPECT_TRUE(log->Read(start - 1, 100).status().IsOutOfRange());
}

TEST_F(LogTest, RollsCallOnRollAndAppendsDeleteNothing) {
  options_.retention_bytes = 8000;
  int rolls = 0;
  options_.on_roll = [&rolls] { ++rolls; };
  auto log = OpenLog();
  AppendMany(log.get(), 0, 300);
  EXPECT_EQ(rolls, log->segment_count() - 1);
  EXPECT_EQ(log->earliest_offset(), 0);  // retention is the owner's background pass
  EXPECT_GT(log->EnforceRetention().ValueOrDie(), 0);
  EXPECT_GT(log->earliest_offset(), 0);
  EXPECT_LT(log->size_bytes(), 8000 + 2 * 4096);
  CheckReadAll(log.get(), log->earliest_offset());
}

TEST_F(LogTest, RetentionByAge) {
  options_.retention_ms = 60'000;
  auto log = OpenLog();
  AppendMany(log.get(), 0, 100);  // old data
  now_ += 50'000;
  int64_t young = log->next_offset();
  AppendMany(log.get(), 100, 100);
  EXPECT_EQ(log->EnforceRetention().ValueOrDie(), 0);
  now_ += 20'000;  // the first 100 batches are now 70 s old, the rest 20 s
  EXPECT_GT(log->EnforceRetention().ValueOrDie(), 0);
  EXPECT_GT(log->earliest_offset(), 0);
  EXPECT_LE(log->earliest_offset(), young);
  now_ += 1'000'000;  // everything old: only the active segment survives
  ASSERT_TRUE(log->EnforceRetention().ok());
  EXPECT_EQ(log->segment_count(), 1);
  CheckReadAll(log.get(), log->earliest_offset());
}

TEST_F(LogTest, CrashLosesOnlyUnsyncedTail) {
  options_.segment_bytes = 1 << 20;  // a roll would make the tail durable
  options_.flush_policy = FlushPolicy::kInterval;
  options_.flush_interval_ms = 1'000'000;
  options_.flush_bytes = int64_t{1} << 40;
  auto log = OpenLog();
  AppendMany(log.get(), 0, 100);
  ASSERT_TRUE(log->Sync().ok());
  int64_t acknowledged = log->durable_offset();
  std::vector<Expected> durable = expected_;
  for (int64_t id = 100; id < 110; ++id) ASSERT_TRUE(AppendBatch(log.get(), id).ok());
  EXPECT_GT(log->next_offset(), acknowledged);
  EXPECT_EQ(log->durable_offset(), acknowledged);  // readers don't see the unsynced tail
  EXPECT_EQ(log->Read(0, 1 << 30).ValueOrDie().back().next_offset(), acknowledged);

  CrashAndReboot(log);
  expected_ = durable;
  log = OpenLog();
  EXPECT_EQ(log->next_offset(), acknowledged);
  EXPECT_EQ(log->durable_offset(), acknowledged);
  CheckReadAll(log.get(), 0);
  AppendMany(log.get(), 200, 5);
  ASSERT_TRUE(log->Sync().ok());
  CheckReadAll(log.get(), 0);
}

TEST_F(LogTest, AcknowledgedBatchesSurviveCrash) {
  options_.checkpoint_interval_bytes = 2048;
  auto log = OpenLog();
  AppendMany(log.get(), 0, 120);
  CrashAndReboot(log);
  log = OpenLog();
  EXPECT_TRUE(log->recovery_info().used_checkpoint);
  CheckReadAll(log.get(), 0);
}

TEST_F(LogTest, TornFrameIsTruncated) {
  options_.segment_bytes = 1 << 20;
  auto log = OpenLog();
  AppendMany(log.get(), 0, 20);
  ASSERT_TRUE(log->Close().ok());
  log.reset();
  // Append the first 100 bytes of a copy of the first frame: a torn write.
  std::string path = ActiveSegmentPath();
  auto file = fs_->OpenFile(path, FileMode::kWrite).ValueOrDie();
  int64_t size = file->Size().ValueOrDie();
  auto head = file->ReadAt(0, 100).ValueOrDie();
  ASSERT_TRUE(file->WriteAt(size, ByteSpan(head->data(), 100)).ok());
  file.reset();

  log = OpenLog();
  EXPECT_EQ(log->recovery_info().bytes_truncated, 100);
  EXPECT_EQ(fs_->FileSize(path).ValueOrDie(), size);
  CheckReadAll(log.get(), 0);
  AppendMany(log.get(), 20, 5);
  CheckReadAll(log.get(), 0);
}

TEST_F(LogTest, DamagedLastFrameIsATornTail) {
  options_.segment_bytes = 1 << 20;
  options_.checkpoint_interval_bytes = int64_t{1} << 40;  // checkpoint only at open
  auto log = OpenLog();
  AppendMany(log.get(), 0, 40);
  CrashAndReboot(log);  // everything was fsynced, but the checkpoint is at offset 0
  const int64_t position = FramePosition(39);
  FlipByte(ActiveSegmentPath(), position + 80);
  log = OpenLog();
  const RecoveryInfo& info = log->recovery_info();
  EXPECT_EQ(info.bytes_truncated, FramePosition(40) - position);
  EXPECT_EQ(info.truncated_position, position);
  EXPECT_EQ(info.truncated_from_offset, expected_[39].base_offset);
  EXPECT_EQ(info.truncated_segment, ActiveSegmentPath());
  EXPECT_NE(info.truncated_reason.find("checksum mismatch"), std::string::npos);
  EXPECT_TRUE(info.damaged.empty());
  EXPECT_EQ(fs_->FileSize(ActiveSegmentPath()).ValueOrDie(), position);
  expected_.resize(39);
  EXPECT_EQ(log->next_offset(), expected_.back().base_offset + expected_.back().rows);
  CheckReadAll(log.get(), 0);
}

TEST_F(LogTest, DamageInTheMiddleOfTheActiveSegmentKeepsTheFramesAfterIt) {
  options_.segment_bytes = 1 << 20;
  options_.checkpoint_interval_bytes = int64_t{1} << 40;
  for (int byte : {80, 24}) {  // a payload byte, then a header field (row count)
    SCOPED_TRACE(byte);
    std::filesystem::remove_all(dir_);
    expected_.clear();
    auto log = OpenLog();
    AppendMany(log.get(), 0, 40);
    CrashAndReboot(log);
    FlipByte(ActiveSegmentPath(), FramePosition(30) + byte);
    log = OpenLog();
    const RecoveryInfo& info = log->recovery_info();
    EXPECT_EQ(info.bytes_truncated, 0);
    ASSERT_EQ(info.damaged.size(), 1u);
    EXPECT_EQ(info.damaged[0].from_offset, expected_[30].base_offset);
    EXPECT_EQ(info.damaged[0].to_offset, expected_[31].base_offset);
    EXPECT_EQ(info.damaged[0].position, FramePosition(30));
    EXPECT_EQ(log->next_offset(), expected_.back().base_offset + expected_.back().rows);
    ExpectDamageRefusedAndSkipped(log.get(), 30);
    // Appends continue after the intact frames; after a clean reopen, which rescans
    // nothing, reads find the same damage.
    AppendMany(log.get(), 40, 3);
    log.reset();
    log = OpenLog();
    ExpectDamageRefusedAndSkipped(log.get(), 30);
    EXPECT_EQ(log->damaged_ranges().size(), 1u);
  }
}

TEST_F(LogTest, DamageInASealedSegmentIsRefusedOnReadAndSkipped) {
  for (int byte : {80, 24, 0}) {  // payload, header field, magic
    SCOPED_TRACE(byte);
    std::filesystem::remove_all(dir_);
    expected_.clear();
    auto log = OpenLog();
    AppendMany(log.get(), 0, 60);
    ASSERT_GT(log->segment_count(), 3);
    ASSERT_TRUE(log->Close().ok());
    log.reset();
    FlipByte(JoinPath(dir_, internal::SegmentFileName(0, ".log")), FramePosition(4) + byte);
    if (byte == 0) {  // and make the index rebuild step over the damaged header
      std::filesystem::remove(JoinPath(dir_, internal::SegmentFileName(0, ".index")));
    }
    log = OpenLog();
    ExpectDamageRefusedAndSkipped(log.get(), 4);
    auto ranges = log->damaged_ranges();
    ASSERT_EQ(ranges.size(), 1u);
    EXPECT_EQ(ranges[0].segment_path, JoinPath(dir_, internal::SegmentFileName(0, ".log")));
  }
}

// Random flips of segment bytes, after a clean close or a crash: whatever the log serves is
// exactly what was written, and whatever it does not serve is reported, as damage or as a
// torn tail cut at open.
TEST_F(LogTest, RandomDamageIsNeverServedAndNeverSilent) {
  options_.flush_policy = FlushPolicy::kInterval;  // one fsync per iteration, not per batch
  options_.flush_interval_ms = 1'000'000;
  options_.flush_bytes = int64_t{1} << 40;
  std::mt19937_64 random(20261201);
  for (int iteration = 0; iteration < 60; ++iteration) {
    SCOPED_TRACE(iteration);
    std::filesystem::remove_all(dir_);
    expected_.clear();
    auto log = OpenLog();
    AppendMany(log.get(), 0, 80);
    ASSERT_TRUE(log->Sync().ok());
    if (iteration % 2 == 0) {
      ASSERT_TRUE(log->Close().ok());
      log.reset();
    } else {
      CrashAndReboot(log);
    }
    std::vector<std::string> segments;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      if (entry.path().extension() == ".log") segments.push_back(entry.path().string());
    }
    std::sort(segments.begin(), segments.end());
    for (int flips = 1 + static_cast<int>(random() % 3); flips > 0; --flips) {
      const std::string& path = segments[random() % segments.size()];
      const auto size = static_cast<int64_t>(std::filesystem::file_size(path));
      if (size > 0) FlipByte(path, static_cast<int64_t>(random() % size));
    }
    log = OpenLog();
    ASSERT_NE(log, nullptr);
    const RecoveryInfo& recovery = log->recovery_info();
    std::map<int64_t, const Expected*> by_offset;
    for (const Expected& e : expected_) by_offset[e.base_offset] = &e;
    std::set<int64_t> served;
    int64_t offset = log->earliest_offset();
    while (offset < log->durable_offset()) {
      auto batches = log->Read(offset, 1 << 14);
      if (!batches.ok()) {
        ASSERT_TRUE(batches.status().IsCorruption()) << batches.status().ToString();
        int64_t skip_to = -1;
        for (const DamagedRange& range : log->damaged_ranges()) {
          if (range.from_offset <= offset && offset < range.to_offset) skip_to = range.to_offset;
        }
        ASSERT_GT(skip_to, offset) << batches.status().ToString();
        offset = skip_to;
        continue;
      }
      ASSERT_FALSE(batches->empty());
      for (const LogBatch& b : *batches) {
        auto it = by_offset.find(b.base_offset);
        ASSERT_NE(it, by_offset.end()) << "served a batch at an offset never written";
        ASSERT_EQ(b.row_count, it->second->rows);
        ASSERT_EQ(b.metadata->view(), MetadataOf(it->second->id));
        ASSERT_EQ(b.body->view(), BodyOf(it->second->id));
        served.insert(b.base_offset);
      }
      offset = batches->back().next_offset();
    }
    for (const Expected& e : expected_) {
      if (served.count(e.base_offset)) continue;
      bool reported =
          recovery.truncated_position >= 0 && e.base_offset >= recovery.truncated_from_offset;
      for (const DamagedRange& range : log->damaged_ranges()) {
        reported |= range.from_offset <= e.base_offset && e.base_offset < range.to_offset;
      }
      EXPECT_TRUE(reported) << "batch at offset " << e.base_offset << " vanished silently";
    }
    log.reset();
  }
}

TEST_F(LogTest, ScrubFindsDamageInSealedSegments) {
  auto log = OpenLog();
  AppendMany(log.get(), 0, 60);
  auto sealed = log->SealedSegments();
  ASSERT_GE(sealed.size(), 3u);
  int64_t total = 0;
  for (int64_t base : sealed) {
    auto scrubbed = log->ScrubSealedSegment(base);
    ASSERT_TRUE(scrubbed.ok()) << scrubbed.status().ToString();
    EXPECT_TRUE(scrubbed->damaged.empty());
    total += scrubbed->bytes_verified;
  }
  EXPECT_GT(total, 3 * 4096 - 1024);
  FlipByte(JoinPath(dir_, internal::SegmentFileName(0, ".log")), FramePosition(2) + 75);
  auto scrubbed = log->ScrubSealedSegment(0);
  ASSERT_TRUE(scrubbed.ok());
  ASSERT_EQ(scrubbed->damaged.size(), 1u);
  EXPECT_EQ(scrubbed->damaged[0].from_offset, expected_[2].base_offset);
  EXPECT_EQ(scrubbed->damaged[0].to_offset, expected_[3].base_offset);
  EXPECT_EQ(log->damaged_ranges().size(), 1u);
  EXPECT_TRUE(log->ScrubSealedSegment(123456).ok());  // no such segment: nothing to do
}

TEST_F(LogTest, ProjectedReadsVerifyOnlyThePiecesServed) {
  options_.segment_bytes = 1 << 20;
  auto log = OpenLog();
  std::string metadata(16, 'm');
  std::string body(3 * 4096, '\0');
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<char>(i % 253);
  ByteSpan meta_pieces[] = {Span(metadata)};
  ByteSpan body_pieces[] = {Span(body)};
  ASSERT_TRUE(log->Append({1, 0, 0, 0}, meta_pieces, body_pieces).ok());
  ASSERT_TRUE(log->Close().ok());
  log.reset();
  // Payload byte 16 + 5000 lies in the second checksum block.
  FlipByte(ActiveSegmentPath(), 64 + 16 + 16 + 5000);
  log = OpenLog();
  EXPECT_TRUE(log->Read(0, 1 << 20).status().IsCorruption());
  auto batches = log->Read(0, 1 << 20, ReadOptions{.verify_body = false});
  ASSERT_TRUE(batches.ok()) << batches.status().ToString();
  const LogBatch& batch = (*batches)[0];
  auto first = Buffer::Slice(batch.body, 0, 4000);
  auto second = Buffer::Slice(batch.body, 4100, 100);
  EXPECT_TRUE(batch.VerifyBodyPiece(*first).ok());
  Status bad = batch.VerifyBodyPiece(*second);
  EXPECT_TRUE(bad.IsCorruption());
  EXPECT_NE(bad.message().find("offsets [0, 1)"), std::string::npos) << bad.message();
  uint8_t elsewhere[8] = {};
  EXPECT_TRUE(batch.VerifyBodyPiece(Buffer(elsewhere, 8, nullptr)).ok());
}

TEST_F(LogTest, ReadsVersion1Frames) {
  // A segment written before checksum blocks existed: one CRC over payload and header.
  std::filesystem::create_directories(dir_);
  std::string segment;
  for (int64_t id = 0; id < 3; ++id) {
    std::string payload = MetadataOf(id) + BodyOf(id);
    std::string frame(64 + (payload.size() + 7) / 8 * 8, '\0');
    auto* p = reinterpret_cast<uint8_t*>(frame.data());
    const uint32_t magic = internal::kFrameMagic;
    const int64_t base = id, max_ts = 1000 + id, min_ts = max_ts - 5;
    const int32_t rows = 1, schema = 7, meta_len = 16;
    const int64_t body_len = static_cast<int64_t>(BodyOf(id).size());
    std::memcpy(p, &magic, 4);
    p[8] = 1;
    p[10] = 64;
    std::memcpy(p + 12, &schema, 4);
    std::memcpy(p + 16, &base, 8);
    std::memcpy(p + 24, &rows, 4);
    std::memcpy(p + 28, &meta_len, 4);
    std::memcpy(p + 32, &body_len, 8);
    std::memcpy(p + 40, &min_ts, 8);
    std::memcpy(p + 48, &max_ts, 8);
    std::memcpy(p + 64, payload.data(), payload.size());
    uint32_t crc = crc32c::Extend(crc32c::Value(payload.data(), payload.size()), p + 8, 56);
    std::memcpy(p + 4, &crc, 4);
    segment += frame;
    expected_.push_back({id, base, 1, max_ts});
  }
  {
    auto file =
        fs_->OpenFile(JoinPath(dir_, internal::SegmentFileName(0, ".log")), FileMode::kCreate)
            .ValueOrDie();
    ASSERT_TRUE(file->WriteAt(0, Span(segment)).ok());
  }
  auto log = OpenLog();
  EXPECT_EQ(log->next_offset(), 3);
  CheckReadAll(log.get(), 0);
  log.reset();
  FlipByte(ActiveSegmentPath(), 64 + 10);  // the first frame's payload: intact frames follow
  std::filesystem::remove(JoinPath(dir_, "recovery-checkpoint"));  // make open rescan it
  log = OpenLog();
  ASSERT_EQ(log->recovery_info().damaged.size(), 1u);
  EXPECT_TRUE(log->Read(0, 1 << 20).status().IsCorruption());
  EXPECT_EQ(log->Read(1, 1 << 20).ValueOrDie().size(), 2u);
}

TEST_F(LogTest, DiskFullFailsAppendAndLeavesLogConsistent) {
  auto log = OpenLog();
  AppendMany(log.get(), 0, 10);
  int64_t next = log->next_offset();
  std::string path = ActiveSegmentPath();
  int64_t size = fs_->FileSize(path).ValueOrDie();

  fs_->FailWrites(Status::ResourceExhausted("disk full: " + path), 30, -1, ".log");
  auto failed = AppendBatch(log.get(), 10);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(failed.status().message().find("disk full"), std::string::npos);
  EXPECT_EQ(log->next_offset(), next);
  EXPECT_EQ(fs_->FileSize(path).ValueOrDie(), size);  // the short write was undone

  // A short write followed by an I/O error behaves the same.
  fs_->FailWrites(Status::IOError("write: Input/output error"), 100, 1, ".log");
  EXPECT_TRUE(AppendBatch(log.get(), 10).status().IsIOError());
  EXPECT_EQ(fs_->FileSize(path).ValueOrDie(), size);

  fs_->ClearFaults();  // space returns
  AppendMany(log.get(), 10, 20);
  EXPECT_EQ(expected_[10].base_offset, next);
  CheckReadAll(log.get(), 0);
  CrashAndReboot(log);
  log = OpenLog();
  CheckReadAll(log.get(), 0);
}

TEST_F(LogTest, FsyncFailureIsNotAcknowledged) {
  auto log = OpenLog();
  AppendMany(log.get(), 0, 10);
  int64_t durable = log->durable_offset();
  fs_->FailSyncs(Status::IOError("fsync: Input/output error"));
  auto r = AppendBatch(log.get(), 10);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsIOError());
  EXPECT_EQ(log->durable_offset(), durable);
  EXPECT_EQ(log->Read(0, 1 << 30).ValueOrDie().size(), 10u);
  fs_->ClearFaults();
  // The page cache can no longer be trusted: the log refuses work until reopened.
  EXPECT_FALSE(AppendBatch(log.get(), 11).ok());
  log.reset();
  log = OpenLog();
  // The unacknowledged batch may or may not have survived; acknowledged ones all did.
  EXPECT_GE(log->next_offset(), durable);
  expected_.resize(10);
  if (log->next_offset() > durable) {
    expected_.push_back({10, durable, RowsOf(10), 1010});
  }
  CheckReadAll(log.get(), 0);
  AppendMany(log.get(), 11, 3);
  CheckReadAll(log.get(), 0);
}

TEST_F(LogTest, ConcurrentAppendersShareFsyncs) {
  options_.segment_bytes = 1 << 20;
  auto log = OpenLog();
  fs_->SetSyncDelay(std::chrono::microseconds(2000));
  fs_->ResetCounters();
  constexpr int kThreads = 8;
  constexpr int kPerThread = 40;
  std::vector<std::vector<std::pair<int64_t, AppendResult>>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        int64_t id = t * 1000 + i;
        auto r = AppendBatch(log.get(), id);
        ASSERT_TRUE(r.ok());
        EXPECT_GE(log->durable_offset(), r->next_offset);  // acknowledged only once durable
        results[t].emplace_back(id, *r);
      }
    });
  }
  for (auto& th : threads) th.join();
  int64_t syncs = fs_->counters().file_syncs;
  for (auto& per_thread : results) {
    for (auto& [id, r] : per_thread)
      expected_.push_back({id, r.base_offset, RowsOf(id), 1000 + id});
  }
  std::sort(expected_.begin(), expected_.end(),
            [](const Expected& a, const Expected& b) { return a.base_offset < b.base_offset; });
  for (size_t i = 1; i < expected_.size(); ++i) {
    ASSERT_EQ(expected_[i].base_offset, expected_[i - 1].base_offset + expected_[i - 1].rows);
  }
  CheckReadAll(log.get(), 0);
  EXPECT_LT(syncs, kThreads * kPerThread / 2) << "group commit did not batch fsyncs";
  std::printf("%d appends, %lld fsyncs\n", kThreads * kPerThread, static_cast<long long>(syncs));
}

TEST_F(LogTest, TailingReaderWakesOnAppend) {
  auto log = OpenLog();
  AppendMany(log.get(), 0, 3);
  int64_t offset = log->durable_offset();
  std::atomic<int64_t> woke_at_ns{0};
  Result<int64_t> woke = Status::Internal("not woken");
  std::thread reader([&] {
    woke = log->WaitForData(offset, std::chrono::steady_clock::now() + std::chrono::seconds(10));
    woke_at_ns = std::chrono::steady_clock::now().time_since_epoch().count();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(woke_at_ns.load(), 0);  // still waiting
  AppendMany(log.get(), 3, 1);
  auto acked_ns = std::chrono::steady_clock::now().time_since_epoch().count();
  reader.join();
  ASSERT_TRUE(woke.ok());
  EXPECT_GT(*woke, offset);
  EXPECT_LT(woke_at_ns.load() - acked_ns, 50'000'000);  // well under 50 ms
  auto batches = log->Read(offset, 1 << 20).ValueOrDie();
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].metadata->view(), MetadataOf(3));

  // A timeout returns the unchanged offset; Close releases waiters.
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(log->WaitForData(*woke, t0 + std::chrono::milliseconds(20)).ValueOrDie(), *woke);
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(log->Close().ok());
  });
  auto closed = log->WaitForData(*woke, t0 + std::chrono::seconds(10));
  closer.join();
  EXPECT_EQ(closed.status().code(), StatusCode::kCancelled);
}

TEST_F(LogTest, IntervalFlushMakesDataDurable) {
  options_.flush_policy = FlushPolicy::kInterval;
  options_.flush_interval_ms = 5;
  auto log = OpenLog();
  auto r = AppendBatch(log.get(), 0);
  ASSERT_TRUE(r.ok());
  auto durable = log->WaitForData(0, std::chrono::steady_clock::now() + std::chrono::seconds(5));
  ASSERT_TRUE(durable.ok());
  EXPECT_EQ(*durable, r->next_offset);
}

TEST_F(LogTest, RecoveryRescansOnlyTheTail) {
  options_.segment_bytes = 1 << 20;
  options_.checkpoint_interval_bytes = 64 << 10;
  options_.flush_policy = FlushPolicy::kInterval;  // fsync every 32 KiB, to keep the test fast
  options_.flush_interval_ms = 1'000'000;
  options_.flush_bytes = 32 << 10;
  auto log = OpenLog();
  AppendMany(log.get(), 0, 30000);  // about 7 MB over several segments
  ASSERT_TRUE(log->Sync().ok());
  int64_t log_bytes = log->size_bytes();
  EXPECT_GT(log_bytes, 4 << 20);

  CrashAndReboot(log);
  fs_->ResetCounters();
  log = OpenLog();
  auto reads = fs_->counters().bytes_read;
  EXPECT_TRUE(log->recovery_info().used_checkpoint);
  EXPECT_LE(log->recovery_info().bytes_verified, (64 << 10) + (1 << 16));
  EXPECT_LT(reads, 256 << 10) << "recovery read " << reads << " of " << log_bytes << " bytes";
  std::printf("crash recovery read %lld of %lld bytes\n", static_cast<long long>(reads),
              static_cast<long long>(log_bytes));
  EXPECT_EQ(log->next_offset(), expected_.back().base_offset + expected_.back().rows);

  // After a clean close nothing is rescanned.
  ASSERT_TRUE(log->Close().ok());
  fs_->ResetCounters();
  log = OpenLog();
  EXPECT_EQ(log->recovery_info().bytes_verified, 0);
  // Only the checkpoint and the last segment's index files (small interval here) are read.
  EXPECT_LT(fs_->counters().bytes_read, 128 << 10);
  CheckReadAll(log.get(), expected_[29000].base_offset);
}

TEST_F(LogTest, RejectsBadBatches) {
  auto log = OpenLog();
  BatchInfo info;
  info.row_count = 0;
  EXPECT_TRUE(log->Append(info, {}, {}).status().IsInvalid());
  info.row_count = 1;
  info.min_timestamp_ms = 5;
  info.max_timestamp_ms = 4;
  EXPECT_TRUE(log->Append(info, {}, {}).status().IsInvalid());
  EXPECT_EQ(log->next_offset(), 0);
  LogOptions bad;
  bad.segment_bytes = 0;
  EXPECT_TRUE(BucketLog::Open(fs_, dir_, bad).status().IsInvalid());
}

// The cold log, with a second local directory as the object store (the S3 suite runs it on S3).
class ColdLogTest : public LogTest {
 protected:
  void SetUp() override {
    LogTest::SetUp();
    cold_fs_ = std::make_shared<FaultInjectionFileSystem>(PosixFileSystem::Default());
    cold_dir_ = JoinPath(tmp_.path(), "cold/7/0");
    options_.retention_ms = -1;
    options_.cold = {cold_fs_, cold_dir_, 60'000, std::make_shared<ColdReadCache>(8192, 512)};
  }
  std::set<std::string> Names(const std::string& dir) {
    std::set<std::string> names;
    if (!std::filesystem::exists(dir)) return names;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      names.insert(e.path().filename().string());
    }
    return names;
  }
  std::set<std::string> SegmentNames(const std::string& dir, const char* suffix) {
    std::set<std::string> out;
    for (const auto& n : Names(dir)) {
      if (n.ends_with(suffix)) out.insert(n);
    }
    return out;
  }
  std::shared_ptr<FaultInjectionFileSystem> cold_fs_;
  std::string cold_dir_;
};

TEST_F(ColdLogTest, OldSegmentsMoveToTheColdStoreAndReadBackExactly) {
  auto log = OpenLog();
  AppendMany(log.get(), 0, 120);
  const auto sealed = log->SealedSegments();
  ASSERT_GE(sealed.size(), 3u);
  EXPECT_EQ(log->OffloadColdSegments().ValueOrDie(), 0);  // not old enough yet
  now_ += 60'001;
  AppendMany(log.get(), 120, 1);
  auto moved = log->OffloadColdSegments();
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_EQ(*moved, static_cast<int>(sealed.size()));
  EXPECT_TRUE(log->SealedSegments().empty() || log->SealedSegments().front() > sealed.back());
  for (int64_t base : sealed) {
    for (const char* suffix : {".log", ".index", ".timeindex"}) {
      const std::string name = internal::SegmentFileName(base, suffix);
      EXPECT_FALSE(std::filesystem::exists(JoinPath(dir_, name))) << name;
      EXPECT_TRUE(std::filesystem::exists(JoinPath(cold_dir_, name))) << name;
    }
  }
  const ColdStatus cold = log->cold_status();
  EXPECT_EQ(cold.segments, static_cast<int64_t>(sealed.size()));
  EXPECT_GT(cold.bytes, 0);
  EXPECT_EQ(cold.error, "");
  EXPECT_EQ(log->earliest_offset(), 0);
  CheckReadAll(log.get(), 0);
  CheckReadAll(log.get(), expected_[37].base_offset + 1, 700);  // mid-batch, small reads
  EXPECT_EQ(log->LookupOffsetByTime(1000 + 50).ValueOrDie(), expected_[50].base_offset);
  // A restart serves the cold segments from the manifest.
  log.reset();
  log = OpenLog();
  EXPECT_EQ(log->cold_status().segments, static_cast<int64_t>(sealed.size()));
  CheckReadAll(log.get(), 0);
}

TEST_F(ColdLogTest, ChecksumsGuardColdBytes) {
  auto log = OpenLog();
  AppendMany(log.get(), 0, 40);
  now_ += 60'001;
  AppendMany(log.get(), 40, 1);
  ASSERT_GT(log->OffloadColdSegments().ValueOrDie(), 0);
  log.reset();
  FlipByte(JoinPath(cold_dir_, internal::SegmentFileName(0, ".log")), FramePosition(3) + 80);
  log = OpenLog();
  auto refused = log->Read(expected_[3].base_offset, 1 << 20);
  ASSERT_TRUE(refused.status().IsCorruption()) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find(cold_dir_), std::string::npos);
}

TEST_F(ColdLogTest, AFailedUploadKeepsTheSegmentAndLeavesNoReferencedObject) {
  auto log = OpenLog();
  AppendMany(log.get(), 0, 60);
  const auto sealed = log->SealedSegments();
  now_ += 60'001;
  AppendMany(log.get(), 60, 1);
  // The second object of the first segment fails half-way.
  cold_fs_->FailWrites(Status::IOError("injected: service unavailable"), 10, 1, ".index");
  auto moved = log->OffloadColdSegments();
  ASSERT_FALSE(moved.ok());
  EXPECT_NE(log->cold_status().error.find("service unavailable"), std::string::npos);
  EXPECT_EQ(log->cold_status().segments, 0);
  EXPECT_EQ(log->SealedSegments(), sealed);
  EXPECT_TRUE(std::filesystem::exists(JoinPath(dir_, internal::SegmentFileName(0, ".log"))));
  EXPECT_FALSE(SegmentNames(cold_dir_, ".log").empty());  // the orphan of the failed attempt
  CheckReadAll(log.get(), 0);
  // The next pass deletes the orphans, then moves everything.
  cold_fs_->ClearFaults();
  ASSERT_EQ(log->OffloadColdSegments().ValueOrDie(), static_cast<int>(sealed.size()));
  EXPECT_EQ(log->cold_status().error, "");
  EXPECT_EQ(SegmentNames(cold_dir_, ".log").size(), sealed.size());
  CheckReadAll(log.get(), 0);
}

// The manifest is copied beside the cold segments before the local one changes, and the copy says
// what they hold; a copy that cannot be written keeps the segment local.
TEST_F(ColdLogTest, TheManifestIsCopiedBesideTheColdSegmentsFirst) {
  auto log = OpenLog();
  AppendMany(log.get(), 0, 60);
  const auto sealed = log->SealedSegments();
  ASSERT_EQ(log->OffloadColdSegments().ValueOrDie(), 0);  // not old enough yet
  now_ += 60'001;
  AppendMany(log.get(), 60, 1);
  cold_fs_->FailWrites(Status::IOError("injected: copy refused"), 0, 1, "cold-segments");
  auto refused = log->OffloadColdSegments();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("copy of the cold-segment manifest"), std::string::npos)
      << refused.status().ToString();
  EXPECT_EQ(log->cold_status().segments, 0);
  EXPECT_EQ(log->SealedSegments(), sealed);
  CheckReadAll(log.get(), 0);
  cold_fs_->ClearFaults();
  ASSERT_EQ(log->OffloadColdSegments().ValueOrDie(), static_cast<int>(sealed.size()));
  auto copy = BucketLog::ReadColdManifestCopy(*cold_fs_, cold_dir_).ValueOrDie();
  ASSERT_TRUE(copy.has_value());
  EXPECT_EQ(copy->first_offset, 0);
  EXPECT_GT(copy->next_offset, sealed.back());  // where the active segment starts
  EXPECT_LE(copy->next_offset, expected_[60].base_offset);
  EXPECT_TRUE(Names(cold_dir_).count("cold-segments"));

  // A new log directory that adopts the copy reads the cold segments exactly.
  log.reset();
  const std::string elsewhere = JoinPath(tmp_.path(), "elsewhere");
  ASSERT_TRUE(BucketLog::AdoptColdManifest(*PosixFileSystem::Default(), elsewhere, *copy).ok());
  auto adopted = BucketLog::Open(PosixFileSystem::Default(), elsewhere, options_).ValueOrDie();
  EXPECT_EQ(adopted->next_offset(), copy->next_offset);
  EXPECT_EQ(adopted->cold_status().segments, static_cast<int64_t>(sealed.size()));
  std::erase_if(expected_, [&](const Expected& e) { return e.base_offset >= copy->next_offset; });
  CheckReadAll(adopted.get(), 0);
  ASSERT_EQ(adopted->OffloadColdSegments().ValueOrDie(), 0);  // its sweep keeps the copy
  EXPECT_TRUE(Names(cold_dir_).count("cold-segments"));
}

TEST_F(ColdLogTest, OrphansFromACrashBeforeTheManifestAreDeleted) {
  auto log = OpenLog();
  AppendMany(log.get(), 0, 60);
  now_ += 60'001;
  AppendMany(log.get(), 60, 1);
  log.reset();
  ASSERT_TRUE(cold_fs_->CreateDirs(cold_dir_).ok());
  const std::string stray = JoinPath(cold_dir_, internal::SegmentFileName(0, ".log"));
  ASSERT_TRUE(WriteFileAtomically(*cold_fs_, cold_dir_, internal::SegmentFileName(0, ".log"),
                                  "half an upload")
                  .ok());
  log = OpenLog();
  ASSERT_GT(log->OffloadColdSegments().ValueOrDie(), 0);
  CheckReadAll(log.get(), 0);  // the stray object was replaced, not served
}

TEST_F(ColdLogTest, RetentionDeletesColdSegmentsAfterTheManifestDropsThem) {
  auto log = OpenLog();
  AppendMany(log.get(), 0, 120);
  now_ += 60'001;
  AppendMany(log.get(), 120, 1);
  const int moved = log->OffloadColdSegments().ValueOrDie();
  ASSERT_GE(moved, 3);
  log.reset();
  options_.retention_ms = 50'000;
  now_ += 1;
  log = OpenLog();  // Open enforces retention
  EXPECT_EQ(log->cold_status().segments, 0);
  EXPECT_EQ(log->cold_status().bytes, 0);
  EXPECT_TRUE(SegmentNames(cold_dir_, ".log").empty());
  EXPECT_GT(log->earliest_offset(), 0);
  CheckReadAll(log.get(), log->earliest_offset());
}

TEST_F(ColdLogTest, TheCacheStaysWithinItsCapacity) {
  auto cache = std::make_shared<ColdReadCache>(4096, 512);
  options_.cold.cache = cache;
  auto log = OpenLog();
  AppendMany(log.get(), 0, 120);
  now_ += 60'001;
  AppendMany(log.get(), 120, 1);
  ASSERT_GT(log->OffloadColdSegments().ValueOrDie(), 0);
  CheckReadAll(log.get(), 0);
  EXPECT_LE(cache->figures().bytes, 4096);
  EXPECT_GT(cache->figures().misses, 0);
  // The read-ahead of the next segments (in the background) stays within it too. Hits of
  // repeated reads: ColdReadCacheTest.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (cache->figures().prefetched == 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "no read-ahead ran";
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  CheckReadAll(log.get(), 0);
  EXPECT_LE(cache->figures().bytes, 4096);
}

}  // namespace
}  // namespace oxbow::log
