// The lake state of one table (LakeTable) and the steps tiering and maintenance take on it;
// internal to the lake module. docs/lake.md ("Code map") says which file holds which step.
#pragma once

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oxbow/common/mutex.h"
#include "oxbow/iceberg/table.h"
#include "oxbow/lake/lake.h"
#include "oxbow/lake/lake_read.h"
#include "oxbow/lake/lake_schema_internal.h"
#include "oxbow/lake/pk_lake_internal.h"
#include "oxbow/parquet/writer.h"

namespace oxbow::lake {

using Clock = std::chrono::steady_clock;

inline int64_t Millis(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

inline int64_t WallMs() { return Millis(std::chrono::system_clock::now().time_since_epoch()); }

// What tiering takes from a table's schema and properties. Building it runs every check of
// CheckTableIsTierable, so a table refused up front is exactly one tiering could not hold.
struct LakeForm {
  internal::LakeSchema schema;
  iceberg::PartitionSpec spec;
  std::optional<int64_t> freshness_ms;        // lake.freshness, when set
  double delete_ratio = kDefaultDeleteRatio;  // lake.compaction.delete-ratio
  std::optional<parquet::Codec> fresh_codec;  // lake.fresh-codec, when set
  // lake.changelog "true": the changelog lake table's schema (the table's columns, _change_type,
  // the system columns) and partition spec.
  std::optional<internal::LakeSchema> changelog_schema;
  iceberg::PartitionSpec changelog_spec;
};

// The lake state of one table: its Iceberg table, the offsets it holds, and the status it
// publishes. The fields above `work` are set before the table is shared and never change.
// Locks, taken in this order: `work` (a round, a maintenance commit, DropTable, AlterTable; a
// changelog lake table's after its table's), then `status_mu` (the published status).
// `maintaining` is taken before `work`; `schedule_mu` alone.
class LakeTable {
 public:
  catalog::TableDescriptor descriptor;
  bool enabled = true;
  // This server tiers the table (LakeOptions::owns_tiering); otherwise it follows its lake.
  bool owner = true;
  Status init_error;
  internal::LakeSchema schema;
  iceberg::PartitionSpec spec;
  std::string location;
  iceberg::TableIdentifier lake_id;
  LakeAccess access;  // the warehouse, for the earliest offsets Publish reads
  int64_t freshness_ms = 1000;
  double delete_ratio = kDefaultDeleteRatio;
  parquet::Codec fresh_codec = parquet::Codec::kZstd;  // of the files AppendRound writes
  // This is the changelog lake table of another (its schema has _change_type).
  bool changelog_table = false;
  // lake.changelog "true": the append-only lake table of the raw changelog (<name>$changelog),
  // tiered by this table's rounds on its own offsets. Its `work` is taken after this table's.
  std::unique_ptr<LakeTable> changelog;

  Mutex work;
  // Rounds, maintenance commits and DropTable take it; compaction rewrites files without it.
  std::unique_ptr<iceberg::IcebergTable> table;
  std::vector<int64_t> tiered;
  // Per bucket, where the lake's copy of the log starts being whole: it holds every offset from
  // here to `tiered`. 0 unless offsets left the log before reaching the lake (NoteHoles).
  std::vector<int64_t> start;
  // A primary-key table's key-location index, equal to the committed snapshot; `index_stale`
  // after a commit whose outcome is unknown (the next round rebuilds it from the lake).
  std::optional<internal::KeyIndex> index;
  bool index_stale = false;
  // After a commit whose outcome is unknown, the table and its offsets are read again.
  bool offsets_stale = false;
  uint64_t index_generation = 0;  // bumped by every rebuild (file ids change)
  bool dropped OXBOW_GUARDED_BY(work) = false;
  // A round or maintenance failed since the last sweep: its commit may have left files behind
  // (RemoveFailedCommitFiles).
  bool orphans_possible OXBOW_GUARDED_BY(work) = false;
  // The last round's and the last maintenance's errors, published until they succeed again.
  std::string round_error OXBOW_GUARDED_BY(work);
  std::string maintenance_error OXBOW_GUARDED_BY(work);
  std::string Error() const OXBOW_REQUIRES(work);
  // A commit failed: it may have left files behind, here and in the changelog lake table.
  void NoteFailedCommit() OXBOW_REQUIRES(work);

  // One maintenance at a time (the thread's or RunOnce's).
  Mutex maintaining OXBOW_ACQUIRED_BEFORE(work);
  // The fresh files (IsFreshFile) live at the previous scheduled compaction pass.
  std::set<std::string> fresh_seen OXBOW_GUARDED_BY(maintaining);
  // The last compaction step left a partition with compaction_min_files small files or more:
  // the maintenance thread takes the next step at once instead of an interval later.
  std::atomic<bool> compaction_backlog{false};
  Clock::time_point next_maintenance{};  // the maintenance thread's alone

  // The scheduler's: when the next round is due, and whether one waits for or runs on a worker.
  Mutex schedule_mu;
  Clock::time_point next_round OXBOW_GUARDED_BY(schedule_mu){};
  bool queued OXBOW_GUARDED_BY(schedule_mu) = false;

  // The snapshot summary of a commit: the tiered offsets, and the start offsets above 0.
  std::map<std::string, std::string> Summary() const;
  // Loads `tiered` and `start` from the current snapshot's summary.
  Status LoadOffsets();
  // The offsets below which both lake tables hold the log: the retention floors.
  std::vector<int64_t> FloorOffsets() const;

  // Publishes the table's state with `error` as a new immutable status (the damaged files kept).
  void Publish(const std::string& error) OXBOW_REQUIRES(work) OXBOW_EXCLUDES(status_mu);
  // Publishes the damaged files the scrubber found: those of `damaged` plus the ones published
  // before that are still `live`.
  void PublishDamaged(const std::map<std::string, Clock::time_point>& live,
                      std::vector<DamagedDataFile> damaged) OXBOW_EXCLUDES(status_mu);
  // The lake last held everything durable at wall time `ms`.
  void SetCaughtUp(int64_t ms) OXBOW_EXCLUDES(status_mu);
  // The last published status, and the wall time at which the lake was last caught up.
  std::pair<std::shared_ptr<const LakeTableStatus>, int64_t> Published() const
      OXBOW_EXCLUDES(status_mu);

 private:
  // Per bucket, the first offset of a log table's lake (EarliestLakeOffsets), read again only
  // when a commit may have given a bucket its first row.
  std::vector<std::optional<int64_t>> EarliestOffsets(
      const std::vector<std::optional<int64_t>>& known) const OXBOW_REQUIRES(work);

  mutable Mutex status_mu;
  std::shared_ptr<const LakeTableStatus> published_ OXBOW_GUARDED_BY(status_mu);
  int64_t caught_up_ms_ OXBOW_GUARDED_BY(status_mu) = WallMs();
};

// Logs a hold of a table's lock long enough to delay its rounds (ack → visible): declared right
// after the lock, so it ends first.
class HoldTimer {
 public:
  HoldTimer(const LakeTable& s, const char* what)
      : table_(s.descriptor.name), what_(what), since_(Clock::now()) {}
  ~HoldTimer() {
    const int64_t ms = Millis(Clock::now() - since_);
    if (ms >= kSlowHoldMs)
      spdlog::info("lake: '{}' held its table {} ms for {}", table_, ms, what_);
  }
  HoldTimer(const HoldTimer&) = delete;
  HoldTimer& operator=(const HoldTimer&) = delete;

 private:
  static constexpr int64_t kSlowHoldMs = 100;
  const std::string& table_;
  const char* what_;
  Clock::time_point since_;
};

// A round's data file in a codec other than the final one ends in this, so compaction finds it
// without reading its footer (docs/lake.md, "Fresh files").
inline constexpr std::string_view kFreshFileSuffix = ".fresh.parquet";

// What a round read from the log since the tiered offsets.
struct RoundInput {
  std::vector<int64_t> next;      // per bucket, the offset after what was read
  std::vector<int64_t> earliest;  // per bucket, the log's first offset when the round read it
  bool caught_up = true;          // every bucket read to its end
  Status read_error;              // a bucket whose log cannot be read (damage) stops there
  int64_t bytes = 0;              // of the batches read
};

// lake_table.cc
// Lets each bucket's log drop what lies below `floor` (what the lake holds).
Status SetRetentionFloors(engine::Engine* engine, const std::string& table,
                          const std::vector<int64_t>& floor);

std::string RandomName();

Result<LakeForm> MakeLakeForm(const catalog::TableDescriptor& table);

std::string OffsetsJson(const std::vector<int64_t>& offsets);

// How tiering opens a lake table: one attempt per commit. A commit's snapshot records the offsets
// its round read from, so one that lost to another writer (a new tiering owner, docs/cluster.md)
// must fail and start again from what the lake holds, not be re-applied on top.
iceberg::TableOptions LakeTableOptions();

// After a commit of a table without a key index whose outcome is unknown: the committed snapshot
// and its offsets.
Status ReloadOffsets(LakeTable& s);

// scrub.cc
// Removes the files of the table's directory that no retained snapshot references: data and
// delete files under data/, and under metadata/ the manifests, manifest lists and metadata files
// of commits that never became current (a crash between writing and publishing them), and the
// catalog's temporary files. Kept under metadata/: the current metadata file, those of
// metadata-log, version-hint.text and what the snapshots reference. Run when a table's tiering
// starts (the tiering service is its only writer, and no commit of it is under way).
Status RemoveOrphanFiles(FileSystem* fs, const iceberg::IcebergTable& table);

// After a failed round or maintenance: removes the files its commit left behind (data files,
// manifests, metadata not made current), provided the catalog's current metadata is the one `s`
// holds; after a commit whose outcome is unknown the next round reloads first. Under s.work.
Status RemoveFailedCommitFiles(iceberg::Catalog& catalog, FileSystem* fs, LakeTable& s)
    OXBOW_REQUIRES(s.work);

// lake_files.cc
bool IsFreshFile(const std::string& path);

// Opens a new data file under <location>/data/<partition path>/ (its path goes to `written`),
// named as a fresh file when `fresh`.
Result<std::unique_ptr<parquet::FileWriter>> OpenDataFile(FileSystem* fs, const LakeTable& state,
                                                          const std::string& partition_path,
                                                          const parquet::WriterOptions& options,
                                                          std::vector<std::string>* written,
                                                          bool fresh = false);

// Closes (fsyncs) the data file at `path` that OpenDataFile opened and describes it: a file of
// partition spec `spec_id` and tuple `partition`.
Result<iceberg::DataFile> FinishDataFile(const LakeTable& state, parquet::FileWriter* writer,
                                         const std::string& path, int32_t spec_id,
                                         iceberg::PartitionValues partition);

// Writes `batches` (one partition of the current spec) as one data file (a fresh one when
// `fresh`).
Result<iceberg::DataFile> WriteDataFile(FileSystem* fs, const LakeTable& state,
                                        const std::string& partition_path,
                                        iceberg::PartitionValues partition,
                                        const std::vector<arrow::RecordBatchPtr>& batches,
                                        const parquet::WriterOptions& options,
                                        std::vector<std::string>* written, bool fresh = false);

// Every row group of a lake data file in the current lake schema (matched by field id).
Result<std::vector<arrow::RecordBatchPtr>> ReadLakeFile(FileSystem* fs, const LakeTable& state,
                                                        const std::string& path);

// Rebuilds a primary-key table's key index from its committed snapshot: the key columns of
// every live data file, less the rows its live position delete files remove.
Result<internal::KeyIndex> LoadKeyIndex(FileSystem* fs, const LakeTable& state);

// The options of the files rounds write: row groups of at most 16 MiB, whose buffers the
// allocator reuses from round to round (a 128 MiB row group costs fresh pages, page faults and
// an munmap every round). Compaction rewrites them with `options` as they are.
parquet::WriterOptions FreshFileOptions(parquet::WriterOptions options);

// Writes one position delete file of `partition` (that of the data files it names) under
// <location>/data/<partition path>/ (its path goes to `written`).
Result<iceberg::DataFile> WriteDeleteFile(FileSystem* fs, const LakeTable& state,
                                          const internal::FilePartition& partition,
                                          std::vector<std::pair<std::string, int64_t>> deletes,
                                          const parquet::WriterOptions& options,
                                          std::vector<std::string>* written);

// The bytes the row groups a writer closed so far hold (uncompressed): where a seed rolls files.
int64_t WrittenBytes(const parquet::FileWriter& writer);

// pk_tierer.cc
// After a commit whose outcome is unknown: the committed snapshot, its offsets and its index.
Status ReloadPrimaryKeyLake(FileSystem* fs, LakeTable& s);

// A primary-key table's round: the changelog since the tiered offsets becomes data files of the
// rows current after it (the last change of each key; -D leaves none) plus position delete files
// removing the rows those keys had in earlier data files, in one snapshot (docs/lake.md).
Status TierPrimaryKeyRound(engine::Engine* engine, const LakeOptions& options, LakeTable& s);

// log_tierer.cc
// Ends a round: the log's floors move to `floor` (none when the round tiered nothing), and a
// round that read every bucket to its end marks the table caught up as of its start.
Status EndRound(engine::Engine* engine, LakeTable& s, const std::vector<int64_t>& floor,
                bool caught_up, int64_t started_ms, Status read_error);

// Reads each bucket from `from` (its tiered offset) toward its end, up to max_round_bytes in all,
// handing every decoded batch to `on_batch` (its bucket, the batch).
Result<RoundInput> ReadSinceTiered(
    engine::Engine* engine, const LakeOptions& options, const LakeTable& s,
    const std::vector<int64_t>& from,
    const std::function<Status(int32_t, const engine::DecodedBatch&)>& on_batch);

// Offsets that left the log before reaching `t`'s lake (its tiered offset is below the log's
// first): the lake holds the log whole only from the log's first offset on, which the next
// commit records as the bucket's start (docs/lake.md, "Holes").
void NoteHoles(LakeTable& t, const std::vector<int64_t>& earliest);

// Writes `batches` (lake form) as one data file per partition and appends them in one snapshot
// recording `next` as the tiered offsets, which `s.tiered` becomes. When that fails the written
// files are removed and `s.tiered` stays; `*committing` (if given) tells whether the commit was
// tried, whose outcome may then be unknown. The files are fresh ones (lake.fresh-codec) unless
// the round read `log_bytes` >= target_file_bytes: a file that size would not be compacted, so
// the round pays for the final codec once rather than for both. Returns the number of files.
Result<size_t> AppendRound(const LakeOptions& options, LakeTable& s,
                           const std::vector<arrow::RecordBatchPtr>& batches,
                           const std::vector<int64_t>& next, bool* committing, int64_t log_bytes);

// A round of a lake this server follows rather than tiers (cluster mode): loads what the owner
// committed since, for the table and its changelog lake table (nothing while the lake does not
// exist yet or is a dropped table's), and lets the table's logs go up to the lake's offsets.
Status FollowRound(engine::Engine* engine, const LakeOptions& options, iceberg::Catalog& catalog,
                   LakeTable& s) OXBOW_REQUIRES(s.work);

// Moves everything durable (up to max_round_bytes) from the log into one snapshot.
Status TierRound(engine::Engine* engine, const LakeOptions& options, LakeTable& s);

// compaction.cc
// The table's maintenance, then its changelog lake table's.
Status Maintain(const LakeOptions& options, LakeTable& s, bool follow_up)
    OXBOW_REQUIRES(s.maintaining);

}  // namespace oxbow::lake
