// Types, transforms, single-value serialization, metadata JSON and manifests.
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "oxbow/iceberg/manifest.h"
#include "oxbow/iceberg/metadata.h"
#include "oxbow/iceberg/partition.h"
#include "oxbow/iceberg/types.h"

namespace oxbow::iceberg {
namespace {

constexpr int32_t kDate20171116 = 17486;
constexpr int64_t kTs20171116T223108 = int64_t{1510871468} * 1000000;

TEST(Types, ArrowMapping) {
  using arrow::DataType;
  using arrow::TimeUnit;
  const std::vector<std::pair<DataType, std::string>> cases = {
      {DataType::Bool(), "boolean"},
      {DataType::Int8(), "int"},
      {DataType::Int16(), "int"},
      {DataType::Int32(), "int"},
      {DataType::UInt8(), "int"},
      {DataType::UInt16(), "int"},
      {DataType::UInt32(), "long"},
      {DataType::Int64(), "long"},
      {DataType::Float32(), "float"},
      {DataType::Float64(), "double"},
      {DataType::String(), "string"},
      {DataType::Binary(), "binary"},
      {DataType::Date32(), "date"},
      {DataType::Timestamp(TimeUnit::kNano), "timestamp"},
      {DataType::Timestamp(TimeUnit::kSecond, "UTC"), "timestamptz"},
      {DataType::Decimal128(38, 10), "decimal(38, 10)"},
      {DataType::FixedSizeBinary(16), "fixed[16]"},
  };
  for (const auto& [arrow_type, name] : cases) {
    auto t = TypeFromArrow(arrow_type);
    ASSERT_TRUE(t.ok()) << arrow_type.ToString();
    EXPECT_EQ(t->ToString(), name);
    EXPECT_EQ(*Type::Parse(name), *t);
  }
  auto u64 = TypeFromArrow(DataType::UInt64());
  EXPECT_TRUE(u64.status().IsInvalid());
  EXPECT_NE(u64.status().message().find("uint64"), std::string::npos);
  EXPECT_EQ(TypeFromArrow(DataType::Decimal128(10, -1)).status().message(),
            "decimal128(10, -1) has no Iceberg type: an Iceberg decimal needs 0 <= scale <= "
            "precision <= 38");
  EXPECT_TRUE(TypeFromArrow(DataType::Decimal128(5, 7)).status().IsInvalid());
  EXPECT_EQ(TypeFromArrow(DataType::Decimal128(18, 18))->ToString(), "decimal(18, 18)");
  EXPECT_EQ(TypeFromArrow(DataType::FixedSizeBinary(0)).status().message(),
            "fixed_size_binary[0] has no Iceberg type: fixed[L] is a Parquet "
            "FIXED_LEN_BYTE_ARRAY, whose length must be at least 1");
  EXPECT_EQ(*Type::Parse("decimal(9,2)"), Type::Decimal(9, 2));
  EXPECT_FALSE(Type::Parse("decimal(39, 2)").ok());
  EXPECT_FALSE(Type::Parse("struct").ok());
}

TEST(Types, SchemaFromArrowTakesFieldIds) {
  arrow::Schema with_ids({{"a", arrow::DataType::Int64(), false, {{"PARQUET:field_id", "7"}}},
                          {"b", arrow::DataType::String(), true, {{"PARQUET:field_id", "9"}}}});
  auto s = SchemaFromArrow(with_ids);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->fields()[0].id, 7);
  EXPECT_TRUE(s->fields()[0].required);
  EXPECT_EQ(s->fields()[1].id, 9);
  EXPECT_FALSE(s->fields()[1].required);
  EXPECT_EQ(s->HighestFieldId(), 9);
  arrow::Schema without({{"a", arrow::DataType::Int64()}, {"b", arrow::DataType::Int32()}});
  EXPECT_EQ(SchemaFromArrow(without)->fields()[1].id, 2);
  arrow::Schema mixed({{"a", arrow::DataType::Int64(), true, {{"PARQUET:field_id", "1"}}},
                       {"b", arrow::DataType::Int32()}});
  EXPECT_FALSE(SchemaFromArrow(mixed).ok());
  auto back = Schema::FromJson(s->ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, *s);
}

TEST(Types, SingleValueSerialization) {
  EXPECT_EQ(*SerializeLiteral(Type::Int(), int32_t{1}), std::string("\x01\0\0\0", 4));
  EXPECT_EQ(*SerializeLiteral(Type::Long(), int64_t{-2}),
            std::string(8, '\xff').replace(0, 1, "\xfe"));
  EXPECT_EQ(*SerializeLiteral(Type::Boolean(), true), std::string("\x01"));
  EXPECT_EQ(*SerializeLiteral(Type::Double(), 1.0), std::string("\0\0\0\0\0\0\xf0\x3f", 8));
  EXPECT_EQ(*SerializeLiteral(Type::String(), std::string("iceberg")), "iceberg");
  // Decimals: minimal big-endian two's complement.
  const std::vector<std::pair<int64_t, std::string>> decimals = {{0, std::string("\x00", 1)},
                                                                 {127, "\x7f"},
                                                                 {128, std::string("\x00\x80", 2)},
                                                                 {-1, "\xff"},
                                                                 {-128, "\x80"},
                                                                 {-129, "\xff\x7f"},
                                                                 {1420, "\x05\x8c"}};
  for (const auto& [v, bytes] : decimals) {
    EXPECT_EQ(*SerializeLiteral(Type::Decimal(9, 2), Decimal{v}), bytes) << v;
    EXPECT_EQ(std::get<Decimal>(*DeserializeLiteral(Type::Decimal(9, 2), bytes)).unscaled, v);
  }
  EXPECT_FALSE(SerializeLiteral(Type::Int(), int64_t{1}).ok());  // wrong alternative
  EXPECT_FALSE(DeserializeLiteral(Type::Long(), "abc").ok());
  EXPECT_EQ(LiteralToString(Type::Decimal(9, 2), Decimal{-5}), "-0.05");
  EXPECT_LT(CompareLiterals(std::string("\x7f"), std::string("\x80")), 0);  // unsigned bytes
}

TEST(Transforms, BucketHashMatchesTheSpecVectors) {
  // Iceberg spec, Appendix B.
  EXPECT_EQ(*BucketHash(Type::Int(), int32_t{34}), 2017239379);
  EXPECT_EQ(*BucketHash(Type::Long(), int64_t{34}), 2017239379);
  EXPECT_EQ(*BucketHash(Type::Decimal(9, 2), Decimal{1420}), -500754589);
  EXPECT_EQ(*BucketHash(Type::Date(), kDate20171116), -653330422);
  EXPECT_EQ(*BucketHash(Type::Timestamp(), kTs20171116T223108), -2047944441);
  EXPECT_EQ(*BucketHash(Type::TimestampTz(), kTs20171116T223108), -2047944441);
  EXPECT_EQ(*BucketHash(Type::String(), std::string("iceberg")), 1210000089);
  EXPECT_EQ(*BucketHash(Type::Binary(), std::string("\x00\x01\x02\x03", 4)), -188683207);
  EXPECT_EQ(*BucketHash(Type::Fixed(4), std::string("\x00\x01\x02\x03", 4)), -188683207);
  EXPECT_FALSE(BucketHash(Type::Double(), 1.0).ok());
  auto b = Transform::Bucket(16).Apply(Type::Int(), int32_t{34});
  EXPECT_EQ(std::get<int32_t>(**b), (2017239379 & INT32_MAX) % 16);
}

TEST(Transforms, TimeTransformsFloorBeforeTheEpoch) {
  auto apply = [](Transform t, const Type& type, Literal v) {
    return std::get<int32_t>(**t.Apply(type, v));
  };
  EXPECT_EQ(apply(Transform::Year(), Type::Date(), kDate20171116), 47);
  EXPECT_EQ(apply(Transform::Month(), Type::Date(), kDate20171116), 47 * 12 + 10);
  EXPECT_EQ(apply(Transform::Day(), Type::Timestamp(), kTs20171116T223108), kDate20171116);
  EXPECT_EQ(apply(Transform::Hour(), Type::Timestamp(), kTs20171116T223108), 1510871468 / 3600);
  EXPECT_EQ(apply(Transform::Day(), Type::Timestamp(), int64_t{-1}), -1);
  EXPECT_EQ(apply(Transform::Hour(), Type::TimestampTz(), int64_t{-1}), -1);
  EXPECT_EQ(apply(Transform::Month(), Type::Date(), int32_t{-1}), -1);
  EXPECT_EQ(apply(Transform::Year(), Type::Date(), int32_t{-1}), -1);
  EXPECT_EQ(apply(Transform::Year(), Type::Date(), int32_t{-366}), -2);  // 1968-12-31
  EXPECT_EQ(*Transform::Day().ResultType(Type::Timestamp()), Type::Date());
  EXPECT_FALSE(Transform::Hour().ResultType(Type::Date()).ok());
  EXPECT_FALSE(Transform::Day().ResultType(Type::Long()).ok());
  EXPECT_FALSE(Transform::Day().Apply(Type::Date(), std::nullopt)->has_value());
}

TEST(Transforms, TruncateAndParse) {
  EXPECT_EQ(std::get<int32_t>(**Transform::Truncate(10).Apply(Type::Int(), int32_t{-1})), -10);
  EXPECT_EQ(std::get<int64_t>(**Transform::Truncate(10).Apply(Type::Long(), int64_t{15})), 10);
  EXPECT_EQ(std::get<Decimal>(**Transform::Truncate(50).Apply(Type::Decimal(9, 2), Decimal{1065}))
                .unscaled,
            1050);
  EXPECT_EQ(std::get<std::string>(
                **Transform::Truncate(3).Apply(Type::String(), std::string("\xc3\xa9t\xc3\xa9s"))),
            "\xc3\xa9t\xc3\xa9");
  for (const char* name :
       {"identity", "bucket[16]", "truncate[4]", "year", "month", "day", "hour", "void"}) {
    EXPECT_EQ(Transform::Parse(name)->ToString(), name);
  }
  EXPECT_FALSE(Transform::Parse("bucket[0]").ok());
  EXPECT_FALSE(Transform::Parse("bucket").ok());
}

TEST(Transforms, TruncateWrapsAtTheMinimumLikeJava) {
  // Fuzzer-found: v - (((v % W) + W) % W) overflowed (undefined) below the minimum.
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(std::get<int64_t>(**Transform::Truncate(10).Apply(Type::Long(), kMin)),
            std::numeric_limits<int64_t>::max() - 1);  // -2^63 - 8, wrapped
  const __int128 kMin128 = static_cast<__int128>(static_cast<unsigned __int128>(1) << 127);
  auto decimal = Transform::Truncate(3).Apply(Type::Decimal(38, 0), Decimal{kMin128});
  ASSERT_TRUE(decimal.ok());
  // -2^127 mod 3 is 1, so the result is -2^127 - 1, wrapped: 2^127 - 1.
  EXPECT_EQ(std::get<Decimal>(**decimal).unscaled, ~kMin128);
}

Schema TestSchema() {
  return Schema(0, {{1, "id", Type::Long(), true, ""},
                    {2, "name", Type::String(), false, ""},
                    {3, "ts", Type::TimestampTz(), false, ""},
                    {4, "amount", Type::Decimal(10, 2), false, ""}});
}

TEST(PartitionSpecs, MakeNamesAndNumbersFields) {
  auto spec = PartitionSpec::Make(TestSchema(), {{"id", Transform::Bucket(8), ""},
                                                 {"ts", Transform::Day(), ""},
                                                 {"name", Transform::Identity(), ""}});
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->fields()[0].name, "id_bucket");
  EXPECT_EQ(spec->fields()[0].field_id, 1000);
  EXPECT_EQ(spec->fields()[1].name, "ts_day");
  EXPECT_EQ(spec->fields()[2].name, "name");
  EXPECT_EQ(spec->HighestFieldId(), 1002);
  auto back = PartitionSpec::FromJson(spec->ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, *spec);
  EXPECT_FALSE(PartitionSpec::Make(TestSchema(), {{"nope", Transform::Identity(), ""}}).ok());
  EXPECT_FALSE(PartitionSpec::Make(TestSchema(), {{"name", Transform::Day(), ""}}).ok());
  auto values = spec->PartitionFor(TestSchema(),
                                   {{1, int64_t{34}}, {3, kTs20171116T223108}, {2, std::nullopt}});
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(std::get<int32_t>(*(*values)[0]), (2017239379 & INT32_MAX) % 8);
  EXPECT_EQ(std::get<int32_t>(*(*values)[1]), kDate20171116);
  EXPECT_FALSE((*values)[2].has_value());
}

TEST(Metadata, JsonRoundTripWithSnapshotsAndLogs) {
  TableMetadata m;
  m.table_uuid = "9c12d441-03fe-4693-9a96-a0705ddf69c1";
  m.location = "/w/t";
  m.last_sequence_number = 2;
  m.last_updated_ms = 1700000000000;
  m.schemas = {TestSchema()};
  m.last_column_id = 4;
  m.partition_specs = {*PartitionSpec::Make(TestSchema(), {{"id", Transform::Bucket(4), ""}})};
  m.last_partition_id = 1000;
  m.properties = {{"a", "b"}};
  Snapshot s;
  s.snapshot_id = 42;
  s.sequence_number = 2;
  s.parent_snapshot_id = 41;
  s.timestamp_ms = 1700000000000;
  s.manifest_list = "/w/t/metadata/snap-42.avro";
  s.summary = {{"operation", "append"}, {"oxbow.tiered-offsets", R"({"0":10})"}};
  s.schema_id = 0;
  m.snapshots = {s};
  m.current_snapshot_id = 42;
  m.snapshot_log = {{1700000000000, 42}};
  m.metadata_log = {{1690000000000, "/w/t/metadata/v1.metadata.json"}};
  m.refs["main"] = {42, "branch", ""};
  std::string json = m.ToJson();
  auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["format-version"], 2);
  EXPECT_EQ(j["refs"]["main"]["snapshot-id"], 42);
  EXPECT_EQ(j["schemas"][0]["fields"][3]["type"], "decimal(10, 2)");
  EXPECT_EQ(j["partition-specs"][0]["fields"][0]["transform"], "bucket[4]");
  EXPECT_EQ(j["snapshots"][0]["summary"]["oxbow.tiered-offsets"], R"({"0":10})");
  auto back = TableMetadata::FromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ToJson(), json);
  EXPECT_EQ(back->CurrentSnapshot()->summary.at("oxbow.tiered-offsets"), R"({"0":10})");

  j["current-snapshot-id"] = 7;
  EXPECT_FALSE(TableMetadata::FromJson(j.dump()).ok());
  j["format-version"] = 1;
  EXPECT_EQ(TableMetadata::FromJson(j.dump()).status().code(), StatusCode::kNotImplemented);
  EXPECT_FALSE(TableMetadata::FromJson(R"({"format-version":"x"})").ok());
  // Fuzzer-found: a float where an integer belongs was converted (undefined when out of range);
  // an integer too wide for its field wrapped.
  j["format-version"] = 2;
  j["last-column-id"] = 1e300;
  EXPECT_FALSE(TableMetadata::FromJson(j.dump()).ok());
  j["last-column-id"] = int64_t{1} << 40;
  EXPECT_FALSE(TableMetadata::FromJson(j.dump()).ok());
  j["last-column-id"] = 4;
  j["snapshots"][0]["sequence-number"] = -1e300;
  EXPECT_FALSE(TableMetadata::FromJson(j.dump()).ok());
}

TEST(Types, NestedTypesFromArrowAndJson) {
  using arrow::DataType;
  using arrow::Field;
  auto id = [](int n) { return arrow::KeyValueMetadata{{"PARQUET:field_id", std::to_string(n)}}; };
  const DataType list = DataType::List(Field{"item", DataType::Int64(), true, id(4)});
  const DataType strct = DataType::Struct({Field{"a", DataType::Int32(), false, id(5)}});
  const DataType map = DataType::Nested(
      arrow::TypeId::kMap,
      {Field{"entries",
             DataType::Struct(
                 {Field{"key", DataType::String(), false, id(6)},
                  Field{"value", DataType::Struct({Field{"a", DataType::Int32(), false, id(8)}}),
                        true, id(7)}}),
             false,
             {}}});
  arrow::Schema arrow_schema(
      {{"l", list, true, id(1)}, {"s", strct, true, id(2)}, {"m", map, false, id(3)}});
  auto s = SchemaFromArrow(arrow_schema);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->fields()[0].type.ToString(), "list<long>");
  EXPECT_EQ(s->fields()[0].type.fields()[0].id, 4);
  EXPECT_EQ(s->fields()[2].type.ToString(), "map<string, struct<a: int>>");
  EXPECT_EQ(s->HighestFieldId(), 8);
  const std::string json = s->ToJson();
  EXPECT_NE(json.find(R"("element-id":4)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("key-id":6)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("value-id":7)"), std::string::npos) << json;
  auto back = Schema::FromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, *s);
  // Every nested field needs an id, ids are unique over the tree, and Iceberg has no
  // fixed-size list.
  EXPECT_TRUE(TypeFromArrow(DataType::List({"item", DataType::Int64()})).status().IsInvalid());
  EXPECT_TRUE(Schema::FromJson(R"({"type":"struct","fields":[{"id":1,"name":"l","type":)"
                               R"({"type":"list","element-id":1,"element":"int"}}]})")
                  .status()
                  .IsInvalid());
  EXPECT_EQ(TypeFromArrow(DataType::FixedSizeList({"item", DataType::Int32(), true, id(2)}, 2))
                .status()
                .code(),
            StatusCode::kNotImplemented);
}

TEST(Schemas, MistypedJsonIsAnErrorNotAnException) {
  // Fuzzer-found: nlohmann's value() threw type_error out of FromJson.
  EXPECT_FALSE(Schema::FromJson(R"({"type":1,"fields":[]})").ok());
  auto bad_required = Schema::FromJson(
      R"({"type":"struct","fields":[{"id":1,"name":"a","type":"int","required":"no"}]})");
  EXPECT_FALSE(bad_required.ok());
  EXPECT_NE(bad_required.status().message().find("required"), std::string::npos);
  EXPECT_TRUE(
      Schema::FromJson(R"({"type":"struct","fields":[{"id":1,"name":"a","type":"int"}]})").ok());
}

TEST(Manifests, RoundTripThroughOurReaderWithFieldIds) {
  Schema schema = TestSchema();
  auto spec = *PartitionSpec::Make(schema, {{"id", Transform::Bucket(4), ""},
                                            {"ts", Transform::Day(), ""},
                                            {"amount", Transform::Identity(), ""}});
  std::vector<ManifestEntry> entries;
  for (int i = 0; i < 3; ++i) {
    ManifestEntry e;
    e.status = i == 2 ? EntryStatus::kExisting : EntryStatus::kAdded;
    e.snapshot_id = 5;
    if (i == 2) e.sequence_number = e.file_sequence_number = 1;
    DataFile& f = e.data_file;
    f.file_path = "/w/t/data/f" + std::to_string(i) + ".parquet";
    f.partition.assign(3, std::nullopt);
    f.partition[0] = Literal(int32_t{i});
    if (i != 1) f.partition[1] = Literal(int32_t{100 + i});
    f.partition[2] = Literal(Decimal{-12345 * (i + 1)});
    f.record_count = 10 * (i + 1);
    f.file_size_in_bytes = 1000 + i;
    f.column_sizes = {{1, 100}, {2, 200}};
    f.value_counts = {{1, 10}};
    f.null_value_counts = {{1, 0}};
    f.lower_bounds = {{1, *SerializeLiteral(Type::Long(), int64_t{-5})}};
    f.upper_bounds = {{1, *SerializeLiteral(Type::Long(), int64_t{5})}};
    f.split_offsets = {4};
    entries.push_back(std::move(e));
  }
  auto bytes = EncodeManifest(schema, spec, entries);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto avro = ReadAvroFile(*bytes);
  ASSERT_TRUE(avro.ok());
  EXPECT_EQ(avro->Metadata("format-version"), "2");
  EXPECT_EQ(avro->Metadata("content"), "data");
  EXPECT_EQ(avro->Metadata("partition-spec-id"), "0");
  EXPECT_EQ(*Schema::FromJson(*avro->Metadata("schema")), schema);
  EXPECT_NE(avro->schema_json.find(R"("field-id":1001)"), std::string::npos);
  EXPECT_NE(avro->schema_json.find(R"("logicalType":"decimal")"), std::string::npos);

  auto back = DecodeManifest(*bytes, schema, spec);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const DataFile& f = (*back)[i].data_file;
    EXPECT_EQ(f.file_path, entries[i].data_file.file_path);
    EXPECT_EQ(f.record_count, 10 * (i + 1));
    EXPECT_EQ(f.column_sizes, entries[i].data_file.column_sizes);
    EXPECT_EQ(f.lower_bounds, entries[i].data_file.lower_bounds);
    EXPECT_EQ(f.split_offsets, std::vector<int64_t>{4});
    ASSERT_EQ(f.partition.size(), 3u);
    EXPECT_EQ(std::get<int32_t>(*f.partition[0]), i);
    EXPECT_EQ(f.partition[1].has_value(), i != 1);
    EXPECT_EQ(std::get<Decimal>(*f.partition[2]).unscaled, -12345 * (i + 1));
  }
  EXPECT_FALSE((*back)[0].sequence_number.has_value());  // ADDED: inherited
  EXPECT_EQ((*back)[2].sequence_number, 1);

  std::string broken = *bytes;
  broken.resize(broken.size() - 20);
  EXPECT_FALSE(DecodeManifest(broken, schema, spec).ok());
}

TEST(Manifests, ManifestListRoundTrip) {
  ManifestFile m;
  m.manifest_path = "/w/t/metadata/a-m0.avro";
  m.manifest_length = 1234;
  m.sequence_number = 3;
  m.min_sequence_number = 1;
  m.added_snapshot_id = 99;
  m.added_files_count = 2;
  m.existing_files_count = 1;
  m.added_rows_count = 20;
  m.existing_rows_count = 10;
  m.partitions = {{false, false, std::string("\x01\0\0\0", 4), std::string("\x03\0\0\0", 4)},
                  {true, std::nullopt, std::nullopt, std::nullopt}};
  auto bytes = EncodeManifestList({99, 98, 3}, {m, m});
  ASSERT_TRUE(bytes.ok());
  auto avro = ReadAvroFile(*bytes);
  EXPECT_EQ(avro->Metadata("parent-snapshot-id"), "98");
  EXPECT_EQ(avro->Metadata("sequence-number"), "3");
  auto back = DecodeManifestList(*bytes);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), 2u);
  const ManifestFile& b = (*back)[1];
  EXPECT_EQ(b.manifest_path, m.manifest_path);
  EXPECT_EQ(b.manifest_length, 1234);
  EXPECT_EQ(b.sequence_number, 3);
  EXPECT_EQ(b.min_sequence_number, 1);
  EXPECT_EQ(b.added_files_count, 2);
  EXPECT_EQ(b.existing_rows_count, 10);
  ASSERT_EQ(b.partitions.size(), 2u);
  EXPECT_EQ(b.partitions[0].upper_bound, m.partitions[0].upper_bound);
  EXPECT_TRUE(b.partitions[1].contains_null);
  EXPECT_FALSE(b.partitions[1].lower_bound.has_value());
  EXPECT_EQ(LocalPath("file:///a/b"), "/a/b");
  EXPECT_EQ(LocalPath("file:/a/b"), "/a/b");
  EXPECT_EQ(LocalPath("/a/b"), "/a/b");
}

}  // namespace
}  // namespace oxbow::iceberg
