// BufferPool: recycles large buffers, so a steady stream of same-sized reads (the cold log's
// ranged GETs) reuses memory that is already mapped instead of having the kernel map, fault in
// and zero fresh pages for every read.
//
// Thread safety: every method may be called from any thread; a buffer may be released (its last
// reference dropped) on any thread, also after its pool is gone.
#pragma once

#include <cstdint>
#include <memory>

#include "oxbow/common/buffer.h"

namespace oxbow {

// A buffer from a BufferPool, writable until shared; its memory goes back to the pool when it
// is destroyed, i.e. when its last slice is.
class PooledBuffer : public Buffer {
 public:
  struct Pool;  // the kept memory, shared by a BufferPool and its buffers
  PooledBuffer(uint8_t* data, int64_t size, int64_t capacity, std::shared_ptr<Pool> pool);
  ~PooledBuffer() override;

  uint8_t* mutable_data() { return const_cast<uint8_t*>(data_); }
  int64_t capacity() const { return capacity_; }
  // Shrinks the visible size (never grows it) and zeroes the padding after it.
  void Truncate(int64_t size);

 private:
  const int64_t capacity_;
  const std::shared_ptr<Pool> pool_;  // null: plain memory, freed
};

class BufferPool {
 public:
  struct Figures {
    int64_t idle_bytes = 0;  // released buffers kept for reuse
    int64_t reused = 0;      // Takes served by a kept buffer
    int64_t allocated = 0;   // Takes of at least min_pooled_bytes that allocated
  };

  // Keeps at most `max_idle_bytes` of released buffers; requests below `min_pooled_bytes` are
  // plain allocations, freed when released.
  BufferPool(int64_t max_idle_bytes, int64_t min_pooled_bytes);
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of `size` bytes, 64-byte aligned, with zeroed padding up to the next multiple of
  // 64; its bytes before `size` are unspecified (a reused buffer keeps old ones). A kept buffer
  // of at least `size` and at most twice `size` bytes is reused (the smallest such); otherwise
  // the capacity is `size` rounded up to a MiB.
  Result<std::shared_ptr<PooledBuffer>> Take(int64_t size);

  Figures figures() const;

 private:
  const int64_t min_pooled_bytes_;
  const std::shared_ptr<PooledBuffer::Pool> pool_;
};

}  // namespace oxbow
