#include "oxbow/common/parse.h"

#include <charconv>
#include <string>

namespace oxbow {

namespace {

template <typename T>
Result<T> ParseInteger(std::string_view text, const char* type_name) {
  T value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (error == std::errc::result_out_of_range) {
    return Status::Invalid(Quote(text) + " is out of range for " + type_name);
  }
  if (text.empty() || error != std::errc() || ptr != end) {
    return Status::Invalid(Quote(text) + " is not an integer");
  }
  return value;
}

}  // namespace

Result<int64_t> ParseInt64(std::string_view text) { return ParseInteger<int64_t>(text, "int64"); }

Result<int32_t> ParseInt32(std::string_view text) { return ParseInteger<int32_t>(text, "int32"); }

Result<int64_t> ParseDurationMs(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  const std::string_view unit = text.substr(digits);
  int64_t factor = 0;
  if (unit.empty() || unit == "ms") factor = 1;
  if (unit == "s") factor = 1000;
  if (unit == "m" || unit == "min") factor = 60 * 1000;
  if (unit == "h") factor = 3600 * 1000;
  if (unit == "d") factor = 24 * 3600 * 1000;
  auto value = ParseInteger<int64_t>(text.substr(0, digits), "int64");
  if (digits == 0 || factor == 0 || !value.ok() || *value > INT64_MAX / factor) {
    return Status::Invalid(Quote(text) +
                           " is not a duration (a whole number with ms, s, m, h or d)");
  }
  return *value * factor;
}

}  // namespace oxbow
