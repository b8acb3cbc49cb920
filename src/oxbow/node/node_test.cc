#include "oxbow/node/node.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "oxbow/arrow/builder.h"
#include "oxbow/node/lake_pointers_internal.h"
#include "oxbow/testing/counting_lake.h"

namespace oxbow::node {
namespace {

using arrow::DataType;

class NodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::remove_all(dir_);
    Open();
  }
  void Open() {
    node_.reset();
    NodeOptions options;
    options.engine.data_dir = (dir_ / "data").string();
    options.lake = lake_.options;
    node_ = Node::Open(std::move(options)).ValueOrDie();
  }
  void TearDown() override {
    node_.reset();
    std::filesystem::remove_all(dir_);
  }
  // Appends ids first_id.. to `bucket` through a handle, as the Kafka produce path does.
  void PutToBucket(int32_t bucket, int64_t first_id, int64_t rows) {
    const TableHandle table = node_->GetTable("ns.t").ValueOrDie();
    arrow::Int64Builder ids(DataType::Int64());
    for (int64_t i = 0; i < rows; ++i) ASSERT_TRUE(ids.Append(first_id + i).ok());
    auto batch = arrow::RecordBatch::Make(schema_, rows, {ids.Finish().ValueOrDie()}).ValueOrDie();
    auto put = table.StartPutToBucket(schema_, bucket).ValueOrDie();
    ASSERT_TRUE(put->Append(*batch).ok());
  }

  void WaitForLake(const std::function<bool(const lake::LakeTableStatus&)>& done) {
    for (int i = 0; i < 500; ++i) {
      if (done(node_->DescribeTable("ns.t").ValueOrDie().lake)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  const std::filesystem::path dir_ =
      std::filesystem::temp_directory_path() /
      ("oxbow-node-" + std::to_string(::getpid()) + "-" +
       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  testing::CountingLake lake_{(dir_ / "warehouse").string()};
  std::unique_ptr<Node> node_;
  arrow::SchemaPtr schema_ = std::make_shared<const arrow::Schema>(
      std::vector<arrow::Field>{arrow::Field{"id", DataType::Int64(), false}});
};

TEST_F(NodeTest, HandlesAndDescribeDoNotTouchTheLake) {
  catalog::CreateTableRequest request;
  request.table.name = "ns.t";
  request.table.schema = schema_;
  request.table.buckets = 2;
  ASSERT_TRUE(node_->CreateTable(request).ok());
  PutToBucket(1, 0, 10);
  WaitForLake([&](const lake::LakeTableStatus&) { return lake_.HasTable({"ns", "t"}); });
  // A lake found at open is tiered at once, then not for an hour.
  Open();
  WaitForLake([](const lake::LakeTableStatus& lake) {
    return lake.tiered_offsets.size() == 2 && lake.tiered_offsets[1] == 10;
  });
  ASSERT_EQ(node_->DescribeTable("ns.t").ValueOrDie().lake.tiered_offsets,
            (std::vector<int64_t>{0, 10}));

  lake_.Reset();
  PutToBucket(1, 10, 5);
  PutToBucket(0, 15, 3);
  const TableHandle table = node_->GetTable("ns.t").ValueOrDie();
  const auto buckets = table.Buckets();
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].next_offset, 3);
  EXPECT_EQ(buckets[1].next_offset, 15);
  engine::ReadRequest read;
  read.bucket = 1;
  read.from.kind = engine::StartPosition::Kind::kOffset;
  read.from.offset = 10;
  auto cursor = table.OpenRead(read).ValueOrDie();
  auto batch = cursor->NextDecoded(std::chrono::steady_clock::now()).ValueOrDie();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->base_offset, 10);
  EXPECT_EQ(batch->batch->column(0).Value<int64_t>(0), 10);
  // describe_table reads what the lake published: its first offsets too.
  const auto described = node_->DescribeTable("ns.t").ValueOrDie();
  EXPECT_EQ(described.lake.tiered_offsets, (std::vector<int64_t>{0, 10}));
  EXPECT_EQ(described.lake.earliest_offsets,
            (std::vector<std::optional<int64_t>>{std::nullopt, 0}));
  EXPECT_EQ(described.lake.lag_rows, 8);

  EXPECT_EQ(lake_.Calls(), 0);
}

TEST_F(NodeTest, UnknownTableIsNotFoundByName) {
  auto table = node_->GetTable("ns.missing");
  ASSERT_FALSE(table.ok());
  EXPECT_TRUE(table.status().IsNotFound());
  EXPECT_NE(table.status().message().find("ns.missing"), std::string::npos);
}

TEST_F(NodeTest, TheReservedNamespaceIsRefusedToClients) {
  catalog::CreateTableRequest request;
  request.table.name = "__oxbow.group_offsets";
  request.table.schema = schema_;
  auto created = node_->CreateTable(request);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(created.status().message().find("__oxbow.group_offsets"), std::string::npos);
  EXPECT_EQ(node_->DropTable("__oxbow.group_offsets").code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(CheckNotReserved("ns.__oxbow").ok());
  EXPECT_TRUE(CheckNotReserved("__oxbowx.t").ok());
}

// Each committed pointer is copied; a rebuild stores the copies, and a second attempt of the
// rebuild stores them over what the first one stored.
TEST(CopiedLakePointersTest, ARebuildStoresTheCopiesAndCanBeRepeated) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("oxbow-copied-pointers-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  auto fs = PosixFileSystem::Default();
  const iceberg::TableIdentifier id{"shop", "orders"};
  const iceberg::MetadataPointer first{"s3://b/w/shop/orders/metadata/1-a.metadata.json", 1};
  const iceberg::MetadataPointer second{"s3://b/w/shop/orders/metadata/2-b.metadata.json", 2};
  internal::CopiedLakePointers copied(
      std::make_shared<iceberg::LocalPointerStore>(fs, (dir / "lake-catalog").string()), fs,
      (dir / "copies").string());
  ASSERT_TRUE(copied.Replace(id, std::nullopt, first).ok());
  ASSERT_TRUE(copied.Replace(id, first, second).ok());

  iceberg::LocalPointerStore rebuilt(fs, (dir / "rebuilt").string());
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto restored = internal::CopiedLakePointers::Restore(*fs, (dir / "copies").string(), rebuilt);
    ASSERT_TRUE(restored.ok()) << restored.status().ToString();
    EXPECT_EQ(*restored, 1);
  }
  auto pointer = rebuilt.Read(id);
  ASSERT_TRUE(pointer.ok()) << pointer.status().ToString();
  EXPECT_EQ(pointer->location, second.location);
  EXPECT_EQ(pointer->version, 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace oxbow::node
