// The ZooKeeper wrapper against a real ZooKeeper server (scripts/zookeeper.sh).
#include "oxbow/cluster/zookeeper.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "oxbow/testing/zookeeper_server.h"

namespace oxbow::cluster {
namespace {

class ZooKeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = testing::ZooKeeperServer::Shared();
    if (!server_) GTEST_SKIP() << testing::ZooKeeperServer::SkipReason();
    hosts_ = server_->Chroot();
  }

  std::unique_ptr<ZooKeeper> Open(int64_t session_timeout_ms = 4000,
                                  std::function<void()> on_expired = {}) {
    ZooKeeperOptions options;
    options.hosts = hosts_;
    options.session_timeout_ms = session_timeout_ms;
    auto zk = ZooKeeper::Open(options, std::move(on_expired));
    EXPECT_TRUE(zk.ok()) << zk.status().ToString();
    return zk.ok() ? std::move(zk).ValueOrDie() : nullptr;
  }

  template <typename F>
  static bool WaitFor(F done, int ms = 5000) {
    for (int waited = 0; waited < ms; waited += 10) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return done();
  }

  testing::ZooKeeperServer* server_ = nullptr;
  std::string hosts_;
};

TEST_F(ZooKeeperTest, VersionsGuardEveryWrite) {
  auto zk = Open();
  ASSERT_TRUE(zk->Create("/a", "one").ok());
  EXPECT_EQ(zk->Create("/a", "again").status().code(), StatusCode::kAlreadyExists);
  auto node = zk->Get("/a");
  ASSERT_TRUE(node.ok());
  EXPECT_EQ(node->data, "one");
  EXPECT_EQ(node->stat.version, 0);
  auto set = zk->Set("/a", "two", 0);
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->version, 1);
  auto stale = zk->Set("/a", "three", 0);
  EXPECT_EQ(stale.status().code(), StatusCode::kAborted);
  EXPECT_NE(stale.status().message().find("/a"), std::string::npos);
  EXPECT_EQ(zk->Get("/a")->data, "two");
  EXPECT_EQ(zk->Get("/missing").status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(zk->Exists("/missing")->has_value());
  EXPECT_EQ(zk->Delete("/a", 0).code(), StatusCode::kAborted);
  EXPECT_TRUE(zk->Delete("/a", 1).ok());
  // A large value comes back whole.
  const std::string big(300 << 10, 'x');
  ASSERT_TRUE(zk->Create("/big", big).ok());
  EXPECT_EQ(zk->Get("/big")->data, big);
}

TEST_F(ZooKeeperTest, SequentialAndEphemeralNodes) {
  auto zk = Open();
  ASSERT_TRUE(zk->CreateAll("/q/r").ok());
  ASSERT_TRUE(zk->CreateAll("/q/r").ok());  // already there: fine
  auto first = zk->Create("/q/r/n-", "", CreateMode::kPersistentSequential);
  auto second = zk->Create("/q/r/n-", "", CreateMode::kPersistentSequential);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*first, "/q/r/n-0000000000");
  EXPECT_EQ(*second, "/q/r/n-0000000001");
  {
    auto other = Open();
    ASSERT_TRUE(other->Create("/q/live", "x", CreateMode::kEphemeral).ok());
    EXPECT_TRUE(zk->Exists("/q/live")->has_value());
  }
  // Its session closed: the ephemeral node went with it, at once.
  EXPECT_FALSE(zk->Exists("/q/live")->has_value());
  ASSERT_TRUE(zk->DeleteAll("/q").ok());
  EXPECT_FALSE(zk->Exists("/q")->has_value());
  EXPECT_TRUE(zk->DeleteAll("/q").ok());
}

TEST_F(ZooKeeperTest, WatchesFireOnceOnChangeChildAndCreation) {
  auto zk = Open();
  auto writer = Open();
  ASSERT_TRUE(zk->Create("/w", "0").ok());
  std::atomic<int> data{0}, children{0}, created{0};
  ASSERT_TRUE(zk->Get("/w", [&] { ++data; }).ok());
  ASSERT_TRUE(zk->GetChildren("/w", [&] { ++children; }).ok());
  ASSERT_TRUE(zk->Exists("/w/later", [&] { ++created; }).ok());
  ASSERT_TRUE(writer->Set("/w", "1").ok());
  ASSERT_TRUE(writer->Set("/w", "2").ok());
  ASSERT_TRUE(writer->Create("/w/later", "").ok());
  EXPECT_TRUE(WaitFor([&] { return data == 1 && children == 1 && created == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(data, 1);  // one-shot: the second change did not fire it again
}

TEST_F(ZooKeeperTest, AFailedMultiChangesNothingAndNamesItsOp) {
  auto zk = Open();
  ASSERT_TRUE(zk->Create("/m", "v").ok());
  Status st =
      zk->Multi({ZkOp::Create("/m/new", "x"), ZkOp::Set("/m", "w", 0), ZkOp::Check("/m", 7)});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kAborted);
  EXPECT_NE(st.message().find("multi op 2 (check) /m"), std::string::npos) << st.message();
  EXPECT_FALSE(zk->Exists("/m/new")->has_value());
  EXPECT_EQ(zk->Get("/m")->data, "v");
  ASSERT_TRUE(
      zk->Multi({ZkOp::Create("/m/new", "x"), ZkOp::Set("/m", "w", 0), ZkOp::Delete("/m/new")})
          .ok());
  EXPECT_EQ(zk->Get("/m")->data, "w");
  EXPECT_FALSE(zk->Exists("/m/new")->has_value());
}

// Session expiry (the callback, fenced leaders, a new session) is tested end to end by
// tests/integration/test_cluster.py::test_a_paused_leader_acknowledges_nothing_after_it_is_deposed:
// expiring a session on demand raced the client's reconnect under load here.

TEST(ZooKeeperOpenTest, NoServerIsUnavailable) {
  ZooKeeperOptions options;
  options.hosts = "127.0.0.1:1";
  options.connect_timeout_ms = 300;
  auto zk = ZooKeeper::Open(options);
  ASSERT_FALSE(zk.ok());
  EXPECT_EQ(zk.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace oxbow::cluster
