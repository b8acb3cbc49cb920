#include "oxbow/common/buffer.h"

#include <gtest/gtest.h>

#include "oxbow/common/bit_util.h"

namespace oxbow {
namespace {

TEST(BufferTest, AllocateIsAlignedAndPadded) {
  auto buf = MutableBuffer::Allocate(10).ValueOrDie();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buf->data()) % kBufferAlignment, 0u);
  EXPECT_EQ(buf->size(), 10);
  EXPECT_EQ(buf->capacity(), 64);
  for (int i = 10; i < 64; ++i) EXPECT_EQ(buf->data()[i], 0);
}

TEST(BufferTest, SliceSharesMemory) {
  auto parent = Buffer::FromString("hello world");
  auto slice = Buffer::Slice(parent, 6, 5);
  EXPECT_EQ(slice->view(), "world");
  EXPECT_EQ(slice->data(), parent->data() + 6);
  parent.reset();
  EXPECT_EQ(slice->view(), "world");  // the slice keeps its parent alive
}

TEST(BufferBuilderTest, GrowsAndFinishes) {
  BufferBuilder b;
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(b.Append(&i, sizeof(i)).ok());
  auto buf = b.Finish().ValueOrDie();
  ASSERT_EQ(buf->size(), 4000);
  const auto* ints = reinterpret_cast<const int*>(buf->data());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(ints[i], i);
}

TEST(BufferTest, ResizeKeepsContentAndZeroesPadding) {
  auto buf = MutableBuffer::Allocate(3).ValueOrDie();
  std::memcpy(buf->mutable_data(), "abc", 3);
  ASSERT_TRUE(buf->Resize(100).ok());
  EXPECT_EQ(buf->size(), 100);
  EXPECT_EQ(buf->capacity(), 128);
  EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(buf->data()), 3), "abc");
  for (int i = 100; i < 128; ++i) EXPECT_EQ(buf->data()[i], 0) << i;
}

TEST(BufferBuilderTest, FinishZeroesThePaddingAfterTheContent) {
  BufferBuilder b;
  ASSERT_TRUE(b.Reserve(1000).ok());
  std::memset(b.mutable_data(), 0xAB, 1000);  // stale bytes in the spare capacity
  b.UnsafeAppend("xyz", 3);
  auto buf = b.Finish().ValueOrDie();
  ASSERT_EQ(buf->size(), 3);
  EXPECT_EQ(buf->view(), "xyz");
  for (int i = 3; i < kBufferAlignment; ++i) EXPECT_EQ(buf->data()[i], 0) << i;
}

TEST(BitUtilTest, CountAndCopyAtOddOffsets) {
  uint8_t bits[4] = {0b10110101, 0xFF, 0x00, 0b00000001};
  EXPECT_EQ(bit_util::CountSetBits(bits, 0, 32), 5 + 8 + 0 + 1);
  EXPECT_EQ(bit_util::CountSetBits(bits, 3, 10), 3 + 5);
  uint8_t out[2] = {};
  bit_util::CopyBitmap(bits, 2, 9, out);
  EXPECT_EQ(out[0], 0b11101101);
  EXPECT_EQ(out[1], 0b1);
}

}  // namespace
}  // namespace oxbow
