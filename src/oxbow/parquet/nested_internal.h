// Nested columns (docs/parquet.md, "Nested columns"): the Parquet schema tree of Arrow fields,
// the repetition and definition levels of each leaf column, and the reassembly of Arrow arrays
// from them. Internal to the parquet module.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "oxbow/arrow/array.h"
#include "oxbow/arrow/schema.h"
#include "oxbow/common/status.h"
#include "oxbow/parquet/metadata.h"

namespace oxbow::parquet::internal {

// One leaf column of a Parquet schema: one column chunk per row group.
struct LeafColumn {
  int element = 0;  // index in FileMetaData.schema
  int16_t max_def = 0;
  int16_t max_rep = 0;
  arrow::Field field;             // the leaf's Arrow field
  std::vector<std::string> path;  // ColumnMetaData.path_in_schema
  // Child indices from the top-level Arrow field down to the leaf (empty for a flat column).
  std::vector<int> child_path;
};

// A file's schema as Arrow fields, with the leaf columns of each.
struct SchemaTree {
  std::vector<arrow::Field> fields;
  std::vector<LeafColumn> leaves;  // in column chunk order
  std::vector<int> first_leaf;     // leaves of field i: [first_leaf[i], first_leaf[i + 1])
  // ParseSchema: why the first leaf whose type has no Arrow mapping cannot be read, if any.
  Status unreadable;
};

// Writer: appends `field` to `tree` (the caller closes first_leaf once all are appended) and
// its schema elements (a group tree for nested types:
// LIST and MAP in the three-level form of LogicalTypes.md) to `elements`.
Status AppendField(const arrow::Field& field, std::vector<SchemaElement>* elements,
                   SchemaTree* tree);

// Reader: the Arrow fields and leaf columns of a flattened schema (elements[0] is the root).
Result<SchemaTree> ParseSchema(const std::vector<SchemaElement>& elements);

// The levels of one leaf over rows [offset, offset + length) of a top-level column.
struct ShreddedLeaf {
  std::vector<uint32_t> def, rep;
  std::vector<int32_t> rows;  // index in `values` of each entry whose def is the leaf's max
  arrow::Array values;        // the leaf array (unset when no entry holds a value)
};
Status ShredLeaf(const arrow::Field& top, const arrow::Array& column, int64_t offset,
                 int64_t length, const LeafColumn& leaf, ShreddedLeaf* out);

// Reader: one decoded leaf chunk: its levels and one value slot per level (null unless the
// def level is the leaf's max).
struct DecodedLeaf {
  const LeafColumn* column = nullptr;
  std::vector<uint32_t> def, rep;
  arrow::Array values;
};
// Rebuilds top-level column `top` of `num_rows` rows from its leaves (in leaf order).
Result<arrow::Array> Assemble(const arrow::Field& top, const std::vector<DecodedLeaf>& leaves,
                              int64_t num_rows);

}  // namespace oxbow::parquet::internal
