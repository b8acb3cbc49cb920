// The raw-RocksDB peer of bench/pk_bench.py: the same upserts and batched point lookups that
// oxbowd's primary-key tables serve, done in-process on librocksdb with the options of
// src/oxbow/kv/store.cc (shared LRU block cache, memtables charged to it by a
// WriteBufferManager, LZ4 then ZSTD at the bottom, 10-bit bloom filters, index and filter
// blocks in the cache).
//
//   kv_bench --dir D --key-bytes 16 --value-bytes 100 --rows N --keyspace K --batch 1000
//            --writers 1 --mode put|read-put|read-put-sync --lookups L --lookup-batches 1,100
//            [--block-cache-bytes B --write-buffer-bytes W]
//
// Modes: put = WriteBatch of puts with disableWAL (what the issue asks for); read-put = also a
// MultiGet of the batch's keys first (the old rows an upsert with -U needs); read-put-sync =
// read-put with the WAL on and an fsync per batch (the durability oxbowd gets from its changelog).
// Row i writes key key_of(splitmix64(i) % keyspace); pk_bench.py sends oxbowd the same keys.
// Prints one JSON line per phase.
#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/memtablerep.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/write_buffer_manager.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <sstream>
#include <thread>

#include "bench_util.h"
#include "pk_data.h"

namespace oxbow::bench {
namespace {

Status FromRocks(const rocksdb::Status& st) {
  return st.ok() ? Status::OK() : Status::IOError("rocksdb: " + st.ToString());
}

struct Options {
  std::string dir;
  int64_t key_bytes, value_bytes, rows, keyspace, batch, writers, lookups;
  int64_t block_cache_bytes, write_buffer_bytes;
  std::string mode;
  std::vector<int64_t> lookup_batches;
};

Result<std::unique_ptr<rocksdb::DB>> OpenDb(const Options& o) {
  // As src/oxbow/kv/store.cc configures its store.
  auto cache = rocksdb::NewLRUCache(static_cast<size_t>(o.block_cache_bytes));
  rocksdb::Options options;
  options.create_if_missing = true;
  options.write_buffer_manager = std::make_shared<rocksdb::WriteBufferManager>(
      static_cast<size_t>(o.write_buffer_bytes), cache);
  rocksdb::BlockBasedTableOptions table_options;
  table_options.block_cache = cache;
  table_options.cache_index_and_filter_blocks = true;
  table_options.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table_options));
  options.write_buffer_size =
      static_cast<size_t>(std::max<int64_t>(o.write_buffer_bytes / 4, int64_t{4} << 20));
  options.compression = rocksdb::kLZ4Compression;
  options.bottommost_compression = rocksdb::kZSTD;
  options.max_background_jobs = 2;
  options.info_log_level = rocksdb::WARN_LEVEL;
  options.keep_log_file_num = 2;
  options.atomic_flush = true;
  // A table found by whole key only (the bucket key is the primary key): hashed memtables.
  options.prefix_extractor.reset(rocksdb::NewNoopTransform());
  options.memtable_factory.reset(rocksdb::NewHashSkipListRepFactory(32768));
  options.allow_concurrent_memtable_write = false;
  rocksdb::DB* db = nullptr;
  RETURN_NOT_OK(FromRocks(rocksdb::DB::Open(options, o.dir, &db)));
  return std::unique_ptr<rocksdb::DB>(db);
}

// The values of `keys` found, copied out (as an upsert's old rows and a lookup's answer must
// be), in one MultiGet.
Result<std::vector<std::string>> MultiGetCopies(rocksdb::DB* db,
                                                const std::vector<std::string>& keys) {
  std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
  std::vector<rocksdb::PinnableSlice> values(keys.size());
  std::vector<rocksdb::Status> statuses(keys.size());
  db->MultiGet(rocksdb::ReadOptions(), db->DefaultColumnFamily(), keys.size(), slices.data(),
               values.data(), statuses.data());
  std::vector<std::string> found;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (statuses[k].IsNotFound()) continue;
    RETURN_NOT_OK(FromRocks(statuses[k]));
    found.push_back(values[k].ToString());
  }
  return found;
}

// Writes batches writer, writer + writers, ... of the rows.
Status WriteRows(rocksdb::DB* db, const Options& o, const std::string& pool, int64_t writer) {
  const bool read = o.mode != "put";
  rocksdb::WriteOptions write_options;
  write_options.disableWAL = o.mode != "read-put-sync";
  write_options.sync = o.mode == "read-put-sync";
  std::vector<std::string> keys;
  for (int64_t first = writer * o.batch; first < o.rows; first += o.writers * o.batch) {
    const int64_t end = std::min(o.rows, first + o.batch);
    keys.clear();
    for (int64_t i = first; i < end; ++i) {
      keys.push_back(
          KeyOf(UpsertKeyIndex(static_cast<uint64_t>(i), static_cast<uint64_t>(o.keyspace)),
                o.key_bytes));
    }
    // The old rows, copied out as an upsert that emits them must; then dropped.
    if (read) RETURN_NOT_OK(MultiGetCopies(db, keys).status());
    rocksdb::WriteBatch batch;
    for (int64_t i = first; i < end; ++i) {
      const size_t at =
          static_cast<size_t>(i) * 7919 % (pool.size() - static_cast<size_t>(o.value_bytes));
      RETURN_NOT_OK(FromRocks(batch.Put(keys[static_cast<size_t>(i - first)],
                                        rocksdb::Slice(pool.data() + at, o.value_bytes))));
    }
    RETURN_NOT_OK(FromRocks(db->Write(write_options, &batch)));
  }
  return Status::OK();
}

// Waits (up to 20 s) until no flush or compaction is pending or running, so lookups meet a
// settled tree: the stronger peer, as oxbowd's lookups may still share the disk with them.
void WaitForBackgroundWork(rocksdb::DB* db) {
  const double deadline = NowSeconds() + 20;
  for (;;) {
    uint64_t busy = 0;
    for (const char* property :
         {"rocksdb.mem-table-flush-pending", "rocksdb.compaction-pending",
          "rocksdb.num-running-flushes", "rocksdb.num-running-compactions"}) {
      uint64_t value = 0;
      if (db->GetIntProperty(property, &value)) busy += value;
    }
    if (busy == 0 || NowSeconds() > deadline) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// `o.lookups` keys in MultiGets of `batch` keys; returns the keys found.
Result<int64_t> LookUp(rocksdb::DB* db, const Options& o, int64_t batch) {
  int64_t found = 0;
  std::vector<std::string> keys;
  for (int64_t first = 0; first < o.lookups; first += batch) {
    const int64_t end = std::min(o.lookups, first + batch);
    keys.clear();
    for (int64_t j = first; j < end; ++j) {
      keys.push_back(
          KeyOf(LookupKeyIndex(static_cast<uint64_t>(j), static_cast<uint64_t>(o.keyspace)),
                o.key_bytes));
    }
    ASSIGN_OR_RAISE(auto rows, MultiGetCopies(db, keys));
    found += static_cast<int64_t>(rows.size());
  }
  return found;
}

Status Run(int argc, char** argv) {
  ASSIGN_OR_RAISE(Flags flags, Flags::Parse(argc, argv, 1));
  Options o;
  o.dir = flags.Get("dir", "");
  if (o.dir.empty()) return Status::Invalid("--dir is required");
  o.key_bytes = flags.GetInt("key-bytes", 16);
  o.value_bytes = flags.GetInt("value-bytes", 100);
  o.rows = flags.GetInt("rows", 100000);
  o.keyspace = flags.GetInt("keyspace", o.rows / 2);
  o.batch = flags.GetInt("batch", 1000);
  o.writers = flags.GetInt("writers", 1);
  o.lookups = flags.GetInt("lookups", 0);
  o.block_cache_bytes = flags.GetInt("block-cache-bytes", int64_t{256} << 20);
  o.write_buffer_bytes = flags.GetInt("write-buffer-bytes", int64_t{128} << 20);
  o.mode = flags.Get("mode", "put");
  if (o.mode != "put" && o.mode != "read-put" && o.mode != "read-put-sync") {
    return Status::Invalid("--mode is put, read-put or read-put-sync, not " + o.mode);
  }
  std::stringstream batches(flags.Get("lookup-batches", "1,100,1000"));
  for (std::string b; std::getline(batches, b, ',');) o.lookup_batches.push_back(std::stoll(b));
  if (o.key_bytes < 16 || o.value_bytes < 1 || o.rows < 1 || o.keyspace < 1 || o.batch < 1 ||
      o.writers < 1) {
    return Status::Invalid("--key-bytes >= 16 and positive sizes, please");
  }

  // Printable random bytes, so LZ4 finds as little to compress as in pk_bench.py's values.
  std::string pool(size_t{1} << 20, ' ');
  std::mt19937_64 random(42);
  for (char& c : pool) c = static_cast<char>('!' + random() % 94);

  ASSIGN_OR_RAISE(auto db, OpenDb(o));
  std::vector<Status> results(static_cast<size_t>(o.writers));
  const double start = NowSeconds();
  {
    std::vector<std::jthread> threads;
    for (int64_t w = 0; w < o.writers; ++w) {
      threads.emplace_back(
          [&, w] { results[static_cast<size_t>(w)] = WriteRows(db.get(), o, pool, w); });
    }
  }
  const double seconds = NowSeconds() - start;
  for (const auto& st : results) RETURN_NOT_OK(st);
  JsonLine()
      .Add("phase", "upsert")
      .Add("mode", o.mode)
      .Add("writers", o.writers)
      .Add("rows", o.rows)
      .Add("seconds", seconds)
      .Add("rows_per_second", static_cast<double>(o.rows) / seconds)
      .Print();
  if (o.lookups > 0) WaitForBackgroundWork(db.get());
  for (int64_t batch : o.lookup_batches) {
    if (o.lookups == 0) break;
    const double t0 = NowSeconds();
    ASSIGN_OR_RAISE(int64_t found, LookUp(db.get(), o, batch));
    const double t = NowSeconds() - t0;
    JsonLine()
        .Add("phase", "lookup")
        .Add("batch", batch)
        .Add("keys", o.lookups)
        .Add("found", found)
        .Add("seconds", t)
        .Add("keys_per_second", static_cast<double>(o.lookups) / t)
        .Print();
  }
  return FromRocks(db->Close());
}

}  // namespace
}  // namespace oxbow::bench

int main(int argc, char** argv) {
  oxbow::Status status = oxbow::bench::Run(argc, argv);
  return status.ok() ? 0 : oxbow::bench::Fail("kv_bench", status);
}
