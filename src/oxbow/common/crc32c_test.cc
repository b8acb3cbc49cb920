#include "oxbow/common/crc32c.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

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

TEST(Crc32cTest, BlockValuesEqualValueOfEachBlock) {
  std::string data(5 * 4096 + 123, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + (i >> 7));
  for (size_t n :
       {size_t{0}, size_t{1}, size_t{4096}, size_t{3 * 4096}, size_t{4 * 4096 + 5}, data.size()}) {
    std::vector<uint32_t> blocks((n + 4095) / 4096, 0);
    crc32c::BlockValues(data.data(), n, 4096, blocks.data());
    for (size_t b = 0; b < blocks.size(); ++b) {
      size_t length = std::min<size_t>(4096, n - b * 4096);
      EXPECT_EQ(blocks[b], crc32c::Value(data.data() + b * 4096, length)) << n << " block " << b;
    }
  }
}

}  // namespace
}  // namespace oxbow
