#include "oxbow/arrow/type.h"

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "oxbow/arrow/schema.h"

namespace oxbow::arrow {

namespace {
// Deepest nesting Parse and Validate accept (IPC's flatbuffer verifier stops well before).
constexpr int kMaxNestingDepth = 32;
const std::vector<Field> kNoChildren;
}  // namespace

std::string_view TimeUnitName(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSecond: return "s";
    case TimeUnit::kMilli: return "ms";
    case TimeUnit::kMicro: return "us";
    case TimeUnit::kNano: return "ns";
  }
  return "?";
}

int64_t UnitsPerSecond(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSecond: return 1;
    case TimeUnit::kMilli: return 1000;
    case TimeUnit::kMicro: return 1000000;
    case TimeUnit::kNano: return 1000000000;
  }
  return 1;
}

DataType DataType::Timestamp(TimeUnit unit, std::string timezone) {
  DataType t(TypeId::kTimestamp);
  t.unit_ = unit;
  t.timezone_ = std::move(timezone);
  return t;
}

DataType DataType::Decimal128(int32_t precision, int32_t scale) {
  DataType t(TypeId::kDecimal128);
  t.precision_ = precision;
  t.scale_ = scale;
  t.byte_width_ = 16;
  return t;
}

DataType DataType::FixedSizeBinary(int32_t byte_width) {
  DataType t(TypeId::kFixedSizeBinary);
  t.byte_width_ = byte_width;
  return t;
}

DataType DataType::List(Field item) { return Nested(TypeId::kList, {std::move(item)}); }

DataType DataType::Struct(std::vector<Field> fields) {
  return Nested(TypeId::kStruct, std::move(fields));
}

DataType DataType::Map(DataType key, DataType value, bool value_nullable) {
  Field entries{"entries",
                Struct({Field{"key", std::move(key), false, {}},
                        Field{"value", std::move(value), value_nullable, {}}}),
                false,
                {}};
  return Nested(TypeId::kMap, {std::move(entries)});
}

DataType DataType::FixedSizeList(Field item, int32_t list_size) {
  return Nested(TypeId::kFixedSizeList, {std::move(item)}, list_size);
}

DataType DataType::Nested(TypeId id, std::vector<Field> children, int32_t list_size) {
  DataType t(id);
  t.byte_width_ = id == TypeId::kFixedSizeList ? list_size : 0;
  t.children_ = std::make_shared<const std::vector<Field>>(std::move(children));
  return t;
}

const std::vector<Field>& DataType::children() const {
  return children_ ? *children_ : kNoChildren;
}

int DataType::num_children() const { return static_cast<int>(children().size()); }

const Field& DataType::child(int i) const { return children()[static_cast<size_t>(i)]; }

int DataType::num_buffers() const {
  switch (id_) {
    case TypeId::kString:
    case TypeId::kBinary: return 3;
    case TypeId::kStruct:
    case TypeId::kFixedSizeList: return 1;
    default: return 2;  // list and map: validity, offsets; fixed width: validity, values
  }
}

int DataType::num_nodes_in_tree() const {
  int n = 1;
  for (const Field& f : children()) n += f.type.num_nodes_in_tree();
  return n;
}

int DataType::num_buffers_in_tree() const {
  int n = num_buffers();
  for (const Field& f : children()) n += f.type.num_buffers_in_tree();
  return n;
}

int DataType::bit_width() const {
  switch (id_) {
    case TypeId::kBool: return 1;
    case TypeId::kInt8:
    case TypeId::kUInt8: return 8;
    case TypeId::kInt16:
    case TypeId::kUInt16: return 16;
    case TypeId::kInt32:
    case TypeId::kUInt32:
    case TypeId::kFloat32:
    case TypeId::kDate32: return 32;
    case TypeId::kInt64:
    case TypeId::kUInt64:
    case TypeId::kFloat64:
    case TypeId::kTimestamp: return 64;
    case TypeId::kDecimal128:
    case TypeId::kFixedSizeBinary: return byte_width_ * 8;
    case TypeId::kString:
    case TypeId::kBinary:
    case TypeId::kList:
    case TypeId::kStruct:
    case TypeId::kMap:
    case TypeId::kFixedSizeList: return 0;
  }
  return 0;
}

std::string DataType::ToString() const {
  switch (id_) {
    case TypeId::kBool: return "bool";
    case TypeId::kInt8: return "int8";
    case TypeId::kInt16: return "int16";
    case TypeId::kInt32: return "int32";
    case TypeId::kInt64: return "int64";
    case TypeId::kUInt8: return "uint8";
    case TypeId::kUInt16: return "uint16";
    case TypeId::kUInt32: return "uint32";
    case TypeId::kUInt64: return "uint64";
    case TypeId::kFloat32: return "float";
    case TypeId::kFloat64: return "double";
    case TypeId::kString: return "string";
    case TypeId::kBinary: return "binary";
    case TypeId::kDate32: return "date32[day]";
    case TypeId::kTimestamp: {
      std::string s = "timestamp[" + std::string(TimeUnitName(unit_));
      if (!timezone_.empty()) s += ", tz=" + timezone_;
      return s + "]";
    }
    case TypeId::kDecimal128:
      return "decimal128(" + std::to_string(precision_) + ", " + std::to_string(scale_) + ")";
    case TypeId::kFixedSizeBinary: return "fixed_size_binary[" + std::to_string(byte_width_) + "]";
    case TypeId::kList:
      return num_children() == 1 ? "list<" + child(0).ToString() + ">" : "list<?>";
    case TypeId::kFixedSizeList:
      return (num_children() == 1 ? "fixed_size_list<" + child(0).ToString() + ">"
                                  : std::string("fixed_size_list<?>")) +
             "[" + std::to_string(byte_width_) + "]";
    case TypeId::kStruct: {
      std::string s = "struct<";
      for (int i = 0; i < num_children(); ++i) {
        if (i > 0) s += ", ";
        s += child(i).ToString();
      }
      return s + ">";
    }
    case TypeId::kMap: {
      if (num_children() != 1 || child(0).type.num_children() != 2) return "map<?>";
      const Field& key = child(0).type.child(0);
      const Field& value = child(0).type.child(1);
      return "map<" + key.type.ToString() + ", " + value.type.ToString() +
             (value.nullable ? "" : " not null") + ">";
    }
  }
  return "unknown";
}

namespace {

std::string NestedName(TypeId id) {
  switch (id) {
    case TypeId::kList: return "list";
    case TypeId::kMap: return "map";
    case TypeId::kFixedSizeList: return "fixed_size_list";
    default: return "struct";
  }
}

Status ValidateNested(const DataType& t, int depth) {
  if (depth > kMaxNestingDepth) {
    return Status::Invalid("types nest deeper than " + std::to_string(kMaxNestingDepth) +
                           " levels");
  }
  const std::string what = NestedName(t.id());
  switch (t.id()) {
    case TypeId::kList:
    case TypeId::kFixedSizeList:
    case TypeId::kMap:
      if (t.num_children() != 1) {
        return Status::Invalid(what + " needs exactly one child field, got " +
                               std::to_string(t.num_children()));
      }
      break;
    default: break;
  }
  if (t.id() == TypeId::kFixedSizeList && t.list_size() < 0) {
    return Status::Invalid("fixed_size_list size must not be negative, got " +
                           std::to_string(t.list_size()));
  }
  if (t.id() == TypeId::kMap) {
    const Field& entries = t.child(0);
    if (entries.type.id() != TypeId::kStruct || entries.type.num_children() != 2 ||
        entries.nullable) {
      return Status::Invalid("map needs one non-null child struct<key, value>, got " +
                             entries.ToString());
    }
    if (entries.type.child(0).nullable) return Status::Invalid("map keys must not be nullable");
  }
  if (t.id() == TypeId::kStruct) {
    for (size_t i = 0; i < t.children().size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (t.children()[i].name == t.children()[j].name) {
          return Status::Invalid("struct has two fields named " + Quote(t.children()[i].name));
        }
      }
    }
  }
  for (const Field& f : t.children()) {
    Status st = f.type.is_nested() ? ValidateNested(f.type, depth + 1) : f.type.Validate();
    if (!st.ok()) return st.WithContext(what + " field " + Quote(f.name));
  }
  return Status::OK();
}

}  // namespace

Status DataType::Validate() const {
  if (is_nested()) return ValidateNested(*this, 1);
  if (id_ == TypeId::kDecimal128 &&
      (precision_ < 1 || precision_ > 38 || scale_ < -precision_ || scale_ > precision_)) {
    return Status::Invalid(
        "decimal128 precision must be in [1, 38] and scale in [-precision, "
        "precision], got " +
        ToString());
  }
  if (id_ == TypeId::kFixedSizeBinary && byte_width_ < 0) {
    return Status::Invalid("fixed_size_binary width must not be negative, got " + ToString());
  }
  // bit_width() must fit an int.
  if (id_ == TypeId::kFixedSizeBinary && byte_width_ > INT32_MAX / 8) {
    return Status::Invalid("fixed_size_binary width is too large, got " + ToString());
  }
  return Status::OK();
}

bool DataType::operator==(const DataType& other) const {
  if (id_ != other.id_) return false;
  switch (id_) {
    case TypeId::kTimestamp: return unit_ == other.unit_ && timezone_ == other.timezone_;
    case TypeId::kDecimal128: return precision_ == other.precision_ && scale_ == other.scale_;
    case TypeId::kFixedSizeBinary: return byte_width_ == other.byte_width_;
    case TypeId::kList:
    case TypeId::kMap:
    case TypeId::kFixedSizeList: {
      // As in pyarrow, the names of list items and map entries do not matter.
      if (byte_width_ != other.byte_width_ || num_children() != other.num_children()) return false;
      for (int i = 0; i < num_children(); ++i) {
        const Field& a = child(i);
        const Field& b = other.child(i);
        if (a.nullable != b.nullable) return false;
        if (id_ == TypeId::kMap) {
          // Compare key and value without their names either.
          if (a.type.num_children() != b.type.num_children()) return false;
          for (int k = 0; k < a.type.num_children(); ++k) {
            if (a.type.child(k).type != b.type.child(k).type ||
                a.type.child(k).nullable != b.type.child(k).nullable) {
              return false;
            }
          }
        } else if (a.type != b.type) {
          return false;
        }
      }
      return true;
    }
    case TypeId::kStruct: {
      if (num_children() != other.num_children()) return false;
      for (int i = 0; i < num_children(); ++i) {
        if (!child(i).Equals(other.child(i))) return false;
      }
      return true;
    }
    default: return true;
  }
}

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool ParseInt(std::string_view s, int32_t* out) {
  s = Trim(s);
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// If `text` is `prefix` + open + args + close, stores args.
bool MatchParameterized(std::string_view text, std::string_view prefix, char open, char close,
                        std::string_view* args) {
  if (text.size() < prefix.size() + 2 || text.substr(0, prefix.size()) != prefix) return false;
  if (text[prefix.size()] != open || text.back() != close) return false;
  *args = text.substr(prefix.size() + 1, text.size() - prefix.size() - 2);
  return true;
}

Result<TimeUnit> ParseTimeUnit(std::string_view s) {
  s = Trim(s);
  if (s == "s") return TimeUnit::kSecond;
  if (s == "ms") return TimeUnit::kMilli;
  if (s == "us") return TimeUnit::kMicro;
  if (s == "ns") return TimeUnit::kNano;
  return Status::Invalid("unknown time unit " + Quote(s) + " (expected s, ms, us or ns)");
}

// Splits at commas outside <>, [] and ().
std::vector<std::string_view> SplitTopLevel(std::string_view text) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<' || c == '[' || c == '(') ++depth;
    if (c == '>' || c == ']' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(Trim(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  parts.push_back(Trim(text.substr(start)));
  return parts;
}

// Strips a trailing " not null"; returns whether it was there.
bool StripNotNull(std::string_view* text) {
  constexpr std::string_view kNotNull = " not null";
  if (text->size() > kNotNull.size() && text->substr(text->size() - kNotNull.size()) == kNotNull) {
    text->remove_suffix(kNotNull.size());
    *text = Trim(*text);
    return true;
  }
  return false;
}

// Position of the first ':' outside brackets, or npos.
size_t TopLevelColon(std::string_view text) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<' || c == '[' || c == '(') ++depth;
    if (c == '>' || c == ']' || c == ')') --depth;
    if (c == ':' && depth == 0) return i;
  }
  return std::string_view::npos;
}

// "name: type [not null]", or just "type" when `default_name` is given (short forms).
Result<Field> ParseFieldSpec(std::string_view spec, const char* default_name) {
  Field f;
  f.nullable = !StripNotNull(&spec);
  const size_t colon = TopLevelColon(spec);
  if (colon == std::string_view::npos) {
    if (default_name == nullptr) {
      return Status::Invalid("struct field " + Quote(spec) + " needs a name: \"name: type\"");
    }
    f.name = default_name;
    ASSIGN_OR_RAISE(f.type, DataType::Parse(spec));
    return f;
  }
  f.name = std::string(Trim(spec.substr(0, colon)));
  if (f.name.empty()) return Status::Invalid("field " + Quote(spec) + " has an empty name");
  ASSIGN_OR_RAISE(f.type, DataType::Parse(spec.substr(colon + 1)));
  return f;
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// Parses list<...>, struct<...>, map<...> and fixed_size_list<...>[n]; nullopt for other text.
Result<std::optional<DataType>> ParseNested(std::string_view text) {
  const auto bad = [&](const std::string& expected) {
    return Status::Invalid("cannot parse type " + Quote(text) + ": expected " + expected);
  };
  if (StartsWith(text, "list<")) {
    if (text.back() != '>') return bad("list<item: type>");
    ASSIGN_OR_RAISE(Field item, ParseFieldSpec(text.substr(5, text.size() - 6), "item"));
    return std::optional<DataType>(DataType::List(std::move(item)));
  }
  if (StartsWith(text, "fixed_size_list<")) {
    const size_t open = text.rfind('[');
    int32_t size = 0;
    if (text.back() != ']' || open == std::string_view::npos || open < 17 ||
        text[open - 1] != '>' || !ParseInt(text.substr(open + 1, text.size() - open - 2), &size) ||
        size < 0) {
      return bad("fixed_size_list<item: type>[size]");
    }
    ASSIGN_OR_RAISE(Field item, ParseFieldSpec(text.substr(16, open - 17), "item"));
    return std::optional<DataType>(DataType::FixedSizeList(std::move(item), size));
  }
  if (StartsWith(text, "struct<")) {
    if (text.back() != '>') return bad("struct<name: type, ...>");
    std::vector<Field> fields;
    std::string_view inner = Trim(text.substr(7, text.size() - 8));
    if (!inner.empty()) {
      for (std::string_view part : SplitTopLevel(inner)) {
        ASSIGN_OR_RAISE(Field f, ParseFieldSpec(part, nullptr));
        fields.push_back(std::move(f));
      }
    }
    DataType t = DataType::Struct(std::move(fields));
    RETURN_NOT_OK(t.Validate());
    return std::optional<DataType>(std::move(t));
  }
  if (StartsWith(text, "map<")) {
    if (text.back() != '>') return bad("map<key type, value type>");
    auto parts = SplitTopLevel(text.substr(4, text.size() - 5));
    if (parts.size() != 2) return bad("map<key type, value type>");
    std::string_view value = parts[1];
    const bool value_nullable = !StripNotNull(&value);
    ASSIGN_OR_RAISE(DataType key_type, DataType::Parse(parts[0]));
    ASSIGN_OR_RAISE(DataType value_type, DataType::Parse(value));
    return std::optional<DataType>(
        DataType::Map(std::move(key_type), std::move(value_type), value_nullable));
  }
  return std::optional<DataType>();
}

// Bounds the recursion of DataType::Parse.
thread_local int parse_depth = 0;

}  // namespace

Result<DataType> DataType::Parse(std::string_view raw) {
  std::string_view text = Trim(raw);
  if (text.find('<') != std::string_view::npos) {
    if (parse_depth >= kMaxNestingDepth) {
      return Status::Invalid("types nest deeper than " + std::to_string(kMaxNestingDepth) +
                             " levels");
    }
    ++parse_depth;
    auto nested = ParseNested(text);
    --parse_depth;
    if (!nested.ok()) return nested.status();
    if (nested->has_value()) return std::move(**nested);
  }
  struct Simple {
    std::string_view name;
    TypeId id;
  };
  static constexpr Simple kSimple[] = {
      {"bool", TypeId::kBool},          {"boolean", TypeId::kBool},
      {"int8", TypeId::kInt8},          {"int16", TypeId::kInt16},
      {"int32", TypeId::kInt32},        {"int64", TypeId::kInt64},
      {"uint8", TypeId::kUInt8},        {"uint16", TypeId::kUInt16},
      {"uint32", TypeId::kUInt32},      {"uint64", TypeId::kUInt64},
      {"float", TypeId::kFloat32},      {"float32", TypeId::kFloat32},
      {"double", TypeId::kFloat64},     {"float64", TypeId::kFloat64},
      {"string", TypeId::kString},      {"utf8", TypeId::kString},
      {"binary", TypeId::kBinary},      {"date32", TypeId::kDate32},
      {"date32[day]", TypeId::kDate32},
  };
  for (const auto& s : kSimple) {
    if (text == s.name) return DataType(s.id);
  }
  std::string_view args;
  if (MatchParameterized(text, "timestamp", '[', ']', &args)) {
    std::string_view unit_part = args;
    std::string tz;
    if (auto comma = args.find(','); comma != std::string_view::npos) {
      unit_part = args.substr(0, comma);
      std::string_view tz_part = Trim(args.substr(comma + 1));
      if (tz_part.substr(0, 3) != "tz=" || tz_part.size() == 3) {
        return Status::Invalid("cannot parse type " + Quote(text) +
                               ": expected timestamp[unit, tz=ZONE]");
      }
      tz = std::string(tz_part.substr(3));
    }
    ASSIGN_OR_RAISE(TimeUnit unit, ParseTimeUnit(unit_part));
    return Timestamp(unit, std::move(tz));
  }
  if (MatchParameterized(text, "decimal128", '(', ')', &args) ||
      MatchParameterized(text, "decimal", '(', ')', &args)) {
    auto comma = args.find(',');
    int32_t precision = 0;
    int32_t scale = 0;
    if (comma == std::string_view::npos || !ParseInt(args.substr(0, comma), &precision) ||
        !ParseInt(args.substr(comma + 1), &scale)) {
      return Status::Invalid("cannot parse type " + Quote(text) +
                             ": expected decimal128(precision, scale)");
    }
    DataType t = Decimal128(precision, scale);
    RETURN_NOT_OK(t.Validate());
    return t;
  }
  if (MatchParameterized(text, "fixed_size_binary", '[', ']', &args)) {
    int32_t width = 0;
    if (!ParseInt(args, &width) || width < 0) {
      return Status::Invalid("cannot parse type " + Quote(text) +
                             ": expected fixed_size_binary[width]");
    }
    return FixedSizeBinary(width);
  }
  return Status::Invalid("unknown type " + Quote(text));
}

}  // namespace oxbow::arrow
