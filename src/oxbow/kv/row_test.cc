#include "oxbow/kv/row.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "oxbow/arrow/builder.h"
#include "oxbow/arrow/compute.h"
#include "oxbow/kv/row_testing.h"
#include "oxbow/testing/every_type.h"
#include "oxbow/testing/nested.h"
#include "oxbow/text/text.h"

namespace oxbow::kv {
namespace {

using arrow::DataType;
using arrow::TypeId;

// Row `r` of every column of `batch`.
Row RowAt(const arrow::RecordBatch& batch, int64_t r) {
  Row row;
  for (const auto& column : batch.columns()) row.push_back(CellAt(column, r));
  return row;
}

// A format whose only version is `schema` (id `id`).
RowFormat SingleVersion(const arrow::SchemaPtr& schema, int32_t id = 0) {
  std::vector<int32_t> ids;
  for (int i = 0; i < schema->num_fields(); ++i) ids.push_back(i + 1);
  return *RowFormat::Make({{id, schema, ids}});
}

void AppendLeb128(uint64_t v, std::string* out) {
  for (; v >= 0x80; v >>= 7) out->push_back(static_cast<char>((v & 0x7F) | 0x80));
  out->push_back(static_cast<char>(v));
}

// The first, untagged format, built by hand: a LEB128 column count, the null bitmap, then the
// non-null values (variable length: LEB128 length first).
std::string FirstFormat(const Row& row, const arrow::Schema& schema) {
  std::string out;
  AppendLeb128(row.size(), &out);
  std::string bitmap((row.size() + 7) / 8, '\0');
  std::string values;
  for (size_t i = 0; i < row.size(); ++i) {
    if (row[i].null) {
      bitmap[i / 8] = static_cast<char>(bitmap[i / 8] | (1 << (i % 8)));
      continue;
    }
    const TypeId id = schema.field(static_cast<int>(i)).type.id();
    if (id == TypeId::kString || id == TypeId::kBinary) AppendLeb128(row[i].bytes.size(), &values);
    values += row[i].bytes;
  }
  return out + bitmap + values;
}

// `batch` (of version `from`) converted to the current version of `versions` column by column
// with arrow::Cast and null columns, as the log converts batches: what decoding its rows must give.
arrow::RecordBatchPtr ConvertedBatch(const arrow::RecordBatch& batch,
                                     const catalog::SchemaVersion& from,
                                     const catalog::SchemaVersion& to) {
  std::vector<arrow::Array> columns;
  for (int c = 0; c < to.schema->num_fields(); ++c) {
    const auto found = std::find(from.field_ids.begin(), from.field_ids.end(),
                                 to.field_ids[static_cast<size_t>(c)]);
    const arrow::DataType& type = to.schema->field(c).type;
    if (found == from.field_ids.end()) {
      columns.push_back(*arrow::MakeNullArray(type, batch.num_rows()));
    } else {
      columns.push_back(
          *arrow::Cast(batch.column(static_cast<int>(found - from.field_ids.begin())), type));
    }
  }
  return *arrow::RecordBatch::Make(to.schema, batch.num_rows(), std::move(columns));
}

TEST(RowTest, EncodeDecodeRoundTripsEveryType) {
  auto schema = testing::EveryTypeSchema();
  const RowFormat format = SingleVersion(schema, 300);
  auto batch = testing::RandomBatch(schema, 500, 7);
  for (int64_t r = 0; r < batch->num_rows(); ++r) {
    const Row row = RowAt(*batch, r);
    std::string encoded;
    format.Encode(row, &encoded);
    // The tag 00, then the schema id in LEB128 (300: AC 02).
    ASSERT_EQ(encoded.substr(0, 3), std::string("\x00\xAC\x02", 3));
    auto decoded = format.Decode(encoded);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, row) << "row " << r;
  }
}

TEST(RowTest, BuilderRebuildsTheBatch) {
  auto schema = testing::EveryTypeSchema();
  auto batch = testing::RandomBatch(schema, 300, 11);
  std::vector<int> all;
  for (int i = 0; i < schema->num_fields(); ++i) all.push_back(i);
  auto builder = RowBatchBuilder::Make(schema, all);
  ASSERT_TRUE(builder.ok());
  for (int64_t r = 0; r < batch->num_rows(); ++r)
    ASSERT_TRUE(builder->Append(RowAt(*batch, r)).ok());
  auto rebuilt = builder->Finish();
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
  EXPECT_TRUE((*rebuilt)->Equals(*batch));
  EXPECT_EQ(builder->rows(), 0);
}

TEST(RowTest, AppendEncodedBuildsWhatAppendBuilds) {
  auto schema = testing::EveryTypeSchema();
  const RowFormat format = SingleVersion(schema);
  auto batch = testing::RandomBatch(schema, 300, 13);
  // A projection in another order that leaves columns out.
  std::vector<int> columns;
  std::vector<arrow::Field> fields;
  for (int i = schema->num_fields() - 1; i >= 0; i -= 2) {
    columns.push_back(i);
    fields.push_back(schema->field(i));
  }
  auto projected = std::make_shared<arrow::Schema>(std::move(fields));
  auto from_rows = RowBatchBuilder::Make(projected, columns);
  auto from_values = RowBatchBuilder::Make(projected, columns);
  ASSERT_TRUE(from_rows.ok() && from_values.ok());
  for (int64_t r = 0; r < batch->num_rows(); ++r) {
    const Row row = RowAt(*batch, r);
    std::string encoded;
    format.Encode(row, &encoded);
    ASSERT_TRUE(from_rows->Append(row).ok());
    ASSERT_TRUE(from_values->AppendEncoded(encoded, format).ok());
    // A damaged value is refused and appends nothing.
    EXPECT_TRUE(
        from_values->AppendEncoded(encoded.substr(0, encoded.size() - 1), format).IsCorruption());
  }
  EXPECT_EQ(from_values->rows(), batch->num_rows());
  EXPECT_EQ(from_values->bytes(), from_rows->bytes());
  auto want = from_rows->Finish();
  auto got = from_values->Finish();
  ASSERT_TRUE(want.ok() && got.ok()) << got.status().ToString();
  EXPECT_TRUE((*got)->Equals(**want));
}

// Rows of every version, in both formats, read in the current version exactly as the log's
// batch conversion reads them: columns by field id, widened ones cast, added ones null, dropped
// ones gone.
TEST(RowTest, RowsOfEveryVersionAndFormatReadInTheCurrentOne) {
  const auto versions = EveryTypeVersions();
  auto format = RowFormat::Make(versions);
  ASSERT_TRUE(format.ok()) << format.status().ToString();
  for (size_t v = 0; v < versions.size(); ++v) {
    // The format of a table whose current version was v then: its rows are tagged with v.
    auto then = RowFormat::Make(
        std::vector<catalog::SchemaVersion>(versions.begin(), versions.begin() + v + 1));
    ASSERT_TRUE(then.ok());
    auto batch = testing::RandomBatch(versions[v].schema, 200, 17 + static_cast<uint32_t>(v));
    auto want = ConvertedBatch(*batch, versions[v], versions.back());
    std::vector<int> all;
    for (int i = 0; i < want->num_columns(); ++i) all.push_back(i);
    auto tagged = RowBatchBuilder::Make(want->schema(), all).ValueOrDie();
    auto first = RowBatchBuilder::Make(want->schema(), all).ValueOrDie();
    for (int64_t r = 0; r < batch->num_rows(); ++r) {
      std::string encoded;
      then->Encode(RowAt(*batch, r), &encoded);
      ASSERT_TRUE(tagged.AppendEncoded(encoded, *format).ok()) << "version " << v << " row " << r;
      auto row = format->Decode(encoded);
      ASSERT_TRUE(row.ok());
      EXPECT_EQ(*row, RowAt(*want, r)) << "version " << v << " row " << r;
      if (v == 2) continue;  // the first format was written before any column but the last moved
      ASSERT_TRUE(
          first.AppendEncoded(FirstFormat(RowAt(*batch, r), *versions[v].schema), *format).ok());
    }
    EXPECT_TRUE((*tagged.Finish())->Equals(*want)) << "version " << v;
    if (v < 2) {
      EXPECT_TRUE((*first.Finish())->Equals(*want)) << "first format, version " << v;
    }
  }
}

// Bytes of the first format written out by hand: (id int32 = 7, s string = "hi", n int64 = null).
TEST(RowTest, FirstFormatBytesByHand) {
  auto schema = std::make_shared<arrow::Schema>(
      std::vector<arrow::Field>{{"id", DataType::Int32(), false, {}},
                                {"s", DataType::String(), true, {}},
                                {"n", DataType::Int64(), true, {}}});
  // A version before "n" was added, then the current one.
  auto format = RowFormat::Make({{0,
                                  std::make_shared<arrow::Schema>(std::vector<arrow::Field>(
                                      schema->fields().begin(), schema->fields().begin() + 2)),
                                  {1, 2}},
                                 {1, schema, {1, 2, 3}}});
  ASSERT_TRUE(format.ok());
  const Row want = {Cell{false, std::string("\x07\0\0\0", 4)}, Cell{false, "hi"}, Cell{}};
  for (const std::string& bytes :
       {std::string("\x02\x00\x07\x00\x00\x00\x02hi", 9),     // 2 columns
        std::string("\x03\x04\x07\x00\x00\x00\x02hi", 9)}) {  // 3, n null
    auto row = format->Decode(bytes);
    ASSERT_TRUE(row.ok()) << row.status().ToString();
    EXPECT_EQ(*row, want);
  }
  // Tagged: 00, version 1, bitmap 04, values.
  std::string encoded;
  format->Encode(want, &encoded);
  EXPECT_EQ(encoded, std::string("\x00\x01\x04\x07\x00\x00\x00\x02hi", 10));
}

TEST(RowTest, DecodeRefusesDamagedValues) {
  const auto versions = EveryTypeVersions();
  auto format = *RowFormat::Make(versions);
  auto batch = testing::RandomBatch(versions.back().schema, 1, 3);
  std::string encoded;
  format.Encode(RowAt(*batch, 0), &encoded);
  auto refused = [&](const std::string& bytes, const std::string& words) {
    auto row = format.Decode(bytes);
    EXPECT_TRUE(row.status().IsCorruption()) << row.status().ToString();
    EXPECT_NE(row.status().message().find(words), std::string::npos) << row.status().ToString();
  };
  refused(encoded.substr(0, encoded.size() - 1), "truncated");
  refused(encoded + "x", "1 bytes after its last column");
  refused("", "empty");
  refused(std::string("\x00", 1), "truncated varint");
  refused(std::string("\x00\x07", 2), "schema version 7, which the table does not have");
  refused(std::string("\x00\x02", 2), "truncated null bitmap");
  refused(std::string("\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11), "varint longer");
  // The first format: a column count no version has, and a truncated one.
  refused("\x05", "5 columns, and no schema version of the table has that many");
  refused("\x80", "truncated varint");
  refused(
      FirstFormat(RowAt(*testing::RandomBatch(versions[1].schema, 1, 3), 0), *versions[1].schema)
          .substr(0, 6),
      "truncated");
}

// Encoded keys sort bytewise exactly as the values sort.
template <typename T>
void ExpectKeyOrder(const DataType& type, std::vector<T> values) {
  std::vector<std::pair<T, std::string>> encoded;
  auto builder = arrow::ArrayBuilder::Make(type);
  ASSERT_TRUE(builder.ok());
  for (T v : values) {
    if constexpr (std::is_same_v<T, std::string>) {
      ASSERT_TRUE(static_cast<arrow::BinaryBuilder*>(builder->get())->Append(v).ok());
    } else if constexpr (std::is_same_v<T, __int128>) {
      ASSERT_TRUE(
          static_cast<arrow::FixedSizeBinaryBuilder*>(builder->get())->AppendDecimal(v).ok());
    } else {
      ASSERT_TRUE(static_cast<arrow::NumericBuilder<T>*>(builder->get())->Append(v).ok());
    }
  }
  auto array = (*builder)->Finish();
  ASSERT_TRUE(array.ok());
  for (size_t i = 0; i < values.size(); ++i) {
    std::string key;
    AppendKeyPart(*array, static_cast<int64_t>(i), &key);
    encoded.emplace_back(values[i], key);
  }
  for (const auto& [a, ka] : encoded) {
    for (const auto& [b, kb] : encoded) {
      EXPECT_EQ(a < b, ka < kb) << type.ToString();
      EXPECT_EQ(a == b, ka == kb) << type.ToString();
    }
  }
}

TEST(RowTest, KeyEncodingPreservesOrder) {
  std::mt19937_64 rng(5);
  std::vector<int64_t> i64 = {INT64_MIN, -1, 0, 1, INT64_MAX};
  std::vector<int32_t> i32 = {INT32_MIN, -70000, -1, 0, 1, 255, 256, INT32_MAX};
  std::vector<int8_t> i8 = {-128, -1, 0, 1, 127};
  std::vector<uint64_t> u64 = {0, 1, 255, 256, UINT64_MAX};
  for (int i = 0; i < 50; ++i) {
    i64.push_back(static_cast<int64_t>(rng()));
    i32.push_back(static_cast<int32_t>(rng()));
    u64.push_back(rng());
  }
  ExpectKeyOrder(DataType::Int64(), i64);
  ExpectKeyOrder(DataType::Int32(), i32);
  ExpectKeyOrder(DataType::Int8(), i8);
  ExpectKeyOrder(DataType::UInt64(), u64);
  ExpectKeyOrder(DataType::Timestamp(arrow::TimeUnit::kMicro), i64);
  ExpectKeyOrder(DataType::Decimal128(38, 0),
                 std::vector<__int128>{-(static_cast<__int128>(1) << 100), -1, 0, 1,
                                       static_cast<__int128>(1) << 100});
  ExpectKeyOrder(DataType::String(),
                 std::vector<std::string>{"", std::string("\0", 1), std::string("\0\0", 2),
                                          std::string("a\0", 2), "a", "ab", "b", "\xff"});
}

TEST(RowTest, StringKeysDoNotBleedIntoTheNextColumn) {
  // ("a", "bc") and ("ab", "c") must differ and keep tuple order.
  auto make = [](const std::string& x) {
    arrow::BinaryBuilder b(DataType::String());
    EXPECT_TRUE(b.Append(x).ok());
    return *b.Finish();
  };
  std::string k1, k2;
  AppendKeyPart(make("a"), 0, &k1);
  AppendKeyPart(make("bc"), 0, &k1);
  AppendKeyPart(make("ab"), 0, &k2);
  AppendKeyPart(make("c"), 0, &k2);
  EXPECT_LT(k1, k2);
}

TEST(RowTest, FloatKeysAreRefused) {
  auto st = CheckKeyColumnType(arrow::Field{"x", DataType::Float64(), false, {}});
  EXPECT_TRUE(st.IsInvalid());
  EXPECT_NE(st.message().find("'x'"), std::string::npos);
}

TEST(RowTest, NestedKeysAreRefusedNamingTheRule) {
  auto st = CheckKeyColumnType(arrow::Field{"s", *DataType::Parse("struct<a: int32>"), false, {}});
  EXPECT_TRUE(st.IsInvalid());
  EXPECT_EQ(st.message(),
            "primary-key column 's' has type struct<a: int32>, which cannot be a key (key columns "
            "must be scalar; nested types can be value columns)");
}

std::vector<int> AllColumns(const arrow::Schema& schema) {
  std::vector<int> all;
  for (int i = 0; i < schema.num_fields(); ++i) all.push_back(i);
  return all;
}

// The rows of JSON Lines `text` in `schema`, built by the text reader (a separate decoder).
arrow::RecordBatchPtr JsonBatch(const arrow::SchemaPtr& schema, std::string_view text) {
  auto reader = text::TextReader::Make(text::TextFormat::kJsonLines, text, schema);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  auto batch = (*reader)->Next();
  EXPECT_TRUE(batch.ok() && *batch) << batch.status().ToString();
  return *batch;
}

// Version 0 rows of NestedVersions(), with nulls at every level.
constexpr std::string_view kNestedRows =
    R"({"id":1,"s":{"a":1,"b":"x"},"l":[{"x":1,"y":"p"},null,{"x":null,"y":null}],"m":{"k":[1,null],"j":null},"f":[1,null]}
{"id":2,"s":null,"l":null,"m":null,"f":null}
{"id":3,"s":{"a":null,"b":""},"l":[],"m":{},"f":[null,null]}
{"id":4,"s":{"a":-5,"b":null},"l":[{"x":-7,"y":"a\u0000b"}],"m":{"":[]},"f":[3,4]}
)";

// Encodes every row of `batch` in `format`, then checks that decoding gives the rows back and
// that both builders rebuild `want`.
void ExpectRoundTrip(const arrow::RecordBatch& batch, const RowFormat& format,
                     const arrow::RecordBatch& want) {
  auto from_rows = RowBatchBuilder::Make(want.schema(), AllColumns(*want.schema())).ValueOrDie();
  auto from_values = RowBatchBuilder::Make(want.schema(), AllColumns(*want.schema())).ValueOrDie();
  for (int64_t r = 0; r < batch.num_rows(); ++r) {
    std::string encoded;
    format.Encode(RowAt(batch, r), &encoded);
    auto decoded = format.Decode(encoded);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, RowAt(want, r)) << "row " << r;
    ASSERT_TRUE(from_rows.Append(*decoded).ok());
    ASSERT_TRUE(from_values.AppendEncoded(encoded, format).ok());
  }
  auto rows = from_rows.Finish();
  auto values = from_values.Finish();
  ASSERT_TRUE(rows.ok() && values.ok()) << values.status().ToString();
  EXPECT_TRUE((*rows)->Equals(want));
  EXPECT_TRUE((*values)->Equals(want));
}

TEST(RowTest, NestedValuesRoundTripWithNullsAtEveryLevel) {
  auto batch = testing::NestedBatch();
  // A slice too: children are read at the parent's offset.
  for (const auto& b : {batch, batch->Slice(1, 4)}) {
    ExpectRoundTrip(*b, SingleVersion(b->schema()), *b);
  }
  const auto v0 = NestedVersions()[0];
  auto rows = JsonBatch(v0.schema, kNestedRows);
  ExpectRoundTrip(*rows, *RowFormat::Make({v0}), *rows);
}

// `array` with `type` (the same but for field metadata) at every level.
arrow::Array Labelled(const arrow::Array& array, const arrow::DataType& type) {
  auto data = std::make_shared<arrow::ArrayData>(*array.data());
  data->type = type;
  for (int i = 0; i < array.num_children(); ++i) {
    data->children[static_cast<size_t>(i)] = Labelled(array.child(i), type.child(i).type).data();
  }
  return arrow::Array(std::move(data));
}

// Rows written in version 0 read in version 1 as the log reads its batches: arrow::Cast by the
// nested fields' ids, added columns null.
TEST(RowTest, NestedRowsOfAnEarlierVersionReadAsTheLogReadsThem) {
  const auto versions = NestedVersions();
  const auto& from = versions[0];
  const auto& to = versions[1];
  auto rows = JsonBatch(from.schema, kNestedRows);
  std::vector<arrow::Array> columns;
  for (int c = 0; c < to.schema->num_fields(); ++c) {
    const auto found = std::find(from.field_ids.begin(), from.field_ids.end(),
                                 to.field_ids[static_cast<size_t>(c)]);
    if (found == from.field_ids.end()) {
      columns.push_back(*arrow::MakeNullArray(to.schema->field(c).type, rows->num_rows()));
      continue;
    }
    // The stored column labelled with its nested fields' ids, as the log's projector reads it.
    const int source = static_cast<int>(found - from.field_ids.begin());
    auto cast =
        arrow::Cast(Labelled(rows->column(source), from.TypeWithIds(source)), to.TypeWithIds(c));
    ASSERT_TRUE(cast.ok()) << cast.status().ToString();
    columns.push_back(*cast);
  }
  auto want = *arrow::RecordBatch::Make(to.schema, rows->num_rows(), std::move(columns));
  auto then = *RowFormat::Make({from});
  auto now = *RowFormat::Make(versions);
  auto builder = RowBatchBuilder::Make(to.schema, AllColumns(*to.schema)).ValueOrDie();
  for (int64_t r = 0; r < rows->num_rows(); ++r) {
    std::string encoded;
    then.Encode(RowAt(*rows, r), &encoded);
    ASSERT_TRUE(builder.AppendEncoded(encoded, now).ok()) << r;
  }
  auto got = *builder.Finish();
  EXPECT_TRUE(got->Equals(*want));
  // What that means, spelled out: "a" renamed and widened, "b" and "y" gone, "c" and "z" null.
  auto json = text::FormatBatch(text::TextFormat::kJsonLines, *got->Slice(0, 1));
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(
      *json,
      R"({"n":null,"id":1,"s":{"aa":1,"c":null},"l":[{"x":1,"z":null},null,{"x":null,"z":null}],"m":{"k":[1,null],"j":null},"f":[1,null]})"
      "\n");
}

// (id 7, s {a: null, b: ["x", null]}) as bytes.
TEST(RowTest, NestedBytesByHand) {
  auto schema = std::make_shared<arrow::Schema>(std::vector<arrow::Field>{
      {"id", DataType::Int32(), false, {}},
      {"s", *DataType::Parse("struct<a: int32, b: list<item: string>>"), true, {}}});
  auto batch = JsonBatch(schema, R"({"id":7,"s":{"a":null,"b":["x",null]}})");
  const RowFormat format = SingleVersion(schema);
  std::string encoded;
  format.Encode(RowAt(*batch, 0), &encoded);
  // Tag, schema id, bitmap, id; then s: length 5, field bitmap 01 (a null), b: 2 items, item
  // bitmap 02 (the second null), "x" (length 1).
  EXPECT_EQ(encoded, std::string("\x00\x00\x00\x07\x00\x00\x00\x05\x01\x02\x02\x01x", 13));
}

TEST(RowTest, DecodeRefusesDamagedNestedValues) {
  auto schema = std::make_shared<arrow::Schema>(std::vector<arrow::Field>{
      {"id", DataType::Int32(), false, {}},
      {"s", *DataType::Parse("struct<a: int32, b: list<item: string>>"), true, {}},
      {"m", *DataType::Parse("map<int32, int32>"), true, {}}});
  const RowFormat format = SingleVersion(schema);
  auto row = [](const std::string& s, const std::string& m) {
    std::string out("\x00\x00\x00\x07\x00\x00\x00", 7);
    out += static_cast<char>(s.size());
    out += s;
    out += static_cast<char>(m.size());
    return out + m;
  };
  auto refused = [&](const std::string& bytes, const std::string& words) {
    auto decoded = format.Decode(bytes);
    EXPECT_TRUE(decoded.status().IsCorruption()) << decoded.status().ToString();
    EXPECT_NE(decoded.status().message().find(words), std::string::npos)
        << decoded.status().ToString();
  };
  const std::string no_entries(1, '\0');  // a map of 0 entries
  ASSERT_TRUE(format
                  .Decode(row("\x01\x02\x02\x01x", std::string("\x01\x00\x00\x05\x00\x00\x00"
                                                               "\x06\x00\x00\x00",
                                                               11)))
                  .ok());
  refused(row("\x01\x02\x02\x01", no_entries), "column 's': row value: truncated nested value");
  refused(row("\x01\x02\x02\x01xx", no_entries),
          "column 's': row value: a nested value has 1 bytes");
  refused(row("", no_entries), "truncated nested null bitmap");
  refused(row("\x01\x02", no_entries), "a nested list of 2 items is longer than its value");
  refused(row("\x01\xff\xff\xff\xff\x0f", no_entries), "is longer than its value");
  refused(row("\x03", std::string("\x01\x01", 2)), "column 'm': row value: a null map entry");
  // Every truncation of a valid nested value is refused (the outer length kept consistent).
  const std::string s("\x00\x05\x00\x00\x00\x03\x02\x01x\x01y", 11);
  ASSERT_TRUE(format.Decode(row(s, no_entries)).ok());
  for (size_t n = 0; n < s.size(); ++n) {
    EXPECT_TRUE(format.Decode(row(s.substr(0, n), no_entries)).status().IsCorruption()) << n;
  }
}

}  // namespace
}  // namespace oxbow::kv
