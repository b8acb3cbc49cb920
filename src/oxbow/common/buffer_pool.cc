#include "oxbow/common/buffer_pool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "oxbow/common/bit_util.h"

namespace oxbow {

namespace {

constexpr int64_t kPooledCapacityStep = int64_t{1} << 20;

void ZeroPadding(uint8_t* data, int64_t size, int64_t capacity) {
  const int64_t padded = std::min(capacity, bit_util::RoundUp(size, kBufferAlignment));
  if (padded > size) std::memset(data + size, 0, static_cast<size_t>(padded - size));
}

}  // namespace

struct PooledBuffer::Pool {
  explicit Pool(int64_t max_idle_bytes) : max_idle_bytes(max_idle_bytes) {}
  ~Pool() {
    for (const auto& [capacity, data] : idle) std::free(data);
  }

  // Keeps `data` if it fits under the bound, else frees it.
  void Release(uint8_t* data, int64_t capacity) {
    {
      std::lock_guard lock(mu);
      if (figures.idle_bytes + capacity <= max_idle_bytes) {
        idle.emplace(capacity, data);
        figures.idle_bytes += capacity;
        return;
      }
    }
    std::free(data);
  }

  const int64_t max_idle_bytes;
  std::mutex mu;
  std::multimap<int64_t, uint8_t*> idle;  // by capacity
  BufferPool::Figures figures;
};

PooledBuffer::PooledBuffer(uint8_t* data, int64_t size, int64_t capacity,
                           std::shared_ptr<Pool> pool)
    : Buffer(data, size, nullptr), capacity_(capacity), pool_(std::move(pool)) {}

PooledBuffer::~PooledBuffer() {
  auto* data = const_cast<uint8_t*>(data_);
  if (pool_) {
    pool_->Release(data, capacity_);
  } else {
    std::free(data);
  }
}

void PooledBuffer::Truncate(int64_t size) {
  if (size < 0 || size >= size_) return;
  size_ = size;
  ZeroPadding(mutable_data(), size_, capacity_);
}

BufferPool::BufferPool(int64_t max_idle_bytes, int64_t min_pooled_bytes)
    : min_pooled_bytes_(min_pooled_bytes),
      pool_(std::make_shared<PooledBuffer::Pool>(max_idle_bytes)) {}

Result<std::shared_ptr<PooledBuffer>> BufferPool::Take(int64_t size) {
  if (size < 0) return Status::Invalid("negative buffer size " + std::to_string(size));
  const bool pooled = size >= min_pooled_bytes_;
  const int64_t padded = bit_util::RoundUp(size > 0 ? size : 1, kBufferAlignment);
  uint8_t* data = nullptr;
  int64_t capacity = 0;
  if (pooled) {
    std::lock_guard lock(pool_->mu);
    auto it = pool_->idle.lower_bound(padded);
    if (it != pool_->idle.end() && it->first <= 2 * padded) {
      capacity = it->first;
      data = it->second;
      pool_->idle.erase(it);
      pool_->figures.idle_bytes -= capacity;
      ++pool_->figures.reused;
    } else {
      ++pool_->figures.allocated;
    }
  }
  if (data == nullptr) {
    capacity = pooled ? bit_util::RoundUp(padded, kPooledCapacityStep) : padded;
    data =
        static_cast<uint8_t*>(std::aligned_alloc(kBufferAlignment, static_cast<size_t>(capacity)));
    if (data == nullptr) {
      return Status::ResourceExhausted("cannot allocate " + std::to_string(capacity) + " bytes");
    }
  }
  ZeroPadding(data, size, capacity);
  return std::make_shared<PooledBuffer>(data, size, capacity, pooled ? pool_ : nullptr);
}

BufferPool::Figures BufferPool::figures() const {
  std::lock_guard lock(pool_->mu);
  return pool_->figures;
}

}  // namespace oxbow
