#include "oxbow/arrow/array.h"

#include <gtest/gtest.h>

#include "oxbow/arrow/builder.h"
#include "oxbow/arrow/record_batch.h"
#include "oxbow/testing/nested.h"

namespace oxbow::arrow {
namespace {

TEST(BuilderTest, NumericWithNulls) {
  Int32Builder b(DataType::Int32());
  ASSERT_TRUE(b.Append(1).ok());
  ASSERT_TRUE(b.Append(2).ok());
  ASSERT_TRUE(b.AppendNull().ok());
  ASSERT_TRUE(b.Append(4).ok());
  Array a = b.Finish().ValueOrDie();
  ASSERT_TRUE(a.Validate().ok());
  EXPECT_EQ(a.length(), 4);
  EXPECT_EQ(a.null_count(), 1);
  EXPECT_TRUE(a.IsValid(0));
  EXPECT_TRUE(a.IsNull(2));
  EXPECT_EQ(a.Value<int32_t>(3), 4);
}

TEST(BuilderTest, NoNullsMeansNoBitmap) {
  Int64Builder b(DataType::Int64());
  int64_t v[3] = {7, 8, 9};
  ASSERT_TRUE(b.AppendValues(v, 3).ok());
  Array a = b.Finish().ValueOrDie();
  EXPECT_EQ(a.validity(), nullptr);
  EXPECT_EQ(a.Value<int64_t>(2), 9);
}

TEST(BuilderTest, BooleanAndStrings) {
  BooleanBuilder bb;
  ASSERT_TRUE(bb.Append(true).ok());
  ASSERT_TRUE(bb.AppendNull().ok());
  ASSERT_TRUE(bb.Append(false).ok());
  ASSERT_TRUE(bb.Append(true).ok());
  Array bools = bb.Finish().ValueOrDie();
  ASSERT_TRUE(bools.Validate().ok());
  EXPECT_TRUE(bools.BoolValue(0));
  EXPECT_TRUE(bools.IsNull(1));
  EXPECT_FALSE(bools.BoolValue(2));
  EXPECT_TRUE(bools.BoolValue(3));

  BinaryBuilder sb(DataType::String());
  ASSERT_TRUE(sb.Append("héllo").ok());
  ASSERT_TRUE(sb.AppendNull().ok());
  ASSERT_TRUE(sb.Append("").ok());
  ASSERT_TRUE(sb.Append("world").ok());
  Array strings = sb.Finish().ValueOrDie();
  ASSERT_TRUE(strings.Validate().ok());
  EXPECT_EQ(strings.GetView(0), "héllo");
  EXPECT_EQ(strings.GetView(1), "");
  EXPECT_EQ(strings.GetView(3), "world");
}

TEST(BuilderTest, DecimalAndFixed) {
  FixedSizeBinaryBuilder db(DataType::Decimal128(10, 2));
  ASSERT_TRUE(db.AppendDecimal(-12345).ok());
  Array dec = db.Finish().ValueOrDie();
  __int128 v;
  std::memcpy(&v, dec.GetView(0).data(), 16);
  EXPECT_TRUE(v == -12345);

  FixedSizeBinaryBuilder fb(DataType::FixedSizeBinary(3));
  EXPECT_TRUE(fb.Append("toolong").IsInvalid());
  ASSERT_TRUE(fb.Append("abc").ok());
  EXPECT_EQ(fb.Finish().ValueOrDie().GetView(0), "abc");
}

TEST(ArrayTest, SliceIsZeroCopyAndRecountsNulls) {
  BinaryBuilder sb(DataType::Binary());
  for (int i = 0; i < 20; ++i) {
    if (i % 3 == 0) {
      ASSERT_TRUE(sb.AppendNull().ok());
    } else {
      ASSERT_TRUE(sb.Append(std::to_string(i)).ok());
    }
  }
  Array a = sb.Finish().ValueOrDie();
  Array s = a.Slice(5, 10);  // rows 5..14: nulls at 6, 9, 12
  EXPECT_EQ(s.length(), 10);
  EXPECT_EQ(s.null_count(), 3);
  EXPECT_EQ(s.GetView(0), "5");
  EXPECT_EQ(s.buffer(2).get(), a.buffer(2).get());
  EXPECT_TRUE(s.Validate().ok());
  EXPECT_TRUE(s.Equals(a.Slice(5, 10)));
  EXPECT_FALSE(s.Equals(a.Slice(6, 10)));
  EXPECT_EQ(a.Slice(18, 100).length(), 2);
}

TEST(ArrayTest, ValidateCatchesBadOffsets) {
  int32_t offsets[3] = {0, 5, 3};
  auto off = Buffer::CopyFrom({reinterpret_cast<char*>(offsets), sizeof(offsets)}).ValueOrDie();
  auto data = Buffer::FromString("hello");
  Array a = Array::Make(DataType::String(), 2, {nullptr, off, data});
  EXPECT_EQ(a.Validate().message(), "array of string: offsets decrease at index 1");
  int32_t big[3] = {0, 5, 9};
  auto off2 = Buffer::CopyFrom({reinterpret_cast<char*>(big), sizeof(big)}).ValueOrDie();
  EXPECT_TRUE(Array::Make(DataType::String(), 2, {nullptr, off2, data}).Validate().IsInvalid());
  EXPECT_TRUE(Array::Make(DataType::Int64(), 2, {nullptr, data}).Validate().IsInvalid());
}

TEST(RecordBatchTest, MakeChecksSchema) {
  auto schema = std::make_shared<const Schema>(
      std::vector<Field>{{"id", DataType::Int64(), false}, {"v", DataType::Float64()}});
  Int64Builder ib(DataType::Int64());
  DoubleBuilder db(DataType::Float64());
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(ib.Append(i).ok());
    ASSERT_TRUE(db.Append(i * 0.5).ok());
  }
  Array ids = ib.Finish().ValueOrDie();
  Array vals = db.Finish().ValueOrDie();
  auto batch = RecordBatch::Make(schema, 4, {ids, vals}).ValueOrDie();
  ASSERT_TRUE(batch->Validate().ok());
  auto proj = batch->SelectColumns({1}).ValueOrDie();
  EXPECT_EQ(proj->schema()->field(0).name, "v");
  EXPECT_EQ(batch->Slice(1, 2)->column(0).Value<int64_t>(0), 1);

  EXPECT_EQ(RecordBatch::Make(schema, 4, {vals, ids}).status().message(),
            "column 'id' has type double but the schema says int64");
  Int64Builder nb(DataType::Int64());
  ASSERT_TRUE(nb.AppendNull().ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(nb.Append(i).ok());
  EXPECT_EQ(RecordBatch::Make(schema, 4, {nb.Finish().ValueOrDie(), vals}).status().message(),
            "column 'id' is not nullable but has 1 nulls");
}

// s: list<struct<a: int32 not null, b: int32>>: a null `a` matters only where its struct is
// valid and the struct is an element of a valid list.
TEST(ArrayTest, CheckNestedNullsLooksOnlyWhereTheParentHoldsAValue) {
  const DataType point = DataType::Struct(
      {Field{"a", DataType::Int32(), /*nullable=*/false}, Field{"b", DataType::Int32()}});
  const DataType type = DataType::List(Field{"item", point});
  auto make = [&](std::vector<bool> a_valid, std::vector<bool> point_valid,
                  std::vector<bool> list_valid) {
    const Array a = testing::Int32Array({1, 2, 3, 4}, a_valid);
    const Array b = testing::Int32Array({5, 6, 7, 8}, {true, false, true, true});
    const Array points =
        Array::MakeNested(point, 4, {testing::ValidityBitmap(point_valid)}, {a, b});
    // Rows: [p0, p1], [p2], [p3].
    return Array::MakeNested(
        type, 3, {testing::ValidityBitmap(list_valid), testing::Int32Buffer({0, 2, 3, 4})},
        {points});
  };
  EXPECT_TRUE(make({true, true, true, true}, {true, true, true, true}, {true, true, true})
                  .CheckNestedNulls()
                  .ok());
  // The null `a` sits in a null struct, or in a null list: no value to hold.
  EXPECT_TRUE(make({true, true, false, true}, {true, true, false, true}, {true, true, true})
                  .CheckNestedNulls()
                  .ok());
  EXPECT_TRUE(make({true, true, false, true}, {true, true, true, true}, {true, false, true})
                  .CheckNestedNulls()
                  .ok());
  const Array bad = make({true, true, false, true}, {true, true, true, true}, {true, true, true});
  ASSERT_TRUE(bad.Validate().ok());
  const Status st = bad.CheckNestedNulls();
  EXPECT_TRUE(st.IsInvalid());
  EXPECT_EQ(st.message(), "its not-null field 'item.a' holds a null in row 1");
  EXPECT_EQ(bad.Slice(1, 1).CheckNestedNulls().message(),
            "its not-null field 'item.a' holds a null in row 0");
  EXPECT_TRUE(bad.Slice(2, 1).CheckNestedNulls().ok());
}

}  // namespace
}  // namespace oxbow::arrow
