#include "oxbow/iceberg/avro.h"

#include <gtest/gtest.h>

#include <limits>

namespace oxbow::iceberg {
namespace {

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

TEST(AvroEncoding, ZigZagVarintsMatchTheSpec) {
  // The spec's table: 0 -> 00, -1 -> 01, 1 -> 02, -2 -> 03, 2 -> 04, -64 -> 7f, 64 -> 80 01.
  const std::vector<std::pair<int64_t, std::string>> cases = {
      {0, Bytes({0x00})},        {-1, Bytes({0x01})},        {1, Bytes({0x02})},
      {-2, Bytes({0x03})},       {2, Bytes({0x04})},         {-64, Bytes({0x7f})},
      {64, Bytes({0x80, 0x01})}, {-65, Bytes({0x81, 0x01})}, {8192, Bytes({0x80, 0x80, 0x01})}};
  for (const auto& [value, expected] : cases) {
    std::string out;
    AppendAvroLong(&out, value);
    EXPECT_EQ(out, expected) << value;
    AvroDecoder d(out);
    EXPECT_EQ(*d.ReadLong(), value);
  }
  for (int64_t v : {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}) {
    std::string out;
    AppendAvroLong(&out, v);
    EXPECT_EQ(out.size(), 10u);
    AvroDecoder d(out);
    EXPECT_EQ(*d.ReadLong(), v);
  }
}

TEST(AvroEncoding, StringsFloatsAndBounds) {
  std::string out;
  AppendAvroBytes(&out, "foo");
  EXPECT_EQ(out, Bytes({0x06, 'f', 'o', 'o'}));
  out.clear();
  AppendAvroDouble(&out, 1.0);
  EXPECT_EQ(out, Bytes({0, 0, 0, 0, 0, 0, 0xf0, 0x3f}));
  // A length past the end, an overlong varint and a bad boolean are errors, not crashes.
  const std::string short_input = Bytes({0x08, 'a'});
  AvroDecoder short_bytes(short_input);
  EXPECT_TRUE(short_bytes.ReadBytes().status().IsCorruption());
  const std::string overlong_input(11, '\xff');
  AvroDecoder overlong(overlong_input);
  EXPECT_TRUE(overlong.ReadLong().status().IsCorruption());
  const std::string bad_bool_input = Bytes({0x02});
  AvroDecoder bad_bool(bad_bool_input);
  EXPECT_TRUE(bad_bool.ReadBoolean().status().IsCorruption());
}

TEST(AvroSchema, KeepsIcebergAttributes) {
  auto schema = ParseAvroSchema(R"({"type":"record","name":"r","fields":[
      {"name":"a","type":"int","field-id":7},
      {"name":"m","type":["null",{"type":"array","logicalType":"map","items":{"type":"record",
        "name":"k1_v2","fields":[{"name":"key","type":"int","field-id":1},
        {"name":"value","type":"bytes","field-id":2}]}}],"default":null,"field-id":8},
      {"name":"l","type":{"type":"array","items":"long","element-id":9},"field-id":10},
      {"name":"again","type":"k1_v2","field-id":11}]})");
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  const AvroNode& r = **schema;
  ASSERT_EQ(r.fields.size(), 4u);
  EXPECT_EQ(r.fields[0].field_id, 7);
  EXPECT_EQ(r.FieldIndexById(8), 1);
  const AvroNode& map = r.fields[1].type->NonNull();
  EXPECT_EQ(map.logical_type, "map");
  EXPECT_EQ(map.items->fields[1].field_id, 2);
  EXPECT_EQ(r.fields[2].type->element_id, 9);
  EXPECT_EQ(r.fields[3].type->name, "k1_v2");  // a reference to a named type
  EXPECT_FALSE(ParseAvroSchema(R"({"type":"record","name":"x","fields":[{"name":"s","type":"x"}]})")
                   .ok());  // recursion
  EXPECT_FALSE(ParseAvroSchema("{").ok());
  EXPECT_FALSE(ParseAvroSchema(R"({"type":"nope"})").ok());
}

TEST(AvroValue, EncodesRecordsUnionsArraysAndMaps) {
  auto schema = *ParseAvroSchema(R"({"type":"record","name":"r","fields":[
      {"name":"a","type":["null","long"]},
      {"name":"b","type":{"type":"array","items":"int"}},
      {"name":"c","type":{"type":"map","values":"string"}},
      {"name":"d","type":{"type":"fixed","name":"f2","size":2}}]})");
  AvroValue map;
  map.type = AvroType::kMap;
  map.entries.emplace_back("k", AvroValue::String("v"));
  AvroValue v = AvroValue::Record({AvroValue::Long(-3),
                                   AvroValue::Array({AvroValue::Int(1), AvroValue::Int(2)}), map,
                                   AvroValue::Fixed("xy")});
  std::string out;
  ASSERT_TRUE(EncodeAvroValue(*schema, v, &out).ok());
  // union branch 1, -3; array block of 2: 1, 2, end; map block of 1: "k" "v", end; "xy".
  EXPECT_EQ(
      out, Bytes({0x02, 0x05, 0x04, 0x02, 0x04, 0x00, 0x02, 0x02, 'k', 0x02, 'v', 0x00, 'x', 'y'}));
  AvroDecoder d(out);
  auto back = DecodeAvroValue(*schema, &d);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->items[0].i, -3);
  EXPECT_EQ(back->items[0].branch, 1);
  EXPECT_EQ(back->items[1].items[1].i, 2);
  EXPECT_EQ(back->items[2].entries[0].second.bytes, "v");
  EXPECT_EQ(back->items[3].bytes, "xy");

  AvroValue null_a = v;
  null_a.items[0] = AvroValue::Null();
  out.clear();
  ASSERT_TRUE(EncodeAvroValue(*schema, null_a, &out).ok());
  EXPECT_EQ(out[0], 0x00);
  AvroValue wrong = v;
  wrong.items[3] = AvroValue::Fixed("xyz");
  EXPECT_FALSE(EncodeAvroValue(*schema, wrong, &out).ok());

  // Arrays written as a negative count with a byte size decode too.
  auto array_schema = *ParseAvroSchema(R"({"type":"array","items":"long"})");
  const std::string neg_input = Bytes({0x03, 0x04, 0x02, 0x04, 0x00});  // -2 items, 2 bytes
  AvroDecoder neg(neg_input);
  auto arr = DecodeAvroValue(*array_schema, &neg);
  ASSERT_TRUE(arr.ok());
  ASSERT_EQ(arr->items.size(), 2u);
  EXPECT_EQ(arr->items[1].i, 2);
}

class AvroContainer : public ::testing::TestWithParam<AvroCodec> {};

TEST_P(AvroContainer, RoundTripsWithMetadataAndSchemaVerbatim) {
  const std::string schema_json =
      R"({"type":"record","name":"e","fields":[{"name":"x","type":"long","field-id":500}]})";
  AvroWriterOptions options;
  options.codec = GetParam();
  options.block_bytes = 64;  // several blocks
  auto writer = AvroFileWriter::Make(schema_json, {{"format-version", "2"}}, options);
  ASSERT_TRUE(writer.ok());
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE((*writer)->Append(AvroValue::Record({AvroValue::Long(i * 1000)})).ok());
  auto bytes = (*writer)->Finish();
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->substr(0, 4), std::string("Obj\x01", 4));
  auto file = ReadAvroFile(*bytes);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->schema_json, schema_json);
  EXPECT_EQ(file->Metadata("format-version"), "2");
  EXPECT_EQ(file->Metadata("avro.codec"), GetParam() == AvroCodec::kDeflate ? "deflate" : "null");
  ASSERT_EQ(file->records.size(), 100u);
  EXPECT_EQ(file->records[99].items[0].i, 99000);

  // Every truncation and every single-byte corruption is an error or a clean read.
  for (size_t cut = 0; cut < bytes->size(); cut += 7) {
    auto r = ReadAvroFile(std::string_view(*bytes).substr(0, cut));
    if (r.ok()) {
      EXPECT_LE(r->records.size(), 100u);
    }
  }
  for (size_t at = 0; at < bytes->size(); at += 3) {
    std::string bad = *bytes;
    bad[at] ^= 0x5a;
    auto r = ReadAvroFile(bad);
    if (r.ok()) {
      EXPECT_LE(r->records.size(), 100u);
    }
  }
  EXPECT_TRUE(ReadAvroFile("Obj").status().IsCorruption());
}

INSTANTIATE_TEST_SUITE_P(Codecs, AvroContainer,
                         ::testing::Values(AvroCodec::kNull, AvroCodec::kDeflate));

TEST(AvroSchema, NamesThatAreNotStringsAreInvalid) {
  // A "name" that is not a string used to throw nlohmann's type_error out of the parser.
  EXPECT_TRUE(ParseAvroSchema(R"({"type":"record","name":7,"fields":[]})").status().IsInvalid());
  EXPECT_TRUE(ParseAvroSchema(R"({"type":"fixed","name":null,"size":4})").status().IsInvalid());
}

TEST(AvroContainer, RejectsReservedMetadataKeys) {
  EXPECT_FALSE(AvroFileWriter::Make(R"("long")", {{"avro.codec", "x"}}).ok());
}

}  // namespace
}  // namespace oxbow::iceberg
