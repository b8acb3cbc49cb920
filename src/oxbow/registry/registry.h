// A schema registry inside oxbowd: Confluent's Schema Registry REST API (subjects, versions,
// schemas by id, compatibility checks and levels, soft and hard deletes) for Avro schemas, so
// that Kafka producers' and consumers' serializers (confluent-kafka's AvroSerializer, the Java
// KafkaAvroSerializer) and tools find their schemas in Oxbow (docs/schema-registry.md). HTTP
// (cpp-httplib) stays inside the http module.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/auth/auth.h"
#include "oxbow/http/http.h"

namespace oxbow::registry {
namespace internal {
class Registry;
}

// The subjects that are tables' (docs/schema-registry.md#tables-as-subjects): "<topic>-value" of a
// table with kafka.value.format=avro-confluent, and "<topic>-key" of such a primary-key table. A
// table's schema versions are its subject's versions, and registering a new one alters it.
class TableSubjects {
 public:
  virtual ~TableSubjects() = default;
  // The subjects of every such table now.
  virtual std::vector<std::string> List() = 0;
  // The Avro schemas (JSON) of the subject's table's versions, oldest first (its key's: one);
  // nullopt when `subject` is no table's.
  virtual std::optional<std::vector<std::string>> Versions(const std::string& subject) = 0;
  // Alters the subject's table so that its rows are the records of the Avro schema `avro`, once
  // `accept` approves the Avro schema (JSON) the table would then have; an error from it refuses.
  // Invalid naming why the table cannot change so (a key never can).
  virtual Status Evolve(const std::string& subject, const std::string& avro,
                        const std::function<Status(const std::string& after)>& accept) = 0;
};

// Where the registry keeps its state (docs/schema-registry.md#durability): one document, always
// replaced whole, at a version, so that servers sharing it (a cluster) never overwrite each
// other's changes.
class RegistryStore {
 public:
  virtual ~RegistryStore() = default;
  struct Document {
    std::string data;      // empty when none is stored yet
    int64_t version = -1;  // -1: none stored yet
  };
  virtual Result<Document> Read() = 0;
  // Replaces the document stored at `version` (-1: none yet) with `data`; the new version.
  // Aborted when another writer replaced it first.
  virtual Result<int64_t> Write(const std::string& data, int64_t version) = 0;
  // Whether other writers share it: then every request reads it again first.
  virtual bool shared() const = 0;
};

struct RegistryOptions {
  // host:port of the registry's HTTP listener; port 0 picks a free port. Default
  // "127.0.0.1:8081", Confluent's port.
  std::string listen = "127.0.0.1:8081";
  // Where the registry keeps its state (registry.json), unless `store` is set.
  std::string dir;
  // A store of its own (a cluster's, in ZooKeeper); must outlive the server. Default: none, the
  // file in `dir`.
  RegistryStore* store = nullptr;
  // Serve HTTPS (and require client certificates) from these PEM files. Default: plain HTTP.
  http::TlsOptions tls;
  // When set, every request must name a user ("Authorization: Basic base64(user:password)" or
  // "Bearer <token>" of the Flight handshake): reading needs a login, changing a subject
  // `admin` on its table (table_of_subject), anything else `admin` on every table. Must outlive
  // the server. Default: null, no users.
  auth::Authenticator* authenticator = nullptr;
  // The table a subject belongs to ("<topic>-value" and "<topic>-key": the topic's), for
  // grants; nullopt: none. Default: none.
  std::function<std::optional<std::string>(std::string_view subject)> table_of_subject;
  // The tables' subjects; must outlive the server. Default: null, no subject is a table's.
  TableSubjects* tables = nullptr;
};

class SchemaRegistryServer {
 public:
  // Loads the state (options.dir/registry.json, or options.store; absent: empty) and serves on
  // options.listen. Corruption naming the file when it does not parse; IOError when the address
  // cannot be bound.
  static Result<std::unique_ptr<SchemaRegistryServer>> Start(RegistryOptions options);
  ~SchemaRegistryServer();  // Stop()s
  SchemaRegistryServer(const SchemaRegistryServer&) = delete;
  SchemaRegistryServer& operator=(const SchemaRegistryServer&) = delete;

  int port() const { return listener_->port(); }
  // The id of the Avro schema `avro` (JSON), registered (durably) when new: what Kafka values of
  // avro-confluent tables are framed with. Invalid when it is no Avro schema.
  Result<int32_t> IdOf(const std::string& avro);
  // Stops accepting and waits for the requests in flight. Idempotent.
  void Stop();

 private:
  SchemaRegistryServer();
  std::unique_ptr<internal::Registry> registry_;
  std::unique_ptr<http::Listener> listener_;
};

}  // namespace oxbow::registry
