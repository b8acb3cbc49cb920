// For row_test and row_decode_fuzzer: schema versions of testing::EveryTypeSchema and of a table
// with nested columns, as alter_table makes them, so stored rows of every version and format can
// be decoded.
#pragma once

#include <string_view>
#include <vector>

#include "oxbow/catalog/descriptor.h"
#include "oxbow/testing/every_type.h"

namespace oxbow::kv {

// Version 0: the first 11 columns of EveryTypeSchema (field ids 1..11); version 1: all of them
// (1..21, added at the end); version 2, the current one: "i8" widened to int16, "f32" to double
// and "dec9" to decimal128(12, 2), "bin" dropped and "added" (int32, id 22) added first.
inline std::vector<catalog::SchemaVersion> EveryTypeVersions() {
  const arrow::SchemaPtr all = testing::EveryTypeSchema();
  std::vector<catalog::SchemaVersion> versions(3);
  for (int i = 0; i < all->num_fields(); ++i) {
    if (i < 11) versions[0].field_ids.push_back(i + 1);
    versions[1].field_ids.push_back(i + 1);
  }
  std::vector<arrow::Field> fields = all->fields();
  versions[0].schema = std::make_shared<arrow::Schema>(
      std::vector<arrow::Field>(fields.begin(), fields.begin() + 11));
  versions[1] = {1, all, versions[1].field_ids};
  std::vector<arrow::Field> current = {{"added", arrow::DataType::Int32(), true, {}}};
  std::vector<int32_t> ids = {22};
  for (int i = 0; i < all->num_fields(); ++i) {
    arrow::Field f = fields[static_cast<size_t>(i)];
    if (f.name == "bin") continue;
    if (f.name == "i8") f.type = arrow::DataType::Int16();
    if (f.name == "f32") f.type = arrow::DataType::Float64();
    if (f.name == "dec9") f.type = arrow::DataType::Decimal128(12, 2);
    current.push_back(std::move(f));
    ids.push_back(i + 1);
  }
  versions[2] = {2, std::make_shared<arrow::Schema>(std::move(current)), std::move(ids)};
  return versions;
}

// Two versions of a table with nested columns (field ids in brackets, nested ones in pre-order).
// Version 0: id int32 [1], s struct<a: int32 [3], b: string [4]> [2],
// l list<item: struct<x: int16 [7], y: string [8]> [6]> [5],
// m map<string [10], list<item: int32 [12]> [11]> [9], f fixed_size_list<item: int32 [14]>[2] [13].
// Version 1, the current one: s's "a" renamed "aa" and widened to int64, "b" dropped, c double
// [15] added; l's item's "x" widened to int32, "y" dropped, z bool [16] added; a new column
// n struct<p: list<item: int8 [19]> [18]> [17] first.
inline std::vector<catalog::SchemaVersion> NestedVersions() {
  using arrow::DataType;
  using arrow::Field;
  auto type = [](std::string_view text) { return DataType::Parse(text).ValueOrDie(); };
  const Field id{"id", DataType::Int32(), false, {}};
  const Field m{"m", type("map<string, list<item: int32>>"), true, {}};
  const Field f{"f", type("fixed_size_list<item: int32>[2]"), true, {}};
  catalog::SchemaVersion v0;
  v0.schema = std::make_shared<arrow::Schema>(
      std::vector<Field>{id,
                         {"s", type("struct<a: int32, b: string>"), true, {}},
                         {"l", type("list<item: struct<x: int16, y: string>>"), true, {}},
                         m,
                         f});
  v0.field_ids = {1, 2, 5, 9, 13};
  v0.child_ids = {{}, {3, 4}, {6, 7, 8}, {10, 11, 12}, {14}};
  catalog::SchemaVersion v1;
  v1.schema_id = 1;
  v1.schema = std::make_shared<arrow::Schema>(
      std::vector<Field>{{"n", type("struct<p: list<item: int8>>"), true, {}},
                         id,
                         {"s", type("struct<aa: int64, c: double>"), true, {}},
                         {"l", type("list<item: struct<x: int32, z: bool>>"), true, {}},
                         m,
                         f});
  v1.field_ids = {17, 1, 2, 5, 9, 13};
  v1.child_ids = {{18, 19}, {}, {3, 15}, {6, 7, 16}, {10, 11, 12}, {14}};
  return {v0, v1};
}

}  // namespace oxbow::kv
