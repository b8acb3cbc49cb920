// Field and Schema, with key/value metadata (Iceberg field ids live there).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "oxbow/arrow/type.h"

namespace oxbow::arrow {

using KeyValueMetadata = std::vector<std::pair<std::string, std::string>>;

// Returns the value stored under `key`, if any.
std::optional<std::string> FindMetadata(const KeyValueMetadata& metadata, std::string_view key);

// The field metadata key of a field id (Parquet's and pyarrow's); Cast matches struct fields by it.
inline constexpr char kFieldIdKey[] = "PARQUET:field_id";

struct Field {
  std::string name;
  DataType type;
  bool nullable = true;
  KeyValueMetadata metadata;

  // "name: type" plus " not null" when not nullable, as pyarrow prints it.
  std::string ToString() const;
  bool Equals(const Field& other, bool check_metadata = false) const;
  // The field id in metadata kFieldIdKey, if it has one.
  std::optional<int32_t> FieldId() const;
};

class Schema {
 public:
  explicit Schema(std::vector<Field> fields, KeyValueMetadata metadata = {})
      : fields_(std::move(fields)), metadata_(std::move(metadata)) {}

  const std::vector<Field>& fields() const { return fields_; }
  const Field& field(int i) const { return fields_[i]; }
  int num_fields() const { return static_cast<int>(fields_.size()); }
  const KeyValueMetadata& metadata() const { return metadata_; }
  // Index of the first field called `name`, or -1.
  int GetFieldIndex(std::string_view name) const;
  // Checks field types and that names are unique.
  Status Validate() const;
  // A schema of the fields at `indices` (in that order); schema metadata is kept.
  Result<std::shared_ptr<const Schema>> Select(const std::vector<int>& indices) const;
  std::string ToString() const;
  bool Equals(const Schema& other, bool check_metadata = false) const;

 private:
  std::vector<Field> fields_;
  KeyValueMetadata metadata_;
};

using SchemaPtr = std::shared_ptr<const Schema>;

}  // namespace oxbow::arrow
