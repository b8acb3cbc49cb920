#include "oxbow/arrow/type.h"

#include <charconv>
#include <cstdint>
#include <string>

namespace oxbow::arrow {

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
    case TypeId::kBinary: return 0;
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
  }
  return "unknown";
}

Status DataType::Validate() const {
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

}  // namespace

Result<DataType> DataType::Parse(std::string_view raw) {
  std::string_view text = Trim(raw);
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
