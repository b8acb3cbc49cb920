#include "oxbow/cli/compact_schema.h"

#include <cctype>
#include <string>
#include <vector>

namespace oxbow::cli {

Result<arrow::SchemaPtr> ParseCompactSchema(std::string_view text) {
  std::vector<std::string_view> items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ',';
    if (c == '[' || c == '(' || c == '<') ++depth;
    if (c == ']' || c == ')' || c == '>') --depth;
    if (c == ',' && depth == 0) {
      items.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  std::vector<arrow::Field> fields;
  for (std::string_view item : items) {
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) {
      item.remove_prefix(1);
    }
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) {
      item.remove_suffix(1);
    }
    if (item.empty()) return Status::Invalid("empty field in schema " + Quote(text));
    const auto space = item.find_first_of(" \t");
    if (space == std::string_view::npos) {
      return Status::Invalid("field " + Quote(item) + " needs a type, as in 'id int64'");
    }
    arrow::Field f;
    f.name = std::string(item.substr(0, space));
    std::string_view type = item.substr(space + 1);
    constexpr std::string_view kNotNull = " not null";
    constexpr std::string_view kNull = " null";
    if (type.size() > kNotNull.size() && type.substr(type.size() - kNotNull.size()) == kNotNull) {
      f.nullable = false;
      type.remove_suffix(kNotNull.size());
    } else if (type.size() > kNull.size() && type.substr(type.size() - kNull.size()) == kNull) {
      type.remove_suffix(kNull.size());
    }
    auto parsed = arrow::DataType::Parse(type);
    if (!parsed.ok()) return parsed.status().WithContext("field " + Quote(f.name));
    f.type = *parsed;
    fields.push_back(std::move(f));
  }
  auto schema = std::make_shared<const arrow::Schema>(std::move(fields));
  RETURN_NOT_OK(schema->Validate());
  return schema;
}

}  // namespace oxbow::cli
