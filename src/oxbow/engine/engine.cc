#include "oxbow/engine/engine.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "oxbow/arrow/compute.h"
#include "oxbow/arrow/utf8.h"
#include "oxbow/engine/bucketing_internal.h"

namespace oxbow::engine {

namespace ipc = arrow::ipc;

namespace {

// How much a cursor reads from the log at a time.
constexpr int64_t kReadChunkBytes = int64_t{8} << 20;
constexpr uint8_t kZeroPadding[ipc::kIpcAlignment] = {};

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

ByteSpan SpanOf(const Buffer& b) { return ByteSpan(b.data(), static_cast<size_t>(b.size())); }

// The client may declare a field nullable where the table does not; nulls are checked per batch.
Status CheckClientSchema(const std::string& table, const arrow::Schema& expected,
                         const arrow::Schema& actual) {
  for (int i = 0; i < std::max(expected.num_fields(), actual.num_fields()); ++i) {
    if (i >= actual.num_fields()) {
      return Status::Invalid("schema mismatch for table " + Quote(table) + ": field " +
                             Quote(expected.field(i).name) + " (" +
                             expected.field(i).type.ToString() + ") is missing");
    }
    if (i >= expected.num_fields()) {
      return Status::Invalid("schema mismatch for table " + Quote(table) + ": unexpected field " +
                             Quote(actual.field(i).name) + "; the table has " +
                             std::to_string(expected.num_fields()) + " fields");
    }
    const auto& e = expected.field(i);
    const auto& a = actual.field(i);
    if (e.name != a.name) {
      return Status::Invalid("schema mismatch for table " + Quote(table) + ": field " +
                             std::to_string(i) + " is " + Quote(a.name) + " but the table has " +
                             Quote(e.name));
    }
    if (e.type != a.type) {
      return Status::Invalid("schema mismatch for table " + Quote(table) + ": field " +
                             Quote(e.name) + " has type " + a.type.ToString() +
                             " but the table has " + e.type.ToString());
    }
  }
  return Status::OK();
}

Status CheckNulls(const std::string& table, const arrow::Schema& expected,
                  const arrow::RecordBatch& batch) {
  for (int i = 0; i < expected.num_fields(); ++i) {
    if (!expected.field(i).nullable && batch.column(i).null_count() > 0) {
      return Status::Invalid("field " + Quote(expected.field(i).name) + " of table " +
                             Quote(table) + " is not nullable but the batch has " +
                             std::to_string(batch.column(i).null_count()) + " nulls");
    }
  }
  return Status::OK();
}

void WarnAboutDamage(const std::string& table, int32_t bucket, const log::DamagedRange& damage,
                     const char* found_by) {
  spdlog::warn(
      "table '{}' bucket {}: {} found damage in segment {} at byte {} (to byte {}): offsets "
      "[{}, {}) cannot be served ({}); the intact data around it is kept and served",
      table, bucket, found_by, damage.segment_path, damage.position, damage.end_position,
      damage.from_offset, damage.to_offset, damage.reason);
}

void WarnAboutRecovery(const std::string& table, int32_t bucket, const log::RecoveryInfo& info) {
  if (info.truncated_position >= 0) {
    spdlog::warn(
        "table '{}' bucket {}: recovery cut a torn tail of {} bytes from segment {} at byte {}: "
        "offsets from {} on were dropped ({}); no intact frame followed, so these were the "
        "last frames written and not yet durable",
        table, bucket, info.bytes_truncated, info.truncated_segment, info.truncated_position,
        info.truncated_from_offset, info.truncated_reason);
  }
  for (const auto& damage : info.damaged) WarnAboutDamage(table, bucket, damage, "recovery");
}

// The Arrow format requires `string` values to be UTF-8; a bad one makes readers (DuckDB, the
// lake's) refuse a whole file later, so it is refused here.
Status CheckUtf8(const std::string& table, const arrow::Schema& schema,
                 const arrow::RecordBatch& batch) {
  for (int i = 0; i < schema.num_fields(); ++i) {
    if (schema.field(i).type.id() != arrow::TypeId::kString) continue;
    if (Status st = arrow::ValidateUtf8(batch.column(i)); !st.ok()) {
      return st.WithContext("field " + Quote(schema.field(i).name) + " of table " + Quote(table));
    }
  }
  return Status::OK();
}

// A table in the lake holds timestamps as 64-bit microseconds (docs/lake.md): a second or
// millisecond value beyond them would be acknowledged and then stop the table's tiering.
Status CheckTimestampsFitMicros(const std::string& table, const arrow::Schema& schema,
                                const arrow::RecordBatch& batch, const std::vector<int>& columns) {
  for (int c : columns) {
    const arrow::Array& column = batch.column(c);
    const int64_t units_per_micro = 1'000'000 / arrow::UnitsPerSecond(column.type().unit());
    const int64_t max = INT64_MAX / units_per_micro;
    const int64_t min = INT64_MIN / units_per_micro;
    const int64_t* values = column.values<int64_t>();
    int64_t lowest = 0;
    int64_t highest = 0;
    for (int64_t i = 0; i < column.length(); ++i) {  // nulls too: one pass without branches
      lowest = std::min(lowest, values[i]);
      highest = std::max(highest, values[i]);
    }
    if (lowest >= min && highest <= max) continue;
    for (int64_t i = 0; i < column.length(); ++i) {
      if (column.IsValid(i) && (values[i] < min || values[i] > max)) {
        return Status::Invalid("field " + Quote(schema.field(c).name) + " of table " +
                               Quote(table) + ": row " + std::to_string(i) + " holds " +
                               std::to_string(values[i]) + " (" + column.type().ToString() +
                               "), beyond the microseconds the lake stores ([" +
                               std::to_string(min) + ", " + std::to_string(max) +
                               "]); a table with lake.enabled=false takes it");
      }
    }
  }
  return Status::OK();
}

}  // namespace

// The runtime of one table: its descriptor and one log per bucket.
class Table {
 public:
  catalog::TableDescriptor descriptor;
  std::vector<int> key_columns;
  // Lake tables only: second and millisecond timestamp columns, whose values must fit in
  // microseconds.
  std::vector<int> micros_checked_columns;
  std::vector<std::unique_ptr<log::BucketLog>> logs;
  std::atomic<uint32_t> next_sticky_bucket{0};
  // Under FlushPolicy::kEveryAppend a put is acknowledged once durable; under kInterval once
  // written (the log's flusher makes it durable within flush_interval_ms).
  bool ack_after_fsync = true;

  // Appends an encoded message (metadata padded to 8 bytes, as the log stores it).
  Result<log::AppendResult> AppendAsync(int32_t bucket, int64_t rows, const Buffer& metadata,
                                        const std::vector<std::shared_ptr<Buffer>>& body) {
    const int64_t padding = (-metadata.size()) & (ipc::kIpcAlignment - 1);
    ByteSpan meta[2] = {SpanOf(metadata), ByteSpan(kZeroPadding, static_cast<size_t>(padding))};
    std::vector<ByteSpan> body_spans;
    body_spans.reserve(body.size());
    for (const auto& piece : body) body_spans.push_back(SpanOf(*piece));
    const int64_t now = NowMs();
    log::BatchInfo info{static_cast<int32_t>(rows), now, now, 0};
    return logs[bucket]->AppendAsync(info, std::span<const ByteSpan>(meta, padding ? 2 : 1),
                                     body_spans);
  }
};

Result<std::vector<AppendedRange>> PutSession::Append(const ipc::RawMessage& message) {
  const auto& desc = table_->descriptor;
  ASSIGN_OR_RAISE(auto batch, ipc::DecodeRecordBatch(client_schema_, message));
  RETURN_NOT_OK(CheckNulls(desc.name, *desc.schema, *batch));
  RETURN_NOT_OK(CheckUtf8(desc.name, *desc.schema, *batch));
  RETURN_NOT_OK(
      CheckTimestampsFitMicros(desc.name, *desc.schema, *batch, table_->micros_checked_columns));
  if (batch->num_rows() == 0) return std::vector<AppendedRange>{};
  if (batch->num_rows() > INT32_MAX) return Status::Invalid("a batch holds at most 2^31-1 rows");

  struct Pending {
    int32_t bucket;
    int64_t rows;
    log::AppendResult result;
  };
  std::vector<Pending> pending;
  std::vector<int32_t> buckets;
  if (!table_->key_columns.empty() && desc.buckets > 1) {
    buckets = internal::ComputeBuckets(*batch, table_->key_columns, desc.buckets);
  }
  const bool one_bucket =
      buckets.empty() ||
      std::all_of(buckets.begin(), buckets.end(), [&](int32_t b) { return b == buckets[0]; });
  if (one_bucket) {
    const int32_t bucket = buckets.empty() ? sticky_bucket_ : buckets[0];
    ASSIGN_OR_RAISE(auto result, table_->AppendAsync(bucket, batch->num_rows(), *message.metadata,
                                                     {message.body}));
    pending.push_back({bucket, batch->num_rows(), result});
  } else {
    std::vector<std::vector<int32_t>> rows(static_cast<size_t>(desc.buckets));
    for (int32_t i = 0; i < static_cast<int32_t>(buckets.size()); ++i) {
      rows[buckets[i]].push_back(i);
    }
    for (int32_t b = 0; b < desc.buckets; ++b) {
      if (rows[b].empty()) continue;
      ASSIGN_OR_RAISE(auto part, arrow::TakeRows(*batch, rows[b]));
      ASSIGN_OR_RAISE(auto encoded, ipc::EncodeRecordBatch(*part));
      ASSIGN_OR_RAISE(auto result,
                      table_->AppendAsync(b, part->num_rows(), *encoded.metadata, encoded.body));
      pending.push_back({b, part->num_rows(), result});
    }
  }
  std::vector<AppendedRange> out;
  for (const auto& p : pending) {
    if (table_->ack_after_fsync) {
      RETURN_NOT_OK(table_->logs[p.bucket]->WaitDurable(p.result.next_offset));
    }
    out.push_back({p.bucket, p.result.base_offset, p.rows});
  }
  return out;
}

Result<std::optional<ReadBatch>> ReadCursor::Next(std::chrono::steady_clock::time_point deadline) {
  log::BucketLog& log = *table_->logs[request_.bucket];
  while (!done_) {
    if (pending_index_ < pending_.size()) {
      log::LogBatch& b = pending_[pending_index_++];
      if (end_ && b.base_offset >= *end_) break;
      ReadBatch out;
      out.base_offset = b.base_offset;
      out.next_offset = b.next_offset();
      out.append_time_ms = b.append_time_ms;
      if (projector_) {
        ASSIGN_OR_RAISE(out.message, projector_->Project(*b.metadata, b.body));
      } else {
        out.message.metadata = b.metadata;
        out.message.body = {b.body};
        out.message.body_length = b.body->size();
      }
      // Only the body bytes sent are verified, right before they go out: they are then still
      // in cache for the copy into the socket.
      for (const auto& piece : out.message.body) {
        RETURN_NOT_OK(b.VerifyBodyPiece(*piece).WithContext(BucketName()));
      }
      position_ = out.next_offset;
      return std::optional<ReadBatch>(std::move(out));
    }
    pending_.clear();
    pending_index_ = 0;
    if (end_ && position_ >= *end_) break;
    if (position_ >= log.durable_offset()) {
      if (!request_.follow) break;
      ASSIGN_OR_RAISE(int64_t durable, log.WaitForData(position_, deadline));
      if (durable <= position_) return std::optional<ReadBatch>();
    }
    auto read = log.Read(position_, kReadChunkBytes, {.verify_body = false});
    if (!read.ok()) return read.status().WithContext(BucketName());
    pending_ = std::move(read).ValueOrDie();
    if (pending_.empty() && !request_.follow) break;
  }
  done_ = true;
  return std::optional<ReadBatch>();
}

std::string ReadCursor::BucketName() const {
  return "table '" + table_->descriptor.name + "' bucket " + std::to_string(request_.bucket);
}

Result<std::unique_ptr<Engine>> Engine::Open(EngineOptions options) {
  if (!options.fs) options.fs = PosixFileSystem::Default();
  std::unique_ptr<Engine> engine(new Engine(std::move(options)));
  RETURN_NOT_OK(engine->options_.fs->CreateDirs(engine->options_.data_dir));
  RETURN_NOT_OK(engine->LockDataDir());
  ASSIGN_OR_RAISE(engine->catalog_,
                  catalog::Catalog::Open(engine->options_.fs, engine->options_.data_dir));
  for (const auto& descriptor : engine->catalog_->List()) {
    ASSIGN_OR_RAISE(auto table, engine->OpenTable(descriptor));
    engine->tables_[descriptor.name] = std::move(table);
  }
  RETURN_NOT_OK(engine->RemoveOrphanTableDirs());
  if (engine->options_.retention_check_ms > 0) {
    engine->retention_thread_ = std::thread([e = engine.get()] { e->RetentionLoop(); });
  }
  if (engine->options_.scrub_interval_ms > 0 && engine->options_.scrub_bytes_per_second > 0) {
    engine->scrub_thread_ = std::thread([e = engine.get()] { e->ScrubLoop(); });
  }
  return engine;
}

Engine::~Engine() {
  (void)Close();
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status Engine::LockDataDir() {
  // Locks are not part of the FileSystem seam: they guard against other processes, which no
  // test fakes.
  const std::string path = JoinPath(options_.data_dir, "LOCK");
  lock_fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) return ErrnoToStatus(errno, "open", path);
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return Status::IOError("data dir '" + options_.data_dir + "' is in use by another oxbowd (" +
                             path + " is locked)");
    }
    return ErrnoToStatus(errno, "flock", path);
  }
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
    std::error_code ec;
    std::filesystem::remove_all(JoinPath(root, entry), ec);
    if (ec)
      return Status::IOError("cannot remove '" + JoinPath(root, entry) + "': " + ec.message());
  }
  return Status::OK();
}

Result<std::shared_ptr<Table>> Engine::OpenTable(const catalog::TableDescriptor& descriptor) {
  auto table = std::make_shared<Table>();
  table->descriptor = descriptor;
  table->key_columns = descriptor.BucketKeyIndices();
  table->ack_after_fsync = options_.log.flush_policy == log::FlushPolicy::kEveryAppend;
  log::LogOptions log_options = options_.log;
  if (descriptor.LakeEnabled()) {
    // Nothing is deleted until the lake has said how far it got (SetRetentionFloor).
    log_options.retention_floor = 0;
    for (int i = 0; i < descriptor.schema->num_fields(); ++i) {
      const arrow::DataType& type = descriptor.schema->field(i).type;
      if (type.id() == arrow::TypeId::kTimestamp &&
          arrow::UnitsPerSecond(type.unit()) < arrow::UnitsPerSecond(arrow::TimeUnit::kMicro)) {
        table->micros_checked_columns.push_back(i);
      }
    }
  }
  for (int32_t b = 0; b < descriptor.buckets; ++b) {
    ASSIGN_OR_RAISE(
        auto log,
        log::BucketLog::Open(
            options_.fs, JoinPath(TableDir(descriptor.table_id), std::to_string(b)), log_options));
    WarnAboutRecovery(descriptor.name, b, log->recovery_info());
    table->logs.push_back(std::move(log));
  }
  return table;
}

Result<std::shared_ptr<Table>> Engine::GetTable(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tables_.find(name);
  if (it == tables_.end()) return Status::NotFound("table " + Quote(name) + " does not exist");
  return it->second;
}

Result<catalog::TableDescriptor> Engine::CreateTable(const catalog::CreateTableRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = tables_.find(request.table.name); it != tables_.end()) {
    if (request.if_not_exists) return it->second->descriptor;
    return Status::AlreadyExists("table " + Quote(request.table.name) + " already exists");
  }
  ASSIGN_OR_RAISE(auto descriptor, catalog_->Create(request.table, request.if_not_exists));
  auto table = OpenTable(descriptor);
  if (!table.ok()) {
    (void)catalog_->Drop(descriptor.name);
    return table.status();
  }
  tables_[descriptor.name] = std::move(table).ValueOrDie();
  return descriptor;
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
  for (auto& log : table->logs) (void)log->Close();
  std::error_code ec;
  std::filesystem::remove_all(TableDir(table->descriptor.table_id), ec);
  if (ec) {
    return Status::IOError("table '" + name +
                           "' was dropped but its files remain: " + ec.message());
  }
  return Status::OK();
}

std::vector<catalog::TableDescriptor> Engine::ListTables() const { return catalog_->List(); }

Result<TableStatus> Engine::DescribeTable(const std::string& name) const {
  ASSIGN_OR_RAISE(auto table, GetTable(name));
  TableStatus status;
  status.table = table->descriptor;
  for (int32_t b = 0; b < static_cast<int32_t>(table->logs.size()); ++b) {
    const log::BucketLog& log = *table->logs[b];
    status.buckets.push_back({b, log.earliest_offset(), log.durable_offset(), log.damaged_ranges(),
                              log.recovery_info()});
  }
  return status;
}

Result<std::unique_ptr<PutSession>> Engine::StartPut(const std::string& name,
                                                     const arrow::SchemaPtr& client_schema) {
  ASSIGN_OR_RAISE(auto table, GetTable(name));
  RETURN_NOT_OK(CheckClientSchema(name, *table->descriptor.schema, *client_schema));
  const auto bucket = static_cast<int32_t>(table->next_sticky_bucket.fetch_add(1) %
                                           static_cast<uint32_t>(table->descriptor.buckets));
  return std::unique_ptr<PutSession>(new PutSession(table, client_schema, bucket));
}

Result<std::unique_ptr<ReadCursor>> Engine::OpenRead(const ReadRequest& request) {
  ASSIGN_OR_RAISE(auto table, GetTable(request.table));
  const auto& desc = table->descriptor;
  if (request.bucket >= desc.buckets) {
    return Status::OutOfRange("bucket " + std::to_string(request.bucket) + " does not exist: '" +
                              desc.name + "' has " + std::to_string(desc.buckets) + " buckets (0-" +
                              std::to_string(desc.buckets - 1) + ")");
  }
  std::unique_ptr<ReadCursor> cursor(new ReadCursor());
  cursor->table_ = table;
  cursor->request_ = request;
  cursor->schema_ = desc.schema;
  if (request.columns) {
    std::vector<int> indices;
    for (const auto& name : *request.columns) {
      int i = desc.schema->GetFieldIndex(name);
      if (i < 0) {
        std::string known;
        for (const auto& f : desc.schema->fields()) known += (known.empty() ? "" : ", ") + f.name;
        return Status::Invalid("unknown column " + Quote(name) + " in table " + Quote(desc.name) +
                               " (columns: " + known + ")");
      }
      indices.push_back(i);
    }
    ASSIGN_OR_RAISE(auto projector, ipc::RecordBatchProjector::Make(desc.schema, indices));
    cursor->schema_ = projector.projected_schema();
    cursor->projector_ = std::move(projector);
  }
  const log::BucketLog& log = *table->logs[request.bucket];
  const int64_t earliest = log.earliest_offset();
  const int64_t durable = log.durable_offset();
  switch (request.from.kind) {
    case StartPosition::Kind::kEarliest: cursor->position_ = earliest; break;
    case StartPosition::Kind::kLatest: cursor->position_ = durable; break;
    case StartPosition::Kind::kOffset:
      if (request.from.offset < earliest || request.from.offset > durable) {
        return Status::OutOfRange("offset " + std::to_string(request.from.offset) +
                                  " is out of range for bucket " + std::to_string(request.bucket) +
                                  " of '" + desc.name + "': valid offsets are [" +
                                  std::to_string(earliest) + ", " + std::to_string(durable) + "]");
      }
      cursor->position_ = request.from.offset;
      break;
  }
  if (request.to) {
    cursor->end_ = *request.to;
  } else if (!request.follow) {
    cursor->end_ = durable;
  }
  return cursor;
}

void Engine::RetentionLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!closing_cv_.wait_for(lock, std::chrono::milliseconds(options_.retention_check_ms),
                               [this] { return closing_; })) {
    std::vector<std::shared_ptr<Table>> tables;
    for (const auto& [name, table] : tables_) tables.push_back(table);
    lock.unlock();
    for (const auto& table : tables) {
      for (const auto& log : table->logs) {
        if (auto deleted = log->EnforceRetention(); !deleted.ok()) {
          spdlog::warn("retention of table '{}': {}", table->descriptor.name,
                       deleted.status().message());
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
      for (int32_t b = 0; b < static_cast<int32_t>(table->logs.size()); ++b) {
        log::BucketLog& log = *table->logs[b];
        for (int64_t base : log.SealedSegments()) {
          const Key key{table->descriptor.table_id, b, base};
          auto known = verified.find(key);
          if (known != verified.end() &&
              std::chrono::steady_clock::now() - known->second < interval) {
            live[key] = known->second;
            continue;
          }
          auto scrubbed = log.ScrubSealedSegment(base);
          live[key] = std::chrono::steady_clock::now();
          if (!scrubbed.ok()) {
            spdlog::warn("table '{}' bucket {}: scrubbing segment {}: {}", table->descriptor.name,
                         b, base, scrubbed.status().message());
            continue;
          }
          for (const auto& damage : scrubbed->damaged) {
            WarnAboutDamage(table->descriptor.name, b, damage, "the scrubber");
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
  if (bucket < 0 || bucket >= static_cast<int32_t>(table->logs.size())) {
    return Status::OutOfRange("bucket " + std::to_string(bucket) + " of '" + name +
                              "' does not exist");
  }
  table->logs[bucket]->SetRetentionFloor(offset);
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
  if (retention_thread_.joinable()) retention_thread_.join();
  if (scrub_thread_.joinable()) scrub_thread_.join();
  Status first;
  for (auto& [name, table] : tables) {
    for (auto& log : table->logs) {
      Status st = log->Close();
      if (first.ok() && !st.ok()) first = st.WithContext("closing table '" + name + "'");
    }
  }
  return first;
}

}  // namespace oxbow::engine
