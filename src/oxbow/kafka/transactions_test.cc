#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "oxbow/kafka/transactions_internal.h"

namespace oxbow::kafka::internal {
namespace {

class TransactionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("oxbow-txn-" + std::to_string(std::random_device{}()));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<TransactionCoordinator> Open(
      std::chrono::milliseconds id_expiration = kTransactionalIdExpiration) {
    TransactionCoordinator::Committer committer{
        [this](const std::string& topic, int32_t partition, std::string_view batch) {
          if (fail_appends_ > 0) {
            --fail_appends_;
            return Status::Unavailable("no leader");
          }
          auto decoded = DecodeRecordBatches(batch);
          EXPECT_TRUE(decoded.ok());
          appended_.push_back(topic + "-" + std::to_string(partition) + ":" +
                              decoded->front().records.front().value.value_or(""));
          return Status::OK();
        },
        [this](const std::string& group, const std::vector<clientstate::OffsetCommit>& offsets) {
          for (const auto& o : offsets) {
            committed_.push_back(group + "/" + o.topic + "-" + std::to_string(o.partition) + "@" +
                                 std::to_string(o.committed.offset));
          }
          return Status::OK();
        }};
    auto opened = TransactionCoordinator::Open(
        dir_.string(), committer, [this] { return next_id_++; }, id_expiration);
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    return std::move(opened).ValueOrDie();
  }

  // A one-record batch of the producer, as a producer sends it.
  static RecordBatch Batch(int64_t producer_id, int16_t epoch, int32_t sequence,
                           const std::string& value, std::string* bytes) {
    RecordBatch batch;
    batch.transactional = true;
    batch.producer_id = producer_id;
    batch.producer_epoch = epoch;
    batch.base_sequence = sequence;
    batch.records.push_back({0, 1000, std::nullopt, value, {}});
    EXPECT_TRUE(EncodeRecordBatch(batch, bytes).ok());
    batch.bytes = *bytes;
    return batch;
  }

  TxnAnswer Stage(TransactionCoordinator& c, int64_t id, int16_t epoch, int32_t sequence,
                  const std::string& value) {
    std::string bytes;
    RecordBatch batch = Batch(id, epoch, sequence, value, &bytes);
    return c.StageBatch("tx", "t", 0, batch, bytes);
  }

  std::filesystem::path dir_;
  int64_t next_id_ = 1000;
  int fail_appends_ = 0;
  std::vector<std::string> appended_;
  std::vector<std::string> committed_;
};

TEST_F(TransactionsTest, CommitAppendsWhatWasStagedAndAbortDropsIt) {
  auto c = Open();
  auto p = c->InitProducer("tx", 60000, -1, -1, true);
  ASSERT_TRUE(p.answer.ok());
  EXPECT_EQ(p.producer_id, 1000);
  EXPECT_EQ(p.epoch, 0);
  // A batch of a partition not in the transaction is refused.
  EXPECT_EQ(Stage(*c, 1000, 0, 0, "a").error, ErrorCode::kInvalidTxnState);
  ASSERT_TRUE(c->AddPartitions("tx", 1000, 0, {{"t", 0}}, true).ok());
  ASSERT_TRUE(Stage(*c, 1000, 0, 0, "a").ok());
  ASSERT_TRUE(Stage(*c, 1000, 0, 0, "a").ok());  // a retry: not staged twice
  EXPECT_EQ(Stage(*c, 1000, 0, 5, "gap").error, ErrorCode::kOutOfOrderSequenceNumber);
  ASSERT_TRUE(Stage(*c, 1000, 0, 1, "b").ok());
  ASSERT_TRUE(c->AddGroup("tx", 1000, 0, "g", true).ok());
  ASSERT_TRUE(c->StageOffsets("tx", 1000, 0, "g", {{"src", 1, {42, std::nullopt}}}).ok());
  EXPECT_TRUE(c->HasPendingOffsets("g", "src", 1));
  EXPECT_TRUE(appended_.empty());
  ASSERT_TRUE(c->End("tx", 1000, 0, /*commit=*/true, true).ok());
  EXPECT_EQ(appended_, (std::vector<std::string>{"t-0:a", "t-0:b"}));
  EXPECT_EQ(committed_, (std::vector<std::string>{"g/src-1@42"}));
  EXPECT_FALSE(c->HasPendingOffsets("g", "src", 1));
  EXPECT_TRUE(c->End("tx", 1000, 0, true, true).ok());  // a retry of the commit
  EXPECT_EQ(c->End("tx", 1000, 0, false, true).error, ErrorCode::kInvalidTxnState);

  ASSERT_TRUE(c->AddPartitions("tx", 1000, 0, {{"t", 0}}, true).ok());
  ASSERT_TRUE(Stage(*c, 1000, 0, 2, "dropped").ok());
  ASSERT_TRUE(c->End("tx", 1000, 0, /*commit=*/false, true).ok());
  EXPECT_EQ(appended_.size(), 2u);
}

TEST_F(TransactionsTest, ANewInstanceFencesTheOldAndAbortsItsTransaction) {
  auto c = Open();
  auto first = c->InitProducer("tx", 60000, -1, -1, true);
  ASSERT_TRUE(c->AddPartitions("tx", first.producer_id, 0, {{"t", 0}}, true).ok());
  ASSERT_TRUE(Stage(*c, first.producer_id, 0, 0, "zombie").ok());
  auto second = c->InitProducer("tx", 60000, -1, -1, true);
  EXPECT_EQ(second.producer_id, first.producer_id);
  EXPECT_EQ(second.epoch, 1);
  EXPECT_EQ(c->End("tx", first.producer_id, 0, true, true).error, ErrorCode::kProducerFenced);
  EXPECT_EQ(c->End("tx", first.producer_id, 0, true, false).error,
            ErrorCode::kInvalidProducerEpoch);
  EXPECT_EQ(Stage(*c, first.producer_id, 0, 1, "zombie").error, ErrorCode::kInvalidProducerEpoch);
  EXPECT_EQ(c->End("tx", 7, 1, true, true).error, ErrorCode::kInvalidProducerIdMapping);
  EXPECT_EQ(c->End("tx", second.producer_id, 1, true, true).error, ErrorCode::kInvalidTxnState);
  EXPECT_TRUE(appended_.empty());
  EXPECT_EQ(c->InitProducer("tx", 0, -1, -1, true).answer.error,
            ErrorCode::kInvalidTransactionTimeout);
  EXPECT_EQ(c->InitProducer("tx", kMaxTransactionTimeoutMs + 1, -1, -1, true).answer.error,
            ErrorCode::kInvalidTransactionTimeout);
}

TEST_F(TransactionsTest, OpenTransactionsSurviveARestartAndTornTailsAreDropped) {
  int64_t id;
  {
    auto c = Open();
    id = c->InitProducer("tx", 60000, -1, -1, true).producer_id;
    ASSERT_TRUE(c->AddPartitions("tx", id, 0, {{"t", 0}}, true).ok());
    ASSERT_TRUE(Stage(*c, id, 0, 0, "kept").ok());
  }
  // A record torn by a crash at the end of the file.
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    std::ofstream(entry.path(), std::ios::app | std::ios::binary)
        << std::string("\x40\0\0\0garbage", 11);
  }
  auto c = Open();
  ASSERT_TRUE(Stage(*c, id, 0, 0, "kept").ok());  // still staged: a retry
  ASSERT_TRUE(Stage(*c, id, 0, 1, "more").ok());
  ASSERT_TRUE(c->End("tx", id, 0, true, true).ok());
  EXPECT_EQ(appended_, (std::vector<std::string>{"t-0:kept", "t-0:more"}));
}

TEST_F(TransactionsTest, ACommitInterruptedIsCarriedOutAtOpen) {
  int64_t id;
  {
    auto c = Open();
    id = c->InitProducer("tx", 60000, -1, -1, true).producer_id;
    ASSERT_TRUE(c->AddPartitions("tx", id, 0, {{"t", 0}}, true).ok());
    ASSERT_TRUE(Stage(*c, id, 0, 0, "a").ok());
    ASSERT_TRUE(Stage(*c, id, 0, 1, "b").ok());
    fail_appends_ = 1;
    EXPECT_EQ(c->End("tx", id, 0, true, true).error, ErrorCode::kCoordinatorNotAvailable);
    EXPECT_EQ(c->End("tx", id, 0, false, true).error, ErrorCode::kInvalidTxnState);  // decided
  }
  EXPECT_TRUE(appended_.empty());
  auto c = Open();
  EXPECT_EQ(appended_, (std::vector<std::string>{"t-0:a", "t-0:b"}));
  EXPECT_TRUE(c->End("tx", id, 0, true, true).ok());  // the producer's retry
  EXPECT_EQ(appended_.size(), 2u);
}

TEST_F(TransactionsTest, ATransactionPastItsTimeoutAbortsAndFencesItsProducer) {
  auto c = Open();
  auto p = c->InitProducer("tx", 200, -1, -1, true);
  ASSERT_TRUE(c->AddPartitions("tx", p.producer_id, 0, {{"t", 0}}, true).ok());
  ASSERT_TRUE(Stage(*c, p.producer_id, 0, 0, "late").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(c->End("tx", p.producer_id, 0, true, true).error, ErrorCode::kProducerFenced);
  EXPECT_TRUE(appended_.empty());
}

TEST_F(TransactionsTest, IdsUnusedPastTheirExpirationAreForgotten) {
  auto c = Open(std::chrono::milliseconds(300));
  auto idle = c->InitProducer("idle", 60000, -1, -1, true);
  auto busy = c->InitProducer("busy", 60000, -1, -1, true);
  ASSERT_TRUE(c->AddPartitions("busy", busy.producer_id, 0, {{"t", 0}}, true).ok());
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), {}), 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  // The open transaction keeps its id; the idle one is gone, file and all: a new producer id.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), {}), 1);
  EXPECT_EQ(c->AddPartitions("idle", idle.producer_id, 0, {{"t", 0}}, true).error,
            ErrorCode::kInvalidProducerIdMapping);
  EXPECT_NE(c->InitProducer("idle", 60000, -1, -1, true).producer_id, idle.producer_id);
  EXPECT_TRUE(c->End("busy", busy.producer_id, 0, false, true).ok());
}

}  // namespace
}  // namespace oxbow::kafka::internal
