#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <system_error>

#include "oxbow/kafka/workers_internal.h"

namespace oxbow::kafka::internal {
namespace {

void NameThread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace

Workers::Workers(WorkersOptions options) : options_(std::move(options)) {}

Workers::~Workers() { Drain(); }

void Workers::Run(std::function<void()> task) {
  std::unique_lock lock(mu_);
  const bool idle_one = static_cast<int>(tasks_.size()) < idle_;
  if (!idle_one && threads_ < options_.eager_threads && !StartThread() && threads_ == 0) {
    lock.unlock();
    task();  // no thread at all, and none can be started
    return;
  }
  tasks_.push_back({std::move(task), Clock::now()});
  if (idle_one) {
    work_cv_.notify_one();
  } else if (static_cast<int>(tasks_.size()) > idle_) {
    if (!watcher_.joinable()) {
      try {
        watcher_ = std::thread([this] { Watch(); });
      } catch (const std::system_error& e) {
        spdlog::warn("kafka: cannot start the worker watcher: {}", e.what());
      }
    }
    watch_cv_.notify_one();
  }
}

bool Workers::RunNow(std::function<void()> task) {
  std::lock_guard lock(mu_);
  if (static_cast<int>(tasks_.size()) >= idle_ && !StartThread()) return false;
  tasks_.push_back({std::move(task), Clock::now()});
  work_cv_.notify_one();
  return true;
}

bool Workers::StartThread() {
  try {
    std::thread([this] { Loop(); }).detach();
  } catch (const std::system_error& e) {
    spdlog::warn("kafka: cannot start another worker thread ({} run): {}", threads_, e.what());
    return false;
  }
  ++threads_;
  ++idle_;  // counted idle until it takes a task, so the next task does not start another
  return true;
}

void Workers::Loop() {
  NameThread(options_.name);
  std::unique_lock lock(mu_);
  while (true) {
    if (tasks_.empty()) {
      if (draining_) break;
      const bool woken = work_cv_.wait_for(lock, options_.idle_timeout,
                                           [this] { return !tasks_.empty() || draining_; });
      if (!woken) break;
      continue;
    }
    std::function<void()> task = std::move(tasks_.front().run);
    tasks_.pop_front();
    --idle_;
    ++busy_;
    lock.unlock();
    task();
    task = nullptr;  // what it holds goes before the pool may end
    lock.lock();
    --busy_;
    ++idle_;
    ++completed_;
    if (busy_ == 0 && tasks_.empty()) done_cv_.notify_all();
  }
  --idle_;
  --threads_;
  done_cv_.notify_all();
}

void Workers::Watch() {
  NameThread(options_.name + "-watch");
  std::unique_lock lock(mu_);
  uint64_t completed_before = completed_;
  while (!draining_) {
    if (static_cast<int>(tasks_.size()) <= idle_) {
      watch_cv_.wait(lock);
      completed_before = completed_;
      continue;
    }
    watch_cv_.wait_for(lock, options_.patience);
    // Threads that finish tasks drain the queue; more of them would only share the cores.
    const bool stuck = completed_ == completed_before;
    completed_before = completed_;
    if (!stuck || Clock::now() < retry_start_) continue;
    const Clock::time_point overdue = Clock::now() - options_.patience;
    int waited = 0;
    for (const Task& task : tasks_) {
      if (task.queued > overdue) break;
      ++waited;
    }
    const int wanted = std::min(waited - idle_, std::max(options_.eager_threads, 1));
    for (int i = 0; i < wanted; ++i) {
      if (!StartThread()) {
        retry_start_ = Clock::now() + std::chrono::seconds(1);  // out of threads: no log flood
        break;
      }
    }
    if (wanted > 0) work_cv_.notify_all();
  }
}

void Workers::Drain() {
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [this] { return tasks_.empty() && busy_ == 0; });
  draining_ = true;
  work_cv_.notify_all();
  watch_cv_.notify_all();
  done_cv_.wait(lock, [this] { return threads_ == 0; });
  std::thread watcher = std::move(watcher_);
  lock.unlock();
  if (watcher.joinable()) watcher.join();
  lock.lock();
  draining_ = false;
}

int Workers::threads() const {
  std::lock_guard lock(mu_);
  return threads_;
}

}  // namespace oxbow::kafka::internal
