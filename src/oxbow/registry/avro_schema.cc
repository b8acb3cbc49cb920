#include <algorithm>
#include <cctype>
#include <set>

#include "oxbow/registry/avro_schema_internal.h"

namespace oxbow::registry::internal {
namespace {

using json = nlohmann::json;

const std::set<std::string, std::less<>> kPrimitives = {"null",  "boolean", "int",   "long",
                                                        "float", "double",  "bytes", "string"};

bool ValidName(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// Parses one schema into its normalized form, collecting named types.
class Normalizer {
 public:
  explicit Normalizer(std::map<std::string, json>* named) : named_(named) {}

  Result<json> Normalize(const json& schema, const std::string& space, const std::string& path) {
    if (schema.is_string()) return Reference(schema.get<std::string>(), space, path);
    if (schema.is_array()) return Union(schema, space, path);
    if (!schema.is_object()) return Invalid(path, "a schema is a string, an array or an object");
    auto type = schema.find("type");
    if (type == schema.end()) return Invalid(path, "an object schema needs \"type\"");
    if (!type->is_string()) return Normalize(*type, space, path);  // {"type": {...}} or [...]
    const std::string kind = type->get<std::string>();
    if (kPrimitives.contains(kind)) {
      json out = {{"type", kind}};
      for (const char* key : {"logicalType", "precision", "scale"}) {
        if (schema.contains(key)) out[key] = schema[key];
      }
      return out.size() == 1 ? json(kind) : out;
    }
    if (kind == "record" || kind == "error") return Record(schema, space, path);
    if (kind == "enum") return Enum(schema, space, path);
    if (kind == "fixed") return Fixed(schema, space, path);
    if (kind == "array" || kind == "map") {
      const char* child = kind == "array" ? "items" : "values";
      if (!schema.contains(child)) return Invalid(path, kind + " needs \"" + child + "\"");
      ASSIGN_OR_RAISE(json inner, Normalize(schema[child], space, path + "." + child));
      return json{{"type", kind}, {child, std::move(inner)}};
    }
    return Reference(kind, space, path);
  }

 private:
  static Status Invalid(const std::string& path, const std::string& why) {
    return Status::Invalid("Avro schema at " + path + ": " + why);
  }

  Result<json> Reference(const std::string& name, const std::string& space,
                         const std::string& path) {
    if (kPrimitives.contains(name)) return json(name);
    for (const std::string& full :
         {name.find('.') == std::string::npos && !space.empty() ? space + "." + name : name,
          name}) {
      if (named_->contains(full)) return json(full);
    }
    return Invalid(path, "unknown type '" + name + "'");
  }

  Result<json> Union(const json& branches, const std::string& space, const std::string& path) {
    json out = json::array();
    std::set<std::string> kinds;
    for (size_t i = 0; i < branches.size(); ++i) {
      ASSIGN_OR_RAISE(json branch,
                      Normalize(branches[i], space, path + "[" + std::to_string(i) + "]"));
      // Also {"type": [...]}, which is a union too.
      if (branch.is_array()) return Invalid(path, "a union may not hold a union");
      // Named types are told apart by name, the others by type.
      const std::string key = branch.is_string()        ? branch.get<std::string>()
                              : branch.contains("name") ? branch["name"].get<std::string>()
                                                        : branch["type"].get<std::string>();
      if (!kinds.insert(key).second) return Invalid(path, "two union branches of type " + key);
      out.push_back(std::move(branch));
    }
    return out;
  }

  // The full name of a named type being defined; registers it (before its fields: a record
  // may refer to itself).
  Result<std::string> Define(const json& schema, std::string* space, const std::string& path) {
    if (!schema.contains("name") || !schema["name"].is_string()) {
      return Invalid(path, "a named type needs a \"name\"");
    }
    std::string name = schema["name"].get<std::string>();
    if (name.find('.') == std::string::npos) {
      if (schema.contains("namespace") && schema["namespace"].is_string()) {
        *space = schema["namespace"].get<std::string>();
      }
      if (!space->empty()) name = *space + "." + name;
    } else {
      *space = name.substr(0, name.rfind('.'));
    }
    for (size_t start = 0; start <= name.size();) {
      const size_t dot = std::min(name.find('.', start), name.size());
      if (!ValidName(name.substr(start, dot - start))) {
        return Invalid(path, "'" + name + "' is not a valid Avro name");
      }
      start = dot + 1;
    }
    if (kPrimitives.contains(name) || named_->contains(name)) {
      return Invalid(path, "the type '" + name + "' is defined twice");
    }
    (*named_)[name] = json();  // defined; its form follows
    return name;
  }

  Result<json> Record(const json& schema, std::string space, const std::string& path) {
    ASSIGN_OR_RAISE(std::string name, Define(schema, &space, path));
    const auto fields = schema.find("fields");
    if (fields == schema.end() || !fields->is_array()) {
      return Invalid(path, "record " + name + " needs a \"fields\" array");
    }
    json out_fields = json::array();
    std::set<std::string> seen;
    for (const json& field : *fields) {
      if (!field.is_object() || !field.contains("name") || !field["name"].is_string()) {
        return Invalid(path, "a field of record " + name + " has no name");
      }
      const std::string field_name = field["name"].get<std::string>();
      const std::string field_path = path + "." + field_name;
      if (!ValidName(field_name)) return Invalid(field_path, "not a valid field name");
      if (!seen.insert(field_name).second)
        return Invalid(field_path, "a second field of this name");
      if (!field.contains("type")) return Invalid(field_path, "a field needs a \"type\"");
      ASSIGN_OR_RAISE(json type, Normalize(field["type"], space, field_path));
      json out = {{"name", field_name}, {"type", std::move(type)}};
      if (field.contains("default")) out["default"] = field["default"];
      out_fields.push_back(std::move(out));
    }
    json out = {{"type", "record"}, {"name", name}, {"fields", std::move(out_fields)}};
    (*named_)[name] = out;
    return out;
  }

  Result<json> Enum(const json& schema, std::string space, const std::string& path) {
    ASSIGN_OR_RAISE(std::string name, Define(schema, &space, path));
    const auto symbols = schema.find("symbols");
    if (symbols == schema.end() || !symbols->is_array() || symbols->empty()) {
      return Invalid(path, "enum " + name + " needs a \"symbols\" array");
    }
    std::set<std::string> seen;
    for (const json& symbol : *symbols) {
      if (!symbol.is_string() || !ValidName(symbol.get<std::string>()) ||
          !seen.insert(symbol.get<std::string>()).second) {
        return Invalid(path, "enum " + name + " has a bad or repeated symbol " + symbol.dump());
      }
    }
    json out = {{"type", "enum"}, {"name", name}, {"symbols", *symbols}};
    if (schema.contains("default")) {
      if (!schema["default"].is_string() || !seen.contains(schema["default"].get<std::string>())) {
        return Invalid(path, "the default of enum " + name + " is not one of its symbols");
      }
      out["default"] = schema["default"];
    }
    (*named_)[name] = out;
    return out;
  }

  Result<json> Fixed(const json& schema, std::string space, const std::string& path) {
    ASSIGN_OR_RAISE(std::string name, Define(schema, &space, path));
    if (!schema.contains("size") || !schema["size"].is_number_unsigned()) {
      return Invalid(path, "fixed " + name + " needs a non-negative \"size\"");
    }
    json out = {{"type", "fixed"}, {"name", name}, {"size", schema["size"]}};
    for (const char* key : {"logicalType", "precision", "scale"}) {
      if (schema.contains(key)) out[key] = schema[key];
    }
    (*named_)[name] = out;
    return out;
  }

  std::map<std::string, json>* named_;
};

// Schema resolution (Avro specification, "Schema Resolution") of one reader/writer pair.
class Resolver {
 public:
  Resolver(const AvroSchema& reader, const AvroSchema& writer) : reader_(reader), writer_(writer) {}

  void Resolve(const json& r_in, const json& w_in, const std::string& path) {
    const json& r = Deref(r_in, reader_);
    const json& w = Deref(w_in, writer_);
    if (w.is_array()) {  // every branch the writer may have written must be readable
      for (const json& branch : w) Resolve(r, branch, path);
      return;
    }
    if (r.is_array()) {
      for (const json& branch : r) {
        if (Matches(Deref(branch, reader_), w)) return Resolve(branch, w, path);
      }
      return Problem(path, "the reader's union has no branch for the writer's " + Kind(w));
    }
    const std::string rk = Kind(r), wk = Kind(w);
    if (!Matches(r, w)) {
      return Problem(path, "the reader's " + rk + " cannot read the writer's " + wk);
    }
    if (rk == "record") return Record(r, w, path);
    if (rk == "enum") {
      for (const json& symbol : w["symbols"]) {
        const auto& symbols = r["symbols"];
        if (std::find(symbols.begin(), symbols.end(), symbol) == symbols.end() &&
            !r.contains("default")) {
          Problem(path, "the reader's enum " + r["name"].get<std::string>() + " lacks symbol " +
                            symbol.get<std::string>() + " and has no default");
        }
      }
      return;
    }
    if (rk == "fixed" && r["size"] != w["size"]) {
      return Problem(path,
                     "fixed sizes differ (" + r["size"].dump() + ", " + w["size"].dump() + ")");
    }
    if (rk == "array") return Resolve(r["items"], w["items"], path + "[]");
    if (rk == "map") return Resolve(r["values"], w["values"], path + "{}");
  }

  std::vector<std::string> problems;

 private:
  static const json& Deref(const json& schema, const AvroSchema& in) {
    if (schema.is_string()) {
      auto it = in.named().find(schema.get<std::string>());
      if (it != in.named().end()) return it->second;
    }
    return schema;
  }
  static std::string Kind(const json& schema) {
    if (schema.is_string()) return schema.get<std::string>();
    if (schema.is_array()) return "union";
    return schema["type"].get<std::string>();
  }
  static std::string ShortName(const json& schema) {
    const std::string name = schema["name"].get<std::string>();
    return name.substr(name.rfind('.') == std::string::npos ? 0 : name.rfind('.') + 1);
  }
  // Whether a reader type may read a writer type (without looking inside): the same kind (and
  // unqualified name for named types), or a promotion.
  static bool Matches(const json& r, const json& w) {
    const std::string rk = Kind(r), wk = Kind(w);
    if (rk == wk) {
      return (rk != "record" && rk != "enum" && rk != "fixed") || ShortName(r) == ShortName(w);
    }
    static const std::set<std::pair<std::string, std::string>> kPromotions = {
        {"long", "int"},    {"float", "int"},    {"double", "int"},   {"float", "long"},
        {"double", "long"}, {"double", "float"}, {"bytes", "string"}, {"string", "bytes"}};
    return kPromotions.contains({rk, wk});
  }

  void Record(const json& r, const json& w, const std::string& path) {
    // Recursive types: a pair already being resolved is resolved.
    if (!visiting_.emplace(r["name"].get<std::string>(), w["name"].get<std::string>()).second) {
      return;
    }
    for (const json& field : r["fields"]) {
      const std::string name = field["name"].get<std::string>();
      const auto& written = w["fields"];
      auto it = std::find_if(written.begin(), written.end(),
                             [&](const json& f) { return f["name"] == field["name"]; });
      if (it != written.end()) {
        Resolve(field["type"], (*it)["type"], path + "." + name);
      } else if (!field.contains("default")) {
        Problem(path + "." + name, "the reader's field has no default and the writer has none");
      }
    }
  }

  void Problem(const std::string& path, const std::string& why) {
    problems.push_back(path + ": " + why);
  }

  const AvroSchema& reader_;
  const AvroSchema& writer_;
  std::set<std::pair<std::string, std::string>> visiting_;
};

// AvroSchema::encoding() of a normalized schema.
json EncodingForm(const json& schema) {
  if (schema.is_array()) {
    json out = json::array();
    for (const json& branch : schema) out.push_back(EncodingForm(branch));
    return out;
  }
  if (!schema.is_object()) return schema;
  json out = json::object();
  for (const auto& [key, value] : schema.items()) {
    const bool named_type =
        schema.contains("type") &&
        (schema["type"] == "record" || schema["type"] == "enum" || schema["type"] == "fixed");
    if (key == "default" || (key == "name" && named_type)) continue;
    out[key] = EncodingForm(value);
  }
  return out;
}

}  // namespace

Result<AvroSchema> AvroSchema::Parse(std::string_view text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::Invalid("the schema is not JSON");
  AvroSchema schema;
  Normalizer normalizer(&schema.named_);
  ASSIGN_OR_RAISE(schema.root_, normalizer.Normalize(doc, "", "$"));
  schema.canonical_ = schema.root_.dump();
  schema.encoding_ = EncodingForm(schema.root_).dump();
  return schema;
}

Result<AvroSchema> AvroSchema::Renamed(const std::string& name) const {
  if (!root_.is_object() || root_.value("type", json()) != "record") return *this;
  json renamed = root_;
  renamed["name"] = name;
  return Parse(renamed.dump());
}

std::vector<std::string> ReadProblems(const AvroSchema& reader, const AvroSchema& writer) {
  Resolver resolver(reader, writer);
  resolver.Resolve(reader.root(), writer.root(), "$");
  return std::move(resolver.problems);
}

}  // namespace oxbow::registry::internal
