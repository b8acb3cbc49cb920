#include "oxbow/arrow/compute.h"

#include <gtest/gtest.h>

#include "oxbow/arrow/builder.h"
#include "oxbow/testing/nested.h"

namespace oxbow::arrow {
namespace {

TEST(TakeRowsTest, EveryLayout) {
  BinaryBuilder sb(DataType::String());
  BooleanBuilder bb;
  Int16Builder ib(DataType::Int16());
  for (int i = 0; i < 10; ++i) {
    const std::string value = std::string(1, 's') + static_cast<char>('0' + i);
    ASSERT_TRUE((i == 3 ? sb.AppendNull() : sb.Append(value)).ok());
    ASSERT_TRUE(bb.Append(i % 2 == 0).ok());
    ASSERT_TRUE(ib.Append(static_cast<int16_t>(i * 100)).ok());
  }
  Array strings = sb.Finish().ValueOrDie().Slice(1, 8);  // s1..s8, null at index 2
  Array taken = TakeRows(strings, {7, 2, 0, 0}).ValueOrDie();
  ASSERT_TRUE(taken.Validate().ok());
  EXPECT_EQ(taken.GetView(0), "s8");
  EXPECT_TRUE(taken.IsNull(1));
  EXPECT_EQ(taken.GetView(3), "s1");
  EXPECT_EQ(taken.null_count(), 1);
  Array bools = TakeRows(bb.Finish().ValueOrDie(), {1, 2}).ValueOrDie();
  EXPECT_FALSE(bools.BoolValue(0));
  EXPECT_TRUE(bools.BoolValue(1));
  Array ints = TakeRows(ib.Finish().ValueOrDie().Slice(5, 5), {4}).ValueOrDie();
  EXPECT_EQ(ints.Value<int16_t>(0), 900);
}

TEST(TakeRowsTest, NestedTypesTakeTheirChildren) {
  const RecordBatchPtr batch = testing::NestedBatch();
  const Array s = batch->column(1);
  const Array b = s.child(1);
  const Array f = batch->column(2);
  const std::vector<int32_t> rows = {4, 0, 2, 2, 1};
  for (const Array& whole : {b, s, f}) {
    const Array sliced = whole.Slice(1, 5);
    Array taken = TakeRows(sliced, rows).ValueOrDie();
    ASSERT_TRUE(taken.Validate().ok()) << whole.type().ToString();
    ASSERT_EQ(taken.length(), 5);
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_TRUE(taken.ElementEquals(static_cast<int64_t>(i), sliced, rows[i]))
          << whole.type().ToString() << " row " << i;
    }
  }
}

TEST(CastTest, WidensIntegers) {
  UInt32Builder b(DataType::UInt32());
  ASSERT_TRUE(b.Append(4000000000u).ok());
  ASSERT_TRUE(b.AppendNull().ok());
  ASSERT_TRUE(b.Append(7).ok());
  Array wide = Cast(b.Finish().ValueOrDie().Slice(0, 3), DataType::Int64()).ValueOrDie();
  ASSERT_TRUE(wide.Validate().ok());
  EXPECT_EQ(wide.type(), DataType::Int64());
  EXPECT_EQ(wide.Value<int64_t>(0), 4000000000);
  EXPECT_TRUE(wide.IsNull(1));
  EXPECT_EQ(wide.Value<int64_t>(2), 7);

  Int8Builder i8(DataType::Int8());
  ASSERT_TRUE(i8.Append(-128).ok());
  EXPECT_EQ(Cast(i8.Finish().ValueOrDie(), DataType::Int32())->Value<int32_t>(0), -128);
  UInt32Builder u(DataType::UInt32());
  ASSERT_TRUE(u.Append(1).ok());
  EXPECT_EQ(Cast(u.Finish().ValueOrDie(), DataType::Int32()).status().message(),
            "cannot cast uint32 to int32");
}

TEST(CastTest, NarrowsIntegersThatFit) {
  Int32Builder b(DataType::Int32());
  ASSERT_TRUE(b.Append(-128).ok());
  ASSERT_TRUE(b.AppendNull().ok());
  ASSERT_TRUE(b.Append(127).ok());
  Array narrow = Cast(b.Finish().ValueOrDie(), DataType::Int8()).ValueOrDie();
  ASSERT_TRUE(narrow.Validate().ok());
  EXPECT_EQ(narrow.Value<int8_t>(0), -128);
  EXPECT_TRUE(narrow.IsNull(1));
  EXPECT_EQ(narrow.Value<int8_t>(2), 127);

  Int64Builder w(DataType::Int64());
  ASSERT_TRUE(w.Append(4000000000).ok());
  EXPECT_EQ(Cast(w.Finish().ValueOrDie(), DataType::UInt32())->Value<uint32_t>(0), 4000000000u);
  Int32Builder big(DataType::Int32());
  ASSERT_TRUE(big.Append(70000).ok());
  EXPECT_EQ(Cast(big.Finish().ValueOrDie(), DataType::UInt16()).status().message(),
            "value 70000 of int32 does not fit uint16");
}

TEST(CastTest, ConvertsTimestampUnits) {
  Int64Builder b(DataType::Timestamp(TimeUnit::kNano, "UTC"));
  ASSERT_TRUE(b.Append(-1500).ok());  // 1.5 us before the epoch
  ASSERT_TRUE(b.Append(2500).ok());
  Array us =
      Cast(b.Finish().ValueOrDie(), DataType::Timestamp(TimeUnit::kMicro, "UTC")).ValueOrDie();
  EXPECT_EQ(us.Value<int64_t>(0), -2);  // floor
  EXPECT_EQ(us.Value<int64_t>(1), 2);
  Int64Builder s(DataType::Timestamp(TimeUnit::kSecond));
  ASSERT_TRUE(s.Append(3).ok());
  ASSERT_TRUE(s.Append(INT64_MAX / 10).ok());
  Array secs = s.Finish().ValueOrDie();
  EXPECT_EQ(Cast(secs.Slice(0, 1), DataType::Timestamp(TimeUnit::kMicro))->Value<int64_t>(0),
            3000000);
  EXPECT_TRUE(Cast(secs, DataType::Timestamp(TimeUnit::kMicro)).status().IsInvalid());
}

TEST(CastTest, SchemaEvolutionWidenings) {
  NumericBuilder<int8_t> i8(DataType::Int8());
  ASSERT_TRUE(i8.Append(-7).ok() && i8.AppendNull().ok());
  Array wide = Cast(i8.Finish().ValueOrDie(), DataType::Int16()).ValueOrDie();
  EXPECT_EQ(wide.type(), DataType::Int16());
  EXPECT_EQ(wide.Value<int16_t>(0), -7);
  EXPECT_TRUE(wide.IsNull(1));

  NumericBuilder<float> f(DataType::Float32());
  ASSERT_TRUE(f.Append(1.25f).ok());
  EXPECT_EQ(Cast(f.Finish().ValueOrDie(), DataType::Float64())->Value<double>(0), 1.25);

  FixedSizeBinaryBuilder d(DataType::Decimal128(9, 2));
  ASSERT_TRUE(d.AppendDecimal(-12345).ok());
  Array dec = Cast(d.Finish().ValueOrDie(), DataType::Decimal128(20, 2)).ValueOrDie();
  EXPECT_EQ(dec.type(), DataType::Decimal128(20, 2));
  EXPECT_EQ(dec.Value<__int128>(0), -12345);
  EXPECT_EQ(Cast(dec, DataType::Decimal128(20, 3)).status().code(), StatusCode::kNotImplemented);
}

TEST(CastTest, SchemaEvolutionNarrowingsBack) {
  NumericBuilder<int16_t> i16(DataType::Int16());
  ASSERT_TRUE(i16.Append(-128).ok() && i16.AppendNull().ok() && i16.Append(300).ok());
  Array shorts = i16.Finish().ValueOrDie();
  Array i8 = Cast(shorts.Slice(0, 2), DataType::Int8()).ValueOrDie();
  EXPECT_EQ(i8.Value<int8_t>(0), -128);
  EXPECT_TRUE(i8.IsNull(1));
  EXPECT_EQ(Cast(shorts, DataType::Int8()).status().message(),
            "value 300 of int16 does not fit int8");

  NumericBuilder<double> d(DataType::Float64());
  ASSERT_TRUE(d.Append(0.1).ok() && d.AppendNull().ok() && d.Append(1e300).ok());
  Array doubles = d.Finish().ValueOrDie();
  Array floats = Cast(doubles.Slice(0, 2), DataType::Float32()).ValueOrDie();
  EXPECT_EQ(floats.type(), DataType::Float32());
  EXPECT_EQ(floats.Value<float>(0), 0.1f);
  EXPECT_TRUE(floats.IsNull(1));
  EXPECT_TRUE(Cast(doubles, DataType::Float32()).status().IsInvalid());

  FixedSizeBinaryBuilder dec(DataType::Decimal128(12, 2));
  ASSERT_TRUE(dec.AppendDecimal(-999).ok() && dec.AppendNull().ok() &&
              dec.AppendDecimal(1000).ok());
  Array wide = dec.Finish().ValueOrDie();
  Array narrow = Cast(wide.Slice(0, 2), DataType::Decimal128(3, 2)).ValueOrDie();
  EXPECT_EQ(narrow.type(), DataType::Decimal128(3, 2));
  EXPECT_EQ(narrow.Value<__int128>(0), -999);
  EXPECT_EQ(Cast(wide, DataType::Decimal128(3, 2)).status().message(),
            "a value of decimal128(12, 2) at row 2 does not fit decimal128(3, 2)");
}

// The lake's casts of nested columns: children widened (int32 -> int64) and a fixed_size_list
// as a list, then back, whole and sliced.
TEST(CastTest, NestedColumnsCastChildByChildAndFixedSizeListsAsLists) {
  const RecordBatchPtr batch = testing::NestedBatch(/*with_fixed_size_list=*/true);
  const DataType wide_list = DataType::List({"item", DataType::Int64()});
  const std::vector<DataType> wide = {
      wide_list, DataType::Struct({{"a", DataType::Int64()}, {"b", wide_list}}),
      wide_list,  // from fixed_size_list<item: int32>[2]
      DataType::Map(DataType::Int64(), DataType::Int64())};
  for (auto [offset, length] : {std::pair<int64_t, int64_t>{0, 6}, {1, 4}, {3, 3}}) {
    for (int c = 0; c < batch->num_columns(); ++c) {
      const Array column = batch->column(c).Slice(offset, length);
      auto widened = Cast(column, wide[static_cast<size_t>(c)]);
      ASSERT_TRUE(widened.ok()) << c << ": " << widened.status().ToString();
      ASSERT_TRUE(widened->Validate().ok()) << c;
      EXPECT_EQ(widened->null_count(), column.null_count());
      auto back = Cast(*widened, column.type());
      ASSERT_TRUE(back.ok()) << c << ": " << back.status().ToString();
      ASSERT_TRUE(back->Validate().ok()) << c;
      for (int64_t i = 0; i < length; ++i) {
        EXPECT_TRUE(back->ElementEquals(i, column, i)) << c << " " << offset << " " << i;
      }
    }
  }
  // A valid list of another length does not fit; a null one of any length does.
  const Array l = batch->column(0);  // [1, null], null, [], [3], [4, 5, 6], [null]
  const DataType pair = DataType::FixedSizeList({"item", DataType::Int32()}, 2);
  auto refused = Cast(l, pair);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "a list of 0 items does not fit fixed_size_list<item: int32>[2]");
  auto fits = Cast(l.Slice(0, 2), pair);
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_TRUE(fits->IsNull(1));
  EXPECT_EQ(fits->child(0).Value<int32_t>(0), 1);
  EXPECT_TRUE(fits->child(0).IsNull(1));
}

Field WithId(Field f, int32_t id) {
  f.metadata = {{kFieldIdKey, std::to_string(id)}};
  return f;
}

// Schema evolution inside nested columns: struct fields matched by field id at any depth.
TEST(CastTest, StructsWithFieldIdsCastFieldByField) {
  // s: struct<a: int32 (id 1), b: int32 (id 2)>, rows {1,10}, null, {3,null}, {4,40}.
  const Array a = testing::Int32Array({1, 0, 3, 4}, {true, true, true, true});
  const Array b = testing::Int32Array({10, 0, 0, 40}, {true, false, false, true});
  const DataType from =
      DataType::Struct({WithId({"a", DataType::Int32()}, 1), WithId({"b", DataType::Int32()}, 2)});
  const Array s =
      Array::MakeNested(from, 4, {testing::ValidityBitmap({true, false, true, true})}, {a, b});
  // b renamed to b2 and widened, a dropped, c (id 3) added.
  const DataType to = DataType::Struct(
      {WithId({"b2", DataType::Int64()}, 2), WithId({"c", DataType::String()}, 3)});
  for (auto [offset, length] : {std::pair<int64_t, int64_t>{0, 4}, {1, 3}, {3, 1}}) {
    const Array column = s.Slice(offset, length);
    auto cast = Cast(column, to);
    ASSERT_TRUE(cast.ok()) << cast.status().ToString();
    ASSERT_TRUE(cast->Validate().ok());
    EXPECT_EQ(cast->type(), to);
    EXPECT_EQ(cast->null_count(), column.null_count());
    for (int64_t i = 0; i < length; ++i) {
      const int64_t row = offset + i;
      EXPECT_EQ(cast->IsNull(i), row == 1);
      const Array b2 = cast->child(0).Slice(cast->offset(), length);
      EXPECT_EQ(b2.IsNull(i), b.IsNull(row));
      if (b.IsValid(row)) {
        EXPECT_EQ(b2.Value<int64_t>(i), b.Value<int32_t>(row));
      }
      EXPECT_TRUE(cast->child(1).Slice(cast->offset(), length).IsNull(i));
    }
  }
  // The same type with other ids is not the same field: a dropped b and a new b read null.
  const DataType same_names =
      DataType::Struct({WithId({"a", DataType::Int32()}, 1), WithId({"b", DataType::Int32()}, 4)});
  ASSERT_EQ(same_names, from);
  const DataType list_from = DataType::List({"item", from});
  const Array l = Array::MakeNested(list_from, 2, {nullptr, testing::Int32Buffer({0, 3, 4})}, {s});
  auto renumbered = Cast(l, DataType::List({"item", same_names}));
  ASSERT_TRUE(renumbered.ok()) << renumbered.status().ToString();
  ASSERT_TRUE(renumbered->Validate().ok());
  const Array items = renumbered->child(0);
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(items.child(1).IsNull(i)) << i;
    EXPECT_EQ(items.child(0).IsNull(i), a.IsNull(i));
  }
  EXPECT_EQ(items.child(0).Value<int32_t>(3), 4);
  // Without ids on both sides structs still cast by position.
  auto positional = Cast(s, DataType::Struct({{"a", DataType::Int64()}, {"b", DataType::Int64()}}));
  ASSERT_TRUE(positional.ok()) << positional.status().ToString();
  EXPECT_EQ(positional->child(1).Value<int64_t>(3), 40);
}

TEST(MakeNullArrayTest, EveryKindOfType) {
  for (const char* name : {"bool", "int8", "int64", "double", "string", "binary", "date32[day]",
                           "timestamp[us, tz=UTC]", "decimal128(10, 2)", "fixed_size_binary[3]",
                           "list<item: int64>", "struct<a: int32, b: list<item: string>>",
                           "map<string, int64>", "fixed_size_list<item: int32>[2]"}) {
    const DataType type = DataType::Parse(name).ValueOrDie();
    Array nulls = MakeNullArray(type, 5).ValueOrDie();
    EXPECT_EQ(nulls.type(), type) << name;
    EXPECT_EQ(nulls.length(), 5) << name;
    EXPECT_EQ(nulls.null_count(), 5) << name;
    EXPECT_TRUE(nulls.Validate().ok()) << name << ": " << nulls.Validate().ToString();
    EXPECT_TRUE(nulls.IsNull(4)) << name;
  }
}

}  // namespace
}  // namespace oxbow::arrow
