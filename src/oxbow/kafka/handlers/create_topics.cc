// CreateTopics: raw topics, one table each (a primary-key table for cleanup.policy=compact);
// their other configs are table properties (topic_configs_internal.h).
#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka::internal {

Result<msg::CreateTopicsResponse> Broker::CreateTopics(msg::CreateTopicsRequest& request,
                                                       RequestContext& ctx) {
  const Session& session = ctx.session;
  msg::CreateTopicsResponse response;
  for (const auto& t : request.topics) {
    msg::CreateTopicsResponse::CreatableTopicResult result;
    result.name = t.name;
    result.configs.emplace();  // Java's admin wants a list, also an empty one
    const int32_t partitions =
        t.num_partitions == -1 ? options_.default_partitions : t.num_partitions;
    catalog::TableDescriptor configured;  // the properties the configs ask for
    std::string config_error;
    bool compacted = false;
    for (const auto& c : t.configs) {
      compacted |= c.name == kCleanupPolicyConfig && c.value == kCompactPolicy;
      auto property = PropertyForConfig(c.name, c.value);
      if (!property.ok()) {
        config_error = property.status().message();
        break;
      }
      if (property->second) configured.properties[property->first] = *property->second;
    }
    if (!Allows(session, t.name, auth::Access::kAdmin)) {
      result.error_code = ErrorCode::kTopicAuthorizationFailed;
      result.error_message = "creating " + Quote(t.name) + " needs admin access to its table";
    } else if (partitions <= 0) {
      result.error_code = ErrorCode::kInvalidPartitions;
      result.error_message = "the number of partitions must be positive";
    } else if (t.replication_factor != -1 && t.replication_factor != 1 && !node_->cluster()) {
      result.error_code = ErrorCode::kInvalidReplicationFactor;
      result.error_message =
          "an embedded Oxbow keeps one copy of each partition: replication factor must be 1 "
          "(cluster mode replicates)";
    } else if (!t.assignments.empty()) {
      result.error_code = ErrorCode::kInvalidRequest;
      result.error_message = "manual replica assignments are not supported";
    } else if (!config_error.empty()) {
      result.error_code = ErrorCode::kInvalidConfig;
      result.error_message = std::move(config_error);
    } else if (auto table = TableForTopic(t.name); !table.ok()) {
      result.error_code = ErrorCode::kInvalidTopicException;
      result.error_message = table.status().message();
    } else if (request.validate_only) {
      if (node_->GetTable(*table).ok()) {
        result.error_code = ErrorCode::kTopicAlreadyExists;
        result.error_message = "topic " + Quote(t.name) + " already exists";
      }
    } else {
      auto [error, message] = CreateRawTopic(t.name, partitions, t.replication_factor,
                                             configured.properties, compacted);
      result.error_code = error;
      if (error != ErrorCode::kNone) result.error_message = std::move(message);
    }
    if (result.error_code == ErrorCode::kNone) {
      result.num_partitions = partitions;
      result.replication_factor = 1;
      if (compacted) configured.primary_key = {"key"};
      configured.schema = compacted ? RawCompactedTopicSchema() : RawTopicSchema();
      result.configs = CreatedTopicConfigs(configured);
      if (!request.validate_only) {
        auto table = GetTopicTable(t.name);
        if (table.ok()) {
          result.configs = CreatedTopicConfigs(table->descriptor());
          if (ctx.version() >= 7) {
            result.topic_id = TopicId(options_.server_secret, table->descriptor().table_id);
          }
          auto factor = cluster::ReplicationFactor(table->descriptor(), 1);
          if (factor.ok()) result.replication_factor = static_cast<int16_t>(*factor);
        }
      }
    }
    response.topics.push_back(std::move(result));
  }
  return response;
}

}  // namespace oxbow::kafka::internal
