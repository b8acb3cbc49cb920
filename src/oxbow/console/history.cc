#include <algorithm>

#include "oxbow/console/history_internal.h"

namespace oxbow::console::internal {

History::History(std::function<Sample()> read, std::chrono::milliseconds interval)
    : read_(std::move(read)),
      interval_(interval),
      capacity_(static_cast<size_t>(
          std::max<int64_t>(2, std::chrono::milliseconds(std::chrono::hours(1)) / interval))) {
  samples_.push_back(read_());
  thread_ = std::thread([this] { Run(); });
}

History::~History() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
}

std::vector<Sample> History::samples() const {
  std::lock_guard lock(mu_);
  return {samples_.begin(), samples_.end()};
}

void History::Run() {
  std::unique_lock lock(mu_);
  while (!stop_cv_.wait_for(lock, interval_, [this] { return stopping_; })) {
    lock.unlock();
    Sample sample = read_();
    lock.lock();
    samples_.push_back(std::move(sample));
    if (samples_.size() > capacity_) samples_.pop_front();
  }
}

Rates RatesOf(const std::vector<Sample>& samples) {
  Rates rates;
  for (size_t i = 1; i < samples.size(); ++i) {
    const metrics::Totals& a = samples[i - 1].totals;
    const metrics::Totals& b = samples[i].totals;
    const double seconds = std::max<double>(
        1e-3, static_cast<double>(samples[i].time_ms - samples[i - 1].time_ms) / 1000.0);
    auto per_second = [&](int64_t from, int64_t to) {
      return static_cast<double>(to - from) / seconds;
    };
    auto mean_ms = [](double from_s, double to_s, int64_t from_n, int64_t to_n) {
      return to_n > from_n ? (to_s - from_s) * 1000.0 / static_cast<double>(to_n - from_n) : 0.0;
    };
    rates.time_ms.push_back(samples[i].time_ms);
    rates.put_rows.push_back(per_second(a.put_rows, b.put_rows));
    rates.put_bytes.push_back(per_second(a.put_bytes, b.put_bytes));
    rates.fetch_rows.push_back(per_second(a.fetch_rows, b.fetch_rows));
    rates.fetch_bytes.push_back(per_second(a.fetch_bytes, b.fetch_bytes));
    rates.errors.push_back(per_second(a.errors, b.errors));
    rates.put_latency_ms.push_back(mean_ms(a.put_seconds, b.put_seconds, a.puts, b.puts));
    rates.fetch_latency_ms.push_back(
        mean_ms(a.fetch_seconds, b.fetch_seconds, a.fetches, b.fetches));
  }
  return rates;
}

}  // namespace oxbow::console::internal
