// FormatSchema: pyarrow's str(schema).
#include "oxbow/text/text.h"

namespace oxbow::text {

namespace {

constexpr int64_t kMetadataLineWidth = 70;

void AppendMetadata(const arrow::KeyValueMetadata& metadata, std::string_view indent,
                    std::string* out) {
  for (const auto& [key, value] : metadata) {
    out->append("\n");
    out->append(indent);
    out->append(key);
    out->append(": '");
    int64_t max = kMetadataLineWidth - static_cast<int64_t>(indent.size() + key.size());
    if (max > 0 && static_cast<int64_t>(value.size()) > max) {
      out->append(value, 0, static_cast<size_t>(max));
      out->append("' + ");
      out->append(std::to_string(static_cast<int64_t>(value.size()) - max));
    } else {
      out->append(value);
      out->push_back('\'');
    }
  }
}

// pyarrow's lines for the children of a nested field: "child i, name: type", indented by 2 at
// the first level and 4 more at each deeper one.
void AppendChildren(const arrow::DataType& type, int depth, std::string* out) {
  for (int k = 0; k < type.num_children(); ++k) {
    const arrow::Field& child = type.child(k);
    out->push_back('\n');
    out->append(static_cast<size_t>(2 + 4 * (depth - 1)), ' ');
    out->append("child " + std::to_string(k) + ", " + child.ToString());
    AppendChildren(child.type, depth + 1, out);
  }
}

}  // namespace

std::string FormatSchema(const arrow::Schema& schema) {
  std::string out;
  for (int i = 0; i < schema.num_fields(); ++i) {
    const auto& field = schema.field(i);
    if (i > 0) out.push_back('\n');
    out.append(field.ToString());
    AppendChildren(field.type, 1, &out);
    if (!field.metadata.empty()) {
      out.append("\n  -- field metadata --");
      AppendMetadata(field.metadata, "  ", &out);
    }
  }
  if (!schema.metadata().empty()) {
    if (!out.empty()) out.push_back('\n');
    out.append("-- schema metadata --");
    AppendMetadata(schema.metadata(), "", &out);
  }
  return out;
}

}  // namespace oxbow::text
