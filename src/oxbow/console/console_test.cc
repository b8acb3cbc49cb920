#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "oxbow/console/assets_internal.h"
#include "oxbow/console/history_internal.h"

namespace oxbow::console::internal {
namespace {

TEST(HistoryTest, SamplesAtItsIntervalAndRatesArePerSecondBetweenSamples) {
  std::atomic<int64_t> calls{0};
  History history(
      [&] {
        const int64_t n = calls++;
        Sample sample;
        sample.time_ms = 1000 * n;  // one second apart
        sample.totals.puts = 2 * n;
        sample.totals.put_rows = 100 * n;
        sample.totals.put_seconds = 0.004 * static_cast<double>(n);  // 2 ms a put
        sample.totals.errors = n / 2;
        return sample;
      },
      std::chrono::milliseconds(10));
  while (history.samples().size() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const std::vector<Sample> samples = history.samples();
  const Rates rates = RatesOf(samples);
  ASSERT_EQ(rates.time_ms.size(), samples.size() - 1);
  for (size_t i = 0; i < rates.time_ms.size(); ++i) {
    EXPECT_DOUBLE_EQ(rates.put_rows[i], 100.0);
    EXPECT_NEAR(rates.put_latency_ms[i], 2.0, 1e-9);
    EXPECT_DOUBLE_EQ(rates.fetch_latency_ms[i], 0.0);  // no reads: no latency
  }
  EXPECT_EQ(rates.errors[0] + rates.errors[1], 1.0);
}

TEST(HistoryTest, KeepsAnHour) {
  History history([] { return Sample{}; }, std::chrono::minutes(20));
  EXPECT_EQ(history.samples().size(), 1u);  // the first, at once
  EXPECT_TRUE(RatesOf(history.samples()).time_ms.empty());
}

TEST(AssetsTest, ThePagesAreCompiledIn) {
  ASSERT_TRUE(Assets().contains("index.html"));
  EXPECT_NE(Assets().at("index.html").find("/console.js"), std::string_view::npos);
  EXPECT_TRUE(Assets().contains("console.js"));
  EXPECT_TRUE(Assets().contains("console.css"));
}

}  // namespace
}  // namespace oxbow::console::internal
