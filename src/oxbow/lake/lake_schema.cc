#include <algorithm>
#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "oxbow/arrow/builder.h"
#include "oxbow/arrow/compute.h"
#include "oxbow/lake/lake.h"
#include "oxbow/lake/lake_schema_internal.h"

namespace oxbow::lake::internal {
namespace {

using arrow::DataType;
using arrow::TypeId;

constexpr char kFieldIdKey[] = "PARQUET:field_id";

Result<DataType> LakeType(const arrow::Field& field) {
  // Refuses what Iceberg or Parquet cannot hold: uint64, decimals with a scale outside
  // [0, precision], zero-width fixed_size_binary. Nested types get their children's ids (and
  // are checked) by NestedLakeType.
  if (field.type.is_nested()) return field.type;
  if (auto mapped = iceberg::TypeFromArrow(field.type); !mapped.ok()) {
    return Status::Invalid("column " + Quote(field.name) + ": " + mapped.status().message() +
                           " (a table with lake.enabled=false may hold it)");
  }
  const DataType& t = field.type;
  switch (t.id()) {
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kUInt8:
    case TypeId::kUInt16: return DataType::Int32();
    case TypeId::kUInt32: return DataType::Int64();
    case TypeId::kTimestamp: return DataType::Timestamp(arrow::TimeUnit::kMicro, t.timezone());
    default: return t;
  }
}

// A nested column's lake type: the log's type with a PARQUET:field_id on every child (list
// element, map key and value, struct field), taken from `ids` (in pre-order, as
// catalog::ChildIds) from *next, children in their lake types (int8 as int32, timestamps in
// microseconds, ...) and a fixed_size_list as a list (Iceberg has none); tiering casts the values
// (arrow::Cast) and reads cast them back.
Result<DataType> NestedLakeType(const std::string& column, const DataType& t,
                                const std::vector<int32_t>& ids, size_t* next) {
  std::vector<arrow::Field> children;
  for (const arrow::Field& c : t.children()) {
    arrow::Field out = c;
    if (t.id() == TypeId::kMap) {
      // The entries struct has no id of its own; its key and value do.
      ASSIGN_OR_RAISE(out.type, NestedLakeType(column, c.type, ids, next));
      children.push_back(std::move(out));
      continue;
    }
    if (*next >= ids.size()) {
      return Status::Corruption("column " + Quote(column) + ": too few nested field ids");
    }
    out.metadata = {{kFieldIdKey, std::to_string(ids[(*next)++])}};
    if (c.type.is_nested()) {
      ASSIGN_OR_RAISE(out.type, NestedLakeType(column, c.type, ids, next));
    } else {
      ASSIGN_OR_RAISE(out.type, LakeType(arrow::Field{column, c.type, true, {}}));
    }
    children.push_back(std::move(out));
  }
  const bool fixed_size = t.id() == TypeId::kFixedSizeList;
  DataType lake = DataType::Nested(fixed_size ? TypeId::kList : t.id(), std::move(children),
                                   fixed_size ? 0 : t.list_size());
  if (auto mapped = iceberg::TypeFromArrow(lake); !mapped.ok()) {
    return Status::Invalid("column " + Quote(column) + ": " + mapped.status().message() +
                           " (a table with lake.enabled=false may hold it)");
  }
  return lake;
}

arrow::Field LakeField(std::string name, DataType type, bool nullable, int32_t id) {
  return arrow::Field{
      std::move(name), std::move(type), nullable, {{kFieldIdKey, std::to_string(id)}}};
}

std::optional<iceberg::Literal> LiteralAt(const iceberg::Type& type, const arrow::Array& column,
                                          int64_t row) {
  if (column.IsNull(row)) return std::nullopt;
  switch (type.kind()) {
    case iceberg::TypeKind::kBoolean: return column.BoolValue(row);
    case iceberg::TypeKind::kInt:
    case iceberg::TypeKind::kDate: return column.Value<int32_t>(row);
    case iceberg::TypeKind::kLong:
    case iceberg::TypeKind::kTimestamp:
    case iceberg::TypeKind::kTimestampTz: return column.Value<int64_t>(row);
    case iceberg::TypeKind::kFloat: return column.Value<float>(row);
    case iceberg::TypeKind::kDouble: return column.Value<double>(row);
    case iceberg::TypeKind::kDecimal: {
      iceberg::Decimal d;
      std::memcpy(&d.unscaled, column.GetView(row).data(), sizeof(d.unscaled));
      return d;
    }
    case iceberg::TypeKind::kString:
    case iceberg::TypeKind::kBinary:
    case iceberg::TypeKind::kFixed: return std::string(column.GetView(row));
    case iceberg::TypeKind::kStruct:
    case iceberg::TypeKind::kList:
    case iceberg::TypeKind::kMap: break;  // not a partition source
  }
  return std::nullopt;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

// Keeps letters, digits, '-', '.' and '_' of a partition value for its directory name.
std::string PathSafe(std::string_view text) {
  std::string out;
  for (char c : text) {
    const bool keep =
        std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
    out.push_back(keep ? c : '_');
  }
  return out.substr(0, 64);
}

// A Parquet statistics value (PLAIN bytes of the physical type) as an Iceberg decimal bound.
Result<std::string> DecimalBound(parquet::PhysicalType physical, std::string_view bytes) {
  __int128 v = 0;
  if (physical == parquet::PhysicalType::kInt32 && bytes.size() == 4) {
    int32_t x;
    std::memcpy(&x, bytes.data(), 4);
    v = x;
  } else if (physical == parquet::PhysicalType::kInt64 && bytes.size() == 8) {
    int64_t x;
    std::memcpy(&x, bytes.data(), 8);
    v = x;
  } else {
    ASSIGN_OR_RAISE(v, iceberg::DecimalFromBytes(bytes));  // big-endian two's complement
  }
  return iceberg::DecimalToBytes(v);
}

}  // namespace

Result<LakeSchema> MakeLakeSchema(const arrow::SchemaPtr& log_schema,
                                  const std::vector<std::string>& primary_key) {
  std::vector<arrow::Field> fields;
  std::vector<int> key_columns;
  for (const auto& name : primary_key) {
    const int index = log_schema->GetFieldIndex(name);
    if (index < 0) return Status::Invalid("primary-key column " + Quote(name) + " does not exist");
    key_columns.push_back(index);
  }
  int32_t id = 1;
  for (const auto& f : log_schema->fields()) {
    if (f.name == kBucketColumn || f.name == kOffsetColumn || f.name == kTimestampColumn) {
      return Status::Invalid("column " + Quote(f.name) +
                             " clashes with a lake system column (__bucket, __offset, "
                             "__timestamp)");
    }
    ASSIGN_OR_RAISE(DataType type, LakeType(f));
    const bool key = std::find(primary_key.begin(), primary_key.end(), f.name) != primary_key.end();
    fields.push_back(LakeField(f.name, std::move(type), f.nullable && !key, id++));
    catalog::SetFieldDoc(&fields.back(), catalog::FieldDoc(f));
  }
  fields.push_back(LakeField(kBucketColumn, DataType::Int32(), false, id++));
  fields.push_back(LakeField(kOffsetColumn, DataType::Int64(), false, id++));
  fields.push_back(LakeField(kTimestampColumn, DataType::Timestamp(arrow::TimeUnit::kMicro, "UTC"),
                             false, id++));
  // Nested columns' children take the ids after every top-level column's.
  for (auto& f : fields) {
    if (f.type.is_nested()) {
      std::vector<int32_t> ids;
      for (int k = catalog::CountChildIds(f.type); k > 0; --k) ids.push_back(id++);
      size_t next = 0;
      ASSIGN_OR_RAISE(f.type, NestedLakeType(f.name, f.type, ids, &next));
    }
  }
  LakeSchema out;
  out.log_schema = log_schema;
  out.arrow_schema = std::make_shared<const arrow::Schema>(std::move(fields));
  ASSIGN_OR_RAISE(auto iceberg_schema, iceberg::SchemaFromArrow(*out.arrow_schema));
  std::vector<int32_t> identifiers;
  for (int c : key_columns) identifiers.push_back(c + 1);
  out.iceberg_schema =
      iceberg::Schema(iceberg_schema.schema_id(), iceberg_schema.fields(), std::move(identifiers));
  RETURN_NOT_OK(out.iceberg_schema.Validate());
  out.key_columns = std::move(key_columns);
  return out;
}

namespace {

// Iceberg's allowed type promotions ("Schema Evolution"): int -> long, float -> double,
// decimal(P, S) -> decimal(P', S) with P' > P; and no change. Nested types of one kind evolve
// field by field id: a field the old type lacks is new (Oxbow adds optional ones only).
bool IsIcebergPromotion(const iceberg::Type& from, const iceberg::Type& to) {
  using K = iceberg::TypeKind;
  if (from == to) return true;
  if (from.is_nested() && from.kind() == to.kind()) {
    for (const auto& f : to.fields()) {
      for (const auto& old : from.fields()) {
        if (old.id == f.id && !IsIcebergPromotion(old.type, f.type)) return false;
      }
    }
    return true;
  }
  if (from.kind() == K::kInt && to.kind() == K::kLong) return true;
  if (from.kind() == K::kFloat && to.kind() == K::kDouble) return true;
  return from.kind() == K::kDecimal && to.kind() == K::kDecimal && from.scale() == to.scale() &&
         to.precision() > from.precision();
}

// The version of `table` that the lake schema `lake` holds.
Result<catalog::SchemaVersion> LakeVersion(const catalog::TableDescriptor& table,
                                           const iceberg::Schema& lake) {
  auto version = table.SchemaById(lake.schema_id());
  if (!version.ok()) {
    return Status::Invalid("the lake table's current schema (id " +
                           std::to_string(lake.schema_id()) + ") is no schema version of table " +
                           Quote(table.name));
  }
  if (lake.fields().size() < static_cast<size_t>(version->schema->num_fields())) {
    return Status::Corruption("the lake table's schema " + std::to_string(lake.schema_id()) +
                              " has fewer columns than the table's version of that id");
  }
  for (int i = 0; i < version->schema->num_fields(); ++i) {
    if (lake.fields()[static_cast<size_t>(i)].name != version->schema->field(i).name) {
      return Status::Corruption("the lake table's schema " + std::to_string(lake.schema_id()) +
                                " names column " + std::to_string(i + 1) + " " +
                                Quote(lake.fields()[static_cast<size_t>(i)].name) +
                                ", the table's version " + Quote(version->schema->field(i).name));
    }
  }
  return version;
}

}  // namespace

std::optional<int32_t> FieldIdOf(const arrow::Field& field) {
  auto id = arrow::FindMetadata(field.metadata, kFieldIdKey);
  if (!id) return std::nullopt;
  int32_t value = 0;
  auto [end, error] = std::from_chars(id->data(), id->data() + id->size(), value);
  if (error != std::errc() || end != id->data() + id->size()) return std::nullopt;
  return value;
}

Result<std::vector<std::optional<int32_t>>> LakeFieldIds(const catalog::TableDescriptor& table,
                                                         const iceberg::Schema& lake) {
  ASSIGN_OR_RAISE(auto version, LakeVersion(table, lake));
  std::vector<std::optional<int32_t>> out;
  for (int32_t id : table.field_ids) {
    auto found = std::find(version.field_ids.begin(), version.field_ids.end(), id);
    if (found == version.field_ids.end()) {
      out.emplace_back();
    } else {
      out.emplace_back(lake.fields()[static_cast<size_t>(found - version.field_ids.begin())].id);
    }
  }
  return out;
}

// The Iceberg ids of a lake type's nested fields, in pre-order (as catalog::ChildIds).
void IcebergChildIds(const iceberg::Type& type, std::vector<int32_t>* out) {
  for (const auto& f : type.fields()) {
    out->push_back(f.id);
    IcebergChildIds(f.type, out);
  }
}

Result<std::vector<std::vector<std::optional<int32_t>>>> LakeChildFieldIds(
    const catalog::TableDescriptor& table, const iceberg::Schema& lake) {
  ASSIGN_OR_RAISE(auto version, LakeVersion(table, lake));
  std::map<int32_t, int32_t> lake_id_of;  // Oxbow nested field id -> Iceberg id
  for (size_t i = 0; i < version.field_ids.size() && i < version.child_ids.size(); ++i) {
    std::vector<int32_t> lake_ids;
    IcebergChildIds(lake.fields()[i].type, &lake_ids);
    const catalog::ChildIds& ids = version.child_ids[i];
    if (lake_ids.size() != ids.size()) {
      return Status::Corruption("the lake table's schema " + std::to_string(lake.schema_id()) +
                                " holds column " + Quote(lake.fields()[i].name) +
                                " with other nested fields than the table's version");
    }
    for (size_t k = 0; k < ids.size(); ++k) lake_id_of[ids[k]] = lake_ids[k];
  }
  std::vector<std::vector<std::optional<int32_t>>> out;
  for (const catalog::ChildIds& ids : table.child_ids) {
    out.emplace_back();
    for (int32_t id : ids) {
      auto it = lake_id_of.find(id);
      out.back().push_back(it == lake_id_of.end() ? std::nullopt
                                                  : std::optional<int32_t>(it->second));
    }
  }
  out.resize(static_cast<size_t>(table.schema->num_fields()));
  return out;
}

Result<LakeSchema> EvolvedLakeSchema(const catalog::TableDescriptor& table,
                                     const iceberg::Schema* lake, int32_t last_column_id,
                                     const std::vector<arrow::Field>& extra) {
  arrow::SchemaPtr columns = table.schema;
  if (!extra.empty()) {
    std::vector<arrow::Field> fields = table.schema->fields();
    fields.insert(fields.end(), extra.begin(), extra.end());
    columns = std::make_shared<const arrow::Schema>(std::move(fields));
  }
  ASSIGN_OR_RAISE(LakeSchema out, MakeLakeSchema(columns, table.primary_key));
  if (lake != nullptr) {
    ASSIGN_OR_RAISE(auto ids, LakeFieldIds(table, *lake));
    ASSIGN_OR_RAISE(auto child_ids, LakeChildFieldIds(table, *lake));
    std::vector<arrow::Field> fields = out.arrow_schema->fields();
    int32_t next = std::max(last_column_id, lake->HighestFieldId());
    for (size_t i = 0; i < fields.size(); ++i) {
      arrow::Field& f = fields[i];
      std::optional<int32_t> id;
      const iceberg::NestedField* old = nullptr;
      if (i < ids.size()) {
        id = ids[i];
        if (id) old = lake->FindField(*id);
      } else {
        old = lake->FindField(f.name);  // an extra or system column keeps its id
        if (old == nullptr) {
          return Status::Corruption("the lake table's schema has no column " + Quote(f.name));
        }
        id = old->id;
      }
      if (!id) id = ++next;
      const std::optional<std::string> doc = catalog::FieldDoc(f);
      f.metadata = {{kFieldIdKey, std::to_string(*id)}};
      catalog::SetFieldDoc(&f, doc);
      if (f.type.is_nested()) {
        const arrow::DataType& log_type = table.schema->field(static_cast<int>(i)).type;
        // A nested field the lake holds keeps its Iceberg id (a rename, a widening); a new one
        // takes the next id above last_column_id.
        std::vector<int32_t> lake_ids;
        for (const auto& id : child_ids[i]) lake_ids.push_back(id ? *id : ++next);
        size_t at = 0;
        ASSIGN_OR_RAISE(f.type, NestedLakeType(f.name, log_type, lake_ids, &at));
      }
      if (old != nullptr) {
        ASSIGN_OR_RAISE(auto type, iceberg::TypeFromArrow(f.type));
        if (!IsIcebergPromotion(old->type, type)) {
          return Status::Invalid("column " + Quote(f.name) + " cannot change from " +
                                 old->type.ToString() + " to " + type.ToString() +
                                 " in the lake (Iceberg promotes int to long, float to double "
                                 "and decimal precision up only)");
        }
      }
    }
    out.arrow_schema = std::make_shared<const arrow::Schema>(std::move(fields));
  }
  ASSIGN_OR_RAISE(auto iceberg_schema,
                  iceberg::SchemaFromArrow(*out.arrow_schema, table.schema_id));
  std::vector<int32_t> identifiers;
  for (int c : out.key_columns) identifiers.push_back(iceberg_schema.fields()[c].id);
  out.iceberg_schema =
      iceberg::Schema(table.schema_id, iceberg_schema.fields(), std::move(identifiers));
  RETURN_NOT_OK(out.iceberg_schema.Validate());
  return out;
}

Result<arrow::RecordBatchPtr> ToLakeSchema(const LakeSchema& schema,
                                           const arrow::Schema& file_schema,
                                           const arrow::RecordBatch& batch) {
  std::vector<arrow::Array> columns;
  for (const auto& field : schema.arrow_schema->fields()) {
    const std::optional<int32_t> id = FieldIdOf(field);
    int found = -1;
    for (int c = 0; c < file_schema.num_fields() && id; ++c) {
      if (FieldIdOf(file_schema.field(c)) == id) found = c;
    }
    if (found < 0) {
      ASSIGN_OR_RAISE(auto nulls, arrow::MakeNullArray(field.type, batch.num_rows()));
      columns.push_back(std::move(nulls));
      continue;
    }
    auto cast = arrow::Cast(batch.column(found), field.type);
    if (!cast.ok()) return cast.status().WithContext("column " + Quote(field.name));
    columns.push_back(std::move(cast).ValueOrDie());
  }
  return arrow::RecordBatch::Make(schema.arrow_schema, batch.num_rows(), std::move(columns));
}

Result<iceberg::PartitionSpec> ParsePartitionSpec(std::string_view text,
                                                  const iceberg::Schema& schema) {
  auto parse = [&]() -> Result<iceberg::PartitionSpec> {
    std::vector<iceberg::PartitionFieldRequest> requests;
    std::vector<size_t> open_at;  // positions of the brackets not closed yet
    size_t start = 0;
    for (size_t i = 0; i <= text.size(); ++i) {
      const char c = i < text.size() ? text[i] : ',';
      if (c == '(' || c == '[') open_at.push_back(i);
      if (c == ')' || c == ']') {
        const char opening = c == ')' ? '(' : '[';
        if (open_at.empty() || text[open_at.back()] != opening) {
          return Status::Invalid("unmatched '" + std::string(1, c) + "' at position " +
                                 std::to_string(i));
        }
        open_at.pop_back();
      }
      if (i == text.size() && !open_at.empty()) {
        return Status::Invalid("'" + std::string(1, text[open_at.back()]) + "' at position " +
                               std::to_string(open_at.back()) + " is never closed");
      }
      if (c != ',' || !open_at.empty()) continue;
      const std::string_view item = Trim(text.substr(start, i - start));
      start = i + 1;
      if (item.empty()) continue;
      const auto open = item.rfind('(');
      if (open == std::string_view::npos || item.back() != ')') {
        return Status::Invalid("entry " + Quote(item) +
                               " must be transform(column), e.g. day(ts) or bucket[16](id)");
      }
      iceberg::PartitionFieldRequest request;
      request.source_name = std::string(Trim(item.substr(open + 1, item.size() - open - 2)));
      ASSIGN_OR_RAISE(request.transform, iceberg::Transform::Parse(Trim(item.substr(0, open))));
      requests.push_back(std::move(request));
    }
    if (requests.empty()) return iceberg::PartitionSpec::Unpartitioned();
    return iceberg::PartitionSpec::Make(schema, requests);
  };
  auto spec = parse();
  if (!spec.ok()) return spec.status().WithContext("lake.partition " + Quote(text));
  return spec;
}

namespace {

// A column of `n` values, no nulls, that `fill` writes in place.
template <typename T, typename Fill>
Result<arrow::Array> SystemColumn(DataType type, int64_t n, Fill fill) {
  ASSIGN_OR_RAISE(auto values, MutableBuffer::Allocate(n * static_cast<int64_t>(sizeof(T))));
  fill(reinterpret_cast<T*>(values->mutable_data()));
  return arrow::Array::Make(std::move(type), n, {nullptr, std::move(values)}, 0);
}

}  // namespace

Result<arrow::RecordBatchPtr> ToLakeBatch(const LakeSchema& schema, const arrow::RecordBatch& batch,
                                          int32_t bucket, int64_t base_offset,
                                          int64_t append_time_ms, int64_t offset_step) {
  const int64_t n = batch.num_rows();
  std::vector<arrow::Array> columns;
  columns.reserve(schema.arrow_schema->num_fields());
  for (int i = 0; i < batch.num_columns(); ++i) {
    ASSIGN_OR_RAISE(auto cast, arrow::Cast(batch.column(i), schema.arrow_schema->field(i).type));
    columns.push_back(std::move(cast));
  }
  ASSIGN_OR_RAISE(auto bucket_column, SystemColumn<int32_t>(DataType::Int32(), n, [&](int32_t* v) {
                    std::fill_n(v, n, bucket);
                  }));
  ASSIGN_OR_RAISE(auto offset_column, SystemColumn<int64_t>(DataType::Int64(), n, [&](int64_t* v) {
                    for (int64_t i = 0; i < n; ++i) v[i] = base_offset + i * offset_step;
                  }));
  ASSIGN_OR_RAISE(
      auto time_column,
      SystemColumn<int64_t>(schema.arrow_schema->fields().back().type, n,
                            [&](int64_t* v) { std::fill_n(v, n, append_time_ms * 1000); }));
  columns.push_back(std::move(bucket_column));
  columns.push_back(std::move(offset_column));
  columns.push_back(std::move(time_column));
  return arrow::RecordBatch::Make(schema.arrow_schema, n, std::move(columns));
}

Result<std::vector<PartitionGroup>> SplitByPartition(const LakeSchema& schema,
                                                     const iceberg::PartitionSpec& spec,
                                                     const arrow::RecordBatch& batch) {
  if (spec.is_unpartitioned())
    return std::vector<PartitionGroup>{{{}, "", batch.Slice(0, batch.num_rows())}};
  const auto& fields = schema.iceberg_schema.fields();
  ASSIGN_OR_RAISE(auto result_types, spec.PartitionTypes(schema.iceberg_schema));
  struct Source {
    int32_t id;
    int column;
    const iceberg::Type* type;
  };
  std::vector<Source> sources;
  for (const auto& pf : spec.fields()) {
    for (size_t c = 0; c < fields.size(); ++c) {
      if (fields[c].id == pf.source_id) {
        sources.push_back({pf.source_id, static_cast<int>(c), &fields[c].type});
      }
    }
  }
  std::vector<PartitionGroup> groups;
  std::vector<std::vector<int32_t>> rows;
  std::unordered_map<std::string, size_t> index;
  std::vector<std::pair<int32_t, std::optional<iceberg::Literal>>> values(sources.size());
  for (int64_t r = 0; r < batch.num_rows(); ++r) {
    for (size_t s = 0; s < sources.size(); ++s) {
      values[s] = {sources[s].id, LiteralAt(*sources[s].type, batch.column(sources[s].column), r)};
    }
    ASSIGN_OR_RAISE(auto tuple, spec.PartitionFor(schema.iceberg_schema, values));
    std::string path;
    for (size_t f = 0; f < tuple.size(); ++f) {
      if (f > 0) path += "/";
      path += PathSafe(spec.fields()[f].name) + "=" +
              (tuple[f] ? PathSafe(iceberg::LiteralToString(result_types[f], *tuple[f])) : "null");
    }
    auto [it, inserted] = index.emplace(path, groups.size());
    if (inserted) {
      groups.push_back({std::move(tuple), path, nullptr});
      rows.emplace_back();
    }
    rows[it->second].push_back(static_cast<int32_t>(r));
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    ASSIGN_OR_RAISE(groups[g].batch, arrow::TakeRows(batch, rows[g]));
  }
  return groups;
}

Result<iceberg::DataFile> MakeDataFile(const LakeSchema& schema, std::string path,
                                       iceberg::PartitionValues partition,
                                       const parquet::FileMetrics& metrics) {
  iceberg::DataFile file;
  file.file_path = std::move(path);
  file.partition = std::move(partition);
  file.record_count = metrics.row_count;
  file.file_size_in_bytes = metrics.file_size;
  file.split_offsets = metrics.row_group_offsets;
  for (const auto& c : metrics.columns) {
    if (!c.field_id) continue;
    const int32_t id = *c.field_id;
    const iceberg::NestedField* field = schema.iceberg_schema.FindField(id);
    if (field == nullptr) continue;
    file.column_sizes[id] = c.compressed_size;
    file.value_counts[id] = c.value_count;
    file.null_value_counts[id] = c.null_count;
    if (c.nan_count) file.nan_value_counts[id] = *c.nan_count;
    const bool decimal = field->type.kind() == iceberg::TypeKind::kDecimal;
    if (c.lower_bound) {
      if (decimal) {
        ASSIGN_OR_RAISE(file.lower_bounds[id], DecimalBound(c.physical_type, *c.lower_bound));
      } else {
        file.lower_bounds[id] = *c.lower_bound;
      }
    }
    if (c.upper_bound) {
      if (decimal) {
        ASSIGN_OR_RAISE(file.upper_bounds[id], DecimalBound(c.physical_type, *c.upper_bound));
      } else {
        file.upper_bounds[id] = *c.upper_bound;
      }
    }
  }
  return file;
}

Result<std::vector<int64_t>> SummaryOffsets(const iceberg::IcebergTable& table, size_t buckets,
                                            const char* key) {
  std::vector<int64_t> offsets(buckets, 0);
  const auto* snap = table.CurrentSnapshot();
  if (snap == nullptr) return offsets;
  auto it = snap->summary.find(key);
  if (it == snap->summary.end()) return offsets;
  nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
  // Fewer offsets than buckets: the table gained buckets since (node::Node::AddBuckets), which
  // start at offset 0.
  if (!j.is_array() || j.size() > buckets) {
    return Status::Corruption(table.metadata_file() + ": " + key + " is not a list of at most " +
                              std::to_string(buckets) + " offsets");
  }
  for (size_t b = 0; b < j.size(); ++b) {
    if (!j[b].is_number_integer()) {
      return Status::Corruption(table.metadata_file() + ": bad offset in " + key);
    }
    offsets[b] = j[b].get<int64_t>();
  }
  return offsets;
}

}  // namespace oxbow::lake::internal

namespace oxbow::lake {

bool IsLakeEnabled(const catalog::TableDescriptor& table) {
  auto it = table.properties.find(kEnabledProperty);
  // A primary-key table goes to the lake when asked (its key index costs memory, docs/lake.md).
  if (!table.primary_key.empty()) return it != table.properties.end() && it->second == "true";
  return it == table.properties.end() || it->second != "false";
}

bool HasChangelogLake(const catalog::TableDescriptor& table) {
  auto it = table.properties.find(kChangelogProperty);
  return !table.primary_key.empty() && IsLakeEnabled(table) && it != table.properties.end() &&
         it->second == "true";
}

Status CheckLakeAlter(const catalog::TableDescriptor& before, const catalog::TableDescriptor& after,
                      const std::vector<catalog::SchemaChange>& changes) {
  const bool columns_changed = after.schema_id != before.schema_id;
  if (!columns_changed || !IsLakeEnabled(before)) return Status::OK();
  auto partition = before.properties.find(kPartitionProperty);
  if (partition == before.properties.end()) return Status::OK();
  ASSIGN_OR_RAISE(auto schema, internal::MakeLakeSchema(before.schema));
  ASSIGN_OR_RAISE(auto spec,
                  internal::ParsePartitionSpec(partition->second, schema.iceberg_schema));
  for (size_t n = 0; n < changes.size(); ++n) {
    const catalog::SchemaChange& c = changes[n];
    using Op = catalog::SchemaChange::Op;
    if (c.op != Op::kDropColumn && c.op != Op::kRenameColumn && c.op != Op::kWidenType) continue;
    if (c.path.size() > 1) continue;  // a nested field is no partition source
    const iceberg::NestedField* field = schema.iceberg_schema.FindField(c.name);
    if (field == nullptr) continue;
    for (const auto& pf : spec.fields()) {
      if (pf.source_id != field->id) continue;
      const std::string what = c.op == Op::kDropColumn     ? "dropped (Iceberg does not drop a "
                                                             "partition source column)"
                               : c.op == Op::kRenameColumn ? "renamed (lake.partition names it)"
                                                           : "widened (its partition values' "
                                                             "type would change)";
      return Status::Invalid("change " + std::to_string(n + 1) + ": column " + Quote(c.name) +
                             " is the source of partition field " + Quote(pf.name) +
                             " of the lake (lake.partition " + Quote(partition->second) +
                             ") and cannot be " + what);
    }
  }
  return Status::OK();
}

engine::BatchCheck MakeBatchCheck(const catalog::TableDescriptor& table) {
  // A primary-key table's lake refuses coarse timestamp columns when it is created instead.
  if (!IsLakeEnabled(table) || !table.primary_key.empty()) return {};
  std::vector<int> coarse_timestamps;
  for (int i = 0; i < table.schema->num_fields(); ++i) {
    const arrow::DataType& type = table.schema->field(i).type;
    if (type.id() == arrow::TypeId::kTimestamp &&
        arrow::UnitsPerSecond(type.unit()) < arrow::UnitsPerSecond(arrow::TimeUnit::kMicro)) {
      coarse_timestamps.push_back(i);
    }
  }
  if (coarse_timestamps.empty()) return {};
  return [name = table.name, schema = table.schema,
          columns = std::move(coarse_timestamps)](const arrow::RecordBatch& batch) -> Status {
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
          return Status::Invalid("field " + Quote(schema->field(c).name) + " of table " +
                                 Quote(name) + ": row " + std::to_string(i) + " holds " +
                                 std::to_string(values[i]) + " (" + column.type().ToString() +
                                 "), beyond the microseconds the lake stores ([" +
                                 std::to_string(min) + ", " + std::to_string(max) +
                                 "]); a table with lake.enabled=false takes it");
        }
      }
    }
    return Status::OK();
  };
}

}  // namespace oxbow::lake
