#include "oxbow/arrow/ipc.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "oxbow/arrow/builder.h"
#include "oxbow/arrow/ipc_internal.h"
#include "oxbow/testing/every_type.h"
#include "oxbow/testing/nested.h"

namespace oxbow::arrow::ipc {
namespace {

namespace fb = internal::fb;

#define ASSERT_OK(expr)                                            \
  do {                                                             \
    ::oxbow::Status _s = ::oxbow::internal::GenericToStatus(expr); \
    ASSERT_TRUE(_s.ok()) << _s.ToString();                         \
  } while (false)

// Every type, plus what IPC must carry through: a required column with field metadata, a named
// time zone and schema metadata.
SchemaPtr AllTypesSchema() {
  std::vector<Field> fields = {
      {"id", DataType::Int64(), false, {{"PARQUET:field_id", "1"}}},
      {"tstz", DataType::Timestamp(TimeUnit::kNano, "Europe/Paris")},
  };
  const SchemaPtr every_type = oxbow::testing::EveryTypeSchema();
  for (const Field& f : every_type->fields()) fields.push_back(f);
  return std::make_shared<const Schema>(std::move(fields),
                                        KeyValueMetadata{{"origin", "oxbow test"}});
}

RecordBatchPtr MakeBatch(const SchemaPtr& schema, int64_t n) {
  return oxbow::testing::RandomBatch(schema, n, static_cast<uint32_t>(n));
}

std::shared_ptr<Buffer> WriteToBuffer(const SchemaPtr& schema,
                                      const std::vector<RecordBatchPtr>& batches, bool file,
                                      WriteOptions options = {}) {
  auto sink = std::make_shared<StringSink>();
  EXPECT_TRUE(WriteAll(sink, schema, batches, file, options).ok());
  return Buffer::FromString(sink->Take());
}

void ExpectSameBatches(const std::vector<RecordBatchPtr>& expected,
                       const std::vector<RecordBatchPtr>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_OK(actual[i]->Validate());
    EXPECT_TRUE(expected[i]->Equals(*actual[i])) << "batch " << i;
  }
}

struct Format {
  bool file;
  Codec codec;
};

class RoundTripTest : public ::testing::TestWithParam<Format> {};

TEST_P(RoundTripTest, AllTypesWithNulls) {
  const auto schema = AllTypesSchema();
  std::vector<RecordBatchPtr> batches = {MakeBatch(schema, 100), MakeBatch(schema, 1),
                                         MakeBatch(schema, 0), MakeBatch(schema, 1000)};
  WriteOptions options;
  options.codec = GetParam().codec;
  auto data = WriteToBuffer(schema, batches, GetParam().file, options);
  EXPECT_EQ(IsFileFormat(data->view()), GetParam().file);
  auto table = ReadAll(data);
  ASSERT_OK(table);
  EXPECT_TRUE(table->schema->Equals(*schema, /*check_metadata=*/true));
  EXPECT_EQ(FindMetadata(table->schema->metadata(), "origin"), "oxbow test");
  EXPECT_EQ(FindMetadata(table->schema->field(0).metadata, "PARQUET:field_id"), "1");
  EXPECT_FALSE(table->schema->field(0).nullable);
  EXPECT_EQ(table->schema->field(1).type.timezone(), "Europe/Paris");
  ExpectSameBatches(batches, table->batches);
}

TEST_P(RoundTripTest, SlicedBatches) {
  const auto schema = AllTypesSchema();
  auto full = MakeBatch(schema, 300);
  // Offsets that are and are not byte-aligned, and string offsets that need rebasing.
  std::vector<RecordBatchPtr> batches = {full->Slice(3, 17), full->Slice(8, 100),
                                         full->Slice(299, 1), full->Slice(150, 0),
                                         full->Slice(13, 287)};
  WriteOptions options;
  options.codec = GetParam().codec;
  auto table = ReadAll(WriteToBuffer(schema, batches, GetParam().file, options));
  ASSERT_OK(table);
  ExpectSameBatches(batches, table->batches);
}

TEST_P(RoundTripTest, ProjectionEqualsDecodeThenSelect) {
  const auto schema = AllTypesSchema();
  auto batch = MakeBatch(schema, 333)->Slice(5, 300);
  WriteOptions options;
  options.codec = GetParam().codec;
  ASSERT_OK(EncodeRecordBatch(*batch, options));
  auto encoded = EncodeRecordBatch(*batch, options).ValueOrDie();
  auto body = encoded.BodyAsBuffer().ValueOrDie();
  for (const std::vector<int>& columns : std::vector<std::vector<int>>{
           {0}, {11, 1}, {16, 17, 15}, {3, 3}, {}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}) {
    auto projector = RecordBatchProjector::Make(schema, columns);
    ASSERT_OK(projector);
    auto projected = projector->Project(*encoded.metadata, body);
    ASSERT_OK(projected);
    int64_t pieces = 0;
    for (const auto& p : projected->body) pieces += p->size();
    EXPECT_EQ(pieces, projected->body_length);
    EXPECT_LE(projected->body_length, encoded.body_length + 8);
    auto decoded = DecodeRecordBatch(projector->projected_schema(), *projected->metadata,
                                     projected->BodyAsBuffer().ValueOrDie());
    ASSERT_OK(decoded);
    auto expected = batch->SelectColumns(columns).ValueOrDie();
    EXPECT_TRUE(expected->Equals(**decoded));
    // The projected message also travels through an encapsulated stream.
    auto sink = std::make_shared<StringSink>();
    auto writer = StreamWriter::Open(sink, projector->projected_schema()).ValueOrDie();
    ASSERT_OK(writer->WriteEncodedRecordBatch(*projected));
    ASSERT_OK(writer->Close());
    auto table = ReadAll(Buffer::FromString(sink->Take()));
    ASSERT_OK(table);
    ASSERT_EQ(table->batches.size(), 1u);
    EXPECT_TRUE(expected->Equals(*table->batches[0]));
  }
}

INSTANTIATE_TEST_SUITE_P(All, RoundTripTest,
                         ::testing::Values(Format{false, Codec::kNone}, Format{true, Codec::kNone},
                                           Format{false, Codec::kLz4Frame},
                                           Format{true, Codec::kLz4Frame},
                                           Format{false, Codec::kZstd}, Format{true, Codec::kZstd}),
                         [](const auto& info) {
                           return std::string(info.param.file ? "File" : "Stream") + "_" +
                                  std::string(CodecName(info.param.codec));
                         });

TEST(IpcTest, DecodeIsZeroCopy) {
  const auto schema = AllTypesSchema();
  auto data = WriteToBuffer(schema, {MakeBatch(schema, 50)}, false);
  auto table = ReadAll(data).ValueOrDie();
  const uint8_t* begin = data->data();
  const uint8_t* end = begin + data->size();
  for (const Array& column : table.batches[0]->columns()) {
    for (const auto& buffer : column.data()->buffers) {
      if (!buffer || buffer->size() == 0) continue;
      EXPECT_TRUE(buffer->data() >= begin && buffer->data() + buffer->size() <= end)
          << column.type().ToString();
    }
  }
}

TEST(IpcTest, RecordBatchMessagesCarryCustomMetadata) {
  const auto schema = AllTypesSchema();
  const auto batch = MakeBatch(schema, 5);
  WriteOptions options;
  options.batch_metadata = {{"kafka.producer", "7 0 0 4"}, {"empty", ""}};
  auto message = EncodeRecordBatch(*batch, options).ValueOrDie();
  EXPECT_EQ(MessageCustomMetadata(*message.metadata).ValueOrDie(), options.batch_metadata);
  auto body = message.BodyAsBuffer().ValueOrDie();
  auto decoded = DecodeRecordBatch(schema, *message.metadata, body).ValueOrDie();
  EXPECT_TRUE(decoded->Equals(*batch));
  auto plain = EncodeRecordBatch(*batch).ValueOrDie();
  EXPECT_TRUE(MessageCustomMetadata(*plain.metadata).ValueOrDie().empty());
}

TEST(IpcTest, EncodeIsZeroCopyAndOmitsEmptyBitmaps) {
  auto schema = std::make_shared<const Schema>(
      std::vector<Field>{{"x", DataType::Int64(), false}, {"s", DataType::String()}});
  auto batch = MakeBatch(schema, 10);
  auto encoded = EncodeRecordBatch(*batch).ValueOrDie();
  const fb::Message* message = fb::GetMessage(encoded.metadata->data());
  const auto* buffers = message->header_as_RecordBatch()->buffers();
  ASSERT_EQ(buffers->size(), 5u);
  EXPECT_EQ(buffers->Get(0)->length(), 0);   // x has no nulls: empty bitmap
  EXPECT_EQ(buffers->Get(1)->length(), 80);  // 10 int64
  EXPECT_EQ(buffers->Get(2)->length(), 2);   // s has nulls: 2 bitmap bytes
  for (const fb::Buffer* b : *buffers) EXPECT_EQ(b->offset() % 8, 0);
  EXPECT_EQ(encoded.body_length % 8, 0);
  // The int64 values are the column's own memory.
  bool shared = false;
  for (const auto& piece : encoded.body) {
    shared |= piece->data() == batch->column(0).buffer(1)->data();
  }
  EXPECT_TRUE(shared);
  // Encapsulation: continuation marker, padded length, 8-aligned body.
  std::string bytes;
  encoded.AppendEncapsulatedTo(&bytes);
  EXPECT_EQ(static_cast<int64_t>(bytes.size()), encoded.EncapsulatedSize());
  EXPECT_EQ(bytes.substr(0, 4), std::string(4, '\xff'));
  int32_t length;
  std::memcpy(&length, bytes.data() + 4, 4);
  EXPECT_EQ(length % 8, 0);
  EXPECT_EQ(8 + length + encoded.body_length, static_cast<int64_t>(bytes.size()));
}

TEST(IpcTest, IncompressibleBuffersAreLeftUncompressed) {
  auto schema = std::make_shared<const Schema>(std::vector<Field>{{"x", DataType::UInt64()}});
  UInt64Builder b(DataType::UInt64());
  uint64_t state = 88172645463325252ull;
  for (int i = 0; i < 1000; ++i) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    ASSERT_OK(b.Append(state));
  }
  auto batch = RecordBatch::Make(schema, 1000, {b.Finish().ValueOrDie()}).ValueOrDie();
  WriteOptions options;
  options.codec = Codec::kZstd;
  auto encoded = EncodeRecordBatch(*batch, options).ValueOrDie();
  auto body = encoded.BodyAsBuffer().ValueOrDie();
  const fb::Message* message = fb::GetMessage(encoded.metadata->data());
  const fb::Buffer* values = message->header_as_RecordBatch()->buffers()->Get(1);
  int64_t prefix;
  std::memcpy(&prefix, body->data() + values->offset(), 8);
  EXPECT_EQ(prefix, -1);
  EXPECT_EQ(values->length(), 8 + 8000);
  auto decoded = DecodeRecordBatch(schema, *encoded.metadata, body).ValueOrDie();
  EXPECT_TRUE(decoded->Equals(*batch));
}

TEST(IpcTest, FileRandomAccessAndPaths) {
  const auto schema = AllTypesSchema();
  std::vector<RecordBatchPtr> batches = {MakeBatch(schema, 10), MakeBatch(schema, 20)};
  char path[] = "/tmp/oxbow_ipc_test_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_OK(WriteAll(FileSink::FromFd(fd, true), schema, batches, true));
  auto fs = PosixFileSystem::Default();
  auto data = ReadWholeFile(*fs, path).ValueOrDie();
  auto reader = FileReader::Open(data).ValueOrDie();
  ASSERT_EQ(reader->num_record_batches(), 2);
  EXPECT_TRUE(reader->ReadRecordBatch(1).ValueOrDie()->Equals(*batches[1]));
  EXPECT_TRUE(reader->ReadRecordBatch(2).status().IsOutOfRange());
  auto table = ReadPath(*fs, path).ValueOrDie();
  ExpectSameBatches(batches, table.batches);
  unlink(path);
  EXPECT_TRUE(ReadPath(*fs, path).status().IsNotFound());
}

TEST(IpcTest, BufferListSinkKeepsBodiesByReference) {
  const auto schema = AllTypesSchema();
  auto batch = MakeBatch(schema, 1000);
  auto sink = std::make_shared<BufferListSink>();
  ASSERT_OK(WriteAll(sink, schema, {batch}, false));
  bool shared = false;
  for (const auto& b : sink->buffers()) shared |= b->data() == batch->column(0).buffer(1)->data();
  EXPECT_TRUE(shared);
  auto table = ReadAll(sink->Concatenate().ValueOrDie()).ValueOrDie();
  ExpectSameBatches({batch}, table.batches);
}

TEST(IpcTest, StreamWriterRejectsOtherSchemas) {
  const auto schema = AllTypesSchema();
  auto other = std::make_shared<const Schema>(std::vector<Field>{{"x", DataType::Int64()}});
  auto writer = StreamWriter::Open(std::make_shared<StringSink>(), schema).ValueOrDie();
  EXPECT_FALSE(writer->WriteRecordBatch(*MakeBatch(other, 3)).ok());
}

TEST(IpcTest, LegacyMessagesWithoutContinuation) {
  const auto schema = AllTypesSchema();
  auto batch = MakeBatch(schema, 20);
  // Pre-0.15: int32 length, metadata, body; end marker is int32 0.
  std::string bytes;
  for (const auto& message :
       {EncodeSchema(*schema).ValueOrDie(), EncodeRecordBatch(*batch).ValueOrDie()}) {
    std::string full;
    message.AppendEncapsulatedTo(&full);
    bytes += full.substr(4);
  }
  bytes.append(4, '\0');
  auto table = ReadAll(Buffer::FromString(bytes));
  ASSERT_OK(table);
  ExpectSameBatches({batch}, table->batches);
}

TEST(IpcTest, UnsupportedTypesAreNamed) {
  flatbuffers::FlatBufferBuilder fbb;
  auto name = fbb.CreateString("tags");
  auto list = fb::CreateLargeList(fbb);
  auto children = fbb.CreateVector(std::vector<flatbuffers::Offset<fb::Field>>{});
  auto field = fb::CreateField(fbb, name, true, fb::Type::LargeList, list.Union(), 0, children);
  auto schema = fb::CreateSchema(fbb, fb::Endianness::Little, fbb.CreateVector(&field, 1));
  auto metadata = internal::FinishMessage(&fbb, fb::MessageHeader::Schema, schema.Union(), 0);
  auto result = DecodeSchema(*metadata);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kNotImplemented);
  EXPECT_NE(result.status().message().find("'tags'"), std::string::npos);
  EXPECT_NE(result.status().message().find("LargeList"), std::string::npos);

  flatbuffers::FlatBufferBuilder fbb2;
  auto idx = fb::CreateInt(fbb2, 32, true);
  auto dict = fb::CreateDictionaryEncoding(fbb2, 0, idx);
  auto utf8 = fb::CreateUtf8(fbb2);
  auto field2 =
      fb::CreateField(fbb2, fbb2.CreateString("cat"), true, fb::Type::Utf8, utf8.Union(), dict);
  auto schema2 = fb::CreateSchema(fbb2, fb::Endianness::Little, fbb2.CreateVector(&field2, 1));
  auto metadata2 = internal::FinishMessage(&fbb2, fb::MessageHeader::Schema, schema2.Union(), 0);
  auto result2 = DecodeSchema(*metadata2);
  EXPECT_EQ(result2.status().code(), StatusCode::kNotImplemented);
  EXPECT_NE(result2.status().message().find("dictionary"), std::string::npos);
}

// ---- Nested types ----

TEST(IpcNestedTest, RoundTripsWholeAndSliced) {
  const RecordBatchPtr batch = testing::NestedBatch();
  ASSERT_OK(batch->Validate());
  for (Codec codec : {Codec::kNone, Codec::kZstd}) {
    WriteOptions options;
    options.codec = codec;
    std::vector<RecordBatchPtr> batches = {batch, batch->Slice(1, 4), batch->Slice(5, 1),
                                           batch->Slice(3, 0)};
    auto table = ReadAll(WriteToBuffer(batch->schema(), batches, false, options));
    ASSERT_OK(table);
    EXPECT_TRUE(table->schema->Equals(*batch->schema()));
    ExpectSameBatches(batches, table->batches);
  }
  // Element equality sees into the children: row 0 differs from row 3 in every column.
  for (int c = 0; c < batch->num_columns(); ++c) {
    EXPECT_TRUE(batch->column(c).ElementEquals(0, batch->column(c), 0));
    EXPECT_FALSE(batch->column(c).ElementEquals(0, batch->column(c), 3)) << c;
  }
}

TEST(IpcNestedTest, ProjectionCarriesWholeTrees) {
  const RecordBatchPtr batch = testing::NestedBatch()->Slice(1, 5);
  auto encoded = EncodeRecordBatch(*batch).ValueOrDie();
  auto body = encoded.BodyAsBuffer().ValueOrDie();
  for (const std::vector<int>& columns :
       std::vector<std::vector<int>>{{3}, {1, 0}, {2, 2}, {3, 1, 2, 0}}) {
    auto projector = RecordBatchProjector::Make(batch->schema(), columns).ValueOrDie();
    auto projected = projector.Project(*encoded.metadata, body);
    ASSERT_OK(projected);
    auto decoded = DecodeRecordBatch(projector.projected_schema(), *projected->metadata,
                                     projected->BodyAsBuffer().ValueOrDie());
    ASSERT_OK(decoded);
    EXPECT_TRUE(batch->SelectColumns(columns).ValueOrDie()->Equals(**decoded));
  }
}

TEST(IpcNestedTest, MalformedChildrenAreRefused) {
  const RecordBatchPtr good = testing::NestedBatch();
  const SchemaPtr schema = good->schema();
  // A list whose last offset points past its child.
  Array l = Array::MakeNested(schema->field(0).type, 6,
                              {nullptr, testing::Int32Buffer({0, 2, 2, 2, 3, 6, 9})},
                              {testing::Int32Array({1, 0, 3, 4, 5, 6, 0}, {1, 1, 1, 1, 1, 1, 1})});
  auto bad = std::make_shared<const RecordBatch>(
      schema, 6, std::vector<Array>{l, good->column(1), good->column(2), good->column(3)});
  auto encoded = EncodeRecordBatch(*bad).ValueOrDie();
  auto decoded = DecodeRecordBatch(schema, *encoded.metadata, encoded.BodyAsBuffer().ValueOrDie());
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find("column 'l'"), std::string::npos)
      << decoded.status().ToString();
  // A batch of the nested schema read as a flat one: node counts differ.
  auto flat = std::make_shared<const Schema>(std::vector<Field>{{"l", DataType::Int32()},
                                                                {"s", DataType::Int32()},
                                                                {"f", DataType::Int32()},
                                                                {"m", DataType::Int32()}});
  auto ok = EncodeRecordBatch(*good).ValueOrDie();
  auto wrong = DecodeRecordBatch(flat, *ok.metadata, ok.BodyAsBuffer().ValueOrDie());
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("field nodes"), std::string::npos);
}

// ---- Malformed input ----

TEST(IpcMalformedTest, EveryTruncationFailsCleanly) {
  const auto schema = AllTypesSchema();
  for (bool file : {false, true}) {
    for (Codec codec : {Codec::kNone, Codec::kZstd}) {
      WriteOptions options;
      options.codec = codec;
      auto data = WriteToBuffer(schema, {MakeBatch(schema, 7)}, file, options);
      const std::string bytes(data->view());
      for (size_t n = 0; n + 8 < bytes.size(); ++n) {
        auto result = ReadAll(Buffer::FromString(bytes.substr(0, n)));
        // A stream cut exactly at a message boundary is a valid shorter stream.
        if (result.ok()) {
          EXPECT_FALSE(file) << n;
          EXPECT_TRUE(result->batches.empty()) << n;
        }
      }
    }
  }
}

TEST(IpcMalformedTest, CorruptBytesNeverCrash) {
  const auto schema = AllTypesSchema();
  for (Codec codec : {Codec::kNone, Codec::kLz4Frame}) {
    WriteOptions options;
    options.codec = codec;
    auto data = WriteToBuffer(schema, {MakeBatch(schema, 9)}, true, options);
    const std::string bytes(data->view());
    int failures = 0;
    for (size_t i = 0; i < bytes.size(); ++i) {
      for (uint8_t flip : {0x01, 0x80, 0xff}) {
        std::string copy = bytes;
        copy[i] = static_cast<char>(copy[i] ^ flip);
        auto result = ReadAll(Buffer::FromString(copy));
        if (!result.ok()) {
          ++failures;
          EXPECT_FALSE(result.status().message().empty());
        } else {
          // Duplicate field names are legal in Arrow, so check the columns only.
          for (const auto& b : result->batches) {
            for (const Array& column : b->columns()) {
              Status st = column.Validate();
              EXPECT_TRUE(st.ok()) << st.ToString();
            }
          }
        }
      }
    }
    EXPECT_GT(failures, 0);
  }
}

TEST(IpcMalformedTest, BadFlatbufferIsRejected) {
  std::string garbage("\xff\xff\xff\xff\x10\x00\x00\x00", 8);
  garbage += std::string("\x04\x00\x00\x00\xff\xff\xff\x7f\x01\x02\x03\x04\x05\x06\x07\x08", 16);
  auto result = StreamReader::Open(Buffer::FromString(garbage));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("flatbuffer"), std::string::npos)
      << result.status().ToString();
}

TEST(IpcMalformedTest, HugeLengthsAreRejected) {
  std::string bytes = "\xff\xff\xff\xff\xf0\xff\xff\x7f";  // metadata length ~2 GiB
  auto result = StreamReader::Open(Buffer::FromString(bytes));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("metadata bytes"), std::string::npos);
  std::string negative = "\xff\xff\xff\xff\xf0\xff\xff\xff";
  EXPECT_FALSE(StreamReader::Open(Buffer::FromString(negative)).ok());
}

// Rewrites one buffer descriptor of an encoded batch message.
std::shared_ptr<Buffer> WithBuffer(const EncodedMessage& encoded, int index, int64_t offset,
                                   int64_t length) {
  std::string copy(encoded.metadata->view());
  auto* message = fb::GetMutableMessage(copy.data());
  auto* batch = const_cast<fb::RecordBatch*>(message->header_as_RecordBatch());
  auto* buffers = const_cast<flatbuffers::Vector<const fb::Buffer*>*>(batch->buffers());
  auto* b = const_cast<fb::Buffer*>(buffers->Get(static_cast<flatbuffers::uoffset_t>(index)));
  b->mutate_offset(offset);
  b->mutate_length(length);
  return Buffer::CopyFrom(copy).ValueOrDie();
}

TEST(IpcMalformedTest, OutOfRangeBuffersAreRejected) {
  auto schema = std::make_shared<const Schema>(
      std::vector<Field>{{"x", DataType::Int32()}, {"s", DataType::String()}});
  auto batch = MakeBatch(schema, 10);
  auto encoded = EncodeRecordBatch(*batch).ValueOrDie();
  auto body = encoded.BodyAsBuffer().ValueOrDie();
  const int64_t n = encoded.body_length;
  for (auto [index, offset, length] :
       std::vector<std::tuple<int, int64_t, int64_t>>{{1, n, 40},
                                                      {1, -8, 40},
                                                      {1, 0, -1},
                                                      {1, INT64_MAX - 4, 40},
                                                      {1, 0, 8},  // too short for 10 int32
                                                      {4, 0, n + 1},
                                                      {3, 0, 4}}) {
    auto metadata = WithBuffer(encoded, index, offset, length);
    auto result = DecodeRecordBatch(schema, *metadata, body);
    EXPECT_FALSE(result.ok()) << index << " " << offset << " " << length;
    EXPECT_NE(result.status().message().find("column"), std::string::npos)
        << result.status().ToString();
  }
  // Projection checks ranges too.
  auto projector = RecordBatchProjector::Make(schema, {0}).ValueOrDie();
  EXPECT_FALSE(projector.Project(*WithBuffer(encoded, 1, n, 40), body).ok());
  // Wrong schema: node and buffer counts disagree.
  auto one = std::make_shared<const Schema>(std::vector<Field>{{"x", DataType::Int32()}});
  EXPECT_FALSE(DecodeRecordBatch(one, *encoded.metadata, body).ok());
  // Short body.
  EXPECT_FALSE(DecodeRecordBatch(schema, *encoded.metadata, Buffer::Slice(body, 0, n - 8)).ok());
}

// Rewrites the length of field node `index` of an encoded batch message.
std::shared_ptr<Buffer> WithNodeLength(const EncodedMessage& encoded, int index, int64_t length) {
  std::string copy(encoded.metadata->view());
  auto* message = fb::GetMutableMessage(copy.data());
  auto* batch = const_cast<fb::RecordBatch*>(message->header_as_RecordBatch());
  auto* nodes = const_cast<flatbuffers::Vector<const fb::FieldNode*>*>(batch->nodes());
  const_cast<fb::FieldNode*>(nodes->Get(static_cast<flatbuffers::uoffset_t>(index)))
      ->mutate_length(length);
  return Buffer::CopyFrom(copy).ValueOrDie();
}

// Found by ipc_reader_fuzzer: a child declaring nearly INT64_MAX values overflowed the bitmap size.
TEST(IpcMalformedTest, HugeNodeLengthsAreRejected) {
  const RecordBatchPtr batch = testing::NestedBatch();
  for (Codec codec : {Codec::kNone, Codec::kZstd}) {
    WriteOptions options;
    options.codec = codec;
    auto encoded = EncodeRecordBatch(*batch, options).ValueOrDie();
    auto body = encoded.BodyAsBuffer().ValueOrDie();
    const auto* nodes = fb::GetMessage(encoded.metadata->data())->header_as_RecordBatch()->nodes();
    for (int index = 0; index < static_cast<int>(nodes->size()); ++index) {
      for (int64_t length : {INT64_MAX, INT64_MAX - 5, INT64_MAX / 8 + 1, int64_t{1} << 40}) {
        auto result =
            DecodeRecordBatch(batch->schema(), *WithNodeLength(encoded, index, length), body);
        ASSERT_FALSE(result.ok()) << index << " " << length;
        EXPECT_NE(result.status().message().find("column"), std::string::npos)
            << result.status().ToString();
      }
    }
  }
}

TEST(IpcMalformedTest, DecompressionBombIsBounded) {
  auto schema = std::make_shared<const Schema>(std::vector<Field>{{"x", DataType::Int64(), false}});
  auto batch = MakeBatch(schema, 16);
  WriteOptions options;
  options.codec = Codec::kZstd;
  auto encoded = EncodeRecordBatch(*batch, options).ValueOrDie();
  // Replace the values buffer with a zstd frame of 64 MiB of zeros declaring that size.
  const int64_t huge = int64_t{64} << 20;
  std::string zeros(static_cast<size_t>(huge), '\0');
  auto frame = Compress(Codec::kZstd, zeros, 1).ValueOrDie();
  std::string body(8, '\0');
  std::memcpy(body.data(), &huge, 8);
  body += frame->view();
  auto metadata = WithBuffer(encoded, 1, 0, static_cast<int64_t>(body.size()));
  std::string meta_copy(metadata->view());
  fb::GetMutableMessage(meta_copy.data())->mutate_body_length(static_cast<int64_t>(body.size()));
  auto bomb_metadata = Buffer::CopyFrom(meta_copy).ValueOrDie();
  // Only the 128 bytes the column can use are decompressed.
  auto result = DecodeRecordBatch(schema, *bomb_metadata, Buffer::FromString(body));
  ASSERT_OK(result);
  EXPECT_EQ((*result)->column(0).buffer(1)->size(), 128);
  EXPECT_EQ((*result)->column(0).Value<int64_t>(15), 0);
  // A column needing more than the limit is refused before decompressing.
  ReadOptions small;
  small.max_decompressed_buffer_size = 64;
  auto refused = DecodeRecordBatch(schema, *bomb_metadata, Buffer::FromString(body), small);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("limit"), std::string::npos)
      << refused.status().ToString();
}

}  // namespace
}  // namespace oxbow::arrow::ipc
