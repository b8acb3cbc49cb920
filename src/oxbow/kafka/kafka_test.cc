#include <gtest/gtest.h>

#include <set>

#include "oxbow/arrow/builder.h"
#include "oxbow/arrow/compute.h"
#include "oxbow/kafka/avro_values_internal.h"
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
  auto req = Decode<msg::ApiVersionsRequest>(r, 3);
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
  EXPECT_EQ(Decode<msg::HeartbeatRequest>(r, 0).status().message(),
            "1 bytes after the end of the request");
}

// Every generated message, in every version served, decodes what it encodes.
template <typename Message>
void ExpectRoundTrips(const Message& m) {
  for (int16_t v = Message::kMinVersion; v <= Message::kMaxVersion; ++v) {
    const std::string bytes = Encode(m, v);
    Reader r(bytes);
    auto decoded = Decode<Message>(r, v);
    ASSERT_TRUE(decoded.ok()) << "v" << v << ": " << decoded.status().ToString();
    EXPECT_EQ(Encode(*decoded, v), bytes) << "v" << v;
  }
}

TEST(GeneratedCodecTest, EveryMessageRoundTripsInEveryVersion) {
  msg::ProduceRequest produce;
  produce.transactional_id = "tx";
  produce.topic_data.push_back({"t", Uuid{1}, {{3, std::string_view("batch")}}});
  ExpectRoundTrips(produce);
  msg::FetchResponse fetch;
  fetch.responses.push_back({"t", Uuid{2}, {}});
  fetch.responses[0].partitions.emplace_back().records = "records";
  ExpectRoundTrips(fetch);
  msg::MetadataRequest metadata;
  metadata.topics.emplace().push_back({Uuid{}, "t"});
  ExpectRoundTrips(metadata);
  ExpectRoundTrips(msg::OffsetFetchRequest{});
  ExpectRoundTrips(msg::OffsetFetchResponse{});
  ExpectRoundTrips(msg::JoinGroupResponse{});
  ExpectRoundTrips(msg::CreateTopicsResponse{});
  ExpectRoundTrips(msg::ApiVersionsResponse{});
  ExpectRoundTrips(msg::DescribeConfigsResponse{});
}

TEST(GeneratedCodecTest, FieldsExistOnlyInTheirVersions) {
  msg::ProduceRequest m;
  m.acks = -1;
  m.topic_data.push_back({"orders", Uuid{7}, {}});
  // v12 names the topic, v13 gives its id instead.
  const std::string v12_bytes = Encode(m, 12);
  Reader v12(v12_bytes);
  auto named = Decode<msg::ProduceRequest>(v12, 12);
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->topic_data[0].name, "orders");
  EXPECT_EQ(named->topic_data[0].topic_id, Uuid{});
  const std::string v13_bytes = Encode(m, 13);
  Reader v13(v13_bytes);
  auto by_id = Decode<msg::ProduceRequest>(v13, 13);
  ASSERT_TRUE(by_id.ok());
  EXPECT_EQ(by_id->topic_data[0].name, "");
  EXPECT_EQ(by_id->topic_data[0].topic_id, Uuid{7});
  // The transactional id (v3+) is not in v2 at all: the same bytes without its two.
  m.transactional_id = std::nullopt;
  EXPECT_EQ(Encode(m, 2).size() + 2, Encode(m, 3).size());
}

TEST(GeneratedCodecTest, TaggedFieldsAreSentWhenSetAndUnknownOnesSkipped) {
  msg::ProduceResponse m;
  auto& partition = m.responses.emplace_back().partition_responses.emplace_back();
  const std::string without = Encode(m, 10);
  partition.current_leader = {4, 9};
  const std::string with = Encode(m, 10);
  EXPECT_GT(with.size(), without.size());
  Reader r(with);
  auto decoded = Decode<msg::ProduceResponse>(r, 10);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->responses[0].partition_responses[0].current_leader.leader_id, 4);
  // v9 has no such tag: not sent.
  msg::ProduceResponse plain = m;
  plain.responses[0].partition_responses[0].current_leader = {};
  EXPECT_EQ(Encode(m, 9), Encode(plain, 9));

  // A heartbeat v4 with an unknown tag 5 (3 bytes) in its tagged fields.
  Writer w;
  w.String("group", true);
  w.Int32(1);
  w.String("member", true);
  w.NullableString(std::nullopt, true);
  w.UnsignedVarint(1);
  w.UnsignedVarint(5);
  w.UnsignedVarint(3);
  w.Raw("abc");
  Reader hr(w.buffer());
  auto heartbeat = Decode<msg::HeartbeatRequest>(hr, 4);
  ASSERT_TRUE(heartbeat.ok()) << heartbeat.status().ToString();
  EXPECT_EQ(heartbeat->member_id, "member");
}

TEST(GeneratedCodecTest, AKnownTaggedFieldMustFillItsBytes) {
  Writer w;  // a heartbeat response v4: throttle time, error, then tag 0 of 5 bytes
  w.Int32(0);
  w.Int16(0);
  w.UnsignedVarint(1);
  w.UnsignedVarint(0);
  w.UnsignedVarint(5);
  w.Raw("12345");
  Reader unknown(w.buffer());  // HeartbeatResponse knows no tag 0: skipped
  EXPECT_TRUE(Decode<msg::HeartbeatResponse>(unknown, 4).ok());

  msg::ProduceResponse m;
  m.responses.emplace_back().partition_responses.emplace_back().current_leader = {1, 2};
  std::string bytes = Encode(m, 10);
  // The partition's tagged field (leader id, epoch and its own empty tagged fields: 9 bytes)
  // said to be 10 bytes long.
  const size_t size_at = bytes.find(std::string("\x01\x00\x09", 3));
  ASSERT_NE(size_at, std::string::npos);
  bytes[size_at + 2] = 10;
  bytes.insert(size_at + 3 + 9, 1, '\0');
  Reader r(bytes);
  EXPECT_EQ(Decode<msg::ProduceResponse>(r, 10).status().message(),
            "tagged field 0: 1 bytes after the field's end");
}

TEST(GeneratedCodecTest, NullsAreWrittenEmptyWhereAVersionHasNoNull) {
  msg::JoinGroupResponse m;  // protocol_name: nullable from v7
  const std::string v6_bytes = Encode(m, 6);
  Reader v6(v6_bytes);
  auto decoded = Decode<msg::JoinGroupResponse>(v6, 6);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->protocol_name, "");
  const std::string v7_bytes = Encode(m, 7);
  Reader v7(v7_bytes);
  EXPECT_EQ(Decode<msg::JoinGroupResponse>(v7, 7)->protocol_name, std::nullopt);
}

TEST(GeneratedCodecTest, MalformedBodiesAreNamedErrors) {
  Writer w;
  w.Int32(1000000);  // a million topics in 4 bytes
  Reader huge(w.buffer());
  auto topics = Decode<msg::MetadataRequest>(huge, 1);
  EXPECT_FALSE(topics.ok());
  EXPECT_FALSE(topics.status().message().empty());
  Reader truncated(
      std::string_view("\x00\x05"
                       "ab",
                       4));
  auto handshake = Decode<msg::SaslHandshakeRequest>(truncated, 1);
  EXPECT_FALSE(handshake.ok());
  EXPECT_FALSE(handshake.status().message().empty());
  Reader unserved{std::string_view()};
  EXPECT_EQ(Decode<msg::SaslHandshakeRequest>(unserved, 0).status().message(),
            "SaslHandshakeRequest v0 is not served");
}

TEST(TopicsTest, TopicsMapToTables) {
  EXPECT_EQ(*kafka::TableForTopic("orders"), "kafka.orders");
  EXPECT_EQ(*kafka::TableForTopic("shop.orders"), "shop.orders");
  EXPECT_FALSE(kafka::TableForTopic("").ok());
  EXPECT_FALSE(kafka::TableForTopic("..").ok());
  EXPECT_FALSE(kafka::TableForTopic("a b").ok());
  EXPECT_FALSE(kafka::TableForTopic(std::string(250, 'a')).ok());
  catalog::TableDescriptor table;
  table.name = "kafka.orders";
  EXPECT_EQ(internal::TopicForTable(table), "orders");
  table.name = "shop.orders";
  EXPECT_EQ(internal::TopicForTable(table), "shop.orders");

  // Names that are no table names: readable start, hash of the whole name; distinct names,
  // distinct tables, and the kafka.topic property maps the table back.
  std::vector<std::string> names = {"com.acme.orders",
                                    "com.acme_orders.x",
                                    "com_acme.orders.x",
                                    ".orders",
                                    "orders.",
                                    "a..b",
                                    std::string(249, 'x'),
                                    std::string(248, 'x') + "y",
                                    "ns." + std::string(129, 'p')};
  std::set<std::string> tables;
  for (const std::string& name : names) {
    auto mapped = kafka::TableForTopic(name);
    ASSERT_TRUE(mapped.ok()) << name << ": " << mapped.status().ToString();
    EXPECT_TRUE(catalog::ValidateTableName(*mapped).ok()) << *mapped;
    tables.insert(*mapped);
    table.name = *mapped;
    table.properties[internal::kTopicProperty] = name;
    EXPECT_EQ(internal::TopicForTable(table), name);
  }
  EXPECT_EQ(tables.size(), names.size());
  EXPECT_TRUE(kafka::TableForTopic("com.acme.orders")->starts_with("kafka.com_acme_orders_"));
  EXPECT_EQ(*kafka::TableForTopic("com.acme.orders"), *kafka::TableForTopic("com.acme.orders"));
  // A property naming another topic does not rename a table.
  table.name = "kafka.orders";
  table.properties[internal::kTopicProperty] = "com.acme.orders";
  EXPECT_EQ(internal::TopicForTable(table), "orders");
}

// A JSON primary-key table keyed by "id": records upsert and delete in runs, and a changelog
// batch becomes keyed records without its "-U" row, its "-D" row a tombstone.
TEST(KeyedTopicTest, RecordsAreChangesAndTheChangelogIsRecords) {
  using arrow::DataType;
  catalog::TableDescriptor table;
  table.schema = std::make_shared<const arrow::Schema>(std::vector<arrow::Field>{
      {"id", DataType::Int64(), false, {}}, {"item", DataType::String(), true, {}}});
  table.primary_key = {"id"};
  table.properties["kafka.value.format"] = "json";
  const internal::TopicFormat format = internal::FormatOf(table);
  ASSERT_EQ(format.kind, internal::TableKind::kJson);
  ASSERT_EQ(format.key_columns, std::vector<int>{0});

  RecordBatch produced;
  for (const auto& [key, value] :
       std::vector<std::pair<std::optional<std::string>, std::optional<std::string>>>{
           {R"({"id": 1})", R"({"id": 1, "item": "a"})"},
           {std::nullopt, R"({"id": 2, "item": "b"})"},
           {R"({"id": 1})", std::nullopt},
           {R"({"id": 3})", R"({"id": 3, "item": null})"}}) {
    produced.records.push_back({0, 0, key, value, {}});
  }
  auto runs = internal::ToRowRuns(format, produced, table.schema);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[0].op, engine::PutOp::kUpsert);
  EXPECT_EQ((*runs)[0].rows->num_rows(), 2);
  EXPECT_EQ((*runs)[1].op, engine::PutOp::kDelete);
  EXPECT_EQ((*runs)[1].rows->schema()->num_fields(), 1);
  EXPECT_EQ((*runs)[1].rows->column(0).Value<int64_t>(0), 1);
  EXPECT_EQ((*runs)[2].rows->num_rows(), 1);

  produced.records[0].key = R"({"id": 9})";  // not the value's key
  auto mismatch = internal::ToRowRuns(format, produced, table.schema);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().message(),
            "record 0: its key and the key columns of its value differ");
  produced.records[0].key = "not json";
  produced.records[0].value.reset();
  EXPECT_TRUE(internal::ToRowRuns(format, produced, table.schema)
                  .status()
                  .message()
                  .starts_with("record 0's key: "));

  // A changelog batch at offset 100: +I 1, -U 1, +U 1, -D 1.
  arrow::Int64Builder ids(DataType::Int64());
  arrow::BinaryBuilder items(DataType::String()), changes(DataType::String());
  for (const auto& [item, change] : std::vector<std::pair<const char*, const char*>>{
           {"a", "+I"}, {"a", "-U"}, {"b", "+U"}, {"b", "-D"}}) {
    ASSERT_TRUE(ids.Append(1).ok());
    ASSERT_TRUE(items.Append(item).ok());
    ASSERT_TRUE(changes.Append(change).ok());
  }
  std::vector<arrow::Field> fields = table.schema->fields();
  fields.push_back({"_change_type", DataType::String(), false, {}});
  auto changelog = arrow::RecordBatch::Make(std::make_shared<const arrow::Schema>(fields), 4,
                                            {*ids.Finish(), *items.Finish(), *changes.Finish()});
  ASSERT_TRUE(changelog.ok());
  std::string bytes;
  ASSERT_TRUE(internal::AppendRecords(format, **changelog, 100, 1, 5000, &bytes).ok());
  auto fetched = DecodeRecordBatches(bytes);
  ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
  ASSERT_EQ(fetched->size(), 1u);
  const RecordBatch& batch = fetched->front();
  EXPECT_EQ(batch.base_offset, 101);
  EXPECT_EQ(batch.last_offset_delta, 2);  // the batch spans the rows left out
  EXPECT_TRUE(batch.log_append_time);     // JSON records carry the append time
  EXPECT_EQ(batch.max_timestamp, 5000);
  ASSERT_EQ(batch.records.size(), 2u);
  EXPECT_EQ(batch.records[0].offset, 102);
  EXPECT_EQ(batch.records[0].key, R"({"id":1})");
  EXPECT_EQ(batch.records[0].value, R"({"id":1,"item":"b"})");
  EXPECT_EQ(batch.records[1].offset, 103);
  EXPECT_EQ(batch.records[1].key, R"({"id":1})");
  EXPECT_FALSE(batch.records[1].value.has_value());
  EXPECT_EQ(batch.records[1].timestamp_ms, 5000);
}

// An avro-confluent log table: values framed with the current version's id decode as they are,
// those of an earlier version's id through read_earlier, anything else names the record; Fetch
// frames every value with the current id.
TEST(AvroConfluentTest, FramedValuesDecodeByIdAndFetchFramesWithTheCurrentId) {
  using arrow::DataType;
  catalog::TableDescriptor table;
  table.schema = std::make_shared<const arrow::Schema>(std::vector<arrow::Field>{
      {"id", DataType::Int64(), false, {}}, {"item", DataType::String(), true, {}}});
  table.properties["kafka.value.format"] = "avro-confluent";
  internal::TopicFormat format = internal::FormatOf(table);
  ASSERT_EQ(format.kind, internal::TableKind::kAvroConfluent);
  format.value_schema_id = 7;
  std::vector<int32_t> earlier_ids;
  format.read_earlier = [&](int32_t id, const std::vector<std::string_view>& datums,
                            size_t first) -> Result<arrow::RecordBatchPtr> {
    earlier_ids.push_back(id);
    if (id != 5) return Status::Invalid("record " + std::to_string(first) + ": unknown id");
    // Version 5 had only "id": its rows get a null item.
    auto only_id = std::make_shared<const arrow::Schema>(
        std::vector<arrow::Field>{{"id", DataType::Int64(), false, {}}});
    ASSIGN_OR_RAISE(auto rows, internal::AvroToRows(datums, only_id, first));
    ASSIGN_OR_RAISE(auto items, arrow::MakeNullArray(DataType::String(), rows->num_rows()));
    return arrow::RecordBatch::Make(table.schema, rows->num_rows(), {rows->column(0), items});
  };
  auto framed = [](int32_t id, std::string datum) {
    return std::string("\0", 1) +
           std::string{static_cast<char>(id >> 24), static_cast<char>(id >> 16),
                       static_cast<char>(id >> 8), static_cast<char>(id)} +
           datum;
  };
  // Avro longs zigzag: 1 is 0x02; a union's branch 1 then a string of length 1.
  RecordBatch produced;
  for (const std::string& value :
       {framed(7, std::string("\x02\x02\x02"
                              "a",
                              4)),
        framed(5, std::string("\x04", 1)), framed(5, std::string("\x06", 1)),
        framed(7, std::string("\x08\x00", 2))}) {
    produced.records.push_back({0, 0, std::nullopt, value, {}});
  }
  auto runs = internal::ToRowRuns(format, produced, table.schema);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  const arrow::RecordBatch& rows = *runs->front().rows;
  ASSERT_EQ(rows.num_rows(), 4);
  EXPECT_EQ(earlier_ids, std::vector<int32_t>{5});  // one run of id 5, read at once
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(rows.column(0).Value<int64_t>(i), i + 1);
  EXPECT_EQ(rows.column(1).GetView(0), "a");
  EXPECT_TRUE(rows.column(1).IsNull(1) && rows.column(1).IsNull(2) && rows.column(1).IsNull(3));

  produced.records[3].value = framed(9, "\x08");
  EXPECT_EQ(internal::ToRowRuns(format, produced, table.schema).status().message(),
            "record 3: unknown id");
  produced.records[3].value = "\x08";
  EXPECT_EQ(internal::ToRowRuns(format, produced, table.schema).status().message(),
            "record 3's value has no Confluent framing (a zero byte, then a 4-byte schema id)");

  std::string bytes;
  ASSERT_TRUE(internal::AppendRecords(format, rows, 0, 0, 5000, &bytes).ok());
  auto fetched = DecodeRecordBatches(bytes);
  ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
  ASSERT_EQ(fetched->front().records.size(), 4u);
  EXPECT_EQ(fetched->front().records[0].value, framed(7, std::string("\x02\x02\x02"
                                                                     "a",
                                                                     4)));
  EXPECT_EQ(fetched->front().records[1].value, framed(7, std::string("\x04\x00", 2)));
}

// The alter_table changes of a registered Avro record: drops, adds after their predecessor,
// widenings and optional columns; what no change makes is refused naming the field.
TEST(AvroConfluentTest, ChangesToAvroAreTheAlterThatMakesTheRecord) {
  using arrow::DataType;
  using Op = catalog::SchemaChange::Op;
  const arrow::Schema schema(std::vector<arrow::Field>{{"id", DataType::Int32(), false, {}},
                                                       {"name", DataType::String(), true, {}},
                                                       {"gone", DataType::Binary(), true, {}}});
  auto changes = ChangesToAvro(schema, R"({"type": "record", "name": "row", "fields": [
      {"name": "id", "type": ["null", "long"]},
      {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
      {"name": "name", "type": ["null", "string"], "default": null}]})");
  ASSERT_TRUE(changes.ok()) << changes.status().ToString();
  ASSERT_EQ(changes->size(), 4u);
  EXPECT_EQ((*changes)[0].op, Op::kDropColumn);
  EXPECT_EQ((*changes)[0].name, "gone");
  EXPECT_EQ((*changes)[1].op, Op::kWidenType);
  EXPECT_EQ((*changes)[1].type, DataType::Int64());
  EXPECT_EQ((*changes)[2].op, Op::kMakeOptional);
  EXPECT_EQ((*changes)[3].op, Op::kAddColumn);
  EXPECT_EQ((*changes)[3].after, "id");
  EXPECT_EQ((*changes)[3].type, DataType::Timestamp(arrow::TimeUnit::kMicro, "UTC"));

  auto refused = [&](const std::string& fields) {
    return ChangesToAvro(schema, R"({"type": "record", "name": "row", "fields": )" + fields + "}")
        .status()
        .message();
  };
  EXPECT_EQ(refused(R"([{"name": "id", "type": "string"}])"),
            "field 'id': column 'id' is int32 (Avro \"int\"), and \"string\" is no widening of it");
  EXPECT_EQ(refused(R"([{"name": "id", "type": "int"}, {"name": "name", "type": "string"}])"),
            "field 'name' is required, and column 'name' is nullable: a column cannot become "
            "required");
  EXPECT_EQ(refused(R"([{"name": "id", "type": "int"}, {"name": "x", "type": "long"}])"),
            "field 'x' is new, and a new column is nullable: its type must be [\"null\", type]");
  EXPECT_EQ(
      refused(R"([{"name": "id", "type": "int"}, {"name": "x", "type": ["null", "int", "long"]}])"),
      "field 'x': a union has a column form only as [\"null\", type]");
  EXPECT_EQ(ChangesToAvro(schema, "[]").status().message(), "the schema is no Avro record");
  EXPECT_TRUE(refused(R"([{"name": "id", "type": {"type": "int", "logicalType": 5}}])")
                  .starts_with("the schema is no Avro record of columns: "));
}

}  // namespace
}  // namespace oxbow::kafka
