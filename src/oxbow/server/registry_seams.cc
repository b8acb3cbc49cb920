#include "oxbow/server/registry_seams.h"

namespace oxbow::server {
namespace {

constexpr std::string_view kValueSuffix = "-value";
constexpr std::string_view kKeySuffix = "-key";

// The Avro schema of a primary-key table's key columns.
Result<std::string> KeySchema(const catalog::TableDescriptor& table) {
  std::vector<int> columns;
  for (const std::string& column : table.primary_key) {
    columns.push_back(table.schema->GetFieldIndex(column));
  }
  ASSIGN_OR_RAISE(auto key_schema, table.schema->Select(columns));
  return kafka::AvroSchemaOf(*key_schema);
}

}  // namespace

std::optional<std::pair<std::string, bool>> TopicOfSubject(std::string_view subject) {
  for (std::string_view suffix : {kValueSuffix, kKeySuffix}) {
    if (subject.ends_with(suffix)) {
      return std::make_pair(std::string(subject.substr(0, subject.size() - suffix.size())),
                            suffix == kKeySuffix);
    }
  }
  return std::nullopt;
}

std::vector<std::string> NodeTableSubjects::List() {
  std::vector<std::string> subjects;
  for (const catalog::TableDescriptor& table : node_->ListTables()) {
    if (!kafka::IsAvroConfluent(table)) continue;
    const std::string topic = kafka::TopicOf(table);
    subjects.push_back(topic + std::string(kValueSuffix));
    if (!table.primary_key.empty()) subjects.push_back(topic + std::string(kKeySuffix));
  }
  return subjects;
}

std::optional<std::pair<catalog::TableDescriptor, bool>> NodeTableSubjects::TableOf(
    const std::string& subject) {
  const auto named = TopicOfSubject(subject);
  if (!named) return std::nullopt;
  const auto& [topic, key] = *named;
  auto name = kafka::TableForTopic(topic);
  if (!name.ok()) return std::nullopt;
  auto handle = node_->GetTable(*name);
  if (!handle.ok()) return std::nullopt;
  const catalog::TableDescriptor& table = handle->descriptor();
  if (!kafka::IsAvroConfluent(table) || kafka::TopicOf(table) != topic ||
      (key && table.primary_key.empty())) {
    return std::nullopt;
  }
  return std::make_pair(table, key);
}

std::optional<std::vector<std::string>> NodeTableSubjects::Versions(const std::string& subject) {
  auto found = TableOf(subject);
  if (!found) return std::nullopt;
  const auto& [table, key] = *found;
  std::vector<std::string> schemas;
  if (key) {
    if (auto schema = KeySchema(table); schema.ok()) schemas.push_back(std::move(*schema));
    return schemas;
  }
  std::vector<catalog::SchemaVersion> versions = table.previous_schemas;
  versions.push_back(table.CurrentSchema());
  for (const catalog::SchemaVersion& version : versions) {
    // A version without an Avro form (a column added through Flight) has no subject version.
    if (auto schema = kafka::AvroSchemaOf(*version.schema); schema.ok()) {
      schemas.push_back(std::move(*schema));
    }
  }
  return schemas;
}

Status NodeTableSubjects::Evolve(const std::string& subject, const std::string& avro,
                                 const std::function<Status(const std::string& after)>& accept) {
  auto found = TableOf(subject);
  if (!found) return Status::NotFound("subject '" + subject + "' is no table's");
  const auto& [table, key] = *found;
  if (key) {
    return Status::Invalid("the key columns of table " + Quote(table.name) + " cannot change");
  }
  ASSIGN_OR_RAISE(auto changes, kafka::ChangesToAvro(*table.schema, avro));
  ASSIGN_OR_RAISE(catalog::TableDescriptor altered, catalog::ApplyAlter(table, changes));
  ASSIGN_OR_RAISE(std::string after, kafka::AvroSchemaOf(*altered.schema));
  RETURN_NOT_OK(accept(after));
  if (changes.empty()) return Status::OK();  // the same columns: the current version
  return node_->AlterTable({table.name, std::move(changes)}).status();
}

Result<registry::RegistryStore::Document> ClusterRegistryStore::Read() {
  auto document = cluster_->ReadRegistryDocument();
  if (document.status().IsNotFound()) return Document{};
  RETURN_NOT_OK(document.status());
  return Document{std::move(document->first), document->second};
}

Result<int64_t> ClusterRegistryStore::Write(const std::string& data, int64_t version) {
  ASSIGN_OR_RAISE(int32_t written,
                  cluster_->WriteRegistryDocument(
                      data, version < 0 ? std::nullopt
                                        : std::optional<int32_t>(static_cast<int32_t>(version))));
  return written;
}

}  // namespace oxbow::server
