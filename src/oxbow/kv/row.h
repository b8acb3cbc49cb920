// Rows of a primary-key table as the key-value store holds them: values taken out of Arrow
// columns one row at a time, the order-preserving key encoding of the primary key, the value
// encoding of a whole row, and building Arrow batches back from rows (docs/primary-keys.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/arrow/builder.h"
#include "oxbow/arrow/record_batch.h"

namespace oxbow::kv {

// One value: null, or its bytes. Fixed-width values are their little-endian bytes as Arrow
// stores them (bool: one byte 0 or 1); strings and binaries are their bytes.
struct Cell {
  bool null = true;
  std::string bytes;

  bool operator==(const Cell& other) const = default;
};

// A row in table-schema order.
using Row = std::vector<Cell>;

// The value of `column` at `row`.
Cell CellAt(const arrow::Array& column, int64_t row);

// Primary-key column types: every type but float and double (NaN and -0.0 make equality of
// floating-point keys ambiguous). InvalidArgument naming the column otherwise.
Status CheckKeyColumnType(const arrow::Field& field);

// Appends the order-preserving encoding of `column`'s value at `row` (non-null): encoded keys
// compare bytewise as the values compare.
void AppendKeyPart(const arrow::Array& column, int64_t row, std::string* out);

// The value encoding of a row: a LEB128 column count, a null bitmap, then each non-null value
// (fixed width: its bytes; variable length: LEB128 length then bytes).
void EncodeRow(const Row& row, const arrow::Schema& schema, std::string* out);
// Decodes what EncodeRow wrote for `schema` or for a schema with fewer columns at the end
// (columns added since: null); Corruption naming the problem otherwise.
Result<Row> DecodeRow(std::string_view bytes, const arrow::Schema& schema);

// Builds a RecordBatch of `schema` from rows; `columns[i]` is the row index of output field i.
class RowBatchBuilder {
 public:
  static Result<RowBatchBuilder> Make(arrow::SchemaPtr schema, std::vector<int> columns);
  Status Append(const Row& row);
  // Appends the row EncodeRow wrote for `table_schema` (the schema `columns` index into) without
  // building a Row; Corruption naming the problem otherwise, and nothing is appended.
  Status AppendEncoded(std::string_view value, const arrow::Schema& table_schema);
  // Appends a value to output field `field` alone (for columns that are not in the row).
  Status AppendCell(int field, const Cell& cell);
  int64_t rows() const { return rows_; }
  int64_t bytes() const { return bytes_; }
  // The batch so far; the builder starts empty again.
  Result<arrow::RecordBatchPtr> Finish();

 private:
  RowBatchBuilder() = default;
  arrow::SchemaPtr schema_;
  std::vector<int> columns_;
  std::vector<std::unique_ptr<arrow::ArrayBuilder>> builders_;
  int64_t rows_ = 0;
  int64_t bytes_ = 0;
  std::vector<std::optional<std::string_view>> scratch_;  // AppendEncoded's columns
};

}  // namespace oxbow::kv
