// Metadata: the brokers (this node alone, or every server of the cluster) and the controller,
// and the topics the session may read with each partition's leader, replicas and ISR (named
// topics auto-created when the listener and the request allow it).
#include <spdlog/spdlog.h>

#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka::internal {
namespace {

constexpr char kClusterId[] = "oxbow";

msg::MetadataResponse::MetadataResponseTopic TopicError(ErrorCode error, const std::string& topic) {
  msg::MetadataResponse::MetadataResponseTopic t;
  t.error_code = error;
  t.name = topic;
  return t;
}

}  // namespace

Result<msg::MetadataResponse> Broker::Metadata(msg::MetadataRequest& request, RequestContext& ctx) {
  const Session& session = ctx.session;
  std::optional<std::vector<std::string>> topics;  // null: all topics
  if (request.topics && !(ctx.version() == 0 && request.topics->empty())) {
    topics.emplace();
    for (const auto& t : *request.topics) {
      if (!t.name) return Status::Invalid("metadata by topic id is not supported: name the topic");
      topics->push_back(*t.name);
    }
  }
  msg::MetadataResponse response;
  response.cluster_id = kClusterId;
  const auto cluster = node_->cluster() ? node_->cluster()->Metadata() : nullptr;
  if (cluster) {
    for (const auto& [id, server] : cluster->servers) {
      const size_t colon = server.kafka.rfind(':');
      if (colon == std::string::npos) continue;  // no Kafka listener
      response.brokers.push_back(
          {id, server.kafka.substr(0, colon), std::stoi(server.kafka.substr(colon + 1)),
           server.rack.empty() ? std::nullopt : std::optional<std::string>(server.rack)});
    }
    response.controller_id = cluster->controller;
  } else {
    response.brokers.push_back({kNodeId, host_, port_, std::nullopt});
    response.controller_id = kNodeId;
  }
  auto describe = [&](const catalog::TableDescriptor& table, std::string topic) {
    msg::MetadataResponse::MetadataResponseTopic t;
    t.name = std::move(topic);
    t.topic_id = TopicId(options_.server_secret, table.table_id);
    const cluster::TableMeta* meta = cluster ? cluster->FindTable(table.name) : nullptr;
    for (int32_t b = 0; b < table.buckets; ++b) {
      msg::MetadataResponse::MetadataResponsePartition p;
      p.partition_index = b;
      if (meta && b < static_cast<int32_t>(meta->states.size())) {
        const cluster::BucketState& state = meta->states[static_cast<size_t>(b)];
        p.leader_id = state.leader;
        p.leader_epoch = state.leader_epoch;
        p.replica_nodes = meta->replicas[static_cast<size_t>(b)];
        p.isr_nodes = state.isr;
        if (state.leader < 0) p.error_code = ErrorCode::kLeaderNotAvailable;
      } else if (cluster) {
        // A bucket just added, which the controller has not assigned yet.
        p.leader_id = -1;
        p.error_code = ErrorCode::kLeaderNotAvailable;
      } else {
        p.leader_id = kNodeId;
        p.leader_epoch = 0;
        p.replica_nodes = {kNodeId};
        p.isr_nodes = {kNodeId};
      }
      t.partitions.push_back(std::move(p));
    }
    return t;
  };
  if (!topics) {
    for (const auto& table : node_->ListTables()) {
      const std::string topic = TopicForTable(table);
      if (Allows(session, topic, auth::Access::kRead)) {
        response.topics.push_back(describe(table, topic));
      }
    }
    return response;
  }
  for (const std::string& topic : *topics) {
    if (!TableForTopic(topic).ok()) {
      response.topics.push_back(TopicError(ErrorCode::kInvalidTopicException, topic));
      continue;
    }
    if (!Allows(session, topic, auth::Access::kRead)) {
      response.topics.push_back(TopicError(ErrorCode::kTopicAuthorizationFailed, topic));
      continue;
    }
    auto found = GetTopicTable(topic);
    const bool create = found.status().IsNotFound() && request.allow_auto_topic_creation &&
                        options_.auto_create_topics;
    if (create && !Allows(session, topic, auth::Access::kAdmin)) {
      // As Kafka answers a missing topic the user may not create.
      response.topics.push_back(TopicError(ErrorCode::kTopicAuthorizationFailed, topic));
      continue;
    }
    if (create) {
      const auto [error, message] = CreateRawTopic(topic, options_.default_partitions);
      if (error != ErrorCode::kNone && error != ErrorCode::kTopicAlreadyExists) {
        spdlog::warn("kafka: auto-creating topic '{}': {}", topic, message);
      }
      found = GetTopicTable(topic);
    }
    if (!found.ok()) {
      response.topics.push_back(TopicError(ErrorCode::kUnknownTopicOrPartition, topic));
      continue;
    }
    response.topics.push_back(describe(found->descriptor(), topic));
  }
  return response;
}

}  // namespace oxbow::kafka::internal
