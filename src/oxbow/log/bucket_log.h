// BucketLog: the durable, append-only log of one bucket of a log table.
//
// Each appended batch is an opaque payload (an Arrow IPC encapsulated message: metadata then
// body) plus a few facts (row count, timestamps, schema id). Offsets count rows: a batch of n
// rows at base offset o covers o..o+n-1 and the next batch starts at o+n. Segment files,
// indexes, the recovery checkpoint and the flush policies are described in docs/log-format.md.
//
// Thread safety: every method may be called from any thread. Appends are serialized; reads
// run concurrently with appends and with each other.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "oxbow/common/buffer.h"
#include "oxbow/common/file_system.h"
#include "oxbow/common/status.h"
#include "oxbow/log/cold_cache.h"

namespace oxbow::log {

namespace internal {
class Segment;
struct StoredFrame;
struct ColdSegment;
}  // namespace internal

enum class FlushPolicy {
  // Every batch is fsynced before Append returns; concurrent appenders share fsyncs (group
  // commit). Nothing acknowledged is ever lost.
  kEveryAppend,
  // Append returns once the batch is written; a background thread fsyncs every
  // flush_interval_ms, and an appender fsyncs inline once flush_bytes are unsynced. A crash
  // loses at most the unsynced tail. Readers still see only fsynced data.
  kInterval,
};

// Where a log moves its cold segments: the cold log (docs/storage.md#cold-log).
struct ColdLogOptions {
  // The object store (an S3FileSystem, or a local directory). Default (null): no cold log.
  std::shared_ptr<FileSystem> fs;
  // This bucket's directory in it, e.g. "s3://bucket/warehouse/_log/7/0".
  std::string dir;
  // Sealed segments whose newest batch was appended longer ago than this move to the cold
  // store (OffloadColdSegments). Default: -1, never.
  int64_t local_retention_ms = -1;
  // The cache reads of cold segments go through; required with `fs`.
  std::shared_ptr<ColdReadCache> cache;
};

struct LogOptions {
  // A segment is rolled before a batch that would grow it past this size. Default 256 MiB;
  // at most 4 GiB (index positions are 32-bit).
  int64_t segment_bytes = int64_t{256} << 20;
  // A segment is rolled once its first batch was appended this long ago. Default 7 days;
  // -1 = never.
  int64_t segment_ms = int64_t{7} * 24 * 3600 * 1000;
  // The sparse offset index gets an entry every this many segment bytes. Default 4 KiB.
  int64_t index_interval_bytes = 4096;
  // Old segments are deleted while the rest still holds this many bytes. Default -1 = no limit.
  int64_t retention_bytes = -1;
  // Segments whose newest batch was appended longer ago than this are deleted. Default 7 days;
  // -1 = no limit.
  int64_t retention_ms = int64_t{7} * 24 * 3600 * 1000;
  // Default kEveryAppend (group commit).
  FlushPolicy flush_policy = FlushPolicy::kEveryAppend;
  // kInterval only: fsync at least this often. Default 10 ms.
  int64_t flush_interval_ms = 10;
  // kInterval only: fsync inline once this many bytes are unsynced. Default 1 MiB.
  int64_t flush_bytes = int64_t{1} << 20;
  // The recovery checkpoint is rewritten after this many newly durable bytes, which bounds
  // what Open must rescan after a crash. Default 64 MiB.
  int64_t checkpoint_interval_bytes = int64_t{64} << 20;
  // Retention never deletes a segment holding an offset >= this, from the moment the log
  // opens (SetRetentionFloor moves it later). Default: INT64_MAX, no floor.
  int64_t retention_floor = INT64_MAX;
  // Wall clock in ms since the epoch, for append times, segment age and retention.
  // Default (empty): the system clock.
  std::function<int64_t()> clock;
  // Called with the duration in seconds of each fsync of a segment (metrics). Default: none.
  std::function<void(double)> on_fsync;
  // Called after an append rolled the segment, outside the log's locks. Retention never runs
  // on the append path (its deletes may go to the object store): the engine wakes its
  // background retention pass here. Default: none.
  std::function<void()> on_roll;
  // The cold log. Default: none.
  ColdLogOptions cold;
};

// Facts about a batch, given by the appender.
struct BatchInfo {
  int32_t row_count = 0;  // > 0
  int64_t min_timestamp_ms = 0;
  int64_t max_timestamp_ms = 0;  // >= min_timestamp_ms
  int32_t schema_id = 0;
};

struct AppendResult {
  int64_t base_offset = 0;
  int64_t next_offset = 0;  // base_offset + row_count
};

// How far a read, or a wait for data, may go.
enum class ReadLimit {
  kVisible,  // visible_offset(): fsynced and below the high watermark (what clients see)
  kDurable,  // durable_offset(), past the high watermark
  kWritten,  // next_offset(), fsynced or not: what a leader serves its followers
};

struct ReadOptions {
  // Verify the checksums of every body byte before returning a batch. Default: true. A reader
  // that serves only parts of a body (a column projection) sets false and verifies the parts
  // it serves with LogBatch::VerifyBodyPiece. Metadata is always verified.
  bool verify_body = true;
  ReadLimit limit = ReadLimit::kVisible;
};

// A batch fetched from a bucket's leader (cluster mode), appended by a follower as it is.
struct ReplicaBatchInfo {
  BatchInfo info;
  int64_t base_offset = 0;     // must be next_offset()
  int64_t append_time_ms = 0;  // the leader's, kept
  int32_t leader_epoch = 0;    // the epoch the leader wrote it in
};

// A leader epoch and an offset (Kafka KIP-101): where the epoch starts, or where it ends.
// {-1, -1}: none known.
struct EpochEnd {
  int32_t epoch = -1;
  int64_t end_offset = -1;
};

// A batch as stored. `metadata` and `body` are zero-copy slices of the segment data; body
// starts 8-byte aligned in memory when the metadata length is a multiple of 8 (as Arrow IPC
// guarantees).
struct LogBatch {
  int64_t base_offset = 0;
  int32_t row_count = 0;
  int64_t min_timestamp_ms = 0;
  int64_t max_timestamp_ms = 0;
  int64_t append_time_ms = 0;
  int32_t schema_id = 0;
  std::shared_ptr<Buffer> metadata;
  std::shared_ptr<Buffer> body;
  // Where the batch is stored, for VerifyBodyPiece.
  std::shared_ptr<const internal::StoredFrame> stored;

  int64_t next_offset() const { return base_offset + row_count; }
  // Verifies the stored checksums of the bytes of `body` that `piece` covers; a piece that is
  // not part of `body` (padding made elsewhere) is skipped. Corruption names the damage.
  Status VerifyBodyPiece(const Buffer& piece) const;
};

// A stretch of a segment holding no intact frame: offsets [from_offset, to_offset) cannot be
// served. Reads of them fail with Corruption; a reader may continue at to_offset.
struct DamagedRange {
  std::string segment_path;
  int64_t position = 0;      // first damaged byte in the segment
  int64_t end_position = 0;  // where the next intact frame starts
  int64_t from_offset = 0;
  int64_t to_offset = 0;
  std::string reason;
};

// What Open found and did; for logging and tests.
struct RecoveryInfo {
  int64_t segments = 0;
  bool used_checkpoint = false;
  int64_t bytes_verified = 0;   // bytes rescanned (CRC-checked) after the checkpoint
  int64_t bytes_truncated = 0;  // torn tail removed: damage with no intact frame after it
  // Where the torn tail began, and the first offset it would have held (-1: nothing removed).
  std::string truncated_segment;
  int64_t truncated_position = -1;
  int64_t truncated_from_offset = -1;
  std::string truncated_reason;
  // Damage in the middle of the last segment, with intact frames after it (kept; see
  // damaged_ranges()).
  std::vector<DamagedRange> damaged;
};

// What ScrubSealedSegment verified.
struct ScrubResult {
  int64_t bytes_verified = 0;
  std::vector<DamagedRange> damaged;  // damage it found (new or already known)
};

// The log's segments in the cold store.
struct ColdStatus {
  int64_t segments = 0;
  int64_t bytes = 0;
  // Why the last OffloadColdSegments failed; empty after one that succeeded.
  std::string error;
};

// The copy of a log's cold-segment manifest that lives beside its cold segments (in
// ColdLogOptions::dir), from which a lost data dir is rebuilt: the offsets its segments hold.
struct ColdManifestCopy {
  int64_t first_offset = 0;
  int64_t next_offset = 0;
  std::string encoded;
};

class BucketLog {
 public:
  // Opens (creating when absent) the log in directory `dir`, recovering after a crash.
  static Result<std::unique_ptr<BucketLog>> Open(std::shared_ptr<FileSystem> fs, std::string dir,
                                                 LogOptions options = {});
  // The copy of the cold-segment manifest in `cold_dir`; nullopt when there is none or it lists
  // no segment. Corruption naming it when it is damaged.
  static Result<std::optional<ColdManifestCopy>> ReadColdManifestCopy(FileSystem& cold_fs,
                                                                      const std::string& cold_dir);
  // Makes the new log directory `dir` start as the cold segments `copy` lists: opened with the
  // same cold store, the log then continues after them.
  static Status AdoptColdManifest(FileSystem& fs, const std::string& dir,
                                  const ColdManifestCopy& copy);
  ~BucketLog();  // Close()s, ignoring errors
  BucketLog(const BucketLog&) = delete;
  BucketLog& operator=(const BucketLog&) = delete;

  // Appends one batch whose payload is the concatenation of `metadata` then `body` pieces,
  // written straight from the caller's memory with one vectored write. Under kEveryAppend
  // it returns once the batch is durable; under kInterval once it is written. A failed
  // append leaves nothing visible and later appends may succeed (except after an fsync
  // failure, which fails the log until it is reopened).
  Result<AppendResult> Append(const BatchInfo& info, std::span<const ByteSpan> metadata,
                              std::span<const ByteSpan> body);
  // Like Append, but never waits for durability; follow with WaitDurable(next_offset).
  Result<AppendResult> AppendAsync(const BatchInfo& info, std::span<const ByteSpan> metadata,
                                   std::span<const ByteSpan> body);
  // Blocks until every batch below `offset` is durable. The first waiter fsyncs on behalf of
  // all others (group commit).
  Status WaitDurable(int64_t offset);
  // Makes everything appended so far durable.
  Status Sync();

  // Up to `max_bytes` of durable batches starting with the one that contains `from_offset`
  // (always at least one batch when one is available). Empty at durable_offset();
  // OutOfRange below earliest_offset() or above durable_offset().
  // Every byte returned has been verified against its checksum (see ReadOptions). Batches
  // before damage are returned; a read that starts in damage fails with Corruption naming
  // the segment, the byte position and the offsets that cannot be served.
  Result<std::vector<LogBatch>> Read(int64_t from_offset, int64_t max_bytes,
                                     const ReadOptions& options = {});
  // Blocks until the end `limit` names is > `offset`, the deadline passes, or the log closes,
  // and returns that end. Tailing readers wake within microseconds of an fsync or a move of the
  // high watermark; followers (kWritten) of an append.
  Result<int64_t> WaitForData(int64_t offset, std::chrono::steady_clock::time_point deadline,
                              ReadLimit limit = ReadLimit::kVisible);
  // The base offset of the first durable batch whose max timestamp is >= `timestamp_ms`, or
  // durable_offset() when there is none.
  Result<int64_t> LookupOffsetByTime(int64_t timestamp_ms);

  int64_t earliest_offset() const;
  // The start DeleteBefore set (0: never set); earliest_offset() also counts retention.
  int64_t log_start() const;
  int64_t next_offset() const;     // the offset the next append gets
  int64_t durable_offset() const;  // batches below it are fsynced
  // What readers see: min(durable_offset(), high_watermark()).
  int64_t visible_offset() const;

  // Replication (docs/cluster.md). The high watermark bounds what readers see (Read,
  // WaitForData, LookupOffsetByTime); it is INT64_MAX until first set, so a log outside cluster
  // mode serves everything durable. Setting it wakes waiting readers.
  void SetHighWatermark(int64_t offset);
  int64_t high_watermark() const;
  FlushPolicy flush_policy() const { return options_.flush_policy; }
  // Appends a batch fetched from the leader byte for byte at the leader's offset and append time
  // (so its checksums and offsets equal the leader's), recording its leader epoch. Returns once
  // written (under kInterval fsyncing inline past flush_bytes, as Append does); under
  // kEveryAppend the follower makes a fetched run durable with WaitDurable(next_offset()) before
  // it reports its log end to the leader. Invalid unless batch.base_offset == next_offset().
  // Ignores FenceAppends.
  Result<AppendResult> AppendReplica(const ReplicaBatchInfo& batch,
                                     std::span<const ByteSpan> metadata,
                                     std::span<const ByteSpan> body);
  // Removes every batch that ends after `offset` (a follower dropping what its new leader does
  // not have): next_offset() becomes the end of the last batch kept (<= offset), the durable
  // offset and the high watermark (once set) drop to it, later segments and leader epochs go. A
  // crash midway leaves a prefix of the old log. Invalid when the cut falls in the cold log or
  // below the log's start. The caller makes sure no append runs meanwhile. Returns the new end.
  Result<int64_t> TruncateTo(int64_t offset);
  // Deletes every segment and leader epoch and restarts the log empty at `next_offset` (a
  // follower whose leader no longer has the offsets it would fetch next). Local logs only.
  Status ResetTo(int64_t next_offset);
  // Records that leader epoch `epoch` begins at `start_offset` (persisted in the bucket dir,
  // docs/log-format.md): dropped epochs that start at or after it, ignored when `epoch` is the
  // latest already, Invalid when it is older.
  Status AssignLeaderEpoch(int32_t epoch, int64_t start_offset);
  // The latest epoch and its start offset (in end_offset); {-1, -1} when none was assigned.
  EpochEnd LatestLeaderEpoch() const;
  // Kafka's OffsetsForLeaderEpoch: the largest epoch <= `epoch` and where it ends (the start of
  // the next epoch, or next_offset() for the latest); {-1, -1} when none is <= `epoch`.
  EpochEnd EndOffsetForEpoch(int32_t epoch) const;
  // The epoch the batch at `offset` was written in; -1 when unknown.
  int32_t LeaderEpochAt(int64_t offset) const;
  // While fenced, Append and AppendAsync fail with `reason` (a follower's log, a leader whose
  // leadership ended); checked under the append lock, so no append starts after the fence.
  void FenceAppends(Status reason);
  void UnfenceAppends();
  int64_t size_bytes() const;     // total bytes of the local segments
  int64_t segment_count() const;  // local segments
  ColdStatus cold_status() const;
  const RecoveryInfo& recovery_info() const { return recovery_; }
  // Damage known so far (found at open, by reads, or by scrubbing), oldest offset first.
  std::vector<DamagedRange> damaged_ranges() const;

  // Base offsets of the local sealed segments, oldest first.
  std::vector<int64_t> SealedSegments() const;
  // Verifies every checksum of the sealed segment at `base_offset` (a segment retention has
  // deleted meanwhile verifies nothing). Damage found is also kept in damaged_ranges().
  Result<ScrubResult> ScrubSealedSegment(int64_t base_offset);

  // Retention never deletes a segment holding an offset >= `offset` (e.g. not yet tiered).
  // Default: no floor.
  void SetRetentionFloor(int64_t offset);
  // Deletes whole old segments past retention_bytes / retention_ms, or wholly below the log
  // start (DeleteBefore), never the active one nor one past the retention floor; cold ones
  // included (their objects after the manifest no longer lists them). Runs at open; the owner
  // runs it in the background, periodically and after rolls (LogOptions::on_roll). Returns the
  // number of segments deleted.
  Result<int> EnforceRetention();
  // Moves the log start up to `offset` (Kafka's DeleteRecords), durably: offsets below it are
  // no longer read, and the segments wholly below it go at the next EnforceRetention. A start
  // at or below the current one changes nothing; one past the visible end is OutOfRange.
  Status DeleteBefore(int64_t offset);

  // Moves the local sealed segments older than cold.local_retention_ms to the cold store, oldest
  // first: upload, verify by reading back (size and CRC32C), record in the cold-segment
  // manifest, and only then delete the local files. Reads of their offsets then go to the cold
  // store. A failure leaves the segment local (retried at the next call) and its partial
  // objects unreferenced (deleted by the next call). Returns how many segments moved.
  Result<int> OffloadColdSegments();

  // Makes everything durable, writes the recovery checkpoint, and stops. Idempotent.
  Status Close();

 private:
  struct Checkpoint;
  using SegmentPtr = std::shared_ptr<internal::Segment>;
  struct SegmentEntry {
    SegmentPtr segment;
    int64_t size = 0;  // sealed segments only; the active one's is write_position_
    bool cold = false;
    int64_t last_append_ms = -1;  // cold segments only (from the manifest)
  };
  struct ReadableSegment {
    SegmentPtr segment;
    int64_t size = 0;         // bytes in the file
    int64_t durable_end = 0;  // readers stop here
    int64_t next_offset = 0;  // offset after the segment's last batch
    bool sealed = false;
    bool cold = false;
    int64_t last_append_ms = -1;  // cold segments only
  };

  BucketLog(std::shared_ptr<FileSystem> fs, std::string dir, LogOptions options);

  int64_t Now() const;
  bool closing() const;
  Status Recover();
  // Validates a batch and returns the checksum table of its payload.
  static Result<std::string> CheckBatch(const BatchInfo& info, std::span<const ByteSpan> metadata,
                                        std::span<const ByteSpan> body);
  // Sets *rolled when it started a new segment. `replica`: a batch fetched from the leader
  // (its offset and append time are kept, the fence does not apply); null for an append.
  Result<AppendResult> AppendLocked(const BatchInfo& info, const std::string& checksum_table,
                                    std::span<const ByteSpan> metadata,
                                    std::span<const ByteSpan> body, bool* rolled,
                                    const ReplicaBatchInfo* replica = nullptr);
  // Forgets the in-memory state of the segments and recovers it from the files (after
  // TruncateTo and ResetTo changed them). Requires retention_mutex_ and mutex_.
  Status ReloadLocked();
  // Leader epochs (leader_epochs.cc).
  Status LoadLeaderEpochs();
  // Reads log_start_ from its file (docs/log-format.md#log-start).
  Status LoadLogStart();
  // The first offset readers may read: the first segment's base, or the log start above it.
  int64_t EarliestLocked() const;
  Status PersistLeaderEpochs(const std::vector<EpochEnd>& epochs);
  // Drops the epochs that start at or after `offset`.
  Status TruncateLeaderEpochs(int64_t offset);
  Status RollLocked();
  Result<SegmentPtr> CreateSegment(int64_t base_offset);
  // Fsyncs the active segment as the group-commit leader; the caller set sync_in_progress_.
  Status LeadSync(std::unique_lock<std::mutex>& lock);
  Status WriteCheckpoint(const Checkpoint& checkpoint);
  void FlusherLoop();
  // The segment holding `from_offset` and all later ones, as readers may see them.
  std::vector<ReadableSegment> ReadableSegments(int64_t from_offset) const;
  int64_t EndLocked(ReadLimit limit) const;  // the end `limit` names; under mutex_
  // Cold log internals (bucket_log_cold.cc).
  Status LoadColdManifest(std::vector<int64_t>* local_bases);
  SegmentPtr OpenColdSegment(const internal::ColdSegment& entry) const;
  Status WriteColdManifest(const std::vector<internal::ColdSegment>& segments);
  Status OffloadLocked(int* moved);
  Result<internal::ColdSegment> UploadSegment(const ReadableSegment& r);
  Status SweepColdOrphans();
  Status RemoveColdObjects(int64_t base_offset);

  const std::shared_ptr<FileSystem> fs_;
  const std::string dir_;
  const LogOptions options_;
  RecoveryInfo recovery_;

  mutable std::mutex mutex_;
  std::condition_variable appended_cv_;       // next_offset_ advanced, or closing
  std::condition_variable durable_cv_;        // durable_offset_ advanced, a sync ended, or closing
  std::map<int64_t, SegmentEntry> segments_;  // by base offset; the last one is active
  SegmentPtr active_;
  int64_t write_position_ = 0;  // end of the active segment
  int64_t next_offset_ = 0;
  int64_t durable_offset_ = 0;
  int64_t active_durable_position_ = 0;
  int64_t sealed_bytes_ = 0;   // bytes in segments other than the active one
  int64_t written_bytes_ = 0;  // appended since open (monotonic)
  int64_t durable_bytes_ = 0;  // of those, fsynced
  int64_t checkpointed_bytes_ = 0;
  bool sync_in_progress_ = false;
  int64_t retention_floor_;
  int64_t log_start_ = 0;  // DeleteBefore's offset, persisted
  Status failed_;          // sticky, after an fsync failure or a failed cleanup
  bool closing_ = false;
  int64_t high_watermark_ = INT64_MAX;
  Status fence_;  // appends fail with it while set

  mutable std::mutex epochs_mutex_;
  std::vector<EpochEnd> leader_epochs_;  // guarded by epochs_mutex_; end_offset = start offset

  std::mutex checkpoint_mutex_;
  int64_t checkpoint_segment_ = -1;  // (segment, size) of the newest checkpoint written
  int64_t checkpoint_size_ = -1;

  // Held while segments leave the log or the manifest changes (retention, offload's switch).
  std::mutex retention_mutex_;
  std::vector<internal::ColdSegment> cold_manifest_;  // guarded by retention_mutex_
  int64_t cold_bytes_ = 0;                            // guarded by mutex_
  int64_t cold_count_ = 0;                            // guarded by mutex_
  std::string cold_error_;                            // guarded by mutex_
  std::mutex offload_mutex_;                          // one offload at a time
  std::atomic<bool> sweep_needed_{true};  // orphan objects may exist: list and delete them
  std::mutex close_mutex_;
  bool closed_ = false;
  std::thread flusher_;
  std::condition_variable flusher_cv_;
};

}  // namespace oxbow::log
