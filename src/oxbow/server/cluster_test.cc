// Three in-process oxbowd servers on one real ZooKeeper: a table's buckets replicated byte for
// byte, acks=all, the leader's departure and the election that follows, not-leader answers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "oxbow/arrow/builder.h"
#include "oxbow/client/client.h"
#include "oxbow/server/server.h"
#include "oxbow/testing/zookeeper_server.h"

namespace oxbow::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class ClusterTest : public ::testing::Test {
 protected:
  static constexpr int kServers = 3;

  void SetUp() override {
    zookeeper_ = testing::ZooKeeperServer::Shared();
    if (!zookeeper_) GTEST_SKIP() << testing::ZooKeeperServer::SkipReason();
    char tmpl[] = "/tmp/oxbow_cluster_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    hosts_ = zookeeper_->Chroot();
    for (int i = 1; i <= kServers; ++i) {
      ports_[i] = testing::FreeLoopbackPort();
      ASSERT_TRUE(StartServer(i).ok());
    }
  }

  void TearDown() override {
    for (auto& server : servers_) {
      if (server) {
        EXPECT_TRUE(server->Shutdown().ok());
      }
      server.reset();
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string DataDir(int id) const { return dir_ + "/server" + std::to_string(id); }

  Status StartServer(int id) {
    ServerOptions options;
    options.listen = "127.0.0.1:" + std::to_string(ports_[id]);
    options.kafka.listen = "";
    options.catalog.listen = "";
    options.schema_registry.listen = "";
    options.console.listen = "";
    options.metrics_listen = "";
    options.node.engine.data_dir = DataDir(id);
    options.node.lake.warehouse = dir_ + "/warehouse" + std::to_string(id);
    options.node.cluster.zookeeper = hosts_;
    options.node.cluster.server_id = id;
    options.node.cluster.session_timeout_ms = 2000;
    options.node.cluster.replica_lag_time_max_ms = 2000;
    options.node.cluster.replica_fetch_wait_ms = 100;
    ASSIGN_OR_RAISE(servers_[id], Server::Start(std::move(options)));
    return Status::OK();
  }

  std::unique_ptr<client::Client> Connect(int id) {
    auto c = client::Client::Connect("127.0.0.1:" + std::to_string(ports_[id]));
    EXPECT_TRUE(c.ok());
    return std::move(c).ValueOrDie();
  }

  Result<json> Action(int id, const std::string& type, const json& body) {
    ASSIGN_OR_RAISE(std::string reply, Connect(id)->DoAction(type, body.dump()));
    return json::parse(reply);
  }

  // The bucket's state as server `id` sees it.
  json BucketStatus(int id, int bucket) {
    auto status = Action(id, "cluster_status", json::object());
    EXPECT_TRUE(status.ok()) << status.status().ToString();
    for (const auto& b : (*status)["buckets"]) {
      if (b["bucket"] == bucket) return b;
    }
    return json();
  }

  // Waits until `done` holds, checking every 50 ms for up to `seconds`.
  template <typename F>
  bool WaitFor(F done, int seconds = 20) {
    const auto deadline = Clock::now() + std::chrono::seconds(seconds);
    while (Clock::now() < deadline) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // The leader of `bucket` once it serves as one (a create returns when the creating server
  // mirrored the table; the others follow within a metadata pass).
  int Leader(int bucket) {
    int leader = -1;
    EXPECT_TRUE(WaitFor([&] {
      leader = BucketStatus(1, bucket)["leader"].get<int>();
      return leader > 0 && BucketStatus(leader, bucket)["role"] == "leader";
    }));
    return leader;
  }

  Status CreateTable(int id, int buckets) {
    json body = {
        {"table", "ns.t"},
        {"schema", {{"fields", {{{"name", "id"}, {"type", "int64"}, {"nullable", false}}}}}},
        {"buckets", buckets},
        {"properties", {{"replication.factor", "3"}, {"min.insync.replicas", "2"}}}};
    return Action(id, "create_table", body).status();
  }

  // Puts rows [first, first + count) through server `id`, one batch; the bucket it went to.
  Result<int> Put(int id, int64_t first, int64_t count) {
    auto schema = std::make_shared<const arrow::Schema>(
        std::vector<arrow::Field>{arrow::Field{"id", arrow::DataType::Int64(), false}});
    arrow::Int64Builder ids(arrow::DataType::Int64());
    for (int64_t i = 0; i < count; ++i) RETURN_NOT_OK(ids.Append(first + i));
    ASSIGN_OR_RAISE(auto column, ids.Finish());
    ASSIGN_OR_RAISE(auto batch, arrow::RecordBatch::Make(schema, count, {std::move(column)}));
    auto client = Connect(id);
    ASSIGN_OR_RAISE(auto stream, client->DoPut("ns.t", schema));
    RETURN_NOT_OK(stream->Send(*batch));
    RETURN_NOT_OK(stream->DoneWriting());
    ASSIGN_OR_RAISE(auto ack, stream->ReadAck());
    RETURN_NOT_OK(stream->Finish());
    if (!ack) return Status::Invalid("no acknowledgement");
    return json::parse(*ack)["offsets"][0]["bucket"].get<int>();
  }

  testing::ZooKeeperServer* zookeeper_ = nullptr;
  std::string dir_;
  std::string hosts_;
  std::map<int, int> ports_;
  std::unique_ptr<Server> servers_[kServers + 1];
};

TEST_F(ClusterTest, ReplicatesEveryBucketByteForByte) {
  Status created = CreateTable(1, 3);
  ASSERT_TRUE(created.ok()) << created.ToString();
  // Every server leads one bucket (3 buckets, 3 servers, round-robin).
  for (int b = 0; b < 3; ++b) ASSERT_GT(Leader(b), 0);
  for (int id = 1; id <= kServers; ++id) {
    for (int round = 0; round < 5; ++round) {
      auto bucket = Put(id, id * 1000 + round * 10, 10);
      ASSERT_TRUE(bucket.ok()) << bucket.status().ToString();
    }
  }
  auto meta = Action(1, "describe_table", {{"table", "ns.t"}});
  ASSERT_TRUE(meta.ok());
  const int64_t table_id = (*meta)["table_id"];
  for (int b = 0; b < 3; ++b) {
    const int leader_id = Leader(b);
    ASSERT_TRUE(WaitFor([&] {
      json l = BucketStatus(leader_id, b);
      for (int id = 1; id <= kServers; ++id) {
        if (BucketStatus(id, b)["log_end"] != l["log_end"]) return false;
      }
      return l["high_watermark"] == l["log_end"] && l["log_end"].get<int64_t>() == 50;
    })) << BucketStatus(leader_id, b).dump();
    // Identical offsets and checksums: the segment files are the same bytes everywhere.
    const std::string bucket_dir = "/tables/" + std::to_string(table_id) + "/" + std::to_string(b);
    for (const auto& entry : std::filesystem::directory_iterator(DataDir(leader_id) + bucket_dir)) {
      if (entry.path().extension() != ".log") continue;
      const std::string bytes = ReadFile(entry.path());
      for (int id = 1; id <= kServers; ++id) {
        EXPECT_EQ(ReadFile(DataDir(id) + bucket_dir + "/" + entry.path().filename().string()),
                  bytes)
            << "server " << id << " bucket " << b;
      }
    }
  }
}

TEST_F(ClusterTest, ALeaderThatLeavesIsReplacedAndNothingAcknowledgedIsLost) {
  Status created = CreateTable(1, 1);
  ASSERT_TRUE(created.ok()) << created.ToString();
  const int leader = Leader(0);
  auto put = Put(leader, 0, 100);
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  const int other = leader % kServers + 1;
  // A put on a follower is refused with the leader's address.
  auto refused = Put(other, 100, 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("not_leader"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find(std::to_string(ports_[leader])), std::string::npos);

  ASSERT_TRUE(servers_[leader]->Shutdown().ok());
  servers_[leader].reset();
  int next = -1;
  ASSERT_TRUE(WaitFor([&] {
    next = BucketStatus(other, 0)["leader"];
    return next > 0 && next != leader;
  }));
  EXPECT_EQ(BucketStatus(other, 0)["leader_epoch"], 1);
  ASSERT_TRUE(WaitFor([&] { return Put(next, 100, 50).ok(); }));
  // The new leader holds every acknowledged row, once.
  auto stream = Connect(next)->DoGet(R"({"table":"ns.t","bucket":0})");
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  std::vector<int64_t> seen;
  while (true) {
    auto chunk = (*stream)->Next();
    ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
    if (!chunk->has_value()) break;
    const auto& column = (*chunk)->batch->column(0);
    for (int64_t i = 0; i < column.length(); ++i) seen.push_back(column.Value<int64_t>(i));
  }
  ASSERT_EQ(seen.size(), 150u);
  for (int64_t i = 0; i < 150; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], i);

  // The old leader returns as a follower, catches up, and the preferred leader takes over again.
  ASSERT_TRUE(StartServer(leader).ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        json state = BucketStatus(leader, 0);
        return state["leader"] == leader && state["role"] == "leader" && state["log_end"] == 150;
      },
      30))
      << BucketStatus(leader, 0).dump();
}

TEST_F(ClusterTest, AcksAllRefusesWhenTooFewReplicasAreInSync) {
  Status created = CreateTable(1, 1);
  ASSERT_TRUE(created.ok()) << created.ToString();
  const int leader = Leader(0);
  for (int id = 1; id <= kServers; ++id) {
    if (id == leader) continue;
    ASSERT_TRUE(servers_[id]->Shutdown().ok());
    servers_[id].reset();
  }
  ASSERT_TRUE(WaitFor([&] { return BucketStatus(leader, 0)["isr"].size() == 1; }));
  auto refused = Put(leader, 0, 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("not enough replicas"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace oxbow::server
