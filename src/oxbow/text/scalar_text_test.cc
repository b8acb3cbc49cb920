#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "oxbow/text/scalar_text_internal.h"

namespace oxbow::text::internal {
namespace {

using arrow::TimeUnit;

template <typename F>
std::string Render(F f) {
  std::string s;
  f(&s);
  return s;
}

TEST(ScalarTextTest, Doubles) {
  EXPECT_EQ(Render([](auto* s) { AppendDouble(0.1, s); }), "0.1");
  EXPECT_EQ(Render([](auto* s) { AppendDouble(3, s); }), "3.0");
  EXPECT_EQ(Render([](auto* s) { AppendDouble(-0.0, s); }), "-0.0");
  EXPECT_EQ(Render([](auto* s) { AppendDouble(1e300, s); }), "1e+300");
  EXPECT_EQ(Render([](auto* s) { AppendDouble(std::nan(""), s); }), "NaN");
  EXPECT_EQ(Render([](auto* s) { AppendDouble(-INFINITY, s); }), "-Infinity");
  EXPECT_EQ(Render([](auto* s) { AppendFloat(0.1f, s); }), "0.1");
  EXPECT_EQ(*ParseDouble("0.1"), 0.1);
  EXPECT_EQ(*ParseDouble("+2.5e3"), 2500.0);
  EXPECT_TRUE(std::isnan(*ParseDouble("NaN")));
  EXPECT_EQ(*ParseDouble("-Infinity"), -INFINITY);
  EXPECT_EQ(*ParseDouble("1e999"), INFINITY);
  EXPECT_FALSE(ParseDouble("1.5x").ok());
  EXPECT_FALSE(ParseDouble("").ok());
  EXPECT_FALSE(ParseDouble("-").ok());
}

TEST(ScalarTextTest, Integers) {
  EXPECT_EQ(*ParseInt64("-9223372036854775808"), std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(ParseInt64("9223372036854775808").ok());
  EXPECT_EQ(*ParseUInt64("18446744073709551615"), std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(ParseUInt64("-1").ok());
  EXPECT_FALSE(ParseInt64("1.0").ok());
  EXPECT_FALSE(ParseInt64("").ok());
}

TEST(ScalarTextTest, Decimals) {
  EXPECT_EQ(Render([](auto* s) { AppendDecimal(-12345, 2, s); }), "-123.45");
  EXPECT_EQ(Render([](auto* s) { AppendDecimal(5, 3, s); }), "0.005");
  EXPECT_EQ(Render([](auto* s) { AppendDecimal(-5, 1, s); }), "-0.5");
  EXPECT_EQ(Render([](auto* s) { AppendDecimal(0, 2, s); }), "0.00");
  EXPECT_EQ(Render([](auto* s) { AppendDecimal(42, 0, s); }), "42");
  EXPECT_EQ(Render([](auto* s) { AppendDecimal(42, -2, s); }), "4200");
  __int128 max38 = 0;
  for (int i = 0; i < 38; ++i) max38 = max38 * 10 + 9;
  EXPECT_EQ(Render([&](auto* s) { AppendDecimal(-max38, 10, s); }),
            "-9999999999999999999999999999.9999999999");
  EXPECT_TRUE(*ParseDecimal("-9999999999999999999999999999.9999999999", 38, 10) == -max38);
  EXPECT_TRUE(*ParseDecimal("-123.45", 5, 2) == -12345);
  EXPECT_TRUE(*ParseDecimal("1.5", 5, 2) == 150);
  EXPECT_TRUE(*ParseDecimal("1.50000", 5, 2) == 150);
  EXPECT_TRUE(*ParseDecimal("1.5e2", 5, 2) == 15000);
  EXPECT_TRUE(*ParseDecimal("4200", 4, -2) == 42);
  EXPECT_FALSE(ParseDecimal("1.555", 5, 2).ok());   // scale
  EXPECT_FALSE(ParseDecimal("1234.5", 5, 2).ok());  // precision
  EXPECT_FALSE(ParseDecimal("abc", 5, 2).ok());
  EXPECT_FALSE(ParseDecimal("1.2.3", 5, 2).ok());
  EXPECT_FALSE(ParseDecimal(std::string(100, '9'), 38, 0).ok());
}

TEST(ScalarTextTest, Dates) {
  EXPECT_EQ(Render([](auto* s) { AppendDate(0, s); }), "1970-01-01");
  EXPECT_EQ(Render([](auto* s) { AppendDate(-1, s); }), "1969-12-31");
  EXPECT_EQ(Render([](auto* s) { AppendDate(19782, s); }), "2024-02-29");
  EXPECT_EQ(Render([](auto* s) { AppendDate(-719529, s); }), "-0001-12-31");
  EXPECT_EQ(*ParseDate("2024-02-29"), 19782);
  EXPECT_EQ(*ParseDate("1969-12-31"), -1);
  EXPECT_FALSE(ParseDate("2023-02-29").ok());
  EXPECT_FALSE(ParseDate("2023-1-01").ok());
  EXPECT_FALSE(ParseDate("2023-01-01x").ok());
  for (int64_t d = -800000; d < 3000000; d += 997) {
    std::string s;
    AppendDate(d, &s);
    EXPECT_EQ(*ParseDate(s), d) << s;
  }
}

TEST(ScalarTextTest, Timestamps) {
  EXPECT_EQ(Render([](auto* s) { AppendTimestamp(0, TimeUnit::kSecond, "", s); }),
            "1970-01-01T00:00:00");
  EXPECT_EQ(Render([](auto* s) { AppendTimestamp(-1, TimeUnit::kMilli, "UTC", s); }),
            "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(Render([](auto* s) { AppendTimestamp(1500, TimeUnit::kMicro, "", s); }),
            "1970-01-01T00:00:00.001500");
  EXPECT_EQ(Render([](auto* s) { AppendTimestamp(1, TimeUnit::kNano, "+05:30", s); }),
            "1970-01-01T05:30:00.000000001+05:30");
  EXPECT_EQ(Render([](auto* s) { AppendTimestamp(0, TimeUnit::kSecond, "Europe/Paris", s); }),
            "1970-01-01T00:00:00Z");
  EXPECT_EQ(*ParseTimestamp("1970-01-01T05:30:00.000000001+05:30", TimeUnit::kNano), 1);
  EXPECT_EQ(*ParseTimestamp("1969-12-31T23:59:59.999Z", TimeUnit::kMilli), -1);
  EXPECT_EQ(*ParseTimestamp("1970-01-02", TimeUnit::kSecond), 86400);
  EXPECT_EQ(*ParseTimestamp("1970-01-01 00:01", TimeUnit::kSecond), 60);
  EXPECT_EQ(*ParseTimestamp("1970-01-01T00:00:01.5", TimeUnit::kMicro), 1500000);
  EXPECT_EQ(*ParseTimestamp("1970-01-01T00:00:01.500000000", TimeUnit::kMilli), 1500);
  EXPECT_FALSE(ParseTimestamp("1970-01-01T00:00:01.5001", TimeUnit::kMilli).ok());
  EXPECT_FALSE(ParseTimestamp("1970-01-01T25:00:00", TimeUnit::kSecond).ok());
  EXPECT_FALSE(ParseTimestamp("1970-01-01T00:00:00+5", TimeUnit::kSecond).ok());
  EXPECT_FALSE(ParseTimestamp("3000-01-01T00:00:00", TimeUnit::kNano).ok());  // overflow
  for (auto unit : {TimeUnit::kSecond, TimeUnit::kMilli, TimeUnit::kMicro, TimeUnit::kNano}) {
    for (int64_t v :
         {int64_t{0}, int64_t{-1}, int64_t{1700000000123456789} / 1000, int64_t{-86400123}}) {
      for (std::string tz : {"", "UTC", "-03:00"}) {
        std::string s;
        AppendTimestamp(v, unit, tz, &s);
        EXPECT_EQ(*ParseTimestamp(s, unit), v) << s;
      }
    }
  }
}

TEST(ScalarTextTest, Base64) {
  EXPECT_EQ(Render([](auto* s) { AppendBase64("", s); }), "");
  EXPECT_EQ(Render([](auto* s) { AppendBase64("f", s); }), "Zg==");
  EXPECT_EQ(Render([](auto* s) { AppendBase64("fo", s); }), "Zm8=");
  EXPECT_EQ(Render([](auto* s) { AppendBase64("foobar", s); }), "Zm9vYmFy");
  EXPECT_EQ(*DecodeBase64("Zm9vYmE="), "fooba");
  EXPECT_EQ(*DecodeBase64("Zm9vYmE"), "fooba");
  EXPECT_FALSE(DecodeBase64("Zm9v!mE=").ok());
  EXPECT_FALSE(DecodeBase64("Z").ok());
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  std::string enc;
  AppendBase64(all, &enc);
  EXPECT_EQ(*DecodeBase64(enc), all);
}

TEST(ScalarTextTest, JsonStrings) {
  EXPECT_EQ(Render([](auto* s) { AppendJsonString("a\"b\\c\n\x01", s); }),
            "\"a\\\"b\\\\c\\n\\u0001\"");
  EXPECT_EQ(Render([](auto* s) { AppendJsonString("h\xC3\xA9", s); }), "\"h\xC3\xA9\"");
  EXPECT_EQ(Render([](auto* s) { AppendJsonString("\xFF", s); }), "\"\xEF\xBF\xBD\"");
  EXPECT_TRUE(IsValidUtf8("h\xC3\xA9 \xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xC3"));
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));  // a surrogate
  EXPECT_EQ(CodePointCount("h\xC3\xA9"), 2);
}

}  // namespace
}  // namespace oxbow::text::internal
