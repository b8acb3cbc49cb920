#include <algorithm>

#include "oxbow/arrow/compute.h"
#include "oxbow/lake/lake.h"
#include "oxbow/lake/lake_scan_internal.h"

namespace oxbow::lake {

Result<LakeSnapshot> LoadSnapshot(const LakeAccess& lake, const catalog::TableDescriptor& table,
                                  bool changelog) {
  LakeSnapshot out;
  out.tiered_offsets.assign(static_cast<size_t>(table.buckets), 0);
  const auto dot = table.name.find('.');
  auto loaded = iceberg::IcebergTable::Load(
      lake.fs, lake.catalog,
      {table.name.substr(0, dot),
       table.name.substr(dot + 1) + (changelog ? std::string(kChangelogSuffix) : "")});
  if (loaded.status().IsNotFound()) return out;
  ASSIGN_OR_RAISE(auto iceberg_table, std::move(loaded));
  if (iceberg_table->metadata().Property(internal::kTableIdProperty, "") !=
      std::to_string(table.table_id)) {
    return out;
  }
  out.schema = iceberg_table->schema();
  const iceberg::Snapshot* snapshot = iceberg_table->CurrentSnapshot();
  if (snapshot == nullptr) return out;
  out.id = snapshot->snapshot_id;
  ASSIGN_OR_RAISE(out.tiered_offsets,
                  internal::SummaryOffsets(*iceberg_table, out.tiered_offsets.size()));
  ASSIGN_OR_RAISE(auto entries, iceberg_table->LiveEntries());
  for (auto& e : entries) {
    if (e.data_file.content == iceberg::FileContent::kData) {
      out.files.push_back(std::move(e.data_file));
    } else if (e.data_file.content == iceberg::FileContent::kPositionDeletes) {
      out.delete_files.push_back(std::move(e.data_file));
    }
  }
  return out;
}

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

bool MayOverlap(std::optional<int64_t> lo, std::optional<int64_t> hi, int64_t from, int64_t to) {
  return (!hi || *hi >= from) && (!lo || *lo < to);
}

Result<std::vector<std::optional<int32_t>>> TableFieldIds(const catalog::TableDescriptor& table,
                                                          const LakeSnapshot& snapshot) {
  if (!snapshot.schema) {
    return std::vector<std::optional<int32_t>>(static_cast<size_t>(table.schema->num_fields()));
  }
  return internal::LakeFieldIds(table, *snapshot.schema);
}

Result<LakeColumns> MakeLakeColumns(const catalog::TableDescriptor& table, arrow::SchemaPtr schema,
                                    const LakeSnapshot& snapshot) {
  LakeColumns out;
  ASSIGN_OR_RAISE(auto table_ids, TableFieldIds(table, snapshot));
  std::vector<std::vector<std::optional<int32_t>>> child_ids;
  if (snapshot.schema) {
    ASSIGN_OR_RAISE(child_ids, internal::LakeChildFieldIds(table, *snapshot.schema));
  }
  for (const auto& field : schema->fields()) {
    const int i = table.schema->GetFieldIndex(field.name);
    out.ids.push_back(i < 0 ? std::nullopt : table_ids[static_cast<size_t>(i)]);
    if (i < 0 && field.name == internal::kChangeTypeColumn && snapshot.schema) {
      // A changelog read served by the changelog lake table, which has the column too.
      if (const iceberg::NestedField* f = snapshot.schema->FindField(field.name)) {
        out.ids.back() = f->id;
      }
    }
    catalog::ChildIds lake_ids;  // a nested field the lake does not hold yet: -1, in no file
    if (i >= 0 && static_cast<size_t>(i) < child_ids.size()) {
      for (const auto& id : child_ids[static_cast<size_t>(i)]) lake_ids.push_back(id ? *id : -1);
    }
    out.id_types.push_back(lake_ids.empty() ? field.type
                                            : catalog::WithChildIds(field.type, lake_ids));
  }
  out.schema = std::move(schema);
  if (snapshot.schema) {
    auto id = [&](const char* name) -> Result<int32_t> {
      const iceberg::NestedField* f = snapshot.schema->FindField(name);
      if (f == nullptr) return Status::Corruption(std::string("the lake schema has no ") + name);
      return f->id;
    };
    ASSIGN_OR_RAISE(out.bucket_field_id, id(internal::kBucketColumn));
    ASSIGN_OR_RAISE(out.offset_field_id, id(internal::kOffsetColumn));
    ASSIGN_OR_RAISE(out.timestamp_field_id, id(internal::kTimestampColumn));
  }
  return out;
}

int LeafCount(const arrow::DataType& t) {
  if (!t.is_nested()) return 1;
  int n = 0;
  for (const auto& c : t.children()) n += LeafCount(c.type);
  return n;
}

Result<LakeRows> ReadRowGroup(const parquet::FileReader& file, int g, const LakeColumns& columns,
                              const std::vector<int32_t>& raw) {
  const FileColumns in_file(*file.schema());
  std::vector<int> read;
  auto position = [&](int index) {
    auto found = std::find(read.begin(), read.end(), index);
    if (found == read.end()) read.push_back(index);
    return static_cast<int>(std::find(read.begin(), read.end(), index) - read.begin());
  };
  std::vector<int> at;  // per output column: its position in `read`, or -1
  for (const auto& id : columns.ids) {
    const std::optional<int> index = id ? in_file.Field(*id) : std::nullopt;
    at.push_back(index ? position(*index) : -1);
  }
  std::vector<int> raw_at;
  for (int32_t id : raw) {
    const std::optional<int> index = in_file.Field(id);
    if (!index) {
      return Status::Corruption("lake data file has no column of field id " + std::to_string(id));
    }
    raw_at.push_back(position(*index));
  }
  if (read.empty()) read.push_back(0);  // still needs the row count
  ASSIGN_OR_RAISE(auto batch, file.ReadRowGroup(g, read));
  const auto& fields = columns.schema->fields();
  std::vector<arrow::Array> arrays;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (at[i] < 0) {
      ASSIGN_OR_RAISE(auto nulls, arrow::MakeNullArray(fields[i].type, batch->num_rows()));
      arrays.push_back(std::move(nulls));
      continue;
    }
    // By the lake's nested field ids first, then to the table's type (without them).
    auto by_id = arrow::Cast(batch->column(at[i]), columns.id_types[i]);
    auto cast = by_id.ok() ? arrow::Cast(*by_id, fields[i].type) : by_id;
    if (!cast.ok()) return cast.status().WithContext("column " + Quote(fields[i].name));
    arrays.push_back(std::move(cast).ValueOrDie());
  }
  LakeRows out;
  ASSIGN_OR_RAISE(out.batch,
                  arrow::RecordBatch::Make(columns.schema, batch->num_rows(), std::move(arrays)));
  for (int a : raw_at) out.raw.push_back(batch->column(a));
  return out;
}

Result<std::unique_ptr<parquet::FileReader>> OpenLakeFile(FileSystem& fs,
                                                          const iceberg::DataFile& file) {
  return parquet::FileReader::Open(fs, iceberg::LocalPath(file.file_path));
}

Result<std::vector<std::optional<int64_t>>> EarliestLakeOffsets(
    const LakeAccess& lake, const catalog::TableDescriptor& table,
    const std::vector<std::optional<int64_t>>& known) {
  ASSIGN_OR_RAISE(auto snapshot, LoadSnapshot(lake, table));
  ASSIGN_OR_RAISE(
      const LakeColumns columns,
      MakeLakeColumns(table, std::make_shared<const arrow::Schema>(std::vector<arrow::Field>{}),
                      snapshot));
  std::vector<std::optional<int64_t>> out(static_cast<size_t>(table.buckets));
  for (int32_t b = 0; b < table.buckets; ++b) {
    const auto i = static_cast<size_t>(b);
    if (i < known.size() && known[i]) {
      out[i] = known[i];
      continue;
    }
    const int64_t tiered = snapshot.tiered_offsets[i];  // the lake holds offsets below it
    // The lowest offset bound of the files that may hold the bucket: the search starts there.
    std::optional<int64_t> from;
    for (const auto& f : snapshot.files) {
      if (!MayOverlap(IntBound(MapBound(f.lower_bounds, columns.bucket_field_id), 4),
                      IntBound(MapBound(f.upper_bounds, columns.bucket_field_id), 4), b,
                      int64_t{b} + 1)) {
        continue;
      }
      const int64_t lo = IntBound(MapBound(f.lower_bounds, columns.offset_field_id), 8).value_or(0);
      from = from ? std::min(*from, lo) : lo;
    }
    if (!from || *from >= tiered) continue;
    LakeRangeReader reader(lake.fs, snapshot, columns, b, *from, tiered);
    ASSIGN_OR_RAISE(auto run, reader.Next());
    if (run) out[i] = run->base_offset;
  }
  return out;
}

}  // namespace oxbow::lake
