#include "oxbow/iceberg/avro.h"

#include <zlib.h>

#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "oxbow/common/parse.h"

namespace oxbow::iceberg {

namespace {

using Json = nlohmann::json;

constexpr int kMaxDepth = 64;
constexpr char kMagic[4] = {'O', 'b', 'j', 1};

// --- Schema parsing -----------------------------------------------------------------------

class SchemaParser {
 public:
  Result<AvroNodePtr> Parse(const Json& j, const std::string& ns, int depth) {
    if (depth > kMaxDepth) return Status::Invalid("Avro schema nested deeper than 64 levels");
    if (j.is_string()) return ParseName(j.get<std::string>(), ns);
    if (j.is_array()) {
      auto node = std::make_shared<AvroNode>();
      node->type = AvroType::kUnion;
      for (const auto& branch : j) {
        ASSIGN_OR_RAISE(auto b, Parse(branch, ns, depth + 1));
        if (b->type == AvroType::kUnion) return Status::Invalid("Avro union directly in a union");
        node->branches.push_back(std::move(b));
      }
      if (node->branches.empty()) return Status::Invalid("Avro union without branches");
      return AvroNodePtr(node);
    }
    if (!j.is_object() || !j.contains("type")) {
      return Status::Invalid("Avro schema node is not a name, union or object with \"type\"");
    }
    const Json& type = j["type"];
    if (!type.is_string()) {
      // {"type": {...}} or {"type": [...]}: the nested schema, attributes ignored.
      return Parse(type, ns, depth + 1);
    }
    std::string t = type.get<std::string>();
    auto node = std::make_shared<AvroNode>();
    if (auto it = j.find("logicalType"); it != j.end() && it->is_string()) {
      node->logical_type = it->get<std::string>();
    }
    if (t == "record" || t == "error" || t == "enum" || t == "fixed") {
      auto name_it = j.find("name");
      if (name_it == j.end() || !name_it->is_string() || name_it->get<std::string>().empty()) {
        return Status::Invalid("Avro " + t + " without a name");
      }
      std::string name = name_it->get<std::string>();
      std::string child_ns = j.contains("namespace") && j["namespace"].is_string()
                                 ? j["namespace"].get<std::string>()
                                 : ns;
      if (name.find('.') != std::string::npos) {
        child_ns = name.substr(0, name.rfind('.'));
      } else if (!child_ns.empty()) {
        name = child_ns + "." + name;
      }
      node->name = name;
      if (named_.count(name)) return Status::Invalid("Avro type \"" + name + "\" defined twice");
      if (t == "fixed") {
        node->type = AvroType::kFixed;
        if (!j.contains("size") || !j["size"].is_number_integer()) {
          return Status::Invalid("Avro fixed \"" + name + "\" without an integer size");
        }
        int64_t size = j["size"].get<int64_t>();
        if (size < 0 || size > (1 << 20)) {
          return Status::Invalid("Avro fixed \"" + name + "\" has size " + std::to_string(size));
        }
        node->size = static_cast<int32_t>(size);
      } else if (t == "enum") {
        node->type = AvroType::kEnum;
        if (!j.contains("symbols") || !j["symbols"].is_array()) {
          return Status::Invalid("Avro enum \"" + name + "\" without symbols");
        }
        for (const auto& s : j["symbols"]) {
          if (!s.is_string()) return Status::Invalid("Avro enum symbol is not a string");
          node->symbols.push_back(s.get<std::string>());
        }
      } else {
        node->type = AvroType::kRecord;
        named_[name] = nullptr;  // defined but incomplete: a reference now is recursion
        if (!j.contains("fields") || !j["fields"].is_array()) {
          return Status::Invalid("Avro record \"" + name + "\" without fields");
        }
        for (const auto& f : j["fields"]) {
          if (!f.is_object() || !f.contains("name") || !f["name"].is_string() ||
              !f.contains("type")) {
            return Status::Invalid("Avro record \"" + name + "\" has a field without name/type");
          }
          AvroField field;
          field.name = f["name"].get<std::string>();
          ASSIGN_OR_RAISE(field.type, Parse(f["type"], child_ns, depth + 1));
          ASSIGN_OR_RAISE(field.field_id, OptionalId(f, "field-id"));
          node->fields.push_back(std::move(field));
        }
      }
      named_[name] = node;
      return AvroNodePtr(node);
    }
    if (t == "array") {
      node->type = AvroType::kArray;
      if (!j.contains("items")) return Status::Invalid("Avro array without items");
      ASSIGN_OR_RAISE(node->items, Parse(j["items"], ns, depth + 1));
      ASSIGN_OR_RAISE(node->element_id, OptionalId(j, "element-id"));
      return AvroNodePtr(node);
    }
    if (t == "map") {
      node->type = AvroType::kMap;
      if (!j.contains("values")) return Status::Invalid("Avro map without values");
      ASSIGN_OR_RAISE(node->values, Parse(j["values"], ns, depth + 1));
      ASSIGN_OR_RAISE(node->key_id, OptionalId(j, "key-id"));
      ASSIGN_OR_RAISE(node->value_id, OptionalId(j, "value-id"));
      return AvroNodePtr(node);
    }
    ASSIGN_OR_RAISE(auto prim, ParseName(t, ns));
    if (node->logical_type.empty()) return prim;
    if (prim->type == AvroType::kRecord || prim->type == AvroType::kEnum ||
        prim->type == AvroType::kFixed) {
      return prim;
    }
    node->type = prim->type;
    return AvroNodePtr(node);
  }

 private:
  static Result<std::optional<int32_t>> OptionalId(const Json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end()) return std::optional<int32_t>();
    if (it->is_number_integer()) return std::optional<int32_t>(it->get<int32_t>());
    if (it->is_string()) {  // some writers quote ids
      auto id = ParseInt32(it->get<std::string>());
      if (id.ok()) return std::optional<int32_t>(*id);
    }
    return Status::Invalid(std::string("Avro attribute \"") + key + "\" is not an integer");
  }

  Result<AvroNodePtr> ParseName(const std::string& t, const std::string& ns) {
    static const std::map<std::string, AvroType> kPrimitives = {
        {"null", AvroType::kNull},   {"boolean", AvroType::kBoolean}, {"int", AvroType::kInt},
        {"long", AvroType::kLong},   {"float", AvroType::kFloat},     {"double", AvroType::kDouble},
        {"bytes", AvroType::kBytes}, {"string", AvroType::kString}};
    if (auto it = kPrimitives.find(t); it != kPrimitives.end()) {
      auto node = std::make_shared<AvroNode>();
      node->type = it->second;
      return AvroNodePtr(node);
    }
    for (const std::string& full : {ns.empty() ? t : ns + "." + t, t}) {
      auto it = named_.find(full);
      if (it == named_.end()) continue;
      if (it->second == nullptr) {
        return Status::NotImplemented("recursive Avro type \"" + full + "\"");
      }
      return it->second;
    }
    return Status::Invalid("unknown Avro type \"" + t + "\"");
  }

  std::map<std::string, AvroNodePtr> named_;
};

Status Mismatch(const AvroNode& schema, const AvroValue& value) {
  return Status::Invalid("Avro value of type " + std::to_string(static_cast<int>(value.type)) +
                         " does not match schema type " +
                         std::to_string(static_cast<int>(schema.type)) +
                         (schema.name.empty() ? "" : " (" + schema.name + ")"));
}

bool IsIntegral(AvroType t) { return t == AvroType::kInt || t == AvroType::kLong; }

Status Encode(const AvroNode& s, const AvroValue& v, std::string* out, int depth) {
  if (depth > kMaxDepth) return Status::Invalid("Avro value nested deeper than 64 levels");
  switch (s.type) {
    case AvroType::kNull: return v.is_null() ? Status::OK() : Mismatch(s, v);
    case AvroType::kBoolean:
      if (v.type != AvroType::kBoolean) return Mismatch(s, v);
      out->push_back(v.b ? 1 : 0);
      return Status::OK();
    case AvroType::kInt:
      if (!IsIntegral(v.type) || v.i < INT32_MIN || v.i > INT32_MAX) return Mismatch(s, v);
      AppendAvroLong(out, v.i);
      return Status::OK();
    case AvroType::kLong:
      if (!IsIntegral(v.type)) return Mismatch(s, v);
      AppendAvroLong(out, v.i);
      return Status::OK();
    case AvroType::kEnum:
      if (v.type != AvroType::kEnum && !IsIntegral(v.type)) return Mismatch(s, v);
      if (v.i < 0 || v.i >= static_cast<int64_t>(s.symbols.size())) return Mismatch(s, v);
      AppendAvroLong(out, v.i);
      return Status::OK();
    case AvroType::kFloat:
      if (v.type != AvroType::kFloat && v.type != AvroType::kDouble) return Mismatch(s, v);
      AppendAvroFloat(out, static_cast<float>(v.d));
      return Status::OK();
    case AvroType::kDouble:
      if (v.type != AvroType::kFloat && v.type != AvroType::kDouble) return Mismatch(s, v);
      AppendAvroDouble(out, v.d);
      return Status::OK();
    case AvroType::kBytes:
    case AvroType::kString:
      if (v.type != AvroType::kBytes && v.type != AvroType::kString) return Mismatch(s, v);
      AppendAvroBytes(out, v.bytes);
      return Status::OK();
    case AvroType::kFixed:
      if (v.type != AvroType::kFixed && v.type != AvroType::kBytes) return Mismatch(s, v);
      if (static_cast<int64_t>(v.bytes.size()) != s.size) {
        return Status::Invalid("Avro fixed " + s.name + " needs " + std::to_string(s.size) +
                               " bytes, got " + std::to_string(v.bytes.size()));
      }
      out->append(v.bytes);
      return Status::OK();
    case AvroType::kRecord:
      if (v.type != AvroType::kRecord || v.items.size() != s.fields.size()) {
        return Status::Invalid("Avro record " + s.name + " needs " +
                               std::to_string(s.fields.size()) + " fields, got " +
                               std::to_string(v.items.size()));
      }
      for (size_t i = 0; i < s.fields.size(); ++i) {
        Status st = Encode(*s.fields[i].type, v.items[i], out, depth + 1);
        if (!st.ok()) return st.WithContext(s.name + "." + s.fields[i].name);
      }
      return Status::OK();
    case AvroType::kArray:
      if (v.type != AvroType::kArray) return Mismatch(s, v);
      if (!v.items.empty()) {
        AppendAvroLong(out, static_cast<int64_t>(v.items.size()));
        for (const auto& item : v.items) RETURN_NOT_OK(Encode(*s.items, item, out, depth + 1));
      }
      AppendAvroLong(out, 0);
      return Status::OK();
    case AvroType::kMap:
      if (v.type != AvroType::kMap) return Mismatch(s, v);
      if (!v.entries.empty()) {
        AppendAvroLong(out, static_cast<int64_t>(v.entries.size()));
        for (const auto& [key, item] : v.entries) {
          AppendAvroBytes(out, key);
          RETURN_NOT_OK(Encode(*s.values, item, out, depth + 1));
        }
      }
      AppendAvroLong(out, 0);
      return Status::OK();
    case AvroType::kUnion: {
      // Null goes to the null branch; anything else to the first branch that accepts it.
      for (size_t i = 0; i < s.branches.size(); ++i) {
        if ((s.branches[i]->type == AvroType::kNull) != v.is_null()) continue;
        std::string attempt;
        if (Encode(*s.branches[i], v, &attempt, depth + 1).ok()) {
          AppendAvroLong(out, static_cast<int64_t>(i));
          out->append(attempt);
          return Status::OK();
        }
      }
      return Status::Invalid("no branch of the Avro union accepts the value");
    }
  }
  return Status::Internal("unknown Avro type");
}

Result<AvroValue> Decode(const AvroNode& s, AvroDecoder* d, int depth) {
  if (depth > kMaxDepth) return Status::Corruption("Avro value nested deeper than 64 levels");
  AvroValue v;
  v.type = s.type;
  switch (s.type) {
    case AvroType::kNull: return v;
    case AvroType::kBoolean: {
      ASSIGN_OR_RAISE(v.b, d->ReadBoolean());
      return v;
    }
    case AvroType::kInt: {
      ASSIGN_OR_RAISE(v.i, d->ReadInt());
      return v;
    }
    case AvroType::kLong: {
      ASSIGN_OR_RAISE(v.i, d->ReadLong());
      return v;
    }
    case AvroType::kEnum: {
      ASSIGN_OR_RAISE(v.i, d->ReadInt());
      if (v.i < 0 || v.i >= static_cast<int64_t>(s.symbols.size())) {
        return Status::Corruption("Avro enum index " + std::to_string(v.i) + " out of range");
      }
      return v;
    }
    case AvroType::kFloat: {
      ASSIGN_OR_RAISE(auto f, d->ReadFloat());
      v.d = f;
      return v;
    }
    case AvroType::kDouble: {
      ASSIGN_OR_RAISE(v.d, d->ReadDouble());
      return v;
    }
    case AvroType::kBytes:
    case AvroType::kString: {
      ASSIGN_OR_RAISE(auto bytes, d->ReadBytes());
      v.bytes.assign(bytes);
      return v;
    }
    case AvroType::kFixed: {
      ASSIGN_OR_RAISE(auto bytes, d->ReadFixed(s.size));
      v.bytes.assign(bytes);
      return v;
    }
    case AvroType::kRecord:
      v.items.reserve(s.fields.size());
      for (const auto& field : s.fields) {
        ASSIGN_OR_RAISE(auto item, Decode(*field.type, d, depth + 1));
        v.items.push_back(std::move(item));
      }
      return v;
    case AvroType::kArray:
    case AvroType::kMap: {
      for (;;) {
        ASSIGN_OR_RAISE(int64_t count, d->ReadLong());
        if (count == 0) break;
        if (count < 0) {
          if (count == INT64_MIN) return Status::Corruption("Avro block count overflows");
          count = -count;
          ASSIGN_OR_RAISE(int64_t block_size, d->ReadLong());
          (void)block_size;
        }
        // Every item takes at least one byte unless its type is null; bound the count.
        if (count > static_cast<int64_t>(d->remaining()) + 1 &&
            (s.type == AvroType::kMap || s.items->type != AvroType::kNull)) {
          return Status::Corruption("Avro block claims " + std::to_string(count) + " items with " +
                                    std::to_string(d->remaining()) + " bytes left");
        }
        if (count > (int64_t{1} << 24)) {
          return Status::Corruption("Avro block of " + std::to_string(count) + " items");
        }
        for (int64_t k = 0; k < count; ++k) {
          if (s.type == AvroType::kArray) {
            ASSIGN_OR_RAISE(auto item, Decode(*s.items, d, depth + 1));
            v.items.push_back(std::move(item));
          } else {
            ASSIGN_OR_RAISE(auto key, d->ReadBytes());
            ASSIGN_OR_RAISE(auto item, Decode(*s.values, d, depth + 1));
            v.entries.emplace_back(std::string(key), std::move(item));
          }
        }
      }
      return v;
    }
    case AvroType::kUnion: {
      size_t at = d->position();
      ASSIGN_OR_RAISE(int64_t branch, d->ReadLong());
      if (branch < 0 || branch >= static_cast<int64_t>(s.branches.size())) {
        return Status::Corruption("Avro union branch " + std::to_string(branch) +
                                  " out of range at byte " + std::to_string(at));
      }
      ASSIGN_OR_RAISE(auto inner, Decode(*s.branches[branch], d, depth + 1));
      inner.branch = static_cast<int32_t>(branch);
      return inner;
    }
  }
  return Status::Internal("unknown Avro type");
}

Result<std::string> Deflate(std::string_view in, int level) {
  z_stream zs{};
  if (deflateInit2(&zs, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Status::Internal("deflateInit2 failed");
  }
  std::string out(deflateBound(&zs, in.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return Status::Internal("deflate did not finish");
  return out;
}

// Raw inflate, refusing to grow past `limit` bytes.
Result<std::string> Inflate(std::string_view in, size_t limit) {
  z_stream zs{};
  if (inflateInit2(&zs, -15) != Z_OK) return Status::Internal("inflateInit2 failed");
  std::string out;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    size_t have = out.size();
    if (have >= limit) {
      inflateEnd(&zs);
      return Status::Corruption("deflate block inflates past " + std::to_string(limit) + " bytes");
    }
    out.resize(std::min(limit, std::max<size_t>(have * 2, 4096)));
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + have);
    zs.avail_out = static_cast<uInt>(out.size() - have);
    rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(out.size() - zs.avail_out);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&zs);
      return Status::Corruption("deflate block is corrupt (zlib " + std::to_string(rc) + ")");
    }
    if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
      inflateEnd(&zs);
      return Status::Corruption("deflate block is truncated");
    }
  }
  inflateEnd(&zs);
  return out;
}

}  // namespace

int AvroNode::FieldIndexById(int32_t field_id) const {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].field_id == field_id) return static_cast<int>(i);
  }
  return -1;
}

bool AvroNode::IsNullable() const {
  if (type == AvroType::kNull) return true;
  if (type != AvroType::kUnion) return false;
  for (const auto& b : branches) {
    if (b->type == AvroType::kNull) return true;
  }
  return false;
}

const AvroNode& AvroNode::NonNull() const {
  if (type == AvroType::kUnion && branches.size() == 2) {
    if (branches[0]->type == AvroType::kNull) return *branches[1];
    if (branches[1]->type == AvroType::kNull) return *branches[0];
  }
  return *this;
}

Result<AvroNodePtr> ParseAvroSchema(std::string_view json) {
  Json j = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Invalid("Avro schema is not valid JSON");
  SchemaParser parser;
  return parser.Parse(j, "", 0);
}

AvroValue::AvroValue() = default;
AvroValue::AvroValue(const AvroValue&) = default;
AvroValue::AvroValue(AvroValue&&) noexcept = default;
AvroValue& AvroValue::operator=(const AvroValue&) = default;
AvroValue& AvroValue::operator=(AvroValue&&) noexcept = default;
AvroValue::~AvroValue() = default;

AvroValue AvroValue::Null() { return AvroValue(); }
AvroValue AvroValue::Boolean(bool v) {
  AvroValue r;
  r.type = AvroType::kBoolean;
  r.b = v;
  return r;
}
AvroValue AvroValue::Int(int32_t v) {
  AvroValue r;
  r.type = AvroType::kInt;
  r.i = v;
  return r;
}
AvroValue AvroValue::Long(int64_t v) {
  AvroValue r;
  r.type = AvroType::kLong;
  r.i = v;
  return r;
}
AvroValue AvroValue::Float(float v) {
  AvroValue r;
  r.type = AvroType::kFloat;
  r.d = v;
  return r;
}
AvroValue AvroValue::Double(double v) {
  AvroValue r;
  r.type = AvroType::kDouble;
  r.d = v;
  return r;
}
AvroValue AvroValue::Bytes(std::string v) {
  AvroValue r;
  r.type = AvroType::kBytes;
  r.bytes = std::move(v);
  return r;
}
AvroValue AvroValue::String(std::string v) {
  AvroValue r;
  r.type = AvroType::kString;
  r.bytes = std::move(v);
  return r;
}
AvroValue AvroValue::Fixed(std::string v) {
  AvroValue r;
  r.type = AvroType::kFixed;
  r.bytes = std::move(v);
  return r;
}
AvroValue AvroValue::Array(std::vector<AvroValue> items) {
  AvroValue r;
  r.type = AvroType::kArray;
  r.items = std::move(items);
  return r;
}
AvroValue AvroValue::Record(std::vector<AvroValue> fields) {
  AvroValue r;
  r.type = AvroType::kRecord;
  r.items = std::move(fields);
  return r;
}

void AppendAvroLong(std::string* out, int64_t v) {
  uint64_t n = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (n >= 0x80) {
    out->push_back(static_cast<char>((n & 0x7f) | 0x80));
    n >>= 7;
  }
  out->push_back(static_cast<char>(n));
}

void AppendAvroBytes(std::string* out, std::string_view bytes) {
  AppendAvroLong(out, static_cast<int64_t>(bytes.size()));
  out->append(bytes);
}

void AppendAvroFloat(std::string* out, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(bits >> (8 * i)));
}

void AppendAvroDouble(std::string* out, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(bits >> (8 * i)));
}

Result<int64_t> AvroDecoder::ReadLong() {
  uint64_t n = 0;
  size_t start = pos_;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos_ >= data_.size()) {
      return Status::Corruption("Avro varint truncated at byte " + std::to_string(start));
    }
    uint8_t byte = static_cast<uint8_t>(data_[pos_++]);
    if (shift == 63 && (byte & 0x7e) != 0) break;
    n |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return static_cast<int64_t>((n >> 1) ^ (~(n & 1) + 1));
  }
  return Status::Corruption("Avro varint longer than 10 bytes at byte " + std::to_string(start));
}

Result<int32_t> AvroDecoder::ReadInt() {
  size_t start = pos_;
  ASSIGN_OR_RAISE(int64_t v, ReadLong());
  if (v < INT32_MIN || v > INT32_MAX) {
    return Status::Corruption("Avro int out of range at byte " + std::to_string(start));
  }
  return static_cast<int32_t>(v);
}

Result<bool> AvroDecoder::ReadBoolean() {
  if (pos_ >= data_.size()) return Status::Corruption("Avro boolean truncated");
  uint8_t byte = static_cast<uint8_t>(data_[pos_++]);
  if (byte > 1) {
    return Status::Corruption("Avro boolean byte " + std::to_string(byte) + " at byte " +
                              std::to_string(pos_ - 1));
  }
  return byte == 1;
}

Result<float> AvroDecoder::ReadFloat() {
  ASSIGN_OR_RAISE(auto raw, ReadFixed(4));
  uint32_t bits = 0;
  for (int i = 0; i < 4; ++i)
    bits |= static_cast<uint32_t>(static_cast<uint8_t>(raw[i])) << (8 * i);
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

Result<double> AvroDecoder::ReadDouble() {
  ASSIGN_OR_RAISE(auto raw, ReadFixed(8));
  uint64_t bits = 0;
  for (int i = 0; i < 8; ++i)
    bits |= static_cast<uint64_t>(static_cast<uint8_t>(raw[i])) << (8 * i);
  double v;
  std::memcpy(&v, &bits, 8);
  return v;
}

Result<std::string_view> AvroDecoder::ReadBytes() {
  size_t start = pos_;
  ASSIGN_OR_RAISE(int64_t length, ReadLong());
  if (length < 0) {
    return Status::Corruption("Avro negative length " + std::to_string(length) + " at byte " +
                              std::to_string(start));
  }
  return ReadFixed(length);
}

Result<std::string_view> AvroDecoder::ReadFixed(int64_t size) {
  if (size < 0 || static_cast<uint64_t>(size) > remaining()) {
    return Status::Corruption("Avro value of " + std::to_string(size) + " bytes at byte " +
                              std::to_string(pos_) + " runs past the end (" +
                              std::to_string(remaining()) + " left)");
  }
  std::string_view out = data_.substr(pos_, static_cast<size_t>(size));
  pos_ += static_cast<size_t>(size);
  return out;
}

Status EncodeAvroValue(const AvroNode& schema, const AvroValue& value, std::string* out) {
  return Encode(schema, value, out, 0);
}

Result<AvroValue> DecodeAvroValue(const AvroNode& schema, AvroDecoder* decoder) {
  return Decode(schema, decoder, 0);
}

Result<std::unique_ptr<AvroFileWriter>> AvroFileWriter::Make(
    std::string schema_json, std::vector<std::pair<std::string, std::string>> metadata,
    AvroWriterOptions options) {
  std::unique_ptr<AvroFileWriter> w(new AvroFileWriter());
  ASSIGN_OR_RAISE(w->schema_, ParseAvroSchema(schema_json));
  w->options_ = options;
  std::random_device rd;
  for (char& c : w->sync_) c = static_cast<char>(rd());
  w->out_.append(kMagic, 4);
  std::vector<std::pair<std::string, std::string>> header;
  header.emplace_back("avro.schema", std::move(schema_json));
  header.emplace_back("avro.codec", options.codec == AvroCodec::kDeflate ? "deflate" : "null");
  for (auto& kv : metadata) {
    if (kv.first == "avro.schema" || kv.first == "avro.codec") {
      return Status::Invalid("Avro metadata key " + kv.first + " is reserved");
    }
    header.push_back(std::move(kv));
  }
  AppendAvroLong(&w->out_, static_cast<int64_t>(header.size()));
  for (const auto& [key, value] : header) {
    AppendAvroBytes(&w->out_, key);
    AppendAvroBytes(&w->out_, value);
  }
  AppendAvroLong(&w->out_, 0);
  w->out_.append(w->sync_, 16);
  return w;
}

Status AvroFileWriter::Append(const AvroValue& record) {
  if (finished_) return Status::Invalid("AvroFileWriter used after Finish");
  size_t before = block_.size();
  Status st = EncodeAvroValue(*schema_, record, &block_);
  if (!st.ok()) {
    block_.resize(before);
    return st;
  }
  ++block_count_;
  if (static_cast<int64_t>(block_.size()) >= options_.block_bytes) return FlushBlock();
  return Status::OK();
}

Status AvroFileWriter::FlushBlock() {
  if (block_count_ == 0) return Status::OK();
  std::string payload;
  if (options_.codec == AvroCodec::kDeflate) {
    ASSIGN_OR_RAISE(payload, Deflate(block_, options_.deflate_level));
  } else {
    payload = std::move(block_);
  }
  AppendAvroLong(&out_, block_count_);
  AppendAvroBytes(&out_, payload);
  out_.append(sync_, 16);
  block_.clear();
  block_count_ = 0;
  return Status::OK();
}

Result<std::string> AvroFileWriter::Finish() {
  if (finished_) return Status::Invalid("AvroFileWriter::Finish called twice");
  RETURN_NOT_OK(FlushBlock());
  finished_ = true;
  return std::move(out_);
}

std::optional<std::string> AvroFile::Metadata(std::string_view key) const {
  for (const auto& [k, v] : metadata) {
    if (k == key) return v;
  }
  return std::nullopt;
}

Result<AvroFile> ReadAvroFile(std::string_view bytes) {
  if (bytes.size() < 4 || std::memcmp(bytes.data(), kMagic, 4) != 0) {
    return Status::Corruption("not an Avro object container file (bad magic)");
  }
  AvroDecoder d(bytes.substr(4));
  AvroFile file;
  for (;;) {
    ASSIGN_OR_RAISE(int64_t count, d.ReadLong());
    if (count == 0) break;
    if (count < 0) {
      if (count == INT64_MIN) return Status::Corruption("Avro header map count overflows");
      count = -count;
      ASSIGN_OR_RAISE(int64_t ignored, d.ReadLong());
      (void)ignored;
    }
    if (count > static_cast<int64_t>(d.remaining())) {
      return Status::Corruption("Avro header claims " + std::to_string(count) + " entries");
    }
    for (int64_t i = 0; i < count; ++i) {
      ASSIGN_OR_RAISE(auto key, d.ReadBytes());
      ASSIGN_OR_RAISE(auto value, d.ReadBytes());
      file.metadata.emplace_back(std::string(key), std::string(value));
    }
  }
  ASSIGN_OR_RAISE(auto sync, d.ReadFixed(16));
  auto schema_json = file.Metadata("avro.schema");
  if (!schema_json) return Status::Corruption("Avro file has no avro.schema");
  file.schema_json = *schema_json;
  auto parsed = ParseAvroSchema(file.schema_json);
  if (!parsed.ok()) return Status::Corruption("Avro file schema: " + parsed.status().message());
  file.schema = *parsed;
  std::string codec = file.Metadata("avro.codec").value_or("null");
  if (codec != "null" && codec != "deflate") {
    return Status::NotImplemented("Avro codec \"" + codec + "\" (only null and deflate)");
  }
  // Inflated blocks are bounded by 64x the whole file or 256 MiB, whichever is larger.
  size_t inflate_limit = std::max<size_t>(bytes.size() * 64, size_t{256} << 20);
  while (d.remaining() > 0) {
    size_t block_at = 4 + d.position();
    ASSIGN_OR_RAISE(int64_t count, d.ReadLong());
    ASSIGN_OR_RAISE(auto payload, d.ReadBytes());
    ASSIGN_OR_RAISE(auto block_sync, d.ReadFixed(16));
    if (block_sync != sync) {
      return Status::Corruption("Avro block at byte " + std::to_string(block_at) +
                                " ends without the sync marker");
    }
    if (count < 0) {
      return Status::Corruption("Avro block at byte " + std::to_string(block_at) +
                                " has a negative count");
    }
    std::string inflated;
    std::string_view data = payload;
    if (codec == "deflate") {
      ASSIGN_OR_RAISE(inflated, Inflate(payload, inflate_limit));
      data = inflated;
    }
    if (count > static_cast<int64_t>(data.size()) + (int64_t{1} << 16)) {
      return Status::Corruption("Avro block at byte " + std::to_string(block_at) + " claims " +
                                std::to_string(count) + " records in " +
                                std::to_string(data.size()) + " bytes");
    }
    AvroDecoder block(data);
    for (int64_t i = 0; i < count; ++i) {
      auto record = DecodeAvroValue(*file.schema, &block);
      if (!record.ok()) {
        return record.status().WithContext("Avro block at byte " + std::to_string(block_at) +
                                           ", record " + std::to_string(i));
      }
      file.records.push_back(std::move(*record));
    }
    if (block.remaining() != 0) {
      return Status::Corruption("Avro block at byte " + std::to_string(block_at) + " has " +
                                std::to_string(block.remaining()) + " bytes after its records");
    }
  }
  return file;
}

}  // namespace oxbow::iceberg
