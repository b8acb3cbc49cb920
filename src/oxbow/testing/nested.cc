#include "oxbow/testing/nested.h"

#include <string>
#include <utility>

namespace oxbow::testing {

using arrow::Array;
using arrow::DataType;

std::shared_ptr<Buffer> Int32Buffer(const std::vector<int32_t>& values) {
  return Buffer::CopyFrom({reinterpret_cast<const char*>(values.data()), values.size() * 4})
      .ValueOrDie();
}

std::shared_ptr<Buffer> ValidityBitmap(const std::vector<bool>& bits) {
  std::string bytes((bits.size() + 7) / 8, '\0');
  for (size_t i = 0; i < bits.size(); ++i) {
    if (bits[i]) bytes[i / 8] = static_cast<char>(bytes[i / 8] | (1 << (i % 8)));
  }
  return Buffer::FromString(std::move(bytes));
}

Array Int32Array(const std::vector<int32_t>& values, const std::vector<bool>& valid) {
  return Array::Make(DataType::Int32(), static_cast<int64_t>(values.size()),
                     {ValidityBitmap(valid), Int32Buffer(values)});
}

arrow::RecordBatchPtr NestedBatch(bool with_fixed_size_list) {
  const DataType list = DataType::List({"item", DataType::Int32()});
  const DataType strct = DataType::Struct({{"a", DataType::Int32()}, {"b", list}});
  const DataType fsl = DataType::FixedSizeList({"item", DataType::Int32()}, 2);
  const DataType map = DataType::Map(DataType::Int32(), DataType::Int32());
  // l: [1, null], null, [], [3], [4, 5, 6], [null]
  Array l = Array::MakeNested(
      list, 6, {ValidityBitmap({1, 0, 1, 1, 1, 1}), Int32Buffer({0, 2, 2, 2, 3, 6, 7})},
      {Int32Array({1, 0, 3, 4, 5, 6, 0}, {1, 0, 1, 1, 1, 1, 0})});
  // s.b: [7], null, [], [8, null], null, []
  Array b = Array::MakeNested(
      list, 6, {ValidityBitmap({1, 0, 1, 1, 0, 1}), Int32Buffer({0, 1, 1, 1, 3, 3, 3})},
      {Int32Array({7, 8, 0}, {1, 1, 0})});
  Array s = Array::MakeNested(strct, 6, {ValidityBitmap({1, 1, 0, 1, 1, 1})},
                              {Int32Array({1, 0, 0, 4, 5, 6}, {1, 0, 0, 1, 1, 1}), b});
  Array f = Array::MakeNested(
      fsl, 6, {ValidityBitmap({1, 1, 0, 1, 1, 1})},
      {Int32Array({1, 2, 0, 3, 9, 9, 4, 0, 5, 6, 7, 8}, {1, 1, 0, 1, 0, 0, 1, 0, 1, 1, 1, 1})});
  Array entries = Array::MakeNested(
      map.child(0).type, 4, {nullptr},
      {Int32Array({1, 2, 3, 4}, {1, 1, 1, 1}), Int32Array({10, 0, 30, 40}, {1, 0, 1, 1})});
  Array m = Array::MakeNested(
      map, 6, {ValidityBitmap({1, 0, 1, 1, 1, 1}), Int32Buffer({0, 2, 2, 2, 3, 4, 4})}, {entries});
  std::vector<arrow::Field> fields = {{"l", list}, {"s", strct}};
  std::vector<Array> columns = {l, s};
  if (with_fixed_size_list) {
    fields.push_back({"f", fsl});
    columns.push_back(f);
  }
  fields.push_back({"m", map});
  columns.push_back(m);
  return arrow::RecordBatch::Make(std::make_shared<const arrow::Schema>(std::move(fields)), 6,
                                  std::move(columns))
      .ValueOrDie();
}

}  // namespace oxbow::testing
