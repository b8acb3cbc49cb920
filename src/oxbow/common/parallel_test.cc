#include "oxbow/common/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

namespace oxbow {
namespace {

TEST(ParallelForTest, RunsEveryPieceOnceAndReturnsAfterTheLast) {
  for (size_t n : {0, 1, 2, 7, 100}) {
    std::vector<std::atomic<int>> runs(n);
    ParallelFor(n, [&](size_t i) {
      std::this_thread::sleep_for(std::chrono::microseconds(i % 3 * 100));
      runs[i].fetch_add(1);
    });
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(runs[i].load(), 1) << "piece " << i << " of " << n;
  }
}

TEST(ParallelForTest, UsesAnotherThreadWhenOneIsIdle) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core";
  // Two pieces that each wait for the other to start can only finish on two threads.
  std::atomic<int> started{0};
  std::set<std::thread::id> threads;
  std::mutex mu;
  ParallelFor(2, [&](size_t) {
    started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started.load() < 2 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    std::lock_guard lock(mu);
    threads.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(started.load(), 2);
  EXPECT_EQ(threads.size(), 2u);
}

TEST(ParallelForTest, NestedCallsFinishWhileEveryPoolThreadIsBusy) {
  std::atomic<int> inner{0};
  const size_t outer = 2 * std::max(1u, std::thread::hardware_concurrency());
  ParallelFor(outer, [&](size_t) { ParallelFor(4, [&](size_t) { inner.fetch_add(1); }); });
  EXPECT_EQ(inner.load(), static_cast<int>(outer * 4));
}

}  // namespace
}  // namespace oxbow
