// Test-only driver for tests/conformance/test_iceberg.py: creates a table and commits data
// files described in JSON, so pyiceberg and fastavro can check what we wrote.
//
//   iceberg_testtool create  <location> <json>  {"schema":[{"name","type","nullable","field_id"}],
//                                                "partition":[{"source","transform"}],
//                                                "properties":{...}}
//   iceberg_testtool append  <location> <json>  {"files":[<file>], "summary":{...}}
//   iceberg_testtool replace <location> <json>  {"delete":[path], "files":[<file>], "summary":{}}
//   iceberg_testtool expire  <location> <json>  {"retain_last":1, "older_than_ms":..,
//   "delete_files":true} iceberg_testtool show    <location> iceberg_testtool bucket  <iceberg
//   type> <json value> <N>
//
// <file>: {"path", "record_count", "file_size", "partition_source": {"<column>": value},
//          "column_sizes"|"value_counts"|"null_value_counts"|"nan_value_counts": {"<id>": n},
//          "lower_bounds"|"upper_bounds": {"<id>": "<hex of the single-value serialization>"}}
// Values in JSON: numbers for int/long/date (days)/timestamp (micros)/float/double, a decimal's
// unscaled value as a number or a string of digits, strings for string, hex for binary/fixed.
// Every command prints one JSON object on stdout; errors go to stderr with exit status 1.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "oxbow/iceberg/io_internal.h"
#include "oxbow/iceberg/table.h"

namespace oxbow::iceberg {
namespace {

using Json = nlohmann::json;

Result<std::string> FromHex(const std::string& hex) {
  if (hex.size() % 2 != 0) return Status::Invalid("odd-length hex " + hex);
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string ToHex(std::string_view bytes) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

Result<std::optional<Literal>> JsonToLiteral(const Type& type, const Json& v) {
  if (v.is_null()) return std::optional<Literal>();
  switch (type.kind()) {
    case TypeKind::kBoolean: return std::optional<Literal>(v.get<bool>());
    case TypeKind::kInt:
    case TypeKind::kDate: return std::optional<Literal>(v.get<int32_t>());
    case TypeKind::kLong:
    case TypeKind::kTimestamp:
    case TypeKind::kTimestampTz: return std::optional<Literal>(v.get<int64_t>());
    case TypeKind::kFloat: return std::optional<Literal>(v.get<float>());
    case TypeKind::kDouble: return std::optional<Literal>(v.get<double>());
    case TypeKind::kString: return std::optional<Literal>(v.get<std::string>());
    case TypeKind::kBinary:
    case TypeKind::kFixed: {
      ASSIGN_OR_RAISE(auto bytes, FromHex(v.get<std::string>()));
      return std::optional<Literal>(std::move(bytes));
    }
    case TypeKind::kDecimal: {
      if (!v.is_string()) return std::optional<Literal>(Decimal{v.get<int64_t>()});
      std::string digits = v.get<std::string>();
      bool negative = !digits.empty() && digits[0] == '-';
      __int128 unscaled = 0;
      for (size_t i = negative ? 1 : 0; i < digits.size(); ++i) {
        if (!std::isdigit(static_cast<unsigned char>(digits[i]))) {
          return Status::Invalid("bad decimal digits " + digits);
        }
        unscaled = unscaled * 10 + (digits[i] - '0');
      }
      return std::optional<Literal>(Decimal{negative ? -unscaled : unscaled});
    }
    case TypeKind::kStruct:
    case TypeKind::kList:
    case TypeKind::kMap: break;
  }
  return Status::Invalid("unsupported type");
}

Result<DataFile> ParseFile(const IcebergTable& table, const Json& j) {
  DataFile f;
  f.file_path = j.at("path").get<std::string>();
  f.record_count = j.at("record_count").get<int64_t>();
  f.file_size_in_bytes = j.at("file_size").get<int64_t>();
  std::vector<std::pair<int32_t, std::optional<Literal>>> sources;
  if (j.contains("partition_source")) {
    for (const auto& [name, value] : j["partition_source"].items()) {
      const NestedField* field = table.schema().FindField(name);
      if (field == nullptr) return Status::Invalid("no column " + name);
      ASSIGN_OR_RAISE(auto literal, JsonToLiteral(field->type, value));
      sources.emplace_back(field->id, std::move(literal));
    }
  }
  ASSIGN_OR_RAISE(f.partition, table.spec().PartitionFor(table.schema(), sources));
  for (auto [key, member] : {std::pair{"column_sizes", &DataFile::column_sizes},
                             std::pair{"value_counts", &DataFile::value_counts},
                             std::pair{"null_value_counts", &DataFile::null_value_counts},
                             std::pair{"nan_value_counts", &DataFile::nan_value_counts}}) {
    if (!j.contains(key)) continue;
    for (const auto& [id, n] : j[key].items()) (f.*member)[std::stoi(id)] = n.get<int64_t>();
  }
  for (auto [key, member] : {std::pair{"lower_bounds", &DataFile::lower_bounds},
                             std::pair{"upper_bounds", &DataFile::upper_bounds}}) {
    if (!j.contains(key)) continue;
    for (const auto& [id, hex] : j[key].items()) {
      ASSIGN_OR_RAISE((f.*member)[std::stoi(id)], FromHex(hex.get<std::string>()));
    }
  }
  if (j.contains("split_offsets")) f.split_offsets = j["split_offsets"].get<std::vector<int64_t>>();
  return f;
}

Result<std::vector<DataFile>> ParseFiles(const IcebergTable& table, const Json& j) {
  std::vector<DataFile> files;
  if (!j.contains("files")) return files;
  for (const auto& jf : j["files"]) {
    ASSIGN_OR_RAISE(auto f, ParseFile(table, jf));
    files.push_back(std::move(f));
  }
  return files;
}

std::map<std::string, std::string> ParseSummary(const Json& j) {
  std::map<std::string, std::string> out;
  if (j.contains("summary")) {
    for (const auto& [k, v] : j["summary"].items()) {
      out[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
  }
  return out;
}

Json Describe(const IcebergTable& table) {
  Json out = {{"metadata_file", table.metadata_file()},
              {"version", table.version()},
              {"snapshots", table.metadata().snapshots.size()}};
  if (const Snapshot* s = table.CurrentSnapshot()) {
    out["snapshot_id"] = s->snapshot_id;
    out["sequence_number"] = s->sequence_number;
    out["summary"] = s->summary;
  }
  return out;
}

// read-manifest-list <list>: each manifest's fields, bounds in hex.
Status ManifestListJson(FileSystem* fs, const std::string& path, Json* out) {
  ASSIGN_OR_RAISE(auto list, ReadManifestList(fs, path));
  Json manifests = Json::array();
  for (const auto& m : list) {
    Json parts = Json::array();
    for (const auto& p : m.partitions) {
      parts.push_back({{"contains_null", p.contains_null},
                       {"lower", p.lower_bound ? Json(ToHex(*p.lower_bound)) : Json()},
                       {"upper", p.upper_bound ? Json(ToHex(*p.upper_bound)) : Json()}});
    }
    manifests.push_back({{"path", m.manifest_path},
                         {"length", m.manifest_length},
                         {"spec_id", m.partition_spec_id},
                         {"sequence_number", m.sequence_number},
                         {"min_sequence_number", m.min_sequence_number},
                         {"added_snapshot_id", m.added_snapshot_id},
                         {"added_files", m.added_files_count},
                         {"existing_files", m.existing_files_count},
                         {"deleted_files", m.deleted_files_count},
                         {"added_rows", m.added_rows_count},
                         {"partitions", std::move(parts)}});
  }
  *out = {{"manifests", std::move(manifests)}};
  return Status::OK();
}

// read-manifest <manifest> <metadata.json>: each entry, partition values and bounds in hex.
Status ManifestJson(FileSystem* fs, const std::string& manifest_path,
                    const std::string& metadata_path, Json* out) {
  ASSIGN_OR_RAISE(std::string metadata_json, ReadWholeFile(fs, metadata_path));
  ASSIGN_OR_RAISE(auto metadata, TableMetadata::FromJson(metadata_json));
  ASSIGN_OR_RAISE(std::string bytes, ReadWholeFile(fs, manifest_path));
  const Schema& schema = *metadata.CurrentSchema();
  const PartitionSpec& spec = *metadata.DefaultSpec();
  ASSIGN_OR_RAISE(auto types, spec.PartitionTypes(schema));
  ASSIGN_OR_RAISE(auto entries, DecodeManifest(bytes, schema, spec));
  Json list = Json::array();
  for (const auto& e : entries) {
    Json partition = Json::array();
    for (size_t i = 0; i < types.size(); ++i) {
      const auto& v = e.data_file.partition[i];
      partition.push_back(v ? Json(ToHex(*SerializeLiteral(types[i], *v))) : Json());
    }
    Json lower = Json::object(), upper = Json::object(), nulls = Json::object();
    for (const auto& [id, b] : e.data_file.lower_bounds) lower[std::to_string(id)] = ToHex(b);
    for (const auto& [id, b] : e.data_file.upper_bounds) upper[std::to_string(id)] = ToHex(b);
    for (const auto& [id, n] : e.data_file.null_value_counts) nulls[std::to_string(id)] = n;
    list.push_back({{"status", static_cast<int>(e.status)},
                    {"snapshot_id", e.snapshot_id ? Json(*e.snapshot_id) : Json()},
                    {"sequence_number", e.sequence_number ? Json(*e.sequence_number) : Json()},
                    {"path", e.data_file.file_path},
                    {"format", e.data_file.file_format},
                    {"record_count", e.data_file.record_count},
                    {"file_size", e.data_file.file_size_in_bytes},
                    {"partition", std::move(partition)},
                    {"lower_bounds", std::move(lower)},
                    {"upper_bounds", std::move(upper)},
                    {"null_value_counts", std::move(nulls)}});
  }
  *out = {{"entries", std::move(list)}};
  return Status::OK();
}

// create <location> <json>: a new table of the schema, partition spec and properties given.
Status CreateTable(const std::shared_ptr<FileSystem>& fs, const std::string& location,
                   const Json& j, Json* out) {
  std::vector<arrow::Field> fields;
  for (const auto& jf : j.at("schema")) {
    arrow::Field field;
    field.name = jf.at("name").get<std::string>();
    ASSIGN_OR_RAISE(field.type, arrow::DataType::Parse(jf.at("type").get<std::string>()));
    field.nullable = jf.value("nullable", true);
    if (jf.contains("field_id")) {
      field.metadata.emplace_back("PARQUET:field_id", std::to_string(jf["field_id"].get<int>()));
    }
    fields.push_back(std::move(field));
  }
  ASSIGN_OR_RAISE(Schema schema, SchemaFromArrow(arrow::Schema(std::move(fields))));
  std::vector<PartitionFieldRequest> requests;
  if (j.contains("partition")) {
    for (const auto& p : j["partition"]) {
      ASSIGN_OR_RAISE(Transform t, Transform::Parse(p.at("transform").get<std::string>()));
      requests.push_back({p.at("source").get<std::string>(), t, p.value("name", "")});
    }
  }
  ASSIGN_OR_RAISE(PartitionSpec spec, PartitionSpec::Make(schema, requests));
  std::map<std::string, std::string> properties;
  if (j.contains("properties")) {
    for (const auto& [k, v] : j["properties"].items()) properties[k] = v.get<std::string>();
  }
  ASSIGN_OR_RAISE(auto table, IcebergTable::Create(fs, location, schema, spec, properties));
  *out = Describe(*table);
  return Status::OK();
}

Status Run(int argc, char** argv, Json* out) {
  if (argc < 3) return Status::Invalid("usage: iceberg_testtool <command> <args...>");
  std::string command = argv[1];
  if (command == "bucket") {
    if (argc != 5) return Status::Invalid("usage: bucket <type> <json value> <N>");
    ASSIGN_OR_RAISE(Type type, Type::Parse(argv[2]));
    ASSIGN_OR_RAISE(auto literal, JsonToLiteral(type, Json::parse(argv[3])));
    ASSIGN_OR_RAISE(auto bucket, Transform::Bucket(std::atoi(argv[4])).Apply(type, literal));
    ASSIGN_OR_RAISE(int32_t hash, BucketHash(type, *literal));
    *out = {{"bucket", std::get<int32_t>(*bucket)}, {"hash", hash}};
    return Status::OK();
  }
  auto fs = PosixFileSystem::Default();
  if (command == "read-manifest-list") return ManifestListJson(fs.get(), argv[2], out);
  if (command == "read-manifest") {
    if (argc != 4) return Status::Invalid("usage: read-manifest <manifest> <metadata.json>");
    return ManifestJson(fs.get(), argv[2], argv[3], out);
  }
  std::string location = argv[2];
  Json j = argc > 3 ? Json::parse(argv[3]) : Json::object();
  if (command == "create") return CreateTable(fs, location, j, out);
  ASSIGN_OR_RAISE(auto table, IcebergTable::Load(fs, location));
  if (command == "append") {
    ASSIGN_OR_RAISE(auto files, ParseFiles(*table, j));
    RETURN_NOT_OK(table->AppendFiles(files, ParseSummary(j)).status());
  } else if (command == "replace") {
    ASSIGN_OR_RAISE(auto files, ParseFiles(*table, j));
    std::vector<std::string> deleted;
    if (j.contains("delete")) deleted = j["delete"].get<std::vector<std::string>>();
    RETURN_NOT_OK(table->ReplaceFiles(deleted, files, ParseSummary(j)).status());
  } else if (command == "expire") {
    ExpireOptions options;
    options.retain_last = j.value("retain_last", 1);
    if (j.contains("older_than_ms")) options.older_than_ms = j["older_than_ms"].get<int64_t>();
    options.delete_files = j.value("delete_files", true);
    ASSIGN_OR_RAISE(auto r, table->ExpireSnapshots(options));
    *out = Describe(*table);
    (*out)["expired_snapshots"] = r.expired_snapshots;
    (*out)["deleted_manifest_lists"] = r.deleted_manifest_lists;
    (*out)["deleted_manifests"] = r.deleted_manifests;
    (*out)["deleted_data_files"] = r.deleted_data_files;
    return Status::OK();
  } else if (command != "show") {
    return Status::Invalid("unknown command " + command);
  }
  *out = Describe(*table);
  ASSIGN_OR_RAISE(auto live, table->LiveEntries());
  Json paths = Json::array();
  for (const auto& e : live) paths.push_back(e.data_file.file_path);
  (*out)["live_files"] = std::move(paths);
  return Status::OK();
}

}  // namespace
}  // namespace oxbow::iceberg

int main(int argc, char** argv) {
  nlohmann::json out;
  oxbow::Status st;
  try {
    st = oxbow::iceberg::Run(argc, argv, &out);
  } catch (const std::exception& e) {
    st = oxbow::Status::Invalid(std::string("bad JSON argument: ") + e.what());
  }
  if (!st.ok()) {
    std::cerr << "iceberg_testtool: " << st.ToString() << "\n";
    return 1;
  }
  std::cout << out.dump() << "\n";
  return 0;
}
