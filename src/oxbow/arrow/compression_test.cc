#include "oxbow/arrow/compression.h"

#include <gtest/gtest.h>

#include <string>

namespace oxbow::arrow {
namespace {

std::string SampleBytes() {
  std::string s;
  for (int i = 0; i < 10000; ++i) s += "value " + std::to_string(i % 97) + ";";
  return s;
}

class CodecTest : public ::testing::TestWithParam<Codec> {};

TEST_P(CodecTest, RoundTrip) {
  const std::string input = SampleBytes();
  auto compressed = Compress(GetParam(), input, 1);
  ASSERT_TRUE(compressed.ok()) << compressed.status().ToString();
  if (GetParam() != Codec::kNone) {
    EXPECT_LT((*compressed)->size(), input.size() / 4);
  }
  auto out = Decompress(GetParam(), (*compressed)->view(), static_cast<int64_t>(input.size()));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)->view(), input);
}

TEST_P(CodecTest, WrongDeclaredSizeFails) {
  const std::string input = SampleBytes();
  auto compressed = Compress(GetParam(), input, 1).ValueOrDie();
  const auto n = static_cast<int64_t>(input.size());
  EXPECT_FALSE(Decompress(GetParam(), compressed->view(), n - 1).ok());
  EXPECT_FALSE(Decompress(GetParam(), compressed->view(), n + 1).ok());
}

TEST_P(CodecTest, GarbageFailsCleanly) {
  if (GetParam() == Codec::kNone) GTEST_SKIP();
  const std::string garbage(100, 'x');
  EXPECT_FALSE(Decompress(GetParam(), garbage, 1000).ok());
  auto compressed = Compress(GetParam(), SampleBytes(), 1).ValueOrDie();
  std::string truncated(compressed->view().substr(0, compressed->size() / 2));
  EXPECT_FALSE(Decompress(GetParam(), truncated, static_cast<int64_t>(SampleBytes().size())).ok());
}

INSTANTIATE_TEST_SUITE_P(All, CodecTest,
                         ::testing::Values(Codec::kNone, Codec::kLz4Frame, Codec::kZstd));

TEST(CodecNameTest, Parse) {
  EXPECT_EQ(ParseCodec("lz4").ValueOrDie(), Codec::kLz4Frame);
  EXPECT_EQ(ParseCodec("zstd").ValueOrDie(), Codec::kZstd);
  EXPECT_EQ(ParseCodec("none").ValueOrDie(), Codec::kNone);
  EXPECT_FALSE(ParseCodec("gzip").ok());
  EXPECT_EQ(CodecName(Codec::kZstd), "zstd");
}

}  // namespace
}  // namespace oxbow::arrow
