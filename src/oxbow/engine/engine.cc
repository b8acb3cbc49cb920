#include "oxbow/engine/engine.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "oxbow/common/parse.h"
#include "oxbow/engine/log_table_internal.h"
#include "oxbow/engine/pk_table_internal.h"
#include "oxbow/engine/recover_internal.h"

namespace oxbow::engine {

namespace {

// log.local.retention in ms, or -1 when the table does not set it.
Result<int64_t> LocalRetentionMs(const catalog::TableDescriptor& table) {
  auto it = table.properties.find(kLocalRetentionProperty);
  if (it == table.properties.end()) return -1;
  auto ms = ParseDurationMs(it->second);
  if (!ms.ok()) {
    return Status::Invalid("table property " + std::string(kLocalRetentionProperty) + ": " +
                           ms.status().message());
  }
  return ms;
}

// The smallest log.segment.bytes: a segment holds at least its header and one batch.
constexpr int64_t kMinSegmentBytes = 1024;

// A retention property: nullopt when unset, -1 for "none", else what `parse` makes of it.
Result<std::optional<int64_t>> RetentionProperty(const catalog::TableDescriptor& table,
                                                 const char* key, bool duration) {
  auto it = table.properties.find(key);
  if (it == table.properties.end()) return std::optional<int64_t>();
  if (it->second == "none") return std::optional<int64_t>(-1);
  auto value = duration ? ParseDurationMs(it->second) : ParseInt64(it->second);
  if (!value.ok() || *value < 0) {
    return Status::Invalid("table property " + std::string(key) + ": " + Quote(it->second) +
                           (duration ? " is not a duration (a whole number with ms, s, m, h or d)"
                                     : " is not a number of bytes") +
                           " nor \"none\"");
  }
  return std::optional<int64_t>(*value);
}

}  // namespace

Result<TableLogProperties> LogPropertiesOf(const catalog::TableDescriptor& table) {
  TableLogProperties log;
  ASSIGN_OR_RAISE(log.retention_ms, RetentionProperty(table, kRetentionProperty, true));
  ASSIGN_OR_RAISE(log.retention_bytes, RetentionProperty(table, kRetentionBytesProperty, false));
  if (auto it = table.properties.find(kSegmentBytesProperty); it != table.properties.end()) {
    auto bytes = ParseInt64(it->second);
    if (!bytes.ok() || *bytes < kMinSegmentBytes) {
      return Status::Invalid("table property " + std::string(kSegmentBytesProperty) + ": " +
                             Quote(it->second) + " is not a number of bytes of at least " +
                             std::to_string(kMinSegmentBytes));
    }
    log.segment_bytes = *bytes;
  }
  return log;
}

Result<std::unique_ptr<Engine>> Engine::Open(EngineOptions options) {
  if (!options.fs) options.fs = PosixFileSystem::Default();
  std::unique_ptr<Engine> engine(new Engine(std::move(options)));
  if (engine->options_.cold_fs) {
    engine->cold_cache_ = std::make_shared<log::ColdReadCache>(
        engine->options_.cold_cache_bytes, engine->options_.cold_cache_block_bytes);
  }
  RETURN_NOT_OK(engine->options_.fs->CreateDirs(engine->options_.data_dir));
  RETURN_NOT_OK(engine->LockDataDir());
  const std::string marker = JoinPath(engine->options_.data_dir, internal::kRecoveringMarker);
  if (engine->options_.fs->FileSize(marker).ok()) {
    return Status::Invalid("data dir '" + engine->options_.data_dir +
                           "' is half rebuilt: its recovery from the warehouse did not finish (" +
                           marker + "); run oxbowd --recover-from-warehouse again");
  }
  ASSIGN_OR_RAISE(engine->catalog_,
                  catalog::Catalog::Open(engine->options_.fs, engine->options_.data_dir,
                                         engine->options_.catalog_copy));
  for (const auto& descriptor : engine->catalog_->List()) {
    ASSIGN_OR_RAISE(auto table, engine->OpenTable(descriptor));
    engine->tables_[descriptor.name] = std::move(table);
  }
  RETURN_NOT_OK(engine->RemoveOrphanTableDirs());
  if (engine->kv_) {
    // Recovery replayed the changelogs: a checkpoint now lets retention move past them.
    RETURN_NOT_OK(engine->CheckpointKeyValueStore());
  }
  if (engine->options_.kv_snapshot_interval_ms > 0 && engine->options_.kv_snapshot_fs) {
    engine->snapshot_thread_ = std::thread([e = engine.get()] {
      e->RunEvery(e->options_.kv_snapshot_interval_ms, "uploading KV snapshots",
                  [e] { return e->SnapshotKeyValueStore(); });
    });
  }
  if (engine->options_.kv_checkpoint_interval_ms > 0) {
    engine->checkpoint_thread_ = std::thread([e = engine.get()] {
      e->RunEvery(e->options_.kv_checkpoint_interval_ms, "checkpointing the key-value store",
                  [e] { return e->CheckpointKeyValueStore(); });
    });
  }
  if (engine->cold_cache_ && engine->options_.cold_check_ms > 0) {
    engine->cold_thread_ = std::thread([e = engine.get()] { e->ColdLoop(); });
  }
  if (engine->options_.retention_check_ms > 0) {
    engine->retention_thread_ = std::thread([e = engine.get()] { e->RetentionLoop(); });
  }
  if (engine->options_.scrub_interval_ms > 0 && engine->options_.scrub_bytes_per_second > 0) {
    engine->scrub_thread_ = std::thread([e = engine.get()] { e->ScrubLoop(); });
  }
  return engine;
}

Engine::~Engine() { (void)Close(); }

Status Engine::LockDataDir() {
  const std::string path = JoinPath(options_.data_dir, "LOCK");
  auto lock = options_.fs->LockFile(path);
  if (lock.status().code() == StatusCode::kAlreadyExists) {
    return Status::IOError("data dir '" + options_.data_dir + "' is in use by another oxbowd (" +
                           path + " is locked)");
  }
  ASSIGN_OR_RAISE(data_dir_lock_, std::move(lock));
  return Status::OK();
}

std::string Engine::TableDir(int64_t table_id) const {
  return JoinPath(JoinPath(options_.data_dir, "tables"), std::to_string(table_id));
}

Status Engine::RemoveOrphanTableDirs() {
  const std::string root = JoinPath(options_.data_dir, "tables");
  RETURN_NOT_OK(options_.fs->CreateDirs(root));
  std::set<std::string> live;
  for (const auto& t : catalog_->List()) live.insert(std::to_string(t.table_id));
  ASSIGN_OR_RAISE(auto entries, options_.fs->ListDir(root));
  for (const auto& entry : entries) {
    if (live.count(entry)) continue;
    RETURN_NOT_OK(options_.fs->RemoveAll(JoinPath(root, entry)));
  }
  return Status::OK();
}

Result<kv::Store*> Engine::KeyValueStore() {
  if (kv_) return kv_.get();
  kv::StoreOptions options;
  options.dir = options_.data_dir;
  options.block_cache_bytes = options_.kv_block_cache_bytes;
  options.write_buffer_bytes = options_.kv_write_buffer_bytes;
  std::map<int64_t, kv::KeyAccess> live;
  for (const auto& t : catalog_->List()) {
    if (!t.primary_key.empty()) live[t.table_id] = internal::KeyAccessOf(t);
  }
  ASSIGN_OR_RAISE(kv_, kv::Store::Open(std::move(options), live));
  return kv_.get();
}

Result<std::shared_ptr<Table>> Engine::OpenTable(const catalog::TableDescriptor& descriptor) {
  internal::LogTableOptions options;
  options.dir = TableDir(descriptor.table_id);
  options.log = options_.log;
  ASSIGN_OR_RAISE(TableLogProperties own, LogPropertiesOf(descriptor));
  if (own.retention_ms) options.log.retention_ms = *own.retention_ms;
  if (own.retention_bytes) options.log.retention_bytes = *own.retention_bytes;
  if (own.segment_bytes) options.log.segment_bytes = *own.segment_bytes;
  options.fs = options_.fs;
  if (options_.retention_check_ms > 0) {
    options.log.on_roll = [wakeup = retention_wakeup_] { wakeup->Wake(); };
  }
  if (options_.holds_retention && options_.holds_retention(descriptor)) {
    // Nothing is deleted until the holder has said how far it got (SetRetentionFloor).
    options.log.retention_floor = 0;
  }
  if (options_.make_batch_check) options.batch_check = options_.make_batch_check(descriptor);
  if (cold_cache_) {
    ASSIGN_OR_RAISE(int64_t local_retention_ms, LocalRetentionMs(descriptor));
    options.log.cold = {options_.cold_fs,
                        JoinPath(options_.cold_root, std::to_string(descriptor.table_id)),
                        local_retention_ms, cold_cache_};
  }
  if (descriptor.primary_key.empty()) {
    ASSIGN_OR_RAISE(auto table, internal::OpenLogTable(descriptor, std::move(options)));
    return std::shared_ptr<Table>(std::move(table));
  }
  // A changelog is kept until a checkpoint of the store covers it (CheckpointKeyValueStore).
  options.log.retention_floor = 0;
  ASSIGN_OR_RAISE(kv::Store * store, KeyValueStore());
  ASSIGN_OR_RAISE(kv::TableStore * rows,
                  store->OpenTable(descriptor.table_id, internal::KeyAccessOf(descriptor)));
  return internal::OpenPrimaryKeyTable(descriptor, std::move(options), rows, options_.replicated,
                                       {options_.kv_snapshot_fs, options_.kv_snapshot_root});
}

Result<std::shared_ptr<Table>> Engine::GetTable(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tables_.find(name);
  if (it == tables_.end()) return Status::NotFound("table " + Quote(name) + " does not exist");
  return it->second;
}

Status Engine::CheckTable(const catalog::TableDescriptor& table) const {
  if (!table.primary_key.empty()) {
    RETURN_NOT_OK(internal::CheckPrimaryKeyTable(table));
  } else {
    for (const auto& [key, value] : table.properties) {
      if (key == "merge_engine" || key.rfind("changelog.", 0) == 0 ||
          key.rfind("merge_engine.", 0) == 0 || key.rfind("fields.", 0) == 0) {
        return Status::Invalid("table property " + Quote(key) + " needs a primary key");
      }
    }
  }
  RETURN_NOT_OK(LogPropertiesOf(table).status());
  ASSIGN_OR_RAISE(int64_t local_retention_ms, LocalRetentionMs(table));
  if (local_retention_ms >= 0 && !cold_cache_) {
    return Status::Invalid("table property " + std::string(kLocalRetentionProperty) +
                           " needs a cold store (the warehouse), and this engine has none");
  }
  return Status::OK();
}

namespace {

// Whether `a` and `b` differ in a property whose name is `key` or starts with `key` + ".".
bool PropertyFamilyDiffers(const std::map<std::string, std::string>& a,
                           const std::map<std::string, std::string>& b, const std::string& key) {
  auto family = [&](const std::map<std::string, std::string>& properties) {
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : properties) {
      if (k == key || k.rfind(key + ".", 0) == 0) out[k] = v;
    }
    return out;
  };
  return family(a) != family(b);
}

// "#<id>": a column named by its field id.
std::string FieldIdName(int32_t id) {
  std::string out(1, '#');
  out.append(std::to_string(id));
  return out;
}

// The properties of primary-key table `t` with the columns that merge_engine.version_column and
// fields.<col>.* name written as "#<field id>", leaving out fields.* of columns `altered` lacks
// (dropped): equal before and after an alter that renamed or dropped columns only.
std::map<std::string, std::string> MergeProperties(const catalog::TableDescriptor& t,
                                                   const catalog::TableDescriptor& altered) {
  // The column's field id, or nullopt when `t` has no such column (the property is checked later).
  auto id_of = [&](const std::string& name) -> std::optional<int32_t> {
    const int i = t.schema->GetFieldIndex(name);
    if (i < 0) return std::nullopt;
    return t.field_ids[static_cast<size_t>(i)];
  };
  auto dropped = [&](int32_t id) {
    return std::find(altered.field_ids.begin(), altered.field_ids.end(), id) ==
           altered.field_ids.end();
  };
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : t.properties) {
    if (k == "merge_engine.version_column") {
      const auto id = id_of(v);
      out[k] = id ? FieldIdName(*id) : v;
      continue;
    }
    const auto dot = k.rfind('.');
    if (k.rfind("fields.", 0) == 0 && dot > 7) {
      if (const auto id = id_of(k.substr(7, dot - 7))) {
        if (!dropped(*id)) out["fields." + FieldIdName(*id) + k.substr(dot)] = v;
        continue;
      }
    }
    out[k] = v;
  }
  return out;
}

}  // namespace

Result<catalog::TableDescriptor> Engine::AlterTable(const catalog::TableDescriptor& before,
                                                    const catalog::TableDescriptor& after) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tables_.find(before.name);
  if (it == tables_.end())
    return Status::NotFound("table " + Quote(before.name) + " does not exist");
  const catalog::TableDescriptor& current = it->second->descriptor();
  if (catalog::DescriptorToJson(current) != catalog::DescriptorToJson(before)) {
    return Status::Invalid("table " + Quote(before.name) +
                           " was altered meanwhile; send the alter again");
  }
  if (!after.primary_key.empty()) {
    // Stored rows record their schema version and are read converted, so any column change
    // catalog::ApplyAlter allows is fine; the merge properties follow renamed and dropped
    // columns but are otherwise fixed.
    const auto merge_before = MergeProperties(before, after);
    const auto merge_after = MergeProperties(after, after);
    for (const char* fixed : {"merge_engine", "fields"}) {
      if (PropertyFamilyDiffers(merge_before, merge_after, fixed)) {
        return Status::Invalid("primary-key table " + Quote(after.name) + ": the " + fixed +
                               ".* properties are fixed at creation (the stored rows were merged "
                               "by them)");
      }
    }
  }
  RETURN_NOT_OK(CheckTable(after));
  // The table reopens on the new descriptor: streams open on the old one end with an error
  // (a closed log) rather than mix schemas.
  std::shared_ptr<Table> old = it->second;
  RETURN_NOT_OK(old->Close());
  Status persisted = catalog_->Replace(after);
  auto reopened = OpenTable(persisted.ok() ? after : before);
  if (!reopened.ok()) {
    if (persisted.ok()) (void)catalog_->Replace(before);
    auto again = OpenTable(before);
    if (again.ok()) {
      it->second = std::move(again).ValueOrDie();
    } else {
      spdlog::error("table '{}' could not be reopened after a failed alter: {}", before.name,
                    again.status().message());
    }
    return reopened.status().WithContext("altering table " + Quote(before.name));
  }
  it->second = std::move(reopened).ValueOrDie();
  RETURN_NOT_OK(persisted);
  return after;
}

Result<catalog::TableDescriptor> Engine::CreateTable(const catalog::CreateTableRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = tables_.find(request.table.name); it != tables_.end()) {
    if (request.if_not_exists) return it->second->descriptor();
    return Status::AlreadyExists("table " + Quote(request.table.name) + " already exists");
  }
  RETURN_NOT_OK(CheckTable(request.table));
  ASSIGN_OR_RAISE(auto descriptor, catalog_->Create(request.table, request.if_not_exists));
  auto table = OpenTable(descriptor);
  if (!table.ok()) {
    (void)catalog_->Drop(descriptor.name);
    return table.status();
  }
  tables_[descriptor.name] = std::move(table).ValueOrDie();
  return descriptor;
}

Status Engine::AdoptTable(const catalog::TableDescriptor& table) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tables_.count(table.name)) {
    return Status::AlreadyExists("table " + Quote(table.name) + " already exists");
  }
  RETURN_NOT_OK(CheckTable(table));
  RETURN_NOT_OK(catalog_->Adopt(table));
  auto opened = OpenTable(table);
  if (!opened.ok()) {
    (void)catalog_->Drop(table.name);
    return opened.status();
  }
  tables_[table.name] = std::move(opened).ValueOrDie();
  return Status::OK();
}

Status Engine::DropTable(const std::string& name) {
  std::shared_ptr<Table> table;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tables_.find(name);
    if (it == tables_.end()) return Status::NotFound("table " + Quote(name) + " does not exist");
    RETURN_NOT_OK(catalog_->Drop(name));
    table = std::move(it->second);
    tables_.erase(it);
  }
  (void)table->Close();
  if (!table->descriptor().primary_key.empty() && kv_) {
    // A failure leaves an orphan column family that the next open drops.
    if (Status st = kv_->DropTable(table->descriptor().table_id); !st.ok()) {
      spdlog::warn("dropping the rows of table '{}': {}", name, st.message());
    }
  }
  if (cold_cache_) {
    const std::string cold_dir =
        JoinPath(options_.cold_root, std::to_string(table->descriptor().table_id));
    if (Status st = options_.cold_fs->RemoveAll(cold_dir); !st.ok()) {
      spdlog::warn("dropping the cold segments of table '{}' in {}: {}", name, cold_dir,
                   st.message());
    }
  }
  Status removed = options_.fs->RemoveAll(TableDir(table->descriptor().table_id));
  if (!removed.ok()) {
    return Status::IOError("table '" + name +
                           "' was dropped but its files remain: " + removed.message());
  }
  return Status::OK();
}

std::vector<catalog::TableDescriptor> Engine::ListTables() const { return catalog_->List(); }

Result<TableStatus> Engine::DescribeTable(const std::string& name) const {
  ASSIGN_OR_RAISE(auto table, GetTable(name));
  return TableStatus{table->descriptor(), table->Buckets(), table->read_schema()};
}

Result<std::unique_ptr<PutSession>> Engine::StartPut(const std::string& name,
                                                     const arrow::SchemaPtr& client_schema,
                                                     PutOp op) {
  ASSIGN_OR_RAISE(auto table, GetTable(name));
  return table->StartPut(client_schema, op);
}

Result<std::unique_ptr<SnapshotReader>> Engine::OpenSnapshot(const SnapshotRequest& request) {
  ASSIGN_OR_RAISE(auto table, GetTable(request.table));
  return table->OpenSnapshot(request);
}

Result<arrow::RecordBatchPtr> Engine::Lookup(const LookupRequest& request) {
  ASSIGN_OR_RAISE(auto table, GetTable(request.table));
  return table->Lookup(request);
}

Status Engine::CheckpointKeyValueStore() {
  std::lock_guard<std::mutex> one_at_a_time(checkpoint_mu_);
  kv::Store* store = nullptr;
  std::unordered_map<int64_t, std::shared_ptr<Table>> by_id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!kv_ || closing_) return Status::OK();
    store = kv_.get();
    for (const auto& [name, table] : tables_) by_id[table->descriptor().table_id] = table;
  }
  ASSIGN_OR_RAISE(auto checkpoint, store->Checkpoint());
  std::lock_guard<std::mutex> lock(floors_mu_);
  for (const auto& b : checkpoint.offsets) {
    auto it = by_id.find(b.table_id);
    if (it == by_id.end() || b.bucket >= static_cast<int32_t>(it->second->logs().size())) continue;
    auto& floors = floors_[{b.table_id, b.bucket}];
    floors.checkpoint = b.offset;
    const bool held =
        options_.holds_retention && options_.holds_retention(it->second->descriptor());
    it->second->logs()[b.bucket]->SetRetentionFloor(floors.Lowest(held));
  }
  return Status::OK();
}

std::optional<kv::Store::Figures> Engine::key_value_figures() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!kv_ || closing_) return std::nullopt;
  return kv_->figures();
}

void Engine::RunEvery(int64_t interval_ms, const char* what, const std::function<Status()>& run) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!closing_cv_.wait_for(lock, std::chrono::milliseconds(interval_ms),
                               [this] { return closing_; })) {
    lock.unlock();
    if (Status st = run(); !st.ok()) spdlog::warn("{}: {}", what, st.message());
    lock.lock();
  }
}

Status Engine::SnapshotKeyValueStore() {
  Status first;
  for (const auto& table : Tables()) {
    const catalog::TableDescriptor& descriptor = table->descriptor();
    if (descriptor.primary_key.empty()) continue;
    for (int32_t b = 0; b < descriptor.buckets; ++b) {
      if (options_.kv_snapshot_wanted && !options_.kv_snapshot_wanted(descriptor, b)) continue;
      const auto key = std::make_pair(descriptor.table_id, b);
      const auto last = snapshotted_.find(key);
      auto uploaded = table->UploadKvSnapshot(b, last == snapshotted_.end() ? 0 : last->second);
      if (!uploaded.ok()) {
        if (first.ok()) first = uploaded.status();
        continue;
      }
      if (!*uploaded) continue;
      snapshotted_[key] = (*uploaded)->offset;
      {
        std::lock_guard<std::mutex> lock(floors_mu_);
        auto& floors = floors_[key];
        floors.snapshot = (*uploaded)->offset;
        const bool held = options_.holds_retention && options_.holds_retention(descriptor);
        table->logs()[b]->SetRetentionFloor(floors.Lowest(held));
      }
      if (options_.on_kv_snapshot) options_.on_kv_snapshot(descriptor, b, **uploaded);
    }
  }
  return first;
}

Result<std::unique_ptr<PutSession>> Engine::StartPutToBucket(const std::string& name,
                                                             const arrow::SchemaPtr& client_schema,
                                                             int32_t bucket) {
  ASSIGN_OR_RAISE(auto table, GetTable(name));
  return table->StartPutToBucket(client_schema, bucket);
}

Result<std::unique_ptr<ReadCursor>> Engine::OpenRead(const ReadRequest& request) {
  ASSIGN_OR_RAISE(auto table, GetTable(request.table));
  return table->OpenRead(request);
}

void Engine::RetentionWakeup::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu);
    due = true;
  }
  cv.notify_one();
}

void Engine::RetentionLoop() {
  RetentionWakeup& wakeup = *retention_wakeup_;
  std::unique_lock<std::mutex> lock(wakeup.mu);
  for (;;) {
    wakeup.cv.wait_for(lock, std::chrono::milliseconds(options_.retention_check_ms),
                       [&wakeup] { return wakeup.due || wakeup.stop; });
    if (wakeup.stop) break;
    wakeup.due = false;
    lock.unlock();
    for (const auto& table : Tables()) {
      for (const auto& log : table->logs()) {
        if (auto deleted = log->EnforceRetention(); !deleted.ok()) {
          spdlog::warn("retention of table '{}': {}", table->descriptor().name,
                       deleted.status().message());
        }
      }
    }
    lock.lock();
  }
}

void Engine::ColdLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!closing_cv_.wait_for(lock, std::chrono::milliseconds(options_.cold_check_ms),
                               [this] { return closing_; })) {
    lock.unlock();
    for (const auto& table : Tables()) {
      for (size_t b = 0; b < table->logs().size(); ++b) {
        auto moved = table->logs()[b]->OffloadColdSegments();
        if (!moved.ok()) {
          spdlog::warn(
              "table '{}' bucket {}: moving old segments to the cold store failed (they "
              "stay local; retried in {} ms): {}",
              table->descriptor().name, b, options_.cold_check_ms, moved.status().message());
        } else if (*moved > 0) {
          spdlog::info("table '{}' bucket {}: moved {} segments to the cold store",
                       table->descriptor().name, b, *moved);
        }
      }
    }
    lock.lock();
  }
}

std::vector<std::shared_ptr<Table>> Engine::Tables() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Table>> tables;
  for (const auto& [name, table] : tables_) tables.push_back(table);
  return tables;
}

void Engine::ScrubLoop() {
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 19) != 0) {
    spdlog::debug("scrubber: cannot lower its priority: {}", std::strerror(errno));
  }
  // When each (table id, bucket, segment) was last verified.
  using Key = std::tuple<int64_t, int32_t, int64_t>;
  std::map<Key, std::chrono::steady_clock::time_point> verified;
  const auto interval = std::chrono::milliseconds(options_.scrub_interval_ms);
  auto pause = [this](std::chrono::steady_clock::duration duration) {
    std::unique_lock<std::mutex> lock(mu_);
    return !closing_cv_.wait_for(lock, duration, [this] { return closing_; });
  };
  while (true) {
    std::map<Key, std::chrono::steady_clock::time_point> live;
    for (const auto& table : Tables()) {
      for (int32_t b = 0; b < static_cast<int32_t>(table->logs().size()); ++b) {
        log::BucketLog& log = *table->logs()[b];
        for (int64_t base : log.SealedSegments()) {
          const Key key{table->descriptor().table_id, b, base};
          auto known = verified.find(key);
          if (known != verified.end() &&
              std::chrono::steady_clock::now() - known->second < interval) {
            live[key] = known->second;
            continue;
          }
          auto scrubbed = log.ScrubSealedSegment(base);
          live[key] = std::chrono::steady_clock::now();
          if (!scrubbed.ok()) {
            spdlog::warn("table '{}' bucket {}: scrubbing segment {}: {}", table->descriptor().name,
                         b, base, scrubbed.status().message());
            continue;
          }
          for (const auto& damage : scrubbed->damaged) {
            internal::WarnAboutDamage(table->descriptor().name, b, damage, "the scrubber");
          }
          // Stay within the byte rate.
          if (!pause(std::chrono::microseconds(scrubbed->bytes_verified * 1'000'000 /
                                               options_.scrub_bytes_per_second))) {
            return;
          }
        }
      }
    }
    verified = std::move(live);
    if (!pause(std::chrono::seconds(1))) return;
  }
}

Status Engine::SetRetentionFloor(const std::string& name, int32_t bucket, int64_t offset) {
  ASSIGN_OR_RAISE(auto table, GetTable(name));
  if (bucket < 0 || bucket >= static_cast<int32_t>(table->logs().size())) {
    return Status::OutOfRange("bucket " + std::to_string(bucket) + " of '" + name +
                              "' does not exist");
  }
  const auto& descriptor = table->descriptor();
  if (descriptor.primary_key.empty()) {
    table->logs()[bucket]->SetRetentionFloor(offset);
    return Status::OK();
  }
  // A primary-key changelog is also held for recovery: the lower of the two floors applies.
  std::lock_guard<std::mutex> lock(floors_mu_);
  auto& floors = floors_[{descriptor.table_id, bucket}];
  floors.held = offset;
  table->logs()[bucket]->SetRetentionFloor(floors.Lowest(true));
  return Status::OK();
}

Status Engine::Close() {
  std::unordered_map<std::string, std::shared_ptr<Table>> tables;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
    tables.swap(tables_);
  }
  closing_cv_.notify_all();
  {
    std::lock_guard<std::mutex> lock(retention_wakeup_->mu);
    retention_wakeup_->stop = true;
  }
  retention_wakeup_->cv.notify_one();
  if (retention_thread_.joinable()) retention_thread_.join();
  if (cold_thread_.joinable()) cold_thread_.join();
  if (scrub_thread_.joinable()) scrub_thread_.join();
  if (checkpoint_thread_.joinable()) checkpoint_thread_.join();
  if (snapshot_thread_.joinable()) snapshot_thread_.join();
  Status first;
  for (auto& [name, table] : tables) {
    Status st = table->Close();
    if (first.ok() && !st.ok()) first = st;
  }
  std::lock_guard<std::mutex> one_at_a_time(checkpoint_mu_);
  if (kv_) {
    Status st = kv_->Close();
    if (first.ok() && !st.ok()) first = st;
  }
  return first;
}

}  // namespace oxbow::engine
