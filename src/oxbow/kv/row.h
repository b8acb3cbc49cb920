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
#include "oxbow/catalog/descriptor.h"

namespace oxbow::kv {

// One value: null, or its bytes. Fixed-width values are their little-endian bytes as Arrow
// stores them (bool: one byte 0 or 1); strings and binaries are their bytes; nested values
// (list, struct, map, fixed_size_list) their encoding in docs/primary-keys.md, "Nested values".
struct Cell {
  bool null = true;
  std::string bytes;

  bool operator==(const Cell& other) const = default;
};

// A row in table-schema order.
using Row = std::vector<Cell>;

// The value of `column` at `row`.
Cell CellAt(const arrow::Array& column, int64_t row);

// Primary-key column types: every scalar type but float and double (NaN and -0.0 make equality
// of floating-point keys ambiguous); no nested type. InvalidArgument naming the column otherwise.
Status CheckKeyColumnType(const arrow::Field& field);

// Appends the order-preserving encoding of `column`'s value at `row` (non-null): encoded keys
// compare bytewise as the values compare.
void AppendKeyPart(const arrow::Array& column, int64_t row, std::string* out);

// The value encoding of rows (docs/primary-keys.md, "Value encoding") for a table's schema
// versions: rows are written in the current version, tagged with its schema id, and a row
// written in any version reads in the current one, converted as the log converts batches
// (columns matched by field id, added ones null, dropped ones gone, widened ones cast with
// arrow::Cast, nested fields matched by their ids too). Rows of the first, untagged format (a
// LEB128 column count first) read as the oldest version with that many columns.
class RowFormat {
 public:
  // `versions`: every schema version of the table, oldest first, the current one last.
  static Result<RowFormat> Make(std::vector<catalog::SchemaVersion> versions);

  // The current version's schema.
  const arrow::Schema& schema() const { return *versions_.back().version.schema; }
  // Appends the encoding of `row` (in the current schema): the tag 00, the current schema id
  // (LEB128), a null bitmap, then each non-null value (fixed width: its bytes; variable length:
  // LEB128 length then bytes).
  void Encode(const Row& row, std::string* out) const;
  // A stored value as a row of the current schema; Corruption naming the problem otherwise.
  Result<Row> Decode(std::string_view value) const;

  // Scratch space of DecodeViews, reused across calls.
  struct Scratch {
    std::vector<std::optional<std::string_view>> stored;  // the columns as stored
    std::vector<std::string> cast;                        // values cast to the current type
  };
  // A stored value's columns in the current schema (std::nullopt: null), viewing `value` or
  // `scratch` (valid until its next use).
  Status DecodeViews(std::string_view value, std::vector<std::optional<std::string_view>>* out,
                     Scratch* scratch) const;

 private:
  struct Version {
    catalog::SchemaVersion version;
    // Per current column: its column in this version (by field id), or -1; and, when its stored
    // type differs (a widening, a nested field added, dropped or renamed since), that type
    // with its nested fields' ids, which values are cast from.
    std::vector<int> source;
    std::vector<std::optional<arrow::DataType>> cast_from;
    bool as_current = false;  // the same columns as the current version: no conversion
  };
  std::vector<Version> versions_;  // oldest first, the current one last
  // The current version's column types with their nested fields' ids (what values cast to).
  std::vector<arrow::DataType> current_types_;
};

namespace internal {
class ColumnBuilder;  // row.cc
}  // namespace internal

// Builds a RecordBatch of `schema` from rows; `columns[i]` is the row index of output field i.
class RowBatchBuilder {
 public:
  static Result<RowBatchBuilder> Make(arrow::SchemaPtr schema, std::vector<int> columns);
  RowBatchBuilder(RowBatchBuilder&&) = default;
  RowBatchBuilder& operator=(RowBatchBuilder&&) = default;
  RowBatchBuilder(const RowBatchBuilder&) = delete;
  RowBatchBuilder& operator=(const RowBatchBuilder&) = delete;
  Status Append(const Row& row);
  // Appends a stored row (read in `format`'s current schema, which `columns` index into) without
  // building a Row; Corruption naming the problem otherwise, and nothing is appended.
  Status AppendEncoded(std::string_view value, const RowFormat& format);
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
  std::vector<std::shared_ptr<internal::ColumnBuilder>> builders_;
  int64_t rows_ = 0;
  int64_t bytes_ = 0;
  std::vector<std::optional<std::string_view>> views_;  // AppendEncoded's columns
  RowFormat::Scratch scratch_;
};

}  // namespace oxbow::kv
