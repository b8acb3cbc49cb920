// DescribeConfigs and IncrementalAlterConfigs: a topic's configs are its table's properties
// (topic_configs_internal.h); the broker has none to show or change.
#include <algorithm>

#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka::internal {
namespace {

constexpr int8_t kTopic = 2;
constexpr int8_t kBroker = 4;
// Kafka's ConfigSource.
constexpr int8_t kDynamicTopicConfig = 1;
constexpr int8_t kDefaultConfig = 5;
// Kafka's AlterConfigOp.OpType.
constexpr int8_t kSet = 0;
constexpr int8_t kDelete = 1;

}  // namespace

TopicDefaults Broker::TopicConfigDefaults() const {
  return {options_.default_retention_ms, options_.default_retention_bytes,
          options_.default_segment_bytes, options_.max_request_bytes};
}

std::vector<msg::CreateTopicsResponse::CreatableTopicConfigs> Broker::CreatedTopicConfigs(
    const catalog::TableDescriptor& table) const {
  std::vector<msg::CreateTopicsResponse::CreatableTopicConfigs> configs;
  for (const TopicConfig& c : TopicConfigs(table, TopicConfigDefaults())) {
    configs.push_back(
        {c.name, c.value, false, c.set_on_topic ? kDynamicTopicConfig : kDefaultConfig, false});
  }
  return configs;
}

Result<msg::DescribeConfigsResponse> Broker::DescribeConfigs(msg::DescribeConfigsRequest& request,
                                                             RequestContext& ctx) {
  msg::DescribeConfigsResponse response;
  for (const auto& resource : request.resources) {
    msg::DescribeConfigsResponse::DescribeConfigsResult result;
    result.resource_type = resource.resource_type;
    result.resource_name = resource.resource_name;
    const std::string& name = resource.resource_name;
    if (resource.resource_type == kTopic && !Allows(ctx.session, name, auth::Access::kRead)) {
      result.error_code = ErrorCode::kTopicAuthorizationFailed;
      result.error_message = "topic " + Quote(name) + " needs read access";
    } else if (resource.resource_type == kTopic) {
      auto handle = GetTopicTable(name);
      if (!handle.ok()) {
        result.error_code = ErrorCode::kUnknownTopicOrPartition;
        result.error_message = "topic " + Quote(name) + " does not exist";
      } else {
        for (const TopicConfig& c : TopicConfigs(handle->descriptor(), TopicConfigDefaults())) {
          const auto& keys = resource.configuration_keys;
          if (keys && std::find(keys->begin(), keys->end(), c.name) == keys->end()) continue;
          msg::DescribeConfigsResponse::DescribeConfigsResourceResult config;
          config.name = c.name;
          config.value = c.value;
          config.config_source = c.set_on_topic ? kDynamicTopicConfig : kDefaultConfig;
          config.config_type = c.type;
          if (request.include_documentation) config.documentation = c.documentation;
          result.configs.push_back(std::move(config));
        }
      }
    } else if (resource.resource_type != kBroker) {
      result.error_code = ErrorCode::kInvalidRequest;
      result.error_message = "only topic and broker configs can be described";
    }
    response.results.push_back(std::move(result));
  }
  return response;
}

Result<msg::IncrementalAlterConfigsResponse> Broker::IncrementalAlterConfigs(
    msg::IncrementalAlterConfigsRequest& request, RequestContext& ctx) {
  msg::IncrementalAlterConfigsResponse response;
  for (const auto& resource : request.resources) {
    msg::IncrementalAlterConfigsResponse::AlterConfigsResourceResponse result;
    result.resource_type = resource.resource_type;
    result.resource_name = resource.resource_name;
    auto fail = [&](ErrorCode error, std::string message) {
      result.error_code = error;
      result.error_message = std::move(message);
    };
    const std::string& name = resource.resource_name;
    if (resource.resource_type == kBroker) {
      fail(ErrorCode::kInvalidRequest, "broker configs are oxbowd's flags, fixed at its start");
    } else if (resource.resource_type != kTopic) {
      fail(ErrorCode::kInvalidRequest, "only topic configs can be altered");
    } else if (!Allows(ctx.session, name, auth::Access::kAdmin)) {
      fail(ErrorCode::kTopicAuthorizationFailed,
           "altering " + Quote(name) + " needs admin access to its table");
    } else if (auto handle = GetTopicTable(name); !handle.ok()) {
      fail(ErrorCode::kUnknownTopicOrPartition, "topic " + Quote(name) + " does not exist");
    } else {
      catalog::SchemaChange change;
      change.op = catalog::SchemaChange::Op::kSetProperties;
      for (const auto& c : resource.configs) {
        if (c.config_operation != kSet && c.config_operation != kDelete) {
          fail(ErrorCode::kInvalidConfig,
               "topic config " + Quote(c.name) +
                   ": APPEND and SUBTRACT apply to list configs, and none is served");
          break;
        }
        if (c.config_operation == kSet && !c.value) {
          fail(ErrorCode::kInvalidConfig, "topic config " + Quote(c.name) + " set to null");
          break;
        }
        const std::optional<std::string> value =
            c.config_operation == kSet ? c.value : std::nullopt;
        if (c.name == kCleanupPolicyConfig &&
            value.value_or(kDeletePolicy) != CleanupPolicyOf(handle->descriptor())) {
          fail(ErrorCode::kInvalidConfig,
               "topic config cleanup.policy is fixed when the topic is created: " + Quote(name) +
                   " is " + CleanupPolicyOf(handle->descriptor()) +
                   " (a compacted topic is a primary-key table)");
          break;
        }
        if (c.name == kTimestampTypeConfig &&
            FormatOf(handle->descriptor()).kind != TableKind::kRaw &&
            value.value_or(kLogAppendTime) != kLogAppendTime) {
          fail(ErrorCode::kInvalidConfig,
               "topic config message.timestamp.type: " + Quote(name) +
                   " keeps no record timestamp (not a raw table): its records carry the time "
                   "Oxbow appended them (LogAppendTime)");
          break;
        }
        auto property = PropertyForConfig(c.name, value);
        if (!property.ok()) {
          fail(ErrorCode::kInvalidConfig, property.status().message());
          break;
        }
        if (!property->first.empty()) change.properties[property->first] = property->second;
      }
      if (result.error_code == ErrorCode::kNone && !request.validate_only &&
          !change.properties.empty()) {
        auto altered = node_->AlterTable({handle->name(), {change}});
        if (!altered.ok()) {
          const Status& st = altered.status();
          fail(st.IsInvalid() ? ErrorCode::kInvalidConfig : ToErrorCode(st), st.message());
        }
      }
    }
    response.responses.push_back(std::move(result));
  }
  return response;
}

}  // namespace oxbow::kafka::internal
