#include "oxbow/text/text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "oxbow/arrow/builder.h"
#include "oxbow/testing/nested.h"

namespace oxbow::text {
namespace {

using arrow::Array;
using arrow::DataType;
using arrow::Field;
using arrow::RecordBatch;
using arrow::RecordBatchPtr;
using arrow::Schema;
using arrow::SchemaPtr;
using arrow::TimeUnit;

template <typename T>
T Unwrap(Result<T> r) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).ValueOrDie();
}

template <typename B, typename V>
Array Build(B builder, std::vector<std::optional<V>> values) {
  for (const auto& v : values) {
    if (v) {
      EXPECT_TRUE(builder.Append(*v).ok());
    } else {
      EXPECT_TRUE(builder.AppendNull().ok());
    }
  }
  return *builder.Finish();
}

// Three rows of every type; row 1 is all nulls.
RecordBatchPtr Sample() {
  std::vector<Field> fields = {
      {"b", DataType::Bool()},
      {"i8", DataType::Int8()},
      {"u64", DataType::UInt64()},
      {"i64", DataType::Int64()},
      {"f32", DataType::Float32()},
      {"f64", DataType::Float64()},
      {"s", DataType::String()},
      {"bin", DataType::Binary()},
      {"d", DataType::Date32()},
      {"ts", DataType::Timestamp(TimeUnit::kMicro, "UTC")},
      {"dec", DataType::Decimal128(10, 2)},
      {"fsb", DataType::FixedSizeBinary(2)},
  };
  auto schema = std::make_shared<const Schema>(fields);
  arrow::FixedSizeBinaryBuilder dec(DataType::Decimal128(10, 2));
  EXPECT_TRUE(dec.AppendDecimal(-12345).ok());
  EXPECT_TRUE(dec.AppendNull().ok());
  EXPECT_TRUE(dec.AppendDecimal(5).ok());
  std::vector<Array> cols = {
      Build(arrow::BooleanBuilder(), std::vector<std::optional<bool>>{true, {}, false}),
      Build(arrow::Int8Builder(DataType::Int8()),
            std::vector<std::optional<int8_t>>{-128, {}, 127}),
      Build(arrow::UInt64Builder(DataType::UInt64()),
            std::vector<std::optional<uint64_t>>{18446744073709551615ull, {}, 0}),
      Build(arrow::Int64Builder(DataType::Int64()),
            std::vector<std::optional<int64_t>>{INT64_MIN, {}, 9007199254740993}),
      Build(arrow::FloatBuilder(DataType::Float32()),
            std::vector<std::optional<float>>{0.1f, {}, -INFINITY}),
      Build(arrow::DoubleBuilder(DataType::Float64()),
            std::vector<std::optional<double>>{2.5, {}, NAN}),
      Build(arrow::BinaryBuilder(DataType::String()),
            std::vector<std::optional<std::string>>{"a,\"b\"\nc", {}, ""}),
      Build(arrow::BinaryBuilder(DataType::Binary()),
            std::vector<std::optional<std::string>>{std::string("\0\xff", 2), {}, ""}),
      Build(arrow::Int32Builder(DataType::Date32()),
            std::vector<std::optional<int32_t>>{19782, {}, -1}),
      Build(arrow::Int64Builder(DataType::Timestamp(TimeUnit::kMicro, "UTC")),
            std::vector<std::optional<int64_t>>{1500, {}, -1}),
      *dec.Finish(),
      Build(arrow::FixedSizeBinaryBuilder(DataType::FixedSizeBinary(2)),
            std::vector<std::optional<std::string>>{"ab", {}, std::string("\0\0", 2)}),
  };
  return *RecordBatch::Make(schema, 3, cols);
}

TEST(TextWriterTest, JsonLines) {
  auto text = *FormatBatch(TextFormat::kJsonLines, *Sample());
  EXPECT_EQ(text,
            "{\"b\":true,\"i8\":-128,\"u64\":18446744073709551615,\"i64\":-9223372036854775808,"
            "\"f32\":0.1,\"f64\":2.5,\"s\":\"a,\\\"b\\\"\\nc\",\"bin\":\"AP8=\",\"d\":\"2024-02-"
            "29\",\"ts\":\"1970-01-01T00:00:00.001500Z\",\"dec\":\"-123.45\",\"fsb\":\"YWI=\"}\n"
            "{\"b\":null,\"i8\":null,\"u64\":null,\"i64\":null,\"f32\":null,\"f64\":null,\"s\":"
            "null,\"bin\":null,\"d\":null,\"ts\":null,\"dec\":null,\"fsb\":null}\n"
            "{\"b\":false,\"i8\":127,\"u64\":0,\"i64\":9007199254740993,\"f32\":\"-Infinity\","
            "\"f64\":\"NaN\",\"s\":\"\",\"bin\":\"\",\"d\":\"1969-12-31\",\"ts\":\"1969-12-31T23:"
            "59:59.999999Z\",\"dec\":\"0.05\",\"fsb\":\"AAA=\"}\n");
}

TEST(TextWriterTest, Csv) {
  auto batch = Sample();
  auto text = *FormatBatch(TextFormat::kCsv, **batch->SelectColumns({0, 6, 10}));
  EXPECT_EQ(text, "b,s,dec\ntrue,\"a,\"\"b\"\"\nc\",-123.45\n,,\nfalse,\"\",0.05\n");
}

TEST(TextWriterTest, TableAlignsColumns) {
  auto batch = Sample();
  auto text = *FormatBatch(TextFormat::kTable, **batch->SelectColumns({1, 6, 7}));
  EXPECT_EQ(text,
            "  i8  s         bin\n"
            "----  --------  ------\n"
            "-128  a,\"b\"\\nc  0x00ff\n"
            "null  null      null\n"
            " 127            0x\n");
}

TEST(TextWriterTest, TableCutsWideCells) {
  auto schema = std::make_shared<const Schema>(std::vector<Field>{{"s", DataType::String()}});
  auto col = Build(arrow::BinaryBuilder(DataType::String()),
                   std::vector<std::optional<std::string>>{"abcdefghij"});
  auto batch = *RecordBatch::Make(schema, 1, {col});
  WriteOptions options;
  options.max_cell_width = 5;
  EXPECT_EQ(*FormatBatch(TextFormat::kTable, *batch, options), "s\n-----\nabcd…\n");
}

TEST(TextReaderTest, RoundTripsEveryTypeThroughJsonAndCsv) {
  auto batch = Sample();
  for (auto format : {TextFormat::kJsonLines, TextFormat::kCsv}) {
    auto text = *FormatBatch(format, *batch);
    ReadOptions options;
    options.batch_rows = 2;
    auto reader = TextReader::Make(format, text, batch->schema(), options);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    auto batches = (*reader)->ReadAll();
    ASSERT_TRUE(batches.ok()) << batches.status().ToString();
    ASSERT_EQ(batches->size(), 2u);
    EXPECT_EQ((*batches)[0]->num_rows(), 2);
    EXPECT_TRUE((*batches)[0]->Equals(*batch->Slice(0, 2))) << TextFormatName(format);
    // NaN compares unequal to itself in Equals, so check the last row by its text.
    EXPECT_EQ(*FormatBatch(format, *(*batches)[1]), *FormatBatch(format, *batch->Slice(2, 1)));
  }
}

Status ReadError(TextFormat format, std::string_view text, SchemaPtr schema) {
  auto reader = TextReader::Make(format, text, std::move(schema));
  if (!reader.ok()) return reader.status();
  return (*reader)->ReadAll().status();
}

TEST(TextReaderTest, ErrorsNameLineAndColumn) {
  auto schema = std::make_shared<const Schema>(
      std::vector<Field>{{"id", DataType::Int32(), false}, {"price", DataType::Decimal128(5, 2)}});
  auto st =
      ReadError(TextFormat::kJsonLines, "{\"id\":1}\n\n{\"id\":2,\"price\":\"1.234\"}\n", schema);
  EXPECT_EQ(st.message(),
            "line 3, column 'price': '1.234' has more fractional digits than decimal128(5, 2) "
            "allows");
  st = ReadError(TextFormat::kJsonLines, "{\"price\":\"1.2\"}\n", schema);
  EXPECT_EQ(st.message(), "line 1, column 'id': null in a not-null column");
  st = ReadError(TextFormat::kJsonLines, "{\"id\":1,\"x\":2}\n", schema);
  EXPECT_EQ(st.message(), "line 1: unknown field 'x' (the schema has id, price)");
  st = ReadError(TextFormat::kJsonLines, "{\"id\":1,\n", schema);
  EXPECT_EQ(st.message(), "line 1: expected a string key at character 9");
  st = ReadError(TextFormat::kJsonLines, "{\"id\":99999999999}\n", schema);
  EXPECT_EQ(st.message(), "line 1, column 'id': 99999999999 is out of range for int32");
  st = ReadError(TextFormat::kCsv, "id,price\n1,2\n3\n", schema);
  EXPECT_EQ(st.message(), "line 3: expected 2 fields, found 1");
  st = ReadError(TextFormat::kCsv, "id,price\n1,\"2\n", schema);
  EXPECT_EQ(st.message(), "line 2: unterminated quoted field");
  st = ReadError(TextFormat::kCsv, "price\n1\n", schema);
  EXPECT_EQ(st.message(), "not-null column 'id' is missing from the CSV header");
  st = ReadError(TextFormat::kCsv, "id,price\nx,1\n", schema);
  EXPECT_EQ(st.message(), "line 2, column 'id': cannot parse 'x' as an integer");
  st = ReadError(TextFormat::kCsv, "", schema);
  EXPECT_EQ(st.message(), "CSV input is empty: a header row is required");
}

TEST(TextReaderTest, CsvQuotingAndNulls) {
  auto schema = std::make_shared<const Schema>(
      std::vector<Field>{{"s", DataType::String()}, {"n", DataType::Int64()}});
  auto reader = Unwrap(TextReader::Make(
      TextFormat::kCsv, "s,n\r\n\"multi\r\nline\",1\r\n\"\",\r\n,\"\"\r\n", schema));
  auto batch = *reader->Next();
  ASSERT_TRUE(batch);
  ASSERT_EQ(batch->num_rows(), 3);
  EXPECT_EQ(batch->column(0).GetView(0), "multi\r\nline");
  EXPECT_TRUE(batch->column(0).IsValid(1));
  EXPECT_EQ(batch->column(0).GetView(1), "");
  EXPECT_TRUE(batch->column(0).IsNull(2));
  EXPECT_EQ(batch->column(1).Value<int64_t>(0), 1);
  EXPECT_TRUE(batch->column(1).IsNull(1));
  EXPECT_TRUE(batch->column(1).IsNull(2));
  EXPECT_FALSE(*reader->Next());
}

TEST(TextReaderTest, JsonEscapesAndUnknownFields) {
  auto schema = std::make_shared<const Schema>(std::vector<Field>{{"s", DataType::String()}});
  ReadOptions options;
  options.ignore_unknown_fields = true;
  auto reader = Unwrap(TextReader::Make(TextFormat::kJsonLines,
                                        "{\"x\":1, \"s\":\"a\\u00e9\\ud83d\\ude00\\n\"}\r\n",
                                        schema, options));
  auto batch = *reader->Next();
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->column(0).GetView(0), "a\xC3\xA9\xF0\x9F\x98\x80\n");
}

TEST(TextReaderTest, RoundTripsNestedValues) {
  const RecordBatchPtr batch = testing::NestedBatch(/*with_fixed_size_list=*/true);
  for (auto format : {TextFormat::kJsonLines, TextFormat::kCsv}) {
    const std::string text = Unwrap(FormatBatch(format, *batch));
    auto reader = Unwrap(TextReader::Make(format, text, batch->schema()));
    auto batches = Unwrap(reader->ReadAll());
    ASSERT_EQ(batches.size(), 1u);
    ASSERT_TRUE(batches[0]->Validate().ok());
    // Children under a null parent may differ (null rather than a valid empty value), so the
    // rows are compared by their text and element by element.
    EXPECT_EQ(Unwrap(FormatBatch(format, *batches[0])), text) << TextFormatName(format);
    for (int c = 0; c < batch->num_columns(); ++c) {
      for (int64_t i = 0; i < batch->num_rows(); ++i) {
        EXPECT_TRUE(batches[0]->column(c).ElementEquals(i, batch->column(c), i)) << c << " " << i;
      }
    }
  }
}

TEST(TextReaderTest, NestedErrorsNameThePlace) {
  auto schema = std::make_shared<const Schema>(std::vector<Field>{
      {"s", DataType::Struct({{"a", DataType::Int32(), false},
                              {"l", DataType::List({"item", DataType::Int32()})}})},
      {"f", DataType::FixedSizeList({"item", DataType::Int32()}, 2)},
      {"m", DataType::Map(DataType::Int32(), DataType::String())}});
  EXPECT_EQ(ReadError(TextFormat::kJsonLines, "{\"s\": {\"l\": [1]}}\n", schema).message(),
            "line 1, column 's': field 'a': null in a not-null column");
  EXPECT_EQ(ReadError(TextFormat::kJsonLines, "{\"s\": {\"a\": 1, \"l\": [1, \"x\"]}}\n", schema)
                .message(),
            "line 1, column 's': field 'l': item 1: cannot parse 'x' as an integer");
  EXPECT_EQ(ReadError(TextFormat::kJsonLines, "{\"f\": [1, 2, 3]}\n", schema).message(),
            "line 1, column 'f': expected 2 items for fixed_size_list<item: int32>[2], got 3");
  EXPECT_EQ(ReadError(TextFormat::kJsonLines, "{\"m\": {\"k\": \"v\"}}\n", schema).message(),
            "line 1, column 'm': map key 'k': cannot parse 'k' as an integer");
  EXPECT_EQ(
      ReadError(TextFormat::kCsv, "m\n\"{\"\"1\"\": [2]}\"\n", schema).message(),
      "line 2, column 'm': map value of '1': expected a scalar for string, got a JSON object or "
      "array");
  EXPECT_EQ(ReadError(TextFormat::kJsonLines, "{\"f\": [1, 2}\n", schema).message(),
            "line 1: unexpected '}' at character 12");
  EXPECT_EQ(ReadError(TextFormat::kCsv, "f\n\"[1, 2] x\"\n", schema).message(),
            "line 2, column 'f': unexpected text after the JSON value at character 8");
  // A map may also be [[key, value], ...] (json.dumps of pyarrow's to_pylist()).
  auto pairs = Unwrap(TextReader::Make(TextFormat::kJsonLines,
                                       "{\"m\": [[1, \"a\"], [2, null]]}\n{\"m\": []}\n", schema));
  EXPECT_EQ(Unwrap(FormatBatch(TextFormat::kJsonLines, *Unwrap(pairs->Next()))),
            "{\"s\":null,\"f\":null,\"m\":{\"1\":\"a\",\"2\":null}}\n"
            "{\"s\":null,\"f\":null,\"m\":{}}\n");
  EXPECT_EQ(ReadError(TextFormat::kJsonLines, "{\"m\": [[1]]}\n", schema).message(),
            "line 1, column 'm': expected ',' after the map key at character 4");
  // A JSON null inside is null; a null struct's not-null child gets an empty value.
  auto reader = Unwrap(TextReader::Make(
      TextFormat::kJsonLines, "{\"s\": null, \"f\": [null, 4], \"m\": {\"3\": null}}\n", schema));
  auto batch = Unwrap(reader->Next());
  ASSERT_TRUE(batch && batch->Validate().ok());
  EXPECT_TRUE(batch->column(0).IsNull(0));
  EXPECT_EQ(Unwrap(FormatBatch(TextFormat::kJsonLines, *batch)),
            "{\"s\":null,\"f\":[null,4],\"m\":{\"3\":null}}\n");
}

TEST(InferSchemaTest, Csv) {
  auto schema =
      *InferSchema(TextFormat::kCsv, "a,b,c,d,e,f\n1,1.5,true,x,,1\n-2,3,FALSE,4,,true\n");
  EXPECT_EQ(schema->ToString(), "a: int64\nb: double\nc: bool\nd: string\ne: string\nf: string");
}

TEST(InferSchemaTest, JsonLines) {
  auto schema = *InferSchema(TextFormat::kJsonLines,
                             "{\"a\":1,\"b\":1,\"c\":true}\n{\"b\":2.5,\"d\":\"x\",\"e\":null}\n"
                             "{\"a\":\"s\"}\n");
  EXPECT_EQ(schema->ToString(), "a: string\nb: double\nc: bool\nd: string\ne: string");
  auto reader =
      Unwrap(TextReader::Make(TextFormat::kJsonLines, "{\"a\":1}\n{\"a\":\"s\"}\n", nullptr));
  auto batch = *reader->Next();
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->column(0).GetView(0), "1");
  EXPECT_EQ(batch->column(0).GetView(1), "s");
  auto nested = InferSchema(TextFormat::kJsonLines, "{\"a\":1}\n{\"a\":2,\"l\":[1]}\n");
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.status().message(),
            "line 2: key 'l' holds a JSON object or array; inference reads flat values only, so "
            "give the schema");
}

TEST(InferSchemaTest, LaterRowsThatDoNotFitFailWithTheirLine) {
  ReadOptions options;
  options.infer_rows = 1;
  auto reader = Unwrap(TextReader::Make(TextFormat::kCsv, "a\n1\nx\n", nullptr, options));
  auto batch = reader->Next();
  EXPECT_EQ(batch.status().message(), "line 3, column 'a': cannot parse 'x' as an integer");
}

TEST(FormatSchemaTest, MatchesPyarrow) {
  Schema schema({{"a", DataType::Int64(), false, {{"PARQUET:field_id", "1"}, {"k", "x y"}}},
                 {"b", DataType::Timestamp(TimeUnit::kNano, "+01:00")},
                 {"c", DataType::Decimal128(38, 10), true, {{"kk", std::string(70, 'v')}}}},
                {{"m", "v"}});
  EXPECT_EQ(FormatSchema(schema),
            "a: int64 not null\n  -- field metadata --\n  PARQUET:field_id: '1'\n  k: 'x y'\n"
            "b: timestamp[ns, tz=+01:00]\nc: decimal128(38, 10)\n  -- field metadata --\n"
            "  kk: '" +
                std::string(66, 'v') + "' + 4\n-- schema metadata --\nm: 'v'");
}

}  // namespace
}  // namespace oxbow::text
