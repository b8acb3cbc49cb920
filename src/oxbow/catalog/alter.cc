// alter_table: parsing a request and applying its changes to a descriptor (docs/api.md).
#include <algorithm>

#include "oxbow/catalog/json_internal.h"

namespace oxbow::catalog {
namespace {

using arrow::TypeId;
using nlohmann::json;

Result<std::string> StringMember(const json& j, const char* key, const std::string& op) {
  if (!j.contains(key) || !j[key].is_string()) {
    return Status::Invalid(op + " needs a string \"" + key + "\"");
  }
  return j[key].get<std::string>();
}

// "doc": a string, or null (none).
Result<std::optional<std::string>> DocMember(const json& j, const std::string& op) {
  if (!j.contains("doc") || j["doc"].is_null()) return std::optional<std::string>();
  if (!j["doc"].is_string()) return Status::Invalid(op + " \"doc\" must be a string or null");
  return std::optional<std::string>(j["doc"].get<std::string>());
}

Result<SchemaChange> ParseChange(const json& j) {
  if (!j.is_object() || !j.contains("op") || !j["op"].is_string()) {
    return Status::Invalid("every change needs a string \"op\"");
  }
  const std::string op = j["op"].get<std::string>();
  SchemaChange c;
  if (op == "set_properties") {
    c.op = SchemaChange::Op::kSetProperties;
    if (!j.contains("properties") || !j["properties"].is_object()) {
      return Status::Invalid("set_properties needs an object \"properties\"");
    }
    for (const auto& [k, v] : j["properties"].items()) {
      if (v.is_null()) {
        c.properties[k] = std::nullopt;
      } else if (v.is_string()) {
        c.properties[k] = v.get<std::string>();
      } else {
        return Status::Invalid("property " + Quote(k) + " must be a string (or null to remove it)");
      }
    }
    return c;
  }
  ASSIGN_OR_RAISE(c.name, StringMember(j, "name", op));
  if (op == "add_column" || op == "widen_type") {
    c.op = op == "add_column" ? SchemaChange::Op::kAddColumn : SchemaChange::Op::kWidenType;
    ASSIGN_OR_RAISE(std::string type, StringMember(j, "type", op));
    auto parsed = arrow::DataType::Parse(type);
    if (!parsed.ok()) return parsed.status().WithContext(op + " " + Quote(c.name));
    c.type = *parsed;
    if (op == "add_column") {
      if (j.contains("after")) {
        ASSIGN_OR_RAISE(c.after, StringMember(j, "after", op));
      }
      if (j.contains("first")) {
        if (!j["first"].is_boolean()) return Status::Invalid("\"first\" must be true or false");
        c.first = j["first"].get<bool>();
      }
      if (c.first && !c.after.empty()) {
        return Status::Invalid("add_column takes \"first\" or \"after\", not both");
      }
      ASSIGN_OR_RAISE(c.doc, DocMember(j, op));
      if (j.contains("nullable") && !(j["nullable"].is_boolean() && j["nullable"].get<bool>())) {
        return Status::Invalid("add_column " + Quote(c.name) +
                               ": a new column must be nullable (rows written before it have no "
                               "value for it)");
      }
    }
  } else if (op == "drop_column") {
    c.op = SchemaChange::Op::kDropColumn;
  } else if (op == "rename_column") {
    c.op = SchemaChange::Op::kRenameColumn;
    ASSIGN_OR_RAISE(c.new_name, StringMember(j, "new_name", op));
  } else if (op == "make_optional") {
    c.op = SchemaChange::Op::kMakeOptional;
  } else if (op == "set_column_doc") {
    c.op = SchemaChange::Op::kSetColumnDoc;
    if (!j.contains("doc")) {
      return Status::Invalid("set_column_doc needs \"doc\" (a string, or null to remove it)");
    }
    ASSIGN_OR_RAISE(c.doc, DocMember(j, op));
  } else {
    return Status::Invalid("unknown op " + Quote(op) +
                           " (known: add_column, drop_column, rename_column, widen_type, "
                           "make_optional, set_column_doc, set_properties)");
  }
  return c;
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The table properties that name column `name`: merge_engine.version_column (value) and
// fields.<name>.* (key) of a primary-key table.
constexpr char kVersionColumnProperty[] = "merge_engine.version_column";
std::vector<std::string> FieldProperties(const std::map<std::string, std::string>& properties,
                                         const std::string& name) {
  std::vector<std::string> out;
  const std::string prefix = "fields." + name + ".";
  for (const auto& [k, v] : properties) {
    if (k.rfind(prefix, 0) == 0 && k.find('.', prefix.size()) == std::string::npos) {
      out.push_back(k);
    }
  }
  return out;
}

// The working copy of a schema being changed.
struct Columns {
  std::vector<arrow::Field> fields;
  std::vector<int32_t> ids;
  int Find(const std::string& name) const {
    for (size_t i = 0; i < fields.size(); ++i) {
      if (fields[i].name == name) return static_cast<int>(i);
    }
    return -1;
  }
};

}  // namespace

bool IsWidening(const arrow::DataType& from, const arrow::DataType& to) {
  auto rank = [](TypeId id) {
    switch (id) {
      case TypeId::kInt8: return 1;
      case TypeId::kInt16: return 2;
      case TypeId::kInt32: return 3;
      case TypeId::kInt64: return 4;
      default: return 0;
    }
  };
  if (rank(from.id()) > 0 && rank(to.id()) > 0) return rank(from.id()) < rank(to.id());
  if (from.id() == TypeId::kFloat32 && to.id() == TypeId::kFloat64) return true;
  return from.id() == TypeId::kDecimal128 && to.id() == TypeId::kDecimal128 &&
         from.scale() == to.scale() && to.precision() > from.precision();
}

Result<AlterTableRequest> ParseAlterTable(std::string_view text) {
  return TranslateJsonErrors("alter_table", [&]() -> Result<AlterTableRequest> {
    ASSIGN_OR_RAISE(json j, ParseJson(text, "alter_table body"));
    if (!j.is_object() || !j.contains("table") || !j["table"].is_string()) {
      return Status::Invalid("\"table\" (\"namespace.table\") is required");
    }
    AlterTableRequest req;
    req.table = j["table"].get<std::string>();
    RETURN_NOT_OK(ValidateTableName(req.table));
    if (!j.contains("changes") || !j["changes"].is_array() || j["changes"].empty()) {
      return Status::Invalid("\"changes\" must be a non-empty list");
    }
    for (const auto& jc : j["changes"]) {
      auto change = ParseChange(jc);
      if (!change.ok()) {
        return change.status().WithContext("change " + std::to_string(req.changes.size() + 1));
      }
      req.changes.push_back(std::move(*change));
    }
    return req;
  });
}

Result<TableDescriptor> ApplyAlter(const TableDescriptor& table,
                                   const std::vector<SchemaChange>& changes) {
  TableDescriptor next = table;
  Columns cols{table.schema->fields(), table.field_ids};
  bool schema_changed = false;
  for (size_t n = 0; n < changes.size(); ++n) {
    const SchemaChange& c = changes[n];
    auto refuse = [&](const std::string& why) {
      return Status::Invalid("change " + std::to_string(n + 1) + ": " + why);
    };
    if (c.op == SchemaChange::Op::kSetProperties) {
      for (const auto& [k, v] : c.properties) {
        if (v) {
          next.properties[k] = *v;
        } else {
          next.properties.erase(k);
        }
      }
      continue;
    }
    const int i = cols.Find(c.name);
    const bool is_key = Contains(table.primary_key, c.name) || Contains(table.bucket_key, c.name);
    if (c.op == SchemaChange::Op::kAddColumn) {
      if (i >= 0) return refuse("column " + Quote(c.name) + " already exists");
      RETURN_NOT_OK(c.type.Validate());
      arrow::Field f{c.name, c.type, true, {}};
      SetFieldDoc(&f, c.doc);
      int at = static_cast<int>(cols.fields.size());
      if (c.first) at = 0;
      if (!c.after.empty()) {
        const int after = cols.Find(c.after);
        if (after < 0) return refuse("add_column after " + Quote(c.after) + ": no such column");
        at = after + 1;
      }
      cols.fields.insert(cols.fields.begin() + at, std::move(f));
      cols.ids.insert(cols.ids.begin() + at, ++next.last_field_id);
      schema_changed = true;
      continue;
    }
    if (i < 0) return refuse("column " + Quote(c.name) + " does not exist");
    switch (c.op) {
      case SchemaChange::Op::kDropColumn:
        if (is_key) {
          return refuse("column " + Quote(c.name) +
                        " is part of the primary or bucket key, which cannot be dropped");
        }
        if (cols.fields.size() == 1) return refuse("a table keeps at least one column");
        if (auto v = next.properties.find(kVersionColumnProperty);
            v != next.properties.end() && v->second == c.name) {
          return refuse("column " + Quote(c.name) +
                        " is the version column of the versioned merge engine "
                        "(merge_engine.version_column), which cannot be dropped");
        }
        // Its aggregation goes with it.
        for (const auto& k : FieldProperties(next.properties, c.name)) next.properties.erase(k);
        cols.fields.erase(cols.fields.begin() + i);
        cols.ids.erase(cols.ids.begin() + i);
        break;
      case SchemaChange::Op::kRenameColumn:
        if (is_key) {
          return refuse("column " + Quote(c.name) +
                        " is part of the primary or bucket key, which cannot be renamed");
        }
        if (cols.Find(c.new_name) >= 0) {
          return refuse("rename to " + Quote(c.new_name) + ": that column already exists");
        }
        cols.fields[i].name = c.new_name;
        // The merge properties naming it follow.
        for (const auto& k : FieldProperties(next.properties, c.name)) {
          auto node = next.properties.extract(k);
          node.key() = "fields." + c.new_name + k.substr(7 + c.name.size());
          next.properties.insert(std::move(node));
        }
        if (auto v = next.properties.find(kVersionColumnProperty);
            v != next.properties.end() && v->second == c.name) {
          v->second = c.new_name;
        }
        break;
      case SchemaChange::Op::kWidenType:
        if (is_key) {
          return refuse("column " + Quote(c.name) +
                        " is part of the primary or bucket key, whose type cannot change");
        }
        if (!IsWidening(cols.fields[i].type, c.type)) {
          return refuse("cannot change column " + Quote(c.name) + " from " +
                        cols.fields[i].type.ToString() + " to " + c.type.ToString() +
                        ": a type may only widen (int8 -> int16 -> int32 -> int64, float -> "
                        "double, decimal128 precision up with the same scale)");
        }
        cols.fields[i].type = c.type;
        break;
      case SchemaChange::Op::kMakeOptional:
        if (Contains(table.primary_key, c.name)) {
          return refuse("primary-key column " + Quote(c.name) + " must stay non-nullable");
        }
        cols.fields[i].nullable = true;
        break;
      case SchemaChange::Op::kSetColumnDoc: SetFieldDoc(&cols.fields[i], c.doc); break;
      default: break;
    }
    schema_changed = true;
  }
  auto unchanged = [&] {
    if (cols.ids != table.field_ids) return false;
    for (size_t i = 0; i < cols.fields.size(); ++i) {
      if (!cols.fields[i].Equals(table.schema->field(static_cast<int>(i)), true)) return false;
    }
    return true;
  };
  if (!schema_changed || unchanged()) return next;
  auto schema = std::make_shared<const arrow::Schema>(cols.fields, table.schema->metadata());
  RETURN_NOT_OK(schema->Validate());
  int32_t max_id = next.schema_id;
  for (const auto& v : next.previous_schemas) max_id = std::max(max_id, v.schema_id);
  next.previous_schemas.push_back(table.CurrentSchema());
  next.schema = std::move(schema);
  next.field_ids = std::move(cols.ids);
  next.schema_id = max_id + 1;
  return next;
}

}  // namespace oxbow::catalog
