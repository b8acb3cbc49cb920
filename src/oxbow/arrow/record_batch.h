// RecordBatch: equal-length columns under one schema.
#pragma once

#include <memory>
#include <vector>

#include "oxbow/arrow/array.h"
#include "oxbow/arrow/schema.h"

namespace oxbow::arrow {

class RecordBatch;
using RecordBatchPtr = std::shared_ptr<const RecordBatch>;

class RecordBatch {
 public:
  RecordBatch(SchemaPtr schema, int64_t num_rows, std::vector<Array> columns)
      : schema_(std::move(schema)), num_rows_(num_rows), columns_(std::move(columns)) {}

  // Checks that columns match the schema's count, types and nullability, and the row count.
  static Result<RecordBatchPtr> Make(SchemaPtr schema, int64_t num_rows,
                                     std::vector<Array> columns);

  const SchemaPtr& schema() const { return schema_; }
  int64_t num_rows() const { return num_rows_; }
  int num_columns() const { return static_cast<int>(columns_.size()); }
  const Array& column(int i) const { return columns_[i]; }
  const std::vector<Array>& columns() const { return columns_; }

  // Zero-copy row slice, clamped to the batch.
  RecordBatchPtr Slice(int64_t offset, int64_t length) const;
  // Zero-copy column projection, in the order given.
  Result<RecordBatchPtr> SelectColumns(const std::vector<int>& indices) const;
  // Make()'s checks plus Array::Validate() on every column.
  Status Validate() const;
  bool Equals(const RecordBatch& other) const;

 private:
  SchemaPtr schema_;
  int64_t num_rows_;
  std::vector<Array> columns_;
};

}  // namespace oxbow::arrow
