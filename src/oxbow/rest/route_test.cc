#include <gtest/gtest.h>

#include "oxbow/rest/route_internal.h"

namespace oxbow::rest {
namespace {

Route Parsed(std::string_view method, std::string_view path) {
  auto route = ParseRoute(method, path);
  EXPECT_TRUE(route.ok()) << method << " " << path << ": " << route.status().ToString();
  return route.ok() ? *route : Route{};
}

TEST(RouteTest, ReadRoutes) {
  EXPECT_EQ(Parsed("GET", "/v1/config").operation, Operation::kGetConfig);
  EXPECT_EQ(Parsed("GET", "/v1/namespaces").operation, Operation::kListNamespaces);
  Route route = Parsed("GET", "/v1/namespaces/shop");
  EXPECT_EQ(route.operation, Operation::kLoadNamespace);
  EXPECT_EQ(route.namespace_parts, std::vector<std::string>{"shop"});
  EXPECT_EQ(Parsed("HEAD", "/v1/namespaces/shop").operation, Operation::kNamespaceExists);
  EXPECT_EQ(Parsed("GET", "/v1/namespaces/shop/tables").operation, Operation::kListTables);
  route = Parsed("GET", "/v1/namespaces/shop/tables/orders");
  EXPECT_EQ(route.operation, Operation::kLoadTable);
  EXPECT_EQ(route.table, "orders");
  EXPECT_EQ(Parsed("HEAD", "/v1/namespaces/shop/tables/orders").operation, Operation::kTableExists);
  EXPECT_EQ(Parsed("POST", "/v1/namespaces/shop/tables/orders/metrics").operation,
            Operation::kReportMetrics);
}

TEST(RouteTest, SegmentsArePercentDecodedOneByOne) {
  Route route = Parsed("GET", "/v1/namespaces/a%1Fb/tables/x%2Fy");
  EXPECT_EQ(route.namespace_parts, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(route.table, "x/y");  // an encoded '/' stays inside its segment
  EXPECT_EQ(*PercentDecode("%41%62+c"), "Ab+c");
}

TEST(RouteTest, WritesAreNamed) {
  EXPECT_EQ(Parsed("POST", "/v1/namespaces").write, "create a namespace");
  EXPECT_EQ(Parsed("DELETE", "/v1/namespaces/shop").write, "drop namespace");
  EXPECT_EQ(Parsed("POST", "/v1/namespaces/shop/properties").write,
            "update the properties of namespace");
  EXPECT_EQ(Parsed("POST", "/v1/namespaces/shop/register").write, "register a table in");
  EXPECT_EQ(Parsed("POST", "/v1/namespaces/shop/tables").write, "create a table in");
  EXPECT_EQ(Parsed("POST", "/v1/namespaces/shop/tables/orders").write, "commit to table");
  EXPECT_EQ(Parsed("DELETE", "/v1/namespaces/shop/tables/orders").write, "drop table");
  EXPECT_EQ(Parsed("POST", "/v1/tables/rename").write, "rename a table");
  EXPECT_EQ(Parsed("POST", "/v1/transactions/commit").write, "commit a transaction");
  for (auto path : {"/v1/namespaces", "/v1/tables/rename"}) {
    EXPECT_EQ(Parsed("POST", path).operation, Operation::kWrite);
  }
}

TEST(RouteTest, MalformedPathsAreInvalidAndNamed) {
  struct Case {
    const char* method;
    const char* path;
    const char* says;
  };
  for (const Case& c : {
           Case{"GET", "/v1/namespaces/%zz", "bad percent escape"},
           Case{"GET", "/v1/namespaces/ab%4", "bad percent escape"},
           Case{"GET", "/v1/namespaces/a%1F/tables", "empty namespace part"},
           Case{"GET", "/v1/namespaces//tables", "empty namespace part"},
           Case{"GET", "/v1/namespaces/shop/tables/", "empty table name"},
           Case{"GET", "/v2/config", "no Iceberg REST catalog route"},
           Case{"PUT", "/v1/namespaces", "no Iceberg REST catalog route"},
           Case{"GET", "/v1/namespaces/shop/views", "no Iceberg REST catalog route"},
           Case{"GET", "/v1/namespaces/shop/tables/t/extra/more", "no Iceberg REST catalog route"},
           Case{"GET", "", "no Iceberg REST catalog route"},
       }) {
    auto route = ParseRoute(c.method, c.path);
    ASSERT_FALSE(route.ok()) << c.method << " " << c.path;
    EXPECT_TRUE(route.status().IsInvalid()) << route.status().ToString();
    EXPECT_NE(route.status().message().find(c.says), std::string::npos) << route.status().message();
  }
}

}  // namespace
}  // namespace oxbow::rest
