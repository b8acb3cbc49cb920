#include "oxbow/iceberg/types.h"

#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace oxbow::iceberg {

using Json = nlohmann::json;

Type Type::Decimal(int32_t precision, int32_t scale) {
  Type t(TypeKind::kDecimal);
  t.precision_ = precision;
  t.scale_ = scale;
  return t;
}

Type Type::Fixed(int32_t length) {
  Type t(TypeKind::kFixed);
  t.length_ = length;
  return t;
}

Type Type::Struct(std::vector<NestedField> fields) {
  Type t(TypeKind::kStruct);
  t.children_ = std::make_shared<const std::vector<NestedField>>(std::move(fields));
  return t;
}

Type Type::List(NestedField element) {
  Type t(TypeKind::kList);
  element.name = "element";
  t.children_ = std::make_shared<const std::vector<NestedField>>(
      std::vector<NestedField>{std::move(element)});
  return t;
}

Type Type::Map(NestedField key, NestedField value) {
  Type t(TypeKind::kMap);
  key.name = "key";
  value.name = "value";
  t.children_ = std::make_shared<const std::vector<NestedField>>(
      std::vector<NestedField>{std::move(key), std::move(value)});
  return t;
}

const std::vector<NestedField>& Type::fields() const {
  static const std::vector<NestedField> kNone;
  return children_ ? *children_ : kNone;
}

Result<Type> Type::Parse(std::string_view name) {
  static const std::map<std::string, Type, std::less<>> kNames = {
      {"boolean", Boolean()},     {"int", Int()},
      {"long", Long()},           {"float", Float()},
      {"double", Double()},       {"date", Date()},
      {"timestamp", Timestamp()}, {"timestamptz", TimestampTz()},
      {"string", String()},       {"binary", Binary()}};
  if (auto it = kNames.find(name); it != kNames.end()) return it->second;
  std::string s(name);
  int p = 0, sc = 0, n = 0;
  char close = 0;
  if (std::sscanf(s.c_str(), "decimal(%d ,%d %c", &p, &sc, &close) == 3 && close == ')') {
    if (p < 1 || p > 38 || sc < 0 || sc > p) {
      return Status::Invalid("Iceberg type " + s + ": precision must be 1..38, scale 0..p");
    }
    return Decimal(p, sc);
  }
  if (std::sscanf(s.c_str(), "fixed[%d%c", &n, &close) == 2 && close == ']') {
    if (n < 1) return Status::Invalid("Iceberg type " + s + ": length must be positive");
    return Fixed(n);
  }
  return Status::NotImplemented("Iceberg type \"" + s +
                                "\" (only primitive types other than time and uuid)");
}

std::string Type::ToString() const {
  switch (kind_) {
    case TypeKind::kBoolean: return "boolean";
    case TypeKind::kInt: return "int";
    case TypeKind::kLong: return "long";
    case TypeKind::kFloat: return "float";
    case TypeKind::kDouble: return "double";
    case TypeKind::kDecimal:
      return "decimal(" + std::to_string(precision_) + ", " + std::to_string(scale_) + ")";
    case TypeKind::kDate: return "date";
    case TypeKind::kTimestamp: return "timestamp";
    case TypeKind::kTimestampTz: return "timestamptz";
    case TypeKind::kString: return "string";
    case TypeKind::kFixed: return "fixed[" + std::to_string(length_) + "]";
    case TypeKind::kBinary: return "binary";
    case TypeKind::kStruct: {
      std::string out = "struct<";
      for (size_t i = 0; i < fields().size(); ++i) {
        out += (i ? ", " : "") + fields()[i].name + ": " + fields()[i].type.ToString();
      }
      return out + ">";
    }
    case TypeKind::kList: return "list<" + fields()[0].type.ToString() + ">";
    case TypeKind::kMap:
      return "map<" + fields()[0].type.ToString() + ", " + fields()[1].type.ToString() + ">";
  }
  return "?";
}

bool Type::operator==(const Type& other) const {
  return kind_ == other.kind_ && precision_ == other.precision_ && scale_ == other.scale_ &&
         length_ == other.length_ && fields() == other.fields();
}

bool NestedField::operator==(const NestedField& other) const {
  return id == other.id && name == other.name && type == other.type && required == other.required &&
         doc == other.doc;
}

const NestedField* Schema::FindField(int32_t id) const {
  for (const auto& f : fields_) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

const NestedField* Schema::FindField(std::string_view name) const {
  for (const auto& f : fields_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

namespace {

int32_t HighestId(const std::vector<NestedField>& fields) {
  int32_t highest = 0;
  for (const auto& f : fields) highest = std::max({highest, f.id, HighestId(f.type.fields())});
  return highest;
}

// Ids positive and unique over the whole tree, names unique among siblings.
Status CheckFields(const std::vector<NestedField>& fields, std::set<int32_t>* ids) {
  std::set<std::string> names;
  for (const auto& f : fields) {
    if (f.id <= 0) return Status::Invalid("field " + f.name + " has id " + std::to_string(f.id));
    if (!ids->insert(f.id).second) {
      return Status::Invalid("field id " + std::to_string(f.id) + " used twice");
    }
    if (!names.insert(f.name).second)
      return Status::Invalid("field name " + f.name + " used twice");
    RETURN_NOT_OK(CheckFields(f.type.fields(), ids));
  }
  return Status::OK();
}

Json FieldsToJson(const std::vector<NestedField>& fields);

Json TypeToJson(const Type& t) {
  switch (t.kind()) {
    case TypeKind::kStruct: return {{"type", "struct"}, {"fields", FieldsToJson(t.fields())}};
    case TypeKind::kList: {
      const NestedField& e = t.fields()[0];
      return {{"type", "list"},
              {"element-id", e.id},
              {"element", TypeToJson(e.type)},
              {"element-required", e.required}};
    }
    case TypeKind::kMap: {
      const NestedField& k = t.fields()[0];
      const NestedField& v = t.fields()[1];
      return {{"type", "map"},
              {"key-id", k.id},
              {"key", TypeToJson(k.type)},
              {"value-id", v.id},
              {"value", TypeToJson(v.type)},
              {"value-required", v.required}};
    }
    default: return t.ToString();
  }
}

Json FieldsToJson(const std::vector<NestedField>& fields) {
  Json out = Json::array();
  for (const auto& f : fields) {
    Json jf = {
        {"id", f.id}, {"name", f.name}, {"required", f.required}, {"type", TypeToJson(f.type)}};
    if (!f.doc.empty()) jf["doc"] = f.doc;
    out.push_back(std::move(jf));
  }
  return out;
}

constexpr int kMaxTypeDepth = 32;

Result<std::vector<NestedField>> FieldsFromJson(const Json& fields, int depth);

Result<int32_t> IdFromJson(const Json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number_integer()) {
    return Status::Invalid(std::string("Iceberg type without an integer \"") + key + "\"");
  }
  return j[key].get<int32_t>();
}

Result<bool> RequiredFromJson(const Json& j, const char* key) {
  if (!j.contains(key)) return false;
  if (!j[key].is_boolean()) {
    return Status::Invalid(std::string("Iceberg type: \"") + key + "\" is not a boolean");
  }
  return j[key].get<bool>();
}

Result<Type> TypeFromJson(const Json& j, int depth) {
  if (j.is_string()) return Type::Parse(j.get<std::string>());
  if (depth > kMaxTypeDepth) return Status::Invalid("Iceberg type nested too deep");
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    return Status::Invalid("Iceberg type is neither a name nor an object with a \"type\"");
  }
  const std::string kind = j["type"].get<std::string>();
  if (kind == "struct") {
    if (!j.contains("fields")) return Status::Invalid("Iceberg struct type without fields");
    ASSIGN_OR_RAISE(auto fields, FieldsFromJson(j["fields"], depth + 1));
    return Type::Struct(std::move(fields));
  }
  if (kind == "list") {
    NestedField e;
    ASSIGN_OR_RAISE(e.id, IdFromJson(j, "element-id"));
    if (!j.contains("element")) return Status::Invalid("Iceberg list type without an element");
    ASSIGN_OR_RAISE(e.type, TypeFromJson(j["element"], depth + 1));
    ASSIGN_OR_RAISE(e.required, RequiredFromJson(j, "element-required"));
    return Type::List(std::move(e));
  }
  if (kind == "map") {
    NestedField k, v;
    ASSIGN_OR_RAISE(k.id, IdFromJson(j, "key-id"));
    ASSIGN_OR_RAISE(v.id, IdFromJson(j, "value-id"));
    if (!j.contains("key") || !j.contains("value")) {
      return Status::Invalid("Iceberg map type without a key and a value");
    }
    ASSIGN_OR_RAISE(k.type, TypeFromJson(j["key"], depth + 1));
    ASSIGN_OR_RAISE(v.type, TypeFromJson(j["value"], depth + 1));
    k.required = true;
    ASSIGN_OR_RAISE(v.required, RequiredFromJson(j, "value-required"));
    return Type::Map(std::move(k), std::move(v));
  }
  return Status::NotImplemented("Iceberg type \"" + kind + "\"");
}

Result<std::vector<NestedField>> FieldsFromJson(const Json& fields, int depth) {
  if (!fields.is_array()) return Status::Invalid("Iceberg fields are not a list");
  std::vector<NestedField> out;
  for (const auto& jf : fields) {
    if (!jf.is_object() || !jf.contains("id") || !jf["id"].is_number_integer() ||
        !jf.contains("name") || !jf["name"].is_string() || !jf.contains("type")) {
      return Status::Invalid("Iceberg schema field without id, name and type");
    }
    NestedField f;
    f.id = jf["id"].get<int32_t>();
    f.name = jf["name"].get<std::string>();
    if (jf.contains("required")) {
      if (!jf["required"].is_boolean()) {
        return Status::Invalid("Iceberg field " + f.name + ": \"required\" is not a boolean");
      }
      f.required = jf["required"].get<bool>();
    }
    if (jf.contains("doc") && jf["doc"].is_string()) f.doc = jf["doc"].get<std::string>();
    auto type = TypeFromJson(jf["type"], depth);
    if (!type.ok()) return type.status().WithContext("field " + f.name);
    f.type = std::move(*type);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

int32_t Schema::HighestFieldId() const { return HighestId(fields_); }

Status Schema::Validate() const {
  std::set<int32_t> ids;
  RETURN_NOT_OK(CheckFields(fields_, &ids));
  std::set<int32_t> identifiers;
  for (int32_t id : identifier_field_ids_) {
    const NestedField* f = FindField(id);
    if (f == nullptr) {
      return Status::Invalid("identifier field id " + std::to_string(id) + " is not a field");
    }
    if (!f->required) return Status::Invalid("identifier field " + f->name + " is not required");
    if (f->type.kind() == TypeKind::kFloat || f->type.kind() == TypeKind::kDouble) {
      return Status::Invalid("identifier field " + f->name + " is a float or double");
    }
    if (!identifiers.insert(id).second) {
      return Status::Invalid("identifier field id " + std::to_string(id) + " listed twice");
    }
  }
  return Status::OK();
}

std::string Schema::ToJson() const {
  Json j = {{"type", "struct"}, {"schema-id", schema_id_}, {"fields", FieldsToJson(fields_)}};
  if (!identifier_field_ids_.empty()) j["identifier-field-ids"] = identifier_field_ids_;
  return j.dump();
}

Result<Schema> Schema::FromJson(std::string_view json) {
  Json j = Json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Invalid("Iceberg schema is not JSON");
  if (!j.contains("type") || j["type"] != "struct" || !j.contains("fields") ||
      !j["fields"].is_array()) {
    return Status::Invalid("Iceberg schema is not a struct with fields");
  }
  ASSIGN_OR_RAISE(std::vector<NestedField> fields, FieldsFromJson(j["fields"], 0));
  int32_t id = j.contains("schema-id") && j["schema-id"].is_number_integer()
                   ? j["schema-id"].get<int32_t>()
                   : 0;
  std::vector<int32_t> identifiers;
  if (j.contains("identifier-field-ids")) {
    const Json& ids = j["identifier-field-ids"];
    if (!ids.is_array()) return Status::Invalid("identifier-field-ids is not a list");
    for (const auto& v : ids) {
      if (!v.is_number_integer())
        return Status::Invalid("identifier-field-ids holds a non-integer");
      identifiers.push_back(v.get<int32_t>());
    }
  }
  Schema schema(id, std::move(fields), std::move(identifiers));
  RETURN_NOT_OK(schema.Validate());
  return schema;
}

bool Schema::operator==(const Schema& other) const {
  return schema_id_ == other.schema_id_ && fields_ == other.fields_ &&
         identifier_field_ids_ == other.identifier_field_ids_;
}

namespace {

Result<int32_t> FieldIdFromArrow(const arrow::Field& f) {
  auto id = arrow::FindMetadata(f.metadata, "PARQUET:field_id");
  if (!id) return Status::Invalid("nested field " + f.name + " has no PARQUET:field_id");
  char* end = nullptr;
  long v = std::strtol(id->c_str(), &end, 10);
  if (id->empty() || *end != '\0' || v <= 0 || v > INT32_MAX) {
    return Status::Invalid("field " + f.name + " has PARQUET:field_id \"" + *id + "\"");
  }
  return static_cast<int32_t>(v);
}

}  // namespace

Result<NestedField> ChildFromArrow(const arrow::Field& f) {
  NestedField nf;
  nf.name = f.name;
  nf.required = !f.nullable;
  ASSIGN_OR_RAISE(nf.id, FieldIdFromArrow(f));
  auto type = TypeFromArrow(f.type);
  if (!type.ok()) return type.status().WithContext("field " + f.name);
  nf.type = std::move(*type);
  return nf;
}

Result<Type> TypeFromArrow(const arrow::DataType& type) {
  using arrow::TypeId;
  switch (type.id()) {
    case TypeId::kBool: return Type::Boolean();
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kUInt8:
    case TypeId::kUInt16: return Type::Int();
    case TypeId::kInt64:
    case TypeId::kUInt32: return Type::Long();
    case TypeId::kUInt64:
      return Status::Invalid(
          "uint64 has no Iceberg type (values above 2^63-1 do not fit long); use int64 or "
          "decimal128(20, 0)");
    case TypeId::kFloat32: return Type::Float();
    case TypeId::kFloat64: return Type::Double();
    case TypeId::kString: return Type::String();
    case TypeId::kBinary: return Type::Binary();
    case TypeId::kDate32: return Type::Date();
    case TypeId::kTimestamp:
      return type.timezone().empty() ? Type::Timestamp() : Type::TimestampTz();
    case TypeId::kDecimal128:
      // The spec's decimal(P, S) has P <= 38; its JSON form and Parquet's DECIMAL take no
      // negative scale, and Parquet's none above the precision.
      if (type.precision() < 1 || type.precision() > 38 || type.scale() < 0 ||
          type.scale() > type.precision()) {
        return Status::Invalid(type.ToString() +
                               " has no Iceberg type: an Iceberg decimal needs 0 <= scale <= "
                               "precision <= 38");
      }
      return Type::Decimal(type.precision(), type.scale());
    case TypeId::kFixedSizeBinary:
      if (type.byte_width() < 1) {
        return Status::Invalid(type.ToString() +
                               " has no Iceberg type: fixed[L] is a Parquet "
                               "FIXED_LEN_BYTE_ARRAY, whose length must be at least 1");
      }
      return Type::Fixed(type.byte_width());
    case TypeId::kStruct: {
      std::vector<NestedField> fields;
      for (const auto& c : type.children()) {
        ASSIGN_OR_RAISE(NestedField f, ChildFromArrow(c));
        fields.push_back(std::move(f));
      }
      return Type::Struct(std::move(fields));
    }
    case TypeId::kList: {
      ASSIGN_OR_RAISE(NestedField e, ChildFromArrow(type.child(0)));
      return Type::List(std::move(e));
    }
    case TypeId::kMap: {
      const auto& entries = type.child(0).type;
      ASSIGN_OR_RAISE(NestedField k, ChildFromArrow(entries.child(0)));
      ASSIGN_OR_RAISE(NestedField v, ChildFromArrow(entries.child(1)));
      return Type::Map(std::move(k), std::move(v));
    }
    case TypeId::kFixedSizeList:
      return Status::NotImplemented(type.ToString() +
                                    " has no Iceberg type (Iceberg has no fixed-size list)");
  }
  return Status::NotImplemented("Arrow type " + type.ToString() + " has no Iceberg mapping");
}

Result<Schema> SchemaFromArrow(const arrow::Schema& schema, int32_t schema_id) {
  std::vector<NestedField> fields;
  int with_ids = 0;
  for (const auto& f : schema.fields()) {
    if (arrow::FindMetadata(f.metadata, "PARQUET:field_id")) ++with_ids;
  }
  if (with_ids != 0 && with_ids != schema.num_fields()) {
    return Status::Invalid("some fields have PARQUET:field_id metadata and some do not");
  }
  for (int i = 0; i < schema.num_fields(); ++i) {
    const auto& f = schema.field(i);
    NestedField nf;
    nf.name = f.name;
    nf.required = !f.nullable;
    if (auto doc = arrow::FindMetadata(f.metadata, "doc")) nf.doc = *doc;
    auto type = TypeFromArrow(f.type);
    if (!type.ok()) return type.status().WithContext("field " + f.name);
    nf.type = *type;
    nf.id = i + 1;
    if (with_ids != 0) {
      std::string id = *arrow::FindMetadata(f.metadata, "PARQUET:field_id");
      char* end = nullptr;
      long v = std::strtol(id.c_str(), &end, 10);
      if (id.empty() || *end != '\0' || v <= 0 || v > INT32_MAX) {
        return Status::Invalid("field " + f.name + " has PARQUET:field_id \"" + id + "\"");
      }
      nf.id = static_cast<int32_t>(v);
    }
    fields.push_back(std::move(nf));
  }
  Schema out(schema_id, std::move(fields));
  RETURN_NOT_OK(out.Validate());
  return out;
}

Status CheckLiteral(const Type& type, const Literal& value) {
  bool ok = false;
  switch (type.kind()) {
    case TypeKind::kBoolean: ok = std::holds_alternative<bool>(value); break;
    case TypeKind::kInt:
    case TypeKind::kDate: ok = std::holds_alternative<int32_t>(value); break;
    case TypeKind::kLong:
    case TypeKind::kTimestamp:
    case TypeKind::kTimestampTz: ok = std::holds_alternative<int64_t>(value); break;
    case TypeKind::kFloat: ok = std::holds_alternative<float>(value); break;
    case TypeKind::kDouble: ok = std::holds_alternative<double>(value); break;
    case TypeKind::kString:
    case TypeKind::kBinary: ok = std::holds_alternative<std::string>(value); break;
    case TypeKind::kFixed:
      ok = std::holds_alternative<std::string>(value) &&
           static_cast<int32_t>(std::get<std::string>(value).size()) == type.length();
      break;
    case TypeKind::kDecimal: ok = std::holds_alternative<Decimal>(value); break;
    case TypeKind::kStruct:
    case TypeKind::kList:
    case TypeKind::kMap: ok = false; break;
  }
  if (!ok) return Status::Invalid("value does not fit Iceberg type " + type.ToString());
  return Status::OK();
}

namespace {

template <typename T>
std::string LittleEndian(T v) {
  std::string out(sizeof(T), '\0');
  std::memcpy(out.data(), &v, sizeof(T));  // x86-64 and aarch64 are little-endian
  return out;
}

template <typename T>
Result<T> FromLittleEndian(const Type& type, std::string_view bytes) {
  if (bytes.size() != sizeof(T)) {
    return Status::Invalid("a " + type.ToString() + " bound needs " + std::to_string(sizeof(T)) +
                           " bytes, got " + std::to_string(bytes.size()));
  }
  T v;
  std::memcpy(&v, bytes.data(), sizeof(T));
  return v;
}

}  // namespace

std::string DecimalToBytes(__int128 v) {
  std::string be(16, '\0');
  unsigned __int128 u = static_cast<unsigned __int128>(v);
  for (int i = 15; i >= 0; --i) {
    be[i] = static_cast<char>(static_cast<uint8_t>(u));
    u >>= 8;
  }
  // Drop leading bytes that only repeat the sign.
  size_t start = 0;
  while (start < 15) {
    uint8_t b = static_cast<uint8_t>(be[start]);
    uint8_t next = static_cast<uint8_t>(be[start + 1]);
    if ((b == 0x00 && (next & 0x80) == 0) || (b == 0xff && (next & 0x80) != 0)) {
      ++start;
    } else {
      break;
    }
  }
  return be.substr(start);
}

Result<__int128> DecimalFromBytes(std::string_view bytes) {
  if (bytes.empty() || bytes.size() > 16) {
    return Status::Invalid("a decimal needs 1..16 bytes, got " + std::to_string(bytes.size()));
  }
  unsigned __int128 u =
      (static_cast<uint8_t>(bytes[0]) & 0x80) ? ~static_cast<unsigned __int128>(0) : 0;
  for (char c : bytes) u = (u << 8) | static_cast<uint8_t>(c);
  return static_cast<__int128>(u);
}

Result<std::string> SerializeLiteral(const Type& type, const Literal& value) {
  RETURN_NOT_OK(CheckLiteral(type, value));
  switch (type.kind()) {
    case TypeKind::kBoolean: return std::string(1, std::get<bool>(value) ? '\x01' : '\x00');
    case TypeKind::kInt:
    case TypeKind::kDate: return LittleEndian(std::get<int32_t>(value));
    case TypeKind::kLong:
    case TypeKind::kTimestamp:
    case TypeKind::kTimestampTz: return LittleEndian(std::get<int64_t>(value));
    case TypeKind::kFloat: return LittleEndian(std::get<float>(value));
    case TypeKind::kDouble: return LittleEndian(std::get<double>(value));
    case TypeKind::kString:
    case TypeKind::kBinary:
    case TypeKind::kFixed: return std::get<std::string>(value);
    case TypeKind::kDecimal: return DecimalToBytes(std::get<Decimal>(value).unscaled);
    case TypeKind::kStruct:
    case TypeKind::kList:
    case TypeKind::kMap: break;  // CheckLiteral refused them
  }
  return Status::Internal("unknown type");
}

Result<Literal> DeserializeLiteral(const Type& type, std::string_view bytes) {
  switch (type.kind()) {
    case TypeKind::kBoolean:
      if (bytes.size() != 1) return Status::Invalid("a boolean bound needs 1 byte");
      return Literal(bytes[0] != 0);
    case TypeKind::kInt:
    case TypeKind::kDate: {
      ASSIGN_OR_RAISE(auto v, FromLittleEndian<int32_t>(type, bytes));
      return Literal(v);
    }
    case TypeKind::kLong:
    case TypeKind::kTimestamp:
    case TypeKind::kTimestampTz: {
      ASSIGN_OR_RAISE(auto v, FromLittleEndian<int64_t>(type, bytes));
      return Literal(v);
    }
    case TypeKind::kFloat: {
      ASSIGN_OR_RAISE(auto v, FromLittleEndian<float>(type, bytes));
      return Literal(v);
    }
    case TypeKind::kDouble: {
      ASSIGN_OR_RAISE(auto v, FromLittleEndian<double>(type, bytes));
      return Literal(v);
    }
    case TypeKind::kString:
    case TypeKind::kBinary: return Literal(std::string(bytes));
    case TypeKind::kFixed:
      if (static_cast<int32_t>(bytes.size()) != type.length()) {
        return Status::Invalid("a " + type.ToString() + " value has " +
                               std::to_string(bytes.size()) + " bytes");
      }
      return Literal(std::string(bytes));
    case TypeKind::kDecimal: {
      ASSIGN_OR_RAISE(auto v, DecimalFromBytes(bytes));
      return Literal(Decimal{v});
    }
    case TypeKind::kStruct:
    case TypeKind::kList:
    case TypeKind::kMap: break;
  }
  return Status::Invalid("a " + type.ToString() + " has no single-value serialization");
}

namespace {
template <typename F>
int CompareFloat(F a, F b) {
  bool an = std::isnan(a), bn = std::isnan(b);
  if (an || bn) return an == bn ? 0 : (an ? 1 : -1);
  if (a == b) {
    bool as = std::signbit(a), bs = std::signbit(b);
    return as == bs ? 0 : (as ? -1 : 1);
  }
  return a < b ? -1 : 1;
}
template <typename T>
int Cmp(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}
}  // namespace

int CompareLiterals(const Literal& a, const Literal& b) {
  if (a.index() != b.index()) return a.index() < b.index() ? -1 : 1;
  switch (a.index()) {
    case 0: return Cmp(std::get<bool>(a), std::get<bool>(b));
    case 1: return Cmp(std::get<int32_t>(a), std::get<int32_t>(b));
    case 2: return Cmp(std::get<int64_t>(a), std::get<int64_t>(b));
    case 3: return CompareFloat(std::get<float>(a), std::get<float>(b));
    case 4: return CompareFloat(std::get<double>(a), std::get<double>(b));
    case 5: {
      int c = std::get<std::string>(a).compare(std::get<std::string>(b));
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    case 6: return Cmp(std::get<Decimal>(a).unscaled, std::get<Decimal>(b).unscaled);
  }
  return 0;
}

std::string LiteralToString(const Type& type, const Literal& value) {
  if (!CheckLiteral(type, value).ok()) return "<mismatched value>";
  switch (type.kind()) {
    case TypeKind::kBoolean: return std::get<bool>(value) ? "true" : "false";
    case TypeKind::kInt:
    case TypeKind::kDate: return std::to_string(std::get<int32_t>(value));
    case TypeKind::kLong:
    case TypeKind::kTimestamp:
    case TypeKind::kTimestampTz: return std::to_string(std::get<int64_t>(value));
    case TypeKind::kFloat: return std::to_string(std::get<float>(value));
    case TypeKind::kDouble: return std::to_string(std::get<double>(value));
    case TypeKind::kString: return "\"" + std::get<std::string>(value) + "\"";
    case TypeKind::kBinary:
    case TypeKind::kFixed: {
      static const char* kHex = "0123456789abcdef";
      std::string out = "0x";
      for (unsigned char c : std::get<std::string>(value)) {
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
      }
      return out;
    }
    case TypeKind::kDecimal: {
      __int128 v = std::get<Decimal>(value).unscaled;
      bool negative = v < 0;
      unsigned __int128 u = negative ? -static_cast<unsigned __int128>(v) : v;
      std::string digits;
      do {
        digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
        u /= 10;
      } while (u != 0);
      int scale = type.scale();
      if (scale > 0) {
        while (static_cast<int>(digits.size()) <= scale) digits.insert(digits.begin(), '0');
        digits.insert(digits.end() - scale, '.');
      }
      return (negative ? "-" : "") + digits;
    }
    case TypeKind::kStruct:
    case TypeKind::kList:
    case TypeKind::kMap: break;
  }
  return "?";
}

}  // namespace oxbow::iceberg
