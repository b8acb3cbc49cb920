// What a bucket log does for replication (docs/cluster.md): appends of fetched batches,
// truncation to a new leader's log, and the leader-epoch file (docs/log-format.md).
#include <algorithm>
#include <sstream>

#include "oxbow/log/bucket_log.h"
#include "oxbow/log/cold_manifest_internal.h"
#include "oxbow/log/segment_internal.h"

namespace oxbow::log {

using internal::FrameScanner;
using internal::ScannedFrame;

namespace {

constexpr char kLeaderEpochsName[] = "leader-epochs";
constexpr char kLeaderEpochsHeader[] = "oxbow-leader-epochs 1";
constexpr char kSuffixes[][11] = {".log", ".index", ".timeindex"};

Status RemoveIfPresent(FileSystem& fs, const std::string& path) {
  Status st = fs.Remove(path);
  return st.IsNotFound() ? Status::OK() : st;
}

}  // namespace

Result<AppendResult> BucketLog::AppendReplica(const ReplicaBatchInfo& batch,
                                              std::span<const ByteSpan> metadata,
                                              std::span<const ByteSpan> body) {
  ASSIGN_OR_RAISE(std::string checksum_table, CheckBatch(batch.info, metadata, body));
  if (batch.leader_epoch > LatestLeaderEpoch().epoch) {
    RETURN_NOT_OK(AssignLeaderEpoch(batch.leader_epoch, batch.base_offset));
  }
  std::unique_lock lock(mutex_);
  bool rolled = false;
  ASSIGN_OR_RAISE(AppendResult result,
                  AppendLocked(batch.info, checksum_table, metadata, body, &rolled, &batch));
  const bool wait = options_.flush_policy == FlushPolicy::kInterval &&
                    written_bytes_ - durable_bytes_ >= options_.flush_bytes;
  lock.unlock();
  if (wait) RETURN_NOT_OK(WaitDurable(result.next_offset));
  if (rolled && options_.on_roll) options_.on_roll();
  return result;
}

Result<int64_t> BucketLog::TruncateTo(int64_t offset) {
  std::lock_guard retention(retention_mutex_);
  std::unique_lock lock(mutex_);
  if (closing_) return Status::Invalid("bucket log " + dir_ + " is closed");
  // An fsync under way would raise durable_offset_ past the cut when it ends.
  durable_cv_.wait(lock, [&] { return !sync_in_progress_; });
  if (offset >= next_offset_) return next_offset_;
  if (offset < segments_.begin()->first) {
    return Status::Invalid("cannot truncate bucket log " + dir_ + " to offset " +
                           std::to_string(offset) + ": it starts at " +
                           std::to_string(segments_.begin()->first));
  }
  auto cut = std::prev(segments_.upper_bound(offset));
  if (cut->second.cold) {
    return Status::Invalid("cannot truncate bucket log " + dir_ + " to offset " +
                           std::to_string(offset) + ": that part is in the cold log");
  }
  // The first frame of the segment that ends after `offset`: the log is cut where it starts.
  const bool active = std::next(cut) == segments_.end();
  const int64_t size = active ? write_position_ : cut->second.size;
  const internal::Segment& segment = *cut->second.segment;
  FrameScanner scanner(segment.file(), 0, size, cut->first, FrameScanner::Mode::kHeaders,
                       int64_t{64} << 10);
  int64_t position = 0;
  ScannedFrame frame;
  while (true) {
    ASSIGN_OR_RAISE(bool more, scanner.Next(&frame));
    if (!more || frame.header.next_offset() > offset) break;
    position = frame.position + frame.header.frame_length();
  }
  // Later segments go first, newest first, so that a crash leaves a prefix of the log.
  for (auto it = std::prev(segments_.end()); it != cut; --it) {
    for (const char* suffix : kSuffixes) {
      RETURN_NOT_OK(
          RemoveIfPresent(*fs_, JoinPath(dir_, internal::SegmentFileName(it->first, suffix))));
    }
  }
  {
    // A sealed segment is open for reading only.
    ASSIGN_OR_RAISE(auto file, fs_->OpenFile(segment.log_path(), FileMode::kWrite));
    RETURN_NOT_OK(file->Truncate(position));
    RETURN_NOT_OK(file->Sync());
  }
  for (const char* suffix : {".index", ".timeindex"}) {
    RETURN_NOT_OK(
        RemoveIfPresent(*fs_, JoinPath(dir_, internal::SegmentFileName(cut->first, suffix))));
  }
  RETURN_NOT_OK(fs_->SyncDir(dir_));
  RETURN_NOT_OK(ReloadLocked());
  const int64_t end = next_offset_;
  if (high_watermark_ != INT64_MAX) high_watermark_ = std::min(high_watermark_, end);
  durable_cv_.notify_all();
  lock.unlock();
  RETURN_NOT_OK(TruncateLeaderEpochs(end));
  return end;
}

Status BucketLog::ResetTo(int64_t next_offset) {
  std::lock_guard retention(retention_mutex_);
  std::unique_lock lock(mutex_);
  if (closing_) return Status::Invalid("bucket log " + dir_ + " is closed");
  durable_cv_.wait(lock, [&] { return !sync_in_progress_; });
  if (!cold_manifest_.empty()) {
    return Status::Invalid("cannot reset bucket log " + dir_ + ": it has cold segments");
  }
  for (auto it = segments_.rbegin(); it != segments_.rend(); ++it) {
    for (const char* suffix : kSuffixes) {
      RETURN_NOT_OK(
          RemoveIfPresent(*fs_, JoinPath(dir_, internal::SegmentFileName(it->first, suffix))));
    }
  }
  RETURN_NOT_OK(RemoveIfPresent(*fs_, JoinPath(dir_, "recovery-checkpoint")));
  ASSIGN_OR_RAISE(SegmentPtr fresh, CreateSegment(next_offset));
  fresh.reset();
  RETURN_NOT_OK(ReloadLocked());
  if (high_watermark_ != INT64_MAX) high_watermark_ = std::min(high_watermark_, next_offset_);
  durable_cv_.notify_all();
  lock.unlock();
  std::lock_guard epochs(epochs_mutex_);
  leader_epochs_.clear();
  return PersistLeaderEpochs(leader_epochs_);
}

Status BucketLog::ReloadLocked() {
  segments_.clear();
  active_.reset();
  cold_manifest_.clear();
  sealed_bytes_ = 0;
  write_position_ = 0;
  active_durable_position_ = 0;
  cold_bytes_ = 0;
  cold_count_ = 0;
  {
    std::lock_guard checkpoint(checkpoint_mutex_);
    checkpoint_segment_ = -1;
    checkpoint_size_ = -1;
  }
  const RecoveryInfo at_open = recovery_;
  Status st = Recover();
  recovery_ = at_open;
  durable_bytes_ = written_bytes_;
  if (!st.ok()) failed_ = st.WithContext("reloading after a truncation; reopen the log");
  return st;
}

// <dir>/leader-epochs: a header line, then one "<epoch> <start offset>" line per epoch, oldest
// first; replaced atomically.
Status BucketLog::LoadLeaderEpochs() {
  auto bytes = ReadWholeFile(*fs_, JoinPath(dir_, kLeaderEpochsName));
  if (bytes.status().IsNotFound()) return Status::OK();
  RETURN_NOT_OK(bytes.status());
  std::istringstream in(std::string((*bytes)->view()));
  std::string header;
  std::getline(in, header);
  if (header != kLeaderEpochsHeader) {
    return Status::Corruption(JoinPath(dir_, kLeaderEpochsName) + " is not a leader-epoch file");
  }
  std::vector<EpochEnd> epochs;
  EpochEnd entry;
  while (in >> entry.epoch >> entry.end_offset) {
    if (!epochs.empty() &&
        (entry.epoch <= epochs.back().epoch || entry.end_offset < epochs.back().end_offset)) {
      return Status::Corruption(JoinPath(dir_, kLeaderEpochsName) + ": epochs out of order");
    }
    epochs.push_back(entry);
  }
  // A crash between a truncation and the rewrite of this file leaves epochs past the log end.
  const int64_t end = next_offset();
  std::erase_if(epochs, [&](const EpochEnd& e) { return e.end_offset > end; });
  std::lock_guard lock(epochs_mutex_);
  leader_epochs_ = std::move(epochs);
  return Status::OK();
}

Status BucketLog::PersistLeaderEpochs(const std::vector<EpochEnd>& epochs) {
  std::string text = std::string(kLeaderEpochsHeader) + "\n";
  for (const EpochEnd& e : epochs) {
    text += std::to_string(e.epoch) + " " + std::to_string(e.end_offset) + "\n";
  }
  return WriteFileAtomically(*fs_, dir_, kLeaderEpochsName, text);
}

Status BucketLog::AssignLeaderEpoch(int32_t epoch, int64_t start_offset) {
  std::lock_guard lock(epochs_mutex_);
  if (!leader_epochs_.empty()) {
    if (epoch == leader_epochs_.back().epoch) return Status::OK();
    if (epoch < leader_epochs_.back().epoch) {
      return Status::Invalid("leader epoch " + std::to_string(epoch) + " is older than " +
                             std::to_string(leader_epochs_.back().epoch));
    }
  }
  std::vector<EpochEnd> next = leader_epochs_;
  std::erase_if(next, [&](const EpochEnd& e) { return e.end_offset >= start_offset; });
  next.push_back({epoch, start_offset});
  RETURN_NOT_OK(PersistLeaderEpochs(next));
  leader_epochs_ = std::move(next);
  return Status::OK();
}

Status BucketLog::TruncateLeaderEpochs(int64_t offset) {
  std::lock_guard lock(epochs_mutex_);
  std::vector<EpochEnd> next = leader_epochs_;
  std::erase_if(next, [&](const EpochEnd& e) { return e.end_offset >= offset; });
  if (next.size() == leader_epochs_.size()) return Status::OK();
  RETURN_NOT_OK(PersistLeaderEpochs(next));
  leader_epochs_ = std::move(next);
  return Status::OK();
}

EpochEnd BucketLog::LatestLeaderEpoch() const {
  std::lock_guard lock(epochs_mutex_);
  return leader_epochs_.empty() ? EpochEnd{} : leader_epochs_.back();
}

EpochEnd BucketLog::EndOffsetForEpoch(int32_t epoch) const {
  const int64_t end = next_offset();
  std::lock_guard lock(epochs_mutex_);
  auto after = std::upper_bound(leader_epochs_.begin(), leader_epochs_.end(), epoch,
                                [](int32_t e, const EpochEnd& entry) { return e < entry.epoch; });
  if (after == leader_epochs_.begin()) return {};
  return {std::prev(after)->epoch, after == leader_epochs_.end() ? end : after->end_offset};
}

int32_t BucketLog::LeaderEpochAt(int64_t offset) const {
  std::lock_guard lock(epochs_mutex_);
  auto after =
      std::upper_bound(leader_epochs_.begin(), leader_epochs_.end(), offset,
                       [](int64_t o, const EpochEnd& entry) { return o < entry.end_offset; });
  return after == leader_epochs_.begin() ? -1 : std::prev(after)->epoch;
}

}  // namespace oxbow::log
