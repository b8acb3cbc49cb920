// Cluster against a real ZooKeeper server (scripts/zookeeper.sh): the lake pointer, which only the
// leader of a table's bucket 0 may swap (docs/cluster.md#the-lake).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "oxbow/cluster/cluster.h"
#include "oxbow/testing/zookeeper_server.h"

namespace oxbow::cluster {
namespace {

constexpr char kTable[] = "ns.lake";

class LakePointerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    zookeeper_ = testing::ZooKeeperServer::Shared();
    if (!zookeeper_) GTEST_SKIP() << testing::ZooKeeperServer::SkipReason();
    dir_ = std::filesystem::temp_directory_path() /
           ("oxbow-lake-pointer-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    const std::string hosts = zookeeper_->Chroot();
    for (int32_t id : {1, 2}) {
      engine::EngineOptions engine_options;
      engine_options.data_dir = (dir_ / std::to_string(id)).string();
      engine_options.replicated = true;
      engines_.push_back(engine::Engine::Open(engine_options).ValueOrDie());
      ClusterOptions options;
      options.zookeeper = hosts;
      options.server_id = id;
      options.advertised_flight = "grpc://127.0.0.1:1";  // nobody fetches in these tests
      auto cluster = Cluster::Start(options, engines_.back().get());
      ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
      clusters_.push_back(std::move(cluster).ValueOrDie());
    }
  }
  void TearDown() override {
    clusters_.clear();
    engines_.clear();
    std::filesystem::remove_all(dir_);
  }

  // Creates the table on both servers and returns its bucket 0's leader and the other server.
  std::pair<Cluster*, Cluster*> CreateTable() {
    catalog::CreateTableRequest request;
    request.table.name = kTable;
    request.table.buckets = 1;
    request.table.schema = std::make_shared<const arrow::Schema>(
        std::vector<arrow::Field>{{"id", arrow::DataType::Int64(), false}});
    request.table.properties = {{"replication.factor", "2"}};
    EXPECT_TRUE(clusters_[0]->CreateTable(request).ok());
    for (int waited = 0; waited < 10'000; waited += 10) {
      for (size_t i = 0; i < clusters_.size(); ++i) {
        if (clusters_[i]->CheckLeader(kTable, 0).ok() &&
            clusters_[1 - i]->Metadata()->FindTable(kTable)) {
          return {clusters_[i].get(), clusters_[1 - i].get()};
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "no leader of " << kTable << "[0]";
    return {nullptr, nullptr};
  }

  testing::ZooKeeperServer* zookeeper_ = nullptr;
  std::filesystem::path dir_;
  std::vector<std::unique_ptr<engine::Engine>> engines_;
  std::vector<std::unique_ptr<Cluster>> clusters_;
};

TEST_F(LakePointerTest, OnlyTheLeaderOfBucketZeroSwapsTheLakePointer) {
  auto [owner, other] = CreateTable();
  ASSERT_NE(owner, nullptr);
  EXPECT_TRUE(owner->ReadLakePointer(kTable, false).status().IsNotFound());
  ASSERT_TRUE(owner->ReplaceLakePointer(kTable, false, std::nullopt, "v1").ok());

  // Another server is fenced, whatever version it names.
  Status fenced = other->ReplaceLakePointer(kTable, false, 0, "not the owner's");
  EXPECT_EQ(fenced.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(fenced.message().find("is no longer the tiering owner"), std::string::npos)
      << fenced.ToString();
  // The owner with a stale version loses the compare-and-swap.
  Status stale = owner->ReplaceLakePointer(kTable, false, std::nullopt, "v1 again");
  EXPECT_EQ(stale.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(stale.message().find("changed meanwhile"), std::string::npos) << stale.ToString();

  auto read = other->ReadLakePointer(kTable, false);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->first, "v1");
  ASSERT_TRUE(owner->ReplaceLakePointer(kTable, false, read->second, "v2").ok());
  EXPECT_EQ(owner->ReadLakePointer(kTable, false)->first, "v2");
  // The changelog lake table's pointer is a znode of its own.
  EXPECT_TRUE(owner->ReadLakePointer(kTable, true).status().IsNotFound());
  ASSERT_TRUE(owner->ReplaceLakePointer(kTable, true, std::nullopt, "c1").ok());
  EXPECT_EQ(other->ReadLakePointer(kTable, true)->first, "c1");

  // Once the owner leaves, the other server leads bucket 0 and takes over the pointer.
  ASSERT_TRUE(owner->Close().ok());
  for (int waited = 0; waited < 15'000 && !other->CheckLeader(kTable, 0).ok(); waited += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(other->CheckLeader(kTable, 0).ok());
  auto now = other->ReadLakePointer(kTable, false);
  ASSERT_TRUE(now.ok());
  EXPECT_TRUE(other->ReplaceLakePointer(kTable, false, now->second, "v3").ok());
}

}  // namespace
}  // namespace oxbow::cluster
