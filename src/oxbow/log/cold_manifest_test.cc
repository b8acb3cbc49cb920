#include <gtest/gtest.h>

#include "oxbow/common/buffer.h"
#include "oxbow/log/cold_manifest_internal.h"

namespace oxbow::log::internal {
namespace {

std::shared_ptr<Buffer> BufferOf(const std::string& s) {
  auto b = MutableBuffer::Allocate(static_cast<int64_t>(s.size())).ValueOrDie();
  std::memcpy(b->mutable_data(), s.data(), s.size());
  return b;
}

std::vector<ColdSegment> TwoSegments() {
  return {{0, 100, 4096, 64, 24, 1700000000000, 0xDEADBEEF},
          {100, 250, 8192, 128, 36, 1700000005000, 0x12345678}};
}

TEST(ColdManifest, RoundTrips) {
  for (const auto& segments : {std::vector<ColdSegment>{}, TwoSegments()}) {
    auto decoded = DecodeColdManifest(*BufferOf(EncodeColdManifest(segments)));
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, segments);
  }
}

TEST(ColdManifest, LayoutIsFixed) {
  std::string bytes = EncodeColdManifest(TwoSegments());
  ASSERT_EQ(bytes.size(), 16u + 2 * 56 + 4);
  EXPECT_EQ(bytes.substr(0, 4), "OXCM");
  EXPECT_EQ(static_cast<uint8_t>(bytes[4]), 1);  // version
  EXPECT_EQ(static_cast<uint8_t>(bytes[8]), 2);  // count
}

TEST(ColdManifest, RefusesEveryFlippedBitAndEveryTruncation) {
  const std::string good = EncodeColdManifest(TwoSegments());
  for (size_t i = 0; i < good.size() * 8; ++i) {
    std::string bad = good;
    bad[i / 8] = static_cast<char>(bad[i / 8] ^ (1 << (i % 8)));
    auto decoded = DecodeColdManifest(*BufferOf(bad));
    EXPECT_TRUE(decoded.status().IsCorruption()) << "bit " << i;
  }
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_TRUE(DecodeColdManifest(*BufferOf(good.substr(0, n))).status().IsCorruption()) << n;
  }
}

TEST(ColdManifest, RefusesGapsBetweenSegments) {
  auto segments = TwoSegments();
  segments[1].base_offset = 101;
  auto decoded = DecodeColdManifest(*BufferOf(EncodeColdManifest(segments)));
  ASSERT_TRUE(decoded.status().IsCorruption());
  EXPECT_NE(decoded.status().message().find("entry 1"), std::string::npos)
      << decoded.status().message();
}

}  // namespace
}  // namespace oxbow::log::internal
