#include "oxbow/common/crc32c.h"

#include <gtest/gtest.h>

#include <string>

namespace oxbow {
namespace {

TEST(Crc32cTest, KnownVectors) {
  // RFC 3720 B.4 test vectors.
  std::string zeros(32, '\0');
  EXPECT_EQ(crc32c::Value(zeros.data(), zeros.size()), 0x8A9136AAu);
  std::string ones(32, '\xFF');
  EXPECT_EQ(crc32c::Value(ones.data(), ones.size()), 0x62A8AB43u);
  EXPECT_EQ(crc32c::Value("123456789", 9), 0xE3069283u);
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  std::string s = "the quick brown fox jumps over the lazy dog";
  uint32_t whole = crc32c::Value(s.data(), s.size());
  uint32_t part = crc32c::Value(s.data(), 10);
  EXPECT_EQ(crc32c::Extend(part, s.data() + 10, s.size() - 10), whole);
}

}  // namespace
}  // namespace oxbow
