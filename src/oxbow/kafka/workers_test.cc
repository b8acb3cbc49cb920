#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "oxbow/kafka/workers_internal.h"

namespace oxbow::kafka::internal {
namespace {

using std::chrono::milliseconds;

WorkersOptions Options(int eager_threads, milliseconds idle_timeout = std::chrono::seconds(10)) {
  WorkersOptions options;
  options.name = "test-worker";
  options.eager_threads = eager_threads;
  options.idle_timeout = idle_timeout;
  return options;
}

TEST(WorkersTest, ATaskDoesNotWaitBehindABusyOne) {
  Workers workers(Options(4));
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  workers.Run([released] { released.wait(); });  // a long poll
  std::promise<void> ran;
  workers.Run([&ran] { ran.set_value(); });
  EXPECT_EQ(ran.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(workers.threads(), 2);
  release.set_value();
  workers.Drain();
  EXPECT_EQ(workers.threads(), 0);
}

TEST(WorkersTest, AnIdleThreadTakesTheNextTaskAndEndsWhenIdleLongEnough) {
  Workers workers(Options(4, milliseconds(200)));
  for (int i = 0; i < 20; ++i) {
    std::promise<void> ran;
    workers.Run([&ran] { ran.set_value(); });
    ran.get_future().wait();
    // The thread that ran it waits for the next task: the sequence needs no second thread.
    for (int spin = 0; spin < 1000 && workers.threads() > 1; ++spin) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    EXPECT_EQ(workers.threads(), 1) << "task " << i;
    std::this_thread::sleep_for(milliseconds(5));  // it is idle again
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (workers.threads() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(workers.threads(), 0) << "an idle thread did not end";
}

TEST(WorkersTest, BeyondTheEagerThreadsATaskThatWaitedGetsANewOne) {
  Workers workers(Options(1));
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  workers.Run([released] { released.wait(); });
  std::promise<void> ran;
  workers.Run([&ran] { ran.set_value(); });
  EXPECT_EQ(ran.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(workers.threads(), 2);
  release.set_value();
}

TEST(WorkersTest, ABurstOfShortTasksRunsOnTheEagerThreads) {
  Workers workers(Options(2));
  std::atomic<int> done{0};
  for (int i = 0; i < 2000; ++i) {
    workers.Run([&done] {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      done.fetch_add(1);
    });
  }
  // Threads that keep finishing tasks get no company: the 2 eager ones, a few more at most if
  // the machine stalls them all for a while.
  EXPECT_LT(workers.threads(), 10);
  workers.Drain();
  EXPECT_EQ(done.load(), 2000);
}

TEST(WorkersTest, DrainWaitsForTasksThatTasksSubmit) {
  Workers workers(Options(2));
  std::atomic<int> done{0};
  for (int i = 0; i < 8; ++i) {
    workers.Run([&] {
      std::this_thread::sleep_for(milliseconds(20));
      workers.Run([&] {
        std::this_thread::sleep_for(milliseconds(20));
        done.fetch_add(1);
      });
      done.fetch_add(1);
    });
  }
  workers.Drain();
  EXPECT_EQ(done.load(), 16);
  EXPECT_EQ(workers.threads(), 0);
}

TEST(WorkersTest, RunNowStartsATaskAtOnce) {
  Workers workers(Options(0));
  std::promise<void> ran;
  ASSERT_TRUE(workers.RunNow([&ran] { ran.set_value(); }));
  EXPECT_EQ(ran.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
}

}  // namespace
}  // namespace oxbow::kafka::internal
