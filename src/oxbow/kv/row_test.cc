#include "oxbow/kv/row.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "oxbow/arrow/builder.h"
#include "oxbow/testing/every_type.h"

namespace oxbow::kv {
namespace {

using arrow::DataType;

// Row `r` of every column of `batch`.
Row RowAt(const arrow::RecordBatch& batch, int64_t r) {
  Row row;
  for (const auto& column : batch.columns()) row.push_back(CellAt(column, r));
  return row;
}

TEST(RowTest, EncodeDecodeRoundTripsEveryType) {
  auto schema = testing::EveryTypeSchema();
  auto batch = testing::RandomBatch(schema, 500, 7);
  for (int64_t r = 0; r < batch->num_rows(); ++r) {
    const Row row = RowAt(*batch, r);
    std::string encoded;
    EncodeRow(row, *schema, &encoded);
    auto decoded = DecodeRow(encoded, *schema);
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
    EncodeRow(row, *schema, &encoded);
    ASSERT_TRUE(from_rows->Append(row).ok());
    ASSERT_TRUE(from_values->AppendEncoded(encoded, *schema).ok());
    // A damaged value is refused and appends nothing.
    EXPECT_TRUE(
        from_values->AppendEncoded(encoded.substr(0, encoded.size() - 1), *schema).IsCorruption());
  }
  EXPECT_EQ(from_values->rows(), batch->num_rows());
  EXPECT_EQ(from_values->bytes(), from_rows->bytes());
  auto want = from_rows->Finish();
  auto got = from_values->Finish();
  ASSERT_TRUE(want.ok() && got.ok()) << got.status().ToString();
  EXPECT_TRUE((*got)->Equals(**want));
}

TEST(RowTest, DecodeRefusesDamagedValues) {
  auto schema = testing::EveryTypeSchema();
  auto batch = testing::RandomBatch(schema, 1, 3);
  std::string encoded;
  EncodeRow(RowAt(*batch, 0), *schema, &encoded);
  EXPECT_TRUE(DecodeRow(encoded.substr(0, encoded.size() - 1), *schema).status().IsCorruption());
  EXPECT_TRUE(DecodeRow(encoded + "x", *schema).status().IsCorruption());
  EXPECT_TRUE(DecodeRow("", *schema).status().IsCorruption());
  std::string wrong_count = encoded;
  wrong_count[0] = 1;
  EXPECT_TRUE(DecodeRow(wrong_count, *schema).status().IsCorruption());
}

// A row written before columns were added at the end (alter_table) reads them as null; a row
// with more columns than the schema is refused.
TEST(RowTest, RowOfAnEarlierSchemaReadsAddedColumnsAsNull) {
  auto schema = testing::EveryTypeSchema();
  auto batch = testing::RandomBatch(schema, 1, 5);
  const Row full = RowAt(*batch, 0);
  const int kept = schema->num_fields() / 2;
  std::vector<arrow::Field> fields(schema->fields().begin(), schema->fields().begin() + kept);
  const arrow::Schema earlier(fields);
  std::string encoded;
  EncodeRow(Row(full.begin(), full.begin() + kept), earlier, &encoded);
  auto decoded = DecodeRow(encoded, *schema);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_EQ(decoded->size(), full.size());
  for (int i = 0; i < schema->num_fields(); ++i) {
    EXPECT_EQ((*decoded)[i], i < kept ? full[i] : Cell{}) << i;
  }
  std::string longer;
  EncodeRow(full, *schema, &longer);
  EXPECT_TRUE(DecodeRow(longer, earlier).status().IsCorruption());
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

}  // namespace
}  // namespace oxbow::kv
