// Engine: the tables of one data dir — catalog, bucket logs, the put path (schema checks,
// bucketing, durable appends) and the read path (offset ranges, projection, tailing).
// It knows nothing of gRPC; the Flight service in oxbow/server translates to and from it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "oxbow/arrow/ipc.h"
#include "oxbow/catalog/catalog.h"
#include "oxbow/engine/requests.h"
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
};

struct BucketStatus {
  int32_t bucket = 0;
  int64_t earliest_offset = 0;
  int64_t next_offset = 0;
  // Damage known in the bucket's log: offsets that cannot be served.
  std::vector<log::DamagedRange> damaged;
  // What opening the log found (a torn tail it cut, damage it kept).
  log::RecoveryInfo recovery;
};

struct TableStatus {
  catalog::TableDescriptor table;
  std::vector<BucketStatus> buckets;
};

// Where one appended piece of a batch went.
struct AppendedRange {
  int32_t bucket = 0;
  int64_t base_offset = 0;
  int64_t rows = 0;
};

class Table;

// One DoPut stream: the client's schema has been checked against the table.
class PutSession {
 public:
  // Appends one RecordBatch message; returns once every piece is durable. A batch that fails
  // validation writes nothing.
  Result<std::vector<AppendedRange>> Append(const arrow::ipc::RawMessage& message);

 private:
  friend class Engine;
  PutSession(std::shared_ptr<Table> table, arrow::SchemaPtr client_schema, int32_t bucket)
      : table_(std::move(table)),
        client_schema_(std::move(client_schema)),
        sticky_bucket_(bucket) {}
  std::shared_ptr<Table> table_;
  arrow::SchemaPtr client_schema_;
  int32_t sticky_bucket_;
};

// One batch of a read, ready to send: the (projected) RecordBatch message and its offsets.
struct ReadBatch {
  arrow::ipc::EncodedMessage message;
  int64_t base_offset = 0;
  int64_t next_offset = 0;
  int64_t append_time_ms = 0;  // when the server appended the batch
};

// One DoGet stream over a bucket.
class ReadCursor {
 public:
  const arrow::SchemaPtr& schema() const { return schema_; }
  int32_t bucket() const { return request_.bucket; }
  // The next batch; std::nullopt when the range is done, or, when following, when `deadline`
  // passes without new data (call again to keep waiting).
  Result<std::optional<ReadBatch>> Next(std::chrono::steady_clock::time_point deadline);
  // True once the requested range has been fully delivered (never when following).
  bool done() const { return done_; }

 private:
  friend class Engine;
  ReadCursor() = default;
  // "table 'ns.t' bucket b", the context of read errors.
  std::string BucketName() const;
  std::shared_ptr<Table> table_;
  ReadRequest request_;
  arrow::SchemaPtr schema_;
  std::optional<arrow::ipc::RecordBatchProjector> projector_;
  int64_t position_ = 0;
  std::optional<int64_t> end_;  // stop before the first batch at or past this offset
  std::vector<log::LogBatch> pending_;
  size_t pending_index_ = 0;
  bool done_ = false;
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> Open(EngineOptions options);
  ~Engine();

  Result<catalog::TableDescriptor> CreateTable(const catalog::CreateTableRequest& request);
  Status DropTable(const std::string& name);
  std::vector<catalog::TableDescriptor> ListTables() const;
  Result<TableStatus> DescribeTable(const std::string& name) const;

  // Checks the client's schema against the table: InvalidArgument naming the field otherwise.
  Result<std::unique_ptr<PutSession>> StartPut(const std::string& table,
                                               const arrow::SchemaPtr& client_schema);
  Result<std::unique_ptr<ReadCursor>> OpenRead(const ReadRequest& request);

  // Retention of `bucket` never deletes offsets >= `offset` (e.g. data not yet in the lake).
  Status SetRetentionFloor(const std::string& table, int32_t bucket, int64_t offset);

  // Flushes and closes every log. Idempotent.
  Status Close();

 private:
  explicit Engine(EngineOptions options) : options_(std::move(options)) {}
  Result<std::shared_ptr<Table>> GetTable(const std::string& name) const;
  Result<std::shared_ptr<Table>> OpenTable(const catalog::TableDescriptor& descriptor);
  std::string TableDir(int64_t table_id) const;
  // Removes table directories that the catalog no longer names (an interrupted drop).
  Status RemoveOrphanTableDirs();
  // Takes <data_dir>/LOCK, so that two servers never share a data dir.
  Status LockDataDir();
  // Runs EnforceRetention on every log every retention_check_ms until Close().
  void RetentionLoop();
  // Verifies sealed segments, one at a time within scrub_bytes_per_second, each once per
  // scrub_interval_ms, until Close(); damage found is logged and kept in each log.
  void ScrubLoop();
  std::vector<std::shared_ptr<Table>> Tables() const;

  EngineOptions options_;
  int lock_fd_ = -1;  // flock()ed <data_dir>/LOCK: one engine per data dir
  std::unique_ptr<catalog::Catalog> catalog_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Table>> tables_;
  bool closing_ = false;  // guarded by mu_
  std::condition_variable closing_cv_;
  std::thread retention_thread_;
  std::thread scrub_thread_;
};

}  // namespace oxbow::engine
