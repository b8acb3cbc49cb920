#include "oxbow/kv/merge.h"

#include <gtest/gtest.h>

#include <cstring>

namespace oxbow::kv {
namespace {

using arrow::DataType;
using arrow::Field;

arrow::SchemaPtr Schema() {
  return std::make_shared<arrow::Schema>(std::vector<Field>{
      {"id", DataType::Int64(), false, {}},
      {"v", DataType::Int64(), true, {}},
      {"s", DataType::String(), true, {}},
      {"b", DataType::Bool(), true, {}},
      {"d", DataType::Decimal128(4, 1), true, {}},
  });
}

Cell I64(int64_t v) { return Cell{false, std::string(reinterpret_cast<char*>(&v), 8)}; }
Cell Str(const std::string& s) { return Cell{false, s}; }
Cell Bool(bool b) { return Cell{false, std::string(1, b ? 1 : 0)}; }
Cell Dec(__int128 v) { return Cell{false, std::string(reinterpret_cast<char*>(&v), 16)}; }
Cell Null() { return Cell{}; }

Result<MergeRules> Rules(std::map<std::string, std::string> props) {
  return ParseMergeRules(*Schema(), {0}, props);
}

const std::vector<bool> kAll(5, true);

TEST(MergeTest, LastRowReplacesAndPartialUpdateKeepsTheRest) {
  auto rules = Rules({});
  ASSERT_TRUE(rules.ok());
  Row old = {I64(1), I64(10), Str("x"), Bool(true), Null()};
  auto full = Merge(*rules, *Schema(), &old, {I64(1), I64(20), Null(), Null(), Null()}, kAll);
  ASSERT_TRUE(full.ok() && full->has_value());
  EXPECT_EQ((**full)[1], I64(20));
  EXPECT_TRUE((**full)[2].null);
  std::vector<bool> given = {true, false, true, false, false};
  auto partial = Merge(*rules, *Schema(), &old, {I64(1), Null(), Str("y"), Null(), Null()}, given);
  ASSERT_TRUE(partial.ok() && partial->has_value());
  EXPECT_EQ((**partial)[1], I64(10));
  EXPECT_EQ((**partial)[2], Str("y"));
  EXPECT_EQ((**partial)[3], Bool(true));
  // A partial update of a missing key inserts it with the other columns null.
  auto inserted =
      Merge(*rules, *Schema(), nullptr, {I64(2), Null(), Str("z"), Null(), Null()}, given);
  ASSERT_TRUE(inserted.ok() && inserted->has_value());
  EXPECT_TRUE((**inserted)[1].null);
}

TEST(MergeTest, FirstRowIgnoresLaterWrites) {
  auto rules = Rules({{"merge_engine", "first_row"}});
  ASSERT_TRUE(rules.ok());
  Row old = {I64(1), I64(10), Null(), Null(), Null()};
  auto merged = Merge(*rules, *Schema(), &old, {I64(1), I64(20), Null(), Null(), Null()}, kAll);
  ASSERT_TRUE(merged.ok());
  EXPECT_FALSE(merged->has_value());
  EXPECT_TRUE(rules->upsert_reads_old_row());
}

TEST(MergeTest, VersionedIgnoresLowerVersions) {
  auto rules = Rules({{"merge_engine", "versioned"}, {"merge_engine.version_column", "v"}});
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  Row old = {I64(1), I64(10), Str("old"), Null(), Null()};
  auto lower = Merge(*rules, *Schema(), &old, {I64(1), I64(9), Str("new"), Null(), Null()}, kAll);
  ASSERT_TRUE(lower.ok());
  EXPECT_FALSE(lower->has_value());
  auto equal = Merge(*rules, *Schema(), &old, {I64(1), I64(10), Str("eq"), Null(), Null()}, kAll);
  ASSERT_TRUE(equal.ok() && equal->has_value());
  EXPECT_EQ((**equal)[2], Str("eq"));
  auto higher = Merge(*rules, *Schema(), &old, {I64(1), I64(11), Str("hi"), Null(), Null()}, kAll);
  ASSERT_TRUE(higher.ok() && higher->has_value());
  EXPECT_EQ((**higher)[2], Str("hi"));
}

TEST(MergeTest, AggregateFunctions) {
  auto rules = Rules({{"merge_engine", "aggregate"},
                      {"fields.v.agg", "sum"},
                      {"fields.s.agg", "listagg"},
                      {"fields.s.listagg_delimiter", "|"},
                      {"fields.b.agg", "bool_and"},
                      {"fields.d.agg", "max"}});
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  Row old = {I64(1), I64(10), Str("a"), Bool(true), Dec(5)};
  auto merged =
      Merge(*rules, *Schema(), &old, {I64(1), I64(5), Str("b"), Bool(false), Dec(3)}, kAll);
  ASSERT_TRUE(merged.ok() && merged->has_value());
  EXPECT_EQ((**merged)[1], I64(15));
  EXPECT_EQ((**merged)[2], Str("a|b"));
  EXPECT_EQ((**merged)[3], Bool(false));
  EXPECT_EQ((**merged)[4], Dec(5));
  // Nulls are ignored by sum; only the given columns aggregate.
  std::vector<bool> given = {true, true, false, false, false};
  auto partial =
      Merge(*rules, *Schema(), &**merged, {I64(1), Null(), Null(), Null(), Null()}, given);
  ASSERT_TRUE(partial.ok() && partial->has_value());
  EXPECT_EQ(**partial, **merged);
  // A decimal sum that leaves its precision is refused.
  auto sum_rules = Rules({{"merge_engine", "aggregate"}, {"fields.d.agg", "sum"}});
  ASSERT_TRUE(sum_rules.ok());
  Row big = {I64(1), Null(), Null(), Null(), Dec(9000)};
  auto overflow =
      Merge(*sum_rules, *Schema(), &big, {I64(1), Null(), Null(), Null(), Dec(1000)}, kAll);
  EXPECT_TRUE(overflow.status().IsInvalid());
}

TEST(MergeTest, LastAndFirstVariants) {
  auto rules = Rules({{"merge_engine", "aggregate"},
                      {"fields.v.agg", "last"},
                      {"fields.s.agg", "first_non_null"},
                      {"fields.d.agg", "first"}});
  ASSERT_TRUE(rules.ok());
  Row old = {I64(1), I64(10), Null(), Null(), Dec(1)};
  auto merged = Merge(*rules, *Schema(), &old, {I64(1), Null(), Str("s"), Null(), Dec(2)}, kAll);
  ASSERT_TRUE(merged.ok() && merged->has_value());
  EXPECT_TRUE((**merged)[1].null);     // last takes the null
  EXPECT_EQ((**merged)[2], Str("s"));  // first_non_null fills a null
  EXPECT_EQ((**merged)[4], Dec(1));    // first keeps the old
  EXPECT_TRUE((**merged)[3].null);     // default last_non_null ignores the null
}

TEST(MergeTest, InvalidCombinationsAreRefusedNamingTheProblem) {
  auto expect = [](std::map<std::string, std::string> props, const std::string& words) {
    auto rules = Rules(props);
    ASSERT_FALSE(rules.ok()) << words;
    EXPECT_TRUE(rules.status().IsInvalid());
    EXPECT_NE(rules.status().message().find(words), std::string::npos) << rules.status().message();
  };
  expect({{"merge_engine", "newest"}}, "'newest'");
  expect({{"merge_engine", "versioned"}}, "version_column");
  expect({{"merge_engine", "versioned"}, {"merge_engine.version_column", "s"}},
         "integer or a timestamp");
  expect({{"merge_engine", "versioned"}, {"merge_engine.version_column", "id"}}, "primary-key");
  expect({{"merge_engine.version_column", "v"}}, "not 'versioned'");
  expect({{"fields.v.agg", "sum"}}, "needs merge_engine 'aggregate'");
  expect({{"merge_engine", "aggregate"}, {"fields.s.agg", "sum"}}, "cannot apply to column 's'");
  expect({{"merge_engine", "aggregate"}, {"fields.v.agg", "listagg"}}, "cannot apply");
  expect({{"merge_engine", "aggregate"}, {"fields.b.agg", "max"}}, "cannot apply");
  expect({{"merge_engine", "aggregate"}, {"fields.v.agg", "median"}}, "'median'");
  expect({{"merge_engine", "aggregate"}, {"fields.nope.agg", "sum"}}, "names no column");
  expect({{"merge_engine", "aggregate"}, {"fields.id.agg", "sum"}}, "primary-key columns");
  expect({{"changelog.image", "half"}}, "'half'");
}

TEST(MergeTest, ImageNoneSkipsTheReadOnlyForLastRow) {
  auto none = Rules({{"changelog.image", "none"}});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->upsert_reads_old_row());
  auto full = Rules({});
  ASSERT_TRUE(full.ok());
  EXPECT_TRUE(full->upsert_reads_old_row());
}

// Nested value columns take the functions that keep or replace a value whole, and no other.
TEST(MergeTest, NestedColumnsTakeOnlyTheFunctionsThatReplaceOrKeepAValue) {
  auto schema = std::make_shared<arrow::Schema>(std::vector<Field>{
      {"id", DataType::Int64(), false, {}},
      {"l", DataType::Parse("list<item: int64>").ValueOrDie(), true, {}},
  });
  auto rules = [&](const std::string& agg) {
    return ParseMergeRules(*schema, {0}, {{"merge_engine", "aggregate"}, {"fields.l.agg", agg}});
  };
  for (const char* agg : {"last", "last_non_null", "first", "first_non_null"}) {
    EXPECT_TRUE(rules(agg).ok()) << agg;
  }
  for (const char* agg : {"sum", "min", "max", "bool_and", "bool_or", "listagg"}) {
    auto st = rules(agg).status();
    EXPECT_TRUE(st.IsInvalid()) << agg;
    EXPECT_EQ(st.message(), "aggregate function '" + std::string(agg) +
                                "' cannot apply to column 'l' of type list<item: int64>");
  }
  // A nested version column is refused as every non-integer one is.
  auto versioned = ParseMergeRules(
      *schema, {0}, {{"merge_engine", "versioned"}, {"merge_engine.version_column", "l"}});
  EXPECT_TRUE(versioned.status().IsInvalid());
}

TEST(MergeTest, MinAndMaxOfFixedSizeBinaryCompareUnsignedBytes) {
  auto schema = std::make_shared<arrow::Schema>(std::vector<Field>{
      {"id", DataType::Int64(), false, {}},
      {"lo", DataType::FixedSizeBinary(2), true, {}},
      {"hi", DataType::FixedSizeBinary(2), true, {}},
  });
  auto rules = ParseMergeRules(
      *schema, {0},
      {{"merge_engine", "aggregate"}, {"fields.lo.agg", "min"}, {"fields.hi.agg", "max"}});
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  const Cell small{false, std::string("\x01\xff", 2)};
  const Cell large{false, std::string("\x80\x00", 2)};  // above 0x01 unsigned, below it signed
  Row old = {I64(1), large, small};
  auto merged = Merge(*rules, *schema, &old, {I64(1), small, large}, {true, true, true});
  ASSERT_TRUE(merged.ok() && merged->has_value()) << merged.status().ToString();
  EXPECT_EQ((**merged)[1], small);
  EXPECT_EQ((**merged)[2], large);
}

}  // namespace
}  // namespace oxbow::kv
