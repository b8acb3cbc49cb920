#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>

#include "oxbow/arrow/builder.h"
#include "oxbow/common/fault_injection_file_system.h"
#include "oxbow/parquet/encoding_internal.h"
#include "oxbow/parquet/metadata.h"
#include "oxbow/parquet/reader.h"
#include "oxbow/parquet/schema_internal.h"
#include "oxbow/parquet/thrift_internal.h"
#include "oxbow/parquet/verify.h"
#include "oxbow/parquet/writer.h"
#include "oxbow/testing/every_type.h"
#include "oxbow/testing/nested.h"
#include "oxbow/testing/string_file.h"

namespace oxbow::parquet {
namespace {

using arrow::DataType;

#define ASSERT_OK(expr)                                   \
  do {                                                    \
    auto _s = ::oxbow::internal::GenericToStatus((expr)); \
    ASSERT_TRUE(_s.ok()) << _s.ToString();                \
  } while (false)

std::shared_ptr<Buffer> ToBuffer(const std::string& s) { return Buffer::FromString(s); }

std::vector<arrow::RecordBatchPtr> ReadAll(const std::string& file, ReaderOptions options = {}) {
  auto reader = FileReader::Open(ToBuffer(file));
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return {};
  auto batches = (*reader)->Read(options);
  EXPECT_TRUE(batches.ok()) << batches.status().ToString();
  return batches.ok() ? *batches : std::vector<arrow::RecordBatchPtr>{};
}

// Concatenated rows of `batches` equal `expected` (compared slice by slice).
void ExpectSameRows(const arrow::RecordBatch& expected,
                    const std::vector<arrow::RecordBatchPtr>& batches) {
  int64_t offset = 0;
  for (const auto& b : batches) {
    auto want = expected.Slice(offset, b->num_rows());
    ASSERT_EQ(b->num_columns(), want->num_columns());
    for (int c = 0; c < b->num_columns(); ++c) {
      ASSERT_TRUE(b->column(c).Equals(want->column(c)))
          << "column " << expected.schema()->field(c).name << " at row offset " << offset;
    }
    offset += b->num_rows();
  }
  EXPECT_EQ(offset, expected.num_rows());
}

// ---- Thrift compact protocol ----

TEST(ThriftTest, FileMetaDataRoundTrip) {
  FileMetaData m;
  m.version = 1;
  m.num_rows = 1234567890123;
  m.created_by = "test";
  SchemaElement root;
  root.name = "schema";
  root.num_children = 1;
  SchemaElement leaf;
  leaf.name = "ts";
  leaf.type = PhysicalType::kInt64;
  leaf.repetition_type = Repetition::kOptional;
  leaf.field_id = 42;
  leaf.logical_type = LogicalType{.kind = LogicalType::kTimestamp};
  leaf.logical_type->unit = LogicalTimeUnit::kNanos;
  leaf.logical_type->is_adjusted_to_utc = true;
  m.schema = {root, leaf};
  RowGroup g;
  g.num_rows = 5;
  g.ordinal = 3;
  ColumnChunk c;
  c.meta_data.emplace();
  c.meta_data->type = PhysicalType::kInt64;
  c.meta_data->encodings = {Encoding::kPlain, Encoding::kRleDictionary};
  c.meta_data->path_in_schema = {"ts"};
  c.meta_data->codec = Codec::kZstd;
  c.meta_data->data_page_offset = 77;
  c.meta_data->dictionary_page_offset = 4;
  c.meta_data->statistics.emplace();
  c.meta_data->statistics->min_value = std::string("\x01\x00\x00\x00\x00\x00\x00\x80", 8);
  c.meta_data->statistics->null_count = 0;
  c.meta_data->statistics->is_min_value_exact = false;
  g.columns.push_back(c);
  m.row_groups.push_back(g);
  m.key_value_metadata.push_back({"k", std::string("v")});
  m.key_value_metadata.push_back({"novalue", std::nullopt});
  m.column_orders = {1};

  std::string bytes;
  SerializeFileMetaData(m, &bytes);
  FileMetaData back;
  ASSERT_OK(ParseFileMetaData(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &back));
  EXPECT_EQ(back.num_rows, 1234567890123);
  EXPECT_EQ(back.created_by, "test");
  ASSERT_EQ(back.schema.size(), 2u);
  EXPECT_EQ(back.schema[1].field_id, 42);
  ASSERT_TRUE(back.schema[1].logical_type);
  EXPECT_EQ(back.schema[1].logical_type->ToString(), "TIMESTAMP(NANOS,true)");
  ASSERT_EQ(back.row_groups.size(), 1u);
  EXPECT_EQ(back.row_groups[0].ordinal, 3);
  const auto& cm = *back.row_groups[0].columns[0].meta_data;
  EXPECT_EQ(cm.codec, Codec::kZstd);
  EXPECT_EQ(cm.encodings, (std::vector<Encoding>{Encoding::kPlain, Encoding::kRleDictionary}));
  EXPECT_EQ(cm.dictionary_page_offset, 4);
  EXPECT_EQ(cm.statistics->min_value, c.meta_data->statistics->min_value);
  EXPECT_EQ(cm.statistics->is_min_value_exact, false);
  EXPECT_EQ(back.key_value_metadata[1].value, std::nullopt);
  EXPECT_EQ(back.column_orders, std::vector<int16_t>{1});
}

TEST(ThriftTest, SkipsUnknownFields) {
  // PageHeader with an unknown field 20 (a list of structs holding a map) before field 1.
  std::string bytes;
  thrift::CompactWriter w(&bytes);
  w.BeginStruct();
  w.FieldList(20, thrift::CType::kStruct, 1);
  w.BeginStruct();
  w.FieldDouble(1, 2.5);
  w.FieldBinary(2, "ignored");
  w.EndStruct();
  w.FieldI32(1, static_cast<int32_t>(PageType::kDataPage));  // long-form header (delta < 0)
  w.FieldI32(2, 10);
  w.FieldI32(3, 8);
  w.FieldStruct(5);
  w.FieldI32(1, 3);
  w.FieldI32(2, 0);
  w.FieldI32(3, 3);
  w.FieldI32(4, 3);
  w.FieldBool(9, true);  // unknown bool
  w.EndStruct();
  w.EndStruct();
  bytes += "trailing";
  PageHeader h;
  size_t consumed = 0;
  ASSERT_OK(
      ParsePageHeader(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &h, &consumed));
  EXPECT_EQ(consumed, bytes.size() - 8);
  EXPECT_EQ(h.compressed_page_size, 8);
  ASSERT_TRUE(h.data_page_header);
  EXPECT_EQ(h.data_page_header->num_values, 3);
}

TEST(ThriftTest, RejectsDeepNestingTruncationAndMissingFields) {
  // 100 nested struct fields.
  std::string deep;
  for (int i = 0; i < 100; ++i) deep.push_back(static_cast<char>(0x1c));  // field 1, struct
  deep.append(101, '\0');
  FileMetaData m;
  Status st = ParseFileMetaData(reinterpret_cast<const uint8_t*>(deep.data()), deep.size(), &m);
  EXPECT_TRUE(st.IsCorruption());
  EXPECT_NE(st.message().find("nesting"), std::string::npos) << st.ToString();

  // Every truncation of a valid footer fails cleanly.
  FileMetaData full;
  full.schema.push_back(SchemaElement{.name = "schema"});
  full.row_groups.push_back(RowGroup{});
  std::string bytes;
  SerializeFileMetaData(full, &bytes);
  for (size_t n = 0; n < bytes.size(); ++n) {
    FileMetaData out;
    EXPECT_FALSE(ParseFileMetaData(reinterpret_cast<const uint8_t*>(bytes.data()), n, &out).ok());
  }
  // A list claiming more elements than bytes remain.
  const uint8_t huge_list[] = {0x29, 0xfc, 0xff, 0xff, 0xff, 0x0f};
  st = ParseFileMetaData(huge_list, sizeof(huge_list), &m);
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  // Missing required fields.
  const uint8_t empty[] = {0x00};
  st = ParseFileMetaData(empty, 1, &m);
  EXPECT_NE(st.message().find("schema"), std::string::npos) << st.ToString();
}

// ---- RLE / bit-packing hybrid ----

TEST(RleTest, SpecBitPackingExample) {
  // Encodings.md: values 0..7 with bit width 3 pack into 10001000 11000110 11111010.
  const uint32_t values[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  std::string out;
  internal::RleEncode(values, 8, 3, &out);
  EXPECT_EQ(out, std::string("\x03\x88\xc6\xfa", 4));
  uint32_t back[8];
  internal::RleDecoder dec(reinterpret_cast<const uint8_t*>(out.data()), out.size(), 3);
  ASSERT_OK(dec.GetBatch(back, 8));
  EXPECT_EQ(std::vector<uint32_t>(back, back + 8), std::vector<uint32_t>(values, values + 8));
}

TEST(RleTest, RoundTripsMixedRunsAtEveryWidth) {
  std::mt19937 rng(7);
  for (int width = 0; width <= 32; ++width) {
    const uint64_t mask = width == 32 ? 0xffffffffu : (uint64_t{1} << width) - 1;
    std::vector<uint32_t> values;
    while (values.size() < 5000) {
      const uint32_t v = static_cast<uint32_t>(rng() & mask);
      const size_t run = rng() % 3 == 0 ? rng() % 40 : 1;
      values.insert(values.end(), run, v);
    }
    std::string out;
    internal::RleEncode(values.data(), static_cast<int64_t>(values.size()), width, &out);
    std::vector<uint32_t> back(values.size());
    internal::RleDecoder dec(reinterpret_cast<const uint8_t*>(out.data()), out.size(), width);
    // Decode in uneven pieces to cross run boundaries.
    size_t pos = 0;
    while (pos < back.size()) {
      const size_t k = std::min(back.size() - pos, size_t{1} + rng() % 97);
      ASSERT_OK(dec.GetBatch(back.data() + pos, static_cast<int64_t>(k)));
      pos += k;
    }
    ASSERT_EQ(back, values) << "bit width " << width;
    std::vector<uint32_t> extra(1000);
    EXPECT_FALSE(dec.GetBatch(extra.data(), 1000).ok());
  }
}

TEST(RleTest, LongRunIsCompact) {
  std::vector<uint32_t> ones(100000, 1);
  std::string out;
  internal::RleEncode(ones.data(), 100000, 1, &out);
  EXPECT_LE(out.size(), 4u);
}

TEST(RleTest, CorruptInputFailsCleanly) {
  const uint8_t zero_run[] = {0x00};
  uint32_t v[4];
  internal::RleDecoder a(zero_run, 1, 3);
  EXPECT_TRUE(a.GetBatch(v, 1).IsCorruption());
  const uint8_t wide_value[] = {0x02, 0xff};  // run of 1, value 255 with bit width 3
  internal::RleDecoder b(wide_value, 2, 3);
  EXPECT_TRUE(b.GetBatch(v, 1).IsCorruption());
  const uint8_t truncated[] = {0x02};
  internal::RleDecoder c(truncated, 1, 8);
  EXPECT_TRUE(c.GetBatch(v, 1).IsCorruption());
}

// ---- Codecs ----

class CodecTest : public ::testing::TestWithParam<Codec> {};

TEST_P(CodecTest, RoundTripAndCorruption) {
  std::string input;
  for (int i = 0; i < 10000; ++i) input += "value-" + std::to_string(i % 97) + ";";
  std::string compressed;
  ASSERT_OK(internal::Compress(GetParam(), 0, reinterpret_cast<const uint8_t*>(input.data()),
                               input.size(), &compressed));
  std::string back(input.size(), '\0');
  ASSERT_OK(internal::Decompress(GetParam(), reinterpret_cast<const uint8_t*>(compressed.data()),
                                 compressed.size(), reinterpret_cast<uint8_t*>(back.data()),
                                 back.size()));
  EXPECT_EQ(back, input);
  // Wrong expected size, and garbage input, are Corruption.
  std::string small(input.size() - 1, '\0');
  EXPECT_FALSE(internal::Decompress(GetParam(), reinterpret_cast<const uint8_t*>(compressed.data()),
                                    compressed.size(), reinterpret_cast<uint8_t*>(small.data()),
                                    small.size())
                   .ok());
  if (GetParam() != Codec::kUncompressed) {
    std::string garbage(64, '\xab');
    EXPECT_FALSE(internal::Decompress(GetParam(), reinterpret_cast<const uint8_t*>(garbage.data()),
                                      garbage.size(), reinterpret_cast<uint8_t*>(back.data()),
                                      back.size())
                     .ok());
  }
}

INSTANTIATE_TEST_SUITE_P(AllCodecs, CodecTest,
                         ::testing::Values(Codec::kUncompressed, Codec::kSnappy, Codec::kGzip,
                                           Codec::kZstd, Codec::kLz4Raw));

// ---- Page checksums ----

// CRC-32 bit by bit (0xEDB88320 is 0x04C11DB7 reflected), independent of zlib.
uint32_t ReferenceCrc32(std::string_view bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const unsigned char c : bytes) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

TEST(PageCrcTest, IsTheStandardCrc32) {
  const std::string check = "123456789";
  const auto* data = reinterpret_cast<const uint8_t*>(check.data());
  EXPECT_EQ(internal::PageCrc(0, data, check.size()), 0xCBF43926u);  // the CRC-32 check value
  EXPECT_EQ(ReferenceCrc32(check), 0xCBF43926u);
  EXPECT_EQ(internal::PageCrc(internal::PageCrc(0, data, 4), data + 4, 5), 0xCBF43926u);
  EXPECT_EQ(internal::PageCrc(0, data, 0), 0u);
}

// One page of a file: where its header starts, the header, and the bytes after it.
struct FilePage {
  int row_group;
  int column;
  int64_t offset;
  PageHeader header;
  std::string_view body;
};

// Every page of every column chunk, found from the footer's chunk offsets.
std::vector<FilePage> PagesOf(const std::string& file) {
  const auto reader = FileReader::Open(ToBuffer(file)).ValueOrDie();
  const auto* bytes = reinterpret_cast<const uint8_t*>(file.data());
  std::vector<FilePage> pages;
  for (int g = 0; g < reader->num_row_groups(); ++g) {
    const auto& columns = reader->metadata().row_groups[g].columns;
    for (int c = 0; c < static_cast<int>(columns.size()); ++c) {
      const ColumnMetaData& meta = *columns[c].meta_data;
      int64_t pos = meta.dictionary_page_offset.value_or(meta.data_page_offset);
      const int64_t end = pos + meta.total_compressed_size;
      while (pos < end) {
        FilePage page{g, c, pos, {}, {}};
        size_t consumed = 0;
        EXPECT_TRUE(
            ParsePageHeader(bytes + pos, static_cast<size_t>(end - pos), &page.header, &consumed)
                .ok());
        pos += static_cast<int64_t>(consumed);
        page.body = std::string_view(file).substr(
            static_cast<size_t>(pos), static_cast<size_t>(page.header.compressed_page_size));
        pos += page.header.compressed_page_size;
        pages.push_back(page);
      }
      EXPECT_EQ(pos, end);
    }
  }
  return pages;
}

// ---- Schema mapping ----

TEST(SchemaTest, MapsTypesLikePyarrow) {
  auto e = internal::FieldToSchemaElement({"x", DataType::UInt16()}).ValueOrDie();
  EXPECT_EQ(e.type, PhysicalType::kInt32);
  EXPECT_EQ(e.logical_type->ToString(), "INTEGER(16,false)");
  EXPECT_EQ(e.converted_type, ConvertedType::kUint16);

  e = internal::FieldToSchemaElement({"t", DataType::Timestamp(arrow::TimeUnit::kSecond, "UTC")})
          .ValueOrDie();
  EXPECT_EQ(e.logical_type->ToString(), "TIMESTAMP(MILLIS,true)");
  EXPECT_EQ(e.converted_type, ConvertedType::kTimestampMillis);

  e = internal::FieldToSchemaElement({"d", DataType::Decimal128(20, 4)}).ValueOrDie();
  EXPECT_EQ(e.type, PhysicalType::kFixedLenByteArray);
  EXPECT_EQ(e.type_length, 9);
  EXPECT_EQ(internal::DecimalByteWidth(38), 16);
  EXPECT_EQ(internal::DecimalByteWidth(9), 4);

  arrow::Field bad_id{"x", DataType::Int32()};
  bad_id.metadata.emplace_back("PARQUET:field_id", "abc");
  EXPECT_TRUE(internal::FieldToSchemaElement(bad_id).status().IsInvalid());
}

// ---- Writer and reader ----

struct RoundTripCase {
  Codec codec;
  bool dictionary;
  int page_version;
  bool nullable;
};

class RoundTripTest : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(RoundTripTest, AllTypes) {
  const auto& p = GetParam();
  auto schema = oxbow::testing::EveryTypeSchema(p.nullable);
  auto batch1 = oxbow::testing::RandomBatch(schema, 3000, 1, 50);
  auto batch2 = oxbow::testing::RandomBatch(schema, 2500, 2, 100000);
  WriterOptions options;
  options.compression = p.codec;
  options.dictionary = p.dictionary;
  options.data_page_version = p.page_version;
  options.row_group_rows = 2000;
  options.data_page_size = 4096;
  FileMetrics metrics;
  auto file = WriteToString(schema, {batch1, batch2}, options, &metrics);
  ASSERT_OK(file.status());
  EXPECT_EQ(metrics.row_count, 5500);
  EXPECT_EQ(metrics.file_size, static_cast<int64_t>(file->size()));
  EXPECT_EQ(metrics.row_group_offsets.size(), 3u);
  ASSERT_EQ(metrics.columns.size(), static_cast<size_t>(schema->num_fields()));
  EXPECT_EQ(metrics.columns[3].field_id, 4);
  EXPECT_EQ(metrics.columns[3].value_count, 5500);

  auto reader = FileReader::Open(ToBuffer(*file)).ValueOrDie();
  EXPECT_EQ(reader->num_row_groups(), 3);
  ASSERT_TRUE(reader->schema()->Equals(*schema, /*check_metadata=*/true))
      << reader->schema()->ToString();
  auto batches = reader->Read().ValueOrDie();
  // Rows come back in order; row groups of 2000 straddle the two input batches.
  int64_t offset = 0;
  for (const auto& b : batches) {
    for (int64_t done = 0; done < b->num_rows();) {
      const bool in_first = offset < 3000;
      const auto& src = in_first ? batch1 : batch2;
      const int64_t src_off = in_first ? offset : offset - 3000;
      const int64_t take = std::min(b->num_rows() - done, src->num_rows() - src_off);
      auto got = b->Slice(done, take);
      auto want = src->Slice(src_off, take);
      for (int c = 0; c < got->num_columns(); ++c) {
        ASSERT_TRUE(got->column(c).Equals(want->column(c)))
            << "column " << schema->field(c).name << " rows " << offset;
      }
      done += take;
      offset += take;
    }
  }
  EXPECT_EQ(offset, 5500);

  // Every page (dictionary, v1 or v2 data) carries the CRC-32 of the bytes after its header.
  std::set<PageType> types;
  for (const FilePage& page : PagesOf(*file)) {
    types.insert(page.header.type);
    ASSERT_TRUE(page.header.crc.has_value()) << "page at offset " << page.offset;
    EXPECT_EQ(static_cast<uint32_t>(*page.header.crc), ReferenceCrc32(page.body))
        << "page at offset " << page.offset;
  }
  EXPECT_TRUE(types.count(p.page_version == 2 ? PageType::kDataPageV2 : PageType::kDataPage));
  EXPECT_EQ(types.count(PageType::kDictionaryPage), p.dictionary ? 1u : 0u);
}

INSTANTIATE_TEST_SUITE_P(Matrix, RoundTripTest,
                         ::testing::Values(RoundTripCase{Codec::kZstd, true, 1, true},
                                           RoundTripCase{Codec::kZstd, false, 1, true},
                                           RoundTripCase{Codec::kSnappy, true, 2, true},
                                           RoundTripCase{Codec::kLz4Raw, false, 2, false},
                                           RoundTripCase{Codec::kGzip, true, 1, false},
                                           RoundTripCase{Codec::kUncompressed, true, 2, true},
                                           RoundTripCase{Codec::kUncompressed, false, 1, false}));

// ---- Nested columns ----

TEST(NestedTest, RoundTripsOverSmallPagesAndRowGroups) {
  const auto batch = testing::NestedBatch(/*with_fixed_size_list=*/false);
  for (int version : {1, 2}) {
    for (bool dictionary : {true, false}) {
      WriterOptions options;
      options.data_page_version = version;
      options.dictionary = dictionary;
      options.data_page_rows = 2;  // pages close at row boundaries, never inside a list
      options.row_group_rows = 4;
      for (int64_t offset : {0, 1}) {
        const auto slice = batch->Slice(offset, batch->num_rows() - offset);
        auto file = WriteToString(batch->schema(), {slice}, options);
        ASSERT_OK(file);
        SCOPED_TRACE("version " + std::to_string(version) + " offset " + std::to_string(offset));
        ExpectSameRows(*slice, ReadAll(*file));
        auto reader = FileReader::Open(ToBuffer(*file));
        ASSERT_OK(reader);
        EXPECT_EQ((*reader)->metadata().row_groups[0].columns.size(), 5u);  // leaf columns
        // Projection of a nested column reads its leaves only.
        ExpectSameRows(*slice->SelectColumns({1}).ValueOrDie(), ReadAll(*file, {.columns = {"s"}}));
      }
    }
  }
}

TEST(NestedTest, RefusesANullInANotNullChild) {
  const DataType list = DataType::List({"item", DataType::Int32(), /*nullable=*/false});
  auto schema = std::make_shared<const arrow::Schema>(std::vector<arrow::Field>{{"l", list}});
  // [1, null]: the null item under a not-null item field; a null list row is fine.
  arrow::Array l = arrow::Array::MakeNested(
      list, 2, {testing::ValidityBitmap({1, 0}), testing::Int32Buffer({0, 2, 2})},
      {testing::Int32Array({1, 0}, {1, 0})});
  auto batch = arrow::RecordBatch::Make(schema, 2, {l}).ValueOrDie();
  auto st = WriteToString(schema, {batch}).status();
  EXPECT_TRUE(st.IsInvalid()) << st.ToString();
  EXPECT_NE(st.message().find("'item' holds a null"), std::string::npos) << st.ToString();
}

TEST(NestedTest, MismatchedLeavesFailCleanly) {
  const auto batch = testing::NestedBatch(/*with_fixed_size_list=*/false);
  auto file = WriteToString(batch->schema(), {batch});
  ASSERT_OK(file);
  auto reader = FileReader::Open(ToBuffer(*file));
  ASSERT_OK(reader);
  // The chunk of s.b's elements claims fewer values (levels) than its pages hold.
  FileMetaData meta = (*reader)->metadata();
  meta.row_groups[0].columns[2].meta_data->num_values = 5;
  std::string footer;
  SerializeFileMetaData(meta, &footer);
  uint32_t footer_length;
  std::memcpy(&footer_length, file->data() + file->size() - 8, 4);
  const int64_t data_end = static_cast<int64_t>(file->size()) - 8 - footer_length;
  std::string bad = file->substr(0, static_cast<size_t>(data_end)) + footer;
  const auto len = static_cast<uint32_t>(footer.size());
  bad.append(reinterpret_cast<const char*>(&len), 4);
  bad.append("PAR1");
  auto broken = FileReader::Open(ToBuffer(bad));
  if (broken.ok()) {
    auto read = (*broken)->Read();
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.status().code(), StatusCode::kCorruption) << read.status().ToString();
  } else {
    EXPECT_EQ(broken.status().code(), StatusCode::kCorruption) << broken.status().ToString();
  }
}

TEST(WriterTest, PageChecksumsCanBeTurnedOff) {
  auto schema = testing::EveryTypeSchema();
  WriterOptions options;
  options.page_checksums = false;
  const std::string file =
      WriteToString(schema, {testing::RandomBatch(schema, 500, 3, 20)}, options).ValueOrDie();
  for (const FilePage& page : PagesOf(file)) EXPECT_FALSE(page.header.crc.has_value());
}

// Optional columns without nulls (every lake column but the keys) keep their short level
// section in front of the PLAIN values; pages with many nulls have longer ones. Both, in v1 and
// v2 pages, with and without a dictionary, read back as written, checksums and all.
TEST(WriterTest, OptionalColumnsWithAndWithoutNulls) {
  auto schema = testing::EveryTypeSchema(/*nullable=*/true);
  auto values = testing::RandomBatch(testing::EveryTypeSchema(false), 3000, 7, 100000);
  auto no_nulls = arrow::RecordBatch::Make(schema, 3000, values->columns()).ValueOrDie();
  auto nulls = testing::RandomBatch(schema, 3000, 8, 100000);
  for (int version : {1, 2}) {
    for (bool dictionary : {false, true}) {
      for (const auto& batch : {no_nulls, nulls}) {
        SCOPED_TRACE("v" + std::to_string(version) + (dictionary ? " dictionary" : "") +
                     (batch == nulls ? " with nulls" : " without nulls"));
        WriterOptions options;
        options.data_page_version = version;
        options.dictionary = dictionary;
        options.data_page_size = 4096;
        options.row_group_rows = 1000;
        const std::string file = WriteToString(schema, {batch}, options).ValueOrDie();
        auto reader = FileReader::Open(ToBuffer(file)).ValueOrDie();
        ExpectSameRows(*batch, reader->Read().ValueOrDie());
        for (const FilePage& page : PagesOf(file)) {
          ASSERT_TRUE(page.header.crc.has_value());
          EXPECT_EQ(static_cast<uint32_t>(*page.header.crc), ReferenceCrc32(page.body));
        }
      }
    }
  }
}

TEST(WriterTest, DictionaryFallsBackToPlain) {
  auto schema =
      std::make_shared<arrow::Schema>(std::vector<arrow::Field>{{"s", DataType::String()}});
  auto batch = oxbow::testing::RandomBatch(schema, 20000, 3, 1000000);
  WriterOptions options;
  options.dictionary_page_size_limit = 2000;
  options.data_page_size = 1000;
  auto file = WriteToString(schema, {batch}, options).ValueOrDie();
  auto reader = FileReader::Open(ToBuffer(file)).ValueOrDie();
  const auto& meta = *reader->metadata().row_groups[0].columns[0].meta_data;
  bool saw_dict_data = false, saw_plain_data = false;
  for (const auto& s : meta.encoding_stats) {
    if (s.page_type == PageType::kDataPage && s.encoding == Encoding::kRleDictionary)
      saw_dict_data = true;
    if (s.page_type == PageType::kDataPage && s.encoding == Encoding::kPlain) saw_plain_data = true;
  }
  EXPECT_TRUE(saw_dict_data);
  EXPECT_TRUE(saw_plain_data);
  EXPECT_TRUE(meta.dictionary_page_offset.has_value());
  ExpectSameRows(*batch, reader->Read().ValueOrDie());
}

TEST(WriterTest, MostlyDistinctChunksArePlainFromTheStart) {
  auto schema = testing::EveryTypeSchema();
  // Far more distinct values than rows (within decimal(9, 2)): the first 4096 values of every
  // column wider than a byte are nearly all unique.
  auto batch = testing::RandomBatch(schema, 10000, 5, 100'000'000);
  auto file = WriteToString(schema, {batch}).ValueOrDie();
  auto reader = FileReader::Open(ToBuffer(file)).ValueOrDie();
  const auto& group = reader->metadata().row_groups[0];
  for (int c = 0; c < schema->num_fields(); ++c) {
    const auto& field = schema->field(c);
    const auto& meta = *group.columns[c].meta_data;
    // int8/uint8 hold at most 256 values and booleans are never dictionary-encoded.
    const bool narrow =
        field.type.id() == arrow::TypeId::kInt8 || field.type.id() == arrow::TypeId::kUInt8;
    if (field.type.id() == arrow::TypeId::kBool) continue;
    EXPECT_EQ(meta.dictionary_page_offset.has_value(), narrow) << field.name;
    for (const auto& s : meta.encoding_stats) {
      if (s.page_type == PageType::kDictionaryPage) continue;
      EXPECT_EQ(s.encoding == Encoding::kRleDictionary, narrow) << field.name;
    }
  }
  ExpectSameRows(*batch, reader->Read().ValueOrDie());
}

std::string StatOf(const std::string& file, int column, bool max) {
  auto reader = FileReader::Open(ToBuffer(file)).ValueOrDie();
  const auto& s = *reader->metadata().row_groups[0].columns[column].meta_data->statistics;
  return max ? s.max_value.value_or("<none>") : s.min_value.value_or("<none>");
}

template <typename T>
std::string Bytes(T v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof(T));
}

TEST(StatisticsTest, OrderFollowsLogicalType) {
  auto schema = std::make_shared<arrow::Schema>(
      std::vector<arrow::Field>{{"u32", DataType::UInt32()},
                                {"i32", DataType::Int32()},
                                {"s", DataType::String()},
                                {"dec", DataType::Decimal128(30, 0)},
                                {"f", DataType::Float64()}});
  arrow::UInt32Builder u(DataType::UInt32());
  arrow::Int32Builder i(DataType::Int32());
  arrow::BinaryBuilder s(DataType::String());
  arrow::FixedSizeBinaryBuilder d(DataType::Decimal128(30, 0));
  arrow::DoubleBuilder f(DataType::Float64());
  for (uint32_t v : {5u, 0xffffffffu, 1u}) ASSERT_OK(u.Append(v));
  for (int32_t v : {5, -1, 3}) ASSERT_OK(i.Append(v));
  for (const char* v : {"b", "\xff", "a"}) ASSERT_OK(s.Append(v));
  for (int v : {-300, 2, -1}) ASSERT_OK(d.AppendDecimal(v));
  for (double v : {double(NAN), -0.0, 0.0}) ASSERT_OK(f.Append(v));
  auto batch = arrow::RecordBatch::Make(
                   schema, 3,
                   {u.Finish().ValueOrDie(), i.Finish().ValueOrDie(), s.Finish().ValueOrDie(),
                    d.Finish().ValueOrDie(), f.Finish().ValueOrDie()})
                   .ValueOrDie();
  for (bool dict : {true, false}) {
    WriterOptions options;
    options.dictionary = dict;
    FileMetrics metrics;
    auto file = WriteToString(schema, {batch}, options, &metrics).ValueOrDie();
    EXPECT_EQ(StatOf(file, 0, false), Bytes<uint32_t>(1));
    EXPECT_EQ(StatOf(file, 0, true), Bytes<uint32_t>(0xffffffffu));
    EXPECT_EQ(StatOf(file, 1, false), Bytes<int32_t>(-1));
    EXPECT_EQ(StatOf(file, 1, true), Bytes<int32_t>(5));
    EXPECT_EQ(StatOf(file, 2, false), "a");
    EXPECT_EQ(StatOf(file, 2, true), "\xff");
    // decimal(30) is 13 big-endian bytes: -300 = ...FE D4.
    EXPECT_EQ(StatOf(file, 3, false), std::string(11, '\xff') + "\xfe\xd4");
    EXPECT_EQ(StatOf(file, 3, true), std::string(12, '\0') + "\x02");
    // Floats: NaN is left out, zeros are -0.0 (min) and +0.0 (max).
    EXPECT_EQ(StatOf(file, 4, false), Bytes<double>(-0.0));
    EXPECT_EQ(StatOf(file, 4, true), Bytes<double>(0.0));
    EXPECT_EQ(metrics.columns[4].nan_count, 1);
    EXPECT_EQ(metrics.columns[0].lower_bound, Bytes<uint32_t>(1));
  }
}

TEST(StatisticsTest, AllNaNHasNoMinMax) {
  auto schema =
      std::make_shared<arrow::Schema>(std::vector<arrow::Field>{{"f", DataType::Float32()}});
  arrow::FloatBuilder f(DataType::Float32());
  ASSERT_OK(f.Append(NAN));
  ASSERT_OK(f.AppendNull());
  auto batch = arrow::RecordBatch::Make(schema, 2, {f.Finish().ValueOrDie()}).ValueOrDie();
  FileMetrics metrics;
  auto file = WriteToString(schema, {batch}, {}, &metrics).ValueOrDie();
  EXPECT_EQ(StatOf(file, 0, false), "<none>");
  EXPECT_FALSE(metrics.columns[0].lower_bound.has_value());
  EXPECT_EQ(metrics.columns[0].null_count, 1);
}

TEST(ReaderTest, Projection) {
  auto schema = std::make_shared<arrow::Schema>(
      std::vector<arrow::Field>{{"id", DataType::Int64()}, {"name", DataType::String()}});
  std::vector<arrow::RecordBatchPtr> batches;
  for (int g = 0; g < 4; ++g) {
    arrow::Int64Builder ids(DataType::Int64());
    arrow::BinaryBuilder names(DataType::String());
    for (int r = 0; r < 100; ++r) {
      ASSERT_OK(ids.Append(g * 100 + r));
      ASSERT_OK(names.Append("group" + std::to_string(g)));
    }
    batches.push_back(arrow::RecordBatch::Make(
                          schema, 100, {ids.Finish().ValueOrDie(), names.Finish().ValueOrDie()})
                          .ValueOrDie());
  }
  WriterOptions options;
  options.row_group_rows = 100;
  auto file = WriteToString(schema, batches, options).ValueOrDie();

  ReaderOptions ro;
  ro.columns = {"name"};
  auto out = ReadAll(file, ro);
  ASSERT_EQ(out.size(), 4u);  // one batch per row group
  EXPECT_EQ(out[2]->schema()->num_fields(), 1);
  EXPECT_EQ(out[2]->schema()->field(0).name, "name");
  EXPECT_EQ(out[2]->column(0).GetView(0), "group2");
}

// Through the FileSystem seam: the writer's bytes go through File::WriteAt (so write faults
// reach it), and a reader opened on a File reads a row group's chunks, not the whole file.
TEST(ReaderTest, WritesAndReadsThroughTheFileSystemSeam) {
  auto schema = std::make_shared<arrow::Schema>(std::vector<arrow::Field>{
      {"a", DataType::Int64()}, {"b", DataType::Int64()}, {"c", DataType::String()}});
  auto batch = testing::RandomBatch(schema, 1000, 7, 16);
  WriterOptions options;
  options.row_group_rows = 100;
  char dir_template[] = "/tmp/oxbow_parquet_fs_XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string path = dir + "/f.parquet";
  auto fs = std::make_shared<FaultInjectionFileSystem>(PosixFileSystem::Default());

  fs->FailWrites(Status::ResourceExhausted("disk full"), 0, -1, ".parquet");
  auto failing = FileWriter::Open(schema, *fs, path, options);
  Status st = failing.ok() ? failing.ValueOrDie()->Write(*batch) : failing.status();
  if (st.ok()) st = failing.ValueOrDie()->Close().status();
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  fs->ClearFaults();

  auto writer = FileWriter::Open(schema, *fs, path, options).ValueOrDie();
  ASSERT_OK(writer->Write(*batch));
  ASSERT_OK(writer->Close().status());
  EXPECT_GE(fs->counters().file_syncs, 1);  // Close made the file durable
  const int64_t size = fs->FileSize(path).ValueOrDie();

  fs->ResetCounters();
  auto reader = FileReader::Open(*fs, path).ValueOrDie();
  ASSERT_EQ(reader->num_row_groups(), 10);
  auto group = reader->ReadRowGroup(3, {0, 2}).ValueOrDie();
  EXPECT_TRUE(group->column(0).Equals(batch->Slice(300, 100)->column(0)));
  EXPECT_TRUE(group->column(1).Equals(batch->Slice(300, 100)->column(2)));
  EXPECT_LT(fs->counters().bytes_read, size / 2);  // the footer and two chunks of one group
  const auto from_file = reader->Read().ValueOrDie();
  const auto from_memory = ReadAll(std::string(ReadWholeFile(*fs, path).ValueOrDie()->view()));
  ASSERT_EQ(from_file.size(), from_memory.size());
  for (size_t i = 0; i < from_file.size(); ++i) EXPECT_TRUE(from_file[i]->Equals(*from_memory[i]));

  // Errors name the file.
  ASSERT_OK(fs->OpenFile(path, FileMode::kWrite).ValueOrDie()->Truncate(size - 3));
  st = FileReader::Open(*fs, path).status();
  EXPECT_NE(st.message().find(path), std::string::npos) << st.ToString();
  EXPECT_TRUE(FileReader::Open(*fs, dir + "/missing.parquet").status().IsNotFound());
  std::filesystem::remove_all(dir);
}

TEST(WriterTest, RejectsNullsInRequiredColumnAndBadBatches) {
  auto schema = std::make_shared<arrow::Schema>(
      std::vector<arrow::Field>{{"x", DataType::Int32(), /*nullable=*/false}});
  arrow::Int32Builder b(DataType::Int32());
  ASSERT_OK(b.AppendNull());
  auto batch = std::make_shared<arrow::RecordBatch>(
      schema, 1, std::vector<arrow::Array>{b.Finish().ValueOrDie()});
  auto st = WriteToString(schema, {batch}).status();
  EXPECT_TRUE(st.IsInvalid());
  EXPECT_NE(st.message().find("'x'"), std::string::npos);
}

// 1000 random rows of `schema` in row groups of 300 and pages of about 512 bytes.
std::string SmallPagesFile(const arrow::SchemaPtr& schema, int data_page_version) {
  WriterOptions options;
  options.data_page_version = data_page_version;
  options.row_group_rows = 300;
  options.data_page_size = 512;
  return WriteToString(schema, {testing::RandomBatch(schema, 1000, 5, 30)}, options).ValueOrDie();
}

TEST(ReaderTest, CorruptedPageFailsItsChecksumNamingWhereItIs) {
  auto schema = testing::EveryTypeSchema();
  for (const int version : {1, 2}) {
    const std::string file = SmallPagesFile(schema, version);
    int corrupted = 0;
    for (const FilePage& page : PagesOf(file)) {
      if (page.body.empty()) continue;
      std::string corrupt = file;
      corrupt[static_cast<size_t>(page.body.data() - file.data()) + page.body.size() / 2] ^= 0x10;
      const std::vector<int> column = {page.column};
      auto reader = FileReader::Open(ToBuffer(corrupt), {.path = "lake/x.parquet"}).ValueOrDie();
      const Status st = reader->ReadRowGroup(page.row_group, column).status();
      ASSERT_TRUE(st.IsCorruption()) << st.ToString();
      const std::string where = "lake/x.parquet: row group " + std::to_string(page.row_group) +
                                ": column '" + schema->field(page.column).name +
                                "': page at offset " + std::to_string(page.offset) +
                                " fails its checksum";
      EXPECT_EQ(st.message().rfind(where, 0), 0u) << st.message();
      // Unverified, the same byte is not caught as a checksum failure (it may go unnoticed).
      auto unverified = FileReader::Open(ToBuffer(corrupt), {.verify_page_checksums = false});
      const Status quiet = (*unverified)->ReadRowGroup(page.row_group, column).status();
      EXPECT_EQ(quiet.message().find("checksum"), std::string::npos) << quiet.ToString();
      ++corrupted;
    }
    EXPECT_GT(corrupted, 100);
  }
}

TEST(ReaderTest, PagesWithoutChecksumsAreRead) {
  auto schema = testing::EveryTypeSchema();
  auto batch = testing::RandomBatch(schema, 1000, 6, 30);
  WriterOptions options;
  options.page_checksums = false;
  ExpectSameRows(*batch, ReadAll(WriteToString(schema, {batch}, options).ValueOrDie()));
}

// ---- Whole-file verification ----

FileVerifyReport Verify(const std::string& file, const std::string& path = "lake/x.parquet") {
  testing::StringFile source(path, file);
  auto report = VerifyFile(source);
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return report.ok() ? *report : FileVerifyReport{};
}

TEST(VerifyTest, ChecksEveryPageOfOurFiles) {
  auto schema = testing::EveryTypeSchema();
  auto batch = testing::RandomBatch(schema, 3000, 7, 40);
  for (const Codec codec :
       {Codec::kUncompressed, Codec::kSnappy, Codec::kGzip, Codec::kZstd, Codec::kLz4Raw}) {
    for (const int version : {1, 2}) {
      for (const bool dictionary : {true, false}) {
        WriterOptions options;
        options.compression = codec;
        options.data_page_version = version;
        options.dictionary = dictionary;
        options.row_group_rows = 1000;
        options.data_page_size = 2048;
        const std::string file = WriteToString(schema, {batch}, options).ValueOrDie();
        const auto pages = PagesOf(file);
        int64_t body_bytes = 0;
        for (const FilePage& page : pages) body_bytes += static_cast<int64_t>(page.body.size());
        const FileVerifyReport report = Verify(file);
        ASSERT_TRUE(report.ok()) << report.problem.ToString();
        EXPECT_EQ(report.file_size, static_cast<int64_t>(file.size()));
        EXPECT_EQ(report.row_groups, 3);
        EXPECT_EQ(report.column_chunks, 3 * schema->num_fields());
        EXPECT_EQ(report.pages, static_cast<int64_t>(pages.size()));
        EXPECT_EQ(report.pages_checked, report.pages);
        EXPECT_EQ(report.pages_without_crc, 0);
        EXPECT_EQ(report.bytes_checked, body_bytes);
        EXPECT_GE(report.bytes_read, body_bytes);
      }
    }
  }
}

TEST(VerifyTest, CountsPagesWithoutChecksums) {
  auto schema = testing::EveryTypeSchema();
  WriterOptions options;
  options.page_checksums = false;
  const std::string file =
      WriteToString(schema, {testing::RandomBatch(schema, 3000, 8, 40)}, options).ValueOrDie();
  const FileVerifyReport report = Verify(file);
  ASSERT_TRUE(report.ok()) << report.problem.ToString();
  EXPECT_EQ(report.pages, static_cast<int64_t>(PagesOf(file).size()));
  EXPECT_EQ(report.pages_without_crc, report.pages);
  EXPECT_EQ(report.pages_checked, 0);
  EXPECT_EQ(report.bytes_checked, 0);
}

TEST(VerifyTest, NamesEveryCorruptedPageAsTheReaderDoes) {
  auto schema = testing::EveryTypeSchema();
  for (const int version : {1, 2}) {
    const std::string file = SmallPagesFile(schema, version);
    for (const FilePage& page : PagesOf(file)) {
      if (page.body.empty()) continue;
      std::string corrupt = file;
      corrupt[static_cast<size_t>(page.body.data() - file.data()) + page.body.size() - 1] ^= 0x80;
      const FileVerifyReport report = Verify(corrupt);
      ASSERT_TRUE(report.problem.IsCorruption()) << report.problem.ToString();
      auto reader = FileReader::Open(ToBuffer(corrupt), {.path = "lake/x.parquet"}).ValueOrDie();
      const Status read = reader->ReadRowGroup(page.row_group, {page.column}).status();
      EXPECT_EQ(report.problem.message(), read.message());
    }
  }
}

TEST(VerifyTest, ReadsLargePagesInBoundedPieces) {
  auto schema = std::make_shared<arrow::Schema>(
      std::vector<arrow::Field>{{"s", DataType::String(), /*nullable=*/false}});
  arrow::BinaryBuilder builder(DataType::String());
  std::mt19937_64 rng(3);
  for (int i = 0; i < 3000; ++i) {
    std::string value(1000, '\0');
    for (char& c : value) c = static_cast<char>(rng());
    ASSERT_OK(builder.Append(value));
  }
  auto batch = std::make_shared<arrow::RecordBatch>(
      schema, 3000, std::vector<arrow::Array>{builder.Finish().ValueOrDie()});
  WriterOptions options;
  options.compression = Codec::kUncompressed;
  options.dictionary = false;
  options.data_page_size = int64_t{8} << 20;  // one page of 3 MB
  const std::string file = WriteToString(schema, {batch}, options).ValueOrDie();
  testing::StringFile source("big.parquet", file);
  const FileVerifyReport report = VerifyFile(source).ValueOrDie();
  ASSERT_TRUE(report.ok()) << report.problem.ToString();
  EXPECT_EQ(report.pages_checked, 1);
  EXPECT_GT(report.bytes_checked, 3000000);
  EXPECT_LE(source.largest_read, int64_t{1} << 20);
}

TEST(VerifyTest, FindsValueCountsThatDoNotAddUp) {
  // The crc covers a page's bytes but not its header: a header whose value count is off (with
  // the header's length unchanged) is still caught.
  auto schema = testing::EveryTypeSchema();
  const std::string file =
      WriteToString(schema, {testing::RandomBatch(schema, 100, 9, 40)}).ValueOrDie();
  for (const FilePage& page : PagesOf(file)) {
    if (page.header.type != PageType::kDataPage) continue;
    PageHeader header = page.header;
    header.data_page_header->num_values -= 1;  // 100 -> 99: the same varint length
    std::string bytes;
    SerializePageHeader(header, &bytes);
    const size_t header_size = static_cast<size_t>(page.body.data() - file.data() - page.offset);
    ASSERT_EQ(bytes.size(), header_size);
    std::string tampered = file;
    tampered.replace(static_cast<size_t>(page.offset), bytes.size(), bytes);
    const FileVerifyReport report = Verify(tampered);
    EXPECT_TRUE(report.problem.IsCorruption());
    EXPECT_EQ(report.problem.message(), "lake/x.parquet: row group 0: column '" +
                                            schema->field(page.column).name +
                                            "': data pages hold 99 values, the chunk's "
                                            "metadata says 100");
    return;
  }
  FAIL() << "no data page";
}

TEST(VerifyTest, FooterAndFileEndProblems) {
  auto schema = testing::EveryTypeSchema();
  const std::string file =
      WriteToString(schema, {testing::RandomBatch(schema, 200, 10, 40)}).ValueOrDie();
  EXPECT_EQ(Verify("").problem.message(),
            "lake/x.parquet: parquet: file of 0 bytes is too short (at least 12 needed)");
  EXPECT_TRUE(Verify(file.substr(0, file.size() - 1)).problem.IsCorruption());
  EXPECT_TRUE(Verify(file.substr(0, file.size() / 2)).problem.IsCorruption());
  std::string bad_footer = file;
  bad_footer[file.size() - 20] ^= 0xff;  // inside the footer's Thrift bytes
  const Status footer = Verify(bad_footer).problem;
  EXPECT_FALSE(footer.ok());
  EXPECT_EQ(footer.message().rfind("lake/x.parquet: parquet", 0), 0u) << footer.ToString();
}

TEST(VerifyTest, ReadFailuresAreErrorsNotProblems) {
  auto schema = testing::EveryTypeSchema();
  testing::StringFile source(
      "x.parquet", WriteToString(schema, {testing::RandomBatch(schema, 10, 1)}).ValueOrDie());
  source.read_error = Status::IOError("read x.parquet: Input/output error");
  EXPECT_TRUE(VerifyFile(source).status().IsIOError());
  EXPECT_TRUE(
      VerifyFile(*PosixFileSystem::Default(), "/nonexistent/x.parquet").status().IsNotFound());
}

TEST(ReaderTest, MalformedFilesFailCleanly) {
  auto schema = oxbow::testing::EveryTypeSchema();
  auto batch = oxbow::testing::RandomBatch(schema, 200, 9, 20);
  WriterOptions options;
  options.row_group_rows = 64;
  const std::string file = WriteToString(schema, {batch}, options).ValueOrDie();

  EXPECT_TRUE(FileReader::Open(ToBuffer("PAR1")).status().IsCorruption());
  std::string bad_magic = file;
  bad_magic[bad_magic.size() - 1] = 'X';
  EXPECT_NE(FileReader::Open(ToBuffer(bad_magic)).status().message().find("magic"),
            std::string::npos);
  std::string bad_len = file;
  bad_len[bad_len.size() - 5] = '\x7f';
  EXPECT_NE(FileReader::Open(ToBuffer(bad_len)).status().message().find("footer length"),
            std::string::npos);

  // Truncations: the footer is found at the new end, so these fail at Open.
  for (size_t n = 0; n < file.size(); n += 97) {
    EXPECT_FALSE(FileReader::Open(ToBuffer(file.substr(0, n))).ok());
  }
  // Flip bytes in the data region: Open succeeds, reads may fail but must not crash.
  std::mt19937 rng(1);
  int failures = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string corrupt = file;
    const size_t pos = 4 + rng() % (file.size() - 200);
    corrupt[pos] = static_cast<char>(rng());
    auto reader = FileReader::Open(ToBuffer(corrupt));
    if (!reader.ok()) {
      ++failures;
      continue;
    }
    auto r = (*reader)->Read();
    if (!r.ok()) {
      ++failures;
      EXPECT_FALSE(r.status().message().empty());
    }
  }
  EXPECT_GT(failures, 0);
}

}  // namespace
}  // namespace oxbow::parquet
