// The key-value store of a data dir: one RocksDB instance under <data_dir>/kv with a column
// family per primary-key table, one shared block cache and one write-buffer budget, and
// checkpoints under <data_dir>/kv-checkpoints (docs/primary-keys.md). RocksDB's errors are
// translated into Status here and nowhere else.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/common/status.h"

namespace oxbow::kv {

struct StoreOptions {
  // The data dir; the store lives in <dir>/kv and its checkpoints in <dir>/kv-checkpoints.
  std::string dir;
  // The block cache every table shares. Default: 256 MiB.
  int64_t block_cache_bytes = int64_t{256} << 20;
  // All memtables of all tables together. Default: 128 MiB.
  int64_t write_buffer_bytes = int64_t{128} << 20;
  // Checkpoints kept. Default: 2.
  int checkpoints_kept = 2;
};

// What a checkpoint covers: per table id and bucket, the changelog offset its state is at.
struct CheckpointInfo {
  std::string path;
  struct Bucket {
    int64_t table_id;
    int32_t bucket;
    int64_t offset;
  };
  std::vector<Bucket> offsets;
};

// One key's write: a value to put, or std::nullopt to delete.
struct KeyWrite {
  std::string key;
  std::optional<std::string> value;
};

// How a table's rows are found: only by their whole key (upserts, lookups), or also by a shorter
// key prefix (prefix lookups, when the bucket key is a strict prefix of the primary key). Rows
// found by whole key only are kept in hashed memtables: an upsert's read and write of a key then
// cost a hash probe instead of a skip-list walk, and a scan sorts a copy of the memtable first
// (docs/primary-keys.md#storage).
enum class KeyAccess { kWholeKey, kPrefix };

class TableStore;

class Store {
 public:
  // Opens <dir>/kv; when it is missing, restores the newest checkpoint into it first (or starts
  // empty). Column families of tables not in `live_tables` (an interrupted drop) are dropped.
  static Result<std::unique_ptr<Store>> Open(StoreOptions options,
                                             const std::map<int64_t, KeyAccess>& live_tables);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // The store of a table (its column family, created when missing). Lives as long as the Store.
  // `access` is the one the table was opened with before: a table's keys do not change.
  Result<TableStore*> OpenTable(int64_t table_id, KeyAccess access);
  Status DropTable(int64_t table_id);

  // Takes a checkpoint (flushing every memtable first) and keeps the newest checkpoints_kept.
  // The offsets it reports are read just before it is taken, so the checkpoint holds at least
  // them: replaying the changelog from them onto it is safe.
  Result<CheckpointInfo> Checkpoint();

  // Memory the store uses and how its block cache fares.
  struct Figures {
    int64_t block_cache_usage = 0;     // bytes in the block cache (memtables charged to it)
    int64_t block_cache_pinned = 0;    // of which pinned by readers
    int64_t block_cache_capacity = 0;  // its budget
    int64_t memtable_usage = 0;        // bytes of every memtable
    int64_t block_cache_hits = 0;      // lookups of the cache that found the block, since open
    int64_t block_cache_misses = 0;    // and that read it from disk
  };
  Figures figures() const;

  // Flushes every memtable, so a restart needs no changelog replay, and closes.
  Status Close();

  struct Impl;

 private:
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The rows of one table: keys are <bucket: 4 bytes big-endian><encoded primary key>; per bucket
// the changelog offset the rows are at is stored beside them, written in the same atomic batch.
class TableStore {
 public:
  virtual ~TableStore() = default;
  // Calls `fn(i, value)` for each of `keys` (full encoded keys) that is present, in order, with no
  // copy of the value (valid during the call only); stops at the first error `fn` returns.
  virtual Status MultiGetEach(std::span<const std::string> keys,
                              const std::function<Status(size_t, std::string_view)>& fn) = 0;
  // Applies `writes` and records that `bucket` is at changelog offset `applied_offset`,
  // atomically.
  virtual Status Write(int32_t bucket, const std::vector<KeyWrite>& writes,
                       int64_t applied_offset) = 0;
  // The changelog offset `bucket` is at, or std::nullopt when it has never been written.
  virtual Result<std::optional<int64_t>> AppliedOffset(int32_t bucket) = 0;
  // Called before memtables holding this table's rows are written to files (a flush, a
  // checkpoint), on the thread that writes them: it makes durable the changelog those rows came
  // from, so the files are never ahead of what recovery replays. It must not fail: a failure
  // stops the process before the files are written. Replaces the guard set before; an empty
  // function removes it (and waits for a call of the old one in progress).
  virtual void SetFlushGuard(std::function<Status()> guard) = 0;

  // A consistent view: every bucket's rows and applied offsets as of one moment.
  class View {
   public:
    virtual ~View() = default;
    virtual Result<std::optional<int64_t>> AppliedOffset(int32_t bucket) = 0;
    // Calls `fn(key, value)` for each row whose key starts with `prefix`, in key order from
    // `start` (empty: from the first), until it returns false.
    virtual Status Scan(std::string_view prefix, std::string_view start,
                        const std::function<bool(std::string_view, std::string_view)>& fn) = 0;
  };
  virtual std::unique_ptr<View> NewView() = 0;

  // Writes the rows of `bucket` as of one moment into SST files in `dir` (an existing local
  // directory), each of at most about `max_file_bytes`; returns their paths, in key order, and
  // the applied offset of that moment (a KV snapshot, docs/cluster.md#kv-snapshots).
  struct BucketDump {
    std::vector<std::string> files;
    int64_t applied_offset = 0;
    int64_t rows = 0;
  };
  virtual Result<BucketDump> DumpBucket(int32_t bucket, const std::string& dir,
                                        int64_t max_file_bytes) = 0;
  // Replaces every row of `bucket` with those of `files` (a DumpBucket's, moved into the store)
  // and records that the bucket is at `applied_offset`.
  virtual Status RestoreBucket(int32_t bucket, const std::vector<std::string>& files,
                               int64_t applied_offset) = 0;
};

// The key prefix of a bucket's rows.
std::string BucketPrefix(int32_t bucket);

}  // namespace oxbow::kv
