#include "oxbow/text/scalar_text_internal.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "oxbow/common/civil_time.h"

namespace oxbow::text::internal {

namespace {

using arrow::TimeUnit;

int FractionDigits(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSecond: return 0;
    case TimeUnit::kMilli: return 3;
    case TimeUnit::kMicro: return 6;
    case TimeUnit::kNano: return 9;
  }
  return 0;
}

void AppendPadded(int64_t v, int width, std::string* out) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  for (int n = static_cast<int>(end - buf); n < width; ++n) out->push_back('0');
  out->append(buf, end);
}

void AppendYear(int64_t y, std::string* out) {
  if (y < 0) {
    out->push_back('-');
    AppendPadded(-y, 4, out);
  } else if (y > 9999) {
    out->push_back('+');
    AppendPadded(y, 4, out);
  } else {
    AppendPadded(y, 4, out);
  }
}

// Parses "+HH:MM", "-HH:MM", "+HHMM", "+HH" into signed minutes east of UTC.
bool ParseOffset(std::string_view s, int64_t* minutes) {
  if (s.size() < 3 || (s[0] != '+' && s[0] != '-')) return false;
  auto digit = [&](size_t i) { return i < s.size() && s[i] >= '0' && s[i] <= '9'; };
  if (!digit(1) || !digit(2)) return false;
  int64_t hh = (s[1] - '0') * 10 + (s[2] - '0');
  int64_t mm = 0;
  size_t rest = 3;
  if (s.size() > 3) {
    if (s[3] == ':') rest = 4;
    if (!digit(rest) || !digit(rest + 1) || s.size() != rest + 2) return false;
    mm = (s[rest] - '0') * 10 + (s[rest + 1] - '0');
  }
  if (hh > 23 || mm > 59) return false;
  *minutes = (s[0] == '-' ? -1 : 1) * (hh * 60 + mm);
  return true;
}

bool IsUtcName(const std::string& tz) {
  return tz == "UTC" || tz == "utc" || tz == "Z" || tz == "Etc/UTC" || tz == "GMT" ||
         tz == "+00:00" || tz == "-00:00" || tz == "+0000" || tz == "+00";
}

Status Bad(std::string_view text, std::string_view what) {
  return Status::Invalid("cannot parse '" + std::string(text) + "' as " + std::string(what));
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

int64_t Digits(std::string_view s) {
  int64_t v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v;
}

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned DaysInMonth(int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

// Parses the date at the start of `s`; `*used` gets the characters consumed.
Status ParseDatePrefix(std::string_view s, int64_t* days, size_t* used) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) negative = s[i++] == '-';
  size_t year_start = i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  size_t year_len = i - year_start;
  if (year_len < 4 || year_len > 9) return Bad(s, "a date (YYYY-MM-DD)");
  if (i + 6 > s.size() || s[i] != '-' || s[i + 3] != '-') return Bad(s, "a date (YYYY-MM-DD)");
  std::string_view ms = s.substr(i + 1, 2), ds = s.substr(i + 4, 2);
  if (!AllDigits(ms) || !AllDigits(ds)) return Bad(s, "a date (YYYY-MM-DD)");
  int64_t y = Digits(s.substr(year_start, year_len)) * (negative ? -1 : 1);
  auto m = static_cast<unsigned>(Digits(ms));
  auto d = static_cast<unsigned>(Digits(ds));
  if (m < 1 || m > 12 || d < 1 || d > DaysInMonth(y, m)) {
    return Status::Invalid("'" + std::string(s) + "' is not a valid calendar date");
  }
  *days = DaysFromCivil(y, m, d);
  *used = i + 6;
  return Status::OK();
}

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Length of the valid UTF-8 sequence at s[i], or 0 when it is invalid.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto b = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t cp;
  if (b < 0x80) return 1;
  if ((b & 0xE0) == 0xC0) {
    n = 2;
    cp = b & 0x1F;
  } else if ((b & 0xF0) == 0xE0) {
    n = 3;
    cp = b & 0x0F;
  } else if ((b & 0xF8) == 0xF0) {
    n = 4;
    cp = b & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

void AppendDouble(double v, std::string* out) {
  if (std::isnan(v)) {
    out->append("NaN");
  } else if (std::isinf(v)) {
    out->append(v < 0 ? "-Infinity" : "Infinity");
  } else {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
    std::string_view s(buf, end - buf);
    out->append(s);
    if (s.find_first_of(".e") == std::string_view::npos) out->append(".0");
  }
}

void AppendFloat(float v, std::string* out) {
  if (std::isnan(v) || std::isinf(v)) return AppendDouble(v, out);
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  std::string_view s(buf, end - buf);
  out->append(s);
  if (s.find_first_of(".e") == std::string_view::npos) out->append(".0");
}

void AppendDecimal(__int128 unscaled, int32_t scale, std::string* out) {
  bool negative = unscaled < 0;
  unsigned __int128 mag = negative ? -static_cast<unsigned __int128>(unscaled)
                                   : static_cast<unsigned __int128>(unscaled);
  char buf[48];
  int n = 0;
  do {
    buf[n++] = static_cast<char>('0' + static_cast<int>(mag % 10));
    mag /= 10;
  } while (mag != 0);
  std::string digits(std::string::size_type(n), '0');
  for (int i = 0; i < n; ++i) digits[i] = buf[n - 1 - i];
  if (negative) out->push_back('-');
  if (scale <= 0) {
    out->append(digits);
    if (unscaled != 0) out->append(static_cast<size_t>(-scale), '0');
    return;
  }
  auto s = static_cast<size_t>(scale);
  if (digits.size() <= s) {
    out->append("0.");
    out->append(s - digits.size(), '0');
    out->append(digits);
  } else {
    out->append(digits, 0, digits.size() - s);
    out->push_back('.');
    out->append(digits, digits.size() - s, s);
  }
}

void AppendDate(int64_t days, std::string* out) {
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  AppendYear(y, out);
  out->push_back('-');
  AppendPadded(m, 2, out);
  out->push_back('-');
  AppendPadded(d, 2, out);
}

void AppendTimestamp(int64_t value, TimeUnit unit, const std::string& timezone, std::string* out) {
  const int64_t per = arrow::UnitsPerSecond(unit);
  int64_t secs = FloorDiv(value, per);
  int64_t frac = value - secs * per;
  int64_t offset_minutes = 0;
  bool fixed_offset =
      !timezone.empty() && !IsUtcName(timezone) && ParseOffset(timezone, &offset_minutes);
  if (fixed_offset) secs += offset_minutes * 60;
  int64_t days = FloorDiv(secs, 86400);
  int64_t sod = secs - days * 86400;
  AppendDate(days, out);
  out->push_back('T');
  AppendPadded(sod / 3600, 2, out);
  out->push_back(':');
  AppendPadded(sod / 60 % 60, 2, out);
  out->push_back(':');
  AppendPadded(sod % 60, 2, out);
  if (int digits = FractionDigits(unit); digits > 0) {
    out->push_back('.');
    AppendPadded(frac, digits, out);
  }
  if (fixed_offset) {
    char buf[8];
    int64_t a = offset_minutes < 0 ? -offset_minutes : offset_minutes;
    std::snprintf(buf, sizeof(buf), "%c%02d:%02d", offset_minutes < 0 ? '-' : '+',
                  static_cast<int>(a / 60), static_cast<int>(a % 60));
    out->append(buf);
  } else if (!timezone.empty()) {
    out->push_back('Z');
  }
}

void AppendBase64(std::string_view bytes, std::string* out) {
  size_t i = 0;
  auto at = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
    out->push_back(kBase64[v >> 18]);
    out->push_back(kBase64[(v >> 12) & 63]);
    out->push_back(kBase64[(v >> 6) & 63]);
    out->push_back(kBase64[v & 63]);
  }
  size_t rest = bytes.size() - i;
  if (rest == 1) {
    uint32_t v = at(i) << 16;
    out->push_back(kBase64[v >> 18]);
    out->push_back(kBase64[(v >> 12) & 63]);
    out->append("==");
  } else if (rest == 2) {
    uint32_t v = at(i) << 16 | at(i + 1) << 8;
    out->push_back(kBase64[v >> 18]);
    out->push_back(kBase64[(v >> 12) & 63]);
    out->push_back(kBase64[(v >> 6) & 63]);
    out->push_back('=');
  }
}

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t n = Utf8SequenceLength(s, i);
      if (n == 0) {
        out->append("\xEF\xBF\xBD");
        ++i;
      } else {
        out->append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      default:
        if (c < 0x20 || c == 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out->append(buf);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out->push_back('"');
}

Result<int64_t> ParseInt64(std::string_view text) {
  std::string_view t = text;
  if (!t.empty() && t[0] == '+') t.remove_prefix(1);
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec == std::errc::result_out_of_range) {
    return Status::Invalid("'" + std::string(text) + "' is out of range for int64");
  }
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size()) return Bad(text, "an integer");
  return v;
}

Result<uint64_t> ParseUInt64(std::string_view text) {
  std::string_view t = text;
  if (!t.empty() && t[0] == '+') t.remove_prefix(1);
  if (!t.empty() && t[0] == '-') {
    if (t.size() > 1 && AllDigits(t.substr(1)) && t.find_first_not_of("0", 1) == t.npos) {
      return 0;  // "-0"
    }
    if (AllDigits(t.substr(1))) {
      return Status::Invalid("'" + std::string(text) + "' is negative; unsigned expected");
    }
  }
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec == std::errc::result_out_of_range) {
    return Status::Invalid("'" + std::string(text) + "' is out of range for uint64");
  }
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size()) return Bad(text, "an integer");
  return v;
}

namespace {

template <typename T>
Result<T> ParseFloating(std::string_view text) {
  std::string_view t = text;
  bool negative = false;
  if (!t.empty() && (t[0] == '+' || t[0] == '-')) {
    negative = t[0] == '-';
    t.remove_prefix(1);
  }
  auto iequals = [](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
    }
    return true;
  };
  if (iequals(t, "nan")) return std::numeric_limits<T>::quiet_NaN();
  if (iequals(t, "inf") || iequals(t, "infinity")) {
    return negative ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  }
  if (t.empty() || !((t[0] >= '0' && t[0] <= '9') || t[0] == '.')) {
    return Bad(text, "a number");
  }
  T v = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ptr != t.data() + t.size()) return Bad(text, "a number");
  if (ec == std::errc::result_out_of_range) {
    // Underflow rounds to zero; overflow to infinity, as strtod does.
    bool tiny = t.find_first_of("eE") != t.npos && t[t.find_first_of("eE") + 1] == '-';
    v = tiny ? 0.0 : std::numeric_limits<T>::infinity();
  } else if (ec != std::errc()) {
    return Bad(text, "a number");
  }
  return negative ? -v : v;
}

}  // namespace

Result<double> ParseDouble(std::string_view text) { return ParseFloating<double>(text); }
Result<float> ParseFloat(std::string_view text) { return ParseFloating<float>(text); }

Result<bool> ParseBool(std::string_view text) {
  auto lower = [&](std::string_view want) {
    if (text.size() != want.size()) return false;
    for (size_t i = 0; i < want.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(text[i])) != want[i]) return false;
    }
    return true;
  };
  if (lower("true")) return true;
  if (lower("false")) return false;
  return Bad(text, "a bool (true or false)");
}

Result<__int128> ParseDecimal(std::string_view text, int32_t precision, int32_t scale) {
  const std::string type =
      "decimal128(" + std::to_string(precision) + ", " + std::to_string(scale) + ")";
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  std::string digits;  // significant digits, leading zeros dropped
  int64_t frac_len = 0;
  bool any_digit = false, seen_point = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c >= '0' && c <= '9') {
      any_digit = true;
      if (seen_point) ++frac_len;
      if (!(digits.empty() && c == '0')) digits.push_back(c);
      if (digits.size() > 80) return Bad(text, type);
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (!any_digit) return Bad(text, type);
  int64_t exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    auto e = ParseInt64(text.substr(i + 1));
    if (!e.ok() || *e > 1000 || *e < -1000) return Bad(text, type);
    exponent = *e;
    i = text.size();
  }
  if (i != text.size()) return Bad(text, type);
  // value = digits * 10^(exponent - frac_len); rescale to `scale`.
  int64_t shift = scale - (frac_len - exponent);
  if (shift < 0) {
    // Dropped digits must be zeros.
    auto drop = static_cast<size_t>(-shift);
    size_t keep = digits.size() > drop ? digits.size() - drop : 0;
    if (digits.find_first_not_of('0', keep) != std::string::npos) {
      return Status::Invalid("'" + std::string(text) + "' has more fractional digits than " + type +
                             " allows");
    }
    digits.resize(keep);
  } else {
    if (!digits.empty()) digits.append(static_cast<size_t>(shift), '0');
  }
  if (static_cast<int64_t>(digits.size()) > precision) {
    return Status::Invalid("'" + std::string(text) + "' needs more than " +
                           std::to_string(precision) + " digits for " + type);
  }
  unsigned __int128 mag = 0;
  for (char c : digits) mag = mag * 10 + static_cast<unsigned>(c - '0');
  auto v = static_cast<__int128>(mag);
  return negative ? -v : v;
}

Result<int32_t> ParseDate(std::string_view text) {
  int64_t days;
  size_t used;
  RETURN_NOT_OK(ParseDatePrefix(text, &days, &used));
  if (used != text.size()) return Bad(text, "a date (YYYY-MM-DD)");
  if (days < std::numeric_limits<int32_t>::min() || days > std::numeric_limits<int32_t>::max()) {
    return Status::Invalid("'" + std::string(text) + "' is out of range for date32");
  }
  return static_cast<int32_t>(days);
}

Result<int64_t> ParseTimestamp(std::string_view text, TimeUnit unit) {
  const std::string_view what = "an ISO-8601 timestamp";
  int64_t days;
  size_t i;
  RETURN_NOT_OK(ParseDatePrefix(text, &days, &i));
  int64_t secs_of_day = 0, frac = 0;
  int frac_digits = 0;
  if (i < text.size() && (text[i] == 'T' || text[i] == 't' || text[i] == ' ')) {
    ++i;
    auto two = [&](size_t at, int64_t* v) {
      if (at + 2 > text.size() || !AllDigits(text.substr(at, 2))) return false;
      *v = Digits(text.substr(at, 2));
      return true;
    };
    int64_t hh, mm, ss = 0;
    if (!two(i, &hh) || i + 2 >= text.size() || text[i + 2] != ':' || !two(i + 3, &mm)) {
      return Bad(text, what);
    }
    i += 5;
    if (i < text.size() && text[i] == ':') {
      if (!two(i + 1, &ss)) return Bad(text, what);
      i += 3;
      if (i < text.size() && (text[i] == '.' || text[i] == ',')) {
        ++i;
        size_t start = i;
        const int want = FractionDigits(unit);
        while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
          if (frac_digits < want) {
            frac = frac * 10 + (text[i] - '0');
            ++frac_digits;
          } else if (text[i] != '0') {
            return Status::Invalid("'" + std::string(text) + "' has more precision than unit '" +
                                   std::string(arrow::TimeUnitName(unit)) + "'");
          }
          ++i;
        }
        if (i == start) return Bad(text, what);
      }
    }
    if (hh > 23 || mm > 59 || ss > 60) return Bad(text, what);
    if (ss == 60) ss = 59;  // a leap second is not representable; clamp
    secs_of_day = hh * 3600 + mm * 60 + ss;
  }
  for (int k = frac_digits; k < FractionDigits(unit); ++k) frac *= 10;
  int64_t offset_minutes = 0;
  if (i < text.size()) {
    std::string_view rest = text.substr(i);
    if (rest == "Z" || rest == "z") {
    } else if (!ParseOffset(rest, &offset_minutes)) {
      return Bad(text, what);
    }
  }
  int64_t secs = days * 86400 + secs_of_day - offset_minutes * 60;
  int64_t value;
  if (__builtin_mul_overflow(secs, arrow::UnitsPerSecond(unit), &value) ||
      __builtin_add_overflow(value, frac, &value)) {
    return Status::Invalid("'" + std::string(text) + "' is out of range for timestamp[" +
                           std::string(arrow::TimeUnitName(unit)) + "]");
  }
  return value;
}

Result<std::string> DecodeBase64(std::string_view text) {
  static const auto kTable = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(kBase64[i])] = static_cast<int8_t>(i);
    return t;
  }();
  std::string_view t = text;
  while (!t.empty() && t.back() == '=') t.remove_suffix(1);
  if (text.size() - t.size() > 2 || t.size() % 4 == 1) return Bad(text, "base64");
  std::string out;
  out.reserve(t.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : t) {
    int8_t v = kTable[static_cast<unsigned char>(c)];
    if (v < 0) return Bad(text, "base64");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = Utf8SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

int64_t CodePointCount(std::string_view s) {
  int64_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace oxbow::text::internal
