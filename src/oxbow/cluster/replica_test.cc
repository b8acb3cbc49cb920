// The leader side of a replica without ZooKeeper: which followers the high watermark waits for
// while the ISR changes (docs/cluster.md#replication).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "oxbow/cluster/replica_internal.h"
#include "oxbow/engine/engine.h"

namespace oxbow::cluster::internal {
namespace {

constexpr char kTable[] = "ns.replicated";
constexpr int32_t kLeader = 1;
constexpr int64_t kLagMs = 200;

bool Anyone(int32_t) { return true; }
void OutlastTheLagTime() { std::this_thread::sleep_for(std::chrono::milliseconds(2 * kLagMs)); }

class ReplicaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("oxbow-replica-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    engine::EngineOptions options;
    options.data_dir = dir_.string();
    engine_ = engine::Engine::Open(options).ValueOrDie();
    catalog::CreateTableRequest request;
    request.table.name = kTable;
    request.table.buckets = 1;
    request.table.schema = std::make_shared<const arrow::Schema>(
        std::vector<arrow::Field>{{"id", arrow::DataType::Int64(), false}});
    ASSERT_TRUE(engine_->CreateTable(request).ok());
    ClusterOptions cluster;
    cluster.server_id = kLeader;
    cluster.replica_lag_time_max_ms = kLagMs;
    replica_ = std::make_unique<Replica>(kTable, 0, engine_->GetTable(kTable).ValueOrDie(), cluster,
                                         nullptr);
  }
  void TearDown() override {
    replica_.reset();
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Leads at epoch 1 over replicas 1, 2, 3 with ISR `isr`.
  void Lead(std::vector<int32_t> isr) {
    state_.leader = kLeader;
    state_.leader_epoch = 1;
    state_.isr = std::move(isr);
    state_.version = 0;
    replica_->BecomeLeader(state_, {1, 2, 3}, 1);
  }

  // Appends one batch of three rows straight to the log; returns the log end after it.
  int64_t Append() {
    const std::string bytes(64, 'x');
    const ByteSpan piece(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    const ByteSpan metadata[] = {piece};
    const ByteSpan body[] = {piece};
    auto appended = replica_->log().Append(log::BatchInfo{3, 0, 0, 1}, metadata, body);
    EXPECT_TRUE(appended.ok()) << appended.status().ToString();
    return replica_->log().next_offset();
  }

  // Follower `id` fetches from its log end `from`, which tells the leader what it has.
  void Fetch(int32_t id, int64_t from) {
    ReplicaFetch fetch;
    fetch.table = kTable;
    fetch.from = from;
    fetch.leader_epoch = 1;
    fetch.replica = id;
    fetch.max_wait_ms = 0;
    auto served =
        replica_->ServeFetch(fetch, [](const log::LogBatch&, int32_t) { return Status::OK(); });
    ASSERT_TRUE(served.ok()) << served.status().ToString();
  }

  int64_t HighWatermark() { return replica_->log().high_watermark(); }

  std::filesystem::path dir_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<Replica> replica_;
  BucketState state_;
};

// The CI failure of test_kafka_producers_fail_over_without_user_code: a leader acknowledged
// rows with the old ISR while its write adding a follower was landing, the controller made that
// follower the leader (it is the preferred one), and the rows it lacked were truncated away.
TEST_F(ReplicaTest, AFollowerJoiningTheIsrHoldsEveryRowAcknowledgedFromTheProposalOn) {
  Lead({1, 2});
  const int64_t first = Append();
  Fetch(2, first);
  Fetch(3, first);
  ASSERT_EQ(HighWatermark(), first);

  auto proposed = replica_->ProposeIsr(Clock::now(), Anyone, Anyone);
  ASSERT_TRUE(proposed.has_value());
  EXPECT_EQ(proposed->isr, (std::vector<int32_t>{1, 2, 3}));

  // Written or not yet: follower 3 may lead as soon as ZooKeeper has it, so what only the
  // leader and follower 2 hold is not acknowledged.
  const int64_t second = Append();
  Fetch(2, second);
  EXPECT_EQ(HighWatermark(), first);
  EXPECT_FALSE(replica_->WaitAcknowledgeable(second, Acks::kAll, Clock::now()).ok());

  BucketState written = *proposed;
  written.version = 1;
  replica_->IsrWritten(written);
  EXPECT_EQ(HighWatermark(), first);
  Fetch(3, second);
  EXPECT_EQ(HighWatermark(), second);
  EXPECT_TRUE(replica_->WaitAcknowledgeable(second, Acks::kAll, Clock::now()).ok());
}

TEST_F(ReplicaTest, AProposalThatIsNoLongerWantedStopsHoldingTheWatermark) {
  Lead({1, 2});
  const int64_t first = Append();
  Fetch(2, first);
  Fetch(3, first);
  ASSERT_TRUE(replica_->ProposeIsr(Clock::now(), Anyone, Anyone).has_value());

  // The write failed, and follower 3 stopped fetching: the next pass proposes nothing.
  const int64_t second = Append();
  Fetch(2, second);
  EXPECT_EQ(HighWatermark(), first);
  OutlastTheLagTime();
  Fetch(2, second);
  EXPECT_FALSE(replica_->ProposeIsr(Clock::now(), Anyone, Anyone).has_value());
  EXPECT_TRUE(replica_->WaitAcknowledgeable(second, Acks::kAll, Clock::now()).ok());
  EXPECT_EQ(HighWatermark(), second);
}

TEST_F(ReplicaTest, LeaversStayCountedUntilTheirRemovalIsWritten) {
  Lead({1, 2, 3});
  const int64_t first = Append();
  Fetch(2, first);
  Fetch(3, first);
  ASSERT_EQ(HighWatermark(), first);

  const int64_t second = Append();
  Fetch(2, second);
  OutlastTheLagTime();
  Fetch(2, second);
  auto proposed = replica_->ProposeIsr(Clock::now(), Anyone, Anyone);
  ASSERT_TRUE(proposed.has_value());
  EXPECT_EQ(proposed->isr, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(HighWatermark(), first);

  BucketState written = *proposed;
  written.version = 1;
  replica_->IsrWritten(written);
  EXPECT_EQ(HighWatermark(), second);
}

TEST_F(ReplicaTest, AServerThatIsNotRegisteredDoesNotJoinTheIsr) {
  Lead({1, 2});
  const int64_t first = Append();
  Fetch(2, first);
  Fetch(3, first);  // server 3 left the cluster (a controlled shutdown) and still fetches
  EXPECT_FALSE(replica_->ProposeIsr(Clock::now(), Anyone, [](int32_t id) { return id != 3; }));
  auto proposed = replica_->ProposeIsr(Clock::now(), Anyone, Anyone);
  ASSERT_TRUE(proposed.has_value());
  EXPECT_EQ(proposed->isr, (std::vector<int32_t>{1, 2, 3}));
}

TEST_F(ReplicaTest, AFollowerMovedAwayLeavesTheIsrAndDoesNotRejoin) {
  Lead({1, 2, 3});
  const int64_t first = Append();
  Fetch(2, first);
  Fetch(3, first);  // the bucket moved off server 3, which has not heard yet and still fetches
  auto not_three = [](int32_t id) { return id != 3; };
  auto proposed = replica_->ProposeIsr(Clock::now(), not_three, Anyone);
  ASSERT_TRUE(proposed.has_value());
  EXPECT_EQ(proposed->isr, (std::vector<int32_t>{1, 2}));

  BucketState written = *proposed;
  written.version = 1;
  replica_->IsrWritten(written);
  Fetch(3, first);
  EXPECT_FALSE(replica_->ProposeIsr(Clock::now(), not_three, Anyone).has_value());
}

TEST(ThrottleTest, ReservationsQueueAtTheRate) {
  Throttle throttle(1'000'000);
  const auto before = Clock::now();
  Clock::time_point last;
  for (int i = 0; i < 10; ++i) last = throttle.Reserve(100'000);
  const auto after = Clock::now();
  // Ten reservations of 100 KB at 1 MB/s end one second after the first began.
  EXPECT_GE(last - before, std::chrono::seconds(1));
  EXPECT_LE(last - after, std::chrono::seconds(1));
}

}  // namespace
}  // namespace oxbow::cluster::internal
