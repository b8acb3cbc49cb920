// Rebuilding a lost data dir from the warehouse (docs/operations.md#recovering-a-lost-data-dir).
#include "oxbow/engine/engine.h"
#include "oxbow/engine/kv_snapshot_internal.h"
#include "oxbow/engine/pk_table_internal.h"
#include "oxbow/engine/recover_internal.h"

namespace oxbow::engine {

namespace {

// What the warehouse holds of one bucket, and how its log is rebuilt.
struct BucketPlan {
  bool has_cold = false;  // its cold segments are the start of the rebuilt log
  log::ColdManifestCopy cold;
  std::optional<KvSnapshotRef> snapshot;
  int64_t next_offset = 0;    // where the log goes on
  std::string unrebuildable;  // why the table's rows cannot be rebuilt: it is left out
};

std::string BucketName(const catalog::TableDescriptor& table, int32_t bucket) {
  return "table " + Quote(table.name) + " bucket " + std::to_string(bucket);
}

// Plans one bucket: a log table goes on after its cold segments or its lake, whichever holds
// more (the lake holds the rows the cold segments would: a log restarted after them drops them);
// a primary-key table's rows are the newest KV snapshot plus the cold changelog after it, and
// must reach as far as its lake, or the table is left out (`unrebuildable` says why).
Result<BucketPlan> PlanBucket(const EngineOptions& options, const catalog::TableDescriptor& table,
                              int32_t bucket, int64_t held) {
  BucketPlan plan;
  if (options.cold_fs) {
    const std::string dir = JoinPath(JoinPath(options.cold_root, std::to_string(table.table_id)),
                                     std::to_string(bucket));
    ASSIGN_OR_RAISE(auto copy, log::BucketLog::ReadColdManifestCopy(*options.cold_fs, dir));
    plan.has_cold = copy.has_value();
    if (copy) plan.cold = std::move(*copy);
  }
  if (table.primary_key.empty()) {
    plan.has_cold = plan.has_cold && plan.cold.next_offset >= held;
    plan.next_offset = plan.has_cold ? plan.cold.next_offset : held;
    return plan;
  }
  if (options.kv_snapshot_fs) {
    ASSIGN_OR_RAISE(plan.snapshot,
                    internal::LatestKvSnapshot({options.kv_snapshot_fs, options.kv_snapshot_root},
                                               table.table_id, bucket));
  }
  const int64_t rows_at = plan.snapshot ? plan.snapshot->offset : 0;
  if (plan.has_cold && (plan.cold.first_offset > rows_at || plan.cold.next_offset <= rows_at)) {
    if (!plan.snapshot) {
      plan.unrebuildable = BucketName(table, bucket) + ": its changelog in the warehouse starts " +
                           "at offset " + std::to_string(plan.cold.first_offset) +
                           " and there is no KV snapshot to rebuild its rows from";
      return plan;
    }
    plan.has_cold = false;  // the snapshot is newer, or the changelog after it is not whole
  }
  plan.next_offset = plan.has_cold ? plan.cold.next_offset : rows_at;
  if (held > plan.next_offset) {
    plan.unrebuildable =
        BucketName(table, bucket) + ": its lake holds offsets up to " + std::to_string(held) +
        " but its rows can be rebuilt only up to " + std::to_string(plan.next_offset) +
        (plan.snapshot ? " (the KV snapshot at " + std::to_string(plan.snapshot->offset) +
                             " and the cold changelog after it)"
                       : " (no KV snapshot)");
  }
  return plan;
}

// Lays out the bucket's log as planned: the cold manifest, or an empty log at next_offset.
Status RebuildLog(const EngineOptions& options, const std::string& dir, const BucketPlan& plan) {
  if (plan.has_cold) return log::BucketLog::AdoptColdManifest(*options.fs, dir, plan.cold);
  if (plan.next_offset == 0) return Status::OK();
  ASSIGN_OR_RAISE(auto log, log::BucketLog::Open(options.fs, dir, options.log));
  RETURN_NOT_OK(log->ResetTo(plan.next_offset));
  return log->Close();
}

}  // namespace

Result<Recovery> RecoverDataDir(const EngineOptions& given, const RecoveryLake& lake) {
  EngineOptions options = given;
  if (!options.fs) options.fs = PosixFileSystem::Default();
  FileSystem& fs = *options.fs;
  const std::string& dir = options.data_dir;
  if (!options.catalog_copy.fs) {
    return Status::Invalid("no copy of the catalog is configured to recover " + dir + " from");
  }
  RETURN_NOT_OK(fs.CreateDirs(dir));
  auto lock = fs.LockFile(JoinPath(dir, "LOCK"));
  if (lock.status().code() == StatusCode::kAlreadyExists) {
    return Status::IOError("data dir '" + dir + "' is in use by another oxbowd");
  }
  RETURN_NOT_OK(lock.status());
  const std::string marker = JoinPath(dir, internal::kRecoveringMarker);
  if (fs.FileSize(JoinPath(dir, "catalog.json")).ok() && !fs.FileSize(marker).ok()) {
    return Status::Invalid("data dir '" + dir + "' holds a catalog already: only an empty data " +
                           "dir (or one whose recovery did not finish) is rebuilt");
  }
  RETURN_NOT_OK(WriteFileAtomically(fs, dir, internal::kRecoveringMarker, "rebuilding\n"));
  // What an unfinished attempt left goes; the lake's pointers are stored over.
  for (const char* leftover : {"catalog.json", "tables", "kv", "kv-checkpoints", "recovery"}) {
    RETURN_NOT_OK(fs.RemoveAll(JoinPath(dir, leftover)));
  }
  RETURN_NOT_OK(catalog::Catalog::RestoreFromCopy(options.catalog_copy, fs, dir));
  ASSIGN_OR_RAISE(auto catalog, catalog::Catalog::Open(options.fs, dir));
  if (lake.restore_pointers) RETURN_NOT_OK(lake.restore_pointers());

  Recovery recovery;
  std::map<int64_t, kv::KeyAccess> primary_key_tables;
  std::vector<std::pair<catalog::TableDescriptor, std::vector<BucketPlan>>> plans;
  for (const catalog::TableDescriptor& table : catalog->List()) {
    std::vector<int64_t> held(static_cast<size_t>(table.buckets), 0);
    if (lake.held_offsets) {
      ASSIGN_OR_RAISE(held, lake.held_offsets(table));
    }
    std::vector<BucketPlan> buckets;
    std::string unrebuildable;
    for (int32_t b = 0; b < table.buckets && unrebuildable.empty(); ++b) {
      ASSIGN_OR_RAISE(BucketPlan plan, PlanBucket(options, table, b, held[static_cast<size_t>(b)]));
      unrebuildable = plan.unrebuildable;
      buckets.push_back(std::move(plan));
    }
    if (!unrebuildable.empty()) {
      recovery.left_out.push_back(unrebuildable);
      RETURN_NOT_OK(catalog->Drop(table.name));
      continue;
    }
    if (!table.primary_key.empty()) {
      primary_key_tables[table.table_id] = internal::KeyAccessOf(table);
    }
    plans.emplace_back(table, std::move(buckets));
  }

  std::unique_ptr<kv::Store> store;
  if (!primary_key_tables.empty()) {
    kv::StoreOptions kv_options;
    kv_options.dir = dir;
    kv_options.block_cache_bytes = options.kv_block_cache_bytes;
    kv_options.write_buffer_bytes = options.kv_write_buffer_bytes;
    ASSIGN_OR_RAISE(store, kv::Store::Open(kv_options, primary_key_tables));
  }
  for (const auto& [table, buckets] : plans) {
    const std::string table_dir = JoinPath(JoinPath(dir, "tables"), std::to_string(table.table_id));
    Recovery::Table recovered{table.name, {}};
    kv::TableStore* rows = nullptr;
    if (!table.primary_key.empty()) {
      ASSIGN_OR_RAISE(rows, store->OpenTable(table.table_id, internal::KeyAccessOf(table)));
    }
    for (int32_t b = 0; b < table.buckets; ++b) {
      const BucketPlan& plan = buckets[static_cast<size_t>(b)];
      RETURN_NOT_OK(RebuildLog(options, JoinPath(table_dir, std::to_string(b)), plan)
                        .WithContext(BucketName(table, b)));
      if (plan.snapshot && !table.primary_key.empty()) {
        const std::string scratch = JoinPath(JoinPath(dir, "recovery"), std::to_string(b));
        ASSIGN_OR_RAISE(auto files, internal::DownloadKvSnapshot(
                                        {options.kv_snapshot_fs, options.kv_snapshot_root},
                                        *plan.snapshot, scratch));
        RETURN_NOT_OK(
            rows->RestoreBucket(b, files, plan.snapshot->offset).WithContext(BucketName(table, b)));
      }
      recovered.next_offsets.push_back(plan.next_offset);
    }
    recovery.tables.push_back(std::move(recovered));
  }
  if (store) RETURN_NOT_OK(store->Close());
  RETURN_NOT_OK(fs.RemoveAll(JoinPath(dir, "recovery")));
  RETURN_NOT_OK(fs.Remove(marker));
  RETURN_NOT_OK(fs.SyncDir(dir));
  return recovery;
}

}  // namespace oxbow::engine
