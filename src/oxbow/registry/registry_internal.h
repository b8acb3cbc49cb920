// The registry's state and rules (Registry) and its REST routes (Service), apart from HTTP so
// that tests and the fuzzer call them directly.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "oxbow/common/file_system.h"
#include "oxbow/registry/avro_schema_internal.h"
#include "oxbow/registry/registry.h"

namespace oxbow::registry::internal {

enum class Compatibility {
  kNone,
  kBackward,
  kBackwardTransitive,
  kForward,
  kForwardTransitive,
  kFull,
  kFullTransitive
};
std::optional<Compatibility> ParseCompatibility(std::string_view name);
std::string CompatibilityName(Compatibility level);

// An answer: the HTTP status and the JSON body (for errors Confluent's {"error_code",
// "message"}, the status being the code's first three digits).
struct Reply {
  int status = 200;
  nlohmann::json body;
  // A change refused because another server changed the store first: the request may be made
  // again (Service does, a few times).
  bool conflict = false;
};
Reply Error(int error_code, const std::string& message);
// 50001 for a store that could not be read or written (a conflict when another writer won).
Reply SaveFailed(const Status& status);
// How often a change is tried when other servers keep changing the store first.
inline constexpr int kWriteAttempts = 16;

// Subjects and their versions, schemas by id, compatibility levels; durable in
// <dir>/registry.json, rewritten atomically after every change (docs/schema-registry.md).
class Registry {
 public:
  // The state in <dir>/registry.json. `tables` may be null (no subject is a table's); it must
  // outlive the registry.
  static Result<std::unique_ptr<Registry>> Open(std::shared_ptr<FileSystem> fs, std::string dir,
                                                TableSubjects* tables = nullptr);
  // The state in `store`, which must outlive the registry.
  static Result<std::unique_ptr<Registry>> Open(RegistryStore* store, TableSubjects* tables);

  // A version: "latest", or a number from 1 (Confluent also takes -1 for latest).
  Reply Register(const std::string& subject, const nlohmann::json& request);
  Reply Lookup(const std::string& subject, const nlohmann::json& request, bool deleted);
  Reply GetVersion(const std::string& subject, const std::string& version, bool deleted,
                   bool schema_only);
  Reply ListVersions(const std::string& subject, bool deleted);
  Reply ListSubjects(bool deleted);
  Reply GetSchema(int64_t id, const std::string& what);  // what: "", "versions" or "subjects"
  Reply DeleteSubject(const std::string& subject, bool permanent);
  Reply DeleteVersion(const std::string& subject, const std::string& version, bool permanent);
  Reply CheckCompatibility(const std::string& subject, const std::string& version,
                           const nlohmann::json& request, bool verbose);
  // subject "": the global level.
  Reply GetConfig(const std::string& subject, bool default_to_global);
  Reply SetConfig(const std::string& subject, const nlohmann::json& request);
  Reply DeleteConfig(const std::string& subject);
  // The id of the schema `avro` (JSON), registered durably when new; Invalid when it is no Avro
  // schema, IOError when it cannot be saved.
  Result<int64_t> Intern(const std::string& avro);

 private:
  struct Version {
    int32_t version = 0;
    int64_t id = 0;
    bool deleted = false;
    bool operator==(const Version&) const = default;
  };
  struct Subject {
    std::vector<Version> versions;  // ascending
    std::optional<Compatibility> compatibility;
  };

  Registry(RegistryStore* store, TableSubjects* tables) : store_(store), tables_(tables) {}
  // The state held made the store's (when stale, or when others share the store and changed
  // it). Requires mu_, as do the members below.
  Status Refresh();
  std::optional<Reply> RefreshFailed();  // Refresh's failure as the reply
  Status Load(const std::string& data);
  // Writes the state held over the version it came from; on failure (Aborted: another writer
  // was first) the state is stale.
  Status Save();
  // The id of a schema held, 0 when none has its canonical form; requires mu_.
  int64_t IdOfCanonical(const std::string& canonical) const;
  // The subject's versions made those of its table (ids given to new schemas, saved) when `name`
  // is a table's subject; false otherwise.
  Result<bool> SyncTable(const std::string& name);
  Status SyncTables();  // every table's subject
  // The schema as a table subject's are compared: its record named as the table's rows'.
  static AvroSchema AsTableRows(const AvroSchema& schema);
  Reply RegisterInTable(const std::string& name, const AvroSchema& schema,
                        std::unique_lock<std::mutex>& lock);
  // The parsed schema of a request body {"schema": "...", "schemaType"?}, or the error reply.
  static std::variant<AvroSchema, Reply> SchemaOf(const nlohmann::json& request);
  // The subject's versions (live ones, or all with `deleted`); 40401 when it has none.
  std::variant<Subject*, Reply> FindSubject(const std::string& subject, bool deleted);
  // The version named, of those FindSubject gives; 40402 or 42202 otherwise.
  static std::variant<Version*, Reply> FindVersion(Subject& subject, const std::string& version,
                                                   const std::string& name, bool deleted);
  Compatibility LevelOf(const std::string& subject) const;
  // What `level` finds wrong with `schema` against the subject's live `versions`: the newest
  // only, or with `every` (a transitive level; a check of a whole subject) each of them.
  std::vector<std::string> Incompatibilities(const AvroSchema& schema,
                                             const std::vector<Version>& versions,
                                             Compatibility level, bool every) const;
  nlohmann::json VersionJson(const std::string& subject, const Version& version) const;

  std::unique_ptr<RegistryStore> own_store_;  // the file store of Open(fs, dir)
  RegistryStore* const store_;
  TableSubjects* const tables_;
  mutable std::mutex mu_;
  int64_t version_ = -1;  // the store's version the state held came from
  bool stale_ = true;     // read the store before using the state held
  int64_t next_id_ = 1;
  std::map<int64_t, AvroSchema> schemas_;  // by id
  std::map<std::string, Subject> subjects_;
  Compatibility compatibility_ = Compatibility::kBackward;
};

// The REST routes over a Registry, with the logins of RegistryOptions.
class Service {
 public:
  Service(Registry* registry, const RegistryOptions& options)
      : registry_(registry),
        authenticator_(options.authenticator),
        table_of_subject_(options.table_of_subject) {}
  http::Response Handle(const http::Request& request) const;

 private:
  Reply Route(const http::Request& request) const;
  // nullopt when the request's user may do this; the error reply otherwise.
  std::optional<Reply> Refuse(const http::Request& request, const std::string& subject,
                              bool change) const;

  Registry* const registry_;
  auth::Authenticator* const authenticator_;
  const std::function<std::optional<std::string>(std::string_view)> table_of_subject_;
};

}  // namespace oxbow::registry::internal
