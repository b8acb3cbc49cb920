#include "oxbow/catalog/descriptor.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "oxbow/catalog/json_internal.h"

namespace oxbow::catalog {
namespace {

void AssignMissingChildIds(TableDescriptor* t);

using nlohmann::json;

bool ValidNamePart(std::string_view part) {
  if (part.empty() || part.size() > 128) return false;
  for (char c : part) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  }
  return true;
}

json FieldToJson(const arrow::Field& f) {
  json j = {{"name", f.name}, {"type", f.type.ToString()}, {"nullable", f.nullable}};
  json m = json::object();
  for (const auto& [k, v] : f.metadata) {
    if (k == kFieldDocKey) {
      j["doc"] = v;
    } else {
      m[k] = v;
    }
  }
  if (!m.empty()) j["metadata"] = std::move(m);
  return j;
}

json SchemaJson(const arrow::Schema& schema) {
  json fields = json::array();
  for (const auto& f : schema.fields()) fields.push_back(FieldToJson(f));
  return {{"fields", std::move(fields)}};
}

Result<arrow::SchemaPtr> SchemaFrom(const json& j) {
  if (!j.is_object() || !j.contains("fields") || !j["fields"].is_array()) {
    return Status::Invalid("schema must be an object with a \"fields\" array");
  }
  std::vector<arrow::Field> fields;
  for (const auto& jf : j["fields"]) {
    if (!jf.is_object() || !jf.contains("name") || !jf["name"].is_string()) {
      return Status::Invalid("every schema field needs a string \"name\"");
    }
    arrow::Field f;
    f.name = jf["name"].get<std::string>();
    if (!jf.contains("type") || !jf["type"].is_string()) {
      return Status::Invalid("field " + Quote(f.name) + " needs a string \"type\"");
    }
    auto type = arrow::DataType::Parse(jf["type"].get<std::string>());
    if (!type.ok()) return type.status().WithContext("field " + Quote(f.name));
    f.type = *type;
    if (jf.contains("nullable")) {
      if (!jf["nullable"].is_boolean()) {
        return Status::Invalid("field " + Quote(f.name) + ": \"nullable\" must be true or false");
      }
      f.nullable = jf["nullable"].get<bool>();
    }
    if (jf.contains("metadata")) {
      if (!jf["metadata"].is_object()) {
        return Status::Invalid("field " + Quote(f.name) + ": \"metadata\" must be an object");
      }
      for (const auto& [k, v] : jf["metadata"].items()) {
        if (!v.is_string()) {
          return Status::Invalid("field " + Quote(f.name) + ": metadata values must be strings");
        }
        f.metadata.emplace_back(k, v.get<std::string>());
      }
    }
    if (jf.contains("doc") && !jf["doc"].is_null()) {
      if (!jf["doc"].is_string()) {
        return Status::Invalid("field " + Quote(f.name) + ": \"doc\" must be a string");
      }
      if (FieldDoc(f)) {
        return Status::Invalid("field " + Quote(f.name) +
                               ": give its doc as \"doc\" or as metadata \"doc\", not both");
      }
      SetFieldDoc(&f, jf["doc"].get<std::string>());
    }
    fields.push_back(std::move(f));
  }
  if (fields.empty()) return Status::Invalid("schema has no fields");
  auto schema = std::make_shared<const arrow::Schema>(std::move(fields));
  RETURN_NOT_OK(schema->Validate());
  return schema;
}

Result<std::vector<std::string>> StringList(const json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key)) return out;
  if (!j[key].is_array()) return Status::Invalid(std::string("\"") + key + "\" must be a list");
  for (const auto& v : j[key]) {
    if (!v.is_string()) return Status::Invalid(std::string("\"") + key + "\" must list strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

Result<std::vector<int32_t>> FieldIdsFrom(const json& j, const arrow::Schema& schema,
                                          int32_t last_field_id) {
  if (!j.is_array()) return Status::Invalid("\"field_ids\" must be a list");
  std::vector<int32_t> ids;
  for (const auto& v : j) {
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > last_field_id) {
      return Status::Invalid("\"field_ids\" must hold integers in [1, last_field_id]");
    }
    ids.push_back(v.get<int32_t>());
  }
  if (static_cast<int>(ids.size()) != schema.num_fields()) {
    return Status::Invalid("\"field_ids\" must give one id per column");
  }
  return ids;
}

// "child_field_ids": per column, its nested fields' ids (absent: none given yet).
Result<std::vector<ChildIds>> ChildIdsFrom(const json& j, const arrow::Schema& schema,
                                           int32_t last_field_id) {
  std::vector<ChildIds> out;
  if (!j.contains("child_field_ids")) return out;
  const json& list = j["child_field_ids"];
  if (!list.is_array() || static_cast<int>(list.size()) != schema.num_fields()) {
    return Status::Invalid("\"child_field_ids\" must give one list per column");
  }
  for (int i = 0; i < schema.num_fields(); ++i) {
    const json& ids = list[static_cast<size_t>(i)];
    if (!ids.is_array() || static_cast<int>(ids.size()) != CountChildIds(schema.field(i).type)) {
      return Status::Invalid("\"child_field_ids\" of column " + Quote(schema.field(i).name) +
                             " must give one id per nested field");
    }
    ChildIds column;
    for (const auto& v : ids) {
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > last_field_id) {
        return Status::Invalid("\"child_field_ids\" must hold integers in [1, last_field_id]");
      }
      column.push_back(v.get<int32_t>());
    }
    out.push_back(std::move(column));
  }
  return out;
}

// True when some column has nested fields (only then does a descriptor show their ids).
bool HasChildIds(const std::vector<ChildIds>& ids) {
  return std::any_of(ids.begin(), ids.end(), [](const ChildIds& c) { return !c.empty(); });
}

// The schema versions of a stored descriptor; a descriptor written before versions existed is
// version 0 with field ids 1..n.
Status SchemaVersionsFrom(const json& j, TableDescriptor* t) {
  if (!j.contains("field_ids")) {
    t->ResetSchemaVersions();
    return Status::OK();
  }
  if (!j.contains("schema_id") || !j["schema_id"].is_number_integer() ||
      !j.contains("last_field_id") || !j["last_field_id"].is_number_integer()) {
    return Status::Invalid("\"field_ids\" needs integer \"schema_id\" and \"last_field_id\"");
  }
  t->schema_id = j["schema_id"].get<int32_t>();
  t->last_field_id = j["last_field_id"].get<int32_t>();
  ASSIGN_OR_RAISE(t->field_ids, FieldIdsFrom(j["field_ids"], *t->schema, t->last_field_id));
  ASSIGN_OR_RAISE(t->child_ids, ChildIdsFrom(j, *t->schema, t->last_field_id));
  if (!j.contains("previous_schemas")) {
    AssignMissingChildIds(t);
    return Status::OK();
  }
  if (!j["previous_schemas"].is_array()) {
    return Status::Invalid("\"previous_schemas\" must be a list");
  }
  for (const auto& jv : j["previous_schemas"]) {
    if (!jv.is_object() || !jv.contains("schema_id") || !jv["schema_id"].is_number_integer() ||
        !jv.contains("schema") || !jv.contains("field_ids")) {
      return Status::Invalid(
          "every previous schema needs \"schema_id\", \"schema\" and \"field_ids\"");
    }
    SchemaVersion v;
    v.schema_id = jv["schema_id"].get<int32_t>();
    ASSIGN_OR_RAISE(v.schema, SchemaFrom(jv["schema"]));
    ASSIGN_OR_RAISE(v.field_ids, FieldIdsFrom(jv["field_ids"], *v.schema, t->last_field_id));
    ASSIGN_OR_RAISE(v.child_ids, ChildIdsFrom(jv, *v.schema, t->last_field_id));
    t->previous_schemas.push_back(std::move(v));
  }
  AssignMissingChildIds(t);
  return Status::OK();
}

}  // namespace

nlohmann::json DescriptorJson(const TableDescriptor& t) {
  json props = json::object();
  for (const auto& [k, v] : t.properties) props[k] = v;
  json previous = json::array();
  for (const auto& v : t.previous_schemas) {
    json jv = {
        {"schema_id", v.schema_id}, {"schema", SchemaJson(*v.schema)}, {"field_ids", v.field_ids}};
    if (HasChildIds(v.child_ids)) jv["child_field_ids"] = v.child_ids;
    previous.push_back(std::move(jv));
  }
  json out = {{"table", t.name},
              {"table_id", t.table_id},
              {"schema", SchemaJson(*t.schema)},
              {"schema_id", t.schema_id},
              {"field_ids", t.field_ids},
              {"last_field_id", t.last_field_id},
              {"previous_schemas", std::move(previous)},
              {"buckets", t.buckets},
              {"bucket_key", t.bucket_key},
              {"primary_key", t.primary_key},
              {"properties", std::move(props)},
              {"created_ms", t.created_ms}};
  if (HasChildIds(t.child_ids)) out["child_field_ids"] = t.child_ids;
  return out;
}

Result<TableDescriptor> DescriptorFrom(const nlohmann::json& j) {
  if (!j.is_object()) return Status::Invalid("expected a JSON object");
  TableDescriptor t;
  if (!j.contains("table") || !j["table"].is_string()) {
    return Status::Invalid("\"table\" (\"namespace.table\") is required");
  }
  t.name = j["table"].get<std::string>();
  RETURN_NOT_OK(ValidateTableName(t.name));
  if (!j.contains("schema")) return Status::Invalid("\"schema\" is required");
  ASSIGN_OR_RAISE(t.schema, SchemaFrom(j["schema"]));
  RETURN_NOT_OK(SchemaVersionsFrom(j, &t));
  if (j.contains("buckets")) {
    if (!j["buckets"].is_number_integer() || j["buckets"].get<int64_t>() < 1 ||
        j["buckets"].get<int64_t>() > 1024) {
      return Status::Invalid("\"buckets\" must be an integer in [1, 1024]");
    }
    t.buckets = j["buckets"].get<int32_t>();
  }
  ASSIGN_OR_RAISE(t.bucket_key, StringList(j, "bucket_key"));
  ASSIGN_OR_RAISE(t.primary_key, StringList(j, "primary_key"));
  for (const auto& key : {&t.bucket_key, &t.primary_key}) {
    for (const auto& col : *key) {
      if (t.schema->GetFieldIndex(col) < 0) {
        return Status::Invalid("key column " + Quote(col) + " is not in the schema");
      }
      const arrow::DataType& type = t.schema->field(t.schema->GetFieldIndex(col)).type;
      if (type.is_nested()) {
        return Status::Invalid("key column " + Quote(col) + " has type " + type.ToString() +
                               ": a nested column cannot be a key");
      }
    }
  }
  if (!t.primary_key.empty()) {
    for (size_t i = 0; i < t.primary_key.size(); ++i) {
      const std::string& col = t.primary_key[i];
      if (std::count(t.primary_key.begin(), t.primary_key.end(), col) > 1) {
        return Status::Invalid("primary-key column " + Quote(col) + " is listed twice");
      }
      if (t.schema->field(t.schema->GetFieldIndex(col)).nullable) {
        return Status::Invalid("primary-key column " + Quote(col) +
                               " must be non-nullable (\"nullable\": false)");
      }
    }
    // The bucket key defaults to the primary key and must be part of it, so that every row of
    // a key lands in one bucket.
    if (t.bucket_key.empty()) t.bucket_key = t.primary_key;
    for (const auto& col : t.bucket_key) {
      if (std::find(t.primary_key.begin(), t.primary_key.end(), col) == t.primary_key.end()) {
        return Status::Invalid("bucket-key column " + Quote(col) +
                               " is not part of the primary key");
      }
    }
  }
  if (j.contains("properties")) {
    if (!j["properties"].is_object()) return Status::Invalid("\"properties\" must be an object");
    for (const auto& [k, v] : j["properties"].items()) {
      if (!v.is_string()) return Status::Invalid("property " + Quote(k) + " must be a string");
      t.properties[k] = v.get<std::string>();
    }
  }
  if (j.contains("table_id") && j["table_id"].is_number_integer()) {
    t.table_id = j["table_id"].get<int64_t>();
  }
  if (j.contains("created_ms") && j["created_ms"].is_number_integer()) {
    t.created_ms = j["created_ms"].get<int64_t>();
  }
  return t;
}

Result<nlohmann::json> ParseJson(std::string_view text, std::string_view what) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Invalid(std::string(what) + " is not valid JSON");
  return j;
}

std::vector<int> TableDescriptor::BucketKeyIndices() const {
  std::vector<int> out;
  for (const auto& col : bucket_key) out.push_back(schema->GetFieldIndex(col));
  return out;
}

namespace {

// The fields that take an id below a nested type: a map's key and value (not its entries).
std::vector<const arrow::Field*> IdFields(const arrow::DataType& type) {
  std::vector<const arrow::Field*> out;
  if (type.id() == arrow::TypeId::kMap) {
    for (const auto& f : type.child(0).type.children()) out.push_back(&f);
  } else {
    for (const auto& f : type.children()) out.push_back(&f);
  }
  return out;
}

arrow::DataType WithIdsFrom(const arrow::DataType& type, const ChildIds& ids, size_t* next) {
  if (!type.is_nested()) return type;
  std::vector<arrow::Field> fields;
  for (const arrow::Field* f : IdFields(type)) {
    arrow::Field out = *f;
    if (*next < ids.size()) {
      out.metadata = {{arrow::kFieldIdKey, std::to_string(ids[(*next)++])}};
    }
    out.type = WithIdsFrom(f->type, ids, next);
    fields.push_back(std::move(out));
  }
  if (type.id() == arrow::TypeId::kMap) {
    arrow::Field entries = type.child(0);
    entries.type = arrow::DataType::Nested(arrow::TypeId::kStruct, std::move(fields));
    fields = {std::move(entries)};
  }
  return arrow::DataType::Nested(type.id(), std::move(fields), type.list_size());
}

// Gives every nested column of `t` without ids (a descriptor written before nested fields had
// ids) the next ones; a column has the same nested fields in every version that holds it then.
void AssignMissingChildIds(TableDescriptor* t) {
  std::map<int32_t, ChildIds> given;
  auto assign = [&](const arrow::Schema& schema, const std::vector<int32_t>& field_ids,
                    std::vector<ChildIds>* child_ids) {
    child_ids->resize(field_ids.size());
    for (size_t i = 0; i < field_ids.size(); ++i) {
      const int n = CountChildIds(schema.field(static_cast<int>(i)).type);
      ChildIds& ids = (*child_ids)[i];
      if (static_cast<int>(ids.size()) == n) continue;
      auto [it, added] = given.try_emplace(field_ids[i]);
      if (added) {
        for (int k = 0; k < n; ++k) it->second.push_back(++t->last_field_id);
      }
      ids = it->second;
    }
  };
  for (auto& v : t->previous_schemas) assign(*v.schema, v.field_ids, &v.child_ids);
  assign(*t->schema, t->field_ids, &t->child_ids);
}

}  // namespace

int CountChildIds(const arrow::DataType& type) {
  int n = 0;
  for (const arrow::Field* f : IdFields(type)) n += 1 + CountChildIds(f->type);
  return n;
}

arrow::DataType WithChildIds(const arrow::DataType& type, const ChildIds& ids) {
  size_t next = 0;
  return WithIdsFrom(type, ids, &next);
}

arrow::DataType SchemaVersion::TypeWithIds(int i) const {
  const arrow::DataType& type = schema->field(i).type;
  if (static_cast<size_t>(i) >= child_ids.size()) return type;
  return WithChildIds(type, child_ids[static_cast<size_t>(i)]);
}

void TableDescriptor::ResetSchemaVersions() {
  schema_id = 0;
  field_ids.clear();
  child_ids.clear();
  for (int i = 0; i < schema->num_fields(); ++i) field_ids.push_back(i + 1);
  last_field_id = schema->num_fields();
  previous_schemas.clear();
  AssignMissingChildIds(this);
}

Result<SchemaVersion> TableDescriptor::SchemaById(int32_t id) const {
  if (id == schema_id) return CurrentSchema();
  for (const auto& v : previous_schemas) {
    if (v.schema_id == id) return v;
  }
  return Status::NotFound("table " + Quote(name) + " has no schema version " + std::to_string(id));
}

std::optional<std::string> FieldDoc(const arrow::Field& field) {
  return arrow::FindMetadata(field.metadata, kFieldDocKey);
}

void SetFieldDoc(arrow::Field* field, const std::optional<std::string>& doc) {
  auto& m = field->metadata;
  m.erase(
      std::remove_if(m.begin(), m.end(), [](const auto& kv) { return kv.first == kFieldDocKey; }),
      m.end());
  if (doc) m.emplace_back(kFieldDocKey, *doc);
}

Status ValidateTableName(std::string_view name) {
  auto dot = name.find('.');
  if (dot == std::string_view::npos || !ValidNamePart(name.substr(0, dot)) ||
      !ValidNamePart(name.substr(dot + 1))) {
    return Status::Invalid(
        "table name " + Quote(name) +
        " must be 'namespace.table', each part 1-128 letters, digits, '_' or '-'");
  }
  return Status::OK();
}

Status ValidateNamespace(std::string_view name) {
  if (!ValidNamePart(name)) {
    return Status::Invalid("namespace " + Quote(name) +
                           " must be 1-128 letters, digits, '_' or '-'");
  }
  return Status::OK();
}

Result<arrow::SchemaPtr> SchemaFromJson(std::string_view text) {
  return TranslateJsonErrors("schema", [&]() -> Result<arrow::SchemaPtr> {
    ASSIGN_OR_RAISE(json j, ParseJson(text, "schema"));
    return SchemaFrom(j);
  });
}

std::string SchemaToJson(const arrow::Schema& schema) { return SchemaJson(schema).dump(); }

Result<CreateTableRequest> ParseCreateTable(std::string_view text) {
  return TranslateJsonErrors("create_table", [&]() -> Result<CreateTableRequest> {
    ASSIGN_OR_RAISE(json j, ParseJson(text, "create_table body"));
    CreateTableRequest req;
    ASSIGN_OR_RAISE(req.table, DescriptorFrom(j));
    if (j.contains("if_not_exists")) {
      if (!j["if_not_exists"].is_boolean()) {
        return Status::Invalid("\"if_not_exists\" must be true or false");
      }
      req.if_not_exists = j["if_not_exists"].get<bool>();
    }
    return req;
  });
}

std::string DescriptorToJson(const TableDescriptor& table) { return DescriptorJson(table).dump(); }

Result<TableDescriptor> DescriptorFromJson(std::string_view text) {
  return TranslateJsonErrors("table descriptor", [&]() -> Result<TableDescriptor> {
    ASSIGN_OR_RAISE(json j, ParseJson(text, "table descriptor"));
    return DescriptorFrom(j);
  });
}

}  // namespace oxbow::catalog
