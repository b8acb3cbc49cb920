// An in-process oxbowd on port 0 driven through the C++ client: the Flight surface of
// docs/api.md end to end (actions, DoPut acks, projected DoGet) and the client's error mapping.
#include "oxbow/server/server.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "oxbow/arrow/builder.h"
#include "oxbow/client/client.h"

namespace oxbow::server {
namespace {

using arrow::DataType;
using nlohmann::json;

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/oxbow_server_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.kafka.listen = "127.0.0.1:0";
    options.catalog.listen = "127.0.0.1:0";
    options.schema_registry.listen = "127.0.0.1:0";
    options.console.listen = "127.0.0.1:0";
    options.metrics_listen = "127.0.0.1:0";
    options.node.engine.data_dir = dir_ + "/data";
    options.node.lake.warehouse = dir_ + "/warehouse";
    auto server = Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).ValueOrDie();
    auto client = client::Client::Connect("127.0.0.1:" + std::to_string(server_->port()));
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).ValueOrDie();
  }
  void TearDown() override {
    client_.reset();
    if (server_) {
      EXPECT_TRUE(server_->Shutdown().ok());
    }
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  Result<json> Action(const std::string& type, const json& body) {
    ASSIGN_OR_RAISE(std::string reply, client_->DoAction(type, body.dump()));
    return json::parse(reply);
  }

  Status CreateTable(const std::string& name) {
    json body = {{"table", name},
                 {"schema",
                  {{"fields",
                    {{{"name", "id"}, {"type", "int64"}, {"nullable", false}},
                     {{"name", "name"}, {"type", "string"}, {"nullable", true}}}}}},
                 {"buckets", 1},
                 {"properties", {{"lake.enabled", "false"}}}};
    return Action("create_table", body).status();
  }

  arrow::RecordBatchPtr Batch(int64_t first_id, int64_t rows) {
    arrow::Int64Builder ids(DataType::Int64());
    arrow::BinaryBuilder names(DataType::String());
    for (int64_t i = 0; i < rows; ++i) {
      EXPECT_TRUE(ids.Append(first_id + i).ok());
      EXPECT_TRUE(names.Append("row" + std::to_string(first_id + i)).ok());
    }
    return arrow::RecordBatch::Make(schema_, rows,
                                    {ids.Finish().ValueOrDie(), names.Finish().ValueOrDie()})
        .ValueOrDie();
  }

  std::string dir_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<client::Client> client_;
  arrow::SchemaPtr schema_ = std::make_shared<const arrow::Schema>(std::vector<arrow::Field>{
      {"id", DataType::Int64(), false}, {"name", DataType::String(), true}});
};

TEST_F(ServerTest, CreatePutReadDescribeDrop) {
  ASSERT_TRUE(CreateTable("ns.t").ok());
  auto listed = Action("list_tables", json::object());
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_NE(listed->dump().find("ns.t"), std::string::npos) << listed->dump();

  auto put = client_->DoPut("ns.t", schema_);
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  ASSERT_TRUE((*put)->Send(*Batch(0, 3)).ok());
  ASSERT_TRUE((*put)->Send(*Batch(3, 2)).ok());
  ASSERT_TRUE((*put)->DoneWriting().ok());
  std::vector<int64_t> base_offsets;
  for (;;) {
    auto ack = (*put)->ReadAck();
    ASSERT_TRUE(ack.ok()) << ack.status().ToString();
    if (!*ack) break;
    json offsets = json::parse(**ack)["offsets"];
    ASSERT_EQ(offsets.size(), 1u);
    base_offsets.push_back(offsets[0]["base_offset"].get<int64_t>());
  }
  ASSERT_TRUE((*put)->Finish().ok());
  EXPECT_EQ(base_offsets, (std::vector<int64_t>{0, 3}));

  json ticket = {{"table", "ns.t"}, {"bucket", 0}, {"from", "earliest"}, {"columns", {"name"}}};
  auto get = client_->DoGet(ticket.dump());
  ASSERT_TRUE(get.ok()) << get.status().ToString();
  ASSERT_EQ((*get)->schema()->num_fields(), 1);
  EXPECT_EQ((*get)->schema()->field(0).name, "name");
  std::vector<std::string> names;
  int64_t next_offset = 0;
  for (;;) {
    auto chunk = (*get)->Next();
    ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
    if (!*chunk) break;
    ASSERT_EQ((*chunk)->batch->num_columns(), 1);
    for (int64_t r = 0; r < (*chunk)->batch->num_rows(); ++r) {
      names.emplace_back((*chunk)->batch->column(0).GetView(r));
    }
    next_offset = json::parse((*chunk)->app_metadata)["next_offset"].get<int64_t>();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"row0", "row1", "row2", "row3", "row4"}));
  EXPECT_EQ(next_offset, 5);

  auto described = Action("describe_table", {{"table", "ns.t"}});
  ASSERT_TRUE(described.ok()) << described.status().ToString();
  EXPECT_EQ((*described)["buckets"], 1) << described->dump();
  ASSERT_EQ((*described)["bucket_offsets"].size(), 1u) << described->dump();
  EXPECT_EQ((*described)["bucket_offsets"][0]["next_offset"], 5) << described->dump();

  ASSERT_TRUE(Action("drop_table", {{"table", "ns.t"}}).ok());
  EXPECT_TRUE(Action("describe_table", {{"table", "ns.t"}}).status().IsNotFound());
}

TEST_F(ServerTest, ClientTranslatesErrors) {
  EXPECT_TRUE(Action("describe_table", {{"table", "ns.missing"}}).status().IsNotFound());
  EXPECT_TRUE(Action("drop_table", {{"table", "ns.missing"}}).status().IsNotFound());

  json ticket = {{"table", "ns.missing"}, {"bucket", 0}, {"from", "earliest"}};
  auto get = client_->DoGet(ticket.dump());
  EXPECT_TRUE(get.status().IsNotFound()) << get.status().ToString();

  ASSERT_TRUE(CreateTable("ns.t").ok());
  EXPECT_EQ(CreateTable("ns.t").code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(client_->DoAction("create_table", "{not json").status().IsInvalid());

  // A batch of another schema is refused, naming the field.
  auto other = std::make_shared<const arrow::Schema>(
      std::vector<arrow::Field>{{"id", DataType::Int32(), false}});
  auto put = client_->DoPut("ns.t", other);
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  arrow::Int32Builder ids(DataType::Int32());
  ASSERT_TRUE(ids.Append(1).ok());
  (void)(*put)->Send(*arrow::RecordBatch::Make(other, 1, {ids.Finish().ValueOrDie()}).ValueOrDie());
  (void)(*put)->DoneWriting();
  while (true) {
    auto ack = (*put)->ReadAck();
    if (!ack.ok() || !*ack) break;
  }
  Status finished = (*put)->Finish();
  EXPECT_TRUE(finished.IsInvalid()) << finished.ToString();
  EXPECT_NE(finished.message().find("id"), std::string::npos) << finished.ToString();

  EXPECT_TRUE(client::Client::Connect("no-port").status().IsInvalid());
}

TEST(MetricsLogin, OnUnderAuthBeyondLoopbackUnlessSaidOtherwise) {
  ServerOptions options;
  auto required = [&](bool auth, const char* mode, const char* listen) {
    options.auth = auth;
    options.metrics_auth = mode;
    options.metrics_listen = listen;
    return MetricsLoginRequired(options);
  };
  EXPECT_TRUE(required(true, "auto", "0.0.0.0:9249"));
  EXPECT_TRUE(required(true, "auto", "10.1.2.3:9249"));
  EXPECT_FALSE(required(true, "auto", "127.0.0.1:9249"));
  EXPECT_FALSE(required(true, "auto", "[::1]:9249"));
  EXPECT_FALSE(required(false, "auto", "0.0.0.0:9249"));
  EXPECT_FALSE(required(true, "off", "0.0.0.0:9249"));
  EXPECT_TRUE(required(true, "on", "127.0.0.1:9249"));
}

}  // namespace
}  // namespace oxbow::server
