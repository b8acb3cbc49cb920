// alter_table: parsing a request and applying its changes to a descriptor (docs/api.md).
#include <algorithm>
#include <cctype>

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
  if (j.contains("name") && j["name"].is_array()) {
    for (const auto& part : j["name"]) {
      if (!part.is_string() || part.get<std::string>().empty()) {
        return Status::Invalid(op + " \"name\" must be a column name or a list of names");
      }
      c.path.push_back(part.get<std::string>());
    }
    if (c.path.empty()) return Status::Invalid(op + " \"name\" must not be an empty list");
    c.name = FormatColumnPath(c.path);
  } else {
    ASSIGN_OR_RAISE(c.name, StringMember(j, "name", op));
    c.path = {c.name};
  }
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

// A field and its nested fields, each with its id, as ApplyAlter changes them.
struct Node {
  arrow::Field field;  // a nested one's type is rebuilt from `children` by ToField
  int32_t id = 0;
  std::vector<Node> children;  // struct fields; a list's item; a map's key and value
  int Find(const std::string& name) const {
    for (size_t i = 0; i < children.size(); ++i) {
      if (children[i].field.name == name) return static_cast<int>(i);
    }
    return -1;
  }
};

Node ToNode(const arrow::Field& field, int32_t id, const ChildIds& ids, size_t* next) {
  Node node{field, id, {}};
  const arrow::DataType& t = field.type;
  const auto& fields = t.id() == TypeId::kMap ? t.child(0).type.children() : t.children();
  for (const arrow::Field& f : fields) {
    const int32_t child_id = *next < ids.size() ? ids[(*next)++] : 0;
    node.children.push_back(ToNode(f, child_id, ids, next));
  }
  return node;
}

// The node's field with its type rebuilt from its children; their ids appended in pre-order.
arrow::Field ToField(const Node& node, ChildIds* ids) {
  arrow::Field f = node.field;
  if (!f.type.is_nested()) return f;
  std::vector<arrow::Field> fields;
  for (const Node& c : node.children) {
    ids->push_back(c.id);
    fields.push_back(ToField(c, ids));
  }
  if (f.type.id() == TypeId::kMap) {
    arrow::Field entries = f.type.child(0);
    entries.type = arrow::DataType::Nested(TypeId::kStruct, std::move(fields));
    fields = {std::move(entries)};
  }
  f.type = arrow::DataType::Nested(f.type.id(), std::move(fields), f.type.list_size());
  return f;
}

// The node's type as changed so far, for messages.
std::string TypeName(const Node& node) {
  ChildIds ids;
  return ToField(node, &ids).type.ToString();
}

// A node with fresh ids for the nested fields of a new field's type.
Node NewNode(const arrow::Field& field, int32_t id, int32_t* last_field_id) {
  ChildIds ids;
  for (int k = CountChildIds(field.type); k > 0; --k) ids.push_back(++*last_field_id);
  size_t next = 0;
  return ToNode(field, id, ids, &next);
}

const char* KindOf(TypeId id) {
  switch (id) {
    case TypeId::kList: return "a list";
    case TypeId::kFixedSizeList: return "a fixed_size_list";
    case TypeId::kMap: return "a map";
    case TypeId::kStruct: return "a struct";
    default: return "not nested";
  }
}

// The node at `path` below `root` (the table's columns as a struct's children); Invalid naming
// the first name that is not there. A list's item is named by its name or "element", a map's
// key and value by "key" and "value".
Result<Node*> Resolve(Node* root, const std::vector<std::string>& path) {
  Node* node = root;
  for (size_t k = 0; k < path.size(); ++k) {
    const std::string& name = path[k];
    const TypeId kind = node->field.type.id();
    int at = -1;
    if (kind == TypeId::kStruct) {
      at = node->Find(name);
    } else if (kind == TypeId::kList || kind == TypeId::kFixedSizeList) {
      if (name == node->children[0].field.name || name == "element") at = 0;
    } else if (kind == TypeId::kMap) {
      if (name == "key") at = 0;
      if (name == "value") at = 1;
    }
    if (at < 0) {
      const std::vector<std::string> parent(path.begin(), path.begin() + k);
      if (k == 0) return Status::Invalid("column " + Quote(name) + " does not exist");
      const std::string where = FormatColumnPath(parent) + " (" + TypeName(*node) + ")";
      if (kind == TypeId::kStruct) {
        return Status::Invalid("struct " + where + " has no field " + Quote(name));
      }
      if (kind == TypeId::kMap) {
        return Status::Invalid(where + " is a map: its fields are 'key' and 'value', not " +
                               Quote(name));
      }
      if (kind == TypeId::kList || kind == TypeId::kFixedSizeList) {
        return Status::Invalid(where + " is " + KindOf(kind) + ": its item is " +
                               Quote(node->children[0].field.name) + " (or 'element'), not " +
                               Quote(name));
      }
      return Status::Invalid(where + " is not nested: it has no field " + Quote(name));
    }
    node = &node->children[static_cast<size_t>(at)];
  }
  return node;
}

// A struct field's name must print back in the type's name ("struct<name: type>",
// docs/api.md#nested-types) and parse back as itself: no separators, no brackets, no edge
// whitespace (the parser trims it).
Status CheckNestedName(const std::string& name) {
  const bool edge_space =
      !name.empty() && (std::isspace(static_cast<unsigned char>(name.front())) ||
                        std::isspace(static_cast<unsigned char>(name.back())));
  if (name.empty() || edge_space || name.find_first_of(",:<>()[]") != std::string::npos) {
    return Status::Invalid("field name " + Quote(name) +
                           " inside a struct must be non-empty, without ',', ':', brackets "
                           "('<>', '()', '[]') or leading and trailing spaces");
  }
  return Status::OK();
}

// One column change being applied: where its path leads, and how to refuse it.
struct ColumnChange {
  const SchemaChange& c;
  size_t number;  // 1-based, for messages
  bool nested;
  std::string shown;  // the path as messages show it
  Node* parent;
  std::string leaf;
  int index;    // the leaf's place in a struct parent, -1 when absent
  bool is_key;  // a top-level primary- or bucket-key column
  std::string parent_shown;

  Status Refuse(const std::string& why) const {
    return Status::Invalid("change " + std::to_string(number) + ": " + why);
  }
  // Only a struct's fields are added, dropped or renamed.
  Status NeedStructParent(const char* what) const {
    if (parent->field.type.id() == TypeId::kStruct) return Status::OK();
    if (!parent->field.type.is_nested()) {
      return Refuse(parent_shown + " is not nested: it has no field " + Quote(leaf));
    }
    return Refuse(std::string(what) + " " + Quote(shown) + ": " + parent_shown + " is " +
                  KindOf(parent->field.type.id()) + ", not a struct; only a struct's fields are " +
                  "added, dropped or renamed (a list's item and a map's key and value stay)");
  }
  bool is_map_key() const { return parent->field.type.id() == TypeId::kMap && leaf == "key"; }
};

void SetProperties(const SchemaChange& c, TableDescriptor* next) {
  for (const auto& [k, v] : c.properties) {
    if (v) {
      next->properties[k] = *v;
    } else {
      next->properties.erase(k);
    }
  }
}

Status AddColumn(const ColumnChange& ch, TableDescriptor* next) {
  const SchemaChange& c = ch.c;
  RETURN_NOT_OK(ch.NeedStructParent("add_column"));
  if (ch.index >= 0) {
    return ch.Refuse((ch.nested ? "field " : "column ") + Quote(ch.shown) + " already exists");
  }
  if (ch.nested) {
    auto st = CheckNestedName(ch.leaf);
    if (!st.ok()) return ch.Refuse(st.message());
  }
  RETURN_NOT_OK(c.type.Validate());
  arrow::Field f{ch.leaf, c.type, true, {}};
  if (ch.nested && c.doc) {
    return ch.Refuse("add_column " + Quote(ch.shown) +
                     ": a nested field has no doc (its type's name has no place for one)");
  }
  SetFieldDoc(&f, c.doc);
  Node* parent = ch.parent;
  int at = static_cast<int>(parent->children.size());
  if (c.first) at = 0;
  if (!c.after.empty()) {
    const int after = parent->Find(c.after);
    if (after < 0) {
      return ch.Refuse("add_column after " + Quote(c.after) + ": no such " +
                       (ch.nested ? "field in " + ch.parent_shown : std::string("column")));
    }
    at = after + 1;
  }
  const int32_t id = ++next->last_field_id;
  parent->children.insert(parent->children.begin() + at, NewNode(f, id, &next->last_field_id));
  return Status::OK();
}

Status DropColumn(const ColumnChange& ch, TableDescriptor* next) {
  const SchemaChange& c = ch.c;
  RETURN_NOT_OK(ch.NeedStructParent("drop_column"));
  if (ch.is_key) {
    return ch.Refuse("column " + Quote(c.name) +
                     " is part of the primary or bucket key, which cannot be dropped");
  }
  if (ch.parent->children.size() == 1) {
    return ch.Refuse(ch.nested ? "struct " + ch.parent_shown + " keeps at least one field"
                               : std::string("a table keeps at least one column"));
  }
  if (auto v = next->properties.find(kVersionColumnProperty);
      !ch.nested && v != next->properties.end() && v->second == c.name) {
    return ch.Refuse("column " + Quote(c.name) +
                     " is the version column of the versioned merge engine "
                     "(merge_engine.version_column), which cannot be dropped");
  }
  // Its aggregation goes with it.
  if (!ch.nested) {
    for (const auto& k : FieldProperties(next->properties, c.name)) next->properties.erase(k);
  }
  ch.parent->children.erase(ch.parent->children.begin() + ch.index);
  return Status::OK();
}

Status RenameColumn(const ColumnChange& ch, Node* target, TableDescriptor* next) {
  const SchemaChange& c = ch.c;
  RETURN_NOT_OK(ch.NeedStructParent("rename_column"));
  if (ch.is_key) {
    return ch.Refuse("column " + Quote(c.name) +
                     " is part of the primary or bucket key, which cannot be renamed");
  }
  if (ch.parent->Find(c.new_name) >= 0) {
    return ch.Refuse("rename to " + Quote(c.new_name) + ": that " +
                     (ch.nested ? "field" : "column") + " already exists");
  }
  if (ch.nested) {
    auto st = CheckNestedName(c.new_name);
    if (!st.ok()) return ch.Refuse(st.message());
  }
  target->field.name = c.new_name;
  if (ch.nested) return Status::OK();
  // The merge properties naming it follow.
  for (const auto& k : FieldProperties(next->properties, c.name)) {
    auto node = next->properties.extract(k);
    node.key() = "fields." + c.new_name + k.substr(7 + c.name.size());
    next->properties.insert(std::move(node));
  }
  if (auto v = next->properties.find(kVersionColumnProperty);
      v != next->properties.end() && v->second == c.name) {
    v->second = c.new_name;
  }
  return Status::OK();
}

Status WidenType(const ColumnChange& ch, Node* target) {
  const SchemaChange& c = ch.c;
  if (ch.is_key) {
    return ch.Refuse("column " + Quote(c.name) +
                     " is part of the primary or bucket key, whose type cannot change");
  }
  if (ch.is_map_key()) {
    return ch.Refuse("cannot change the type of map key " + Quote(ch.shown) +
                     ": a map's key type never changes (its keys would compare differently)");
  }
  if (!IsWidening(target->field.type, c.type)) {
    return ch.Refuse("cannot change " + std::string(ch.nested ? "field " : "column ") +
                     Quote(ch.shown) + " from " + target->field.type.ToString() + " to " +
                     c.type.ToString() +
                     ": a type may only widen (int8 -> int16 -> int32 -> int64, float -> "
                     "double, decimal128 precision up with the same scale)");
  }
  target->field.type = c.type;
  return Status::OK();
}

Status MakeOptional(const ColumnChange& ch, Node* target, const TableDescriptor& table) {
  if (!ch.nested && Contains(table.primary_key, ch.c.name)) {
    return ch.Refuse("primary-key column " + Quote(ch.c.name) + " must stay non-nullable");
  }
  if (ch.is_map_key()) return ch.Refuse("map key " + Quote(ch.shown) + " cannot be null");
  target->field.nullable = true;
  return Status::OK();
}

Status SetColumnDoc(const ColumnChange& ch, Node* target) {
  if (ch.nested) {
    return ch.Refuse("set_column_doc " + Quote(ch.shown) +
                     ": a nested field has no doc (its type's name has no place for one)");
  }
  SetFieldDoc(&target->field, ch.c.doc);
  return Status::OK();
}

// Applies change number `number` (1-based) of a column to the tree under `root`.
Status ApplyColumnChange(const SchemaChange& c, size_t number, const TableDescriptor& table,
                         Node* root, TableDescriptor* next) {
  const std::vector<std::string> path = c.path.empty() ? std::vector<std::string>{c.name} : c.path;
  const bool nested = path.size() > 1;
  const std::vector<std::string> parent_path(path.begin(), path.end() - 1);
  auto refuse = [&](const std::string& why) {
    return Status::Invalid("change " + std::to_string(number) + ": " + why);
  };
  auto parent_or = Resolve(root, parent_path);
  if (!parent_or.ok()) return refuse(parent_or.status().message());
  Node* parent = *parent_or;
  const std::string leaf = path.back();
  const ColumnChange ch{
      c,
      number,
      nested,
      nested ? FormatColumnPath(path) : path[0],
      parent,
      leaf,
      parent->field.type.id() == TypeId::kStruct ? parent->Find(leaf) : -1,
      !nested && (Contains(table.primary_key, leaf) || Contains(table.bucket_key, leaf)),
      FormatColumnPath(parent_path) + " (" + TypeName(*parent) + ")"};
  if (c.op == SchemaChange::Op::kAddColumn) return AddColumn(ch, next);
  auto target_or = Resolve(root, path);
  if (!target_or.ok()) return refuse(target_or.status().message());
  Node* target = *target_or;
  switch (c.op) {
    case SchemaChange::Op::kDropColumn: return DropColumn(ch, next);
    case SchemaChange::Op::kRenameColumn: return RenameColumn(ch, target, next);
    case SchemaChange::Op::kWidenType: return WidenType(ch, target);
    case SchemaChange::Op::kMakeOptional: return MakeOptional(ch, target, table);
    case SchemaChange::Op::kSetColumnDoc: return SetColumnDoc(ch, target);
    default: return Status::OK();
  }
}

// The table's columns as the children of a struct root, so nested paths and columns resolve
// alike.
Node ColumnTree(const TableDescriptor& table) {
  Node root{{"", arrow::DataType::Struct({}), true, {}}, 0, {}};
  for (int i = 0; i < table.schema->num_fields(); ++i) {
    size_t at = 0;
    const ChildIds none;
    const ChildIds& ids = static_cast<size_t>(i) < table.child_ids.size()
                              ? table.child_ids[static_cast<size_t>(i)]
                              : none;
    root.children.push_back(
        ToNode(table.schema->field(i), table.field_ids[static_cast<size_t>(i)], ids, &at));
  }
  return root;
}

// Makes the columns under `root` the new current schema of `next`, unless they equal `table`'s.
Status SetColumns(const Node& root, const TableDescriptor& table, TableDescriptor* next) {
  std::vector<arrow::Field> fields;
  std::vector<int32_t> ids;
  std::vector<ChildIds> child_ids;
  for (const Node& column : root.children) {
    child_ids.emplace_back();
    fields.push_back(ToField(column, &child_ids.back()));
    ids.push_back(column.id);
  }
  auto unchanged = [&] {
    std::vector<ChildIds> before = table.child_ids;
    before.resize(child_ids.size());
    if (ids != table.field_ids || child_ids != before) return false;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (!fields[i].Equals(table.schema->field(static_cast<int>(i)), true)) return false;
    }
    return true;
  };
  if (unchanged()) return Status::OK();
  auto schema = std::make_shared<const arrow::Schema>(std::move(fields), table.schema->metadata());
  RETURN_NOT_OK(schema->Validate());
  int32_t max_id = next->schema_id;
  for (const auto& v : next->previous_schemas) max_id = std::max(max_id, v.schema_id);
  next->previous_schemas.push_back(table.CurrentSchema());
  next->schema = std::move(schema);
  next->field_ids = std::move(ids);
  next->child_ids = std::move(child_ids);
  next->schema_id = max_id + 1;
  return Status::OK();
}

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

Result<SchemaChange> ParseSchemaChange(std::string_view text) {
  return TranslateJsonErrors("alter_table", [&]() -> Result<SchemaChange> {
    ASSIGN_OR_RAISE(json j, ParseJson(text, "alter_table change"));
    return ParseChange(j);
  });
}

Result<TableDescriptor> ApplyAlter(const TableDescriptor& table,
                                   const std::vector<SchemaChange>& changes) {
  TableDescriptor next = table;
  Node root = ColumnTree(table);
  bool schema_changed = false;
  for (size_t n = 0; n < changes.size(); ++n) {
    if (changes[n].op == SchemaChange::Op::kSetProperties) {
      SetProperties(changes[n], &next);
      continue;
    }
    RETURN_NOT_OK(ApplyColumnChange(changes[n], n + 1, table, &root, &next));
    schema_changed = true;
  }
  if (schema_changed) RETURN_NOT_OK(SetColumns(root, table, &next));
  return next;
}

std::string FormatColumnPath(const std::vector<std::string>& path) {
  std::string out;
  for (size_t k = 0; k < path.size(); ++k) {
    if (k > 0) out += '.';
    const std::string& name = path[k];
    if (name.find_first_of(".`") == std::string::npos && !name.empty()) {
      out += name;
      continue;
    }
    out += '`';
    for (char ch : name) {
      out += ch;
      if (ch == '`') out += '`';
    }
    out += '`';
  }
  return out;
}

Result<std::vector<std::string>> ParseColumnPath(std::string_view text) {
  std::vector<std::string> path;
  size_t k = 0;
  while (true) {
    std::string name;
    if (k < text.size() && text[k] == '`') {
      ++k;
      while (true) {
        if (k >= text.size()) {
          return Status::Invalid("column path " + Quote(text) + ": a backtick is not closed");
        }
        if (text[k] == '`') {
          if (k + 1 < text.size() && text[k + 1] == '`') {
            name += '`';
            k += 2;
            continue;
          }
          ++k;
          break;
        }
        name += text[k++];
      }
      if (k < text.size() && text[k] != '.') {
        return Status::Invalid("column path " + Quote(text) +
                               ": a quoted name must end at '.' or the end");
      }
    } else {
      while (k < text.size() && text[k] != '.') {
        if (text[k] == '`') {
          return Status::Invalid("column path " + Quote(text) +
                                 ": a backtick may only open a name");
        }
        name += text[k++];
      }
    }
    if (name.empty()) return Status::Invalid("column path " + Quote(text) + " has an empty name");
    path.push_back(std::move(name));
    if (k >= text.size()) return path;
    ++k;  // the '.'
  }
}

}  // namespace oxbow::catalog
