#include "oxbow/common/buffer_pool.h"

#include <gtest/gtest.h>

namespace oxbow {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

TEST(BufferPoolTest, TakeIsAlignedWithZeroedPadding) {
  BufferPool pool(16 * kMiB, kMiB);
  for (int64_t size : {int64_t{10}, 3 * kMiB + 5}) {
    auto buffer = pool.Take(size).ValueOrDie();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % kBufferAlignment, 0u);
    EXPECT_EQ(buffer->size(), size);
    for (int64_t i = size; i < (size + 63) / 64 * 64; ++i) EXPECT_EQ(buffer->data()[i], 0) << i;
  }
  EXPECT_TRUE(pool.Take(-1).status().IsInvalid());
}

TEST(BufferPoolTest, ReleasedBufferIsReusedOnlyOnceItsLastSliceIsGone) {
  BufferPool pool(16 * kMiB, kMiB);
  auto first = pool.Take(8 * kMiB).ValueOrDie();
  const uint8_t* memory = first->data();
  std::memset(first->mutable_data(), 0xAB, 8 * kMiB);
  std::shared_ptr<Buffer> slice = Buffer::Slice(first, kMiB, 10);
  first.reset();
  EXPECT_EQ(pool.figures().idle_bytes, 0);  // the slice still holds it
  auto other = pool.Take(8 * kMiB).ValueOrDie();
  EXPECT_NE(other->data(), memory);
  EXPECT_EQ(slice->data()[0], 0xAB);
  slice.reset();
  EXPECT_EQ(pool.figures().idle_bytes, 8 * kMiB);
  // A smaller request (at least half the kept capacity) gets the kept memory.
  auto again = pool.Take(7 * kMiB + 3).ValueOrDie();
  EXPECT_EQ(again->data(), memory);
  EXPECT_EQ(again->size(), 7 * kMiB + 3);
  for (int64_t i = again->size(); i < 7 * kMiB + 64; ++i) ASSERT_EQ(again->data()[i], 0) << i;
  const BufferPool::Figures figures = pool.figures();
  EXPECT_EQ(figures.reused, 1);
  EXPECT_EQ(figures.allocated, 2);
  EXPECT_EQ(figures.idle_bytes, 0);
}

TEST(BufferPoolTest, KeepsAtMostTheBoundAndNoSmallOrMuchLargerBuffers) {
  BufferPool pool(10 * kMiB, kMiB);
  {
    auto a = pool.Take(4 * kMiB).ValueOrDie();
    auto b = pool.Take(4 * kMiB).ValueOrDie();
    auto c = pool.Take(4 * kMiB).ValueOrDie();
    auto small = pool.Take(kMiB - 1).ValueOrDie();  // below min_pooled_bytes: freed
  }
  EXPECT_EQ(pool.figures().idle_bytes, 8 * kMiB);  // the third did not fit under 10 MiB
  // 4 MiB kept buffers are more than twice a 1 MiB request: it allocates.
  auto small = pool.Take(kMiB).ValueOrDie();
  EXPECT_EQ(small->capacity(), kMiB);
  EXPECT_EQ(pool.figures().reused, 0);
  EXPECT_EQ(pool.figures().idle_bytes, 8 * kMiB);
}

TEST(BufferPoolTest, TruncateZeroesThePaddingAfterTheNewSize) {
  BufferPool pool(16 * kMiB, kMiB);
  auto buffer = pool.Take(2 * kMiB).ValueOrDie();
  std::memset(buffer->mutable_data(), 0xCD, 2 * kMiB);
  buffer->Truncate(100);
  EXPECT_EQ(buffer->size(), 100);
  for (int i = 100; i < 128; ++i) EXPECT_EQ(buffer->data()[i], 0) << i;
  buffer->Truncate(200);  // never grows
  EXPECT_EQ(buffer->size(), 100);
}

TEST(BufferPoolTest, BufferMayOutliveItsPool) {
  std::shared_ptr<PooledBuffer> buffer;
  {
    BufferPool pool(16 * kMiB, kMiB);
    buffer = pool.Take(2 * kMiB).ValueOrDie();
    auto kept = pool.Take(2 * kMiB).ValueOrDie();
  }
  buffer->mutable_data()[0] = 1;
  buffer.reset();  // returned to the pool's memory, freed with it (ASan checks)
}

}  // namespace
}  // namespace oxbow
