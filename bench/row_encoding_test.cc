#include "row_encoding.h"

#include <gtest/gtest.h>

#include "datagen.h"
#include "oxbow/arrow/builder.h"

namespace oxbow::bench {
namespace {

using arrow::DataType;

TEST(RowEncodingTest, BitmapThenValuesInColumnOrder) {
  arrow::NumericBuilder<int64_t> ids(DataType::Int64());
  ASSERT_TRUE(ids.Append(-2).ok());
  ASSERT_TRUE(ids.Append(300).ok());
  arrow::NumericBuilder<double> prices(DataType::Float64());
  ASSERT_TRUE(prices.AppendNull().ok());
  ASSERT_TRUE(prices.Append(1.5).ok());
  arrow::BinaryBuilder names(DataType::String());
  ASSERT_TRUE(names.Append("ab").ok());
  ASSERT_TRUE(names.AppendNull().ok());
  auto schema = std::make_shared<const arrow::Schema>(std::vector<arrow::Field>{
      {"id", DataType::Int64()}, {"price", DataType::Float64()}, {"name", DataType::String()}});
  auto batch =
      arrow::RecordBatch::Make(schema, 2, {*ids.Finish(), *prices.Finish(), *names.Finish()});
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();

  std::string row0, row1;
  AppendEncodedRow(**batch, 0, &row0);
  AppendEncodedRow(**batch, 1, &row1);
  // Row 0: bitmap 0b010 (price null), zigzag(-2) = 3, length 2, "ab".
  EXPECT_EQ(row0, std::string("\x02\x03\x02"
                              "ab",
                              5));
  // Row 1: bitmap 0b100 (name null), zigzag(300) = 600 = varint D8 04, 1.5 as a double.
  EXPECT_EQ(row1, std::string("\x04\xD8\x04\x00\x00\x00\x00\x00\x00\xF8\x3F", 11));
}

TEST(EventsDatasetTest, TwentyColumnsOfAboutOneKilobyteARowAndDeterministic) {
  auto batch = MakeEventsBatch(3, 1000);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_TRUE((*batch)->Validate().ok());
  EXPECT_EQ((*batch)->num_columns(), 20);
  EXPECT_EQ((*batch)->column(0).Value<int64_t>(0), 3000);
  std::string rows;
  for (int64_t r = 0; r < (*batch)->num_rows(); ++r) AppendEncodedRow(**batch, r, &rows);
  EXPECT_GT(rows.size(), 900u * 1000);
  EXPECT_LT(rows.size(), 1100u * 1000);
  auto again = MakeEventsBatch(3, 1000);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*batch)->Equals(**again));
}

}  // namespace
}  // namespace oxbow::bench
