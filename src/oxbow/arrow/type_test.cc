#include "oxbow/arrow/type.h"

#include <gtest/gtest.h>

#include "oxbow/arrow/schema.h"

namespace oxbow::arrow {
namespace {

TEST(DataTypeTest, RoundTripsPyarrowNames) {
  for (const char* name : {"bool",
                           "int8",
                           "int16",
                           "int32",
                           "int64",
                           "uint8",
                           "uint16",
                           "uint32",
                           "uint64",
                           "float",
                           "double",
                           "string",
                           "binary",
                           "date32[day]",
                           "timestamp[s]",
                           "timestamp[ms]",
                           "timestamp[us, tz=UTC]",
                           "timestamp[ns, tz=Europe/Paris]",
                           "decimal128(10, 2)",
                           "decimal128(38, 0)",
                           "fixed_size_binary[16]"}) {
    auto t = DataType::Parse(name);
    ASSERT_TRUE(t.ok()) << name << ": " << t.status().ToString();
    EXPECT_EQ(t->ToString(), name);
  }
}

TEST(DataTypeTest, RoundTripsNestedNames) {
  for (const char* name : {"list<item: int64>", "list<item: int64 not null>",
                           "list<x: list<item: string>>", "struct<a: int32, b: string not null>",
                           "struct<>", "struct<a: struct<b: list<item: timestamp[us, tz=UTC]>>>",
                           "map<string, int64>", "map<int32, list<item: double>>",
                           "map<string, int64 not null>", "fixed_size_list<item: int32>[3]",
                           "fixed_size_list<item: decimal128(10, 2) not null>[0]"}) {
    auto t = DataType::Parse(name);
    ASSERT_TRUE(t.ok()) << name << ": " << t.status().ToString();
    EXPECT_EQ(t->ToString(), name);
    EXPECT_TRUE(t->Validate().ok());
  }
}

TEST(DataTypeTest, NestedShortFormsAndEquality) {
  EXPECT_EQ(DataType::Parse("list<int64>")->ToString(), "list<item: int64>");
  EXPECT_EQ(DataType::Parse("fixed_size_list<int32>[3]")->ToString(),
            "fixed_size_list<item: int32>[3]");
  // List item and map entry names do not matter; struct field names and nullability do.
  EXPECT_EQ(*DataType::Parse("list<element: int64>"), *DataType::Parse("list<item: int64>"));
  EXPECT_NE(*DataType::Parse("list<int64 not null>"), *DataType::Parse("list<int64>"));
  EXPECT_NE(*DataType::Parse("struct<a: int64>"), *DataType::Parse("struct<b: int64>"));
  EXPECT_NE(*DataType::Parse("fixed_size_list<int8>[2]"),
            *DataType::Parse("fixed_size_list<int8>[3]"));
  const DataType t = *DataType::Parse("struct<a: list<int8>, m: map<string, int8>>");
  EXPECT_EQ(t.num_nodes_in_tree(), 7);     // s, a, a.item, m, entries, key, value
  EXPECT_EQ(t.num_buffers_in_tree(), 13);  // 1 + 2 + 2 + 2 + 1 + 3 + 2
}

TEST(DataTypeTest, RefusesBadNestedNames) {
  for (const char* bad : {"list<int64", "list<>", "struct<int32>", "struct<a: int32, a: int8>",
                          "map<string>", "map<string, int8, int8>", "fixed_size_list<int32>",
                          "fixed_size_list<int32>[-1]", "list<: int8>", "large_list<int8>"}) {
    EXPECT_FALSE(DataType::Parse(bad).ok()) << bad;
  }
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += "list<";
  deep += "int8";
  for (int i = 0; i < 40; ++i) deep += ">";
  auto st = DataType::Parse(deep).status();
  EXPECT_NE(st.message().find("deeper than"), std::string::npos) << st.ToString();
}

TEST(DataTypeTest, AcceptsAliases) {
  EXPECT_EQ(DataType::Parse("float32")->id(), TypeId::kFloat32);
  EXPECT_EQ(DataType::Parse("float64")->id(), TypeId::kFloat64);
  EXPECT_EQ(DataType::Parse("utf8")->id(), TypeId::kString);
  EXPECT_EQ(DataType::Parse(" date32 ")->id(), TypeId::kDate32);
  EXPECT_EQ(*DataType::Parse("decimal128(5,1)"), DataType::Decimal128(5, 1));
}

TEST(DataTypeTest, RejectsWithClearErrors) {
  EXPECT_EQ(DataType::Parse("int65").status().message(), "unknown type 'int65'");
  EXPECT_TRUE(DataType::Parse("timestamp[fortnight]").status().IsInvalid());
  EXPECT_TRUE(DataType::Parse("decimal128(40, 2)").status().IsInvalid());
  EXPECT_TRUE(DataType::Parse("decimal128(10)").status().IsInvalid());
  EXPECT_TRUE(DataType::Parse("fixed_size_binary[-1]").status().IsInvalid());
  EXPECT_TRUE(DataType::Parse("timestamp[us, zone=UTC]").status().IsInvalid());
}

TEST(DataTypeTest, EqualityConsidersParameters) {
  EXPECT_NE(DataType::Timestamp(TimeUnit::kMicro), DataType::Timestamp(TimeUnit::kMicro, "UTC"));
  EXPECT_NE(DataType::Decimal128(10, 2), DataType::Decimal128(10, 3));
  EXPECT_EQ(DataType::FixedSizeBinary(4), DataType::FixedSizeBinary(4));
  EXPECT_EQ(DataType::Decimal128(10, 2).bit_width(), 128);
}

TEST(SchemaTest, SelectAndValidate) {
  Schema s({{"id", DataType::Int64(), false, {{"PARQUET:field_id", "1"}}},
            {"name", DataType::String()}});
  EXPECT_TRUE(s.Validate().ok());
  EXPECT_EQ(s.GetFieldIndex("name"), 1);
  EXPECT_EQ(s.GetFieldIndex("nope"), -1);
  auto sel = s.Select({1, 0}).ValueOrDie();
  EXPECT_EQ(sel->ToString(), "name: string\nid: int64 not null");
  EXPECT_EQ(FindMetadata(sel->field(1).metadata, "PARQUET:field_id"), "1");
  EXPECT_TRUE(s.Select({2}).status().IsOutOfRange());
  Schema dup({{"a", DataType::Int8()}, {"a", DataType::Int8()}});
  EXPECT_EQ(dup.Validate().message(), "duplicate field name 'a'");
}

}  // namespace
}  // namespace oxbow::arrow
