// For row_test and row_decode_fuzzer: schema versions of testing::EveryTypeSchema as alter_table
// makes them, so stored rows of every version and format can be decoded.
#pragma once

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

}  // namespace oxbow::kv
