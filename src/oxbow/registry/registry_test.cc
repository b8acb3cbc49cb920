#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <set>
#include <utility>

#include "oxbow/registry/registry_internal.h"

namespace oxbow::registry::internal {
namespace {

using json = nlohmann::json;

std::string Record(const std::string& fields) {
  return R"({"type":"record","name":"Order","namespace":"shop","fields":[)" + fields + "]}";
}
const std::string kV1 = Record(R"({"name":"id","type":"int"})");
// + a nullable field with a default: BACKWARD and FORWARD compatible with v1.
const std::string kV2 = Record(
    R"({"name":"id","type":"long"},{"name":"note","type":["null","string"],"default":null})");
// + a field without a default: not BACKWARD compatible (v1 data has none).
const std::string kNoDefault = Record(R"({"name":"id","type":"long"},{"name":"qty","type":"int"})");

std::vector<std::string> Problems(const std::string& reader, const std::string& writer) {
  return ReadProblems(AvroSchema::Parse(reader).ValueOrDie(),
                      AvroSchema::Parse(writer).ValueOrDie());
}

TEST(AvroSchemaTest, ParsesAndNormalizes) {
  auto schema = AvroSchema::Parse(R"({"type":"record","name":"A","namespace":"n","doc":"x",
      "fields":[{"name":"b","type":{"type":"enum","name":"E","symbols":["X","Y"]}},
                {"name":"c","type":"E"},{"name":"self","type":["null","A"],"default":null}]})");
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  EXPECT_EQ(schema->canonical(),
            R"({"fields":[{"name":"b","type":{"name":"n.E","symbols":["X","Y"],"type":"enum"}},)"
            R"({"name":"c","type":"n.E"},{"default":null,"name":"self","type":["null","n.A"]}],)"
            R"("name":"n.A","type":"record"})");
  EXPECT_EQ(AvroSchema::Parse(schema->canonical())->canonical(), schema->canonical());
  EXPECT_EQ(AvroSchema::Parse(R"({"type":"string"})")->canonical(), R"("string")");
  for (const char* bad :
       {"nope", R"({"type":"record","fields":[]})", R"(["int","int"])",
        R"({"type":"record","name":"R","fields":[{"name":"a","type":"Q"}]})",
        R"({"type":"enum","name":"E","symbols":["1x"]})", "[[\"int\"]]",
        R"({"type":"record","name":"9R","fields":[]})", R"(["int",{"type":["null","string"]}])"}) {
    auto parsed = AvroSchema::Parse(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    EXPECT_FALSE(parsed.status().message().empty());
  }
}

TEST(AvroSchemaTest, ResolvesAsAvroSpecifies) {
  EXPECT_TRUE(Problems(kV2, kV1).empty());   // int promotes to long, note has a default
  EXPECT_EQ(Problems(kV1, kV2).size(), 1u);  // long does not narrow to int
  EXPECT_EQ(
      Problems(kNoDefault, kV1),
      std::vector<std::string>{"$.qty: the reader's field has no default and the writer has none"});
  EXPECT_TRUE(Problems(R"(["null","long"])", R"("int")").empty());
  EXPECT_FALSE(Problems(R"("int")", R"(["null","int"])").empty());  // null has nowhere to go
  EXPECT_TRUE(Problems(R"({"type":"enum","name":"E","symbols":["A"],"default":"A"})",
                       R"({"type":"enum","name":"E","symbols":["A","B"]})")
                  .empty());
  EXPECT_FALSE(Problems(R"({"type":"enum","name":"E","symbols":["A"]})",
                        R"({"type":"enum","name":"E","symbols":["A","B"]})")
                   .empty());
  EXPECT_FALSE(
      Problems(R"({"type":"fixed","name":"F","size":4})", R"({"type":"fixed","name":"F","size":8})")
          .empty());
  EXPECT_TRUE(Problems(R"({"type":"map","values":"double"})", R"({"type":"map","values":"float"})")
                  .empty());
}

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("oxbow-registry-" + std::to_string(std::random_device{}()));
    Reopen();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Reopen() {
    registry_.reset();
    registry_ = Registry::Open(PosixFileSystem::Default(), dir_.string(), tables_).ValueOrDie();
    service_ = std::make_unique<Service>(registry_.get(), RegistryOptions{});
  }
  Reply Call(const std::string& method, const std::string& target, const json& body = nullptr) {
    http::Request request;
    request.method = method;
    const size_t q = target.find('?');
    request.path = target.substr(0, q);
    if (q != std::string::npos) {
      const std::string query = target.substr(q + 1);
      request.query.emplace(query.substr(0, query.find('=')), query.substr(query.find('=') + 1));
    }
    if (!body.is_null()) request.body = body.dump();
    http::Response response = service_->Handle(request);
    return {response.status, json::parse(response.body)};
  }
  static json Schema(const std::string& schema) { return {{"schema", schema}}; }

  std::filesystem::path dir_;
  TableSubjects* tables_ = nullptr;
  std::unique_ptr<Registry> registry_;
  std::unique_ptr<Service> service_;
};

TEST_F(RegistryTest, RegistersVersionsAndServesThemBySubjectAndId) {
  EXPECT_EQ(Call("POST", "/subjects/orders-value/versions", Schema(kV1)).body, json({{"id", 1}}));
  // The same schema again: the same id, no new version; in another subject: the same id.
  EXPECT_EQ(Call("POST", "/subjects/orders-value/versions", Schema(kV1)).body, json({{"id", 1}}));
  EXPECT_EQ(Call("POST", "/subjects/copy/versions", Schema(kV1)).body, json({{"id", 1}}));
  EXPECT_EQ(Call("POST", "/subjects/orders-value/versions", Schema(kV2)).body, json({{"id", 2}}));
  EXPECT_EQ(Call("GET", "/subjects").body, json({"copy", "orders-value"}));
  EXPECT_EQ(Call("GET", "/subjects/orders-value/versions").body, json({1, 2}));
  const json latest = Call("GET", "/subjects/orders-value/versions/latest").body;
  EXPECT_EQ(latest["version"], 2);
  EXPECT_EQ(latest["id"], 2);
  EXPECT_EQ(AvroSchema::Parse(latest["schema"].get<std::string>())->canonical(),
            AvroSchema::Parse(kV2)->canonical());
  EXPECT_EQ(Call("GET", "/schemas/ids/1/subjects").body, json({"copy", "orders-value"}));
  EXPECT_EQ(Call("GET", "/subjects/orders-value/versions/1/schema").body,
            AvroSchema::Parse(kV1)->root());
  EXPECT_EQ(Call("POST", "/subjects/orders-value", Schema(kV1)).body["version"], 1);
  // Confluent's errors.
  EXPECT_EQ(Call("GET", "/subjects/none/versions").body["error_code"], 40401);
  EXPECT_EQ(Call("GET", "/subjects/orders-value/versions/9").body["error_code"], 40402);
  EXPECT_EQ(Call("GET", "/subjects/orders-value/versions/zero").body["error_code"], 42202);
  EXPECT_EQ(Call("GET", "/schemas/ids/77").body["error_code"], 40403);
  EXPECT_EQ(Call("POST", "/subjects/orders-value", Schema(kNoDefault)).body["error_code"], 40403);
  const Reply bad = Call("POST", "/subjects/x/versions", Schema("{\"type\":\"nope\"}"));
  EXPECT_EQ(bad.status, 422);
  EXPECT_EQ(bad.body["error_code"], 42201);
  // Durable.
  Reopen();
  EXPECT_EQ(Call("GET", "/subjects/orders-value/versions").body, json({1, 2}));
  EXPECT_EQ(Call("POST", "/subjects/new/versions", Schema(kNoDefault)).body, json({{"id", 3}}));
}

TEST_F(RegistryTest, CompatibilityLevelsDecideWhatRegisters) {
  ASSERT_EQ(Call("POST", "/subjects/s/versions", Schema(kV1)).status, 200);
  const Reply refused = Call("POST", "/subjects/s/versions", Schema(kNoDefault));
  EXPECT_EQ(refused.status, 409);
  EXPECT_NE(refused.body["message"].get<std::string>().find("qty"), std::string::npos);
  EXPECT_EQ(Call("POST", "/compatibility/subjects/s/versions/latest", Schema(kV2)).body,
            json({{"is_compatible", true}}));
  EXPECT_EQ(
      Call("POST", "/compatibility/subjects/s/versions/latest?verbose=true", Schema(kNoDefault))
          .body["is_compatible"],
      false);
  EXPECT_EQ(Call("GET", "/config").body, json({{"compatibilityLevel", "BACKWARD"}}));
  EXPECT_EQ(Call("GET", "/config/s").body["error_code"], 40408);
  EXPECT_EQ(Call("PUT", "/config/s", {{"compatibility", "NONE"}}).body,
            json({{"compatibility", "NONE"}}));
  EXPECT_EQ(Call("PUT", "/config/s", {{"compatibility", "SIDEWAYS"}}).body["error_code"], 42203);
  EXPECT_EQ(Call("POST", "/subjects/s/versions", Schema(kNoDefault)).status, 200);
  EXPECT_EQ(Call("DELETE", "/config/s").body, json({{"compatibilityLevel", "NONE"}}));
  // FORWARD: the old schema must read the new one's data.
  ASSERT_EQ(Call("PUT", "/config", {{"compatibility", "FORWARD"}}).status, 200);
  ASSERT_EQ(Call("POST", "/subjects/f/versions", Schema(kV1)).status, 200);
  EXPECT_EQ(Call("POST", "/subjects/f/versions", Schema(kV2)).status, 409);  // int cannot read long
}

TEST_F(RegistryTest, SoftDeletesComeBeforeHardOnes) {
  ASSERT_EQ(Call("POST", "/subjects/s/versions", Schema(kV1)).status, 200);
  ASSERT_EQ(Call("POST", "/subjects/s/versions", Schema(kV2)).status, 200);
  EXPECT_EQ(Call("DELETE", "/subjects/s/versions/1?permanent=true").body["error_code"], 40407);
  EXPECT_EQ(Call("DELETE", "/subjects/s/versions/1").body, 1);
  EXPECT_EQ(Call("GET", "/subjects/s/versions").body, json({2}));
  EXPECT_EQ(Call("GET", "/subjects/s/versions?deleted=true").body, json({1, 2}));
  EXPECT_EQ(Call("DELETE", "/subjects/s?permanent=true").body["error_code"], 40405);
  EXPECT_EQ(Call("DELETE", "/subjects/s").body, json({2}));
  EXPECT_EQ(Call("GET", "/subjects").body, json::array());
  EXPECT_EQ(Call("DELETE", "/subjects/s").body["error_code"], 40404);
  EXPECT_EQ(Call("DELETE", "/subjects/s?permanent=true").body, json({1, 2}));
  EXPECT_EQ(Call("GET", "/subjects?deleted=true").body, json::array());
  // Ids stay: a schema registered again keeps its id.
  EXPECT_EQ(Call("POST", "/subjects/s/versions", Schema(kV2)).body, json({{"id", 2}}));
  EXPECT_EQ(Call("GET", "/schemas/ids/1").status, 200);
}

// One table's subject, "t-value": its versions are the table's, and Evolve appends the schema the
// table would then have (the registered one, renamed as the table's rows are).
class FakeTables final : public TableSubjects {
 public:
  std::vector<std::string> List() override { return {"t-value"}; }
  std::optional<std::vector<std::string>> Versions(const std::string& subject) override {
    if (subject != "t-value") return std::nullopt;
    return versions;
  }
  Status Evolve(const std::string&, const std::string& avro,
                const std::function<Status(const std::string&)>& accept) override {
    const std::string after = refuse_with.empty() ? avro : refuse_with;
    RETURN_NOT_OK(accept(after));
    versions.push_back(after);
    return Status::OK();
  }
  std::vector<std::string> versions = {
      R"({"type":"record","name":"row","fields":[{"name":"id","type":"long"}]})"};
  std::string refuse_with;  // what the table would become instead, when set
};

TEST_F(RegistryTest, ATablesSubjectIsItsVersions) {
  FakeTables tables;
  tables_ = &tables;
  Reopen();
  EXPECT_EQ(Call("GET", "/subjects").body, json::array({"t-value"}));
  const Reply first = Call("GET", "/subjects/t-value/versions/1");
  ASSERT_EQ(first.status, 200) << first.body.dump();
  // A schema that encodes the same (another record name, defaults) is version 1.
  const std::string named = R"({"type":"record","name":"User","namespace":"app","fields":[)"
                            R"({"name":"id","type":"long","default":0}]})";
  EXPECT_EQ(Call("POST", "/subjects/t-value/versions", Schema(named)).body["id"], first.body["id"]);
  EXPECT_EQ(Call("POST", "/subjects/t-value", Schema(named)).body["version"], 1);
  // A new one evolves the table, and is then its version 2.
  const std::string v2 = R"({"type":"record","name":"User","fields":[{"name":"id","type":"long"},)"
                         R"({"name":"n","type":["null","string"],"default":null}]})";
  const Reply added = Call("POST", "/subjects/t-value/versions", Schema(v2));
  ASSERT_EQ(added.status, 200) << added.body.dump();
  EXPECT_EQ(tables.versions.size(), 2u);
  EXPECT_EQ(Call("GET", "/subjects/t-value/versions").body, json::array({1, 2}));
  EXPECT_EQ(Call("GET", "/subjects/t-value/versions/2").body["id"], added.body["id"]);
  // A table that would encode otherwise refuses, and so does BACKWARD; versions stay.
  tables.refuse_with =
      R"({"type":"record","name":"row","fields":[{"name":"id","type":"long"},)"
      R"({"name":"n","type":["null","string"]},{"name":"m","type":["null","int"]}]})";
  const std::string v3 = R"({"type":"record","name":"row","fields":[{"name":"id","type":"long"},)"
                         R"({"name":"m","type":["null","int"],"default":null},)"
                         R"({"name":"n","type":["null","string"],"default":null}]})";
  EXPECT_EQ(Call("POST", "/subjects/t-value/versions", Schema(v3)).status, 409);
  EXPECT_EQ(tables.versions.size(), 2u);
  EXPECT_EQ(Call("DELETE", "/subjects/t-value").body["error_code"], 42205);
  EXPECT_EQ(Call("DELETE", "/subjects/t-value/versions/1").body["error_code"], 42205);
  // A version the table gains elsewhere (an alter) is the subject's at the next request, and
  // the ids given stay across a restart.
  tables.versions.push_back(tables.refuse_with);
  EXPECT_EQ(Call("GET", "/subjects/t-value/versions").body, json::array({1, 2, 3}));
  const json ids = {first.body["id"], added.body["id"],
                    Call("GET", "/subjects/t-value/versions/3").body["id"]};
  Reopen();
  EXPECT_EQ(registry_->Intern(tables.versions[2]).ValueOrDie(), ids[2].get<int64_t>());
  EXPECT_EQ(Call("GET", "/subjects/t-value/versions/1").body["id"], ids[0]);
  tables_ = nullptr;
}

// A store two registries share, as a cluster's servers share theirs (in ZooKeeper).
class SharedStore final : public RegistryStore {
 public:
  Result<Document> Read() override { return document; }
  Result<int64_t> Write(const std::string& data, int64_t version) override {
    if (before_write) std::exchange(before_write, nullptr)();  // another server gets in first
    if (version != document.version) return Status::Aborted("the document changed");
    document = {data, document.version + 1};
    return document.version;
  }
  bool shared() const override { return true; }

  Document document;
  std::function<void()> before_write;
};

TEST(SharedRegistryTest, ServersSharingAStoreSeeEachOthersChangesAndLoseNone) {
  SharedStore store;
  auto a = Registry::Open(&store, nullptr).ValueOrDie();
  auto b = Registry::Open(&store, nullptr).ValueOrDie();
  const Service service_b(b.get(), RegistryOptions{});
  auto post = [](const Service& service, const std::string& subject, const std::string& schema) {
    http::Request request;
    request.method = "POST";
    request.path = "/subjects/" + subject + "/versions";
    request.body = json{{"schema", schema}}.dump();
    const http::Response response = service.Handle(request);
    return std::make_pair(response.status, json::parse(response.body));
  };
  const int64_t first = a->Register("x-value", {{"schema", kV1}}).body["id"].get<int64_t>();
  EXPECT_EQ(b->GetVersion("x-value", "1", false, false).body["id"], first);  // b reads a's
  // a registers y while b is writing z: b's write loses, b registers z again on a's state.
  store.before_write = [&] { EXPECT_EQ(a->Register("y-value", {{"schema", kV2}}).status, 200); };
  const auto [status, body] = post(service_b, "z-value", kNoDefault);
  ASSERT_EQ(status, 200) << body.dump();
  std::set<int64_t> ids;
  for (const std::string subject : {"x-value", "y-value", "z-value"}) {
    const Reply version = a->GetVersion(subject, "latest", false, false);
    ASSERT_EQ(version.status, 200) << subject << ": " << version.body.dump();
    ids.insert(version.body["id"].get<int64_t>());
  }
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(b->ListSubjects(false).body, json::array({"x-value", "y-value", "z-value"}));
  EXPECT_EQ(a->Intern(kNoDefault).ValueOrDie(), body["id"].get<int64_t>());
}

}  // namespace
}  // namespace oxbow::registry::internal
