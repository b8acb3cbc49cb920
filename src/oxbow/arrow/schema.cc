#include "oxbow/arrow/schema.h"

#include <charconv>
#include <unordered_set>

namespace oxbow::arrow {

std::optional<std::string> FindMetadata(const KeyValueMetadata& metadata, std::string_view key) {
  for (const auto& [k, v] : metadata) {
    if (k == key) return v;
  }
  return std::nullopt;
}

std::string Field::ToString() const {
  return name + ": " + type.ToString() + (nullable ? "" : " not null");
}

bool Field::Equals(const Field& other, bool check_metadata) const {
  return name == other.name && type == other.type && nullable == other.nullable &&
         (!check_metadata || metadata == other.metadata);
}

std::optional<int32_t> Field::FieldId() const {
  auto id = FindMetadata(metadata, kFieldIdKey);
  if (!id) return std::nullopt;
  int32_t value = 0;
  auto [end, error] = std::from_chars(id->data(), id->data() + id->size(), value);
  if (error != std::errc() || end != id->data() + id->size()) return std::nullopt;
  return value;
}

int Schema::GetFieldIndex(std::string_view name) const {
  for (int i = 0; i < num_fields(); ++i) {
    if (fields_[i].name == name) return i;
  }
  return -1;
}

Status Schema::Validate() const {
  std::unordered_set<std::string_view> names;
  for (const auto& f : fields_) {
    RETURN_NOT_OK(f.type.Validate().WithContext("field " + Quote(f.name)));
    if (!names.insert(f.name).second) {
      return Status::Invalid("duplicate field name " + Quote(f.name));
    }
  }
  return Status::OK();
}

Result<SchemaPtr> Schema::Select(const std::vector<int>& indices) const {
  std::vector<Field> selected;
  selected.reserve(indices.size());
  for (int i : indices) {
    if (i < 0 || i >= num_fields()) {
      return Status::OutOfRange("column index " + std::to_string(i) + " is outside [0, " +
                                std::to_string(num_fields()) + ")");
    }
    selected.push_back(fields_[i]);
  }
  return std::make_shared<const Schema>(std::move(selected), metadata_);
}

std::string Schema::ToString() const {
  std::string out;
  for (const auto& f : fields_) {
    if (!out.empty()) out += "\n";
    out += f.ToString();
  }
  return out;
}

bool Schema::Equals(const Schema& other, bool check_metadata) const {
  if (fields_.size() != other.fields_.size()) return false;
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (!fields_[i].Equals(other.fields_[i], check_metadata)) return false;
  }
  return !check_metadata || metadata_ == other.metadata_;
}

}  // namespace oxbow::arrow
