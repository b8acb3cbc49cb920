#include "oxbow/lake/lake_read.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <type_traits>

#include "oxbow/arrow/compute.h"
#include "oxbow/common/civil_time.h"
#include "oxbow/iceberg/table.h"
#include "oxbow/lake/lake.h"
#include "oxbow/lake/lake_table_internal.h"
#include "oxbow/parquet/reader.h"

namespace oxbow::lake {
namespace {

// A read of old offsets gathers this many offsets at a time, then sends them in order.
constexpr int64_t kWindowOffsets = int64_t{1} << 18;
// Rows of one message of a union read's lake part.
constexpr int64_t kSendRows = 64 * 1024;

// A table's lake as of one snapshot: its data files and the offsets tiered into it.
struct LakeSnapshot {
  std::optional<int64_t> id;            // none: the lake holds nothing yet
  std::vector<int64_t> tiered_offsets;  // per bucket: the snapshot holds the offsets below
  std::vector<iceberg::DataFile> files;
};

// The current snapshot of `table`'s lake. A lake without metadata, or one left behind by a
// dropped table of the same name, is empty.
Result<LakeSnapshot> LoadSnapshot(const LakeAccess& lake, const catalog::TableDescriptor& table) {
  LakeSnapshot out;
  out.tiered_offsets.assign(static_cast<size_t>(table.buckets), 0);
  const auto dot = table.name.find('.');
  auto loaded = iceberg::IcebergTable::Load(
      lake.fs, lake.catalog, {table.name.substr(0, dot), table.name.substr(dot + 1)});
  if (loaded.status().IsNotFound()) return out;
  ASSIGN_OR_RAISE(auto iceberg_table, std::move(loaded));
  if (iceberg_table->metadata().Property(internal::kTableIdProperty, "") !=
      std::to_string(table.table_id)) {
    return out;
  }
  const iceberg::Snapshot* snapshot = iceberg_table->CurrentSnapshot();
  if (snapshot == nullptr) return out;
  out.id = snapshot->snapshot_id;
  ASSIGN_OR_RAISE(out.tiered_offsets,
                  internal::TieredOffsets(*iceberg_table, out.tiered_offsets.size()));
  ASSIGN_OR_RAISE(auto entries, iceberg_table->LiveEntries());
  for (auto& e : entries) {
    if (e.data_file.content == iceberg::FileContent::kData) {
      out.files.push_back(std::move(e.data_file));
    }
  }
  return out;
}

// A little-endian integer bound (Iceberg single-value or Parquet PLAIN statistics) of `size`
// bytes; nullopt when absent or malformed.
std::optional<int64_t> IntBound(const std::optional<std::string>& bytes, size_t size) {
  if (!bytes || bytes->size() != size) return std::nullopt;
  if (size == 4) {
    int32_t v;
    std::memcpy(&v, bytes->data(), 4);
    return v;
  }
  int64_t v;
  std::memcpy(&v, bytes->data(), 8);
  return v;
}

std::optional<std::string> MapBound(const std::map<int32_t, std::string>& bounds, int32_t id) {
  auto it = bounds.find(id);
  if (it == bounds.end()) return std::nullopt;
  return it->second;
}

// Whether [lo, hi] (either unknown: unbounded) may hold a value in [from, to).
bool MayOverlap(std::optional<int64_t> lo, std::optional<int64_t> hi, int64_t from, int64_t to) {
  return (!hi || *hi >= from) && (!lo || *lo < to);
}

// The lake's columns read back as the table's: the (projected) log schema, and which lake
// columns to read for it. Lake files share one schema, so indices hold for every file.
struct LakeColumns {
  arrow::SchemaPtr schema;  // the output, in the table's types
  std::vector<int> lake_indices;
  int bucket_index = 0;  // of __bucket in a lake file; __offset and __timestamp follow
  int32_t bucket_field_id = 0;
  int32_t offset_field_id = 0;
};

LakeColumns MakeLakeColumns(const catalog::TableDescriptor& table, arrow::SchemaPtr schema) {
  LakeColumns out;
  for (const auto& field : schema->fields()) {
    out.lake_indices.push_back(table.schema->GetFieldIndex(field.name));
  }
  out.schema = std::move(schema);
  const int n = table.schema->num_fields();
  out.bucket_index = n;         // system columns follow the table's (lake_table_internal.h)
  out.bucket_field_id = n + 1;  // field ids are 1-based
  out.offset_field_id = n + 2;
  return out;
}

// One row group of a data file read back.
struct LakeRows {
  arrow::RecordBatchPtr batch;  // the output columns, in the table's types
  // __bucket, __offset and __timestamp, when asked for.
  arrow::Array buckets;
  arrow::Array offsets;
  arrow::Array timestamps;
};

Result<LakeRows> ReadRowGroup(const parquet::FileReader& file, int g, const LakeColumns& columns,
                              bool with_offsets) {
  std::vector<int> read = columns.lake_indices;
  const int k = static_cast<int>(read.size());
  if (with_offsets || read.empty()) {  // an empty projection still needs the row count
    for (int i = 0; i < 3; ++i) read.push_back(columns.bucket_index + i);
  }
  ASSIGN_OR_RAISE(auto batch, file.ReadRowGroup(g, read));
  const auto& fields = columns.schema->fields();
  std::vector<arrow::Array> arrays;
  for (int i = 0; i < k; ++i) {
    auto cast = arrow::Cast(batch->column(i), fields[i].type);
    if (!cast.ok()) return cast.status().WithContext("column " + Quote(fields[i].name));
    arrays.push_back(std::move(cast).ValueOrDie());
  }
  LakeRows out;
  ASSIGN_OR_RAISE(out.batch,
                  arrow::RecordBatch::Make(columns.schema, batch->num_rows(), std::move(arrays)));
  if (with_offsets) {
    out.buckets = batch->column(k);
    out.offsets = batch->column(k + 1);
    out.timestamps = batch->column(k + 2);
  }
  return out;
}

Result<std::unique_ptr<parquet::FileReader>> OpenDataFile(FileSystem& fs,
                                                          const iceberg::DataFile& file) {
  return parquet::FileReader::Open(fs, iceberg::LocalPath(file.file_path));
}

// Rows of one bucket's offsets [from, to) in the lake, in offset order, as runs of consecutive
// offsets. Files and row groups whose bounds exclude the range are skipped.
class LakeRangeReader {
 public:
  struct Run {
    arrow::RecordBatchPtr batch;  // the output columns
    int64_t base_offset = 0;
    int64_t next_offset = 0;
    int64_t append_time_ms = 0;  // __timestamp
  };

  LakeRangeReader(std::shared_ptr<FileSystem> fs, LakeSnapshot snapshot, LakeColumns columns,
                  int32_t bucket, int64_t from, int64_t to)
      : fs_(std::move(fs)),
        snapshot_(std::move(snapshot)),
        columns_(std::move(columns)),
        bucket_(bucket),
        window_(from),
        to_(to) {}

  // The next run; nullopt when the range is done.
  Result<std::optional<Run>> Next() {
    while (runs_index_ >= runs_.size()) {
      if (window_ >= to_) return std::optional<Run>();
      RETURN_NOT_OK(GatherWindow(window_, std::min(to_, window_ + kWindowOffsets)));
      window_ = std::min(to_, window_ + kWindowOffsets);
    }
    return std::optional<Run>(std::move(runs_[runs_index_++]));
  }

 private:
  bool FileMayHold(const iceberg::DataFile& f, int64_t from, int64_t to) const {
    return MayOverlap(IntBound(MapBound(f.lower_bounds, columns_.bucket_field_id), 4),
                      IntBound(MapBound(f.upper_bounds, columns_.bucket_field_id), 4), bucket_,
                      int64_t{bucket_} + 1) &&
           MayOverlap(IntBound(MapBound(f.lower_bounds, columns_.offset_field_id), 8),
                      IntBound(MapBound(f.upper_bounds, columns_.offset_field_id), 8), from, to);
  }

  bool RowGroupMayHold(const parquet::RowGroup& rg, int64_t from, int64_t to) const {
    auto stats = [&](int column) -> const parquet::Statistics* {
      if (static_cast<size_t>(column) >= rg.columns.size()) return nullptr;
      const auto& meta = rg.columns[column].meta_data;
      return meta && meta->statistics ? &*meta->statistics : nullptr;
    };
    const auto* b = stats(columns_.bucket_index);
    const auto* o = stats(columns_.bucket_index + 1);
    const bool bucket_ok =
        b == nullptr || MayOverlap(IntBound(b->min_value, 4), IntBound(b->max_value, 4), bucket_,
                                   int64_t{bucket_} + 1);
    const bool offset_ok =
        o == nullptr || MayOverlap(IntBound(o->min_value, 8), IntBound(o->max_value, 8), from, to);
    return bucket_ok && offset_ok;
  }

  // Collects the runs of [from, to) from every file that may hold some, sorted by offset.
  Status GatherWindow(int64_t from, int64_t to) {
    runs_.clear();
    runs_index_ = 0;
    for (const auto& f : snapshot_.files) {
      if (!FileMayHold(f, from, to)) continue;
      ASSIGN_OR_RAISE(auto file, OpenDataFile(*fs_, f));
      for (int g = 0; g < file->num_row_groups(); ++g) {
        if (!RowGroupMayHold(file->metadata().row_groups[g], from, to)) continue;
        ASSIGN_OR_RAISE(auto rows, ReadRowGroup(*file, g, columns_, /*with_offsets=*/true));
        RETURN_NOT_OK(CollectRuns(rows, from, to));
      }
    }
    std::sort(runs_.begin(), runs_.end(),
              [](const Run& a, const Run& b) { return a.base_offset < b.base_offset; });
    for (size_t i = 1; i < runs_.size(); ++i) {
      if (runs_[i].base_offset < runs_[i - 1].next_offset) {
        return Status::Corruption("the lake holds offset " + std::to_string(runs_[i].base_offset) +
                                  " of bucket " + std::to_string(bucket_) + " more than once");
      }
    }
    return Status::OK();
  }

  // Splits the rows of this bucket in [from, to) into runs of consecutive offsets appended
  // at the same time (so, mostly, the log's own batches).
  Status CollectRuns(const LakeRows& rows, int64_t from, int64_t to) {
    const int32_t* buckets = rows.buckets.values<int32_t>();
    const int64_t* offsets = rows.offsets.values<int64_t>();
    const int64_t* micros = rows.timestamps.values<int64_t>();
    auto selected = [&](int64_t row) {
      return buckets[row] == bucket_ && offsets[row] >= from && offsets[row] < to;
    };
    int64_t row = 0;
    const int64_t n = rows.batch->num_rows();
    while (row < n) {
      if (!selected(row)) {
        ++row;
        continue;
      }
      int64_t end = row + 1;
      while (end < n && selected(end) && offsets[end] == offsets[end - 1] + 1 &&
             micros[end] == micros[row]) {
        ++end;
      }
      runs_.push_back({rows.batch->Slice(row, end - row), offsets[row], offsets[end - 1] + 1,
                       FloorDiv(micros[row], 1000)});
      row = end;
    }
    return Status::OK();
  }

  std::shared_ptr<FileSystem> fs_;
  LakeSnapshot snapshot_;
  LakeColumns columns_;
  int32_t bucket_;
  int64_t window_;  // the next window starts here
  int64_t to_;
  std::vector<Run> runs_;
  size_t runs_index_ = 0;
};

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
      ASSIGN_OR_RAISE(auto snapshot, LoadSnapshot(lake_access_, table_));
      lake_ = std::make_unique<LakeRangeReader>(lake_access_.fs, std::move(snapshot),
                                                MakeLakeColumns(table_, schema_), request_.bucket,
                                                position_, lake_end_);
    }
  }

  LakeBackedCursor(engine::Engine* engine, const LakeAccess& lake, catalog::TableDescriptor table)
      : engine_(engine), lake_access_(lake), table_(std::move(table)) {}

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

class UnionReaderImpl : public UnionReader {
 public:
  UnionReaderImpl(engine::Engine* engine, LakeAccess lake, catalog::TableDescriptor table,
                  std::optional<std::vector<std::string>> columns, std::optional<int64_t> limit)
      : engine_(engine),
        lake_(std::move(lake)),
        table_(std::move(table)),
        columns_(std::move(columns)),
        remaining_(limit.value_or(INT64_MAX)) {}

  Status Open() {
    const bool in_lake = IsLakeEnabled(table_);
    if (in_lake) {
      ASSIGN_OR_RAISE(snapshot_, LoadSnapshot(lake_, table_));
    }
    // The log's ends are taken after the snapshot: its tiered offsets are at or below them.
    ASSIGN_OR_RAISE(auto status, engine_->DescribeTable(table_.name));
    for (const auto& b : status.buckets) {
      const int64_t from = in_lake ? snapshot_.tiered_offsets[b.bucket] : b.earliest_offset;
      buckets_.push_back({b.bucket, from, std::max(from, b.next_offset)});
    }
    ASSIGN_OR_RAISE(schema_, ReadSchema(engine_, table_.name, columns_));
    lake_columns_ = MakeLakeColumns(table_, schema_);
    return Status::OK();
  }

  const arrow::SchemaPtr& schema() const override { return schema_; }
  std::optional<int64_t> snapshot_id() const override { return snapshot_.id; }
  const std::vector<UnionBucket>& buckets() const override { return buckets_; }

  Result<std::optional<UnionBatch>> Next() override {
    if (remaining_ == 0) return std::optional<UnionBatch>();
    ASSIGN_OR_RAISE(auto next, NextUnlimited());
    if (next) remaining_ -= next->rows;
    return next;
  }

 private:
  Result<std::optional<UnionBatch>> NextUnlimited() {
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
    // Then each bucket's offsets after the snapshot.
    while (bucket_index_ < buckets_.size()) {
      const UnionBucket& b = buckets_[bucket_index_];
      if (!tail_) {
        if (b.lake_offset >= b.next_offset) {
          ++bucket_index_;
          continue;
        }
        engine::ReadRequest request;
        request.table = table_.name;
        request.bucket = b.bucket;
        request.from.kind = engine::StartPosition::Kind::kOffset;
        request.from.offset = b.lake_offset;
        request.to = b.next_offset;
        request.columns = columns_;
        if (IsLakeEnabled(table_)) {  // retention may overtake the read: the lake has the rest
          ASSIGN_OR_RAISE(tail_, LakeBackedCursor::Make(engine_, lake_, table_, request));
        } else {
          ASSIGN_OR_RAISE(tail_, engine_->OpenRead(request));
        }
      }
      ASSIGN_OR_RAISE(auto next, tail_->Next(std::chrono::steady_clock::now()));
      if (!next) {
        tail_.reset();
        ++bucket_index_;
        continue;
      }
      UnionBatch out;
      out.rows = next->next_offset - next->base_offset;
      out.message = std::move(next->message);
      out.bucket = b.bucket;
      out.base_offset = next->base_offset;
      out.next_offset = next->next_offset;
      if (out.rows > remaining_) {  // the limit ends inside this batch: send its first rows
        ASSIGN_OR_RAISE(auto body, out.message.BodyAsBuffer());
        ASSIGN_OR_RAISE(auto raw, arrow::ipc::ParseMessage(out.message.metadata, body));
        ASSIGN_OR_RAISE(auto batch, arrow::ipc::DecodeRecordBatch(schema_, raw));
        ASSIGN_OR_RAISE(out.message, Encode(*batch->Slice(0, remaining_)));
        out.rows = remaining_;
        out.next_offset = out.base_offset + remaining_;
      }
      return std::optional<UnionBatch>(std::move(out));
    }
    return std::optional<UnionBatch>();
  }

  // The lake part's next non-empty row group (null at the end), read on its own thread. Only
  // that thread touches file_index_, file_ and row_group_ while it runs.
  std::future<Result<arrow::RecordBatchPtr>> ReadAhead() {
    return std::async(std::launch::async, [this]() -> Result<arrow::RecordBatchPtr> {
      while (file_index_ < snapshot_.files.size()) {
        if (!file_) {
          ASSIGN_OR_RAISE(file_, OpenDataFile(*lake_.fs, snapshot_.files[file_index_]));
          row_group_ = 0;
        }
        if (row_group_ >= file_->num_row_groups()) {
          file_.reset();
          ++file_index_;
          continue;
        }
        ASSIGN_OR_RAISE(auto rows, ReadRowGroup(*file_, row_group_++, lake_columns_,
                                                /*with_offsets=*/false));
        if (rows.batch->num_rows() > 0) return rows.batch;
      }
      return arrow::RecordBatchPtr();
    });
  }

  engine::Engine* engine_;
  LakeAccess lake_;
  catalog::TableDescriptor table_;
  std::optional<std::vector<std::string>> columns_;
  int64_t remaining_;  // rows the limit still allows
  LakeSnapshot snapshot_;
  std::vector<UnionBucket> buckets_;
  arrow::SchemaPtr schema_;
  LakeColumns lake_columns_;
  size_t file_index_ = 0;
  std::unique_ptr<parquet::FileReader> file_;
  int row_group_ = 0;
  arrow::RecordBatchPtr row_group_batch_;  // being sent, kSendRows at a time
  int64_t sent_rows_ = 0;
  bool lake_done_ = false;
  size_t bucket_index_ = 0;
  std::unique_ptr<engine::ReadCursor> tail_;
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
  if (!table.primary_key.empty() || !IsLakeEnabled(table) || request.bucket >= table.buckets ||
      request.from.offset >= status.buckets[request.bucket].earliest_offset) {
    return cursor;  // not a read of offsets retention deleted from a lake table's log
  }
  return LakeBackedCursor::Make(engine, lake, table, request);
}

Result<std::unique_ptr<UnionReader>> OpenUnionRead(engine::Engine* engine, const LakeAccess& lake,
                                                   const UnionReadRequest& request) {
  ASSIGN_OR_RAISE(auto status, engine->DescribeTable(request.table));
  if (!status.table.primary_key.empty()) {
    return Status::Invalid("table " + Quote(request.table) +
                           " has a primary key: union reads serve log tables (read a "
                           "primary-key table's current rows with a \"snapshot\" ticket)");
  }
  auto reader = std::make_unique<UnionReaderImpl>(engine, lake, std::move(status.table),
                                                  request.columns, request.limit);
  RETURN_NOT_OK(reader->Open());
  return std::unique_ptr<UnionReader>(std::move(reader));
}

}  // namespace oxbow::lake
