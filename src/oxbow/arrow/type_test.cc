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
