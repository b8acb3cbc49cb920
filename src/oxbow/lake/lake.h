// The lake: every log table continuously becomes an Apache Iceberg v2 table (Parquet data,
// Avro manifests) inside oxbowd, with no extra job. docs/lake.md describes the layout, the
// exactly-once protocol and the maintenance (compaction, manifest merging, snapshot expiry).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "oxbow/common/file_system.h"
#include "oxbow/common/mutex.h"
#include "oxbow/engine/engine.h"
#include "oxbow/iceberg/catalog.h"
#include "oxbow/parquet/writer.h"

namespace oxbow::lake {

// Table properties.
inline constexpr char kEnabledProperty[] = "lake.enabled";      // "true" (default) / "false"
inline constexpr char kFreshnessProperty[] = "lake.freshness";  // "1s", "500ms", "250"
inline constexpr char kPartitionProperty[] = "lake.partition";  // "day(ts), bucket[8](id)"
// Primary-key tables: compaction rewrites a data file once this fraction of its rows is deleted.
inline constexpr char kDeleteRatioProperty[] = "lake.compaction.delete-ratio";  // "0.5"
inline constexpr double kDefaultDeleteRatio = 0.5;
// Primary-key tables: "true" also tiers the raw changelog into the append-only lake table
// <table>$changelog (kChangelogSuffix), in the same rounds. Default "false".
inline constexpr char kChangelogProperty[] = "lake.changelog";
inline constexpr char kChangelogSuffix[] = "$changelog";
// Log and changelog lake tables: the codec of the data files rounds write ("lz4", "snappy",
// "zstd", "none"). When it differs from the final codec (LakeOptions::parquet), these files are
// fresh: named *.fresh.parquet and rewritten in the final codec by compaction (docs/lake.md,
// "Fresh files"). Default: LakeOptions::fresh_codec.
inline constexpr char kFreshCodecProperty[] = "lake.fresh-codec";

// Whether `table` is copied into the lake: a log table unless its lake.enabled is "false", a
// primary-key table when its lake.enabled is "true".
bool IsLakeEnabled(const catalog::TableDescriptor& table);
// Whether `table` also has the changelog lake table <table>$changelog: a primary-key table in
// the lake whose lake.changelog is "true".
bool HasChangelogLake(const catalog::TableDescriptor& table);

// The check of every batch put into a lake table: second and millisecond timestamps beyond
// the 64-bit microseconds the lake stores are refused, naming field and row, rather than
// acknowledged and left to stop tiering. Empty for other tables and for tables without such
// columns.
engine::BatchCheck MakeBatchCheck(const catalog::TableDescriptor& table);

// OK when `table` stays out of the lake (lake.enabled "false") or the lake can hold it: its
// columns have Iceberg types, its lake.* properties are known and valid (docs/lake.md, "What the
// lake refuses"). Otherwise Invalid naming the column or property and the rule. Whoever creates
// tables calls it first, so a table tiering could never hold is refused rather than left behind
// with a growing lag and lake.error.
Status CheckTableIsTierable(const catalog::TableDescriptor& table);

// OK when the lake can follow the alter_table `changes` that make `before` into `after`
// (docs/lake.md, "Schema evolution"). Refused with Invalid naming the rule: dropping, renaming
// or widening a column lake.partition uses (a partition source column cannot be dropped, as in
// Iceberg; lake.partition names it; its partition values' type would change).
Status CheckLakeAlter(const catalog::TableDescriptor& before, const catalog::TableDescriptor& after,
                      const std::vector<catalog::SchemaChange>& changes);

struct LakeOptions;

// Per bucket of `table`, the offset after the last one its lake holds (or its changelog lake
// table's, the higher of the two); 0 where it holds none, or where the lake is a dropped table's
// of the same name. Reads the warehouse through `options` before any TieringService starts
// (rebuilding a lost data dir, docs/operations.md#recovering-a-lost-data-dir).
Result<std::vector<int64_t>> HeldOffsets(const LakeOptions& options,
                                         const catalog::TableDescriptor& table);

// What tiering and maintenance did, told as it happens (oxbowd counts it: docs/metrics.md).
// Each callback may be empty; they run on tiering threads and must be quick.
struct LakeObserver {
  // A tiering round of `table` that committed a snapshot (ok) or failed (!ok), and its time.
  std::function<void(const std::string& table, double seconds, bool ok)> on_round;
  // A compaction step (small files of one partition rewritten) that committed or failed.
  std::function<void(const std::string& table, double seconds, bool ok)> on_compaction;
  // A commit of new Iceberg metadata: `kind` is "append" (a round), "seed" (SeedPrimaryKeyLake),
  // "compaction",
  // "rewrite_manifests" or "expire_snapshots".
  std::function<void(const std::string& table, const char* kind)> on_commit;
};

// A read of a bucket this server holds no replica of (cluster mode), on its leader: the bucket's
// first and next offsets there (bounded by its high watermark), and a cursor over the batches
// from max(from, first) to next, each with its offsets and append time (NextDecoded only; null
// when there is nothing to read).
struct RemoteBucketRead {
  int64_t earliest_offset = 0;
  int64_t next_offset = 0;
  std::unique_ptr<engine::ReadCursor> cursor;
};

struct LakeOptions {
  // Root of every lake table: table ns.t lives in <warehouse>/ns/t; a local directory or a URI
  // such as "s3://bucket/prefix" (kept as given). Default: "./warehouse".
  std::string warehouse = "./warehouse";
  // How stale a table's lake may get (rounds start every freshness/4) unless its
  // lake.freshness says otherwise. Default: 1000 ms.
  int64_t freshness_ms = 1000;
  // Log bytes one round reads from one table at most; the rest waits for the next round.
  // Default: 256 MiB.
  int64_t max_round_bytes = int64_t{256} << 20;
  // Writer options of the data files. Default: zstd, dictionary on.
  parquet::WriterOptions parquet;
  // The codec of the files rounds write unless lake.fresh-codec says otherwise; any other than
  // the final codec (zstd) makes fresh files that compaction rewrites. Default: lz4 (the rounds
  // take less CPU, so a saturated machine stays fresher; docs/lake.md, "Fresh files").
  parquet::Codec fresh_codec = parquet::Codec::kLz4Raw;
  // Compaction merges small data files of a partition into files of about this size.
  // Default: 128 MiB.
  int64_t target_file_bytes = int64_t{128} << 20;
  // A partition is compacted once it holds this many files smaller than 3/4 of the target.
  // Default: 8.
  int compaction_min_files = 8;
  // Compressed input bytes one compaction step rewrites at most (the smallest files first);
  // bounds how long a step holds up tiering. Default: 64 MiB.
  int64_t compaction_step_bytes = int64_t{64} << 20;
  // The manifest list is merged into one manifest once it holds this many. Default: 16.
  int max_manifests = 16;
  // Snapshots kept: the newest `retain_snapshots`, and all younger than snapshot_max_age_ms.
  // Defaults: 5 and 10 minutes.
  int retain_snapshots = 5;
  int64_t snapshot_max_age_ms = 10 * 60 * 1000;
  // How often compaction, manifest merging and expiry run per table. Default: 10 s.
  int64_t maintenance_interval_ms = 10 * 1000;
  // Threads running tiering rounds (at round_nice), one table per thread at a time, so a busy or
  // an empty table holds up at most one of them. Maintenance runs on one more thread (at
  // maintenance_nice) and holds a table's lock only to commit. Default: 2 (the CPU budget of
  // docs/lake.md).
  int tiering_threads = 2;
  // The nice level of the round workers: 10 lets the lake lag rather than the produce path when
  // the machine is saturated; 0 gives rounds the producers' share, for freshness. Default: 10.
  int round_nice = 10;
  // The nice level of the maintenance thread (compaction, manifest merging, expiry). It is not
  // on the freshness path, so it yields to the rounds: at 10 its passes (every table at once)
  // raised a hot table's p99 1.5-1.8x on a saturated machine (docs/bench.md). Default: 19.
  int maintenance_nice = 19;
  // File system of the warehouse. Default (null): the real one.
  std::shared_ptr<FileSystem> fs;
  // Catalog holding each lake table's current metadata. Default (null): a FileCatalog over
  // `fs` and `warehouse` (an object store, which has no rename, needs a LocalPointerCatalog).
  std::shared_ptr<iceberg::Catalog> catalog;
  // The scrubber re-verifies every page checksum of each live data file once per this
  // interval. Default: 24 h; 0 disables it.
  int64_t scrub_interval_ms = int64_t{24} * 3600 * 1000;
  // The scrubber reads at most this many bytes per second. Default: 16 MiB/s.
  int64_t scrub_bytes_per_second = int64_t{16} << 20;
  // Cluster mode (docs/cluster.md#the-lake): whether this server tiers `table` now, as its one
  // tiering owner. A server that does not follows the lake the owner commits: it publishes its
  // status and lets its logs go as far as the lake's offsets allow, and writes nothing.
  // Default (empty): every table is this server's.
  std::function<bool(const catalog::TableDescriptor& table)> owns_tiering;
  // Cluster mode: whether this server holds a replica of `bucket` of `table`, which tiering
  // reads (its visible offsets are the high watermark's). Default (empty): every bucket.
  std::function<bool(const std::string& table, int32_t bucket)> holds_bucket;
  // Cluster mode: the read of a bucket this server holds no replica of, from offset `from`,
  // on its leader. Default (empty): such a bucket is not tiered.
  std::function<Result<RemoteBucketRead>(const std::string& table, int32_t bucket, int64_t from)>
      read_remote_bucket;
  // Told of rounds, compactions and commits. Default: nobody.
  LakeObserver observer;
};

// A live data file whose bytes failed verification.
struct DamagedDataFile {
  std::string path;
  std::string problem;
};

struct LakeTableStatus {
  bool enabled = false;
  std::string metadata_location;        // the current vN.metadata.json (empty before the first)
  std::vector<int64_t> tiered_offsets;  // per bucket: offsets below are in the lake
  // Per bucket: the lake holds every offset from here to the tiered one; above 0 where offsets
  // left the log before reaching the lake (a hole below, docs/lake.md "Holes").
  std::vector<int64_t> start_offsets;
  // Log tables: per bucket, the first offset the lake holds (none: no row of it yet), found as
  // commits publish the status. Empty for primary-key tables, before the first commit, and while
  // the lake cannot be read.
  std::vector<std::optional<int64_t>> earliest_offsets;
  int64_t lag_rows = 0;  // durable rows not yet in the lake
  int64_t lag_ms = 0;    // how far the lake's view trails the log
  int64_t snapshots = 0;
  int64_t data_files = 0;
  int64_t last_tiered_ms = 0;  // wall time of the newest snapshot tiering appended (0: none)
  std::string error;           // the last round's error, if any
  // Live data files the scrubber found damaged (until they leave the table).
  std::vector<DamagedDataFile> damaged_files;
  // With lake.changelog "true": the changelog lake table's current metadata file (empty before
  // its first commit) and its tiered offsets.
  bool changelog = false;
  std::string changelog_metadata_location;
  std::vector<int64_t> changelog_tiered_offsets;
  std::vector<int64_t> changelog_start_offsets;
};

class LakeTable;

class TieringService {
 public:
  // Starts the tiering threads over every table of `engine` (which must outlive the service).
  static Result<std::unique_ptr<TieringService>> Start(engine::Engine* engine, LakeOptions options);
  ~TieringService();

  // Stops the threads after their current rounds. Idempotent.
  void Stop() OXBOW_EXCLUDES(mu_);
  // Tiers and maintains every enabled table once, now, on the caller's thread (for tests and
  // tools); safe beside the service's own thread.
  Status RunOnce();

  // The lake state of `table` (enabled=false when lake.enabled is "false").
  Result<LakeTableStatus> Describe(const std::string& table);
  // Removes the lake copy of `table`, which the engine has dropped; waits for a round in
  // progress on it, and keeps the tiering thread from bringing it back.
  Status DropTable(const catalog::TableDescriptor& table);
  // Runs `alter` (the engine's change of table `name`) while no round or maintenance commit of
  // its lake is under way, so a round never mixes the old and the new schema; then the table's
  // lake state retires and the next round takes up the altered descriptor (columns, lake.*
  // properties), first making the lake's schema follow the new columns.
  Result<catalog::TableDescriptor> AlterTable(
      const std::string& name, const std::function<Result<catalog::TableDescriptor>()>& alter);

  // OK unless altering `before` into `after` drops a column that a partition spec of the
  // table's lake uses, an earlier spec included (partition evolution): Invalid naming the column
  // and the spec, since readers type every spec's partition fields from the current schema.
  Status CheckPartitionSources(const catalog::TableDescriptor& before,
                               const catalog::TableDescriptor& after);

  // The warehouse's catalog (table ns.t is {"ns", "t"}) and the file system of its files, for
  // those who read the lake without writing it (the Iceberg REST catalog).
  const std::shared_ptr<iceberg::Catalog>& catalog() const { return catalog_; }
  const std::shared_ptr<FileSystem>& file_system() const { return options_.fs; }

 private:
  TieringService(engine::Engine* engine, LakeOptions options)
      : engine_(engine), options_(std::move(options)) {}
  // Queues each table whose round is due (once: a queued table is not queued again).
  void ScheduleLoop() OXBOW_EXCLUDES(mu_);
  // Runs queued rounds until Stop().
  void RoundWorker() OXBOW_EXCLUDES(mu_);
  // Maintains each table whose maintenance is due, until Stop().
  void MaintenanceLoop() OXBOW_EXCLUDES(mu_);
  // Verifies live data files, one at a time within scrub_bytes_per_second, each once per
  // scrub_interval_ms, until Stop().
  void ScrubLoop() OXBOW_EXCLUDES(mu_);
  // The state of `descriptor`'s lake table, created on first use.
  Result<std::shared_ptr<LakeTable>> StateFor(const catalog::TableDescriptor& given)
      OXBOW_EXCLUDES(init_mu_, mu_);
  // The state of `table` if one is set up for its id and schema version (else null).
  std::shared_ptr<LakeTable> Find(const catalog::TableDescriptor& table) OXBOW_EXCLUDES(mu_);
  // The tables whose lake is set up (dropped, disabled and broken ones left out).
  std::vector<std::shared_ptr<LakeTable>> TieredTables();
  // Loads the lake table `lake_id` into `state` (whose descriptor, schema and spec are set),
  // removing its orphan files, or creates it (true) when it is missing or belongs to a dropped
  // table of the same name; then reads its tiered offsets. The state's schema and spec are
  // derived here, the lake's schema evolving to the table's current columns first.
  Result<bool> OpenLakeTable(LakeTable& state, const iceberg::TableIdentifier& lake_id);
  Status Round(LakeTable& state);
  // Whether this server tiers `table` (LakeOptions::owns_tiering).
  bool Owns(const catalog::TableDescriptor& table) const;
  // Sets up the state of a lake this server follows (cluster mode): names only, loaded by the
  // first Follow.
  Status InitFollower(LakeTable& state, const iceberg::TableIdentifier& lake_id,
                      bool with_changelog);
  // One maintenance pass of `state`: a scheduled one, or a `follow_up` taken at once because the
  // previous one left a compaction backlog.
  Status Maintenance(LakeTable& state, bool follow_up);

  engine::Engine* engine_;
  LakeOptions options_;
  std::shared_ptr<iceberg::Catalog> catalog_;
  // Held while a table's state is created, altered or dropped; taken before mu_ and a table's.
  Mutex init_mu_ OXBOW_ACQUIRED_BEFORE(mu_);
  Mutex mu_;
  CondVar wake_;  // Stop() was called
  bool stopping_ OXBOW_GUARDED_BY(mu_) = false;
  std::map<std::string, std::shared_ptr<LakeTable>> tables_ OXBOW_GUARDED_BY(mu_);
  std::set<int64_t> dropped_ids_ OXBOW_GUARDED_BY(mu_);  // tables dropped since the service started
  std::deque<std::shared_ptr<LakeTable>> due_ OXBOW_GUARDED_BY(mu_);  // rounds waiting for a worker
  CondVar due_cv_;
  std::thread scheduler_;
  std::vector<std::thread> round_workers_;
  std::thread maintenance_thread_;
  std::thread scrub_thread_;
};

}  // namespace oxbow::lake
