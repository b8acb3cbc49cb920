#include "oxbow/iceberg/manifest.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "oxbow/common/parse.h"
#include "oxbow/iceberg/io_internal.h"

namespace oxbow::iceberg {

namespace {

using OJson = nlohmann::ordered_json;

// Bytes of the fixed that holds a decimal of this precision (the spec's minimum).
int32_t DecimalBytes(int32_t precision) {
  int32_t n = 1;
  while (n < 16 && std::pow(2.0L, 8 * n - 1) < std::pow(10.0L, precision)) ++n;
  return n;
}

// Avro schema of an Iceberg primitive (Appendix A). Named types take the field id in their
// name so that two fields of the same type never define one name twice.
OJson AvroTypeJson(const Type& type, int32_t field_id) {
  switch (type.kind()) {
    case TypeKind::kBoolean: return "boolean";
    case TypeKind::kInt: return "int";
    case TypeKind::kLong: return "long";
    case TypeKind::kFloat: return "float";
    case TypeKind::kDouble: return "double";
    case TypeKind::kDate: return {{"type", "int"}, {"logicalType", "date"}};
    case TypeKind::kTimestamp:
      return {{"type", "long"}, {"logicalType", "timestamp-micros"}, {"adjust-to-utc", false}};
    case TypeKind::kTimestampTz:
      return {{"type", "long"}, {"logicalType", "timestamp-micros"}, {"adjust-to-utc", true}};
    case TypeKind::kString: return "string";
    case TypeKind::kBinary: return "bytes";
    case TypeKind::kFixed:
      return {{"type", "fixed"},
              {"name", "fixed_" + std::to_string(field_id)},
              {"size", type.length()}};
    case TypeKind::kDecimal:
      return {{"type", "fixed"},
              {"name", "decimal_" + std::to_string(field_id)},
              {"size", DecimalBytes(type.precision())},
              {"logicalType", "decimal"},
              {"precision", type.precision()},
              {"scale", type.scale()}};
    case TypeKind::kStruct:
    case TypeKind::kList:
    case TypeKind::kMap: break;  // partition sources are primitive
  }
  return "null";
}

OJson Optional(OJson type) { return OJson::array({"null", std::move(type)}); }

OJson Field(const char* name, OJson type, int32_t id, bool optional = false) {
  OJson f;
  f["name"] = name;
  f["type"] = optional ? Optional(std::move(type)) : std::move(type);
  if (optional) f["default"] = nullptr;
  f["field-id"] = id;
  return f;
}

// An int-keyed map, written as Iceberg does: an array of key/value records.
OJson IntMap(const char* name, int32_t id, int32_t key_id, int32_t value_id, OJson value_type) {
  std::string record = "k";  // built step by step: gcc 12 misreports "k" + to_string (-Wrestrict)
  record += std::to_string(key_id);
  record += "_v";
  record += std::to_string(value_id);
  OJson items = {{"type", "record"},
                 {"name", record},
                 {"fields", OJson::array({Field("key", "int", key_id),
                                          Field("value", value_type, value_id)})}};
  OJson array = {{"type", "array"}, {"items", std::move(items)}, {"logicalType", "map"}};
  return Field(name, std::move(array), id, true);
}

OJson List(const char* name, int32_t id, int32_t element_id, OJson element) {
  OJson array = {{"type", "array"}, {"items", std::move(element)}, {"element-id", element_id}};
  return Field(name, std::move(array), id, true);
}

AvroValue LiteralToAvro(const Type& type, const Literal& v) {
  switch (type.kind()) {
    case TypeKind::kBoolean: return AvroValue::Boolean(std::get<bool>(v));
    case TypeKind::kInt:
    case TypeKind::kDate: return AvroValue::Int(std::get<int32_t>(v));
    case TypeKind::kLong:
    case TypeKind::kTimestamp:
    case TypeKind::kTimestampTz: return AvroValue::Long(std::get<int64_t>(v));
    case TypeKind::kFloat: return AvroValue::Float(std::get<float>(v));
    case TypeKind::kDouble: return AvroValue::Double(std::get<double>(v));
    case TypeKind::kString: return AvroValue::String(std::get<std::string>(v));
    case TypeKind::kBinary: return AvroValue::Bytes(std::get<std::string>(v));
    case TypeKind::kFixed: return AvroValue::Fixed(std::get<std::string>(v));
    case TypeKind::kDecimal: {
      std::string minimal = DecimalToBytes(std::get<Decimal>(v).unscaled);
      int32_t width = DecimalBytes(type.precision());
      char pad = (static_cast<uint8_t>(minimal[0]) & 0x80) ? '\xff' : '\0';
      if (static_cast<int32_t>(minimal.size()) < width) {
        minimal.insert(0, static_cast<size_t>(width) - minimal.size(), pad);
      }
      return AvroValue::Fixed(std::move(minimal));
    }
    case TypeKind::kStruct:
    case TypeKind::kList:
    case TypeKind::kMap: break;
  }
  return AvroValue::Null();
}

Result<Literal> AvroToLiteral(const Type& type, const AvroValue& v) {
  auto want = [&](bool ok) -> Status {
    if (ok) return Status::OK();
    return Status::Corruption("partition value does not match type " + type.ToString());
  };
  switch (type.kind()) {
    case TypeKind::kBoolean: RETURN_NOT_OK(want(v.type == AvroType::kBoolean)); return Literal(v.b);
    case TypeKind::kInt:
    case TypeKind::kDate:
      RETURN_NOT_OK(want(v.type == AvroType::kInt));
      return Literal(static_cast<int32_t>(v.i));
    case TypeKind::kLong:
    case TypeKind::kTimestamp:
    case TypeKind::kTimestampTz:
      RETURN_NOT_OK(want(v.type == AvroType::kLong || v.type == AvroType::kInt));
      return Literal(v.i);
    case TypeKind::kFloat:
      RETURN_NOT_OK(want(v.type == AvroType::kFloat));
      return Literal(static_cast<float>(v.d));
    case TypeKind::kDouble:
      RETURN_NOT_OK(want(v.type == AvroType::kDouble || v.type == AvroType::kFloat));
      return Literal(v.d);
    case TypeKind::kString:
    case TypeKind::kBinary:
    case TypeKind::kFixed:
      RETURN_NOT_OK(want(v.type == AvroType::kString || v.type == AvroType::kBytes ||
                         v.type == AvroType::kFixed));
      return DeserializeLiteral(type, v.bytes);
    case TypeKind::kDecimal: {
      RETURN_NOT_OK(want(v.type == AvroType::kBytes || v.type == AvroType::kFixed));
      ASSIGN_OR_RAISE(auto unscaled, DecimalFromBytes(v.bytes));
      return Literal(Decimal{unscaled});
    }
    case TypeKind::kStruct:
    case TypeKind::kList:
    case TypeKind::kMap: break;
  }
  return Status::Corruption("partition value of nested type " + type.ToString());
}

AvroValue OptionalLong(const std::optional<int64_t>& v) {
  return v ? AvroValue::Long(*v) : AvroValue::Null();
}

template <typename V, typename F>
AvroValue MapValue(const std::map<int32_t, V>& m, F make_value) {
  if (m.empty()) return AvroValue::Null();
  std::vector<AvroValue> items;
  for (const auto& [k, v] : m)
    items.push_back(AvroValue::Record({AvroValue::Int(k), make_value(v)}));
  return AvroValue::Array(std::move(items));
}

// The value of the field with `id` in a decoded record, or null when absent or null.
const AvroValue* FieldById(const AvroNode& node, const AvroValue& value, int32_t id) {
  int index = node.FieldIndexById(id);
  if (index < 0 || index >= static_cast<int>(value.items.size())) return nullptr;
  const AvroValue& v = value.items[index];
  return v.is_null() ? nullptr : &v;
}

const AvroNode* FieldNode(const AvroNode& node, int32_t id) {
  int index = node.FieldIndexById(id);
  return index < 0 ? nullptr : &node.fields[index].type->NonNull();
}

Result<int64_t> RequiredLong(const AvroNode& node, const AvroValue& value, int32_t id,
                             const char* name) {
  const AvroValue* v = FieldById(node, value, id);
  if (v == nullptr || (v->type != AvroType::kLong && v->type != AvroType::kInt)) {
    return Status::Corruption(std::string("manifest field ") + name + " (id " + std::to_string(id) +
                              ") is missing or not a number");
  }
  return v->i;
}

std::optional<int64_t> OptionalNumber(const AvroNode& node, const AvroValue& value, int32_t id) {
  const AvroValue* v = FieldById(node, value, id);
  if (v == nullptr || (v->type != AvroType::kLong && v->type != AvroType::kInt)) {
    return std::nullopt;
  }
  return v->i;
}

// Decodes an int-keyed map written either as an array of key/value records or an Avro map.
template <typename V, typename F>
Status ReadIntMap(const AvroNode& node, const AvroValue& value, int32_t id,
                  std::map<int32_t, V>* out, F convert) {
  const AvroValue* v = FieldById(node, value, id);
  if (v == nullptr) return Status::OK();
  if (v->type == AvroType::kArray) {
    for (const auto& item : v->items) {
      if (item.type != AvroType::kRecord || item.items.size() != 2) {
        return Status::Corruption("manifest map field " + std::to_string(id) +
                                  " has an item that is not a key/value record");
      }
      ASSIGN_OR_RAISE(V converted, convert(item.items[1]));
      (*out)[static_cast<int32_t>(item.items[0].i)] = std::move(converted);
    }
  } else if (v->type == AvroType::kMap) {
    for (const auto& [key, item] : v->entries) {
      auto field_id = ParseInt32(key);
      if (!field_id.ok()) {
        return Status::Corruption("manifest map field " + std::to_string(id) + " has a key " +
                                  "that is not a field id: " + field_id.status().message());
      }
      ASSIGN_OR_RAISE(V converted, convert(item));
      (*out)[*field_id] = std::move(converted);
    }
  } else {
    return Status::Corruption("manifest map field " + std::to_string(id) + " is not a map");
  }
  return Status::OK();
}

Result<int64_t> AsLong(const AvroValue& v) {
  if (v.type != AvroType::kLong && v.type != AvroType::kInt) {
    return Status::Corruption("manifest metric is not a number");
  }
  return v.i;
}

Result<std::string> AsBytes(const AvroValue& v) {
  if (v.type != AvroType::kBytes && v.type != AvroType::kString && v.type != AvroType::kFixed) {
    return Status::Corruption("manifest bound is not bytes");
  }
  return v.bytes;
}

std::vector<FieldSummary> Summarize(const std::vector<Type>& types,
                                    const std::vector<ManifestEntry>& entries) {
  std::vector<FieldSummary> out(types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    bool floating = types[i].kind() == TypeKind::kFloat || types[i].kind() == TypeKind::kDouble;
    out[i].contains_nan = false;
    std::optional<Literal> lo, hi;
    for (const auto& e : entries) {
      const auto& v = e.data_file.partition[i];
      if (!v) {
        out[i].contains_null = true;
        continue;
      }
      if (floating) {
        double d = std::holds_alternative<float>(*v) ? std::get<float>(*v) : std::get<double>(*v);
        if (std::isnan(d)) {
          out[i].contains_nan = true;
          continue;
        }
      }
      if (!lo || CompareLiterals(*v, *lo) < 0) lo = *v;
      if (!hi || CompareLiterals(*v, *hi) > 0) hi = *v;
    }
    if (lo) out[i].lower_bound = *SerializeLiteral(types[i], *lo);
    if (hi) out[i].upper_bound = *SerializeLiteral(types[i], *hi);
  }
  return out;
}

}  // namespace

std::string LocalPath(const std::string& uri) {
  if (uri.rfind("file://", 0) == 0) return uri.substr(7);
  if (uri.rfind("file:/", 0) == 0) return uri.substr(5);
  return uri;
}

Result<std::string> ManifestAvroSchema(const Schema& schema, const PartitionSpec& spec) {
  ASSIGN_OR_RAISE(auto types, spec.PartitionTypes(schema));
  OJson partition_fields = OJson::array();
  for (size_t i = 0; i < types.size(); ++i) {
    const auto& f = spec.fields()[i];
    OJson pf;
    pf["name"] = f.name;
    pf["type"] = Optional(AvroTypeJson(types[i], f.field_id));
    pf["default"] = nullptr;
    pf["field-id"] = f.field_id;
    partition_fields.push_back(std::move(pf));
  }
  OJson partition = {{"type", "record"}, {"name", "r102"}, {"fields", std::move(partition_fields)}};
  OJson data_file_fields = OJson::array({
      Field("content", "int", 134),
      Field("file_path", "string", 100),
      Field("file_format", "string", 101),
      Field("partition", std::move(partition), 102),
      Field("record_count", "long", 103),
      Field("file_size_in_bytes", "long", 104),
      IntMap("column_sizes", 108, 117, 118, "long"),
      IntMap("value_counts", 109, 119, 120, "long"),
      IntMap("null_value_counts", 110, 121, 122, "long"),
      IntMap("nan_value_counts", 137, 138, 139, "long"),
      IntMap("lower_bounds", 125, 126, 127, "bytes"),
      IntMap("upper_bounds", 128, 129, 130, "bytes"),
      Field("key_metadata", "bytes", 131, true),
      List("split_offsets", 132, 133, "long"),
      List("equality_ids", 135, 136, "int"),
      Field("sort_order_id", "int", 140, true),
  });
  OJson data_file = {{"type", "record"}, {"name", "r2"}, {"fields", std::move(data_file_fields)}};
  OJson entry = {{"type", "record"},
                 {"name", "manifest_entry"},
                 {"fields", OJson::array({
                                Field("status", "int", 0),
                                Field("snapshot_id", "long", 1, true),
                                Field("sequence_number", "long", 3, true),
                                Field("file_sequence_number", "long", 4, true),
                                Field("data_file", std::move(data_file), 2),
                            })}};
  return entry.dump();
}

std::string ManifestListAvroSchema() {
  OJson summary = {{"type", "record"},
                   {"name", "r508"},
                   {"fields", OJson::array({
                                  Field("contains_null", "boolean", 509),
                                  Field("contains_nan", "boolean", 518, true),
                                  Field("lower_bound", "bytes", 510, true),
                                  Field("upper_bound", "bytes", 511, true),
                              })}};
  OJson j = {{"type", "record"},
             {"name", "manifest_file"},
             {"fields", OJson::array({
                            Field("manifest_path", "string", 500),
                            Field("manifest_length", "long", 501),
                            Field("partition_spec_id", "int", 502),
                            Field("content", "int", 517),
                            Field("sequence_number", "long", 515),
                            Field("min_sequence_number", "long", 516),
                            Field("added_snapshot_id", "long", 503),
                            Field("added_files_count", "int", 504),
                            Field("existing_files_count", "int", 505),
                            Field("deleted_files_count", "int", 506),
                            Field("added_rows_count", "long", 512),
                            Field("existing_rows_count", "long", 513),
                            Field("deleted_rows_count", "long", 514),
                            List("partitions", 507, 508, std::move(summary)),
                            Field("key_metadata", "bytes", 519, true),
                        })}};
  return j.dump();
}

Result<int32_t> ManifestContent(const std::vector<ManifestEntry>& entries) {
  if (entries.empty()) return 0;
  const bool deletes = entries.front().data_file.content != FileContent::kData;
  for (const auto& e : entries) {
    if ((e.data_file.content != FileContent::kData) != deletes) {
      return Status::Invalid("a manifest holds data files or delete files, not both (" +
                             e.data_file.file_path + ")");
    }
  }
  return deletes ? 1 : 0;
}

Result<std::string> EncodeManifest(const Schema& schema, const PartitionSpec& spec,
                                   const std::vector<ManifestEntry>& entries,
                                   const AvroWriterOptions& options) {
  ASSIGN_OR_RAISE(auto types, spec.PartitionTypes(schema));
  ASSIGN_OR_RAISE(auto avro_schema, ManifestAvroSchema(schema, spec));
  ASSIGN_OR_RAISE(const int32_t content, ManifestContent(entries));
  ASSIGN_OR_RAISE(auto writer,
                  AvroFileWriter::Make(avro_schema,
                                       {{"schema", schema.ToJson()},
                                        {"schema-id", std::to_string(schema.schema_id())},
                                        {"partition-spec", spec.FieldsJson()},
                                        {"partition-spec-id", std::to_string(spec.spec_id())},
                                        {"format-version", "2"},
                                        {"content", content == 0 ? "data" : "deletes"}},
                                       options));
  auto long_value = [](int64_t v) { return AvroValue::Long(v); };
  auto bytes_value = [](const std::string& v) { return AvroValue::Bytes(v); };
  for (const auto& e : entries) {
    const DataFile& f = e.data_file;
    if (f.spec_id && *f.spec_id != spec.spec_id()) {
      return Status::Invalid("data file " + f.file_path + " is of partition spec " +
                             std::to_string(*f.spec_id) + ", the manifest's is " +
                             std::to_string(spec.spec_id()));
    }
    if (f.partition.size() != types.size()) {
      return Status::Invalid("data file " + f.file_path + " has " +
                             std::to_string(f.partition.size()) + " partition values, the spec " +
                             std::to_string(types.size()));
    }
    std::vector<AvroValue> partition;
    for (size_t i = 0; i < types.size(); ++i) {
      if (!f.partition[i]) {
        partition.push_back(AvroValue::Null());
        continue;
      }
      Status st = CheckLiteral(types[i], *f.partition[i]);
      if (!st.ok()) {
        return st.WithContext("data file " + f.file_path + " partition field " +
                              spec.fields()[i].name);
      }
      partition.push_back(LiteralToAvro(types[i], *f.partition[i]));
    }
    std::vector<AvroValue> split_offsets;
    for (int64_t o : f.split_offsets) split_offsets.push_back(AvroValue::Long(o));
    AvroValue data_file = AvroValue::Record({
        AvroValue::Int(static_cast<int32_t>(f.content)),
        AvroValue::String(f.file_path),
        AvroValue::String(f.file_format),
        AvroValue::Record(std::move(partition)),
        AvroValue::Long(f.record_count),
        AvroValue::Long(f.file_size_in_bytes),
        MapValue(f.column_sizes, long_value),
        MapValue(f.value_counts, long_value),
        MapValue(f.null_value_counts, long_value),
        MapValue(f.nan_value_counts, long_value),
        MapValue(f.lower_bounds, bytes_value),
        MapValue(f.upper_bounds, bytes_value),
        AvroValue::Null(),
        split_offsets.empty() ? AvroValue::Null() : AvroValue::Array(std::move(split_offsets)),
        AvroValue::Null(),
        f.sort_order_id ? AvroValue::Int(*f.sort_order_id) : AvroValue::Null(),
    });
    AvroValue entry = AvroValue::Record({
        AvroValue::Int(static_cast<int32_t>(e.status)),
        OptionalLong(e.snapshot_id),
        OptionalLong(e.sequence_number),
        OptionalLong(e.file_sequence_number),
        std::move(data_file),
    });
    Status st = writer->Append(entry);
    if (!st.ok()) return st.WithContext("manifest entry for " + f.file_path);
  }
  return writer->Finish();
}

Result<ManifestFile> WriteManifest(FileSystem* fs, const std::string& path, const Schema& schema,
                                   const PartitionSpec& spec, int64_t snapshot_id,
                                   int64_t sequence_number,
                                   const std::vector<ManifestEntry>& entries,
                                   const AvroWriterOptions& options) {
  ASSIGN_OR_RAISE(auto types, spec.PartitionTypes(schema));
  ASSIGN_OR_RAISE(std::string bytes, EncodeManifest(schema, spec, entries, options));
  RETURN_NOT_OK(WriteWholeFile(fs, LocalPath(path), bytes, /*sync=*/true));
  ManifestFile mf;
  mf.manifest_path = path;
  mf.manifest_length = static_cast<int64_t>(bytes.size());
  mf.partition_spec_id = spec.spec_id();
  ASSIGN_OR_RAISE(mf.content, ManifestContent(entries));
  mf.sequence_number = sequence_number;
  mf.min_sequence_number = sequence_number;
  mf.added_snapshot_id = snapshot_id;
  for (const auto& e : entries) {
    if (e.sequence_number) {
      mf.min_sequence_number = std::min(mf.min_sequence_number, *e.sequence_number);
    }
    int64_t rows = e.data_file.record_count;
    switch (e.status) {
      case EntryStatus::kAdded:
        ++mf.added_files_count;
        mf.added_rows_count += rows;
        break;
      case EntryStatus::kExisting:
        ++mf.existing_files_count;
        mf.existing_rows_count += rows;
        break;
      case EntryStatus::kDeleted:
        ++mf.deleted_files_count;
        mf.deleted_rows_count += rows;
        break;
    }
  }
  mf.partitions = Summarize(types, entries);
  return mf;
}

Result<std::vector<ManifestEntry>> DecodeManifest(std::string_view bytes, const Schema& schema,
                                                  const PartitionSpec& spec) {
  ASSIGN_OR_RAISE(auto types, spec.PartitionTypes(schema));
  ASSIGN_OR_RAISE(AvroFile file, ReadAvroFile(bytes));
  const AvroNode& root = *file.schema;
  if (root.type != AvroType::kRecord) return Status::Corruption("manifest schema is not a record");
  const AvroNode* df_node = FieldNode(root, 2);
  if (df_node == nullptr || df_node->type != AvroType::kRecord) {
    return Status::Corruption("manifest schema has no data_file record (field id 2)");
  }
  const AvroNode* part_node = FieldNode(*df_node, 102);
  std::vector<ManifestEntry> out;
  out.reserve(file.records.size());
  for (const auto& record : file.records) {
    ManifestEntry e;
    ASSIGN_OR_RAISE(int64_t status, RequiredLong(root, record, 0, "status"));
    if (status < 0 || status > 2) {
      return Status::Corruption("manifest entry status " + std::to_string(status));
    }
    e.status = static_cast<EntryStatus>(status);
    e.snapshot_id = OptionalNumber(root, record, 1);
    e.sequence_number = OptionalNumber(root, record, 3);
    e.file_sequence_number = OptionalNumber(root, record, 4);
    const AvroValue* df = FieldById(root, record, 2);
    if (df == nullptr) return Status::Corruption("manifest entry without data_file");
    DataFile& f = e.data_file;
    f.spec_id = spec.spec_id();
    f.content = static_cast<FileContent>(OptionalNumber(*df_node, *df, 134).value_or(0));
    const AvroValue* path = FieldById(*df_node, *df, 100);
    const AvroValue* format = FieldById(*df_node, *df, 101);
    if (path == nullptr || path->type != AvroType::kString) {
      return Status::Corruption("manifest entry without file_path");
    }
    f.file_path = path->bytes;
    if (format != nullptr) f.file_format = format->bytes;
    ASSIGN_OR_RAISE(f.record_count, RequiredLong(*df_node, *df, 103, "record_count"));
    ASSIGN_OR_RAISE(f.file_size_in_bytes, RequiredLong(*df_node, *df, 104, "file_size_in_bytes"));
    const AvroValue* partition = FieldById(*df_node, *df, 102);
    for (size_t i = 0; i < types.size(); ++i) {
      const AvroValue* v = (partition && part_node)
                               ? FieldById(*part_node, *partition, spec.fields()[i].field_id)
                               : nullptr;
      if (v == nullptr) {
        f.partition.push_back(std::nullopt);
        continue;
      }
      auto literal = AvroToLiteral(types[i], *v);
      if (!literal.ok()) return literal.status().WithContext("data file " + f.file_path);
      f.partition.push_back(std::move(*literal));
    }
    RETURN_NOT_OK(ReadIntMap(*df_node, *df, 108, &f.column_sizes, AsLong));
    RETURN_NOT_OK(ReadIntMap(*df_node, *df, 109, &f.value_counts, AsLong));
    RETURN_NOT_OK(ReadIntMap(*df_node, *df, 110, &f.null_value_counts, AsLong));
    RETURN_NOT_OK(ReadIntMap(*df_node, *df, 137, &f.nan_value_counts, AsLong));
    RETURN_NOT_OK(ReadIntMap(*df_node, *df, 125, &f.lower_bounds, AsBytes));
    RETURN_NOT_OK(ReadIntMap(*df_node, *df, 128, &f.upper_bounds, AsBytes));
    if (const AvroValue* offsets = FieldById(*df_node, *df, 132);
        offsets != nullptr && offsets->type == AvroType::kArray) {
      for (const auto& o : offsets->items) f.split_offsets.push_back(o.i);
    }
    if (auto sort = OptionalNumber(*df_node, *df, 140)) {
      f.sort_order_id = static_cast<int32_t>(*sort);
    }
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::vector<ManifestEntry>> ReadManifest(FileSystem* fs, const ManifestFile& manifest,
                                                const Schema& schema, const PartitionSpec& spec) {
  ASSIGN_OR_RAISE(std::string bytes, ReadWholeFile(fs, LocalPath(manifest.manifest_path)));
  auto entries = DecodeManifest(bytes, schema, spec);
  if (!entries.ok()) return entries.status().WithContext(manifest.manifest_path);
  for (auto& e : *entries) {
    if (!e.snapshot_id) e.snapshot_id = manifest.added_snapshot_id;
    // Sequence numbers are inherited by ADDED entries (and by all entries of v1 manifests,
    // whose list entries carry sequence number 0).
    if (e.status == EntryStatus::kAdded || manifest.sequence_number == 0) {
      if (!e.sequence_number) e.sequence_number = manifest.sequence_number;
      if (!e.file_sequence_number) e.file_sequence_number = manifest.sequence_number;
    }
    if (!e.sequence_number || !e.file_sequence_number) {
      return Status::Corruption(manifest.manifest_path + ": " + e.data_file.file_path +
                                " is not ADDED yet has no sequence number");
    }
  }
  return entries;
}

Result<std::string> EncodeManifestList(const ManifestListHeader& header,
                                       const std::vector<ManifestFile>& manifests,
                                       const AvroWriterOptions& options) {
  ASSIGN_OR_RAISE(
      auto writer,
      AvroFileWriter::Make(
          ManifestListAvroSchema(),
          {{"snapshot-id", std::to_string(header.snapshot_id)},
           {"parent-snapshot-id",
            header.parent_snapshot_id ? std::to_string(*header.parent_snapshot_id) : "null"},
           {"sequence-number", std::to_string(header.sequence_number)},
           {"format-version", "2"}},
          options));
  for (const auto& m : manifests) {
    std::vector<AvroValue> summaries;
    for (const auto& s : m.partitions) {
      summaries.push_back(AvroValue::Record({
          AvroValue::Boolean(s.contains_null),
          s.contains_nan ? AvroValue::Boolean(*s.contains_nan) : AvroValue::Null(),
          s.lower_bound ? AvroValue::Bytes(*s.lower_bound) : AvroValue::Null(),
          s.upper_bound ? AvroValue::Bytes(*s.upper_bound) : AvroValue::Null(),
      }));
    }
    AvroValue record = AvroValue::Record({
        AvroValue::String(m.manifest_path),
        AvroValue::Long(m.manifest_length),
        AvroValue::Int(m.partition_spec_id),
        AvroValue::Int(m.content),
        AvroValue::Long(m.sequence_number),
        AvroValue::Long(m.min_sequence_number),
        AvroValue::Long(m.added_snapshot_id),
        AvroValue::Int(m.added_files_count),
        AvroValue::Int(m.existing_files_count),
        AvroValue::Int(m.deleted_files_count),
        AvroValue::Long(m.added_rows_count),
        AvroValue::Long(m.existing_rows_count),
        AvroValue::Long(m.deleted_rows_count),
        AvroValue::Array(std::move(summaries)),
        m.key_metadata ? AvroValue::Bytes(*m.key_metadata) : AvroValue::Null(),
    });
    Status st = writer->Append(record);
    if (!st.ok()) return st.WithContext("manifest list entry " + m.manifest_path);
  }
  return writer->Finish();
}

Status WriteManifestList(FileSystem* fs, const std::string& path, const ManifestListHeader& header,
                         const std::vector<ManifestFile>& manifests,
                         const AvroWriterOptions& options) {
  ASSIGN_OR_RAISE(std::string bytes, EncodeManifestList(header, manifests, options));
  return WriteWholeFile(fs, LocalPath(path), bytes, /*sync=*/true);
}

Result<std::vector<ManifestFile>> DecodeManifestList(std::string_view bytes) {
  ASSIGN_OR_RAISE(AvroFile file, ReadAvroFile(bytes));
  const AvroNode& root = *file.schema;
  if (root.type != AvroType::kRecord) {
    return Status::Corruption("manifest list schema is not a record");
  }
  const AvroNode* list_node = FieldNode(root, 507);
  const AvroNode* summary_node = list_node != nullptr && list_node->type == AvroType::kArray
                                     ? &list_node->items->NonNull()
                                     : nullptr;
  std::vector<ManifestFile> out;
  for (const auto& r : file.records) {
    ManifestFile m;
    const AvroValue* path = FieldById(root, r, 500);
    if (path == nullptr || path->type != AvroType::kString) {
      return Status::Corruption("manifest list entry without manifest_path");
    }
    m.manifest_path = path->bytes;
    ASSIGN_OR_RAISE(m.manifest_length, RequiredLong(root, r, 501, "manifest_length"));
    ASSIGN_OR_RAISE(int64_t spec_id, RequiredLong(root, r, 502, "partition_spec_id"));
    m.partition_spec_id = static_cast<int32_t>(spec_id);
    m.content = static_cast<int32_t>(OptionalNumber(root, r, 517).value_or(0));
    m.sequence_number = OptionalNumber(root, r, 515).value_or(0);
    m.min_sequence_number = OptionalNumber(root, r, 516).value_or(0);
    ASSIGN_OR_RAISE(m.added_snapshot_id, RequiredLong(root, r, 503, "added_snapshot_id"));
    m.added_files_count = static_cast<int32_t>(OptionalNumber(root, r, 504).value_or(0));
    m.existing_files_count = static_cast<int32_t>(OptionalNumber(root, r, 505).value_or(0));
    m.deleted_files_count = static_cast<int32_t>(OptionalNumber(root, r, 506).value_or(0));
    m.added_rows_count = OptionalNumber(root, r, 512).value_or(0);
    m.existing_rows_count = OptionalNumber(root, r, 513).value_or(0);
    m.deleted_rows_count = OptionalNumber(root, r, 514).value_or(0);
    if (const AvroValue* parts = FieldById(root, r, 507);
        parts != nullptr && summary_node != nullptr && summary_node->type == AvroType::kRecord) {
      for (const auto& item : parts->items) {
        FieldSummary s;
        const AvroValue* contains_null = FieldById(*summary_node, item, 509);
        s.contains_null = contains_null != nullptr && contains_null->b;
        if (const AvroValue* nan = FieldById(*summary_node, item, 518)) s.contains_nan = nan->b;
        if (const AvroValue* lo = FieldById(*summary_node, item, 510)) s.lower_bound = lo->bytes;
        if (const AvroValue* hi = FieldById(*summary_node, item, 511)) s.upper_bound = hi->bytes;
        m.partitions.push_back(std::move(s));
      }
    }
    if (const AvroValue* key = FieldById(root, r, 519)) m.key_metadata = key->bytes;
    out.push_back(std::move(m));
  }
  return out;
}

Result<std::vector<ManifestFile>> ReadManifestList(FileSystem* fs, const std::string& path) {
  ASSIGN_OR_RAISE(std::string bytes, ReadWholeFile(fs, LocalPath(path)));
  auto list = DecodeManifestList(bytes);
  if (!list.ok()) return list.status().WithContext(path);
  return list;
}

}  // namespace oxbow::iceberg
