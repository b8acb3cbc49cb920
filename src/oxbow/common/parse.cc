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

}  // namespace oxbow
