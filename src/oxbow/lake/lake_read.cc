#include "oxbow/lake/lake_read.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <map>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "oxbow/arrow/compute.h"
#include "oxbow/common/civil_time.h"
#include "oxbow/iceberg/table.h"
#include "oxbow/kv/row.h"
#include "oxbow/lake/lake.h"
#include "oxbow/lake/lake_scan_internal.h"
#include "oxbow/lake/lake_schema_internal.h"
#include "oxbow/parquet/reader.h"

namespace oxbow::lake {
namespace {

// Rows of one message of a union read's lake part.
constexpr int64_t kSendRows = 64 * 1024;

Result<arrow::ipc::EncodedMessage> Encode(const arrow::RecordBatch& batch) {
  return arrow::ipc::EncodeRecordBatch(batch);
}

// The projected schema of a read of `table`, as the log's own projection makes it (the same
// checks and errors as a log read).
Result<arrow::SchemaPtr> ReadSchema(engine::Engine* engine, const std::string& table,
                                    const std::optional<std::vector<std::string>>& columns) {
  engine::ReadRequest probe;
  probe.table = table;
  probe.from.kind = engine::StartPosition::Kind::kLatest;
  probe.columns = columns;
  ASSIGN_OR_RAISE(auto cursor, engine->OpenRead(probe));
  return cursor->schema();
}

Result<engine::BucketStatus> Bucket(engine::Engine* engine, const std::string& table,
                                    int32_t bucket) {
  ASSIGN_OR_RAISE(auto status, engine->DescribeTable(table));
  if (bucket < 0 || static_cast<size_t>(bucket) >= status.buckets.size()) {
    return Status::OutOfRange("bucket " + std::to_string(bucket) +
                              " does not exist: " + Quote(table) + " has " +
                              std::to_string(status.buckets.size()) + " buckets");
  }
  return status.buckets[bucket];
}

// A log read from an offset that falls back on the lake for offsets retention deleted.
class LakeBackedCursor : public engine::ReadCursor {
 public:
  // A read of `request` (from an offset) that goes to the lake wherever the log lacks offsets.
  static Result<std::unique_ptr<engine::ReadCursor>> Make(engine::Engine* engine,
                                                          const LakeAccess& lake,
                                                          catalog::TableDescriptor table,
                                                          const engine::ReadRequest& request) {
    if (request.schema_id && *request.schema_id != table.schema_id) {
      return Status::Invalid("offsets from " + std::to_string(request.from.offset) + " of bucket " +
                             std::to_string(request.bucket) + " of " + Quote(table.name) +
                             " are read from the lake, which reads in the current schema "
                             "version only (" +
                             std::to_string(table.schema_id) + ", not " +
                             std::to_string(*request.schema_id) + ")");
    }
    std::unique_ptr<LakeBackedCursor> cursor(new LakeBackedCursor(engine, lake, std::move(table)));
    cursor->request_ = request;
    cursor->position_ = request.from.offset;
    ASSIGN_OR_RAISE(cursor->schema_, ReadSchema(engine, request.table, request.columns));
    if (request.to) {
      cursor->end_ = *request.to;
    } else if (!request.follow) {
      ASSIGN_OR_RAISE(auto bucket, Bucket(engine, request.table, request.bucket));
      cursor->end_ = bucket.next_offset;
    }
    return std::unique_ptr<engine::ReadCursor>(std::move(cursor));
  }

  const arrow::SchemaPtr& schema() const override { return schema_; }
  int32_t bucket() const override { return request_.bucket; }
  bool done() const override { return done_; }

  Result<std::optional<engine::ReadBatch>> Next(
      std::chrono::steady_clock::time_point deadline) override {
    return NextOf<engine::ReadBatch>(deadline);
  }

  // Unprojected reads only, as for a log cursor.
  Result<std::optional<engine::DecodedBatch>> NextDecoded(
      std::chrono::steady_clock::time_point deadline) override {
    return NextOf<engine::DecodedBatch>(deadline);
  }

 private:
  // The next batch, encoded (engine::ReadBatch) or decoded (engine::DecodedBatch).
  template <typename Out>
  Result<std::optional<Out>> NextOf(std::chrono::steady_clock::time_point deadline) {
    constexpr bool kEncoded = std::is_same_v<Out, engine::ReadBatch>;
    while (true) {
      if (log_) {
        auto next = [&] {
          if constexpr (kEncoded) {
            return log_->Next(deadline);
          } else {
            return log_->NextDecoded(deadline);
          }
        }();
        if (!next.ok()) {
          if (!next.status().IsOutOfRange()) return next.status();
          ASSIGN_OR_RAISE(auto bucket, Bucket(engine_, request_.table, request_.bucket));
          if (bucket.earliest_offset <= position_) return next.status();
          log_.reset();  // retention overtook the read: the lake has those offsets now
          continue;
        }
        if (*next) {
          if ((*next)->base_offset < position_) RETURN_NOT_OK(TrimBefore(position_, &**next));
          position_ = (*next)->next_offset;
        } else if (log_->done()) {
          done_ = true;
        }
        return next;
      }
      if (lake_) {
        ASSIGN_OR_RAISE(auto run, lake_->Next());
        if (!run && position_ == lake_end_) {  // the lake's part is done: on to the log
          lake_.reset();
          continue;
        }
        if (run && run->base_offset == position_) {
          position_ = run->next_offset;
          Out out;
          if constexpr (kEncoded) {
            ASSIGN_OR_RAISE(out.message, Encode(*run->batch));
          } else {
            out.batch = run->batch;
            ASSIGN_OR_RAISE(auto encoded, Encode(*run->batch));
            out.body_length = encoded.body_length;
          }
          out.base_offset = run->base_offset;
          out.next_offset = run->next_offset;
          out.append_time_ms = run->append_time_ms;
          return std::optional<Out>(std::move(out));
        }
        return Missing(run ? run->base_offset : lake_end_);
      }
      if (end_ && position_ >= *end_) {
        done_ = true;
        return std::optional<Out>();
      }
      engine::ReadRequest request = request_;
      request.from.kind = engine::StartPosition::Kind::kOffset;
      request.from.offset = position_;
      request.to = end_;
      auto cursor = engine_->OpenRead(request);
      if (cursor.ok()) {
        log_ = std::move(cursor).ValueOrDie();
        continue;
      }
      if (!cursor.status().IsOutOfRange()) return cursor.status();
      ASSIGN_OR_RAISE(auto bucket, Bucket(engine_, request_.table, request_.bucket));
      if (bucket.earliest_offset <= position_) return cursor.status();
      log_earliest_ = bucket.earliest_offset;
      lake_end_ = end_ ? std::min(*end_, bucket.earliest_offset) : bucket.earliest_offset;
      // Loaded now, after retention moved the log's start: the lake's current snapshot holds
      // every offset below it (retention never passes the tiered offsets).
      // A primary-key table's changelog is in its changelog lake table.
      ASSIGN_OR_RAISE(auto snapshot,
                      LoadSnapshot(lake_access_, table_, !table_.primary_key.empty()));
      ASSIGN_OR_RAISE(auto columns, MakeLakeColumns(table_, schema_, snapshot));
      lake_ = std::make_unique<LakeRangeReader>(lake_access_.fs, std::move(snapshot),
                                                std::move(columns), request_.bucket, position_,
                                                lake_end_);
    }
  }

  LakeBackedCursor(engine::Engine* engine, const LakeAccess& lake, catalog::TableDescriptor table)
      : engine_(engine), lake_access_(lake), table_(std::move(table)) {}

  // Leaves out a log batch's rows below `from`: the lake delivered them, and the log starts
  // inside the batch (Kafka's DeleteRecords moved its start there).
  template <typename Out>
  Status TrimBefore(int64_t from, Out* out) {
    const int64_t skip = from - out->base_offset;
    if constexpr (std::is_same_v<Out, engine::ReadBatch>) {
      ASSIGN_OR_RAISE(auto body, out->message.BodyAsBuffer());
      ASSIGN_OR_RAISE(auto batch,
                      arrow::ipc::DecodeRecordBatch(schema_, *out->message.metadata, body));
      ASSIGN_OR_RAISE(out->message, Encode(*batch->Slice(skip, batch->num_rows() - skip)));
    } else {
      out->batch = out->batch->Slice(skip, out->batch->num_rows() - skip);
    }
    out->base_offset = from;
    return Status::OK();
  }

  // The lake's part does not go on at position_: offsets [position_, found) are in neither the
  // log nor the lake (`found`: the next offset the lake holds, or where the lake's part ends).
  Status Missing(int64_t found) {
    lake_.reset();
    return Status::OutOfRange(
        "offsets [" + std::to_string(position_) + ", " + std::to_string(found) + ") of bucket " +
        std::to_string(request_.bucket) + " of " + Quote(request_.table) +
        " are in neither the log (retention deleted them; it starts at " +
        std::to_string(log_earliest_) + ") nor the lake: the earliest offset readable after " +
        "them is " + std::to_string(found));
  }

  engine::Engine* engine_;
  LakeAccess lake_access_;
  catalog::TableDescriptor table_;
  engine::ReadRequest request_;
  arrow::SchemaPtr schema_;
  int64_t position_ = 0;        // the next offset to deliver
  std::optional<int64_t> end_;  // exclusive
  int64_t log_earliest_ = 0;    // the log's first offset when the lake part began
  int64_t lake_end_ = 0;        // the lake part covers [position_, lake_end_)
  std::unique_ptr<engine::ReadCursor> log_;
  std::unique_ptr<LakeRangeReader> lake_;
  bool done_ = false;
};

// A filter predicate bound to the table: its column and a value of that column's kind.
struct BoundPredicate {
  ColumnPredicate::Op op;
  int table_index = 0;  // in the table's schema, so also the lake column and Parquet leaf
  int read_index = 0;   // in the batches the read decodes
  arrow::TypeId type;   // the table's type
  std::variant<int64_t, double, std::string> value;  // int64: integers and date32
};

bool IsIntegerLike(arrow::TypeId id) {
  return (id >= arrow::TypeId::kInt8 && id <= arrow::TypeId::kUInt32) ||
         id == arrow::TypeId::kDate32;
}

Result<BoundPredicate> BindPredicate(const catalog::TableDescriptor& table,
                                     const ColumnPredicate& p) {
  const int index = table.schema->GetFieldIndex(p.column);
  if (index < 0) {
    std::string names;
    for (const auto& f : table.schema->fields()) names += (names.empty() ? "" : ", ") + f.name;
    return Status::Invalid("filter column " + Quote(p.column) + " is not a column of table " +
                           Quote(table.name) + " (columns: " + names + ")");
  }
  const arrow::DataType& type = table.schema->field(index).type;
  BoundPredicate out{p.op, index, 0, type.id(), p.value};
  auto wrong_value = [&](const char* wanted) {
    return Status::Invalid("filter on column " + Quote(p.column) + " of type " + type.ToString() +
                           " needs " + wanted + " value");
  };
  if (IsIntegerLike(type.id())) {
    if (!std::holds_alternative<int64_t>(p.value)) return wrong_value("an integer");
  } else if (type.is_floating()) {
    if (const int64_t* i = std::get_if<int64_t>(&p.value)) out.value = static_cast<double>(*i);
    if (!std::holds_alternative<double>(out.value)) return wrong_value("a number");
  } else if (type.id() == arrow::TypeId::kString) {
    if (!std::holds_alternative<std::string>(p.value)) return wrong_value("a string");
  } else {
    return Status::Invalid("filter on column " + Quote(p.column) + " of type " + type.ToString() +
                           " is not supported: filters compare integer, floating-point, date32 "
                           "and string columns");
  }
  return out;
}

// `a op b`.
template <typename T>
bool Compare(ColumnPredicate::Op op, const T& a, const T& b) {
  switch (op) {
    case ColumnPredicate::Op::kLess: return a < b;
    case ColumnPredicate::Op::kLessEqual: return a <= b;
    case ColumnPredicate::Op::kGreater: return a > b;
    case ColumnPredicate::Op::kGreaterEqual: return a >= b;
    case ColumnPredicate::Op::kEqual: return a == b;
    case ColumnPredicate::Op::kNotEqual: return a != b;
  }
  return false;
}

int64_t IntegerAt(const arrow::Array& a, arrow::TypeId id, int64_t row) {
  switch (id) {
    case arrow::TypeId::kInt8: return a.Value<int8_t>(row);
    case arrow::TypeId::kInt16: return a.Value<int16_t>(row);
    case arrow::TypeId::kUInt8: return a.Value<uint8_t>(row);
    case arrow::TypeId::kUInt16: return a.Value<uint16_t>(row);
    case arrow::TypeId::kUInt32: return a.Value<uint32_t>(row);
    case arrow::TypeId::kInt64: return a.Value<int64_t>(row);
    default: return a.Value<int32_t>(row);  // int32, date32
  }
}

// Whether `row` of `batch` matches `p` (a null never does).
bool RowMatches(const arrow::RecordBatch& batch, const BoundPredicate& p, int64_t row) {
  const arrow::Array& a = batch.column(p.read_index);
  if (a.IsNull(row)) return false;
  if (const int64_t* v = std::get_if<int64_t>(&p.value)) {
    return Compare(p.op, IntegerAt(a, p.type, row), *v);
  }
  if (const double* v = std::get_if<double>(&p.value)) {
    const double x =
        p.type == arrow::TypeId::kFloat32 ? double{a.Value<float>(row)} : a.Value<double>(row);
    return Compare(p.op, x, *v);
  }
  return Compare(p.op, a.GetView(row), std::string_view(std::get<std::string>(p.value)));
}

// A lake bound (Iceberg single-value bytes or Parquet PLAIN statistics) as `p`'s value kind.
std::optional<std::variant<int64_t, double, std::string>> DecodeBound(
    const BoundPredicate& p, const std::optional<std::string>& bytes) {
  if (!bytes) return std::nullopt;
  if (std::holds_alternative<std::string>(p.value)) return *bytes;
  const bool wide = p.type == arrow::TypeId::kInt64 || p.type == arrow::TypeId::kUInt32 ||
                    p.type == arrow::TypeId::kFloat64;
  if (bytes->size() != (wide ? 8u : 4u)) return std::nullopt;
  if (std::holds_alternative<int64_t>(p.value)) return *IntBound(bytes, bytes->size());
  if (wide) {
    double d;
    std::memcpy(&d, bytes->data(), 8);
    return d;
  }
  float f;
  std::memcpy(&f, bytes->data(), 4);
  return double{f};
}

// Whether values within [lo, hi] (either unknown: unbounded) may match `p`.
bool MayMatch(const BoundPredicate& p, const std::optional<std::string>& lo_bytes,
              const std::optional<std::string>& hi_bytes) {
  const auto lo = DecodeBound(p, lo_bytes);
  const auto hi = DecodeBound(p, hi_bytes);
  const auto& v = p.value;
  switch (p.op) {
    case ColumnPredicate::Op::kLess: return !lo || *lo < v;
    case ColumnPredicate::Op::kLessEqual: return !lo || *lo <= v;
    case ColumnPredicate::Op::kGreater: return !hi || *hi > v;
    case ColumnPredicate::Op::kGreaterEqual: return !hi || *hi >= v;
    case ColumnPredicate::Op::kEqual: return (!lo || *lo <= v) && (!hi || v <= *hi);
    case ColumnPredicate::Op::kNotEqual:
      // Bounds leave out NaN, which != matches.
      return std::holds_alternative<double>(v) || !lo || !hi || *lo != v || *hi != v;
  }
  return true;
}

// Which rows of a union read pass, and how they are sent: the batches a read decodes hold the
// output columns followed by the other columns the filter (or a primary key) needs.
class RowShaper {
 public:
  RowShaper() = default;
  RowShaper(arrow::SchemaPtr output, arrow::SchemaPtr read, std::vector<BoundPredicate> filter)
      : output_(std::move(output)), read_(std::move(read)), filter_(std::move(filter)) {}

  bool passthrough() const { return filter_.empty() && read_ == output_; }
  const arrow::SchemaPtr& read_schema() const { return read_; }
  const std::vector<BoundPredicate>& filter() const { return filter_; }

  // Rows of `candidates` (all rows when null) that match the filter.
  std::vector<int32_t> Select(const arrow::RecordBatch& batch,
                              const std::vector<int32_t>* candidates) const {
    std::vector<int32_t> out;
    auto consider = [&](int32_t r) {
      for (const auto& p : filter_) {
        if (!RowMatches(batch, p, r)) return;
      }
      out.push_back(r);
    };
    if (candidates) {
      for (int32_t r : *candidates) consider(r);
    } else {
      for (int64_t r = 0; r < batch.num_rows(); ++r) consider(static_cast<int32_t>(r));
    }
    return out;
  }

  // The output columns of `rows` of `batch`.
  Result<arrow::RecordBatchPtr> Shape(const arrow::RecordBatch& batch,
                                      const std::vector<int32_t>& rows) const {
    std::vector<arrow::Array> columns;
    for (int i = 0; i < output_->num_fields(); ++i) {
      if (static_cast<int64_t>(rows.size()) == batch.num_rows()) {
        columns.push_back(batch.column(i));
      } else {
        ASSIGN_OR_RAISE(auto taken, arrow::TakeRows(batch.column(i), rows));
        columns.push_back(std::move(taken));
      }
    }
    return arrow::RecordBatch::Make(output_, static_cast<int64_t>(rows.size()), std::move(columns));
  }

 private:
  arrow::SchemaPtr output_;
  arrow::SchemaPtr read_;
  std::vector<BoundPredicate> filter_;
};

// The columns of `table` named by `names`, in order (the log read's unknown-column error).
Result<arrow::SchemaPtr> SelectColumns(const catalog::TableDescriptor& table,
                                       const std::vector<std::string>& names) {
  std::vector<arrow::Field> fields;
  for (const auto& name : names) {
    const int i = table.schema->GetFieldIndex(name);
    if (i < 0) {
      std::string all;
      for (const auto& f : table.schema->fields()) all += (all.empty() ? "" : ", ") + f.name;
      return Status::Invalid("unknown column " + Quote(name) + " in table " + Quote(table.name) +
                             " (columns: " + all + ")");
    }
    fields.push_back(table.schema->field(i));
  }
  return std::make_shared<const arrow::Schema>(std::move(fields));
}

Result<arrow::RecordBatchPtr> Decode(const arrow::SchemaPtr& schema,
                                     const arrow::ipc::EncodedMessage& message) {
  ASSIGN_OR_RAISE(auto body, message.BodyAsBuffer());
  ASSIGN_OR_RAISE(auto raw, arrow::ipc::ParseMessage(message.metadata, body));
  return arrow::ipc::DecodeRecordBatch(schema, raw);
}

class UnionReaderImpl : public UnionReader {
 public:
  UnionReaderImpl(engine::Engine* engine, LakeAccess lake, catalog::TableDescriptor table,
                  UnionReadRequest request)
      : engine_(engine),
        lake_(std::move(lake)),
        table_(std::move(table)),
        request_(std::move(request)),
        remaining_(request_.limit.value_or(INT64_MAX)),
        primary_key_(!table_.primary_key.empty()) {}

  Status Open() {
    RETURN_NOT_OK(MakeShapes());
    // A primary-key changelog may lose offsets a newer snapshot holds while it is read: then
    // the read starts again from that snapshot.
    for (int attempt = 0;; ++attempt) {
      Status st = OpenAt();
      if (st.ok() || !primary_key_ || !st.IsOutOfRange() || attempt == 2) return st;
    }
  }

  const arrow::SchemaPtr& schema() const override { return schema_; }
  std::optional<int64_t> snapshot_id() const override { return snapshot_.id; }
  const std::vector<UnionBucket>& buckets() const override { return buckets_; }
  bool done() const override { return done_; }
  UnionPruning pruning() const override {
    return {files_skipped_.load(), row_groups_skipped_.load()};
  }

  Result<std::optional<UnionBatch>> Next(std::chrono::steady_clock::time_point deadline) override {
    if (remaining_ == 0) {
      done_ = true;
      return std::optional<UnionBatch>();
    }
    ASSIGN_OR_RAISE(auto next, NextUnlimited(deadline));
    if (next) remaining_ -= next->rows;
    return next;
  }

 private:
  // The output schema, and what the read decodes: the output columns, then the filter's (and,
  // for a primary-key table, every) other column.
  Status MakeShapes() {
    std::vector<std::string> names;
    if (request_.columns) {
      names = *request_.columns;
    } else {
      for (const auto& f : table_.schema->fields()) names.push_back(f.name);
    }
    if (primary_key_) {
      ASSIGN_OR_RAISE(schema_, SelectColumns(table_, names));
    } else {
      ASSIGN_OR_RAISE(schema_, ReadSchema(engine_, table_.name, request_.columns));
    }
    std::vector<std::string> read_names = names;
    auto add = [&](const std::string& name) {
      if (std::find(read_names.begin(), read_names.end(), name) == read_names.end()) {
        read_names.push_back(name);
      }
    };
    if (primary_key_) {
      for (const auto& f : table_.schema->fields()) add(f.name);
    }
    std::vector<BoundPredicate> filter;
    for (const auto& p : request_.filter) {
      ASSIGN_OR_RAISE(auto bound, BindPredicate(table_, p));
      add(p.column);
      filter.push_back(std::move(bound));
    }
    for (auto& p : filter) {
      p.read_index = static_cast<int>(std::find(read_names.begin(), read_names.end(),
                                                table_.schema->field(p.table_index).name) -
                                      read_names.begin());
    }
    arrow::SchemaPtr read_schema = schema_;
    if (read_names.size() != names.size()) {
      ASSIGN_OR_RAISE(read_schema, SelectColumns(table_, read_names));
      read_columns_ = read_names;
    } else {
      read_columns_ = request_.columns;
    }
    shaper_ = RowShaper(schema_, read_schema, std::move(filter));
    return Status::OK();
  }

  Status OpenAt() {
    const bool in_lake = IsLakeEnabled(table_);
    if (primary_key_ && (!in_lake || request_.follow)) {
      return Status::Invalid(
          "table " + Quote(table_.name) + " has a primary key: " +
          (in_lake ? std::string("its union read does not follow (follow its changelog from the "
                                 "\"next_offset\" of each bucket the first message gives)")
                   : std::string("its union read needs lake.enabled \"true\" (read its current "
                                 "rows with a \"snapshot\" ticket)")));
    }
    if (in_lake) {
      ASSIGN_OR_RAISE(snapshot_, LoadSnapshot(lake_, table_));
    }
    ASSIGN_OR_RAISE(lake_columns_, MakeLakeColumns(table_, shaper_.read_schema(), snapshot_));
    ASSIGN_OR_RAISE(table_ids_, TableFieldIds(table_, snapshot_));
    // The log's ends are taken after the snapshot: its tiered offsets are at or below them.
    ASSIGN_OR_RAISE(auto status, engine_->DescribeTable(table_.name));
    buckets_.clear();
    for (const auto& b : status.buckets) {
      const int64_t from = in_lake ? snapshot_.tiered_offsets[b.bucket] : b.earliest_offset;
      buckets_.push_back({b.bucket, from, std::max(from, b.next_offset)});
    }
    if (primary_key_) {
      ASSIGN_OR_RAISE(lake_schema_, internal::MakeLakeSchema(table_.schema, table_.primary_key));
      key_ids_.clear();
      for (int c : lake_schema_.key_columns) {
        std::optional<int32_t> id = table_ids_[static_cast<size_t>(c)];
        // A lake with no snapshot yet has no files to match: its fresh schema's ids serve.
        if (!snapshot_.schema) id = lake_schema_.iceberg_schema.fields()[static_cast<size_t>(c)].id;
        if (!id) return Status::Corruption("the lake schema lacks a primary-key column");
        key_ids_.push_back(*id);
      }
      RETURN_NOT_OK(ReadChanges());
      RETURN_NOT_OK(ReadDeletes());
    }
    return Status::OK();
  }

  // The lake form's encoding of the key of `row` (key columns already in lake types).
  static std::string KeyOf(const std::vector<arrow::Array>& keys, int64_t row) {
    std::string key;
    for (const auto& k : keys) kv::AppendKeyPart(k, row, &key);
    return key;
  }

  // Primary-key tables: the changelog after the snapshot, and each changed key's last change.
  Status ReadChanges() {
    changes_.clear();
    change_batches_.clear();
    const int n = table_.schema->num_fields();
    std::unordered_map<std::string, std::pair<size_t, int32_t>> last;  // key -> (batch, row)
    std::vector<std::string> deleted;
    for (const auto& b : buckets_) {
      if (b.lake_offset >= b.next_offset) continue;
      engine::ReadRequest request;
      request.table = table_.name;
      request.bucket = b.bucket;
      request.from.kind = engine::StartPosition::Kind::kOffset;
      request.from.offset = b.lake_offset;
      request.to = b.next_offset;
      ASSIGN_OR_RAISE(auto cursor, engine_->OpenRead(request));
      while (true) {
        ASSIGN_OR_RAISE(auto read, cursor->NextDecoded(std::chrono::steady_clock::now()));
        if (!read) break;
        const arrow::RecordBatch& changelog = *read->batch;
        if (changelog.num_columns() != n + 1) {
          return Status::Corruption("changelog batch of " + Quote(table_.name) + " has " +
                                    std::to_string(changelog.num_columns()) + " columns, not " +
                                    std::to_string(n + 1));
        }
        std::vector<arrow::Array> columns, keys;  // columns: in the read's order
        for (const auto& f : shaper_.read_schema()->fields()) {
          columns.push_back(changelog.column(table_.schema->GetFieldIndex(f.name)));
        }
        for (int c : lake_schema_.key_columns) {
          ASSIGN_OR_RAISE(
              auto key, arrow::Cast(changelog.column(c), lake_schema_.arrow_schema->field(c).type));
          keys.push_back(std::move(key));
        }
        ASSIGN_OR_RAISE(auto rows,
                        arrow::RecordBatch::Make(shaper_.read_schema(), changelog.num_rows(),
                                                 std::move(columns)));
        const arrow::Array& change_types = changelog.column(n);
        for (int64_t r = 0; r < changelog.num_rows(); ++r) {
          const std::string_view change = change_types.GetView(r);
          if (change == "-U") continue;  // the row before an update: the +U that follows wins
          auto& at = last[KeyOf(keys, r)];
          at = {change == "-D" ? SIZE_MAX : change_batches_.size(), static_cast<int32_t>(r)};
        }
        change_batches_.push_back({b.bucket, std::move(rows), {}});
      }
    }
    for (auto& [key, at] : last) {
      if (at.first != SIZE_MAX) change_batches_[at.first].rows.push_back(at.second);
      changes_.insert(key);
    }
    for (auto& c : change_batches_) std::sort(c.rows.begin(), c.rows.end());
    return Status::OK();
  }

  // Primary-key tables: the rows the snapshot's position delete files remove.
  Status ReadDeletes() {
    deleted_.clear();
    for (const auto& f : snapshot_.delete_files) {
      ASSIGN_OR_RAISE(auto file, OpenLakeFile(*lake_.fs, f));
      for (int g = 0; g < file->num_row_groups(); ++g) {
        ASSIGN_OR_RAISE(auto b, file->ReadRowGroup(g, {0, 1}));
        for (int64_t r = 0; r < b->num_rows(); ++r) {
          deleted_[std::string(b->column(0).GetView(r))].insert(b->column(1).Value<int64_t>(r));
        }
      }
    }
    return Status::OK();
  }

  Result<std::optional<UnionBatch>> NextUnlimited(std::chrono::steady_clock::time_point deadline) {
    // The lake snapshot, file by file, row group by row group.
    while (!lake_done_) {
      if (row_group_batch_ && sent_rows_ < row_group_batch_->num_rows()) {
        // A row group goes out in slices, so no message (and no gRPC buffer) holds all of it.
        auto slice = row_group_batch_->Slice(sent_rows_, std::min(kSendRows, remaining_));
        sent_rows_ += slice->num_rows();
        UnionBatch out;
        ASSIGN_OR_RAISE(out.message, Encode(*slice));
        out.rows = slice->num_rows();
        return std::optional<UnionBatch>(std::move(out));
      }
      // The next row group was read on another thread while this one was sent.
      if (!next_row_group_.valid()) next_row_group_ = ReadAhead();
      row_group_batch_.reset();
      ASSIGN_OR_RAISE(row_group_batch_, next_row_group_.get());
      sent_rows_ = 0;
      if (row_group_batch_) {
        next_row_group_ = ReadAhead();
      } else {
        lake_done_ = true;
      }
    }
    if (primary_key_) return NextChanges();
    // Then each bucket's offsets after the snapshot.
    while (bucket_index_ < buckets_.size()) {
      const UnionBucket& b = buckets_[bucket_index_];
      if (!tail_) {
        if (b.lake_offset >= b.next_offset) {
          ++bucket_index_;
          continue;
        }
        ASSIGN_OR_RAISE(tail_, OpenTail(b.bucket, b.lake_offset, b.next_offset));
      }
      ASSIGN_OR_RAISE(auto next, tail_->Next(std::chrono::steady_clock::now()));
      if (!next) {
        tail_.reset();
        ++bucket_index_;
        continue;
      }
      ASSIGN_OR_RAISE(auto out, LogBatch(b.bucket, tail_->schema(), std::move(*next)));
      if (out) return out;
    }
    if (!request_.follow) {
      done_ = true;
      return std::optional<UnionBatch>();
    }
    return NextFollowing(deadline);
  }

  // A read of `bucket`'s log from `from` to `to` (none: following), going to the lake for
  // offsets retention deletes meanwhile.
  Result<std::unique_ptr<engine::ReadCursor>> OpenTail(int32_t bucket, int64_t from,
                                                       std::optional<int64_t> to) {
    engine::ReadRequest request;
    request.table = table_.name;
    request.bucket = bucket;
    request.from.kind = engine::StartPosition::Kind::kOffset;
    request.from.offset = from;
    request.to = to;
    request.follow = !to;
    request.columns = read_columns_;
    if (IsLakeEnabled(table_)) return LakeBackedCursor::Make(engine_, lake_, table_, request);
    return engine_->OpenRead(request);
  }

  // Each bucket's new rows, taken in turn; none when `deadline` passes first.
  Result<std::optional<UnionBatch>> NextFollowing(std::chrono::steady_clock::time_point deadline) {
    using Clock = std::chrono::steady_clock;
    if (follow_.empty()) {
      for (const auto& b : buckets_) {
        ASSIGN_OR_RAISE(auto cursor, OpenTail(b.bucket, b.next_offset, std::nullopt));
        follow_.push_back(std::move(cursor));
      }
    }
    if (follow_.empty()) return std::optional<UnionBatch>();
    while (true) {
      // A look at every bucket, then a short wait on the next one, so no bucket waits long.
      for (size_t i = 0; i <= follow_.size(); ++i) {
        const size_t k = follow_turn_++ % follow_.size();
        const auto wait = i < follow_.size()
                              ? Clock::now()
                              : std::min(deadline, Clock::now() + std::chrono::milliseconds(5));
        ASSIGN_OR_RAISE(auto next, follow_[k]->Next(wait));
        if (!next) continue;
        ASSIGN_OR_RAISE(auto out,
                        LogBatch(follow_[k]->bucket(), follow_[k]->schema(), std::move(*next)));
        if (out) return out;
      }
      if (Clock::now() >= deadline) return std::optional<UnionBatch>();
    }
  }

  // A log batch as sent: filtered and projected, cut at the limit; none when no row passes.
  Result<std::optional<UnionBatch>> LogBatch(int32_t bucket, const arrow::SchemaPtr& schema,
                                             engine::ReadBatch read) {
    UnionBatch out;
    out.part = UnionBatch::Part::kLog;
    out.bucket = bucket;
    out.base_offset = read.base_offset;
    out.next_offset = read.next_offset;
    if (shaper_.passthrough() && read.next_offset - read.base_offset <= remaining_) {
      out.rows = read.next_offset - read.base_offset;
      out.message = std::move(read.message);
      return std::optional<UnionBatch>(std::move(out));
    }
    ASSIGN_OR_RAISE(auto batch, Decode(schema, read.message));
    std::vector<int32_t> rows = shaper_.Select(*batch, nullptr);
    if (rows.empty()) return std::optional<UnionBatch>();
    if (static_cast<int64_t>(rows.size()) > remaining_) {  // the limit ends inside this batch
      rows.resize(static_cast<size_t>(remaining_));
      out.next_offset = out.base_offset + rows.back() + 1;
    }
    ASSIGN_OR_RAISE(auto shaped, shaper_.Shape(*batch, rows));
    ASSIGN_OR_RAISE(out.message, Encode(*shaped));
    out.rows = shaped->num_rows();
    return std::optional<UnionBatch>(std::move(out));
  }

  // Primary-key tables, after the lake: the current rows of the keys changed after it.
  Result<std::optional<UnionBatch>> NextChanges() {
    while (change_index_ < change_batches_.size()) {
      const ChangeBatch& c = change_batches_[change_index_++];
      std::vector<int32_t> rows = shaper_.Select(*c.batch, &c.rows);
      if (rows.empty()) continue;
      if (static_cast<int64_t>(rows.size()) > remaining_) rows.resize(remaining_);
      ASSIGN_OR_RAISE(auto shaped, shaper_.Shape(*c.batch, rows));
      UnionBatch out;
      out.part = UnionBatch::Part::kChanges;
      out.bucket = c.bucket;
      out.base_offset = buckets_[c.bucket].lake_offset;
      out.next_offset = buckets_[c.bucket].next_offset;
      out.rows = shaped->num_rows();
      ASSIGN_OR_RAISE(out.message, Encode(*shaped));
      return std::optional<UnionBatch>(std::move(out));
    }
    done_ = true;
    return std::optional<UnionBatch>();
  }

  bool FileMayMatch(const iceberg::DataFile& f) const {
    for (const auto& p : shaper_.filter()) {
      const std::optional<int32_t> id = table_ids_[static_cast<size_t>(p.table_index)];
      if (!id) continue;  // not in the lake: every row reads null there
      if (!MayMatch(p, MapBound(f.lower_bounds, *id), MapBound(f.upper_bounds, *id))) {
        return false;
      }
    }
    return true;
  }

  bool RowGroupMayMatch(const parquet::RowGroup& rg, const FileColumns& in_file) const {
    for (const auto& p : shaper_.filter()) {
      const std::optional<int32_t> id = table_ids_[static_cast<size_t>(p.table_index)];
      const std::optional<int> leaf = id ? in_file.Leaf(*id) : std::nullopt;
      if (!leaf || static_cast<size_t>(*leaf) >= rg.columns.size()) continue;
      const auto& meta = rg.columns[*leaf].meta_data;
      if (!meta || !meta->statistics) continue;
      if (!MayMatch(p, meta->statistics->min_value, meta->statistics->max_value)) return false;
    }
    return true;
  }

  // The output rows of row group `g` of the open file, which starts at row `first_row`.
  Result<arrow::RecordBatchPtr> LakeRowGroup(int g, int64_t first_row) {
    ASSIGN_OR_RAISE(auto rows, ReadRowGroup(*file_, g, lake_columns_,
                                            primary_key_ ? key_ids_ : std::vector<int32_t>{}));
    if (shaper_.passthrough() && !primary_key_) return rows.batch;
    std::vector<int32_t> live;
    const std::vector<int32_t>* candidates = nullptr;
    if (primary_key_) {
      auto gone = deleted_.find(snapshot_.files[file_index_].file_path);
      for (int64_t r = 0; r < rows.batch->num_rows(); ++r) {
        if (gone != deleted_.end() && gone->second.count(first_row + r)) continue;
        if (changes_.count(KeyOf(rows.raw, r))) continue;  // changed after the snapshot
        live.push_back(static_cast<int32_t>(r));
      }
      candidates = &live;
    }
    return shaper_.Shape(*rows.batch, shaper_.Select(*rows.batch, candidates));
  }

  // The lake part's next non-empty row group (null at the end), read on its own thread. Only
  // that thread touches file_index_, file_, row_group_ and first_row_ while it runs.
  std::future<Result<arrow::RecordBatchPtr>> ReadAhead() {
    return std::async(std::launch::async, [this]() -> Result<arrow::RecordBatchPtr> {
      while (file_index_ < snapshot_.files.size()) {
        if (!file_) {
          if (!FileMayMatch(snapshot_.files[file_index_])) {
            ++files_skipped_;
            ++file_index_;
            continue;
          }
          ASSIGN_OR_RAISE(file_, OpenLakeFile(*lake_.fs, snapshot_.files[file_index_]));
          row_group_ = 0;
          first_row_ = 0;
        }
        if (row_group_ >= file_->num_row_groups()) {
          file_.reset();
          ++file_index_;
          continue;
        }
        const int g = row_group_++;
        const int64_t first_row = first_row_;
        first_row_ += file_->metadata().row_groups[g].num_rows;
        if (!RowGroupMayMatch(file_->metadata().row_groups[g], FileColumns(*file_->schema()))) {
          ++row_groups_skipped_;
          continue;
        }
        ASSIGN_OR_RAISE(auto batch, LakeRowGroup(g, first_row));
        if (batch->num_rows() > 0) return batch;
      }
      return arrow::RecordBatchPtr();
    });
  }

  // A changelog batch of a primary-key table and its rows that are their key's current row.
  struct ChangeBatch {
    int32_t bucket;
    arrow::RecordBatchPtr batch;  // the read's columns
    std::vector<int32_t> rows;
  };

  engine::Engine* engine_;
  LakeAccess lake_;
  catalog::TableDescriptor table_;
  UnionReadRequest request_;
  int64_t remaining_;  // rows the limit still allows
  const bool primary_key_;
  arrow::SchemaPtr schema_;
  std::optional<std::vector<std::string>> read_columns_;  // what log reads project
  RowShaper shaper_;
  LakeSnapshot snapshot_;
  std::vector<UnionBucket> buckets_;
  LakeColumns lake_columns_;
  std::vector<std::optional<int32_t>> table_ids_;  // lake field id per column of the table
  std::vector<int32_t> key_ids_;                   // primary-key tables: the key columns' ids
  // Primary-key tables.
  internal::LakeSchema lake_schema_;
  std::unordered_set<std::string> changes_;  // keys the changelog changed after the snapshot
  std::vector<ChangeBatch> change_batches_;
  size_t change_index_ = 0;
  std::unordered_map<std::string, std::unordered_set<int64_t>> deleted_;  // by data file path
  // The lake part.
  size_t file_index_ = 0;
  std::unique_ptr<parquet::FileReader> file_;
  int row_group_ = 0;
  int64_t first_row_ = 0;  // of row_group_ in its file
  std::atomic<int64_t> files_skipped_{0};
  std::atomic<int64_t> row_groups_skipped_{0};
  arrow::RecordBatchPtr row_group_batch_;  // being sent, kSendRows at a time
  int64_t sent_rows_ = 0;
  bool lake_done_ = false;
  // The log part.
  size_t bucket_index_ = 0;
  std::unique_ptr<engine::ReadCursor> tail_;
  std::vector<std::unique_ptr<engine::ReadCursor>> follow_;
  size_t follow_turn_ = 0;
  bool done_ = false;
  // Declared last, so destroyed (waited for) before what its thread uses.
  std::future<Result<arrow::RecordBatchPtr>> next_row_group_;
};

}  // namespace

Result<std::unique_ptr<engine::ReadCursor>> OpenLogRead(engine::Engine* engine,
                                                        const LakeAccess& lake,
                                                        const engine::ReadRequest& request) {
  auto cursor = engine->OpenRead(request);
  if (cursor.ok() || !cursor.status().IsOutOfRange() ||
      request.from.kind != engine::StartPosition::Kind::kOffset) {
    return cursor;
  }
  ASSIGN_OR_RAISE(auto status, engine->DescribeTable(request.table));
  const auto& table = status.table;
  const bool in_lake = table.primary_key.empty() ? IsLakeEnabled(table) : HasChangelogLake(table);
  if (!in_lake || request.bucket >= table.buckets ||
      request.from.offset >= status.buckets[request.bucket].earliest_offset) {
    return cursor;  // not a read of offsets retention deleted from a log the lake holds
  }
  return LakeBackedCursor::Make(engine, lake, table, request);
}

Result<std::unique_ptr<UnionReader>> OpenUnionRead(engine::Engine* engine, const LakeAccess& lake,
                                                   const UnionReadRequest& request) {
  ASSIGN_OR_RAISE(auto status, engine->DescribeTable(request.table));
  auto reader = std::make_unique<UnionReaderImpl>(engine, lake, std::move(status.table), request);
  RETURN_NOT_OK(reader->Open());
  return std::unique_ptr<UnionReader>(std::move(reader));
}

}  // namespace oxbow::lake
