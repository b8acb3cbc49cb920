#include "oxbow/metrics/metrics.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>

namespace oxbow::metrics {
namespace {

TEST(MetricsTest, RendersCountersHistogramsAndSamples) {
  Metrics m;
  m.AddPut("ns.t", {{0, 10}}, 800, 0.002);
  m.AddPut("ns.t", {{0, 5}}, 400, 0.004);
  m.AddFetch("ns.t", 0, 15, 1200, 0.001);
  m.AddFollowReaders("ns.t", 1);
  m.AddError("put", "Invalid argument");
  m.ObserveFsync(0.0005);
  const std::string page = m.Render(
      {{"oxbow_log_next_offset", "Next offset", false, {{"table", "ns.t"}, {"bucket", "0"}}, 42}});
  EXPECT_NE(page.find("oxbow_rows_in_total{bucket=\"0\",table=\"ns.t\"} 15"), std::string::npos)
      << page;
  EXPECT_NE(page.find("oxbow_bytes_in_total{bucket=\"0\",table=\"ns.t\"} 1200"), std::string::npos);
  EXPECT_NE(page.find("oxbow_rows_out_total{bucket=\"0\",table=\"ns.t\"} 15"), std::string::npos);
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

TEST(MetricsTest, BucketSeriesAreCappedAndSplitByRows) {
  Metrics m(3);
  // One batch over two buckets: rows exact, bytes shared by rows (the last takes the rest).
  m.AddPut("a.t", {{0, 30}, {1, 10}}, 1001, 0.001);
  m.AddPut("a.t", {{2, 5}}, 50, 0.001);
  // Past three (table, bucket) pairs, new buckets of any table fold into "other".
  m.AddPut("b.t", {{0, 7}}, 70, 0.001);
  m.AddPut("a.t", {{3, 1}, {4, 2}}, 30, 0.001);
  m.AddFetch("a.t", 1, 4, 40, 0.001);
  m.AddFetch("b.t", 9, 6, 60, 0.001);
  m.AddFetch("a.t", kNoBucket, 2, 20, 0.001);  // a lookup: "none", outside the cap
  std::string page = m.Render({});
  for (const char* line : {"oxbow_rows_in_total{bucket=\"0\",table=\"a.t\"} 30",
                           "oxbow_bytes_in_total{bucket=\"0\",table=\"a.t\"} 750",
                           "oxbow_rows_in_total{bucket=\"1\",table=\"a.t\"} 10",
                           "oxbow_bytes_in_total{bucket=\"1\",table=\"a.t\"} 251",
                           "oxbow_rows_in_total{bucket=\"2\",table=\"a.t\"} 5",
                           "oxbow_rows_in_total{bucket=\"other\",table=\"b.t\"} 7",
                           "oxbow_rows_in_total{bucket=\"other\",table=\"a.t\"} 3",
                           "oxbow_bytes_in_total{bucket=\"other\",table=\"a.t\"} 30",
                           "oxbow_rows_out_total{bucket=\"1\",table=\"a.t\"} 4",
                           "oxbow_rows_out_total{bucket=\"other\",table=\"b.t\"} 6",
                           "oxbow_rows_out_total{bucket=\"none\",table=\"a.t\"} 2",
                           "oxbow_produce_latency_seconds_count{table=\"a.t\"} 3"}) {
    EXPECT_NE(page.find(line), std::string::npos) << line << "\n" << page;
  }
  EXPECT_EQ(page.find("bucket=\"3\""), std::string::npos);
  // A dropped table frees its pairs for others.
  m.ForgetTable("a.t");
  m.AddPut("b.t", {{1, 2}}, 20, 0.001);
  page = m.Render({});
  EXPECT_EQ(page.find("a.t"), std::string::npos) << page;
  EXPECT_NE(page.find("oxbow_rows_in_total{bucket=\"1\",table=\"b.t\"} 2"), std::string::npos)
      << page;
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
