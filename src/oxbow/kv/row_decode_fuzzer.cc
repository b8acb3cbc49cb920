// Fuzzes RowFormat::Decode, which reads row values back from the key-value store's files (both
// formats, any schema version, converted to the current one): any bytes must decode or fail
// with Corruption, never crash. Each input is decoded as a row of two tables: one of every
// scalar type, one of nested columns (lists, structs, maps, fixed-size lists, fields added,
// dropped, renamed and widened inside them).
#include <cstddef>
#include <cstdint>

#include "oxbow/kv/row.h"
#include "oxbow/kv/row_testing.h"

namespace {

void Check(const oxbow::kv::RowFormat& format, std::string_view bytes) {
  auto row = format.Decode(bytes);
  // The batch builder takes what Decode takes, and builds valid arrays of it (in a schema whose
  // columns are all nullable: the decoder does not check nullability, the put path does).
  std::vector<int> all;
  std::vector<oxbow::arrow::Field> fields = format.schema().fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    all.push_back(static_cast<int>(i));
    fields[i].nullable = true;
  }
  auto builder = oxbow::kv::RowBatchBuilder::Make(
      std::make_shared<oxbow::arrow::Schema>(std::move(fields)), all);
  if (builder->AppendEncoded(bytes, format).ok() != row.ok()) __builtin_trap();
  auto batch = builder->Finish();
  if (!batch.ok()) __builtin_trap();
  for (const auto& column : (*batch)->columns()) {
    if (!column.Validate().ok()) __builtin_trap();
  }
  if (row.ok()) {
    // What decodes re-encodes (in the current version) to bytes that decode to the same row.
    std::string again;
    format.Encode(*row, &again);
    auto reread = format.Decode(again);
    if (!reread.ok() || *reread != *row) __builtin_trap();
  } else if (!row.status().IsCorruption()) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto scalars = oxbow::kv::RowFormat::Make(oxbow::kv::EveryTypeVersions());
  static const auto nested = oxbow::kv::RowFormat::Make(oxbow::kv::NestedVersions());
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Check(*scalars, bytes);
  Check(*nested, bytes);
  return 0;
}
