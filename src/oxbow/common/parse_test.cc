#include "oxbow/common/parse.h"

#include <gtest/gtest.h>

namespace oxbow {
namespace {

TEST(ParseTest, Int64AcceptsWholeDecimalIntegers) {
  EXPECT_EQ(*ParseInt64("0"), 0);
  EXPECT_EQ(*ParseInt64("42"), 42);
  EXPECT_EQ(*ParseInt64("-17"), -17);
  EXPECT_EQ(*ParseInt64("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(*ParseInt64("-9223372036854775808"), INT64_MIN);
}

TEST(ParseTest, Int64RefusesAnythingElseWithAClearMessage) {
  for (const char* bad : {"", " 1", "1 ", "+1", "abc", "12abc", "1.5", "0x10", "-"}) {
    auto parsed = ParseInt64(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_TRUE(parsed.status().IsInvalid());
    EXPECT_EQ(parsed.status().message(), Quote(bad) + " is not an integer");
  }
  EXPECT_EQ(ParseInt64("9223372036854775808").status().message(),
            "'9223372036854775808' is out of range for int64");
}

TEST(ParseTest, Int32Range) {
  EXPECT_EQ(*ParseInt32("-2147483648"), INT32_MIN);
  EXPECT_EQ(ParseInt32("2147483648").status().message(), "'2147483648' is out of range for int32");
  EXPECT_EQ(ParseInt32("x").status().message(), "'x' is not an integer");
}

TEST(ParseTest, DurationsTakeAUnit) {
  EXPECT_EQ(ParseDurationMs("5000").ValueOrDie(), 5000);
  EXPECT_EQ(ParseDurationMs("250ms").ValueOrDie(), 250);
  EXPECT_EQ(ParseDurationMs("90s").ValueOrDie(), 90'000);
  EXPECT_EQ(ParseDurationMs("10m").ValueOrDie(), 600'000);
  EXPECT_EQ(ParseDurationMs("10min").ValueOrDie(), 600'000);
  EXPECT_EQ(ParseDurationMs("1h").ValueOrDie(), 3'600'000);
  EXPECT_EQ(ParseDurationMs("2d").ValueOrDie(), 172'800'000);
  for (const char* bad : {"", "m", "-1s", "1.5h", "10 m", "1y", "99999999999999999d"}) {
    auto parsed = ParseDurationMs(bad);
    ASSERT_TRUE(parsed.status().IsInvalid()) << bad;
    EXPECT_NE(parsed.status().message().find("not a duration"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace oxbow
