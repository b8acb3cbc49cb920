#include "oxbow/flight/requests.h"

#include <gtest/gtest.h>

namespace oxbow::flight {
namespace {

TEST(TicketTest, ParsesEveryField) {
  auto r = ParseTicket(
      R"({"table":"ns.t","bucket":3,"from":42,"to":100,"columns":["a","b"],"follow":true,
          "schema_id":2})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->table, "ns.t");
  EXPECT_EQ(r->bucket, 3);
  EXPECT_EQ(r->from.kind, StartPosition::Kind::kOffset);
  EXPECT_EQ(r->from.offset, 42);
  EXPECT_EQ(r->to, 100);
  EXPECT_EQ(r->columns, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r->follow);
  EXPECT_EQ(r->schema_id, 2);
  auto again = ParseTicket(TicketToJson(*r));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->from.offset, 42);
  EXPECT_EQ(again->columns, r->columns);
  EXPECT_EQ(again->schema_id, 2);
  EXPECT_EQ(ParseTicket(R"({"table":"a.b","schema_id":"1"})").status().message(),
            "ticket \"schema_id\" must be an integer in [0, 2147483647]");
  EXPECT_EQ(ParseTicket(R"({"table":"a.b","snapshot":true,"schema_id":1})").status().message(),
            "ticket \"schema_id\" applies to log reads, not to snapshots, lookups or union reads");
}

TEST(TicketTest, FromATimestamp) {
  auto r = ParseTicket(R"({"table":"ns.t","from":{"timestamp_ms":1700000000000}})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->from.kind, StartPosition::Kind::kTimestamp);
  EXPECT_EQ(r->from.timestamp_ms, 1700000000000);
  auto again = ParseTicket(TicketToJson(*r));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->from.kind, StartPosition::Kind::kTimestamp);
  EXPECT_EQ(again->from.timestamp_ms, 1700000000000);
  for (const char* bad : {R"({"table":"ns.t","from":{"timestamp":1}})",
                          R"({"table":"ns.t","from":{"timestamp_ms":"1"}})",
                          R"({"table":"ns.t","from":{"timestamp_ms":1,"x":2}})"}) {
    EXPECT_TRUE(ParseTicket(bad).status().IsInvalid()) << bad;
  }
}

TEST(TicketTest, Defaults) {
  auto r = ParseTicket(R"({"table":"ns.t"})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->bucket, 0);
  EXPECT_EQ(r->from.kind, StartPosition::Kind::kEarliest);
  EXPECT_FALSE(r->to.has_value());
  EXPECT_FALSE(r->columns.has_value());
  EXPECT_FALSE(r->follow);
  EXPECT_EQ(ParseTicket(R"({"table":"ns.t","from":"latest","to":null})")->from.kind,
            StartPosition::Kind::kLatest);
}

TEST(TicketTest, ErrorsNameTheField) {
  EXPECT_EQ(ParseTicket("not json").status().message(),
            "ticket must be a JSON object, got 'not json'");
  EXPECT_EQ(ParseTicket("{}").status().message(), "ticket needs \"table\": \"namespace.table\"");
  EXPECT_EQ(ParseTicket(R"({"table":"a.b","bucket":-1})").status().message(),
            "ticket \"bucket\" must be an integer in [0, 2147483647]");
  EXPECT_EQ(ParseTicket(R"({"table":"a.b","from":"soon"})").status().message(),
            "ticket \"from\" must be \"earliest\", \"latest\", a non-negative integer offset or "
            "{\"timestamp_ms\": <ms>}");
  EXPECT_EQ(ParseTicket(R"({"table":"a.b","from":-5})").status().message(),
            "ticket \"from\" must be a non-negative integer offset");
  EXPECT_TRUE(ParseTicket(R"({"table":"a.b","columns":"a"})").status().IsInvalid());
  EXPECT_TRUE(ParseTicket(R"({"table":"a.b","follow":1})").status().IsInvalid());
}

TEST(TicketTest, UnionReads) {
  auto r = ParseTicket(R"({"table":"ns.t","union":true,"columns":["b","a"],"follow":false})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->kind, Ticket::Kind::kUnion);
  EXPECT_EQ(*r->columns, (std::vector<std::string>{"b", "a"}));
  auto again = ParseTicket(TicketToJson(*r));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->kind, Ticket::Kind::kUnion);
  EXPECT_EQ(*again->columns, *r->columns);
  EXPECT_FALSE(again->limit.has_value());
  EXPECT_EQ(
      *ParseTicket(TicketToJson(*ParseTicket(R"({"table":"a.b","union":true,"limit":7})")))->limit,
      7);
  EXPECT_EQ(ParseTicket(R"({"table":"a.b","union":true,"limit":-1})").status().message(),
            "ticket \"limit\" must be a non-negative number of rows");
  EXPECT_EQ(ParseTicket(R"({"table":"a.b","limit":3})").status().message(),
            "ticket \"limit\" applies to union reads (\"union\": true)");
  EXPECT_EQ(ParseTicket(R"({"table":"ns.t","union":false})")->kind, Ticket::Kind::kLog);
  EXPECT_EQ(ParseTicket(R"({"table":"a.b","union":true,"from":3})").status().message(),
            "ticket \"from\" applies to log reads: a union read covers every bucket from the "
            "lake's first row to the log's end");
  auto follow = ParseTicket(R"({"table":"a.b","union":true,"follow":true})");
  ASSERT_TRUE(follow.ok()) << follow.status().ToString();
  EXPECT_TRUE(follow->follow);
  EXPECT_TRUE(ParseTicket(TicketToJson(*follow))->follow);
  EXPECT_TRUE(ParseTicket(R"({"table":"a.b","union":true,"snapshot":true})").status().IsInvalid());
  EXPECT_TRUE(ParseTicket(R"({"table":"a.b","union":1})").status().IsInvalid());
}

TEST(TicketTest, UnionFilters) {
  auto r =
      ParseTicket(R"({"table":"a.b","union":true,"filter":[{"column":"x","op":">=","value":5},)"
                  R"({"column":"s","op":"!=","value":"q"},{"column":"f","op":"<","value":1.5}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->filter.size(), 3u);
  EXPECT_EQ(r->filter[0].column, "x");
  EXPECT_EQ(r->filter[0].op, ColumnPredicate::Op::kGreaterEqual);
  EXPECT_EQ(std::get<int64_t>(r->filter[0].value), 5);
  EXPECT_EQ(r->filter[1].op, ColumnPredicate::Op::kNotEqual);
  EXPECT_EQ(std::get<std::string>(r->filter[1].value), "q");
  EXPECT_EQ(std::get<double>(r->filter[2].value), 1.5);
  auto again = ParseTicket(TicketToJson(*r));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->filter.size(), 3u);
  EXPECT_EQ(again->filter[2].op, ColumnPredicate::Op::kLess);
  EXPECT_EQ(std::get<double>(again->filter[2].value), 1.5);
  EXPECT_EQ(
      ParseTicket(R"({"table":"a.b","union":true,"filter":[{"column":"x","op":"=~","value":1}]})")
          .status()
          .message(),
      "ticket \"filter\" entry 0: unknown op \"=~\" (ops are <, <=, >, >=, ==, !=)");
  EXPECT_EQ(
      ParseTicket(R"({"table":"a.b","union":true,"filter":[{"column":"x","op":"<","value":[1]}]})")
          .status()
          .message(),
      "ticket \"filter\" entry 0: \"value\" must be a number (a 64-bit integer or a float) or a "
      "string, got [1]");
  EXPECT_TRUE(
      ParseTicket(R"({"table":"a.b","union":true,"filter":{"column":"x"}})").status().IsInvalid());
  EXPECT_TRUE(ParseTicket(R"({"table":"a.b","union":true,"filter":[{"column":"x","op":"<"}]})")
                  .status()
                  .IsInvalid());
  EXPECT_EQ(ParseTicket(R"({"table":"a.b","filter":[]})").status().message(),
            "ticket \"filter\" applies to union reads (\"union\": true)");
}

TEST(TableNameBodyTest, AcceptsObjectStringOrBareName) {
  EXPECT_EQ(*ParseTableNameBody(R"({"table":"ns.t"})"), "ns.t");
  EXPECT_EQ(*ParseTableNameBody(R"("ns.t")"), "ns.t");
  EXPECT_EQ(*ParseTableNameBody("ns.t\n"), "ns.t");
  EXPECT_TRUE(ParseTableNameBody(R"({"name":"ns.t"})").status().IsInvalid());
}

}  // namespace
}  // namespace oxbow::flight
