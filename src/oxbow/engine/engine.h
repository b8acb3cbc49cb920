// Engine: the tables of one data dir — catalog, bucket logs, the put path (schema checks,
// bucketing, durable appends) and the read path (offset ranges, projection, tailing).
// It knows nothing of gRPC; the Flight service in oxbow/server translates to and from it.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "oxbow/catalog/catalog.h"
#include "oxbow/engine/table.h"
#include "oxbow/kv/store.h"
#include "oxbow/log/bucket_log.h"

namespace oxbow::engine {

struct EngineOptions {
  // Root of all state. Default: "./data".
  std::string data_dir = "./data";
  // Options of every bucket log (segment size, flush policy, retention).
  log::LogOptions log;
  // The file system under the catalog and the logs. Default (null): the real one.
  std::shared_ptr<FileSystem> fs;
  // How often age-based retention runs over every log. Default: 60 s; 0 disables it.
  int64_t retention_check_ms = 60'000;
  // The scrubber re-verifies every checksum of each sealed segment once per this interval.
  // Default: 24 h; 0 disables scrubbing.
  int64_t scrub_interval_ms = int64_t{24} * 3600 * 1000;
  // The scrubber reads at most this many bytes per second. Default: 16 MiB/s.
  int64_t scrub_bytes_per_second = int64_t{16} << 20;
  // Whether a table's rows must stay until someone has copied them (the lake): its logs then
  // open with retention floor 0, which SetRetentionFloor raises. Default (empty): none.
  std::function<bool(const catalog::TableDescriptor&)> holds_retention;
  // Makes the extra check of every batch put into a table (e.g. values its lake cannot hold);
  // may return an empty check. Default (empty): none.
  std::function<BatchCheck(const catalog::TableDescriptor&)> make_batch_check;
  // The key-value store of primary-key tables (<data_dir>/kv): its shared block cache and its
  // write-buffer budget. Defaults: 256 MiB and 128 MiB.
  int64_t kv_block_cache_bytes = int64_t{256} << 20;
  int64_t kv_write_buffer_bytes = int64_t{128} << 20;
  // How often the key-value store is checkpointed (then a primary-key table's changelog may be
  // deleted by retention up to what the checkpoint covers). Default: 10 min; 0: only at open.
  int64_t kv_checkpoint_interval_ms = int64_t{10} * 60 * 1000;
  // The cold log (docs/storage.md#cold-log): the object store and the root under which bucket b
  // of the table with id i keeps its cold segments, <cold_root>/<i>/<b>. Default (null): no
  // table may set log.local.retention.
  std::shared_ptr<FileSystem> cold_fs;
  std::string cold_root;
  // The in-memory cache every cold read goes through, and its block size. Defaults: 256 MiB,
  // 1 MiB.
  int64_t cold_cache_bytes = int64_t{256} << 20;
  int64_t cold_cache_block_bytes = int64_t{1} << 20;
  // How often each log moves its segments older than log.local.retention to the cold store.
  // Default: 30 s; 0 disables it.
  int64_t cold_check_ms = 30'000;
  // KV snapshots (docs/cluster.md#kv-snapshots-in-object-storage): every
  // kv_snapshot_interval_ms (0: never), each primary-key bucket for which kv_snapshot_wanted
  // says yes (empty: every bucket) and whose rows moved since its last snapshot here uploads
  // them under <kv_snapshot_root>/<table id>/<bucket> in kv_snapshot_fs; on_kv_snapshot then
  // hears of it. Default (0 or less): never.
  int64_t kv_snapshot_interval_ms = 0;
  std::shared_ptr<FileSystem> kv_snapshot_fs;
  std::string kv_snapshot_root;
  std::function<bool(const catalog::TableDescriptor&, int32_t bucket)> kv_snapshot_wanted;
  std::function<void(const catalog::TableDescriptor&, int32_t bucket, const KvSnapshotRef&)>
      on_kv_snapshot;
  // Embedded mode: a copy of catalog.json in the warehouse, written with every change, from which
  // RecoverDataDir rebuilds a lost data dir. Default (fs null): none.
  catalog::CatalogCopy catalog_copy;
  // Cluster mode: a primary-key table's rows follow what its buckets' replicas commit (the
  // changelog below the high watermark), not everything durable; opening one replays nothing
  // (docs/cluster.md#primary-key-tables). Default: false.
  bool replicated = false;
};

// The table property that moves sealed log segments to the cold store once they are older.
inline constexpr char kLocalRetentionProperty[] = "log.local.retention";
// The table's own retention, instead of the engine's (LogOptions::retention_ms and
// retention_bytes): a duration ("7d") and a byte count per bucket; "none" keeps everything.
inline constexpr char kRetentionProperty[] = "log.retention";
inline constexpr char kRetentionBytesProperty[] = "log.retention.bytes";
// The table's own segment size in bytes, instead of the engine's (LogOptions::segment_bytes).
inline constexpr char kSegmentBytesProperty[] = "log.segment.bytes";
// What a table's log properties say: nullopt for one it does not set, -1 for "none".
struct TableLogProperties {
  std::optional<int64_t> retention_ms;
  std::optional<int64_t> retention_bytes;
  std::optional<int64_t> segment_bytes;
};
// Invalid naming the property when one does not parse.
Result<TableLogProperties> LogPropertiesOf(const catalog::TableDescriptor& table);

struct TableStatus {
  catalog::TableDescriptor table;
  std::vector<BucketStatus> buckets;
  // What a read of the table's log returns (a primary-key table's changelog adds a column).
  arrow::SchemaPtr read_schema;
};

// What RecoverDataDir rebuilt.
struct Recovery {
  struct Table {
    std::string name;
    std::vector<int64_t> next_offsets;  // per bucket, where its log goes on
  };
  std::vector<Table> tables;
  // Why each table whose rows could not be rebuilt was left out of the catalog (it names it).
  std::vector<std::string> left_out;
};

// The lake's part of a recovery: `restore_pointers` puts the lake tables' pointers back (before
// `held_offsets` is asked), `held_offsets` gives per bucket the offset after the last one a
// table's lake holds (lake::HeldOffsets). Either may be empty.
struct RecoveryLake {
  std::function<Status()> restore_pointers;
  std::function<Result<std::vector<int64_t>>(const catalog::TableDescriptor&)> held_offsets;
};

// Rebuilds the data dir `options.data_dir`, which must hold no catalog (or one whose recovery did
// not finish), from the warehouse: the catalog's copy (options.catalog_copy), each bucket's cold
// segments (the copies of their manifests under options.cold_root), each primary-key bucket's
// newest KV snapshot (options.kv_snapshot_root), and the lake's offsets. Each bucket's log goes on
// after the highest offset they hold, so nothing tiered or snapshotted is written twice. A
// primary-key table whose rows cannot be rebuilt as far as its lake (or its cold changelog) goes
// is left out and named. Until it finishes, Engine::Open refuses the data dir.
// docs/operations.md#recovering-a-lost-data-dir
Result<Recovery> RecoverDataDir(const EngineOptions& options, const RecoveryLake& lake);

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> Open(EngineOptions options);
  ~Engine();

  Result<catalog::TableDescriptor> CreateTable(const catalog::CreateTableRequest& request);
  // Creates the table exactly as `table` describes it, id and schema versions included (cluster
  // mode: the table was created in ZooKeeper, and the local catalog is its cache).
  Status AdoptTable(const catalog::TableDescriptor& table);
  // The checks of a table's descriptor beyond its JSON form (create and alter).
  Status CheckTable(const catalog::TableDescriptor& table) const;
  Status DropTable(const std::string& name);
  // Replaces table `before` (which must still be its current descriptor, else Invalid) with
  // `after` (catalog::ApplyAlter's): checked as CreateTable checks a table, persisted, and the
  // table reopened on it, so new properties take effect and new streams see the new schema.
  // Primary-key tables take property changes only.
  Result<catalog::TableDescriptor> AlterTable(const catalog::TableDescriptor& before,
                                              const catalog::TableDescriptor& after);
  std::vector<catalog::TableDescriptor> ListTables() const;
  Result<TableStatus> DescribeTable(const std::string& name) const;
  // The runtime of table `name` now (NotFound when it does not exist). A drop or an alter
  // replaces it; one already handed out keeps answering as the table was.
  Result<std::shared_ptr<Table>> GetTable(const std::string& name) const;

  // Checks the client's schema against the table: InvalidArgument naming the field otherwise.
  Result<std::unique_ptr<PutSession>> StartPut(const std::string& table,
                                               const arrow::SchemaPtr& client_schema,
                                               PutOp op = PutOp::kUpsert);
  // The same, every batch going to `bucket` (Table::StartPutToBucket).
  Result<std::unique_ptr<PutSession>> StartPutToBucket(const std::string& table,
                                                       const arrow::SchemaPtr& client_schema,
                                                       int32_t bucket);
  Result<std::unique_ptr<ReadCursor>> OpenRead(const ReadRequest& request);
  // Primary-key tables: their current rows, and batch lookups of them.
  Result<std::unique_ptr<SnapshotReader>> OpenSnapshot(const SnapshotRequest& request);
  Result<arrow::RecordBatchPtr> Lookup(const LookupRequest& request);
  // Checkpoints the key-value store now and lets retention delete the changelog it covers.
  Status CheckpointKeyValueStore();
  // Uploads a KV snapshot of each primary-key bucket that wants one and whose rows moved since
  // its last one (EngineOptions::kv_snapshot_interval_ms); the first error, after trying all.
  Status SnapshotKeyValueStore();
  // The key-value store's memory and block cache figures; nullopt before the first
  // primary-key table opens it.
  std::optional<kv::Store::Figures> key_value_figures() const;

  // Retention of `bucket` never deletes offsets >= `offset` (e.g. data not yet in the lake); a
  // primary-key changelog also keeps what the newest key-value checkpoint does not cover.
  Status SetRetentionFloor(const std::string& table, int32_t bucket, int64_t offset);

  // Flushes and closes every log. Idempotent.
  Status Close();

 private:
  explicit Engine(EngineOptions options) : options_(std::move(options)) {}
  Result<std::shared_ptr<Table>> OpenTable(const catalog::TableDescriptor& descriptor);
  std::string TableDir(int64_t table_id) const;
  // Removes table directories that the catalog no longer names (an interrupted drop).
  Status RemoveOrphanTableDirs();
  // Takes <data_dir>/LOCK, so that two servers never share a data dir.
  Status LockDataDir();
  // Runs EnforceRetention on every log every retention_check_ms and after a segment roll
  // (the logs' on_roll wakes it) until Close(): appends never delete anything themselves.
  void RetentionLoop();
  // Moves old segments of every log to the cold store every cold_check_ms until Close().
  void ColdLoop();
  // Verifies sealed segments, one at a time within scrub_bytes_per_second, each once per
  // scrub_interval_ms, until Close(); damage found is logged and kept in each log.
  void ScrubLoop();
  std::vector<std::shared_ptr<Table>> Tables() const;
  // Opens the key-value store on first need. Called under mu_ or while opening.
  Result<kv::Store*> KeyValueStore();
  // Runs `run` every `interval_ms` until Close(), logging its errors as `what` (the checkpoint
  // and KV snapshot threads).
  void RunEvery(int64_t interval_ms, const char* what, const std::function<Status()>& run);

  EngineOptions options_;
  std::unique_ptr<FileLock> data_dir_lock_;  // of <data_dir>/LOCK: one engine per data dir
  std::unique_ptr<catalog::Catalog> catalog_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Table>> tables_;
  bool closing_ = false;  // guarded by mu_
  std::condition_variable closing_cv_;
  std::thread retention_thread_;
  // Shared with the logs' on_roll, which may outlive the engine in a late put.
  struct RetentionWakeup {
    std::mutex mu;
    std::condition_variable cv;
    bool due = false;   // guarded by mu: a log rolled
    bool stop = false;  // guarded by mu
    void Wake();
  };
  const std::shared_ptr<RetentionWakeup> retention_wakeup_ = std::make_shared<RetentionWakeup>();
  std::thread scrub_thread_;
  std::thread checkpoint_thread_;
  std::thread snapshot_thread_;
  std::thread cold_thread_;
  std::shared_ptr<log::ColdReadCache> cold_cache_;
  std::unique_ptr<kv::Store> kv_;  // null until a primary-key table exists
  std::mutex checkpoint_mu_;       // one checkpoint at a time
  // A primary-key changelog's two floors: what the newest checkpoint covers, and what its
  // holder (the lake) has copied. Retention keeps everything from the lower one.
  // With KV snapshots, also the offset of the last one uploaded here: a replica restoring it
  // fetches the changelog from there.
  struct Floors {
    int64_t checkpoint = 0;
    int64_t held = 0;
    int64_t snapshot = INT64_MAX;
    int64_t Lowest(bool held_too) const {
      return std::min({checkpoint, held_too ? held : INT64_MAX, snapshot});
    }
  };
  std::mutex floors_mu_;
  std::map<std::pair<int64_t, int32_t>, Floors> floors_;  // by (table id, bucket)
  // The offset of each bucket's last KV snapshot uploaded here, by (table id, bucket); only
  // the snapshot thread touches it.
  std::map<std::pair<int64_t, int32_t>, int64_t> snapshotted_;
};

}  // namespace oxbow::engine
