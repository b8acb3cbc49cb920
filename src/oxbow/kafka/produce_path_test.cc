// The Kafka produce path reaches the log through a table handle without any lake call.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "oxbow/kafka/broker_internal.h"
#include "oxbow/kafka/records.h"
#include "oxbow/kafka/values_internal.h"
#include "oxbow/testing/counting_lake.h"

namespace oxbow::kafka::internal {
namespace {

class ProducePathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::remove_all(dir_);
    Open();
  }
  void Open() {
    broker_.reset();
    node_.reset();
    node::NodeOptions options;
    options.engine.data_dir = (dir_ / "data").string();
    options.lake = lake_.options;
    options.client_state_dir = (dir_ / "data" / "kafka").string();
    options.may_hold_producers = MayHoldProducers;
    node_ = node::Node::Open(std::move(options)).ValueOrDie();
    broker_ = std::make_unique<Broker>(node_.get(), KafkaOptions{}, 9092,
                                       std::make_unique<GroupCoordinator>(node_->offsets()));
  }
  void TearDown() override {
    broker_.reset();
    node_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Produces `values` to partition 1 of "t" (one v7 request, one batch), idempotently when
  // `producer_id` >= 0; returns the partition's answer.
  msg::ProduceResponse::PartitionProduceResponse Produce(const std::vector<std::string>& values,
                                                         int64_t producer_id = -1,
                                                         int32_t base_sequence = -1) {
    RecordBatch batch;
    batch.producer_id = producer_id;
    batch.producer_epoch = producer_id >= 0 ? 0 : -1;
    batch.base_sequence = base_sequence;
    batch.last_offset_delta = static_cast<int32_t>(values.size()) - 1;
    for (size_t i = 0; i < values.size(); ++i) {
      batch.records.push_back({static_cast<int64_t>(i), 0, std::nullopt, values[i], {}});
    }
    std::string records;
    EXPECT_TRUE(EncodeRecordBatch(batch, &records).ok());
    msg::ProduceRequest request;
    request.acks = -1;
    request.timeout_ms = 1000;
    request.topic_data.push_back({"t", {}, {{1, records}}});
    constexpr int16_t kVersion = 7;
    Writer header;
    header.Int16(static_cast<int16_t>(ApiKey::kProduce));
    header.Int16(kVersion);
    header.Int32(42);
    header.NullableString(std::string("produce-path-test"), false);
    Session session;
    auto answer = broker_->Handle(header.Take() + Encode(request, kVersion), session);
    EXPECT_TRUE(answer.ok()) << answer.status().ToString();
    Reader r(answer->value());
    EXPECT_EQ(r.Int32(), 42);  // correlation id
    auto response = Decode<msg::ProduceResponse>(r, kVersion).ValueOrDie();
    return response.responses.at(0).partition_responses.at(0);
  }

  const std::filesystem::path dir_ =
      std::filesystem::temp_directory_path() /
      ("oxbow-produce-path-" + std::to_string(::getpid()) + "-" +
       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  testing::CountingLake lake_{(dir_ / "warehouse").string()};
  std::unique_ptr<node::Node> node_;
  std::unique_ptr<Broker> broker_;
};

TEST_F(ProducePathTest, ReachesTheLogWithoutALakeCall) {
  catalog::CreateTableRequest create;
  create.table.name = "kafka.t";
  create.table.schema = RawTopicSchema();
  create.table.buckets = 2;
  ASSERT_TRUE(node_->CreateTable(create).ok());
  auto plain = Produce({"a", "b"});
  EXPECT_EQ(plain.error_code, ErrorCode::kNone) << plain.error_message.value_or("");
  EXPECT_EQ(plain.base_offset, 0);
  // Once tiering has set up the table's lake, a reopened node tiers those rows at once, and
  // then not for hours: the lake has a snapshot, as a busy server's has.
  for (int i = 0; i < 500 && !lake_.HasTable({"kafka", "t"}); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Open();
  for (int i = 0; i < 500; ++i) {
    auto lake = node_->GetTable("kafka.t").ValueOrDie().LakeStatus().ValueOrDie();
    if (lake.tiered_offsets.size() == 2 && lake.tiered_offsets[1] == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(node_->GetTable("kafka.t").ValueOrDie().LakeStatus().ValueOrDie().tiered_offsets,
            (std::vector<int64_t>{0, 2}));
  lake_.Reset();

  const int64_t producer = node_->producers()->NewProducerId();
  auto idempotent = Produce({"c"}, producer, 0);
  EXPECT_EQ(idempotent.error_code, ErrorCode::kNone);
  EXPECT_EQ(idempotent.base_offset, 2);
  auto retry = Produce({"c"}, producer, 0);
  EXPECT_EQ(retry.base_offset, 2);  // acknowledged once, not appended again
  EXPECT_EQ(node_->GetTable("kafka.t").ValueOrDie().Buckets()[1].next_offset, 3);

  EXPECT_EQ(lake_.Calls(), 0);
}

}  // namespace
}  // namespace oxbow::kafka::internal
