// The REST catalog end to end over HTTP (cpp-httplib's client) against a real node: routes,
// the spec's error bodies and codes, refused writes, paging and the bearer token.
#include "oxbow/rest/rest.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

namespace oxbow::rest {
namespace {

using nlohmann::json;

class RestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/oxbow_rest_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    node::NodeOptions options;
    options.engine.data_dir = dir_ + "/data";
    options.lake.warehouse = dir_ + "/warehouse";
    options.lake.freshness_ms = 20;
    auto node = node::Node::Open(std::move(options));
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    node_ = std::move(node).ValueOrDie();
    CreateTable("shop.orders", true);
    CreateTable("shop.returns", true);
    CreateTable("zoo.animals", false);
    StartCatalog("");
    // Tiering writes each lake table's first metadata within a few freshness periods.
    for (auto path : {"/v1/namespaces/shop/tables/orders", "/v1/namespaces/shop/tables/returns"}) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (Call("HEAD", path).status != 204) {
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << path << " never appeared";
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  }
  void TearDown() override {
    catalog_.reset();
    if (node_) {
      EXPECT_TRUE(node_->Close().ok());
    }
    node_.reset();
    std::filesystem::remove_all(dir_);
  }

  void CreateTable(const std::string& name, bool lake) {
    json body = {{"table", name},
                 {"schema", {{"fields", {{{"name", "id"}, {"type", "int64"}}}}}},
                 {"properties", {{"lake.enabled", lake ? "true" : "false"}}}};
    auto request = catalog::ParseCreateTable(body.dump());
    ASSERT_TRUE(request.ok()) << request.status().ToString();
    ASSERT_TRUE(node_->CreateTable(*request).ok());
  }

  void StartCatalog(const std::string& token) {
    catalog_.reset();
    auto catalog = CatalogServer::Start(node_.get(), {"127.0.0.1:0", token});
    ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
    catalog_ = std::move(catalog).ValueOrDie();
  }

  struct Answer {
    int status = 0;
    json body;  // null when the answer had none
  };

  Answer Call(const std::string& method, const std::string& path, const std::string& body = "",
              const std::string& authorization = "") {
    httplib::Client client("127.0.0.1", catalog_->port());
    httplib::Headers headers;
    if (!authorization.empty()) headers.emplace("Authorization", authorization);
    httplib::Result result(nullptr, httplib::Error::Unknown);
    if (method == "GET") result = client.Get(path, headers);
    if (method == "HEAD") result = client.Head(path, headers);
    if (method == "POST") result = client.Post(path, headers, body, "application/json");
    if (method == "DELETE") result = client.Delete(path, headers, body, "application/json");
    if (!result) {
      ADD_FAILURE() << method << " " << path << ": " << httplib::to_string(result.error());
      return {};
    }
    Answer answer{result->status};
    if (!result->body.empty()) {
      EXPECT_EQ(result->get_header_value("Content-Type"), "application/json");
      answer.body = json::parse(result->body);
    }
    return answer;
  }

  // Checks the spec's IcebergErrorResponse and returns its message.
  std::string ExpectError(const Answer& answer, int status, const std::string& type) {
    EXPECT_EQ(answer.status, status) << answer.body.dump();
    const json& error = answer.body.value("error", json::object());
    EXPECT_EQ(error.value("code", 0), status) << answer.body.dump();
    EXPECT_EQ(error.value("type", ""), type) << answer.body.dump();
    return error.value("message", "");
  }

  std::string dir_;
  std::unique_ptr<node::Node> node_;
  std::unique_ptr<CatalogServer> catalog_;
};

TEST_F(RestTest, ConfigListsTheEndpoints) {
  Answer answer = Call("GET", "/v1/config?warehouse=anything");
  ASSERT_EQ(answer.status, 200);
  EXPECT_EQ(answer.body["defaults"], json::object());
  EXPECT_EQ(answer.body["overrides"], json::object());
  const auto& endpoints = answer.body["endpoints"];
  EXPECT_NE(std::find(endpoints.begin(), endpoints.end(),
                      "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}"),
            endpoints.end());
  // Writes are listed so that clients send them and show why they are refused.
  EXPECT_NE(std::find(endpoints.begin(), endpoints.end(),
                      "POST /v1/{prefix}/namespaces/{namespace}/tables"),
            endpoints.end());
  EXPECT_EQ(std::find(endpoints.begin(), endpoints.end(),
                      "GET /v1/{prefix}/namespaces/{namespace}/views"),
            endpoints.end());
}

TEST_F(RestTest, NamespacesMirrorOxbows) {
  Answer answer = Call("GET", "/v1/namespaces");
  ASSERT_EQ(answer.status, 200);
  EXPECT_EQ(answer.body, json::parse(R"({"namespaces":[["shop"],["zoo"]]})"));
  answer = Call("GET", "/v1/namespaces/shop");
  ASSERT_EQ(answer.status, 200);
  EXPECT_EQ(answer.body, json::parse(R"({"namespace":["shop"],"properties":{}})"));
  EXPECT_EQ(Call("HEAD", "/v1/namespaces/zoo").status, 204);
  // Oxbow's namespaces have one level.
  EXPECT_EQ(Call("GET", "/v1/namespaces?parent=shop").body, json::parse(R"({"namespaces":[]})"));
  EXPECT_NE(ExpectError(Call("GET", "/v1/namespaces/nope"), 404, "NoSuchNamespaceException")
                .find("namespace 'nope' does not exist"),
            std::string::npos);
  ExpectError(Call("GET", "/v1/namespaces/shop%1Fsub"), 404, "NoSuchNamespaceException");
  ExpectError(Call("GET", "/v1/namespaces?parent=nope"), 404, "NoSuchNamespaceException");
  Answer head = Call("HEAD", "/v1/namespaces/nope");
  EXPECT_EQ(head.status, 404);
  EXPECT_TRUE(head.body.is_null());
}

TEST_F(RestTest, TablesAreTheLakeTables) {
  Answer answer = Call("GET", "/v1/namespaces/shop/tables");
  ASSERT_EQ(answer.status, 200);
  EXPECT_EQ(answer.body, json::parse(R"({"identifiers":[
      {"namespace":["shop"],"name":"orders"},{"namespace":["shop"],"name":"returns"}]})"));
  // zoo.animals stays out of the lake (lake.enabled false).
  EXPECT_EQ(Call("GET", "/v1/namespaces/zoo/tables").body, json::parse(R"({"identifiers":[]})"));
  ExpectError(Call("GET", "/v1/namespaces/nope/tables"), 404, "NoSuchNamespaceException");
}

TEST_F(RestTest, LoadTableReturnsTheCurrentMetadataFile) {
  Answer answer = Call("GET", "/v1/namespaces/shop/tables/orders?snapshots=all");
  ASSERT_EQ(answer.status, 200) << answer.body.dump();
  const std::string location = answer.body["metadata-location"];
  const json& metadata = answer.body["metadata"];
  EXPECT_EQ(metadata["format-version"], 2);
  EXPECT_EQ(location.rfind(metadata["location"].get<std::string>() + "/metadata/v", 0), 0u)
      << location;
  auto pointer = node_->LakeCatalog()->CurrentMetadata({"shop", "orders"});
  ASSERT_TRUE(pointer.ok());
  // Tiering may have committed since; the answer is one of the table's metadata files.
  EXPECT_TRUE(std::filesystem::exists(location)) << location;
  EXPECT_EQ(answer.body["config"]["io-impl"], "org.apache.iceberg.hadoop.HadoopFileIO");
  EXPECT_FALSE(answer.body.contains("storage-credentials"));
}

TEST_F(RestTest, UnknownTablesAreSpecNotFound) {
  EXPECT_NE(ExpectError(Call("GET", "/v1/namespaces/shop/tables/nope"), 404, "NoSuchTableException")
                .find("table 'shop.nope' does not exist"),
            std::string::npos);
  EXPECT_NE(
      ExpectError(Call("GET", "/v1/namespaces/zoo/tables/animals"), 404, "NoSuchTableException")
          .find("lake.enabled is false"),
      std::string::npos);
  ExpectError(Call("GET", "/v1/namespaces/nope/tables/orders"), 404, "NoSuchNamespaceException");
  EXPECT_EQ(Call("HEAD", "/v1/namespaces/shop/tables/nope").status, 404);
}

TEST_F(RestTest, UnreadableMetadataIsAServerErrorNamingTheFile) {
  auto pointer = node_->LakeCatalog()->CurrentMetadata({"shop", "returns"});
  ASSERT_TRUE(pointer.ok());
  std::filesystem::resize_file(pointer->location, 3);  // "{\n " or so: no longer JSON
  std::string message =
      ExpectError(Call("GET", "/v1/namespaces/shop/tables/returns"), 500, "InternalServerError");
  EXPECT_NE(message.find(pointer->location), std::string::npos) << message;
  EXPECT_NE(message.find("is not a JSON object"), std::string::npos) << message;
}

TEST_F(RestTest, WritesAreRefusedNamingWhoOwnsThem) {
  struct Case {
    const char* method;
    const char* path;
    const char* names;
  };
  for (const Case& c : {
           Case{"POST", "/v1/namespaces", "create a namespace refused"},
           Case{"DELETE", "/v1/namespaces/shop", "drop namespace 'shop' refused"},
           Case{"POST", "/v1/namespaces/shop/tables", "create a table in 'shop' refused"},
           Case{"POST", "/v1/namespaces/shop/tables/orders",
                "commit to table 'shop.orders' refused"},
           Case{"DELETE", "/v1/namespaces/shop/tables/orders", "drop table 'shop.orders' refused"},
           Case{"POST", "/v1/tables/rename", "rename a table refused"},
           Case{"POST", "/v1/transactions/commit", "commit a transaction refused"},
       }) {
    std::string message =
        ExpectError(Call(c.method, c.path, "{}"), 406, "UnsupportedOperationException");
    EXPECT_NE(message.find(c.names), std::string::npos) << message;
    EXPECT_NE(message.find("Oxbow owns the writes of its tables"), std::string::npos) << message;
  }
  // Nothing changed.
  EXPECT_EQ(Call("GET", "/v1/namespaces/shop/tables").body["identifiers"].size(), 2u);
}

TEST_F(RestTest, MalformedRequestsAreBadRequests) {
  for (const std::string path :
       {"/v1/namespaces/%zz", "/v1/namespaces//tables", "/v1/namespaces/shop/tables/",
        "/v1/nothing", "/v1/namespaces/shop/views", "/v1/namespaces?pageSize=0",
        "/v1/namespaces?pageSize=x", "/v1/namespaces/shop/tables/orders?snapshots=some"}) {
    ExpectError(Call("GET", path), 400, "BadRequestException");
  }
  std::string message = ExpectError(Call("POST", "/v1/namespaces/shop/tables", "{not json"), 400,
                                    "BadRequestException");
  EXPECT_NE(message.find("not valid JSON"), std::string::npos) << message;
  ExpectError(Call("POST", "/v1/namespaces/shop/tables/orders/metrics", "[]"), 400,
              "BadRequestException");
  EXPECT_EQ(Call("POST", "/v1/namespaces/shop/tables/orders/metrics", "{}").status, 204);
  ExpectError(Call("POST", "/v1/namespaces/shop/tables/nope/metrics", "{}"), 404,
              "NoSuchTableException");
  // Too large a body: cpp-httplib's own refusal, in the spec's body too.
  ExpectError(Call("POST", "/v1/namespaces", std::string(2 << 20, ' ')), 413,
              "RequestTooLargeException");
}

TEST_F(RestTest, PagesFollowTheNextPageToken) {
  Answer first = Call("GET", "/v1/namespaces/shop/tables?pageSize=1");
  ASSERT_EQ(first.status, 200);
  EXPECT_EQ(first.body["identifiers"][0]["name"], "orders");
  const std::string token = first.body["next-page-token"];
  Answer second = Call("GET", "/v1/namespaces/shop/tables?pageSize=1&pageToken=" + token);
  EXPECT_EQ(second.body["identifiers"][0]["name"], "returns");
  EXPECT_FALSE(second.body.contains("next-page-token")) << second.body.dump();
  EXPECT_EQ(Call("GET", "/v1/namespaces?pageSize=5").body,
            json::parse(R"({"namespaces":[["shop"],["zoo"]]})"));
}

TEST_F(RestTest, BearerTokenIsRequiredWhenConfigured) {
  StartCatalog("s3cret");
  ExpectError(Call("GET", "/v1/config"), 401, "NotAuthorizedException");
  ExpectError(Call("GET", "/v1/namespaces", "", "Bearer wrong!"), 401, "NotAuthorizedException");
  ExpectError(Call("GET", "/v1/namespaces", "", "Basic s3cret"), 401, "NotAuthorizedException");
  EXPECT_EQ(Call("GET", "/v1/namespaces", "", "Bearer s3cret").status, 200);
  EXPECT_EQ(Call("GET", "/v1/config", "", "bearer s3cret").status, 200);
}

TEST_F(RestTest, UsersSeeOnlyWhatTheyMayRead) {
  auto fs = PosixFileSystem::Default();
  auto users = auth::UserStore::Load(fs, dir_ + "/users.json");
  ASSERT_TRUE(users.ok());
  ASSERT_TRUE(users->Put("ann", "password-1", {*auth::ParseGrant("shop.orders=read")}).ok());
  ASSERT_TRUE(users->Save().ok());
  auth::Authenticator authenticator(fs, dir_ + "/users.json");
  catalog_.reset();
  auto catalog = CatalogServer::Start(node_.get(), {"127.0.0.1:0", "", {}, &authenticator});
  ASSERT_TRUE(catalog.ok()) << catalog.status().ToString();
  catalog_ = std::move(catalog).ValueOrDie();
  const std::string basic = "Basic " + auth::EncodeBasicCredentials("ann", "password-1");
  ExpectError(Call("GET", "/v1/namespaces"), 401, "NotAuthorizedException");
  ExpectError(Call("GET", "/v1/namespaces", "",
                   "Basic " + auth::EncodeBasicCredentials("ann", "wrong-password")),
              401, "NotAuthorizedException");
  EXPECT_EQ(Call("GET", "/v1/namespaces", "", basic).body,
            json::parse(R"({"namespaces":[["shop"]]})"));
  EXPECT_EQ(Call("GET", "/v1/namespaces/shop/tables", "", basic).body,
            json::parse(R"({"identifiers":[{"namespace":["shop"],"name":"orders"}]})"));
  EXPECT_EQ(Call("GET", "/v1/namespaces/shop/tables/orders", "", basic).status, 200);
  auto token = authenticator.Login("ann", "password-1");
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(Call("HEAD", "/v1/namespaces/shop/tables/orders", "", "Bearer " + *token).status, 204);
  EXPECT_EQ(ExpectError(Call("GET", "/v1/namespaces/shop/tables/returns", "", basic), 403,
                        "ForbiddenException"),
            "user 'ann' may not read table 'shop.returns'");
  ExpectError(Call("GET", "/v1/namespaces/shop/tables/nope", "", basic), 403, "ForbiddenException");
  ExpectError(Call("GET", "/v1/namespaces/zoo", "", basic), 404, "NoSuchNamespaceException");
  EXPECT_TRUE(CatalogServer::Start(node_.get(), {"127.0.0.1:0", "t", {}, &authenticator})
                  .status()
                  .IsInvalid());
}

TEST_F(RestTest, BusyOrBadAddressesAreRefused) {
  auto busy =
      CatalogServer::Start(node_.get(), {"127.0.0.1:" + std::to_string(catalog_->port()), ""});
  ASSERT_FALSE(busy.ok());
  EXPECT_NE(busy.status().message().find("cannot listen"), std::string::npos);
  for (const char* listen : {"no-port", "127.0.0.1:99999", "127.0.0.1:x", ":1"}) {
    auto bad = CatalogServer::Start(node_.get(), {listen, ""});
    ASSERT_FALSE(bad.ok()) << listen;
    EXPECT_TRUE(bad.status().IsInvalid()) << bad.status().ToString();
  }
}

}  // namespace
}  // namespace oxbow::rest
