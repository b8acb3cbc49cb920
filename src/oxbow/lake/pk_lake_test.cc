#include <gtest/gtest.h>

#include "oxbow/lake/pk_lake_internal.h"

namespace oxbow::lake::internal {
namespace {

TEST(KeyIndexTest, TracksWhereEachKeyLives) {
  KeyIndex index;
  const int32_t a = index.AddFile("/w/data/a.parquet", {}, {"k1", "k2", "k3"});
  EXPECT_EQ(index.Find("k2"), (RowLocation{a, 1}));
  // A later round moves k2 and deletes k3: their rows in a are deleted.
  index.Remove("k2");
  index.Remove("k3");
  const int32_t b = index.AddFile("/w/data/b.parquet", {}, {"k2"});
  EXPECT_EQ(index.Find("k2"), (RowLocation{b, 0}));
  EXPECT_FALSE(index.Find("k3").has_value());
  EXPECT_EQ(index.file(a).deleted, 2);
  EXPECT_EQ(index.file(a).rows, 3);
  EXPECT_EQ(index.keys(), 2u);
  index.Remove("missing");  // nothing to remove
  EXPECT_EQ(index.keys(), 2u);
}

TEST(KeyIndexTest, ADeleteFileIsObsoleteOnceEveryFileItNamesIsGone) {
  KeyIndex index;
  const int32_t a = index.AddFile("a", {}, {"k1"});
  index.AddFile("b", {}, {"k2"});
  index.AddDeleteFile("d1", {"a"});
  index.AddDeleteFile("d2", {"a", "b"});
  EXPECT_EQ(index.ObsoleteDeleteFiles({"a"}), std::vector<std::string>{"d1"});
  index.RemoveFile(a);
  EXPECT_EQ(index.ObsoleteDeleteFiles({}), std::vector<std::string>{"d1"});
  EXPECT_EQ(index.ObsoleteDeleteFiles({"b"}), (std::vector<std::string>{"d1", "d2"}));
  EXPECT_FALSE(index.FileId("a").has_value());
}

TEST(KeyIndexTest, RebuildsFromCommittedFilesAndRefusesAKeyLiveTwice) {
  KeyIndex index;
  ASSERT_TRUE(index.AddCommittedFile("a", {}, {"k1", "k2"}, {1}).ok());
  // k2's row in a is deleted, so b may hold it.
  auto b = index.AddCommittedFile("b", {}, {"k2"}, {});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(index.Find("k2"), (RowLocation{*b, 0}));
  EXPECT_EQ(index.file(*index.FileId("a")).deleted, 1);
  auto twice = index.AddCommittedFile("c", {}, {"k1"}, {});
  EXPECT_TRUE(twice.status().IsCorruption()) << twice.status().message();
}

TEST(KeyIndexTest, AWatchRecordsTheRowsARoundChangesWhileCompactionCopiesThem) {
  KeyIndex index;
  const int32_t a = index.AddFile("a", {}, {"k1", "k2", "k3"});
  index.Remove("k3");  // before the watch: not recorded
  index.Watch(a);
  // A round moves k1 to b and deletes k2 while compaction copies a's rows.
  index.Remove("k1");
  index.AddFile("b", {}, {"k1"});
  index.Remove("k2");
  EXPECT_EQ(index.Unwatch(a), (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(index.Unwatch(a).empty());
  // A key re-added without a Remove first is recorded too.
  const int32_t c = index.AddFile("c", {}, {"k4"});
  index.Watch(c);
  index.AddFile("d", {}, {"k4"});
  EXPECT_EQ(index.Unwatch(c), (std::vector<int64_t>{0}));
}

TEST(KeyIndexTest, AMovedFilesKeysResolveToTheOutputUntilSettled) {
  KeyIndex index;
  const int32_t a = index.AddFile("a", {}, {"k1", "k2", "k3"});
  index.Remove("k2");
  // Compaction copied k1 and k3 to c at 0 and 1.
  const int32_t c = index.AddMovedFile("c", {}, 2, 0);
  index.Move(a, c, {0, -1, 1});
  EXPECT_EQ(index.Find("k3"), (RowLocation{c, 1}));
  index.Remove("k3");  // a round deletes k3 before it is settled: c's row is the one deleted
  EXPECT_EQ(index.file(c).deleted, 1);
  index.Settle("k1");
  index.EndMove(a);
  EXPECT_EQ(index.Find("k1"), (RowLocation{c, 0}));
  EXPECT_FALSE(index.FileId("a").has_value());
  EXPECT_EQ(index.keys(), 1u);
}

TEST(PositionDeletesTest, RowsAreSortedByPathThenPosition) {
  auto batch = PositionDeleteBatch({{"b", 3}, {"a", 7}, {"a", 2}});
  ASSERT_TRUE(batch.ok());
  const auto& b = **batch;
  ASSERT_EQ(b.num_rows(), 3);
  EXPECT_EQ(b.column(0).GetView(0), "a");
  EXPECT_EQ(b.column(1).Value<int64_t>(0), 2);
  EXPECT_EQ(b.column(1).Value<int64_t>(1), 7);
  EXPECT_EQ(b.column(0).GetView(2), "b");
  EXPECT_EQ(arrow::FindMetadata(PositionDeleteSchema()->field(0).metadata, "PARQUET:field_id"),
            "2147483546");
  EXPECT_EQ(arrow::FindMetadata(PositionDeleteSchema()->field(1).metadata, "PARQUET:field_id"),
            "2147483545");
}

TEST(LakeSchemaTest, PrimaryKeyColumnsAreRequiredIdentifierFields) {
  auto schema = std::make_shared<const arrow::Schema>(std::vector<arrow::Field>{
      {"id", arrow::DataType::Int16(), true, {}}, {"v", arrow::DataType::String(), true, {}}});
  auto lake = MakeLakeSchema(schema, {"id"});
  ASSERT_TRUE(lake.ok()) << lake.status().message();
  EXPECT_EQ(lake->iceberg_schema.identifier_field_ids(), std::vector<int32_t>{1});
  EXPECT_TRUE(lake->iceberg_schema.fields()[0].required);
  EXPECT_FALSE(lake->iceberg_schema.fields()[1].required);
  EXPECT_EQ(lake->key_columns, std::vector<int>{0});
  EXPECT_NE(lake->iceberg_schema.ToJson().find("\"identifier-field-ids\":[1]"), std::string::npos);
}

}  // namespace
}  // namespace oxbow::lake::internal
