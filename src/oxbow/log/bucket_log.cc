#include "oxbow/log/bucket_log.h"

#include <algorithm>
#include <limits>

#include "oxbow/common/crc32c.h"
#include "oxbow/common/parse.h"
#include "oxbow/log/byte_order_internal.h"
#include "oxbow/log/cold_manifest_internal.h"
#include "oxbow/log/segment_internal.h"

namespace oxbow::log {

using internal::DamagedSpan;
using internal::FrameHeader;
using internal::FrameScanner;
using internal::Get;
using internal::Put;
using internal::ScannedFrame;
using internal::Segment;
using internal::SegmentState;

namespace {

constexpr char kCheckpointName[] = "recovery-checkpoint";
// The log start DeleteBefore set, in decimal (docs/log-format.md#log-start).
constexpr char kLogStartName[] = "log-start";
constexpr char kCheckpointTmpName[] = "recovery-checkpoint.tmp";
constexpr uint32_t kCheckpointMagic = 0x5043584F;  // bytes "OXCP"
constexpr uint32_t kCheckpointVersion = 1;
constexpr int64_t kCheckpointSize = 88;
constexpr int64_t kMaxSegmentBytes = int64_t{1} << 32;
constexpr int64_t kHeaderScanChunk = 16 * 1024;
constexpr int64_t kMinReadChunk = 64 * 1024;
const uint8_t kZeros[internal::kFrameAlignment] = {};

// Parses "<20 digits><suffix>"; returns -1 for other names.
int64_t ParseSegmentName(const std::string& name, const std::string& suffix) {
  if (name.size() != 20 + suffix.size() || name.compare(20, suffix.size(), suffix) != 0) {
    return -1;
  }
  int64_t value = 0;
  for (int i = 0; i < 20; ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    if (value > (std::numeric_limits<int64_t>::max() - (name[i] - '0')) / 10) return -1;
    value = value * 10 + (name[i] - '0');
  }
  return value;
}

DamagedRange ToRange(const Segment& segment, const DamagedSpan& span) {
  return {segment.log_path(), span.position,   span.end_position,
          span.first_offset,  span.end_offset, span.reason};
}

Status DamageStatus(const Segment& segment, const DamagedSpan& span) {
  return Status::Corruption("offsets [" + std::to_string(span.first_offset) + ", " +
                            std::to_string(span.end_offset) + ") are damaged in segment " +
                            segment.log_path() + " at byte " + std::to_string(span.position) +
                            " (" + span.reason + "); reading from offset " +
                            std::to_string(span.end_offset) + " continues after them");
}

int64_t TotalSize(std::span<const ByteSpan> pieces) {
  int64_t total = 0;
  for (const ByteSpan& p : pieces) total += static_cast<int64_t>(p.size());
  return total;
}

}  // namespace

// The durable state of the active segment at some fsync: recovery trusts it and rescans
// only what follows.
struct BucketLog::Checkpoint {
  SegmentPtr segment;
  int64_t segment_base = 0;
  SegmentState state;

  std::string Encode() const {
    std::string out(kCheckpointSize, '\0');
    auto* p = reinterpret_cast<uint8_t*>(out.data());
    Put<uint32_t>(p, 0, kCheckpointMagic);
    Put<uint32_t>(p, 4, kCheckpointVersion);
    Put<int64_t>(p, 8, segment_base);
    Put<int64_t>(p, 16, state.size);
    Put<int64_t>(p, 24, state.next_offset);
    Put<int64_t>(p, 32, state.last_base_offset);
    Put<int64_t>(p, 40, state.max_timestamp_ms);
    Put<int64_t>(p, 48, state.first_append_ms);
    Put<int64_t>(p, 56, state.last_append_ms);
    Put<int64_t>(p, 64, state.offset_entries);
    Put<int64_t>(p, 72, state.time_entries);
    Put<uint32_t>(p, 80, crc32c::Value(p, 80));
    return out;
  }

  static Result<Checkpoint> Decode(const Buffer& bytes) {
    const uint8_t* p = bytes.data();
    if (bytes.size() != kCheckpointSize || Get<uint32_t>(p, 0) != kCheckpointMagic ||
        Get<uint32_t>(p, 4) != kCheckpointVersion || Get<uint32_t>(p, 80) != crc32c::Value(p, 80)) {
      return Status::Corruption("invalid recovery checkpoint");
    }
    Checkpoint c;
    c.segment_base = Get<int64_t>(p, 8);
    c.state.size = Get<int64_t>(p, 16);
    c.state.next_offset = Get<int64_t>(p, 24);
    c.state.last_base_offset = Get<int64_t>(p, 32);
    c.state.max_timestamp_ms = Get<int64_t>(p, 40);
    c.state.first_append_ms = Get<int64_t>(p, 48);
    c.state.last_append_ms = Get<int64_t>(p, 56);
    c.state.offset_entries = Get<int64_t>(p, 64);
    c.state.time_entries = Get<int64_t>(p, 72);
    const SegmentState& s = c.state;
    if (s.size < 0 || s.next_offset < c.segment_base || s.offset_entries < 0 ||
        s.time_entries < 0 || (s.size > 0) != (s.offset_entries > 0)) {
      return Status::Corruption("inconsistent recovery checkpoint");
    }
    return c;
  }
};

BucketLog::BucketLog(std::shared_ptr<FileSystem> fs, std::string dir, LogOptions options)
    : fs_(std::move(fs)),
      dir_(std::move(dir)),
      options_(std::move(options)),
      retention_floor_(options_.retention_floor) {}

BucketLog::~BucketLog() { (void)Close(); }

int64_t BucketLog::Now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<std::unique_ptr<BucketLog>> BucketLog::Open(std::shared_ptr<FileSystem> fs, std::string dir,
                                                   LogOptions options) {
  if (options.segment_bytes <= 0 || options.segment_bytes > kMaxSegmentBytes) {
    return Status::Invalid("segment_bytes must be in (0, 4 GiB], got " +
                           std::to_string(options.segment_bytes));
  }
  if (options.index_interval_bytes <= 0 || options.checkpoint_interval_bytes <= 0) {
    return Status::Invalid("index_interval_bytes and checkpoint_interval_bytes must be positive");
  }
  if (options.flush_policy == FlushPolicy::kInterval &&
      (options.flush_interval_ms <= 0 || options.flush_bytes <= 0)) {
    return Status::Invalid("flush_interval_ms and flush_bytes must be positive");
  }
  if (options.cold.fs && !options.cold.cache) {
    return Status::Invalid("a cold log needs a read cache");
  }
  std::unique_ptr<BucketLog> log(new BucketLog(std::move(fs), std::move(dir), std::move(options)));
  RETURN_NOT_OK(log->Recover().WithContext("open bucket log " + log->dir_));
  RETURN_NOT_OK(log->LoadLeaderEpochs().WithContext("open bucket log " + log->dir_));
  RETURN_NOT_OK(log->LoadLogStart().WithContext("open bucket log " + log->dir_));
  if (log->options_.flush_policy == FlushPolicy::kInterval) {
    log->flusher_ = std::thread([raw = log.get()] { raw->FlusherLoop(); });
  }
  RETURN_NOT_OK(log->EnforceRetention());
  return log;
}

Status BucketLog::Recover() {
  RETURN_NOT_OK(fs_->CreateDirs(dir_));
  ASSIGN_OR_RAISE(auto names, fs_->ListDir(dir_));
  std::vector<int64_t> bases;
  std::vector<std::pair<int64_t, std::string>> index_files;
  for (const std::string& name : names) {
    if (int64_t base = ParseSegmentName(name, ".log"); base >= 0) {
      bases.push_back(base);
    } else if (int64_t b = ParseSegmentName(name, ".index"); b >= 0) {
      index_files.emplace_back(b, name);
    } else if (int64_t t = ParseSegmentName(name, ".timeindex"); t >= 0) {
      index_files.emplace_back(t, name);
    } else if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) {
      RETURN_NOT_OK(fs_->Remove(JoinPath(dir_, name)));
    }
  }
  std::sort(bases.begin(), bases.end());
  RETURN_NOT_OK(LoadColdManifest(&bases));
  // Index files whose segment retention (or the cold log) already removed.
  for (const auto& [base, name] : index_files) {
    if (!std::binary_search(bases.begin(), bases.end(), base)) {
      RETURN_NOT_OK(fs_->Remove(JoinPath(dir_, name)));
    }
  }
  recovery_.segments = static_cast<int64_t>(bases.size());
  if (bases.empty()) {
    const int64_t base = cold_manifest_.empty() ? 0 : cold_manifest_.back().next_offset;
    ASSIGN_OR_RAISE(active_, CreateSegment(base));
    segments_[base] = {active_, 0};
    recovery_.segments = 1;
    next_offset_ = durable_offset_ = base;
    return Status::OK();
  }
  // Every segment but the last was fsynced before its successor was created: trust it.
  for (size_t i = 0; i + 1 < bases.size(); ++i) {
    std::string path = JoinPath(dir_, internal::SegmentFileName(bases[i], ".log"));
    ASSIGN_OR_RAISE(auto file, fs_->OpenFile(path, FileMode::kRead));
    ASSIGN_OR_RAISE(int64_t size, file->Size());
    auto segment = std::make_shared<Segment>(fs_.get(), dir_, bases[i], std::move(file),
                                             options_.index_interval_bytes);
    segments_[bases[i]] = {segment, size};
    sealed_bytes_ += size;
  }
  int64_t last = bases.back();
  ASSIGN_OR_RAISE(auto file, fs_->OpenFile(JoinPath(dir_, internal::SegmentFileName(last, ".log")),
                                           FileMode::kWrite));
  ASSIGN_OR_RAISE(int64_t size_before, file->Size());
  active_ = std::make_shared<Segment>(fs_.get(), dir_, last, std::move(file),
                                      options_.index_interval_bytes);
  SegmentState trusted;
  trusted.next_offset = last;
  auto checkpoint_file = fs_->OpenFile(JoinPath(dir_, kCheckpointName), FileMode::kRead);
  if (checkpoint_file.ok()) {
    ASSIGN_OR_RAISE(auto bytes, (*checkpoint_file)->ReadAt(0, kCheckpointSize + 1));
    auto checkpoint = Checkpoint::Decode(*bytes);
    if (checkpoint.ok() && checkpoint->segment_base == last &&
        checkpoint->state.size <= size_before) {
      trusted = checkpoint->state;
      recovery_.used_checkpoint = true;
    }
  } else if (!checkpoint_file.status().IsNotFound()) {
    return checkpoint_file.status();
  }
  ASSIGN_OR_RAISE(internal::SegmentRecovery found, active_->Recover(trusted));
  recovery_.bytes_verified = found.bytes_verified;
  recovery_.bytes_truncated = found.truncated_bytes;
  if (found.truncated_position >= 0) {
    recovery_.truncated_segment = active_->log_path();
    recovery_.truncated_position = found.truncated_position;
    recovery_.truncated_from_offset = found.truncated_from_offset;
    recovery_.truncated_reason = found.truncated_reason;
  }
  for (const DamagedSpan& span : active_->damage()) {
    recovery_.damaged.push_back(ToRange(*active_, span));
  }
  SegmentState state = active_->state();
  segments_[last] = {active_, 0};
  write_position_ = state.size;
  active_durable_position_ = state.size;
  next_offset_ = durable_offset_ = state.next_offset;
  // Write a checkpoint now so the next open, even after a crash, rescans nothing.
  Checkpoint checkpoint{active_, last, state};
  return WriteCheckpoint(checkpoint);
}

Result<BucketLog::SegmentPtr> BucketLog::CreateSegment(int64_t base_offset) {
  std::string path = JoinPath(dir_, internal::SegmentFileName(base_offset, ".log"));
  ASSIGN_OR_RAISE(auto file, fs_->OpenFile(path, FileMode::kCreate));
  RETURN_NOT_OK(file->Truncate(0));  // a leftover of an earlier failed roll
  RETURN_NOT_OK(fs_->SyncDir(dir_));
  return std::make_shared<Segment>(fs_.get(), dir_, base_offset, std::move(file),
                                   options_.index_interval_bytes);
}

Result<AppendResult> BucketLog::Append(const BatchInfo& info, std::span<const ByteSpan> metadata,
                                       std::span<const ByteSpan> body) {
  ASSIGN_OR_RAISE(std::string checksum_table, CheckBatch(info, metadata, body));
  std::unique_lock lock(mutex_);
  bool rolled = false;
  ASSIGN_OR_RAISE(AppendResult result, AppendLocked(info, checksum_table, metadata, body, &rolled));
  bool wait = options_.flush_policy == FlushPolicy::kEveryAppend ||
              written_bytes_ - durable_bytes_ >= options_.flush_bytes;
  lock.unlock();
  if (wait) RETURN_NOT_OK(WaitDurable(result.next_offset));
  if (rolled && options_.on_roll) options_.on_roll();
  return result;
}

Result<AppendResult> BucketLog::AppendAsync(const BatchInfo& info,
                                            std::span<const ByteSpan> metadata,
                                            std::span<const ByteSpan> body) {
  ASSIGN_OR_RAISE(std::string checksum_table, CheckBatch(info, metadata, body));
  std::unique_lock lock(mutex_);
  bool rolled = false;
  ASSIGN_OR_RAISE(AppendResult result, AppendLocked(info, checksum_table, metadata, body, &rolled));
  lock.unlock();
  if (rolled && options_.on_roll) options_.on_roll();
  return result;
}

Result<std::string> BucketLog::CheckBatch(const BatchInfo& info, std::span<const ByteSpan> metadata,
                                          std::span<const ByteSpan> body) {
  if (info.row_count <= 0) {
    return Status::Invalid("a batch needs at least one row, got " + std::to_string(info.row_count));
  }
  if (info.min_timestamp_ms > info.max_timestamp_ms) {
    return Status::Invalid("batch min timestamp " + std::to_string(info.min_timestamp_ms) +
                           " exceeds max timestamp " + std::to_string(info.max_timestamp_ms));
  }
  int64_t metadata_length = TotalSize(metadata);
  if (metadata_length > std::numeric_limits<int32_t>::max()) {
    return Status::Invalid("batch metadata of " + std::to_string(metadata_length) +
                           " bytes exceeds 2 GiB");
  }
  // The payload checksums need no offset, so they are computed outside the append lock; the
  // header CRC covers them.
  return internal::EncodeChecksumTable(metadata, body, metadata_length + TotalSize(body));
}

Result<AppendResult> BucketLog::AppendLocked(const BatchInfo& info,
                                             const std::string& checksum_table,
                                             std::span<const ByteSpan> metadata,
                                             std::span<const ByteSpan> body, bool* rolled,
                                             const ReplicaBatchInfo* replica) {
  if (closing_) return Status::Invalid("bucket log " + dir_ + " is closed");
  if (!failed_.ok()) return failed_;
  if (!replica && !fence_.ok()) return fence_;
  if (replica && replica->base_offset != next_offset_) {
    return Status::Invalid("a replicated batch at offset " + std::to_string(replica->base_offset) +
                           " does not continue the log, which ends at " +
                           std::to_string(next_offset_));
  }
  FrameHeader header;
  header.schema_id = info.schema_id;
  header.base_offset = next_offset_;
  header.row_count = info.row_count;
  header.metadata_length = static_cast<int32_t>(TotalSize(metadata));
  header.body_length = TotalSize(body);
  header.min_timestamp_ms = info.min_timestamp_ms;
  header.max_timestamp_ms = info.max_timestamp_ms;
  header.append_time_ms = replica ? replica->append_time_ms : Now();
  int64_t frame_length = header.frame_length();

  if (write_position_ > 0) {
    SegmentState state = active_->state();
    bool full = write_position_ + frame_length > options_.segment_bytes;
    bool old = options_.segment_ms >= 0 && state.first_append_ms >= 0 &&
               header.append_time_ms - state.first_append_ms >= options_.segment_ms;
    bool offsets_exhausted =
        header.next_offset() - active_->base_offset() > std::numeric_limits<uint32_t>::max();
    if (full || old || offsets_exhausted) {
      RETURN_NOT_OK(RollLocked());
      *rolled = true;
    }
  }

  uint8_t header_bytes[internal::kFrameHeaderSize];
  internal::EncodeFrameHeader(header, checksum_table, header_bytes);
  std::vector<ByteSpan> pieces;
  pieces.reserve(metadata.size() + body.size() + 3);
  pieces.emplace_back(header_bytes, sizeof(header_bytes));
  pieces.emplace_back(reinterpret_cast<const uint8_t*>(checksum_table.data()),
                      checksum_table.size());
  pieces.insert(pieces.end(), metadata.begin(), metadata.end());
  pieces.insert(pieces.end(), body.begin(), body.end());
  if (header.padding() > 0) pieces.emplace_back(kZeros, static_cast<size_t>(header.padding()));

  Status written = active_->file()->WriteAt(write_position_, pieces);
  if (!written.ok()) {
    // Remove whatever prefix reached the file, so the log ends at the last whole frame.
    Status undone = active_->file()->Truncate(write_position_);
    if (!undone.ok()) failed_ = undone.WithContext("cannot undo a failed append; reopen the log");
    return written.WithContext("append at offset " + std::to_string(header.base_offset));
  }
  active_->AddFrame(header);
  write_position_ += frame_length;
  next_offset_ = header.next_offset();
  written_bytes_ += frame_length;
  appended_cv_.notify_all();
  return AppendResult{header.base_offset, header.next_offset()};
}

Status BucketLog::RollLocked() {
  SegmentPtr old = active_;
  Status sealed = old->Seal();
  if (!sealed.ok()) {
    // An fsync failure leaves the page cache state unknown: stop until reopened.
    failed_ = sealed.WithContext("sealing segment " + old->log_path() + "; reopen the log");
    durable_cv_.notify_all();
    return failed_;
  }
  // Everything written so far is durable now.
  durable_offset_ = next_offset_;
  durable_bytes_ = written_bytes_;
  durable_cv_.notify_all();
  ASSIGN_OR_RAISE(SegmentPtr segment, CreateSegment(next_offset_));
  segments_[old->base_offset()].size = write_position_;
  sealed_bytes_ += write_position_;
  segments_[next_offset_] = {segment, 0};
  active_ = segment;
  write_position_ = 0;
  active_durable_position_ = 0;
  return Status::OK();
}

Status BucketLog::WaitDurable(int64_t offset) {
  std::unique_lock lock(mutex_);
  while (durable_offset_ < offset) {
    if (!failed_.ok()) return failed_;
    if (offset > next_offset_) {
      return Status::Invalid("cannot wait for offset " + std::to_string(offset) + ": only " +
                             std::to_string(next_offset_) + " appended");
    }
    if (!sync_in_progress_) {
      sync_in_progress_ = true;
      RETURN_NOT_OK(LeadSync(lock));
    } else {
      durable_cv_.wait(lock);
    }
  }
  return Status::OK();
}

Status BucketLog::LeadSync(std::unique_lock<std::mutex>& lock) {
  SegmentPtr segment = active_;
  int64_t target_offset = next_offset_;
  int64_t target_position = write_position_;
  int64_t target_bytes = written_bytes_;
  Checkpoint checkpoint{segment, segment->base_offset(), segment->state()};
  lock.unlock();
  const auto sync_start = std::chrono::steady_clock::now();
  Status synced = segment->file()->Sync();
  if (options_.on_fsync) {
    options_.on_fsync(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - sync_start).count());
  }
  lock.lock();
  sync_in_progress_ = false;
  if (!synced.ok()) {
    if (failed_.ok()) failed_ = synced.WithContext("fsync failed; reopen the log");
    durable_cv_.notify_all();
    return failed_;
  }
  durable_offset_ = std::max(durable_offset_, target_offset);
  durable_bytes_ = std::max(durable_bytes_, target_bytes);
  if (segment == active_) {
    active_durable_position_ = std::max(active_durable_position_, target_position);
  }
  durable_cv_.notify_all();
  if (durable_bytes_ - checkpointed_bytes_ < options_.checkpoint_interval_bytes) {
    return Status::OK();
  }
  checkpointed_bytes_ = durable_bytes_;
  lock.unlock();
  // A failed checkpoint costs only a longer rescan at the next open.
  (void)WriteCheckpoint(checkpoint);
  lock.lock();
  return Status::OK();
}

Status BucketLog::WriteCheckpoint(const Checkpoint& checkpoint) {
  std::lock_guard lock(checkpoint_mutex_);
  if (checkpoint.segment_base < checkpoint_segment_ ||
      (checkpoint.segment_base == checkpoint_segment_ &&
       checkpoint.state.size <= checkpoint_size_)) {
    return Status::OK();  // a newer checkpoint is already written
  }
  // The index entries the checkpoint counts must be durable before it is.
  RETURN_NOT_OK(checkpoint.segment->PersistIndexes(checkpoint.state.offset_entries,
                                                   checkpoint.state.time_entries, true));
  std::string tmp = JoinPath(dir_, kCheckpointTmpName);
  {
    ASSIGN_OR_RAISE(auto file, fs_->OpenFile(tmp, FileMode::kCreate));
    RETURN_NOT_OK(file->Truncate(0));
    std::string bytes = checkpoint.Encode();
    RETURN_NOT_OK(
        file->WriteAt(0, ByteSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
    RETURN_NOT_OK(file->Sync());
  }
  RETURN_NOT_OK(fs_->Rename(tmp, JoinPath(dir_, kCheckpointName)));
  RETURN_NOT_OK(fs_->SyncDir(dir_));
  checkpoint_segment_ = checkpoint.segment_base;
  checkpoint_size_ = checkpoint.state.size;
  return Status::OK();
}

Status BucketLog::Sync() {
  int64_t target;
  {
    std::lock_guard lock(mutex_);
    target = next_offset_;
  }
  return WaitDurable(target);
}

int64_t BucketLog::EndLocked(ReadLimit limit) const {
  switch (limit) {
    case ReadLimit::kWritten: return next_offset_;
    case ReadLimit::kDurable: return durable_offset_;
    case ReadLimit::kVisible: break;
  }
  return std::min(durable_offset_, high_watermark_);
}

Result<int64_t> BucketLog::WaitForData(int64_t offset,
                                       std::chrono::steady_clock::time_point deadline,
                                       ReadLimit limit) {
  std::unique_lock lock(mutex_);
  std::condition_variable& cv = limit == ReadLimit::kWritten ? appended_cv_ : durable_cv_;
  cv.wait_until(lock, deadline,
                [&] { return EndLocked(limit) > offset || closing_ || !failed_.ok(); });
  if (EndLocked(limit) > offset) return EndLocked(limit);
  if (!failed_.ok()) return failed_;
  if (closing_) return Status::Cancelled("bucket log " + dir_ + " is closed");
  return EndLocked(limit);
}

std::vector<BucketLog::ReadableSegment> BucketLog::ReadableSegments(int64_t from_offset) const {
  std::vector<ReadableSegment> out;
  auto it = segments_.upper_bound(from_offset);
  if (it != segments_.begin()) --it;
  for (; it != segments_.end(); ++it) {
    auto next = std::next(it);
    ReadableSegment r;
    r.segment = it->second.segment;
    if (next == segments_.end()) {
      r.size = write_position_;
      r.durable_end = active_durable_position_;
      r.next_offset = next_offset_;
    } else {
      r.size = r.durable_end = it->second.size;
      r.next_offset = next->first;
      r.sealed = true;
      r.cold = it->second.cold;
      r.last_append_ms = it->second.last_append_ms;
    }
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<LogBatch>> BucketLog::Read(int64_t from_offset, int64_t max_bytes,
                                              const ReadOptions& options) {
  std::vector<ReadableSegment> segments;
  int64_t earliest, durable;
  {
    std::lock_guard lock(mutex_);
    earliest = EarliestLocked();
    durable = EndLocked(options.limit);
    if (from_offset >= earliest && from_offset < durable) segments = ReadableSegments(from_offset);
    if (options.limit == ReadLimit::kWritten && !segments.empty()) {
      segments.back().durable_end = segments.back().size;  // the active segment, fsynced or not
    }
  }
  if (from_offset < earliest || from_offset > durable) {
    return Status::OutOfRange("offset " + std::to_string(from_offset) + " is outside [" +
                              std::to_string(earliest) + ", " + std::to_string(durable) + "]");
  }
  std::vector<LogBatch> batches;
  int64_t bytes = 0;
  int64_t offset = from_offset;
  for (size_t i = 0; i < segments.size(); ++i) {
    const ReadableSegment& r = segments[i];
    if (offset >= durable || (!batches.empty() && bytes >= max_bytes)) break;
    // A reader of the cold log is most likely sequential: the next two cold segments' indexes
    // and first bytes are fetched while this one is read and sent.
    for (size_t next = i + 1; r.cold && next <= i + 2 && next < segments.size(); ++next) {
      if (!segments[next].cold) break;
      const Segment& segment = *segments[next].segment;
      for (File* file : {segment.cold_index(), segment.cold_time_index(), segment.file()}) {
        options_.cold.cache->Prefetch(file);
      }
    }
    if (r.sealed) RETURN_NOT_OK(r.segment->EnsureIndexed(r.size, r.next_offset));
    Segment& segment = *r.segment;
    // Offsets a damaged span at the end of what readers may see would reach.
    const int64_t end_offset = r.sealed ? r.next_offset : durable;
    // A cold segment is read a cache block at a time: such a read is a view of the cached
    // bytes (a long read would copy the blocks of two fetches into one buffer).
    const int64_t chunk =
        r.cold ? options_.cold.cache->block_bytes() : std::max(kMinReadChunk, max_bytes - bytes);
    // From the index entry at or below `offset`, walk frames to the one holding it.
    auto [position, expected] = segment.FloorEntry(offset);
    FrameScanner scanner(segment.file(), position, r.durable_end, expected,
                         FrameScanner::Mode::kPayloads, chunk);
    while (batches.empty() || bytes < max_bytes) {
      ScannedFrame frame;
      auto more = scanner.Next(&frame);
      DamagedSpan damage;
      if (!more.ok()) {
        if (more.status().code() != StatusCode::kCorruption) return more.status();
        ASSIGN_OR_RAISE(damage, segment.DescribeDamage(scanner.position(), r.durable_end,
                                                       scanner.expected_offset(), end_offset,
                                                       more.status().message()));
      } else {
        if (!*more) break;
        const FrameHeader& h = frame.header;
        if (h.base_offset >= durable) break;
        if (h.next_offset() <= offset) continue;
        if (!batches.empty() && bytes + h.frame_length() > max_bytes) {
          bytes = max_bytes;
          break;
        }
        const int64_t verified_length =
            options.verify_body ? h.payload_length() : h.metadata_length;
        Status verified = internal::VerifyFramePayload(frame.bytes->data(), h, 0, verified_length);
        if (verified.ok()) {
          auto stored = std::make_shared<internal::StoredFrame>(
              internal::StoredFrame{r.segment, h, frame.position, frame.bytes});
          LogBatch batch;
          batch.base_offset = h.base_offset;
          batch.row_count = h.row_count;
          batch.min_timestamp_ms = h.min_timestamp_ms;
          batch.max_timestamp_ms = h.max_timestamp_ms;
          batch.append_time_ms = h.append_time_ms;
          batch.schema_id = h.schema_id;
          batch.metadata = Buffer::Slice(frame.bytes, h.payload_position(), h.metadata_length);
          batch.body =
              Buffer::Slice(frame.bytes, h.payload_position() + h.metadata_length, h.body_length);
          batch.stored = std::move(stored);
          batches.push_back(std::move(batch));
          bytes += h.frame_length();
          offset = h.next_offset();
          continue;
        }
        if (h.version == internal::kFrameVersion1) {
          // One CRC covers the header too: its lengths cannot be trusted.
          ASSIGN_OR_RAISE(damage,
                          segment.DescribeDamage(frame.position, r.durable_end, h.base_offset,
                                                 end_offset, verified.message()));
        } else {
          damage = {frame.position, frame.position + h.frame_length(), h.base_offset,
                    h.next_offset(), verified.message()};
          segment.RecordDamage(damage);
        }
      }
      // Serve what came before the damage; refuse it; step over it for a later offset.
      if (!batches.empty()) return batches;
      if (damage.end_offset > offset) return DamageStatus(segment, damage);
      scanner = FrameScanner(segment.file(), damage.end_position, r.durable_end, damage.end_offset,
                             FrameScanner::Mode::kPayloads, chunk);
    }
  }
  return batches;
}

Status LogBatch::VerifyBodyPiece(const Buffer& piece) const {
  const uint8_t* begin = body->data();
  if (piece.data() < begin || piece.data() >= begin + body->size() || piece.size() == 0) {
    return Status::OK();
  }
  const internal::FrameHeader& h = stored->header;
  const int64_t from = h.metadata_length + (piece.data() - begin);
  Status verified = internal::VerifyFramePayload(stored->bytes->data(), h, from, piece.size());
  if (verified.ok()) return verified;
  DamagedSpan damage{stored->position, stored->position + h.frame_length(), h.base_offset,
                     h.next_offset(), verified.message()};
  stored->segment->RecordDamage(damage);
  return DamageStatus(*stored->segment, damage);
}

Result<int64_t> BucketLog::LookupOffsetByTime(int64_t timestamp_ms) {
  std::vector<ReadableSegment> segments;
  int64_t durable;
  {
    std::lock_guard lock(mutex_);
    durable = std::min(durable_offset_, high_watermark_);
    segments = ReadableSegments(segments_.begin()->first);
  }
  for (const ReadableSegment& r : segments) {
    if (r.sealed) RETURN_NOT_OK(r.segment->EnsureIndexed(r.size, r.next_offset));
    if (r.segment->state().max_timestamp_ms < timestamp_ms) continue;
    FrameScanner scanner(r.segment->file(), r.segment->TimeFloorPosition(timestamp_ms),
                         r.durable_end, -1, FrameScanner::Mode::kHeaders, kHeaderScanChunk);
    ScannedFrame frame;
    while (true) {
      auto more = scanner.Next(&frame);
      if (!more.ok()) {
        // Damaged headers are stepped over: the answer is the first intact frame that fits.
        if (more.status().code() != StatusCode::kCorruption) return more.status();
        ASSIGN_OR_RAISE(
            DamagedSpan damage,
            r.segment->DescribeDamage(scanner.position(), r.durable_end, scanner.expected_offset(),
                                      r.sealed ? r.next_offset : durable, more.status().message()));
        scanner = FrameScanner(r.segment->file(), damage.end_position, r.durable_end, -1,
                               FrameScanner::Mode::kHeaders, kHeaderScanChunk);
        continue;
      }
      if (!*more || frame.header.base_offset >= durable) break;
      if (frame.header.max_timestamp_ms >= timestamp_ms) {
        return std::max(frame.header.base_offset, earliest_offset());
      }
    }
  }
  return durable;
}

std::vector<DamagedRange> BucketLog::damaged_ranges() const {
  std::vector<SegmentPtr> segments;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [base, entry] : segments_) segments.push_back(entry.segment);
  }
  std::vector<DamagedRange> out;
  for (const SegmentPtr& segment : segments) {
    for (const DamagedSpan& span : segment->damage()) out.push_back(ToRange(*segment, span));
  }
  return out;
}

std::vector<int64_t> BucketLog::SealedSegments() const {
  std::lock_guard lock(mutex_);
  std::vector<int64_t> bases;
  for (const auto& [base, entry] : segments_) {
    if (entry.segment != active_ && !entry.cold) bases.push_back(base);
  }
  return bases;
}

Result<ScrubResult> BucketLog::ScrubSealedSegment(int64_t base_offset) {
  std::optional<ReadableSegment> target;
  {
    std::lock_guard lock(mutex_);
    for (const ReadableSegment& r : ReadableSegments(base_offset)) {
      if (r.sealed && !r.cold && r.segment->base_offset() == base_offset) target = r;
      break;
    }
  }
  ScrubResult result;
  if (!target) return result;
  Segment& segment = *target->segment;
  int64_t position = 0;
  int64_t expected = base_offset;
  while (position < target->size) {
    FrameScanner scanner(segment.file(), position, target->size, expected,
                         FrameScanner::Mode::kVerify, kMinReadChunk);
    ScannedFrame frame;
    Result<bool> more = true;
    while ((more = scanner.Next(&frame)).ok() && *more) {
    }
    result.bytes_verified += scanner.bytes_read();
    if (more.ok()) break;
    if (more.status().code() != StatusCode::kCorruption) return more.status();
    ASSIGN_OR_RAISE(
        DamagedSpan damage,
        segment.DescribeDamage(scanner.position(), target->size, scanner.expected_offset(),
                               target->next_offset, more.status().message()));
    result.damaged.push_back(ToRange(segment, damage));
    position = damage.end_position;
    expected = damage.end_offset;
  }
  return result;
}

bool BucketLog::closing() const {
  std::lock_guard lock(mutex_);
  return closing_;
}

int64_t BucketLog::EarliestLocked() const { return std::max(segments_.begin()->first, log_start_); }

int64_t BucketLog::log_start() const {
  std::lock_guard lock(mutex_);
  return log_start_;
}

int64_t BucketLog::earliest_offset() const {
  std::lock_guard lock(mutex_);
  return EarliestLocked();
}

Status BucketLog::LoadLogStart() {
  auto bytes = ReadWholeFile(*fs_, JoinPath(dir_, kLogStartName));
  if (bytes.status().IsNotFound()) return Status::OK();
  RETURN_NOT_OK(bytes.status());
  auto start = ParseInt64(std::string((*bytes)->view()));
  if (!start.ok() || *start < 0) {
    return Status::Corruption(JoinPath(dir_, kLogStartName) + " holds no offset");
  }
  std::lock_guard lock(mutex_);
  log_start_ = *start;
  return Status::OK();
}

Status BucketLog::DeleteBefore(int64_t offset) {
  {
    std::lock_guard lock(mutex_);
    const int64_t visible = std::min(durable_offset_, high_watermark_);
    if (offset > visible) {
      return Status::OutOfRange("offset " + std::to_string(offset) +
                                " is past the end of bucket log " + dir_ + " (" +
                                std::to_string(visible) + ")");
    }
    if (offset <= EarliestLocked()) return Status::OK();
  }
  // Durable before readers see it, so a crash never brings deleted offsets back.
  std::lock_guard retention(retention_mutex_);
  RETURN_NOT_OK(WriteFileAtomically(*fs_, dir_, kLogStartName, std::to_string(offset)));
  {
    std::lock_guard lock(mutex_);
    log_start_ = std::max(log_start_, offset);
  }
  return Status::OK();
}

int64_t BucketLog::next_offset() const {
  std::lock_guard lock(mutex_);
  return next_offset_;
}

int64_t BucketLog::durable_offset() const {
  std::lock_guard lock(mutex_);
  return durable_offset_;
}

int64_t BucketLog::visible_offset() const {
  std::lock_guard lock(mutex_);
  return std::min(durable_offset_, high_watermark_);
}

void BucketLog::SetHighWatermark(int64_t offset) {
  std::lock_guard lock(mutex_);
  high_watermark_ = offset;
  durable_cv_.notify_all();
}

int64_t BucketLog::high_watermark() const {
  std::lock_guard lock(mutex_);
  return high_watermark_;
}

void BucketLog::FenceAppends(Status reason) {
  std::lock_guard lock(mutex_);
  fence_ = std::move(reason);
}

void BucketLog::UnfenceAppends() {
  std::lock_guard lock(mutex_);
  fence_ = Status::OK();
}

int64_t BucketLog::size_bytes() const {
  std::lock_guard lock(mutex_);
  return sealed_bytes_ + write_position_;
}

int64_t BucketLog::segment_count() const {
  std::lock_guard lock(mutex_);
  return static_cast<int64_t>(segments_.size()) - cold_count_;
}

ColdStatus BucketLog::cold_status() const {
  std::lock_guard lock(mutex_);
  return {cold_count_, cold_bytes_, cold_error_};
}

void BucketLog::SetRetentionFloor(int64_t offset) {
  std::lock_guard lock(mutex_);
  retention_floor_ = offset;
}

Result<int> BucketLog::EnforceRetention() {
  std::lock_guard retention_lock(retention_mutex_);
  std::vector<ReadableSegment> sealed;
  int64_t total, floor, start;
  {
    std::lock_guard lock(mutex_);
    start = log_start_;
    if (options_.retention_bytes < 0 && options_.retention_ms < 0 &&
        start <= segments_.begin()->first) {
      return 0;
    }
    total = sealed_bytes_ + write_position_ + cold_bytes_;
    floor = retention_floor_;
    for (const ReadableSegment& r : ReadableSegments(segments_.begin()->first)) {
      if (r.sealed) sealed.push_back(r);
    }
  }
  int64_t now = Now();
  std::vector<ReadableSegment> doomed;
  for (const ReadableSegment& r : sealed) {
    if (r.next_offset > floor) break;
    const bool deleted = r.next_offset <= start;
    bool by_size =
        deleted || (options_.retention_bytes >= 0 && total - r.size >= options_.retention_bytes);
    bool by_age = false;
    if (!by_size && options_.retention_ms >= 0) {
      int64_t last_append_ms = r.last_append_ms;
      if (!r.cold) {
        RETURN_NOT_OK(r.segment->EnsureIndexed(r.size, r.next_offset));
        last_append_ms = r.segment->state().last_append_ms;
      }
      by_age = now - last_append_ms > options_.retention_ms;
    }
    if (!by_size && !by_age) break;
    doomed.push_back(r);
    total -= r.size;
  }
  if (doomed.empty()) return 0;
  // Cold segments leave the manifest first: a crash then leaves only unreferenced objects.
  int64_t cold_doomed = 0;
  for (const ReadableSegment& r : doomed) cold_doomed += r.cold ? 1 : 0;
  if (cold_doomed > 0) {
    RETURN_NOT_OK(WriteColdManifest(std::vector<internal::ColdSegment>(
        cold_manifest_.begin() + cold_doomed, cold_manifest_.end())));
  }
  {
    std::lock_guard lock(mutex_);
    for (const ReadableSegment& r : doomed) {
      segments_.erase(r.segment->base_offset());
      if (r.cold) {
        cold_bytes_ -= r.size;
        cold_count_--;
      } else {
        sealed_bytes_ -= r.size;
      }
    }
  }
  Status cold_removed;
  for (const ReadableSegment& r : doomed) {
    if (!r.cold) continue;
    Status st = RemoveColdObjects(r.segment->base_offset());
    if (cold_removed.ok()) cold_removed = st;
  }
  // Oldest first, the log file before its indexes: a crash leaves no gap, at most orphan
  // index files that the next open removes.
  for (const ReadableSegment& r : doomed) {
    if (r.cold) continue;
    RETURN_NOT_OK(fs_->Remove(r.segment->log_path()));
    for (const std::string& path : {r.segment->index_path(), r.segment->time_index_path()}) {
      Status removed = fs_->Remove(path);
      if (!removed.ok() && !removed.IsNotFound()) return removed;
    }
  }
  RETURN_NOT_OK(fs_->SyncDir(dir_));
  RETURN_NOT_OK(cold_removed);
  return static_cast<int>(doomed.size());
}

void BucketLog::FlusherLoop() {
  std::unique_lock lock(mutex_);
  while (!closing_) {
    flusher_cv_.wait_for(lock, std::chrono::milliseconds(options_.flush_interval_ms));
    if (closing_) break;
    if (durable_offset_ < next_offset_ && !sync_in_progress_ && failed_.ok()) {
      sync_in_progress_ = true;
      (void)LeadSync(lock);
    }
  }
}

Status BucketLog::Close() {
  std::lock_guard close_lock(close_mutex_);
  if (closed_) return Status::OK();
  closed_ = true;
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
    appended_cv_.notify_all();
    durable_cv_.notify_all();
    flusher_cv_.notify_all();
  }
  if (flusher_.joinable()) flusher_.join();
  // Waits for a move to the cold log in progress; later ones see closing_ and do nothing.
  { std::lock_guard offload_lock(offload_mutex_); }
  {
    std::lock_guard lock(mutex_);
    if (!active_) return Status::OK();  // Open failed before recovery made a segment
  }
  RETURN_NOT_OK(Sync());
  Checkpoint checkpoint;
  {
    std::lock_guard lock(mutex_);
    checkpoint = {active_, active_->base_offset(), active_->state()};
  }
  return WriteCheckpoint(checkpoint);
}

}  // namespace oxbow::log
