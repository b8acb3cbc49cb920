#include "oxbow/common/status.h"

#include <gtest/gtest.h>

namespace oxbow {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::Invalid("odd: " + std::to_string(x));
  return x / 2;
}

Status Quarter(int x, int* out) {
  ASSIGN_OR_RAISE(int half, Half(x));
  ASSIGN_OR_RAISE(*out, Half(half));
  return Status::OK();
}

TEST(StatusTest, OkAndErrors) {
  EXPECT_TRUE(Status::OK().ok());
  EXPECT_EQ(Status::OK().ToString(), "OK");
  Status st = Status::NotFound("table ns.t");
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(st.IsNotFound());
  EXPECT_EQ(st.ToString(), "NotFound: table ns.t");
  EXPECT_EQ(st.WithContext("lookup").message(), "lookup: table ns.t");
}

TEST(StatusTest, MacrosPropagate) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  Status st = Quarter(6, &out);
  EXPECT_TRUE(st.IsInvalid());
  EXPECT_EQ(st.message(), "odd: 3");
}

TEST(StatusTest, QuoteKeepsShortTextWhole) {
  EXPECT_EQ(Quote("ns.t"), "'ns.t'");
  EXPECT_EQ(Quote(""), "''");
  EXPECT_EQ(Quote(std::string(kMaxQuotedBytes, 'a')),
            "'" + std::string(kMaxQuotedBytes, 'a') + "'");
}

TEST(StatusTest, QuoteTruncatesLongTextAndGivesItsSize) {
  const std::string quoted = Quote(std::string(20000, 'x'));
  EXPECT_EQ(quoted, "'" + std::string(kMaxQuotedBytes, 'x') + "\u2026(20000 bytes)'");
}

TEST(StatusTest, TruncateNeverSplitsAUtf8Character) {
  // "é" is two bytes: a cut after byte 3 of "aaé..." would split it.
  const std::string text = "aa\u00e9" + std::string(10, 'b');
  EXPECT_EQ(Truncate(text, 3), "aa\u2026(14 bytes)");
  EXPECT_EQ(Truncate(text, 4), "aa\u00e9\u2026(14 bytes)");
  EXPECT_EQ(Truncate("\U0001F680", 2), "\u2026(4 bytes)");
  EXPECT_EQ(Truncate(text, text.size()), text);
}

TEST(ResultTest, OkStatusIsAnInternalError) {
  Result<int> r(Status::OK());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace oxbow
