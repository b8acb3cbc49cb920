#include "oxbow/common/parallel.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace oxbow {

namespace {

// Threads that run queued tasks; they live as long as the process.
class Workers {
 public:
  explicit Workers(size_t threads) : threads_(threads) {
    for (size_t i = 0; i < threads; ++i) {
      std::thread([this] {
        pthread_setname_np(pthread_self(), "oxbow-worker");
        Run();
      }).detach();
    }
  }
  size_t threads() const { return threads_; }

  void Submit(std::function<void()> task) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

  static Workers& Get() {
    // Never destroyed: detached threads may still wait on it while the process exits.
    static Workers* workers = new Workers(std::max(2u, std::thread::hardware_concurrency()) - 1);
    return *workers;
  }

 private:
  void Run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty(); });
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  const size_t threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
};

// One ParallelFor's pieces: whoever takes the next index runs it.
struct Pieces {
  Pieces(size_t n, const std::function<void(size_t)>& fn) : n(n), fn(fn) {}
  const size_t n;
  const std::function<void(size_t)>& fn;  // valid until finished == n
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::condition_variable cv;
  size_t finished = 0;  // guarded by mu

  void RunSome() {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      fn(i);
      std::lock_guard lock(mu);
      if (++finished == n) cv.notify_all();
    }
  }
};

}  // namespace

void ParallelFor(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (n == 1) {
    fn(0);
    return;
  }
  Workers& workers = Workers::Get();
  auto pieces = std::make_shared<Pieces>(n, fn);
  const size_t helpers = std::min(n - 1, workers.threads());
  for (size_t i = 0; i < helpers; ++i) workers.Submit([pieces] { pieces->RunSome(); });
  pieces->RunSome();
  std::unique_lock lock(pieces->mu);
  pieces->cv.wait(lock, [&] { return pieces->finished == n; });
}

}  // namespace oxbow
