// The Kafka listener's worker threads: started on demand, so that a task never waits long behind
// busy ones (a Fetch long-polling, a JoinGroup waiting for its group), and ended when idle, so
// that idle connections cost no thread.
//
// Thread safety: every method may be called from any thread, also from a task.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace oxbow::kafka::internal {

struct WorkersOptions {
  // Threads are named so.
  std::string name = "worker";
  // Up to this many threads start as soon as a task finds no idle one.
  int eager_threads = 4;
  // Beyond that, when tasks have waited this long and no thread finished a task meanwhile (all
  // are blocked: long polls, group waits), up to eager_threads more start, every `patience`
  // while that lasts. Threads that do finish tasks drain a burst of short ones by themselves.
  std::chrono::milliseconds patience{2};
  // A thread idle this long ends.
  std::chrono::milliseconds idle_timeout{10'000};
};

class Workers {
 public:
  explicit Workers(WorkersOptions options);
  // Waits for every task queued and running (see Drain).
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  // Runs `task` on an idle thread or, after the rules above, on a new one. When the process
  // cannot start another thread the task waits for a busy one (a warning is logged), unless no
  // thread runs at all: then it runs here.
  void Run(std::function<void()> task);
  // Runs `task` only if an idle thread or a new one takes it at once; false (task not run)
  // otherwise. For tasks that hold their thread long (a TLS connection's whole life).
  [[nodiscard]] bool RunNow(std::function<void()> task);
  // Returns once no task is queued or running, tasks submitted meanwhile included, and every
  // thread has ended.
  void Drain();
  // Threads running tasks or idle now (the one that watches the queue not counted).
  int threads() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Task {
    std::function<void()> run;
    Clock::time_point queued;
  };

  // Starts a worker thread (mu_ held); false when the process cannot.
  bool StartThread();
  // A worker: runs tasks until idle for idle_timeout or drained.
  void Loop();
  // Gives a thread to each task that waited `patience` with none idle.
  void Watch();

  const WorkersOptions options_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable watch_cv_;
  std::condition_variable done_cv_;
  std::deque<Task> tasks_;
  int threads_ = 0;
  int idle_ = 0;
  int busy_ = 0;
  uint64_t completed_ = 0;  // tasks finished, ever
  bool draining_ = false;
  Clock::time_point retry_start_;  // the watcher starts no thread before (after a failure)
  std::thread watcher_;            // started when a task first waits
};

}  // namespace oxbow::kafka::internal
