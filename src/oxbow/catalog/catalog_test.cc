#include "oxbow/catalog/catalog.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace oxbow::catalog {
namespace {

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("oxbow-catalog-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::remove_all(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

constexpr const char* kCreate = R"json({"table":"ns.t","schema":{"fields":[
  {"name":"id","type":"int64","nullable":false},
  {"name":"ts","type":"timestamp[us, tz=UTC]"},
  {"name":"price","type":"decimal128(10, 2)","metadata":{"k":"v"}}]},
  "buckets":4,"bucket_key":["id"],"properties":{"lake.enabled":"false"}})json";

TEST(CatalogJsonTest, ParsesCreateTable) {
  auto req = ParseCreateTable(kCreate);
  ASSERT_TRUE(req.ok()) << req.status().ToString();
  const TableDescriptor& t = req->table;
  EXPECT_EQ(t.name, "ns.t");
  EXPECT_EQ(t.buckets, 4);
  EXPECT_EQ(t.schema->ToString(),
            "id: int64 not null\nts: timestamp[us, tz=UTC]\nprice: decimal128(10, 2)");
  EXPECT_EQ(t.schema->field(2).metadata, (arrow::KeyValueMetadata{{"k", "v"}}));
  EXPECT_EQ(t.BucketKeyIndices(), std::vector<int>{0});
  EXPECT_EQ(t.properties.at("lake.enabled"), "false");
  EXPECT_FALSE(req->if_not_exists);

  auto again = DescriptorFromJson(DescriptorToJson(t));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->schema->Equals(*t.schema, /*check_metadata=*/true));
  EXPECT_EQ(again->bucket_key, t.bucket_key);
}

TEST(CatalogJsonTest, ErrorsNameTheProblem) {
  EXPECT_EQ(ParseCreateTable("{").status().message(), "create_table body is not valid JSON");
  EXPECT_EQ(
      ParseCreateTable(R"({"table":"nodot","schema":{"fields":[]}})").status().message(),
      "table name 'nodot' must be 'namespace.table', each part 1-128 letters, digits, '_' or '-'");
  EXPECT_EQ(ParseCreateTable(R"({"table":"a.b","schema":{"fields":[{"name":"x","type":"int99"}]}})")
                .status()
                .message(),
            "field 'x': unknown type 'int99'");
  EXPECT_EQ(
      ParseCreateTable(
          R"({"table":"a.b","schema":{"fields":[{"name":"x","type":"int8"}]},"bucket_key":["y"]})")
          .status()
          .message(),
      "key column 'y' is not in the schema");
  EXPECT_TRUE(ParseCreateTable(
                  R"({"table":"a.b","schema":{"fields":[{"name":"x","type":"int8"}]},"buckets":0})")
                  .status()
                  .IsInvalid());
}

TEST(CatalogTest, PersistsAcrossReopen) {
  TempDir dir;
  {
    auto catalog = Catalog::Open(PosixFileSystem::Default(), dir.path()).ValueOrDie();
    auto req = ParseCreateTable(kCreate).ValueOrDie();
    auto created = catalog->Create(req.table, false);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    EXPECT_EQ(created->table_id, 1);
    EXPECT_GT(created->created_ms, 0);
    EXPECT_TRUE(catalog->Create(req.table, false).status().code() == StatusCode::kAlreadyExists);
    EXPECT_EQ(catalog->Create(req.table, true)->table_id, 1);
    req.table.name = "ns.other";
    ASSERT_TRUE(catalog->Create(req.table, false).ok());
    ASSERT_TRUE(catalog->Drop("ns.other").ok());
    EXPECT_TRUE(catalog->Drop("ns.other").IsNotFound());
  }
  auto reopened = Catalog::Open(PosixFileSystem::Default(), dir.path()).ValueOrDie();
  auto tables = reopened->List();
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].name, "ns.t");
  EXPECT_EQ(tables[0].schema->num_fields(), 3);
  EXPECT_TRUE(reopened->Get("ns.missing").status().IsNotFound());
  // Ids are never reused, even after a drop and a restart.
  auto req = ParseCreateTable(kCreate).ValueOrDie();
  req.table.name = "ns.third";
  EXPECT_EQ(reopened->Create(req.table, false)->table_id, 3);
}

TEST(CatalogTest, CorruptCatalogIsReported) {
  TempDir dir;
  std::filesystem::create_directories(dir.path());
  std::ofstream(dir.path() + "/catalog.json") << "{\"tables\": 5}";
  auto catalog = Catalog::Open(PosixFileSystem::Default(), dir.path());
  EXPECT_TRUE(catalog.status().IsCorruption());
}

}  // namespace
}  // namespace oxbow::catalog
