#include "oxbow/iceberg/partition.h"

#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "oxbow/common/civil_time.h"

namespace oxbow::iceberg {

using Json = nlohmann::json;

namespace {

// Days since 1970-01-01 -> civil year and month (1..12).
void CivilYearMonth(int64_t days, int64_t* year, int64_t* month) {
  unsigned m = 0, d = 0;
  CivilFromDays(days, year, &m, &d);
  *month = m;
}

bool IsTemporal(TypeKind k) {
  return k == TypeKind::kDate || k == TypeKind::kTimestamp || k == TypeKind::kTimestampTz;
}

constexpr int64_t kMicrosPerHour = int64_t{3600} * 1000000;
constexpr int64_t kMicrosPerDay = kMicrosPerHour * 24;

// The spec's truncate of an integer, v - (((v % W) + W) % W), wrapping on overflow near the
// minimum as Java's long arithmetic does (the remainder itself cannot overflow).
template <typename T, typename U>
T TruncateInteger(T v, int64_t width) {
  T w = static_cast<T>(width);
  T remainder = ((v % w) + w) % w;
  return static_cast<T>(static_cast<U>(v) - static_cast<U>(remainder));
}

// Days since the epoch of a date or timestamp literal.
int64_t EpochDays(const Type& source, const Literal& v) {
  if (source.kind() == TypeKind::kDate) return std::get<int32_t>(v);
  return FloorDiv(std::get<int64_t>(v), kMicrosPerDay);
}

// N of "<name>[N]" for N in [1, 2^31-1]; nullopt when `text` is anything else.
std::optional<int32_t> BracketedCount(std::string_view text, std::string_view name) {
  if (text.size() < name.size() + 3 || text.substr(0, name.size()) != name ||
      text[name.size()] != '[' || text.back() != ']') {
    return std::nullopt;
  }
  const std::string_view digits = text.substr(name.size() + 1, text.size() - name.size() - 2);
  int32_t n = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (error != std::errc() || end != digits.data() + digits.size() || n < 1) return std::nullopt;
  return n;
}

}  // namespace

Result<Transform> Transform::Parse(std::string_view text) {
  if (text == "identity") return Identity();
  if (text == "year") return Year();
  if (text == "month") return Month();
  if (text == "day") return Day();
  if (text == "hour") return Hour();
  if (text == "void") return Transform{TransformKind::kVoid, 0};
  if (auto n = BracketedCount(text, "bucket")) return Bucket(*n);
  if (auto w = BracketedCount(text, "truncate")) return Truncate(*w);
  return Status::Invalid("unknown partition transform " + Quote(text) +
                         " (expected identity, bucket[N], truncate[W], year, month, day, hour or "
                         "void; N and W from 1 to 2147483647)");
}

std::string Transform::ToString() const {
  switch (kind) {
    case TransformKind::kIdentity: return "identity";
    case TransformKind::kBucket: return "bucket[" + std::to_string(param) + "]";
    case TransformKind::kTruncate: return "truncate[" + std::to_string(param) + "]";
    case TransformKind::kYear: return "year";
    case TransformKind::kMonth: return "month";
    case TransformKind::kDay: return "day";
    case TransformKind::kHour: return "hour";
    case TransformKind::kVoid: return "void";
  }
  return "?";
}

Result<Type> Transform::ResultType(const Type& source) const {
  TypeKind k = source.kind();
  auto refuse = [&]() -> Result<Type> {
    return Status::Invalid("transform " + ToString() + " does not apply to " + source.ToString());
  };
  if (source.is_nested()) return refuse();
  switch (kind) {
    case TransformKind::kIdentity:
    case TransformKind::kVoid: return source;
    case TransformKind::kBucket:
      if (k == TypeKind::kBoolean || k == TypeKind::kFloat || k == TypeKind::kDouble) {
        return refuse();
      }
      return Type::Int();
    case TransformKind::kTruncate:
      if (k == TypeKind::kInt || k == TypeKind::kLong || k == TypeKind::kString ||
          k == TypeKind::kBinary || k == TypeKind::kDecimal) {
        return source;
      }
      return refuse();
    case TransformKind::kYear:
    case TransformKind::kMonth:
      if (!IsTemporal(k)) return refuse();
      return Type::Int();
    case TransformKind::kDay:
      if (!IsTemporal(k)) return refuse();
      return Type::Date();
    case TransformKind::kHour:
      if (k != TypeKind::kTimestamp && k != TypeKind::kTimestampTz) return refuse();
      return Type::Int();
  }
  return refuse();
}

Result<std::optional<Literal>> Transform::Apply(const Type& source,
                                                const std::optional<Literal>& value) const {
  RETURN_NOT_OK(ResultType(source).status());
  if (!value || kind == TransformKind::kVoid) return std::optional<Literal>();
  RETURN_NOT_OK(CheckLiteral(source, *value));
  const Literal& v = *value;
  switch (kind) {
    case TransformKind::kIdentity:
    case TransformKind::kVoid: return std::optional<Literal>(v);
    case TransformKind::kBucket: {
      ASSIGN_OR_RAISE(int32_t hash, BucketHash(source, v));
      return std::optional<Literal>(static_cast<int32_t>((hash & INT32_MAX) % param));
    }
    case TransformKind::kTruncate: {
      int64_t w = param;
      switch (source.kind()) {
        case TypeKind::kInt: {
          int64_t x = std::get<int32_t>(v);
          return std::optional<Literal>(static_cast<int32_t>(x - (((x % w) + w) % w)));
        }
        case TypeKind::kLong:
          return std::optional<Literal>(
              TruncateInteger<int64_t, uint64_t>(std::get<int64_t>(v), w));
        case TypeKind::kDecimal:
          return std::optional<Literal>(Decimal{
              TruncateInteger<__int128, unsigned __int128>(std::get<Decimal>(v).unscaled, w)});
        case TypeKind::kBinary: {
          const auto& s = std::get<std::string>(v);
          return std::optional<Literal>(s.substr(0, std::min<size_t>(s.size(), w)));
        }
        default: {  // string: the first W code points
          const auto& s = std::get<std::string>(v);
          size_t pos = 0;
          for (int64_t cp = 0; cp < w && pos < s.size(); ++cp) {
            ++pos;
            while (pos < s.size() && (static_cast<uint8_t>(s[pos]) & 0xc0) == 0x80) ++pos;
          }
          return std::optional<Literal>(s.substr(0, pos));
        }
      }
    }
    case TransformKind::kYear: {
      int64_t year, month;
      CivilYearMonth(EpochDays(source, v), &year, &month);
      return std::optional<Literal>(static_cast<int32_t>(year - 1970));
    }
    case TransformKind::kMonth: {
      int64_t year, month;
      CivilYearMonth(EpochDays(source, v), &year, &month);
      return std::optional<Literal>(static_cast<int32_t>((year - 1970) * 12 + month - 1));
    }
    case TransformKind::kDay:
      return std::optional<Literal>(static_cast<int32_t>(EpochDays(source, v)));
    case TransformKind::kHour:
      return std::optional<Literal>(
          static_cast<int32_t>(FloorDiv(std::get<int64_t>(v), kMicrosPerHour)));
  }
  return Status::Internal("unknown transform");
}

int32_t Murmur3Hash32(std::string_view bytes) {
  const uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
  auto rotl = [](uint32_t x, int r) { return (x << r) | (x >> (32 - r)); };
  uint32_t h = 0;
  size_t n = bytes.size();
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  size_t blocks = n / 4;
  for (size_t i = 0; i < blocks; ++i) {
    uint32_t k = static_cast<uint32_t>(p[4 * i]) | (static_cast<uint32_t>(p[4 * i + 1]) << 8) |
                 (static_cast<uint32_t>(p[4 * i + 2]) << 16) |
                 (static_cast<uint32_t>(p[4 * i + 3]) << 24);
    k *= c1;
    k = rotl(k, 15);
    k *= c2;
    h ^= k;
    h = rotl(h, 13);
    h = h * 5 + 0xe6546b64;
  }
  const uint8_t* tail = p + blocks * 4;
  uint32_t k = 0;
  switch (n & 3) {
    case 3: k ^= static_cast<uint32_t>(tail[2]) << 16; [[fallthrough]];
    case 2: k ^= static_cast<uint32_t>(tail[1]) << 8; [[fallthrough]];
    case 1:
      k ^= tail[0];
      k *= c1;
      k = rotl(k, 15);
      k *= c2;
      h ^= k;
  }
  h ^= static_cast<uint32_t>(n);
  h ^= h >> 16;
  h *= 0x85ebca6b;
  h ^= h >> 13;
  h *= 0xc2b2ae35;
  h ^= h >> 16;
  return static_cast<int32_t>(h);
}

Result<int32_t> BucketHash(const Type& type, const Literal& value) {
  RETURN_NOT_OK(CheckLiteral(type, value));
  auto hash_long = [](int64_t v) {
    char bytes[8];
    std::memcpy(bytes, &v, 8);  // little-endian
    return Murmur3Hash32(std::string_view(bytes, 8));
  };
  switch (type.kind()) {
    case TypeKind::kInt:
    case TypeKind::kDate: return hash_long(std::get<int32_t>(value));
    case TypeKind::kLong:
    case TypeKind::kTimestamp:
    case TypeKind::kTimestampTz: return hash_long(std::get<int64_t>(value));
    case TypeKind::kString:
    case TypeKind::kBinary:
    case TypeKind::kFixed: return Murmur3Hash32(std::get<std::string>(value));
    case TypeKind::kDecimal:
      return Murmur3Hash32(DecimalToBytes(std::get<Decimal>(value).unscaled));
    default: return Status::Invalid("bucket hash does not apply to " + type.ToString());
  }
}

bool PartitionField::operator==(const PartitionField& other) const {
  return source_id == other.source_id && field_id == other.field_id && name == other.name &&
         transform == other.transform;
}

Result<PartitionSpec> PartitionSpec::Make(const Schema& schema,
                                          const std::vector<PartitionFieldRequest>& requests,
                                          int32_t spec_id, int32_t first_field_id) {
  std::vector<PartitionField> fields;
  std::set<std::string> names;
  int32_t next_id = first_field_id;
  for (const auto& r : requests) {
    const NestedField* source = schema.FindField(r.source_name);
    if (source == nullptr) {
      return Status::Invalid("partition source column " + Quote(r.source_name) +
                             " is not in the schema");
    }
    auto result_type = r.transform.ResultType(source->type);
    if (!result_type.ok())
      return result_type.status().WithContext("partition field " + Quote(r.source_name));
    PartitionField f;
    f.source_id = source->id;
    f.field_id = next_id++;
    f.transform = r.transform;
    f.name = r.name;
    if (f.name.empty()) {
      switch (r.transform.kind) {
        case TransformKind::kIdentity: f.name = source->name; break;
        case TransformKind::kBucket: f.name = source->name + "_bucket"; break;
        case TransformKind::kTruncate: f.name = source->name + "_trunc"; break;
        case TransformKind::kYear: f.name = source->name + "_year"; break;
        case TransformKind::kMonth: f.name = source->name + "_month"; break;
        case TransformKind::kDay: f.name = source->name + "_day"; break;
        case TransformKind::kHour: f.name = source->name + "_hour"; break;
        case TransformKind::kVoid: f.name = source->name + "_null"; break;
      }
    }
    if (!names.insert(f.name).second) {
      return Status::Invalid("partition field name " + Quote(f.name) + " is used twice");
    }
    if (f.transform.kind != TransformKind::kIdentity && schema.FindField(f.name) != nullptr &&
        schema.FindField(f.name)->id != source->id) {
      return Status::Invalid("partition field name " + Quote(f.name) + " collides with a column");
    }
    fields.push_back(std::move(f));
  }
  return PartitionSpec(spec_id, std::move(fields));
}

int32_t PartitionSpec::HighestFieldId() const {
  int32_t highest = 999;
  for (const auto& f : fields_) highest = std::max(highest, f.field_id);
  return highest;
}

Result<std::vector<Type>> PartitionSpec::PartitionTypes(const Schema& schema) const {
  std::vector<Type> types;
  for (const auto& f : fields_) {
    const NestedField* source = schema.FindField(f.source_id);
    if (source == nullptr) {
      return Status::Invalid("partition field " + f.name + " has source id " +
                             std::to_string(f.source_id) + ", not in the schema");
    }
    ASSIGN_OR_RAISE(auto t, f.transform.ResultType(source->type));
    types.push_back(t);
  }
  return types;
}

Result<PartitionValues> PartitionSpec::PartitionFor(
    const Schema& schema,
    const std::vector<std::pair<int32_t, std::optional<Literal>>>& source_values) const {
  PartitionValues out;
  for (const auto& f : fields_) {
    const NestedField* source = schema.FindField(f.source_id);
    if (source == nullptr) return Status::Invalid("partition source of " + f.name + " missing");
    const std::optional<Literal>* value = nullptr;
    for (const auto& [id, v] : source_values) {
      if (id == f.source_id) value = &v;
    }
    if (value == nullptr) {
      return Status::Invalid("no value for partition source column " + source->name);
    }
    auto r = f.transform.Apply(source->type, *value);
    if (!r.ok()) return r.status().WithContext("partition field " + f.name);
    out.push_back(std::move(*r));
  }
  return out;
}

std::string PartitionSpec::FieldsJson() const {
  Json fields = Json::array();
  for (const auto& f : fields_) {
    fields.push_back({{"name", f.name},
                      {"transform", f.transform.ToString()},
                      {"source-id", f.source_id},
                      {"field-id", f.field_id}});
  }
  return fields.dump();
}

std::string PartitionSpec::ToJson() const {
  Json j = {{"spec-id", spec_id_}, {"fields", Json::parse(FieldsJson())}};
  return j.dump();
}

Result<PartitionSpec> PartitionSpec::FromJson(std::string_view json) {
  Json j = Json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("fields") || !j["fields"].is_array()) {
    return Status::Invalid("partition spec JSON is not an object with fields");
  }
  std::vector<PartitionField> fields;
  for (const auto& jf : j["fields"]) {
    if (!jf.is_object() || !jf.contains("source-id") || !jf["source-id"].is_number_integer() ||
        !jf.contains("field-id") || !jf["field-id"].is_number_integer() || !jf.contains("name") ||
        !jf["name"].is_string() || !jf.contains("transform") || !jf["transform"].is_string()) {
      return Status::Invalid("partition field JSON lacks source-id, field-id, name or transform");
    }
    PartitionField f;
    f.source_id = jf["source-id"].get<int32_t>();
    f.field_id = jf["field-id"].get<int32_t>();
    f.name = jf["name"].get<std::string>();
    ASSIGN_OR_RAISE(f.transform, Transform::Parse(jf["transform"].get<std::string>()));
    fields.push_back(std::move(f));
  }
  int32_t id =
      j.contains("spec-id") && j["spec-id"].is_number_integer() ? j["spec-id"].get<int32_t>() : 0;
  return PartitionSpec(id, std::move(fields));
}

bool PartitionSpec::operator==(const PartitionSpec& other) const {
  return spec_id_ == other.spec_id_ && fields_ == other.fields_;
}

}  // namespace oxbow::iceberg
