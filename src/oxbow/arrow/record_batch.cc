#include "oxbow/arrow/record_batch.h"

#include <algorithm>
#include <string>

namespace oxbow::arrow {
namespace {

Status CheckShape(const Schema& schema, int64_t num_rows, const std::vector<Array>& columns) {
  if (static_cast<int>(columns.size()) != schema.num_fields()) {
    return Status::Invalid("record batch has " + std::to_string(columns.size()) +
                           " columns but the schema has " + std::to_string(schema.num_fields()) +
                           " fields");
  }
  for (int i = 0; i < schema.num_fields(); ++i) {
    const Field& f = schema.field(i);
    const Array& c = columns[i];
    if (!c.data()) return Status::Invalid("column '" + f.name + "' is missing");
    if (c.type() != f.type) {
      return Status::Invalid("column '" + f.name + "' has type " + c.type().ToString() +
                             " but the schema says " + f.type.ToString());
    }
    if (c.length() != num_rows) {
      return Status::Invalid("column '" + f.name + "' has " + std::to_string(c.length()) +
                             " rows, expected " + std::to_string(num_rows));
    }
    if (!f.nullable && c.null_count() > 0) {
      return Status::Invalid("column '" + f.name + "' is not nullable but has " +
                             std::to_string(c.null_count()) + " nulls");
    }
  }
  return Status::OK();
}

}  // namespace

Result<RecordBatchPtr> RecordBatch::Make(SchemaPtr schema, int64_t num_rows,
                                         std::vector<Array> columns) {
  if (!schema) return Status::Invalid("record batch needs a schema");
  RETURN_NOT_OK(CheckShape(*schema, num_rows, columns));
  return std::make_shared<const RecordBatch>(std::move(schema), num_rows, std::move(columns));
}

RecordBatchPtr RecordBatch::Slice(int64_t offset, int64_t length) const {
  std::vector<Array> sliced;
  sliced.reserve(columns_.size());
  for (const auto& c : columns_) sliced.push_back(c.Slice(offset, length));
  offset = std::clamp<int64_t>(offset, 0, num_rows_);
  length = std::clamp<int64_t>(length, 0, num_rows_ - offset);
  return std::make_shared<const RecordBatch>(schema_, length, std::move(sliced));
}

Result<RecordBatchPtr> RecordBatch::SelectColumns(const std::vector<int>& indices) const {
  ASSIGN_OR_RAISE(SchemaPtr schema, schema_->Select(indices));
  std::vector<Array> selected;
  selected.reserve(indices.size());
  for (int i : indices) selected.push_back(columns_[i]);
  return std::make_shared<const RecordBatch>(std::move(schema), num_rows_, std::move(selected));
}

Status RecordBatch::Validate() const {
  RETURN_NOT_OK(schema_->Validate());
  RETURN_NOT_OK(CheckShape(*schema_, num_rows_, columns_));
  for (int i = 0; i < num_columns(); ++i) {
    RETURN_NOT_OK(columns_[i].Validate().WithContext("column '" + schema_->field(i).name + "'"));
  }
  return Status::OK();
}

bool RecordBatch::Equals(const RecordBatch& other) const {
  if (num_rows_ != other.num_rows_ || !schema_->Equals(*other.schema_)) return false;
  for (int i = 0; i < num_columns(); ++i) {
    if (!columns_[i].Equals(other.columns_[i])) return false;
  }
  return true;
}

}  // namespace oxbow::arrow
