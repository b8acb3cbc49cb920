#include "oxbow/kv/store.h"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/listener.h>
#include <rocksdb/memtablerep.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/statistics.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_buffer_manager.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

namespace oxbow::kv {

namespace {

namespace fs = std::filesystem;

// Where a bucket's applied changelog offset is kept: after every row key, as no bucket number
// (at most 1024) starts with 0xFF.
constexpr std::string_view kAppliedPrefix("\xFF\xFF\xFF\xFF", 4);

Status FromRocks(const rocksdb::Status& st, std::string_view what) {
  if (st.ok()) return Status::OK();
  const std::string message = "key-value store: " + std::string(what) + ": " + st.ToString();
  if (st.IsNotFound()) return Status::NotFound(message);
  if (st.IsCorruption()) return Status::Corruption(message);
  if (st.IsInvalidArgument()) return Status::Invalid(message);
  if (st.IsNoSpace()) return Status::ResourceExhausted(message);
  return Status::IOError(message);
}

std::string ColumnFamilyName(int64_t table_id) { return "table-" + std::to_string(table_id); }

std::optional<int64_t> TableIdOf(const std::string& cf_name) {
  if (cf_name.rfind("table-", 0) != 0) return std::nullopt;
  try {
    return std::stoll(cf_name.substr(6));
  } catch (...) {
    return std::nullopt;
  }
}

void AppendBigEndian32(uint32_t v, std::string* out) {
  for (int i = 3; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

std::string AppliedKey(int32_t bucket) {
  std::string key(kAppliedPrefix);
  AppendBigEndian32(static_cast<uint32_t>(bucket), &key);
  return key;
}

std::string EncodeOffset(int64_t offset) {
  std::string out;
  AppendBigEndian32(static_cast<uint32_t>(static_cast<uint64_t>(offset) >> 32), &out);
  AppendBigEndian32(static_cast<uint32_t>(offset), &out);
  return out;
}

Result<int64_t> DecodeOffset(std::string_view bytes) {
  if (bytes.size() != 8)
    return Status::Corruption("key-value store: applied offset is not 8 bytes");
  uint64_t v = 0;
  for (char c : bytes) v = (v << 8) | static_cast<uint8_t>(c);
  return static_cast<int64_t>(v);
}

Result<std::optional<int64_t>> ReadApplied(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                                           const rocksdb::ReadOptions& options, int32_t bucket) {
  std::string value;
  rocksdb::Status st = db->Get(options, cf, AppliedKey(bucket), &value);
  if (st.IsNotFound()) return std::optional<int64_t>();
  RETURN_NOT_OK(FromRocks(st, "reading an applied offset"));
  ASSIGN_OR_RAISE(int64_t offset, DecodeOffset(value));
  return std::optional<int64_t>(offset);
}

// Every iterator reads in key order across all keys: a table kept in hashed memtables has a
// prefix extractor, under which an iterator would otherwise see only the keys of its seek key's
// hash bucket.
rocksdb::ReadOptions TotalOrder() {
  rocksdb::ReadOptions options;
  options.total_order_seek = true;
  return options;
}

// Hash buckets of a hashed memtable (8 bytes each, allocated with it). The vs_fluss upserts
// (100,000 keys, a 32 MiB memtable) ran as fast with 16,384 as with 262,144; 1,000,000 was
// slower (zeroing 8 MB for every new memtable).
constexpr size_t kMemtableHashBuckets = 32768;

// Numbered checkpoint directories, oldest first (".tmp" leftovers of a crash are not listed).
std::vector<std::pair<int64_t, fs::path>> ListCheckpoints(const fs::path& root) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    out.emplace_back(std::stoll(name), entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The flush guards of every table, by column family id, called before a flush writes files.
class FlushGuards : public rocksdb::EventListener {
 public:
  void Set(uint32_t cf_id, std::function<Status()> guard) {
    std::lock_guard lock(mu_);
    if (guard) {
      guards_[cf_id] = std::move(guard);
    } else {
      guards_.erase(cf_id);
    }
  }

  // RocksDB calls it after it picked the (immutable) memtables to flush and before it writes
  // them, with no lock of its own held.
  void OnFlushBegin(rocksdb::DB*, const rocksdb::FlushJobInfo& info) override {
    std::lock_guard lock(mu_);
    auto it = guards_.find(info.cf_id);
    if (it == guards_.end()) return;
    if (Status st = it->second(); !st.ok()) {
      // Writing the files now would put rows in them whose changelog may never be durable; a
      // restart rebuilds the memtables from the changelog instead.
      spdlog::critical("key-value store: {} cannot be flushed: {}; stopping", info.cf_name,
                       st.ToString());
      std::abort();
    }
  }

 private:
  std::mutex mu_;
  std::map<uint32_t, std::function<Status()>> guards_;  // guarded by mu_
};

class TableStoreImpl : public TableStore {
 public:
  TableStoreImpl(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                 std::shared_ptr<FlushGuards> guards)
      : db_(db), cf_(cf), guards_(std::move(guards)) {}
  ~TableStoreImpl() override { guards_->Set(cf_->GetID(), nullptr); }

  void SetFlushGuard(std::function<Status()> guard) override {
    guards_->Set(cf_->GetID(), std::move(guard));
  }

  Status MultiGetEach(std::span<const std::string> keys,
                      const std::function<Status(size_t, std::string_view)>& fn) override {
    std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
    std::vector<rocksdb::PinnableSlice> values(keys.size());
    std::vector<rocksdb::Status> statuses(keys.size());
    db_->MultiGet(rocksdb::ReadOptions(), cf_, keys.size(), slices.data(), values.data(),
                  statuses.data());
    for (size_t i = 0; i < keys.size(); ++i) {
      if (statuses[i].IsNotFound()) continue;
      RETURN_NOT_OK(FromRocks(statuses[i], "reading a row"));
      RETURN_NOT_OK(fn(i, std::string_view(values[i].data(), values[i].size())));
    }
    return Status::OK();
  }

  Status Write(int32_t bucket, const std::vector<KeyWrite>& writes,
               int64_t applied_offset) override {
    rocksdb::WriteBatch batch;
    for (const auto& w : writes) {
      if (w.value) {
        RETURN_NOT_OK(FromRocks(batch.Put(cf_, w.key, *w.value), "batching a row"));
      } else {
        RETURN_NOT_OK(FromRocks(batch.Delete(cf_, w.key), "batching a delete"));
      }
    }
    RETURN_NOT_OK(
        FromRocks(batch.Put(cf_, AppliedKey(bucket), EncodeOffset(applied_offset)), "batching"));
    // No WAL: the changelog is the log; recovery replays it from the applied offsets.
    rocksdb::WriteOptions options;
    options.disableWAL = true;
    return FromRocks(db_->Write(options, &batch), "writing rows");
  }

  Result<std::optional<int64_t>> AppliedOffset(int32_t bucket) override {
    return ReadApplied(db_, cf_, rocksdb::ReadOptions(), bucket);
  }

  Result<BucketDump> DumpBucket(int32_t bucket, const std::string& dir,
                                int64_t max_file_bytes) override {
    const rocksdb::Snapshot* snapshot = db_->GetSnapshot();
    struct Release {
      rocksdb::DB* db;
      const rocksdb::Snapshot* snapshot;
      ~Release() { db->ReleaseSnapshot(snapshot); }
    } release{db_, snapshot};
    rocksdb::ReadOptions read = TotalOrder();
    read.snapshot = snapshot;
    read.fill_cache = false;
    BucketDump dump;
    ASSIGN_OR_RAISE(auto applied, ReadApplied(db_, cf_, read, bucket));
    dump.applied_offset = applied.value_or(0);
    const std::string prefix = BucketPrefix(bucket);
    const std::string end = BucketPrefix(bucket + 1);
    rocksdb::Slice upper(end);
    read.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read, cf_));
    const rocksdb::Options options(db_->GetDBOptions(), db_->GetOptions(cf_));
    std::unique_ptr<rocksdb::SstFileWriter> writer;
    auto finish = [&]() -> Status {
      if (!writer) return Status::OK();
      RETURN_NOT_OK(FromRocks(writer->Finish(), "finishing a snapshot file"));
      writer.reset();
      return Status::OK();
    };
    for (it->Seek(prefix); it->Valid(); it->Next()) {
      if (!writer) {
        // No column family: its id differs from store to store (it follows the order tables were
        // opened in), and a file naming one is refused by any other.
        writer = std::make_unique<rocksdb::SstFileWriter>(
            rocksdb::EnvOptions(), options, static_cast<rocksdb::ColumnFamilyHandle*>(nullptr));
        dump.files.push_back(
            (fs::path(dir) / ("part-" + std::to_string(dump.files.size()) + ".sst")).string());
        RETURN_NOT_OK(FromRocks(writer->Open(dump.files.back()), "creating a snapshot file"));
      }
      RETURN_NOT_OK(FromRocks(writer->Put(it->key(), it->value()), "writing a snapshot file"));
      ++dump.rows;
      if (static_cast<int64_t>(writer->FileSize()) >= max_file_bytes) RETURN_NOT_OK(finish());
    }
    RETURN_NOT_OK(FromRocks(it->status(), "reading rows for a snapshot"));
    RETURN_NOT_OK(finish());
    return dump;
  }

  Status RestoreBucket(int32_t bucket, const std::vector<std::string>& files,
                       int64_t applied_offset) override {
    rocksdb::WriteOptions write;
    write.disableWAL = true;
    RETURN_NOT_OK(
        FromRocks(db_->DeleteRange(write, cf_, BucketPrefix(bucket), BucketPrefix(bucket + 1)),
                  "deleting a bucket's rows"));
    if (!files.empty()) {
      rocksdb::IngestExternalFileOptions ingest;
      ingest.move_files = true;
      RETURN_NOT_OK(FromRocks(db_->IngestExternalFile(cf_, files, ingest), "ingesting a snapshot"));
    }
    rocksdb::WriteBatch batch;
    RETURN_NOT_OK(
        FromRocks(batch.Put(cf_, AppliedKey(bucket), EncodeOffset(applied_offset)), "batching"));
    RETURN_NOT_OK(FromRocks(db_->Write(write, &batch), "recording a restored offset"));
    // No WAL: flush, so that a crash after the restore does not bring back the old rows' offset.
    return FromRocks(db_->Flush(rocksdb::FlushOptions(), cf_), "flushing a restored bucket");
  }

  class ViewImpl : public View {
   public:
    ViewImpl(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf)
        : db_(db), cf_(cf), snapshot_(db->GetSnapshot()), options_(TotalOrder()) {
      options_.snapshot = snapshot_;
    }
    ~ViewImpl() override {
      iterator_.reset();
      db_->ReleaseSnapshot(snapshot_);
    }

    Result<std::optional<int64_t>> AppliedOffset(int32_t bucket) override {
      return ReadApplied(db_, cf_, options_, bucket);
    }

    Status Scan(std::string_view prefix, std::string_view start,
                const std::function<bool(std::string_view, std::string_view)>& fn) override {
      // One iterator serves every scan of the view: over a hashed memtable, making one sorts a
      // copy of it.
      if (!iterator_) iterator_.reset(db_->NewIterator(options_, cf_));
      rocksdb::Iterator* it = iterator_.get();
      const std::string_view from = start.empty() ? prefix : start;
      for (it->Seek(rocksdb::Slice(from.data(), from.size())); it->Valid(); it->Next()) {
        const rocksdb::Slice key = it->key();
        if (!key.starts_with(rocksdb::Slice(prefix.data(), prefix.size()))) break;
        if (!fn(std::string_view(key.data(), key.size()),
                std::string_view(it->value().data(), it->value().size()))) {
          break;
        }
      }
      return FromRocks(it->status(), "scanning rows");
    }

   private:
    rocksdb::DB* db_;
    rocksdb::ColumnFamilyHandle* cf_;
    const rocksdb::Snapshot* snapshot_;
    rocksdb::ReadOptions options_;
    std::unique_ptr<rocksdb::Iterator> iterator_;
  };

  std::unique_ptr<View> NewView() override { return std::make_unique<ViewImpl>(db_, cf_); }

 private:
  rocksdb::DB* db_;
  rocksdb::ColumnFamilyHandle* cf_;
  const std::shared_ptr<FlushGuards> guards_;
};

}  // namespace

struct Store::Impl {
  StoreOptions options;
  fs::path db_path;
  fs::path checkpoint_root;
  std::shared_ptr<rocksdb::Cache> cache;
  std::shared_ptr<rocksdb::WriteBufferManager> write_buffers;
  std::shared_ptr<rocksdb::Statistics> statistics = rocksdb::CreateDBStatistics();
  std::shared_ptr<FlushGuards> flush_guards = std::make_shared<FlushGuards>();
  rocksdb::ColumnFamilyOptions sorted_options;  // a table's column family under KeyAccess::kPrefix
  rocksdb::ColumnFamilyOptions hashed_options;  // and under KeyAccess::kWholeKey
  std::unique_ptr<rocksdb::DB> db;
  std::mutex mu;
  std::map<int64_t, rocksdb::ColumnFamilyHandle*> families;   // guarded by mu
  std::map<int64_t, KeyAccess> access;                        // guarded by mu
  std::map<int64_t, std::unique_ptr<TableStoreImpl>> tables;  // guarded by mu
  rocksdb::ColumnFamilyHandle* default_family = nullptr;
  int64_t next_checkpoint = 1;
  bool closed = false;

  const rocksdb::ColumnFamilyOptions& OptionsFor(KeyAccess key_access) const {
    return key_access == KeyAccess::kWholeKey ? hashed_options : sorted_options;
  }

  void ReleaseHandles() {
    for (auto& [id, handle] : families) (void)db->DestroyColumnFamilyHandle(handle);
    families.clear();
    if (default_family) (void)db->DestroyColumnFamilyHandle(default_family);
    default_family = nullptr;
  }
};

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Store::~Store() { (void)Close(); }

Result<std::unique_ptr<Store>> Store::Open(StoreOptions options,
                                           const std::map<int64_t, KeyAccess>& live_tables) {
  auto impl = std::make_unique<Impl>();
  impl->db_path = fs::path(options.dir) / "kv";
  impl->checkpoint_root = fs::path(options.dir) / "kv-checkpoints";
  std::error_code ec;
  fs::create_directories(impl->checkpoint_root, ec);
  if (ec) {
    return Status::IOError("cannot create " + impl->checkpoint_root.string() + ": " + ec.message());
  }
  auto checkpoints = ListCheckpoints(impl->checkpoint_root);
  if (!checkpoints.empty()) impl->next_checkpoint = checkpoints.back().first + 1;
  if (!fs::exists(impl->db_path / "CURRENT") && !checkpoints.empty()) {
    // The store is gone: start from the newest checkpoint (its files are immutable, so links
    // do; the rest is copied).
    const fs::path& from = checkpoints.back().second;
    spdlog::warn(
        "key-value store {} is missing: restoring checkpoint {}; the changelog is "
        "replayed from its offsets",
        impl->db_path.string(), from.string());
    fs::remove_all(impl->db_path, ec);
    fs::create_directories(impl->db_path, ec);
    for (const auto& entry : fs::directory_iterator(from)) {
      const fs::path to = impl->db_path / entry.path().filename();
      if (entry.path().extension() == ".sst") {
        fs::create_hard_link(entry.path(), to, ec);
      } else {
        fs::copy_file(entry.path(), to, ec);
      }
      if (ec) return Status::IOError("restoring checkpoint " + from.string() + ": " + ec.message());
    }
  }

  impl->cache = rocksdb::NewLRUCache(static_cast<size_t>(options.block_cache_bytes));
  // Memtables are charged to the block cache, so the two stay within one budget.
  impl->write_buffers = std::make_shared<rocksdb::WriteBufferManager>(
      static_cast<size_t>(options.write_buffer_bytes), impl->cache);
  rocksdb::BlockBasedTableOptions table_options;
  table_options.block_cache = impl->cache;
  table_options.cache_index_and_filter_blocks = true;
  table_options.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  rocksdb::ColumnFamilyOptions& sorted = impl->sorted_options;
  sorted.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table_options));
  sorted.write_buffer_size =
      static_cast<size_t>(std::max<int64_t>(options.write_buffer_bytes / 4, int64_t{4} << 20));
  sorted.compression = rocksdb::kLZ4Compression;
  sorted.bottommost_compression = rocksdb::kZSTD;
  impl->hashed_options = sorted;
  // The "prefix" of a key is the key itself (the no-op transform): the memtable hashes whole keys.
  impl->hashed_options.prefix_extractor.reset(rocksdb::NewNoopTransform());
  impl->hashed_options.memtable_factory.reset(
      rocksdb::NewHashSkipListRepFactory(kMemtableHashBuckets));

  rocksdb::DBOptions db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  db_options.write_buffer_manager = impl->write_buffers;
  // Counters only (the cache's hits and misses for metrics), no histograms or timers.
  impl->statistics->set_stats_level(rocksdb::StatsLevel::kExceptHistogramOrTimers);
  db_options.statistics = impl->statistics;
  db_options.listeners.push_back(impl->flush_guards);
  db_options.max_background_jobs = 2;
  // Hashed memtables take one writer at a time (RocksDB refuses concurrent inserts into them).
  db_options.allow_concurrent_memtable_write = false;
  db_options.info_log_level = rocksdb::WARN_LEVEL;
  db_options.keep_log_file_num = 2;
  // Memtables of every table flush together, so all are at one moment after a crash.
  db_options.atomic_flush = true;

  std::vector<std::string> names;
  rocksdb::Status listed =
      rocksdb::DB::ListColumnFamilies(db_options, impl->db_path.string(), &names);
  if (!listed.ok()) names = {rocksdb::kDefaultColumnFamilyName};
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const auto& name : names) {
    const auto id = TableIdOf(name);
    const auto live = id ? live_tables.find(*id) : live_tables.end();
    descriptors.emplace_back(
        name, impl->OptionsFor(live == live_tables.end() ? KeyAccess::kPrefix : live->second));
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  RETURN_NOT_OK(
      FromRocks(rocksdb::DB::Open(db_options, impl->db_path.string(), descriptors, &handles, &db),
                "opening " + impl->db_path.string()));
  impl->db.reset(db);
  for (size_t i = 0; i < names.size(); ++i) {
    auto id = TableIdOf(names[i]);
    if (!id) {
      impl->default_family = handles[i];
      continue;
    }
    const auto live = live_tables.find(*id);
    if (live == live_tables.end()) {
      RETURN_NOT_OK(FromRocks(impl->db->DropColumnFamily(handles[i]), "dropping " + names[i]));
      (void)impl->db->DestroyColumnFamilyHandle(handles[i]);
      continue;
    }
    impl->families[*id] = handles[i];
    impl->access[*id] = live->second;
  }
  impl->options = std::move(options);
  return std::unique_ptr<Store>(new Store(std::move(impl)));
}

Result<TableStore*> Store::OpenTable(int64_t table_id, KeyAccess access) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (auto known = impl_->access.find(table_id);
      known != impl_->access.end() && known->second != access) {
    return Status::Invalid("key-value store: table id " + std::to_string(table_id) +
                           " was opened with another key access");
  }
  if (auto it = impl_->tables.find(table_id); it != impl_->tables.end()) return it->second.get();
  auto family = impl_->families.find(table_id);
  if (family == impl_->families.end()) {
    rocksdb::ColumnFamilyHandle* handle = nullptr;
    RETURN_NOT_OK(FromRocks(impl_->db->CreateColumnFamily(impl_->OptionsFor(access),
                                                          ColumnFamilyName(table_id), &handle),
                            "creating the column family of table id " + std::to_string(table_id)));
    family = impl_->families.emplace(table_id, handle).first;
    impl_->access[table_id] = access;
  }
  auto table =
      std::make_unique<TableStoreImpl>(impl_->db.get(), family->second, impl_->flush_guards);
  TableStore* out = table.get();
  impl_->tables[table_id] = std::move(table);
  return out;
}

Status Store::DropTable(int64_t table_id) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->tables.erase(table_id);
  auto family = impl_->families.find(table_id);
  if (family == impl_->families.end()) return Status::OK();
  RETURN_NOT_OK(FromRocks(impl_->db->DropColumnFamily(family->second),
                          "dropping the rows of table id " + std::to_string(table_id)));
  (void)impl_->db->DestroyColumnFamilyHandle(family->second);
  impl_->families.erase(family);
  impl_->access.erase(table_id);
  return Status::OK();
}

Result<CheckpointInfo> Store::Checkpoint() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  CheckpointInfo info;
  // Offsets first: the checkpoint taken after holds at least these.
  for (const auto& [id, handle] : impl_->families) {
    std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(TotalOrder(), handle));
    for (it->Seek(rocksdb::Slice(kAppliedPrefix.data(), kAppliedPrefix.size())); it->Valid();
         it->Next()) {
      const rocksdb::Slice key = it->key();
      if (key.size() != kAppliedPrefix.size() + 4) break;
      int32_t bucket = 0;
      for (size_t i = kAppliedPrefix.size(); i < key.size(); ++i) {
        bucket = (bucket << 8) | static_cast<uint8_t>(key[i]);
      }
      ASSIGN_OR_RAISE(int64_t offset,
                      DecodeOffset(std::string_view(it->value().data(), it->value().size())));
      info.offsets.push_back({id, bucket, offset});
    }
    RETURN_NOT_OK(FromRocks(it->status(), "reading applied offsets"));
  }
  rocksdb::Checkpoint* raw = nullptr;
  RETURN_NOT_OK(FromRocks(rocksdb::Checkpoint::Create(impl_->db.get(), &raw), "checkpoint"));
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  const fs::path path = impl_->checkpoint_root / std::to_string(impl_->next_checkpoint++);
  std::error_code ec;
  fs::remove_all(path.string() + ".tmp", ec);
  // log_size_for_flush 0: memtables are flushed first (there is no WAL to copy instead).
  RETURN_NOT_OK(
      FromRocks(checkpoint->CreateCheckpoint(path.string(), 0), "checkpoint " + path.string()));
  info.path = path.string();
  auto all = ListCheckpoints(impl_->checkpoint_root);
  for (size_t i = 0; i + static_cast<size_t>(impl_->options.checkpoints_kept) < all.size(); ++i) {
    fs::remove_all(all[i].second, ec);
  }
  return info;
}

Store::Figures Store::figures() const {
  Figures f;
  f.block_cache_usage = static_cast<int64_t>(impl_->cache->GetUsage());
  f.block_cache_pinned = static_cast<int64_t>(impl_->cache->GetPinnedUsage());
  f.block_cache_capacity = static_cast<int64_t>(impl_->cache->GetCapacity());
  f.memtable_usage = static_cast<int64_t>(impl_->write_buffers->memory_usage());
  f.block_cache_hits =
      static_cast<int64_t>(impl_->statistics->getTickerCount(rocksdb::BLOCK_CACHE_HIT));
  f.block_cache_misses =
      static_cast<int64_t>(impl_->statistics->getTickerCount(rocksdb::BLOCK_CACHE_MISS));
  return f;
}

Status Store::Close() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->closed) return Status::OK();
  impl_->closed = true;
  impl_->tables.clear();
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  for (auto& [id, handle] : impl_->families) handles.push_back(handle);
  Status flushed;
  if (!handles.empty()) {
    flushed = FromRocks(impl_->db->Flush(rocksdb::FlushOptions(), handles), "flushing");
  }
  impl_->ReleaseHandles();
  Status closed = FromRocks(impl_->db->Close(), "closing");
  impl_->db.reset();
  return flushed.ok() ? closed : flushed;
}

std::string BucketPrefix(int32_t bucket) {
  std::string out;
  AppendBigEndian32(static_cast<uint32_t>(bucket), &out);
  return out;
}

}  // namespace oxbow::kv
