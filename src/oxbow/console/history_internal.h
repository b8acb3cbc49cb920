// What the console's charts draw: the server's totals and each lake table's lag, sampled on a
// thread of its own at a fixed interval into rings holding the last hour.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "oxbow/metrics/metrics.h"

namespace oxbow::console::internal {

// The lake's lag of one table at one moment.
struct LakeLag {
  int64_t rows = 0;
  int64_t ms = 0;
};

struct Sample {
  int64_t time_ms = 0;  // wall time, ms since the epoch
  metrics::Totals totals;
  std::map<std::string, LakeLag> lake_lag;  // lake-enabled tables
};

class History {
 public:
  // Calls `read` now and every `interval` after, keeping the samples of the last hour (at least
  // two).
  History(std::function<Sample()> read, std::chrono::milliseconds interval);
  ~History();  // stops sampling
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  std::chrono::milliseconds interval() const { return interval_; }
  // Oldest first.
  std::vector<Sample> samples() const;

 private:
  void Run();

  const std::function<Sample()> read_;
  const std::chrono::milliseconds interval_;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;       // guarded by mu_
  std::deque<Sample> samples_;  // guarded by mu_
  std::thread thread_;
};

// Per second between consecutive samples: puts' rows and bytes, reads' rows and bytes, errors;
// and the mean put and read latency (ms) of each interval (0 when there were none).
struct Rates {
  std::vector<int64_t> time_ms;  // the end of each interval
  std::vector<double> put_rows, put_bytes, fetch_rows, fetch_bytes, errors;
  std::vector<double> put_latency_ms, fetch_latency_ms;
};
Rates RatesOf(const std::vector<Sample>& samples);

}  // namespace oxbow::console::internal
