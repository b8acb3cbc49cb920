#include <spdlog/spdlog.h>

#include <algorithm>

#include "oxbow/common/parse.h"
#include "oxbow/registry/registry_internal.h"

namespace oxbow::registry::internal {
namespace {

using json = nlohmann::json;

constexpr char kStateFile[] = "registry.json";
// The record name of a table's rows (kafka::AvroSchemaOf).
constexpr char kTableRecord[] = "row";
constexpr std::pair<Compatibility, const char*> kLevels[] = {
    {Compatibility::kNone, "NONE"},
    {Compatibility::kBackward, "BACKWARD"},
    {Compatibility::kBackwardTransitive, "BACKWARD_TRANSITIVE"},
    {Compatibility::kForward, "FORWARD"},
    {Compatibility::kForwardTransitive, "FORWARD_TRANSITIVE"},
    {Compatibility::kFull, "FULL"},
    {Compatibility::kFullTransitive, "FULL_TRANSITIVE"}};

bool Transitive(Compatibility level) {
  return level == Compatibility::kBackwardTransitive ||
         level == Compatibility::kForwardTransitive || level == Compatibility::kFullTransitive;
}
bool Backward(Compatibility level) {
  return level == Compatibility::kBackward || level == Compatibility::kBackwardTransitive ||
         level == Compatibility::kFull || level == Compatibility::kFullTransitive;
}
bool Forward(Compatibility level) {
  return level == Compatibility::kForward || level == Compatibility::kForwardTransitive ||
         level == Compatibility::kFull || level == Compatibility::kFullTransitive;
}

Reply TableSubjectDeleted(const std::string& name) {
  return Error(42205, "Operation not permitted: subject '" + name +
                          "' holds the schemas of a table; dropping its topic drops them");
}

}  // namespace

std::optional<Compatibility> ParseCompatibility(std::string_view name) {
  for (const auto& [level, level_name] : kLevels) {
    if (name == level_name) return level;
  }
  return std::nullopt;
}

std::string CompatibilityName(Compatibility level) {
  for (const auto& [l, name] : kLevels) {
    if (l == level) return name;
  }
  return "NONE";
}

Reply Error(int error_code, const std::string& message) {
  int status = error_code;
  while (status >= 1000) status /= 10;
  return {status, json{{"error_code", error_code}, {"message", message}}};
}

Reply SaveFailed(const Status& status) {
  Reply reply = Error(50001, "Error in the backend data store: " + status.message());
  reply.conflict = status.code() == StatusCode::kAborted;
  return reply;
}

namespace {

// registry.json in a directory: the store of one server (embedded mode).
class FileStore final : public RegistryStore {
 public:
  FileStore(std::shared_ptr<FileSystem> fs, std::string dir)
      : fs_(std::move(fs)), dir_(std::move(dir)) {}

  Result<Document> Read() override {
    const std::string path = JoinPath(dir_, kStateFile);
    if (fs_->FileSize(path).status().IsNotFound()) return Document{};
    ASSIGN_OR_RAISE(auto buffer, ReadWholeFile(*fs_, path));
    version_ = std::max<int64_t>(version_, 0);
    return Document{std::string(reinterpret_cast<const char*>(buffer->data()),
                                static_cast<size_t>(buffer->size())),
                    version_};
  }
  Result<int64_t> Write(const std::string& data, int64_t version) override {
    if (version != version_) return Status::Aborted(dir_ + "/" + kStateFile + " changed");
    RETURN_NOT_OK(WriteFileAtomically(*fs_, dir_, kStateFile, data));
    return ++version_;
  }
  bool shared() const override { return false; }

 private:
  const std::shared_ptr<FileSystem> fs_;
  const std::string dir_;
  int64_t version_ = -1;  // -1 until the file exists
};

}  // namespace

Result<std::unique_ptr<Registry>> Registry::Open(std::shared_ptr<FileSystem> fs, std::string dir,
                                                 TableSubjects* tables) {
  RETURN_NOT_OK(fs->CreateDirs(dir));
  auto store = std::make_unique<FileStore>(std::move(fs), std::move(dir));
  std::unique_ptr<Registry> registry(new Registry(store.get(), tables));
  registry->own_store_ = std::move(store);
  RETURN_NOT_OK(registry->Refresh());
  return registry;
}

Result<std::unique_ptr<Registry>> Registry::Open(RegistryStore* store, TableSubjects* tables) {
  std::unique_ptr<Registry> registry(new Registry(store, tables));
  RETURN_NOT_OK(registry->Refresh());
  return registry;
}

Status Registry::Refresh() {
  if (!stale_ && !store_->shared()) return Status::OK();
  ASSIGN_OR_RAISE(RegistryStore::Document doc, store_->Read());
  if (!stale_ && doc.version == version_) return Status::OK();
  RETURN_NOT_OK(Load(doc.data));
  version_ = doc.version;
  stale_ = false;
  return Status::OK();
}

std::optional<Reply> Registry::RefreshFailed() {
  if (Status st = Refresh(); !st.ok()) return SaveFailed(st);
  return std::nullopt;
}

// The document: {"next_id", "compatibility", "schemas": [{"id", "schema"}], "subjects":
// [{"name", "compatibility" (or null), "versions": [[version, id, deleted]]}]}.
Status Registry::Load(const std::string& data) {
  int64_t next_id = 1;
  Compatibility compatibility = Compatibility::kBackward;
  std::map<int64_t, AvroSchema> schemas;
  std::map<std::string, Subject> subjects;
  if (!data.empty()) {
    const json doc = json::parse(data, nullptr, /*allow_exceptions=*/false);
    try {
      next_id = doc.at("next_id").get<int64_t>();
      auto level = ParseCompatibility(doc.at("compatibility").get<std::string>());
      if (!level) return Status::Corruption("the schema registry: unknown compatibility level");
      compatibility = *level;
      for (const json& s : doc.at("schemas")) {
        ASSIGN_OR_RAISE(AvroSchema schema, AvroSchema::Parse(s.at("schema").get<std::string>()));
        schemas.emplace(s.at("id").get<int64_t>(), std::move(schema));
      }
      for (const json& s : doc.at("subjects")) {
        Subject& subject = subjects[s.at("name").get<std::string>()];
        if (!s.at("compatibility").is_null()) {
          subject.compatibility = ParseCompatibility(s["compatibility"].get<std::string>());
        }
        for (const json& v : s.at("versions")) {
          subject.versions.push_back(
              {v.at(0).get<int32_t>(), v.at(1).get<int64_t>(), v.at(2).get<bool>()});
        }
      }
    } catch (const std::exception& e) {
      return Status::Corruption(std::string("the schema registry's ") + kStateFile + ": " +
                                e.what());
    }
  }
  next_id_ = next_id;
  compatibility_ = compatibility;
  schemas_ = std::move(schemas);
  subjects_ = std::move(subjects);
  return Status::OK();
}

Status Registry::Save() {
  json schemas = json::array(), subjects = json::array();
  for (const auto& [id, schema] : schemas_) {
    schemas.push_back({{"id", id}, {"schema", schema.canonical()}});
  }
  for (const auto& [name, subject] : subjects_) {
    json versions = json::array();
    for (const Version& v : subject.versions) versions.push_back({v.version, v.id, v.deleted});
    subjects.push_back(
        {{"name", name},
         {"compatibility",
          subject.compatibility ? json(CompatibilityName(*subject.compatibility)) : json(nullptr)},
         {"versions", std::move(versions)}});
  }
  const json doc = {{"next_id", next_id_},
                    {"compatibility", CompatibilityName(compatibility_)},
                    {"schemas", std::move(schemas)},
                    {"subjects", std::move(subjects)}};
  auto written = store_->Write(doc.dump(), version_);
  if (!written.ok()) {
    stale_ = true;  // what is held may be ahead of the store, or behind it: read it again
    return written.status();
  }
  version_ = *written;
  return Status::OK();
}

int64_t Registry::IdOfCanonical(const std::string& canonical) const {
  for (const auto& [id, schema] : schemas_) {
    if (schema.canonical() == canonical) return id;
  }
  return 0;
}

Result<int64_t> Registry::Intern(const std::string& avro) {
  ASSIGN_OR_RAISE(const AvroSchema schema, AvroSchema::Parse(avro));
  std::lock_guard lock(mu_);
  for (int attempt = 1;; ++attempt) {
    // A schema held is stored, with its id, for good (a failed write makes all held stale).
    if (!stale_) {
      if (int64_t id = IdOfCanonical(schema.canonical()); id != 0) return id;
    }
    RETURN_NOT_OK(Refresh().WithContext("the schema registry"));
    int64_t id = IdOfCanonical(schema.canonical());
    if (id != 0) return id;
    id = next_id_++;
    schemas_.emplace(id, schema);
    Status saved = Save();
    if (saved.ok()) return id;
    if (saved.code() != StatusCode::kAborted || attempt == kWriteAttempts) {
      return saved.WithContext("the schema registry");
    }
  }
}

Result<bool> Registry::SyncTable(const std::string& name) {
  if (tables_ == nullptr) return false;
  const auto texts = tables_->Versions(name);
  if (!texts) return false;
  std::vector<Version> versions;
  for (const std::string& text : *texts) {
    auto schema = AvroSchema::Parse(text);
    if (!schema.ok()) {
      spdlog::error("schema registry: subject '{}': {}", name, schema.status().message());
      continue;
    }
    int64_t id = IdOfCanonical(schema->canonical());
    if (id == 0) {
      id = next_id_++;
      schemas_.emplace(id, std::move(schema).ValueOrDie());
    }
    if (!versions.empty() && versions.back().id == id) continue;  // e.g. a doc changed
    versions.push_back({static_cast<int32_t>(versions.size() + 1), id, false});
  }
  Subject& subject = subjects_[name];
  if (subject.versions != versions) {
    subject.versions = std::move(versions);
    RETURN_NOT_OK(Save());  // failed: stale, and read again by the next request
  }
  return true;
}

Status Registry::SyncTables() {
  if (tables_ == nullptr) return Status::OK();
  for (const std::string& name : tables_->List()) RETURN_NOT_OK(SyncTable(name).status());
  return Status::OK();
}

AvroSchema Registry::AsTableRows(const AvroSchema& schema) {
  auto renamed = schema.Renamed(kTableRecord);
  return renamed.ok() ? std::move(renamed).ValueOrDie() : schema;
}

std::variant<AvroSchema, Reply> Registry::SchemaOf(const json& request) {
  if (!request.is_object() || !request.contains("schema") || !request["schema"].is_string()) {
    return Error(42201, "Invalid schema: the body needs \"schema\", the schema as a string");
  }
  if (request.contains("schemaType") && request["schemaType"] != "AVRO") {
    return Error(42201, "Invalid schema: schema type " + request["schemaType"].dump() +
                            " is not served (AVRO only)");
  }
  if (request.contains("references") && !request["references"].empty()) {
    return Error(42201, "Invalid schema: schema references are not served");
  }
  auto parsed = AvroSchema::Parse(request["schema"].get<std::string>());
  if (!parsed.ok()) return Error(42201, "Invalid schema: " + parsed.status().message());
  return std::move(parsed).ValueOrDie();
}

std::variant<Registry::Subject*, Reply> Registry::FindSubject(const std::string& name,
                                                              bool deleted) {
  auto it = subjects_.find(name);
  if (it == subjects_.end() ||
      std::none_of(it->second.versions.begin(), it->second.versions.end(),
                   [&](const Version& v) { return deleted || !v.deleted; })) {
    return Error(40401, "Subject '" + name + "' not found.");
  }
  return &it->second;
}

std::variant<Registry::Version*, Reply> Registry::FindVersion(Subject& subject,
                                                              const std::string& version,
                                                              const std::string& name,
                                                              bool deleted) {
  std::vector<Version*> candidates;
  for (Version& v : subject.versions) {
    if (deleted || !v.deleted) candidates.push_back(&v);
  }
  if (version == "latest" || version == "-1") {
    if (candidates.empty()) return Error(40402, "Version latest not found.");
    return candidates.back();
  }
  auto number = ParseInt32(version);
  if (!number.ok() || *number < 1) {
    return Error(42202, "The specified version '" + version +
                            "' is not a valid version id. Allowed values are between [1, "
                            "2^31-1] and the string \"latest\"");
  }
  for (Version* v : candidates) {
    if (v->version == *number) return v;
  }
  return Error(40402, "Version " + version + " of subject '" + name + "' not found.");
}

Compatibility Registry::LevelOf(const std::string& subject) const {
  auto it = subjects_.find(subject);
  return it != subjects_.end() && it->second.compatibility ? *it->second.compatibility
                                                           : compatibility_;
}

std::vector<std::string> Registry::Incompatibilities(const AvroSchema& schema,
                                                     const std::vector<Version>& versions,
                                                     Compatibility level, bool every) const {
  std::vector<std::string> problems;
  if (level == Compatibility::kNone) return problems;
  for (auto it = versions.rbegin(); it != versions.rend(); ++it) {
    if (it->deleted) continue;
    const AvroSchema& earlier = schemas_.at(it->id);
    const std::string which = "version " + std::to_string(it->version);
    if (Backward(level)) {
      for (auto& p : ReadProblems(schema, earlier)) {
        problems.push_back("reading " + which + "'s data: " + p);
      }
    }
    if (Forward(level)) {
      for (auto& p : ReadProblems(earlier, schema)) {
        problems.push_back(which + " reading the new schema's data: " + p);
      }
    }
    if (!every) break;
  }
  return problems;
}

json Registry::VersionJson(const std::string& subject, const Version& version) const {
  return {{"subject", subject},
          {"version", version.version},
          {"id", version.id},
          {"schema", schemas_.at(version.id).canonical()}};
}

Reply Registry::Register(const std::string& name, const json& request) {
  auto parsed = SchemaOf(request);
  if (auto* error = std::get_if<Reply>(&parsed)) return *error;
  const AvroSchema& schema = std::get<AvroSchema>(parsed);
  std::unique_lock lock(mu_);
  if (auto failed = RefreshFailed()) return *failed;
  auto table = SyncTable(name);
  if (!table.ok()) return SaveFailed(table.status());
  if (*table) return RegisterInTable(name, schema, lock);
  // The subject is made only once the version is: a refused schema leaves no empty one behind.
  const auto existing_subject = subjects_.find(name);
  const std::vector<Version> no_versions;
  const std::vector<Version>& versions =
      existing_subject == subjects_.end() ? no_versions : existing_subject->second.versions;
  for (const Version& v : versions) {
    if (!v.deleted && schemas_.at(v.id).canonical() == schema.canonical()) {
      return {200, {{"id", v.id}}};
    }
  }
  const Compatibility level = LevelOf(name);
  auto problems = Incompatibilities(schema, versions, level, Transitive(level));
  if (!problems.empty()) {
    return Error(409,
                 "Schema being registered is incompatible with an earlier schema for "
                 "subject \"" +
                     name + "\", details: " + json(problems).dump());
  }
  int64_t id = IdOfCanonical(schema.canonical());
  const bool new_schema = id == 0;
  if (new_schema) {
    id = next_id_++;
    schemas_.emplace(id, schema);
  }
  const int32_t version = versions.empty() ? 1 : versions.back().version + 1;
  Subject& subject = subjects_[name];
  subject.versions.push_back({version, id, false});
  if (Status saved = Save(); !saved.ok()) {
    subject.versions.pop_back();
    if (subject.versions.empty() && !subject.compatibility) subjects_.erase(name);
    if (new_schema) {
      schemas_.erase(id);
      --next_id_;
    }
    return SaveFailed(saved);
  }
  return {200, {{"id", id}}};
}

// A table's subject: a schema encoding as a version does is that version (whatever its names and
// defaults); a new one must pass the subject's compatibility level, then alters the table, and
// must then encode as the table's new version does (its fields the table's columns, in order).
Reply Registry::RegisterInTable(const std::string& name, const AvroSchema& schema,
                                std::unique_lock<std::mutex>& lock) {
  const AvroSchema rows = AsTableRows(schema);
  auto version_encoding = [&]() -> std::optional<int64_t> {
    const auto& versions = subjects_[name].versions;
    for (auto it = versions.rbegin(); it != versions.rend(); ++it) {
      if (schemas_.at(it->id).encoding() == rows.encoding()) return it->id;
    }
    return std::nullopt;
  };
  if (auto id = version_encoding()) return {200, {{"id", *id}}};
  const Compatibility level = LevelOf(name);
  auto problems = Incompatibilities(rows, subjects_[name].versions, level, Transitive(level));
  if (!problems.empty()) {
    return Error(409,
                 "Schema being registered is incompatible with an earlier schema for "
                 "subject \"" +
                     name + "\", details: " + json(problems).dump());
  }
  // Unlocked: the table's alter may take a while, and Kafka's requests ask for ids meanwhile.
  lock.unlock();
  const Status evolved =
      tables_->Evolve(name, rows.canonical(), [&](const std::string& after) -> Status {
        ASSIGN_OR_RAISE(AvroSchema altered, AvroSchema::Parse(after));
        if (altered.encoding() == rows.encoding()) return Status::OK();
        return Status::Invalid(
            "the table's rows would then be " + altered.canonical() +
            ", and datums of the schema registered are other bytes: its fields must be the "
            "table's columns in the table's order, nullable ones [\"null\", type]");
      });
  lock.lock();
  if (auto failed = RefreshFailed()) return *failed;
  if (!evolved.ok()) {
    return Error(409, "Schema being registered is incompatible with the table of subject \"" +
                          name + "\", details: " + json({evolved.message()}).dump());
  }
  if (auto synced = SyncTable(name); !synced.ok()) return SaveFailed(synced.status());
  if (auto id = version_encoding()) return {200, {{"id", *id}}};
  return Error(50001, "Error in the backend data store: the table of subject \"" + name +
                          "\" changed again while the schema was registered");
}

Reply Registry::Lookup(const std::string& name, const json& request, bool deleted) {
  auto parsed = SchemaOf(request);
  if (auto* error = std::get_if<Reply>(&parsed)) return *error;
  const AvroSchema& schema = std::get<AvroSchema>(parsed);
  std::lock_guard lock(mu_);
  if (auto failed = RefreshFailed()) return *failed;
  const auto synced = SyncTable(name);
  if (!synced.ok()) return SaveFailed(synced.status());
  const bool table = *synced;
  auto found = FindSubject(name, deleted);
  if (auto* error = std::get_if<Reply>(&found)) return *error;
  const Subject& subject = *std::get<Subject*>(found);
  for (auto it = subject.versions.rbegin(); it != subject.versions.rend(); ++it) {
    const AvroSchema& held = schemas_.at(it->id);
    const bool same =
        table ? held.encoding() == schema.encoding() : held.canonical() == schema.canonical();
    if ((deleted || !it->deleted) && same) return {200, VersionJson(name, *it)};
  }
  return Error(40403, "Schema not found");
}

Reply Registry::GetVersion(const std::string& name, const std::string& version, bool deleted,
                           bool schema_only) {
  std::lock_guard lock(mu_);
  if (auto failed = RefreshFailed()) return *failed;
  if (auto synced = SyncTable(name); !synced.ok()) return SaveFailed(synced.status());
  auto found = FindSubject(name, deleted);
  if (auto* error = std::get_if<Reply>(&found)) return *error;
  auto v = FindVersion(*std::get<Subject*>(found), version, name, deleted);
  if (auto* error = std::get_if<Reply>(&v)) return *error;
  const Version& got = *std::get<Version*>(v);
  if (schema_only) return {200, schemas_.at(got.id).root()};
  return {200, VersionJson(name, got)};
}

Reply Registry::ListVersions(const std::string& name, bool deleted) {
  std::lock_guard lock(mu_);
  if (auto failed = RefreshFailed()) return *failed;
  if (auto synced = SyncTable(name); !synced.ok()) return SaveFailed(synced.status());
  auto found = FindSubject(name, deleted);
  if (auto* error = std::get_if<Reply>(&found)) return *error;
  json versions = json::array();
  for (const Version& v : std::get<Subject*>(found)->versions) {
    if (deleted || !v.deleted) versions.push_back(v.version);
  }
  return {200, versions};
}

Reply Registry::ListSubjects(bool deleted) {
  std::lock_guard lock(mu_);
  if (auto failed = RefreshFailed()) return *failed;
  if (Status synced = SyncTables(); !synced.ok()) return SaveFailed(synced);
  json names = json::array();
  for (const auto& [name, subject] : subjects_) {
    if (std::any_of(subject.versions.begin(), subject.versions.end(),
                    [&](const Version& v) { return deleted || !v.deleted; })) {
      names.push_back(name);
    }
  }
  return {200, names};
}

Reply Registry::GetSchema(int64_t id, const std::string& what) {
  std::lock_guard lock(mu_);
  if (auto failed = RefreshFailed()) return *failed;
  auto schema = schemas_.find(id);
  if (schema == schemas_.end()) return Error(40403, "Schema " + std::to_string(id) + " not found");
  if (what.empty()) return {200, {{"schema", schema->second.canonical()}}};
  if (Status synced = SyncTables(); !synced.ok()) return SaveFailed(synced);
  json out = json::array();
  for (const auto& [name, subject] : subjects_) {
    for (const Version& v : subject.versions) {
      if (v.id != id || v.deleted) continue;
      if (what == "subjects") {
        out.push_back(name);
        break;
      }
      out.push_back({{"subject", name}, {"version", v.version}});
    }
  }
  return {200, out};
}

Reply Registry::DeleteSubject(const std::string& name, bool permanent) {
  std::lock_guard lock(mu_);
  if (auto failed = RefreshFailed()) return *failed;
  auto table = SyncTable(name);
  if (!table.ok()) return SaveFailed(table.status());
  if (*table) return TableSubjectDeleted(name);
  auto it = subjects_.find(name);
  if (it == subjects_.end() || it->second.versions.empty()) {
    return Error(40401, "Subject '" + name + "' not found.");
  }
  Subject& subject = it->second;
  const bool all_soft_deleted = std::all_of(subject.versions.begin(), subject.versions.end(),
                                            [](const Version& v) { return v.deleted; });
  json versions = json::array();
  if (permanent) {
    if (!all_soft_deleted) {
      return Error(40405,
                   "Subject '" + name + "' was not deleted first before being permanently deleted");
    }
    for (const Version& v : subject.versions) versions.push_back(v.version);
    const Subject removed = subject;
    subjects_.erase(it);
    if (Status saved = Save(); !saved.ok()) {
      subjects_[name] = removed;
      return SaveFailed(saved);
    }
    return {200, versions};
  }
  if (all_soft_deleted) {
    return Error(
        40404, "Subject '" + name + "' was soft deleted. Set permanent=true to delete permanently");
  }
  const Subject before = subject;
  for (Version& v : subject.versions) {
    if (!v.deleted) versions.push_back(v.version);
    v.deleted = true;
  }
  if (Status saved = Save(); !saved.ok()) {
    subject = before;
    return SaveFailed(saved);
  }
  return {200, versions};
}

Reply Registry::DeleteVersion(const std::string& name, const std::string& version, bool permanent) {
  std::lock_guard lock(mu_);
  if (auto failed = RefreshFailed()) return *failed;
  auto table = SyncTable(name);
  if (!table.ok()) return SaveFailed(table.status());
  if (*table) return TableSubjectDeleted(name);
  auto found = FindSubject(name, /*deleted=*/true);
  if (auto* error = std::get_if<Reply>(&found)) return *error;
  Subject& subject = *std::get<Subject*>(found);
  auto v = FindVersion(subject, version, name, /*deleted=*/permanent);
  if (auto* error = std::get_if<Reply>(&v)) return *error;
  Version& got = *std::get<Version*>(v);
  const Subject before = subject;
  const int32_t number = got.version;
  if (permanent) {
    if (!got.deleted) {
      return Error(40407, "Subject '" + name + "' Version " + std::to_string(number) +
                              " was not deleted first before being permanently deleted");
    }
    std::erase_if(subject.versions, [&](const Version& x) { return x.version == number; });
    if (subject.versions.empty() && !subject.compatibility) subjects_.erase(name);
  } else {
    got.deleted = true;
  }
  if (Status saved = Save(); !saved.ok()) {
    subjects_[name] = before;
    return SaveFailed(saved);
  }
  return {200, number};
}

Reply Registry::CheckCompatibility(const std::string& name, const std::string& version,
                                   const json& request, bool verbose) {
  auto parsed = SchemaOf(request);
  if (auto* error = std::get_if<Reply>(&parsed)) return *error;
  std::lock_guard lock(mu_);
  if (auto failed = RefreshFailed()) return *failed;
  const auto table = SyncTable(name);
  if (!table.ok()) return SaveFailed(table.status());
  const AvroSchema schema =
      *table ? AsTableRows(std::get<AvroSchema>(parsed)) : std::get<AvroSchema>(parsed);
  auto found = FindSubject(name, false);
  if (auto* error = std::get_if<Reply>(&found)) return *error;
  Subject& subject = *std::get<Subject*>(found);
  std::vector<Version> against = subject.versions;  // "": every version
  if (!version.empty()) {
    auto v = FindVersion(subject, version, name, false);
    if (auto* error = std::get_if<Reply>(&v)) return *error;
    against = {*std::get<Version*>(v)};
  }
  const auto problems = Incompatibilities(schema, against, LevelOf(name), /*every=*/true);
  json out = {{"is_compatible", problems.empty()}};
  if (verbose) out["messages"] = problems;
  return {200, out};
}

Reply Registry::GetConfig(const std::string& name, bool default_to_global) {
  std::lock_guard lock(mu_);
  if (auto failed = RefreshFailed()) return *failed;
  if (name.empty()) return {200, {{"compatibilityLevel", CompatibilityName(compatibility_)}}};
  auto it = subjects_.find(name);
  if (it != subjects_.end() && it->second.compatibility) {
    return {200, {{"compatibilityLevel", CompatibilityName(*it->second.compatibility)}}};
  }
  if (default_to_global) {
    return {200, {{"compatibilityLevel", CompatibilityName(compatibility_)}}};
  }
  return Error(40408,
               "Subject '" + name + "' does not have subject-level compatibility configured");
}

Reply Registry::SetConfig(const std::string& name, const json& request) {
  std::optional<Compatibility> level;
  if (request.is_object() && request.contains("compatibility") &&
      request["compatibility"].is_string()) {
    level = ParseCompatibility(request["compatibility"].get<std::string>());
  }
  if (!level) {
    return Error(42203,
                 "Invalid compatibility level. Valid values are none, backward, forward, "
                 "full, backward_transitive, forward_transitive, and full_transitive");
  }
  std::lock_guard lock(mu_);
  if (auto failed = RefreshFailed()) return *failed;
  const Compatibility global_before = compatibility_;
  const auto subjects_before = subjects_;
  if (name.empty()) {
    compatibility_ = *level;
  } else {
    subjects_[name].compatibility = *level;
  }
  if (Status saved = Save(); !saved.ok()) {
    compatibility_ = global_before;
    subjects_ = subjects_before;
    return SaveFailed(saved);
  }
  return {200, {{"compatibility", CompatibilityName(*level)}}};
}

Reply Registry::DeleteConfig(const std::string& name) {
  std::lock_guard lock(mu_);
  if (auto failed = RefreshFailed()) return *failed;
  auto it = subjects_.find(name);
  if (it == subjects_.end() || !it->second.compatibility) {
    return Error(40401, "Subject '" + name + "' not found.");
  }
  const Compatibility before = *it->second.compatibility;
  it->second.compatibility.reset();
  if (it->second.versions.empty()) subjects_.erase(it);
  if (Status saved = Save(); !saved.ok()) {
    subjects_[name].compatibility = before;
    return SaveFailed(saved);
  }
  return {200, {{"compatibilityLevel", CompatibilityName(before)}}};
}

}  // namespace oxbow::registry::internal
