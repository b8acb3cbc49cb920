#include <gtest/gtest.h>

#include "oxbow/kafka/broker_internal.h"
#include "oxbow/kafka/messages.h"
#include "oxbow/kafka/records.h"
#include "oxbow/kafka/wire.h"

namespace oxbow::kafka {
namespace {

TEST(WireTest, VarintsRoundTripAtTheirLimits) {
  Writer w;
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{63}, int64_t{-64}, int64_t{INT32_MAX},
                    int64_t{INT32_MIN}, INT64_MAX, INT64_MIN}) {
    w.Varlong(v);
  }
  w.UnsignedVarint(UINT32_MAX);
  Reader r(w.buffer());
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{63}, int64_t{-64}, int64_t{INT32_MAX},
                    int64_t{INT32_MIN}, INT64_MAX, INT64_MIN}) {
    EXPECT_EQ(r.Varlong(), v);
  }
  EXPECT_EQ(r.UnsignedVarint(), UINT32_MAX);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.remaining(), 0u);
}

TEST(WireTest, CompactAndClassicStringsAndNulls) {
  Writer w;
  w.String("abc", true);
  w.NullableString(std::nullopt, true);
  w.String("de", false);
  w.NullableString(std::nullopt, false);
  Reader r(w.buffer());
  EXPECT_EQ(r.String(true), "abc");
  EXPECT_EQ(r.NullableString(true), std::nullopt);
  EXPECT_EQ(r.String(false), "de");
  EXPECT_EQ(r.NullableString(false), std::nullopt);
  EXPECT_TRUE(r.ok());
}

TEST(WireTest, TruncationAndHugeArraysAreErrorsThatStick) {
  Writer w;
  w.Int32(1'000'000);  // an array length with 0 bytes behind it
  Reader r(w.buffer());
  EXPECT_EQ(r.ArrayLength(false), 0);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "array of 1000000 elements in 0 bytes");
  EXPECT_EQ(r.Int64(), 0);  // later reads return zero and keep the first error
  EXPECT_EQ(r.status().message(), "array of 1000000 elements in 0 bytes");

  Reader short_string(
      std::string_view("\x00\x05"
                       "ab",
                       4));
  (void)short_string.String(false);
  EXPECT_EQ(short_string.status().message(), "truncated bytes: needs 5 bytes, 2 left");
}

RecordBatch SampleBatch(Compression codec) {
  RecordBatch b;
  b.base_offset = 0;
  b.compression = codec;
  b.base_timestamp = 1'700'000'000'000;
  b.max_timestamp = b.base_timestamp + 2;
  b.producer_id = 7;
  b.producer_epoch = 1;
  b.base_sequence = 10;
  for (int i = 0; i < 3; ++i) {
    Record r;
    r.offset = i;
    r.timestamp_ms = b.base_timestamp + i;
    if (i != 1) r.key = "key-" + std::to_string(i);
    r.value = std::string(100 + i, static_cast<char>('a' + i));
    if (i == 2) r.headers = {{"h1", "v1"}, {"h2", std::nullopt}};
    b.records.push_back(std::move(r));
  }
  b.last_offset_delta = 2;
  return b;
}

class RecordBatchCodecTest : public ::testing::TestWithParam<Compression> {};

TEST_P(RecordBatchCodecTest, RoundTripsEveryField) {
  const RecordBatch batch = SampleBatch(GetParam());
  std::string bytes;
  ASSERT_TRUE(EncodeRecordBatch(batch, &bytes).ok());
  ASSERT_TRUE(EncodeRecordBatch(batch, &bytes).ok());  // two batches back to back
  auto decoded = DecodeRecordBatches(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_EQ(decoded->size(), 2u);
  const RecordBatch& d = decoded->at(1);
  EXPECT_EQ(d.compression, GetParam());
  EXPECT_EQ(d.producer_id, 7);
  EXPECT_EQ(d.producer_epoch, 1);
  EXPECT_EQ(d.base_sequence, 10);
  EXPECT_EQ(d.last_offset_delta, 2);
  ASSERT_EQ(d.records.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(d.records[i].key, batch.records[i].key);
    EXPECT_EQ(d.records[i].value, batch.records[i].value);
    EXPECT_EQ(d.records[i].timestamp_ms, batch.records[i].timestamp_ms);
    EXPECT_EQ(d.records[i].offset, static_cast<int64_t>(i));
  }
  ASSERT_EQ(d.records[2].headers.size(), 2u);
  EXPECT_EQ(d.records[2].headers[0].key, "h1");
  EXPECT_EQ(d.records[2].headers[0].value, "v1");
  EXPECT_EQ(d.records[2].headers[1].value, std::nullopt);
}

INSTANTIATE_TEST_SUITE_P(Codecs, RecordBatchCodecTest,
                         ::testing::Values(Compression::kNone, Compression::kGzip,
                                           Compression::kSnappy, Compression::kLz4,
                                           Compression::kZstd));

TEST(RecordBatchTest, CorruptionIsNamed) {
  std::string bytes;
  ASSERT_TRUE(EncodeRecordBatch(SampleBatch(Compression::kNone), &bytes).ok());
  std::string flipped = bytes;
  flipped.back() ^= 1;
  EXPECT_EQ(DecodeRecordBatches(flipped).status().message(),
            "record batch 0: CRC32C mismatch: the batch is corrupt");
  EXPECT_EQ(DecodeRecordBatches(bytes.substr(0, 30)).status().message(),
            "record batch 0: batch length " + std::to_string(bytes.size() - 12) +
                " does not fit the 30 bytes left");
  std::string magic1 = bytes;
  magic1[16] = 1;
  EXPECT_EQ(DecodeRecordBatches(magic1).status().message(),
            "record batch 0: magic 1 is not supported (only record batch v2, magic 2)");
}

TEST(RecordBatchTest, CorruptCompressedPayloadIsAnError) {
  RecordBatch batch = SampleBatch(Compression::kZstd);
  std::string bytes;
  ASSERT_TRUE(EncodeRecordBatch(batch, &bytes).ok());
  // Garble the compressed payload and recompute nothing: the CRC catches it first.
  bytes[bytes.size() - 5] ^= 0x55;
  EXPECT_FALSE(DecodeRecordBatches(bytes).ok());
}

TEST(MessagesTest, ApiVersionsV3RequestAndResponse) {
  Writer w;
  w.Int16(18);  // ApiVersions
  w.Int16(3);
  w.Int32(42);
  w.NullableString(std::string("client"), false);
  w.NoTaggedFields(true);
  w.String("librdkafka", true);
  w.String("2.16.1", true);
  w.NoTaggedFields(true);
  Reader r(w.buffer());
  const RequestHeader h = DecodeRequestHeader(r);
  EXPECT_EQ(h.correlation_id, 42);
  EXPECT_EQ(h.client_id, "client");
  auto req = DecodeApiVersions(r, 3);
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  EXPECT_EQ(req->client_software_name, "librdkafka");
  EXPECT_EQ(req->client_software_version, "2.16.1");
}

TEST(MessagesTest, TrailingBytesAreRefused) {
  Writer w;
  w.String("group", false);
  w.Int32(1);
  w.String("member", false);
  w.Int8(0);
  Reader r(w.buffer());
  EXPECT_EQ(DecodeHeartbeat(r, 0).status().message(), "1 bytes after the end of the request");
}

TEST(TopicsTest, TopicsMapToTables) {
  EXPECT_EQ(*internal::TableForTopic("orders"), "kafka.orders");
  EXPECT_EQ(*internal::TableForTopic("shop.orders"), "shop.orders");
  EXPECT_FALSE(internal::TableForTopic("a.b.c").ok());
  EXPECT_FALSE(internal::TableForTopic("").ok());
  EXPECT_EQ(internal::TopicForTable("kafka.orders"), "orders");
  EXPECT_EQ(internal::TopicForTable("shop.orders"), "shop.orders");
}

}  // namespace
}  // namespace oxbow::kafka
