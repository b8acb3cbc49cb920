#include "oxbow/metrics/metrics.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>

namespace oxbow::metrics {
namespace {

TEST(MetricsTest, RendersCountersHistogramsAndSamples) {
  Metrics m;
  m.AddPut("ns.t", 10, 800, 0.002);
  m.AddPut("ns.t", 5, 400, 0.004);
  m.AddFetch("ns.t", 15, 1200, 0.001);
  m.AddFollowReaders("ns.t", 1);
  m.AddError("put", "Invalid argument");
  m.ObserveFsync(0.0005);
  const std::string page = m.Render(
      {{"oxbow_log_next_offset", "Next offset", false, {{"table", "ns.t"}, {"bucket", "0"}}, 42}});
  EXPECT_NE(page.find("oxbow_rows_in_total{table=\"ns.t\"} 15"), std::string::npos) << page;
  EXPECT_NE(page.find("oxbow_bytes_in_total{table=\"ns.t\"} 1200"), std::string::npos);
  EXPECT_NE(page.find("oxbow_produce_latency_seconds_count{table=\"ns.t\"} 2"), std::string::npos);
  EXPECT_NE(page.find("oxbow_fsync_latency_seconds_count 1"), std::string::npos);
  EXPECT_NE(page.find("oxbow_follow_readers{table=\"ns.t\"} 1"), std::string::npos);
  EXPECT_NE(page.find("oxbow_request_errors_total{code=\"Invalid argument\",operation=\"put\"} 1"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("# TYPE oxbow_log_next_offset gauge"), std::string::npos);
  EXPECT_NE(page.find("oxbow_log_next_offset{table=\"ns.t\",bucket=\"0\"} 42"), std::string::npos)
      << page;
  m.ObserveLakeRound("ns.t", 0.02, true);
  m.ObserveLakeRound("ns.t", 0.5, false);
  m.ObserveCompaction("ns.t", 3, true);
  m.AddLakeCommit("ns.t", "append");
  m.AddLakeCommit("ns.t", "append");
  m.AddLakeCommit("ns.t", "compaction");
  const std::string lake = m.Render({});
  for (const char* line : {"oxbow_lake_round_duration_seconds_count{table=\"ns.t\"} 2",
                           "oxbow_lake_round_errors_total{table=\"ns.t\"} 1",
                           "oxbow_lake_compaction_duration_seconds_count{table=\"ns.t\"} 1",
                           "oxbow_lake_compaction_errors_total{table=\"ns.t\"} 0",
                           "oxbow_lake_commits_total{kind=\"append\",table=\"ns.t\"} 2",
                           "oxbow_lake_commits_total{kind=\"compaction\",table=\"ns.t\"} 1"}) {
    EXPECT_NE(lake.find(line), std::string::npos) << line << "\n" << lake;
  }
  m.ForgetTable("ns.t");
  EXPECT_EQ(m.Render({}).find("ns.t"), std::string::npos);
}

TEST(MetricsTest, ServerAnswersMetricsHealthAndReadiness) {
  std::atomic<bool> ready{false};
  auto server = MetricsServer::Start(
      "127.0.0.1:0", {}, [] { return std::string("oxbow_x 1\n"); }, [&] { return ready.load(); });
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  httplib::Client client("127.0.0.1", (*server)->port());
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->body, "oxbow_x 1\n");
  EXPECT_EQ(client.Get("/healthz")->status, 200);
  EXPECT_EQ(client.Get("/readyz")->status, 503);
  ready = true;
  EXPECT_EQ(client.Get("/readyz")->status, 200);
  EXPECT_EQ(client.Get("/nope")->status, 404);
  auto taken = MetricsServer::Start(
      "127.0.0.1:" + std::to_string((*server)->port()), {}, [] { return std::string(); },
      [] { return true; });
  EXPECT_FALSE(taken.ok());
  EXPECT_NE(taken.status().message().find("cannot listen"), std::string::npos);
}

TEST(MetricsTest, ProcessFigures) {
  EXPECT_GT(ProcessRssBytes(), 1 << 20);
  EXPECT_GT(ProcessOpenFiles(), 2);
}

}  // namespace
}  // namespace oxbow::metrics
