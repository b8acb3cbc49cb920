// std::mutex with clang's thread-safety annotations (libstdc++'s carries none), its scoped lock
// and a condition variable over it: members marked OXBOW_GUARDED_BY(mu) are checked by the clang
// build.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "oxbow/common/thread_annotations.h"

namespace oxbow {

class OXBOW_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() OXBOW_ACQUIRE() { mu_.lock(); }
  void Unlock() OXBOW_RELEASE() { mu_.unlock(); }
  bool TryLock() OXBOW_TRY_ACQUIRE(true) { return mu_.try_lock(); }

  // For std::condition_variable_any (CondVar) only.
  void lock() OXBOW_ACQUIRE() { mu_.lock(); }
  void unlock() OXBOW_RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

// Holds `mu` from construction to destruction, or in between from Lock() to Unlock().
class OXBOW_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) OXBOW_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() OXBOW_RELEASE() {
    if (held_) mu_.Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() OXBOW_RELEASE() {
    mu_.Unlock();
    held_ = false;
  }
  void Lock() OXBOW_ACQUIRE() {
    mu_.Lock();
    held_ = true;
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

// Holds `*mu` for its scope when `mu` is not null (a lock the analysis counts as held either way:
// callers touch what it guards only when `mu` is not null).
class OXBOW_SCOPED_CAPABILITY OptionalMutexLock {
 public:
  explicit OptionalMutexLock(Mutex* mu) OXBOW_ACQUIRE(mu) : mu_(mu) {
    if (mu_) mu_->Lock();
  }
  ~OptionalMutexLock() OXBOW_RELEASE() { Unlock(); }
  OptionalMutexLock(const OptionalMutexLock&) = delete;
  OptionalMutexLock& operator=(const OptionalMutexLock&) = delete;

  // Lets go before the scope ends.
  void Unlock() OXBOW_RELEASE() {
    if (mu_) mu_->Unlock();
    mu_ = nullptr;
  }

 private:
  Mutex* mu_;
};

// Waits release `mu` while they sleep and hold it again when they return; callers check their
// condition in a loop around them (wakeups may be spurious).
class CondVar {
 public:
  void Wait(Mutex& mu) OXBOW_REQUIRES(mu) { cv_.wait(mu); }
  // False when `timeout` passed without a notification.
  template <typename Rep, typename Period>
  bool WaitFor(Mutex& mu, std::chrono::duration<Rep, Period> timeout) OXBOW_REQUIRES(mu) {
    return cv_.wait_for(mu, timeout) == std::cv_status::no_timeout;
  }
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable_any cv_;
};

}  // namespace oxbow
