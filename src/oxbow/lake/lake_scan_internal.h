// Reading a lake table's files as of one snapshot: its data files, their columns by field id,
// and a bucket's rows in offset order (LakeRangeReader). Internal to the lake module.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oxbow/common/civil_time.h"
#include "oxbow/iceberg/table.h"
#include "oxbow/lake/lake_read.h"
#include "oxbow/lake/lake_schema_internal.h"
#include "oxbow/parquet/reader.h"

namespace oxbow::lake {

// A read of old offsets gathers this many offsets at a time, then sends them in order.
inline constexpr int64_t kWindowOffsets = int64_t{1} << 18;

// Leaves (Parquet column chunks) of a column of type `t`.
int LeafCount(const arrow::DataType& t);

// A table's lake as of one snapshot: its data files and the offsets tiered into it.
struct LakeSnapshot {
  std::optional<int64_t> id;            // none: the lake holds nothing yet
  std::vector<int64_t> tiered_offsets;  // per bucket: the snapshot holds the offsets below
  std::vector<iceberg::DataFile> files;
  std::vector<iceberg::DataFile> delete_files;  // position deletes (primary-key tables)
  std::optional<iceberg::Schema> schema;        // the lake's current schema (none: no lake)
};

// The lake's columns read back as the table's: the (projected) log schema, and the lake field id
// of each of its columns. Files written before a column change hold other columns: each file's
// columns are found by field id, so a renamed column is read under its new name, a widened one
// is cast, and one added since (or not in the lake yet) reads as null (docs/lake.md).
struct LakeColumns {
  arrow::SchemaPtr schema;                  // the output, in the table's types
  std::vector<std::optional<int32_t>> ids;  // per output column (none: not in the lake)
  // Per output column: its type with its nested fields' lake ids, which files are read by.
  std::vector<arrow::DataType> id_types;
  int32_t bucket_field_id = 0;
  int32_t offset_field_id = 0;
  int32_t timestamp_field_id = 0;
};

// Where a data file holds each top-level field id: its field index and its first column chunk.
struct FileColumns {
  std::map<int32_t, std::pair<int, int>> by_id;  // field id -> (field index, first leaf)
  explicit FileColumns(const arrow::Schema& schema) {
    int leaf = 0;
    for (int c = 0; c < schema.num_fields(); ++c) {
      if (auto id = internal::FieldIdOf(schema.field(c))) by_id[*id] = {c, leaf};
      leaf += LeafCount(schema.field(c).type);
    }
  }
  std::optional<int> Field(int32_t id) const {
    auto it = by_id.find(id);
    if (it == by_id.end()) return std::nullopt;
    return it->second.first;
  }
  std::optional<int> Leaf(int32_t id) const {
    auto it = by_id.find(id);
    if (it == by_id.end()) return std::nullopt;
    return it->second.second;
  }
};

// One row group of a data file read back.
struct LakeRows {
  arrow::RecordBatchPtr batch;    // the output columns, in the table's types
  std::vector<arrow::Array> raw;  // the lake columns asked for as they are
};

// The current snapshot of `table`'s lake, or with `changelog` of its changelog lake table
// (<table>$changelog). A lake without metadata, or one left behind by a dropped table of the
// same name, is empty.
Result<LakeSnapshot> LoadSnapshot(const LakeAccess& lake, const catalog::TableDescriptor& table,
                                  bool changelog = false);

// A little-endian integer bound (Iceberg single-value or Parquet PLAIN statistics) of `size`
// bytes; nullopt when absent or malformed.
std::optional<int64_t> IntBound(const std::optional<std::string>& bytes, size_t size);

std::optional<std::string> MapBound(const std::map<int32_t, std::string>& bounds, int32_t id);

// Whether [lo, hi] (either unknown: unbounded) may hold a value in [from, to).
bool MayOverlap(std::optional<int64_t> lo, std::optional<int64_t> hi, int64_t from, int64_t to);

// The lake field id of each column of the table's current schema (none for all without a lake).
Result<std::vector<std::optional<int32_t>>> TableFieldIds(const catalog::TableDescriptor& table,
                                                          const LakeSnapshot& snapshot);

Result<LakeColumns> MakeLakeColumns(const catalog::TableDescriptor& table, arrow::SchemaPtr schema,
                                    const LakeSnapshot& snapshot);

// Reads row group `g`: the columns of `columns` cast to the table's types (null where the file
// lacks them), plus the lake columns of field ids `raw` uncast (the file must hold them).
Result<LakeRows> ReadRowGroup(const parquet::FileReader& file, int g, const LakeColumns& columns,
                              const std::vector<int32_t>& raw);

Result<std::unique_ptr<parquet::FileReader>> OpenLakeFile(FileSystem& fs,
                                                          const iceberg::DataFile& file);

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

  bool RowGroupMayHold(const parquet::RowGroup& rg, const FileColumns& in_file, int64_t from,
                       int64_t to) const {
    auto stats = [&](int32_t id) -> const parquet::Statistics* {
      const std::optional<int> column = in_file.Leaf(id);
      if (!column || static_cast<size_t>(*column) >= rg.columns.size()) return nullptr;
      const auto& meta = rg.columns[*column].meta_data;
      return meta && meta->statistics ? &*meta->statistics : nullptr;
    };
    const auto* b = stats(columns_.bucket_field_id);
    const auto* o = stats(columns_.offset_field_id);
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
      ASSIGN_OR_RAISE(auto file, OpenLakeFile(*fs_, f));
      const FileColumns in_file(*file->schema());
      for (int g = 0; g < file->num_row_groups(); ++g) {
        if (!RowGroupMayHold(file->metadata().row_groups[g], in_file, from, to)) continue;
        ASSIGN_OR_RAISE(auto rows, ReadRowGroup(*file, g, columns_,
                                                {columns_.bucket_field_id, columns_.offset_field_id,
                                                 columns_.timestamp_field_id}));
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
    const int32_t* buckets = rows.raw[0].values<int32_t>();
    const int64_t* offsets = rows.raw[1].values<int64_t>();
    const int64_t* micros = rows.raw[2].values<int64_t>();
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

}  // namespace oxbow::lake
