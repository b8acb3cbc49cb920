// The schema registry's seams with the rest of the server: its subjects of the tables Kafka serves
// as avro-confluent topics come from the node's schema versions, Kafka's framing ids from the
// registry (docs/schema-registry.md#tables-as-subjects), and in cluster mode its state from
// ZooKeeper (docs/schema-registry.md#cluster-mode).
#pragma once

#include <string>
#include <vector>

#include "oxbow/cluster/cluster.h"
#include "oxbow/kafka/kafka.h"
#include "oxbow/node/node.h"
#include "oxbow/registry/registry.h"

namespace oxbow::server {

// The topic a subject names by Confluent's TopicNameStrategy ("<topic>-value", "<topic>-key")
// and whether it is the key's; nullopt for another subject.
std::optional<std::pair<std::string, bool>> TopicOfSubject(std::string_view subject);

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

// The registry's document in ZooKeeper, shared by every server of the cluster.
class ClusterRegistryStore final : public registry::RegistryStore {
 public:
  explicit ClusterRegistryStore(cluster::Cluster* cluster) : cluster_(cluster) {}
  Result<Document> Read() override;
  Result<int64_t> Write(const std::string& data, int64_t version) override;
  bool shared() const override { return true; }

 private:
  cluster::Cluster* const cluster_;
};

}  // namespace oxbow::server
