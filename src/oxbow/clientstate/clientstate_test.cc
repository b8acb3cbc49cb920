#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "oxbow/arrow/builder.h"
#include "oxbow/clientstate/offset_store.h"
#include "oxbow/clientstate/producer_states.h"

namespace oxbow::clientstate {
namespace {

using arrow::DataType;
using Outcome = SequencedAppend::Outcome;

class ClientStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("oxbow-clientstate-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override {
    producers_.reset();
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::string StateDir() const { return (dir_ / "state").string(); }

  void OpenEngine() {
    engine::EngineOptions options;
    options.data_dir = (dir_ / "data").string();
    engine_ = engine::Engine::Open(options).ValueOrDie();
  }
  void OpenProducers() {
    producers_.reset();
    producers_ =
        ProducerStates::Open(engine_.get(), StateDir(), [](const catalog::TableDescriptor& t) {
          return t.name == "kafka.t";
        }).ValueOrDie();
  }
  void CreateTable() {
    catalog::CreateTableRequest request;
    request.table.name = "kafka.t";
    request.table.schema = schema_;
    request.table.buckets = 2;
    ASSERT_TRUE(engine_->CreateTable(request).ok());
  }
  // Appends one row to bucket 1 through ProducerStates, as the Kafka produce path does.
  SequencedAppend Produce(const IdempotentBatch& batch, bool transactional = false) {
    auto put = engine_->StartPutToBucket("kafka.t", schema_, 1).ValueOrDie();
    arrow::Int64Builder ids(DataType::Int64());
    EXPECT_TRUE(ids.Append(batch.first_sequence).ok());
    auto rows = arrow::RecordBatch::Make(schema_, 1, {ids.Finish().ValueOrDie()}).ValueOrDie();
    return producers_
        ->Append(
            "kafka.t", 1, batch,
            [&](const arrow::KeyValueMetadata& metadata) -> Result<int64_t> {
              ASSIGN_OR_RAISE(auto appended, put->AppendWithMetadata(*rows, metadata));
              return appended.front().base_offset;
            },
            transactional)
        .ValueOrDie();
  }
  int64_t NextOffset() {
    return engine_->DescribeTable("kafka.t").ValueOrDie().buckets[1].next_offset;
  }

  std::filesystem::path dir_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<ProducerStates> producers_;
  arrow::SchemaPtr schema_ = std::make_shared<const arrow::Schema>(
      std::vector<arrow::Field>{arrow::Field{"id", DataType::Int64(), false}});
};

TEST_F(ClientStateTest, OffsetsSurviveReopenAndForgetDeletedTopics) {
  {
    auto store = OffsetStore::Open(PosixFileSystem::Default(), StateDir()).ValueOrDie();
    EXPECT_FALSE(store->HasGroup("g"));
    ASSERT_TRUE(store->Commit("g", {{"a", 0, {5, "m"}}, {"b", 1, {7, std::nullopt}}}).ok());
    ASSERT_TRUE(store->Commit("h", {{"a", 2, {9, std::nullopt}}}).ok());
  }
  auto store = OffsetStore::Open(PosixFileSystem::Default(), StateDir()).ValueOrDie();
  EXPECT_EQ(store->Groups(), (std::vector<std::string>{"g", "h"}));
  auto g = store->Offsets("g").value();
  EXPECT_EQ(g["a"][0].offset, 5);
  EXPECT_EQ(g["a"][0].metadata, "m");
  EXPECT_EQ(g["b"][1].offset, 7);
  EXPECT_FALSE(g["b"][1].metadata.has_value());
  ASSERT_TRUE(store->ForgetTopics({"a"}).ok());
  // h only had topic a: it is gone; g keeps b.
  EXPECT_EQ(store->Groups(), (std::vector<std::string>{"g"}));
  store = OffsetStore::Open(PosixFileSystem::Default(), StateDir()).ValueOrDie();
  EXPECT_FALSE(store->Offsets("g")->contains("a"));
  EXPECT_FALSE(store->Offsets("h").has_value());
}

TEST_F(ClientStateTest, CorruptOffsetsFileIsNamed) {
  std::filesystem::create_directories(StateDir());
  std::ofstream(dir_ / "state" / "offsets.json") << "{\"groups\": [";
  auto store = OffsetStore::Open(PosixFileSystem::Default(), StateDir());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("offsets.json"), std::string::npos);
}

TEST_F(ClientStateTest, RetriesAreAcknowledgedOnceAndGapsRefused) {
  OpenEngine();
  CreateTable();
  OpenProducers();
  const int64_t id = producers_->NewProducerId();
  EXPECT_EQ(producers_->NewProducerId(), id + 1);
  auto first = Produce({id, 0, 0, 0});
  EXPECT_EQ(first.outcome, Outcome::kAppended);
  EXPECT_EQ(first.base_offset, 0);
  EXPECT_EQ(Produce({id, 0, 1, 1}).base_offset, 1);
  auto retry = Produce({id, 0, 0, 0});
  EXPECT_EQ(retry.outcome, Outcome::kDuplicate);
  EXPECT_EQ(retry.base_offset, 0);
  EXPECT_EQ(NextOffset(), 2);  // the retry stored nothing
  auto gap = Produce({id, 0, 5, 5});
  EXPECT_EQ(gap.outcome, Outcome::kOutOfOrder);
  EXPECT_EQ(gap.message, "sequence 5 after 1");
  EXPECT_EQ(Produce({id, 1, 0, 0}).outcome, Outcome::kAppended);  // a new epoch starts over
  auto stale = Produce({id, 0, 2, 2});
  EXPECT_EQ(stale.outcome, Outcome::kStaleEpoch);
  EXPECT_EQ(stale.message, "producer epoch 0 is older than 1");
  EXPECT_EQ(NextOffset(), 3);
}

TEST_F(ClientStateTest, CommittedTransactionsSkipAbortedSequencesAndAreAppendedOnce) {
  OpenEngine();
  CreateTable();
  OpenProducers();
  const int64_t id = producers_->NewProducerId();
  EXPECT_EQ(Produce({id, 0, 0, 9}, true).outcome, Outcome::kAppended);
  // Sequences 10-19 were an aborted transaction's, never appended.
  EXPECT_EQ(Produce({id, 0, 20, 29}, true).outcome, Outcome::kAppended);
  // A commit carried out again after a crash: nothing is appended twice.
  EXPECT_EQ(Produce({id, 0, 0, 9}, true).outcome, Outcome::kDuplicate);
  EXPECT_EQ(Produce({id, 0, 20, 29}, true).outcome, Outcome::kDuplicate);
  EXPECT_EQ(NextOffset(), 2);
  producers_.reset();
  OpenProducers();  // the state comes back from the log
  EXPECT_EQ(Produce({id, 0, 20, 29}, true).outcome, Outcome::kDuplicate);
  EXPECT_EQ(NextOffset(), 2);
}

TEST_F(ClientStateTest, StateSurvivesRestartFromSnapshotAndReplay) {
  OpenEngine();
  CreateTable();
  OpenProducers();
  const int64_t id = producers_->NewProducerId();
  ASSERT_EQ(Produce({id, 0, 0, 0}).base_offset, 0);
  ASSERT_TRUE(producers_->Save().ok());
  // Appended after the snapshot: only the log's batch metadata knows it.
  ASSERT_EQ(Produce({id, 0, 1, 1}).base_offset, 1);
  producers_.reset();
  engine_.reset();

  OpenEngine();
  OpenProducers();
  auto from_snapshot = Produce({id, 0, 0, 0});
  EXPECT_EQ(from_snapshot.outcome, Outcome::kDuplicate);
  EXPECT_EQ(from_snapshot.base_offset, 0);
  auto replayed = Produce({id, 0, 1, 1});
  EXPECT_EQ(replayed.outcome, Outcome::kDuplicate);
  EXPECT_EQ(replayed.base_offset, 1);
  EXPECT_EQ(Produce({id, 0, 2, 2}).base_offset, 2);
  EXPECT_EQ(NextOffset(), 3);
}

TEST_F(ClientStateTest, TablesNotHoldingProducersAreNotReplayed) {
  OpenEngine();
  CreateTable();
  OpenProducers();
  const int64_t id = producers_->NewProducerId();
  ASSERT_EQ(Produce({id, 0, 0, 0}).base_offset, 0);
  producers_.reset();
  producers_ = ProducerStates::Open(engine_.get(), StateDir(), [](const catalog::TableDescriptor&) {
                 return false;
               }).ValueOrDie();
  // Nothing replayed: the batch is not known as a retry.
  EXPECT_EQ(Produce({id, 0, 0, 0}).outcome, Outcome::kAppended);
}

}  // namespace
}  // namespace oxbow::clientstate
