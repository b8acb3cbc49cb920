// The seam between the schema registry and the tables Kafka serves as avro-confluent topics
// (docs/schema-registry.md#tables-as-subjects): the registry's subjects of those tables come
// from the node's schema versions, and Kafka's framing ids from the registry.
#pragma once

#include <string>
#include <vector>

#include "oxbow/kafka/kafka.h"
#include "oxbow/node/node.h"
#include "oxbow/registry/registry.h"

namespace oxbow::server {

class NodeTableSubjects final : public registry::TableSubjects {
 public:
  explicit NodeTableSubjects(node::Node* node) : node_(node) {}
  std::vector<std::string> List() override;
  std::optional<std::vector<std::string>> Versions(const std::string& subject) override;
  Status Evolve(const std::string& subject, const std::string& avro,
                const std::function<Status(const std::string& after)>& accept) override;

 private:
  // The avro-confluent table of `subject`, and whether it names its key.
  std::optional<std::pair<catalog::TableDescriptor, bool>> TableOf(const std::string& subject);

  node::Node* const node_;
};

class RegistrySchemaIds final : public kafka::SchemaIds {
 public:
  explicit RegistrySchemaIds(registry::SchemaRegistryServer* registry) : registry_(registry) {}
  Result<int32_t> IdOf(const std::string& avro) override { return registry_->IdOf(avro); }

 private:
  registry::SchemaRegistryServer* const registry_;
};

}  // namespace oxbow::server
