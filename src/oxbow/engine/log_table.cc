#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <shared_mutex>

#include "oxbow/arrow/compute.h"
#include "oxbow/arrow/utf8.h"
#include "oxbow/engine/bucketing_internal.h"
#include "oxbow/engine/log_table_internal.h"

namespace oxbow::engine::internal {

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

// Whether batches of `a` are laid out as batches of `b`: the same field ids with the same types
// in the same order (names, nullability and docs do not change the stored bytes).
bool SameColumns(const catalog::SchemaVersion& a, const catalog::SchemaVersion& b) {
  if (a.field_ids != b.field_ids || a.child_ids != b.child_ids) return false;
  for (int i = 0; i < a.schema->num_fields(); ++i) {
    if (a.schema->field(i).type != b.schema->field(i).type) return false;
  }
  return true;
}

// Collects the ids of `type`'s nested fields that are required (with ids, as TypeWithIds gives).
void RequiredNestedIds(const arrow::DataType& type, std::set<int32_t>* out) {
  for (const arrow::Field& f : type.children()) {
    if (auto id = f.FieldId(); id && !f.nullable) out->insert(*id);
    RequiredNestedIds(f.type, out);
  }
}

// `type` (with ids) with every nested field not in `required` nullable (ids removed).
arrow::DataType RelaxNested(const arrow::DataType& type, const std::set<int32_t>& required) {
  if (!type.is_nested()) return type;
  std::vector<arrow::Field> fields;
  for (const arrow::Field& f : type.children()) {
    arrow::Field out = f;
    if (auto id = f.FieldId()) out.nullable = f.nullable && required.count(*id) > 0;
    out.metadata.clear();
    out.type = RelaxNested(f.type, required);
    fields.push_back(std::move(out));
  }
  return arrow::DataType::Nested(type.id(), std::move(fields), type.list_size());
}

// The schema of a read in the earlier version `target`: its columns, names, types and docs; a
// column (or nested field) is nullable unless every version of the table that has its column has
// it and requires it (a batch written after it was dropped or made optional may have no value).
arrow::SchemaPtr EarlierVersionReadSchema(const catalog::TableDescriptor& desc,
                                          const catalog::SchemaVersion& target) {
  std::vector<catalog::SchemaVersion> versions = desc.previous_schemas;
  versions.push_back(desc.CurrentSchema());
  std::vector<arrow::Field> fields = target.schema->fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    std::set<int32_t> required;
    RequiredNestedIds(target.TypeWithIds(static_cast<int>(i)), &required);
    for (const auto& v : versions) {
      auto at = std::find(v.field_ids.begin(), v.field_ids.end(), target.field_ids[i]);
      if (at == v.field_ids.end()) {
        fields[i].nullable = true;
        continue;
      }
      const int column = static_cast<int>(at - v.field_ids.begin());
      if (v.schema->field(column).nullable) fields[i].nullable = true;
      std::set<int32_t> in_version;
      RequiredNestedIds(v.TypeWithIds(column), &in_version);
      std::erase_if(required, [&](int32_t id) { return in_version.count(id) == 0; });
    }
    if (fields[i].type.is_nested()) {
      fields[i].type = RelaxNested(target.TypeWithIds(static_cast<int>(i)), required);
    }
  }
  return std::make_shared<const arrow::Schema>(std::move(fields), target.schema->metadata());
}

// `version`'s schema with its nested fields' ids (arrow::Cast matches struct fields by them).
arrow::SchemaPtr SchemaWithIds(const catalog::SchemaVersion& version) {
  std::vector<arrow::Field> fields = version.schema->fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    fields[i].type = version.TypeWithIds(static_cast<int>(i));
  }
  return std::make_shared<const arrow::Schema>(std::move(fields), version.schema->metadata());
}

// Turns a stored batch written with one schema version into output columns of another (the
// current one, or the one a read asks for): columns and nested struct fields matched by field
// id (so a renamed one comes under the output's name), cast to the output's type (widened, or
// narrowed back with a check), those the batch's version lacks null, the others gone. Only the
// columns sent are decoded.
class VersionConverter {
 public:
  // `columns`: the output columns, indices into `to`'s schema; `out_schema` their schema.
  static Result<std::shared_ptr<const VersionConverter>> Make(const catalog::SchemaVersion& from,
                                                              const catalog::SchemaVersion& to,
                                                              const std::vector<int>& columns,
                                                              arrow::SchemaPtr out_schema) {
    auto c = std::make_shared<VersionConverter>();
    std::vector<int> read;
    for (size_t k = 0; k < columns.size(); ++k) {
      const int column = columns[k];
      const catalog::ChildIds none;
      c->cast_to_.push_back(catalog::WithChildIds(out_schema->field(static_cast<int>(k)).type,
                                                  static_cast<size_t>(column) < to.child_ids.size()
                                                      ? to.child_ids[static_cast<size_t>(column)]
                                                      : none));
      const int32_t id = to.field_ids[static_cast<size_t>(column)];
      auto found = std::find(from.field_ids.begin(), from.field_ids.end(), id);
      if (found == from.field_ids.end()) {
        c->source_of_.push_back(-1);
        continue;
      }
      c->source_of_.push_back(static_cast<int>(read.size()));
      read.push_back(static_cast<int>(found - from.field_ids.begin()));
    }
    c->out_schema_ = std::move(out_schema);
    if (!read.empty()) {
      ASSIGN_OR_RAISE(auto projector, ipc::RecordBatchProjector::Make(SchemaWithIds(from), read));
      c->projector_ = std::move(projector);
    }
    return std::shared_ptr<const VersionConverter>(std::move(c));
  }

  // The batch in the output schema; the body bytes read are verified first.
  Result<arrow::RecordBatchPtr> Convert(const log::LogBatch& b) const {
    arrow::RecordBatchPtr source;
    if (projector_) {
      ASSIGN_OR_RAISE(auto projected, projector_->Project(*b.metadata, b.body));
      for (const auto& piece : projected.body) RETURN_NOT_OK(b.VerifyBodyPiece(*piece));
      ASSIGN_OR_RAISE(auto body, projected.BodyAsBuffer());
      ASSIGN_OR_RAISE(source, ipc::DecodeRecordBatch(projector_->projected_schema(),
                                                     *projected.metadata, body));
    }
    std::vector<arrow::Array> columns;
    for (size_t i = 0; i < source_of_.size(); ++i) {
      const arrow::DataType& type = cast_to_[i];
      if (source_of_[i] < 0) {
        ASSIGN_OR_RAISE(auto nulls, arrow::MakeNullArray(
                                        out_schema_->field(static_cast<int>(i)).type, b.row_count));
        columns.push_back(std::move(nulls));
      } else {
        // By nested field id, then to the output type without the ids.
        ASSIGN_OR_RAISE(auto by_id, arrow::Cast(source->column(source_of_[i]), type));
        ASSIGN_OR_RAISE(auto cast,
                        arrow::Cast(by_id, out_schema_->field(static_cast<int>(i)).type));
        columns.push_back(std::move(cast));
      }
    }
    return arrow::RecordBatch::Make(out_schema_, b.row_count, std::move(columns));
  }

 private:
  arrow::SchemaPtr out_schema_;
  std::vector<int> source_of_;            // per output column: its column in the projection, or -1
  std::vector<arrow::DataType> cast_to_;  // per output column: its type with nested field ids
  std::optional<ipc::RecordBatchProjector> projector_;
};

// The log table of one descriptor: one log per bucket.
class LogTableImpl : public LogTable, public std::enable_shared_from_this<LogTableImpl> {
 public:
  LogTableImpl(catalog::TableDescriptor descriptor, LogTableOptions options)
      : descriptor_(std::move(descriptor)),
        options_(std::move(options)),
        key_columns_(descriptor_.BucketKeyIndices()) {}

  Status OpenLogs() {
    for (int32_t b = 0; b < descriptor_.buckets; ++b) {
      log::LogOptions log_options = options_.log;
      if (log_options.cold.fs) {
        log_options.cold.dir = JoinPath(log_options.cold.dir, std::to_string(b));
      }
      ASSIGN_OR_RAISE(auto log,
                      log::BucketLog::Open(options_.fs, JoinPath(options_.dir, std::to_string(b)),
                                           std::move(log_options)));
      WarnAboutRecovery(descriptor_.name, b, log->recovery_info());
      logs_.push_back(std::move(log));
    }
    return Status::OK();
  }

  const catalog::TableDescriptor& descriptor() const override { return descriptor_; }
  const std::vector<std::unique_ptr<log::BucketLog>>& logs() const override { return logs_; }
  const BatchCheck& batch_check() const { return options_.batch_check; }
  // After Close(): the table was altered (and reopened) or dropped.
  bool closed() const { return closed_; }
  Status ClosedError() const {
    return Status::Cancelled("table " + Quote(descriptor_.name) +
                             " was altered or dropped after this stream started; open a new one");
  }
  // Under FlushPolicy::kEveryAppend a put is acknowledged once durable; under kInterval once
  // written (the log's flusher makes it durable within flush_interval_ms).
  bool ack_after_fsync() const {
    return options_.log.flush_policy == log::FlushPolicy::kEveryAppend;
  }

  Result<std::unique_ptr<PutSession>> StartPut(const arrow::SchemaPtr& client_schema,
                                               PutOp op) override;
  Result<std::unique_ptr<PutSession>> StartPutToBucket(const arrow::SchemaPtr& client_schema,
                                                       int32_t bucket) override;
  Result<std::unique_ptr<ReadCursor>> OpenRead(const ReadRequest& request) override;
  const arrow::SchemaPtr& read_schema() const override { return descriptor_.schema; }
  Result<catalog::SchemaVersion> WriterVersion(const arrow::Schema& client_schema) const;

  Result<log::AppendResult> AppendToBucket(int32_t bucket, const arrow::RecordBatch& batch,
                                           const ipc::WriteOptions& options) override {
    ASSIGN_OR_RAISE(auto encoded, ipc::EncodeRecordBatch(batch, options));
    return AppendAsync(bucket, batch.num_rows(), *encoded.metadata, encoded.body,
                       descriptor_.schema_id);
  }

  std::vector<BucketStatus> Buckets() const override {
    std::vector<BucketStatus> buckets;
    for (int32_t b = 0; b < static_cast<int32_t>(logs_.size()); ++b) {
      const log::BucketLog& log = *logs_[b];
      buckets.push_back({b, log.earliest_offset(), log.visible_offset(), log.size_bytes(),
                         log.segment_count(), log.damaged_ranges(), log.recovery_info(),
                         log.cold_status()});
    }
    return buckets;
  }

  Status Close() override {
    // Waits for appends under way: none lands in a log after it closed (the table reopened on a
    // new descriptor opens the same files), and the logs' last sync makes them durable.
    std::unique_lock appends(appends_mu_);
    closed_ = true;
    Status first;
    for (auto& log : logs_) {
      Status st = log->Close();
      if (first.ok() && !st.ok()) {
        first = st.WithContext("closing table " + Quote(descriptor_.name));
      }
    }
    return first;
  }

  // Appends an encoded message (metadata padded to 8 bytes, as the log stores it).
  // `schema_id`: the schema version the batch was written with.
  Result<log::AppendResult> AppendAsync(int32_t bucket, int64_t rows, const Buffer& metadata,
                                        const std::vector<std::shared_ptr<Buffer>>& body,
                                        int32_t schema_id) {
    const int64_t padding = (-metadata.size()) & (ipc::kIpcAlignment - 1);
    ByteSpan meta[2] = {SpanOf(metadata), ByteSpan(kZeroPadding, static_cast<size_t>(padding))};
    std::vector<ByteSpan> body_spans;
    body_spans.reserve(body.size());
    for (const auto& piece : body) body_spans.push_back(SpanOf(*piece));
    const int64_t now = NowMs();
    log::BatchInfo info{static_cast<int32_t>(rows), now, now, schema_id};
    std::shared_lock appending(appends_mu_);
    if (closed_) return ClosedError();
    return logs_[bucket]->AppendAsync(info, std::span<const ByteSpan>(meta, padding ? 2 : 1),
                                      body_spans);
  }

 private:
  const catalog::TableDescriptor descriptor_;
  const LogTableOptions options_;
  const std::vector<int> key_columns_;
  std::vector<std::unique_ptr<log::BucketLog>> logs_;
  std::atomic<uint32_t> next_sticky_bucket_{0};
  std::atomic<bool> closed_{false};
  std::shared_mutex appends_mu_;  // appends hold it shared, Close() exclusively
};

class LogPutSession : public PutSession {
 public:
  // `version`: the table's schema version the client writes with.
  LogPutSession(std::shared_ptr<LogTableImpl> table, arrow::SchemaPtr client_schema, int32_t bucket,
                catalog::SchemaVersion version)
      : table_(std::move(table)),
        client_schema_(std::move(client_schema)),
        sticky_bucket_(bucket),
        version_(std::move(version)) {
    for (const auto& name : table_->descriptor().bucket_key) {
      key_columns_.push_back(version_.schema->GetFieldIndex(name));
    }
  }

  Result<std::vector<AppendedRange>> Append(const ipc::RawMessage& message) override {
    ASSIGN_OR_RAISE(auto batch, ipc::DecodeRecordBatch(client_schema_, message));
    return AppendChecked(*batch, &message);
  }
  Result<std::vector<AppendedRange>> Append(const arrow::RecordBatch& batch) override {
    return AppendChecked(batch, nullptr);
  }
  Result<std::vector<AppendedRange>> AppendWithMetadata(
      const arrow::RecordBatch& batch, const arrow::KeyValueMetadata& batch_metadata) override {
    return AppendChecked(batch, nullptr, batch_metadata);
  }

 private:
  // `message` is the batch as the client encoded it, or null; `batch_metadata` goes into each
  // message encoded here.
  Result<std::vector<AppendedRange>> AppendChecked(
      const arrow::RecordBatch& batch, const ipc::RawMessage* message,
      const arrow::KeyValueMetadata& batch_metadata = {}) {
    ipc::WriteOptions encode_options;
    encode_options.batch_metadata = batch_metadata;
    const auto& desc = table_->descriptor();
    RETURN_NOT_OK(CheckNulls(desc.name, *version_.schema, batch));
    RETURN_NOT_OK(CheckUtf8(desc.name, *version_.schema, batch));
    if (table_->batch_check()) RETURN_NOT_OK(table_->batch_check()(batch));
    if (batch.num_rows() == 0) return std::vector<AppendedRange>{};
    if (batch.num_rows() > INT32_MAX) return Status::Invalid("a batch holds at most 2^31-1 rows");

    struct Pending {
      int32_t bucket;
      int64_t rows;
      log::AppendResult result;
    };
    std::vector<Pending> pending;
    std::vector<int32_t> buckets;
    if (!key_columns_.empty() && desc.buckets > 1) {
      buckets = internal::ComputeBuckets(batch, key_columns_, desc.buckets);
    }
    const bool one_bucket =
        buckets.empty() ||
        std::all_of(buckets.begin(), buckets.end(), [&](int32_t b) { return b == buckets[0]; });
    if (one_bucket) {
      const int32_t bucket = buckets.empty() ? sticky_bucket_ : buckets[0];
      // Stored as the client encoded it when it was; else encoded once here.
      std::optional<ipc::EncodedMessage> encoded;
      if (!message) {
        ASSIGN_OR_RAISE(encoded, ipc::EncodeRecordBatch(batch, encode_options));
      }
      ASSIGN_OR_RAISE(auto result,
                      message ? table_->AppendAsync(bucket, batch.num_rows(), *message->metadata,
                                                    {message->body}, version_.schema_id)
                              : table_->AppendAsync(bucket, batch.num_rows(), *encoded->metadata,
                                                    encoded->body, version_.schema_id));
      pending.push_back({bucket, batch.num_rows(), result});
    } else {
      std::vector<std::vector<int32_t>> rows(static_cast<size_t>(desc.buckets));
      for (int32_t i = 0; i < static_cast<int32_t>(buckets.size()); ++i) {
        rows[buckets[i]].push_back(i);
      }
      for (int32_t b = 0; b < desc.buckets; ++b) {
        if (rows[b].empty()) continue;
        ASSIGN_OR_RAISE(auto part, arrow::TakeRows(batch, rows[b]));
        ASSIGN_OR_RAISE(auto encoded, ipc::EncodeRecordBatch(*part, encode_options));
        ASSIGN_OR_RAISE(auto result, table_->AppendAsync(b, part->num_rows(), *encoded.metadata,
                                                         encoded.body, version_.schema_id));
        pending.push_back({b, part->num_rows(), result});
      }
    }
    std::vector<AppendedRange> out;
    for (const auto& p : pending) {
      if (table_->ack_after_fsync()) {
        RETURN_NOT_OK(table_->logs()[p.bucket]->WaitDurable(p.result.next_offset));
      }
      out.push_back({p.bucket, p.result.base_offset, p.rows});
    }
    return out;
  }

  std::shared_ptr<LogTableImpl> table_;
  arrow::SchemaPtr client_schema_;
  int32_t sticky_bucket_;
  catalog::SchemaVersion version_;
  std::vector<int> key_columns_;  // the bucket key in version_'s schema
};

class LogReadCursor : public ReadCursor {
 public:
  LogReadCursor(std::shared_ptr<LogTableImpl> table, ReadRequest request, arrow::SchemaPtr schema)
      : table_(std::move(table)), request_(std::move(request)), schema_(std::move(schema)) {}

  const arrow::SchemaPtr& schema() const override { return schema_; }
  int32_t bucket() const override { return request_.bucket; }
  bool done() const override { return done_; }

  Result<std::optional<ReadBatch>> Next(std::chrono::steady_clock::time_point deadline) override {
    ASSIGN_OR_RAISE(const log::LogBatch* b, NextStored(deadline));
    if (b == nullptr) return std::optional<ReadBatch>();
    ReadBatch out;
    out.base_offset = b->base_offset;
    out.next_offset = b->next_offset();
    out.append_time_ms = b->append_time_ms;
    ASSIGN_OR_RAISE(const VersionConverter* converter, ConverterFor(b->schema_id));
    if (converter) {
      ASSIGN_OR_RAISE(auto batch, Convert(*converter, *b));
      ipc::WriteOptions options;
      ASSIGN_OR_RAISE(options.batch_metadata, ipc::MessageCustomMetadata(*b->metadata));
      ASSIGN_OR_RAISE(out.message, ipc::EncodeRecordBatch(*batch, options));
      return std::optional<ReadBatch>(std::move(out));
    }
    if (projector_) {
      ASSIGN_OR_RAISE(out.message, projector_->Project(*b->metadata, b->body));
    } else {
      out.message.metadata = b->metadata;
      out.message.body = {b->body};
      out.message.body_length = b->body->size();
    }
    // Only the body bytes sent are verified, right before they go out: they are then still
    // in cache for the copy into the socket.
    for (const auto& piece : out.message.body) {
      RETURN_NOT_OK(b->VerifyBodyPiece(*piece).WithContext(BucketName()));
    }
    return std::optional<ReadBatch>(std::move(out));
  }

  Result<std::optional<DecodedBatch>> NextDecoded(
      std::chrono::steady_clock::time_point deadline) override {
    if (projector_) return Status::Invalid("a projected read yields encoded batches only");
    ASSIGN_OR_RAISE(const log::LogBatch* b, NextStored(deadline));
    if (b == nullptr) return std::optional<DecodedBatch>();
    ASSIGN_OR_RAISE(const VersionConverter* converter, ConverterFor(b->schema_id));
    if (converter) {
      ASSIGN_OR_RAISE(auto batch, Convert(*converter, *b));
      return std::optional<DecodedBatch>(DecodedBatch{
          std::move(batch), b->body->size(), b->base_offset, b->next_offset(), b->append_time_ms});
    }
    RETURN_NOT_OK(b->VerifyBodyPiece(*b->body).WithContext(BucketName()));
    // The bytes were validated when they were put, and their checksums say they are the same.
    ASSIGN_OR_RAISE(auto batch,
                    ipc::DecodeRecordBatch(schema_, *b->metadata, b->body, {.validate = false}));
    return std::optional<DecodedBatch>(DecodedBatch{
        std::move(batch), b->body->size(), b->base_offset, b->next_offset(), b->append_time_ms});
  }

 private:
  friend class LogTableImpl;
  // The next stored batch of the range (metadata verified, body not yet), or null when the
  // range is done or, when following, `deadline` passed without new data.
  Result<const log::LogBatch*> NextStored(std::chrono::steady_clock::time_point deadline) {
    log::BucketLog& log = *table_->logs()[request_.bucket];
    while (!done_) {
      if (pending_index_ < pending_.size()) {
        const log::LogBatch& b = pending_[pending_index_++];
        if (end_ && b.base_offset >= *end_) break;
        position_ = b.next_offset();
        return &b;
      }
      pending_.clear();
      pending_index_ = 0;
      if (end_ && position_ >= *end_) break;
      if (position_ >= EndOf(log)) {
        if (!request_.follow) break;
        auto waited = log.WaitForData(position_, deadline);
        if (!waited.ok() && table_->closed()) return table_->ClosedError();
        ASSIGN_OR_RAISE(int64_t durable, std::move(waited));
        if (durable <= position_) return nullptr;
      }
      auto read =
          log.Read(position_, kReadChunkBytes, {.verify_body = false, .limit = request_.limit});
      if (!read.ok()) return read.status().WithContext(BucketName());
      pending_ = std::move(read).ValueOrDie();
      if (pending_.empty() && !request_.follow) break;
    }
    done_ = true;
    return nullptr;
  }

  int64_t EndOf(const log::BucketLog& log) const {
    switch (request_.limit) {
      case log::ReadLimit::kVisible: return log.visible_offset();
      case log::ReadLimit::kDurable: return log.durable_offset();
      case log::ReadLimit::kWritten: return log.next_offset();
    }
    return log.visible_offset();
  }

  // How a batch stored with version `schema_id` becomes one of the cursor's version: null when
  // it is sent as stored (the same version, or one with the same columns: field ids and types in
  // the same order, e.g. after a rename or a doc change).
  Result<const VersionConverter*> ConverterFor(int32_t schema_id) {
    if (schema_id == target_.schema_id) return nullptr;
    auto it = converters_.find(schema_id);
    if (it == converters_.end()) {
      auto from = table_->descriptor().SchemaById(schema_id);
      if (!from.ok()) return from.status().WithContext(BucketName());
      std::shared_ptr<const VersionConverter> converter;
      if (!SameColumns(*from, target_)) {
        ASSIGN_OR_RAISE(converter, VersionConverter::Make(*from, target_, columns_, schema_));
      }
      it = converters_.emplace(schema_id, std::move(converter)).first;
    }
    return it->second.get();
  }

  Result<arrow::RecordBatchPtr> Convert(const VersionConverter& converter, const log::LogBatch& b) {
    auto batch = converter.Convert(b);
    if (!batch.ok()) {
      return batch.status().WithContext(BucketName() + " batch at offset " +
                                        std::to_string(b.base_offset) + " (schema version " +
                                        std::to_string(b.schema_id) + ")");
    }
    return batch;
  }

  // "table 'ns.t' bucket b", the context of read errors.
  std::string BucketName() const {
    return "table " + Quote(table_->descriptor().name) + " bucket " +
           std::to_string(request_.bucket);
  }

  std::shared_ptr<LogTableImpl> table_;
  ReadRequest request_;
  arrow::SchemaPtr schema_;
  std::optional<arrow::ipc::RecordBatchProjector> projector_;
  catalog::SchemaVersion target_;  // the version read in
  std::vector<int> columns_;       // the output columns, indices into target_'s schema
  // By schema id; null: sent as stored.
  std::map<int32_t, std::shared_ptr<const VersionConverter>> converters_;
  int64_t position_ = 0;
  std::optional<int64_t> end_;  // stop before the first batch at or past this offset
  std::vector<log::LogBatch> pending_;
  size_t pending_index_ = 0;
  bool done_ = false;
};

Result<std::unique_ptr<PutSession>> LogTableImpl::StartPut(const arrow::SchemaPtr& client_schema,
                                                           PutOp op) {
  if (op == PutOp::kDelete) {
    return Status::Invalid("table " + Quote(descriptor_.name) +
                           " is a log table: deletes need a primary key");
  }
  ASSIGN_OR_RAISE(auto version, WriterVersion(*client_schema));
  const auto bucket = static_cast<int32_t>(next_sticky_bucket_.fetch_add(1) %
                                           static_cast<uint32_t>(descriptor_.buckets));
  return std::unique_ptr<PutSession>(
      new LogPutSession(shared_from_this(), client_schema, bucket, std::move(version)));
}

Result<std::unique_ptr<PutSession>> LogTableImpl::StartPutToBucket(
    const arrow::SchemaPtr& client_schema, int32_t bucket) {
  ASSIGN_OR_RAISE(auto version, WriterVersion(*client_schema));
  if (!key_columns_.empty()) {
    return Status::Invalid("table " + Quote(descriptor_.name) +
                           " chooses each row's bucket by its bucket key");
  }
  if (bucket < 0 || bucket >= descriptor_.buckets) {
    return Status::OutOfRange("bucket " + std::to_string(bucket) +
                              " does not exist: " + Quote(descriptor_.name) + " has " +
                              std::to_string(descriptor_.buckets) + " buckets");
  }
  return std::unique_ptr<PutSession>(
      new LogPutSession(shared_from_this(), client_schema, bucket, std::move(version)));
}

// A writer may use the current schema or any earlier version (docs/api.md#alter_table); its
// batches are stored with that version's id and converted when read.
Result<catalog::SchemaVersion> LogTableImpl::WriterVersion(
    const arrow::Schema& client_schema) const {
  Status current = CheckClientSchema(descriptor_.name, *descriptor_.schema, client_schema);
  if (current.ok()) return descriptor_.CurrentSchema();
  for (auto v = descriptor_.previous_schemas.rbegin(); v != descriptor_.previous_schemas.rend();
       ++v) {
    if (CheckClientSchema(descriptor_.name, *v->schema, client_schema).ok()) return *v;
  }
  return current;
}

Result<std::unique_ptr<ReadCursor>> LogTableImpl::OpenRead(const ReadRequest& request) {
  const auto& desc = descriptor_;
  if (request.bucket >= desc.buckets) {
    return Status::OutOfRange("bucket " + std::to_string(request.bucket) + " does not exist: '" +
                              desc.name + "' has " + std::to_string(desc.buckets) + " buckets (0-" +
                              std::to_string(desc.buckets - 1) + ")");
  }
  catalog::SchemaVersion target = desc.CurrentSchema();
  arrow::SchemaPtr read_schema = desc.schema;
  if (request.schema_id && *request.schema_id != desc.schema_id) {
    auto version = desc.SchemaById(*request.schema_id);
    if (!version.ok()) {
      std::string ids;
      for (const auto& v : desc.previous_schemas) ids += std::to_string(v.schema_id) + ", ";
      return Status::Invalid("table " + Quote(desc.name) + " has no schema version " +
                             std::to_string(*request.schema_id) + " (its versions: " + ids +
                             std::to_string(desc.schema_id) + ")");
    }
    target = std::move(version).ValueOrDie();
    read_schema = EarlierVersionReadSchema(desc, target);
  }
  std::unique_ptr<LogReadCursor> cursor(
      new LogReadCursor(shared_from_this(), request, read_schema));
  cursor->target_ = target;
  if (request.columns) {
    ASSIGN_OR_RAISE(auto indices, ColumnIndices(desc.name, *read_schema, *request.columns));
    ASSIGN_OR_RAISE(auto projector, ipc::RecordBatchProjector::Make(read_schema, indices));
    cursor->schema_ = projector.projected_schema();
    cursor->projector_ = std::move(projector);
    cursor->columns_ = std::move(indices);
  } else {
    for (int i = 0; i < read_schema->num_fields(); ++i) cursor->columns_.push_back(i);
  }
  log::BucketLog& log = *logs_[request.bucket];
  const int64_t earliest = log.earliest_offset();
  const int64_t durable = cursor->EndOf(log);
  switch (request.from.kind) {
    case StartPosition::Kind::kEarliest: cursor->position_ = earliest; break;
    case StartPosition::Kind::kLatest: cursor->position_ = durable; break;
    case StartPosition::Kind::kTimestamp: {
      auto found = log.LookupOffsetByTime(request.from.timestamp_ms);
      if (!found.ok()) return found.status().WithContext(cursor->BucketName());
      cursor->position_ = *found;
      break;
    }
    case StartPosition::Kind::kOffset: {
      // A follow may start at an offset written here and not yet visible: a new leader's high
      // watermark catches up with its log after an election, and a reader that had reached the
      // old leader's waits for it here rather than being refused.
      const int64_t last = request.follow ? std::max(durable, log.next_offset()) : durable;
      if (request.from.offset < earliest || request.from.offset > last) {
        return Status::OutOfRange("offset " + std::to_string(request.from.offset) +
                                  " is out of range for bucket " + std::to_string(request.bucket) +
                                  " of '" + desc.name + "': valid offsets are [" +
                                  std::to_string(earliest) + ", " + std::to_string(last) + "]");
      }
      cursor->position_ = request.from.offset;
      break;
    }
  }
  if (request.to) {
    cursor->end_ = *request.to;
  } else if (!request.follow) {
    cursor->end_ = durable;
  }
  return std::unique_ptr<ReadCursor>(std::move(cursor));
}

}  // namespace

Result<std::vector<int>> ColumnIndices(const std::string& table, const arrow::Schema& schema,
                                       const std::vector<std::string>& names) {
  std::vector<int> indices;
  for (const auto& name : names) {
    const int i = schema.GetFieldIndex(name);
    if (i < 0) {
      std::string known;
      for (const auto& f : schema.fields()) known += (known.empty() ? "" : ", ") + f.name;
      return Status::Invalid("unknown column " + Quote(name) + " in table " + Quote(table) +
                             " (columns: " + known + ")");
    }
    indices.push_back(i);
  }
  return indices;
}

Status CheckNulls(const std::string& table, const arrow::Schema& expected,
                  const arrow::RecordBatch& batch) {
  for (int i = 0; i < expected.num_fields(); ++i) {
    if (!expected.field(i).nullable && batch.column(i).null_count() > 0) {
      return Status::Invalid("field " + Quote(expected.field(i).name) + " of table " +
                             Quote(table) + " is not nullable but the batch has " +
                             std::to_string(batch.column(i).null_count()) + " nulls");
    }
    if (Status st = batch.column(i).CheckNestedNulls(); !st.ok()) {
      return st.WithContext("field " + Quote(expected.field(i).name) + " of table " + Quote(table));
    }
  }
  return Status::OK();
}

// The Arrow format requires `string` values to be UTF-8; a bad one makes readers (DuckDB, the
// lake's) refuse a whole file later, so it is refused here.
Status CheckUtf8(const std::string& table, const arrow::Schema& schema,
                 const arrow::RecordBatch& batch) {
  for (int i = 0; i < schema.num_fields(); ++i) {
    const arrow::DataType& type = schema.field(i).type;
    if (type.id() != arrow::TypeId::kString && !type.is_nested()) continue;
    if (Status st = arrow::ValidateUtf8Tree(batch.column(i)); !st.ok()) {
      return st.WithContext("field " + Quote(schema.field(i).name) + " of table " + Quote(table));
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

Result<std::shared_ptr<LogTable>> OpenLogTable(const catalog::TableDescriptor& descriptor,
                                               LogTableOptions options) {
  auto table = std::make_shared<LogTableImpl>(descriptor, std::move(options));
  RETURN_NOT_OK(table->OpenLogs());
  return std::shared_ptr<LogTable>(std::move(table));
}

}  // namespace oxbow::engine::internal
