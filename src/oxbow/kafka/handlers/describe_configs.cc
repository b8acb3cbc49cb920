// DescribeConfigs: topics and the broker exist but have no configs to show.
#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka::internal {

Result<msg::DescribeConfigsResponse> Broker::DescribeConfigs(msg::DescribeConfigsRequest& request,
                                                             RequestContext& ctx) {
  constexpr int8_t kTopic = 2;
  constexpr int8_t kBroker = 4;
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
      auto table = TableForTopic(name);
      if (!table.ok() || !node_->GetTable(*table).ok()) {
        result.error_code = ErrorCode::kUnknownTopicOrPartition;
        result.error_message = "topic " + Quote(name) + " does not exist";
      }
    } else if (resource.resource_type != kBroker) {
      result.error_code = ErrorCode::kInvalidRequest;
      result.error_message = "only topic and broker configs can be described";
    }
    response.results.push_back(std::move(result));
  }
  return response;
}

}  // namespace oxbow::kafka::internal
