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
  }
  return "?";
}

bool Type::operator==(const Type& other) const {
  return kind_ == other.kind_ && precision_ == other.precision_ && scale_ == other.scale_ &&
         length_ == other.length_;
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

int32_t Schema::HighestFieldId() const {
  int32_t highest = 0;
  for (const auto& f : fields_) highest = std::max(highest, f.id);
  return highest;
}

Status Schema::Validate() const {
  std::set<int32_t> ids;
  std::set<std::string> names;
  for (const auto& f : fields_) {
    if (f.id <= 0) return Status::Invalid("field " + f.name + " has id " + std::to_string(f.id));
    if (!ids.insert(f.id).second) {
      return Status::Invalid("field id " + std::to_string(f.id) + " used twice");
    }
    if (!names.insert(f.name).second)
      return Status::Invalid("field name " + f.name + " used twice");
  }
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
  Json fields = Json::array();
  for (const auto& f : fields_) {
    Json jf = {
        {"id", f.id}, {"name", f.name}, {"required", f.required}, {"type", f.type.ToString()}};
    if (!f.doc.empty()) jf["doc"] = f.doc;
    fields.push_back(std::move(jf));
  }
  Json j = {{"type", "struct"}, {"schema-id", schema_id_}, {"fields", std::move(fields)}};
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
  std::vector<NestedField> fields;
  for (const auto& jf : j["fields"]) {
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
    if (!jf["type"].is_string()) {
      return Status::NotImplemented("Iceberg field " + f.name + " has a nested type");
    }
    auto type = Type::Parse(jf["type"].get<std::string>());
    if (!type.ok()) return type.status().WithContext("field " + f.name);
    f.type = *type;
    fields.push_back(std::move(f));
  }
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
    case TypeId::kList:
    case TypeId::kStruct:
    case TypeId::kMap:
    case TypeId::kFixedSizeList:
      return Status::NotImplemented(type.ToString() +
                                    ": nested types are not tiered to the lake yet");
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
  }
  return Status::Internal("unknown type");
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
  }
  return "?";
}

}  // namespace oxbow::iceberg
