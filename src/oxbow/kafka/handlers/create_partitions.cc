// CreatePartitions: a log table gains buckets (node::Node::AddBuckets); tables that place rows
// by key refuse.
#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka::internal {

Result<msg::CreatePartitionsResponse> Broker::CreatePartitions(
    msg::CreatePartitionsRequest& request, RequestContext& ctx) {
  msg::CreatePartitionsResponse response;
  for (const auto& t : request.topics) {
    msg::CreatePartitionsResponse::CreatePartitionsTopicResult result;
    result.name = t.name;
    auto fail = [&](ErrorCode error, std::string message) {
      result.error_code = error;
      result.error_message = std::move(message);
    };
    if (!Allows(ctx.session, t.name, auth::Access::kAdmin)) {
      fail(ErrorCode::kTopicAuthorizationFailed,
           "adding partitions to " + Quote(t.name) + " needs admin access to its table");
    } else if (auto table = GetTopicTable(t.name); !table.ok()) {
      fail(ErrorCode::kUnknownTopicOrPartition, table.status().message());
    } else if (t.assignments) {
      fail(ErrorCode::kInvalidRequest, "manual replica assignments are not supported");
    } else if (t.count <= table->bucket_count()) {
      fail(ErrorCode::kInvalidPartitions, "topic " + Quote(t.name) + " has " +
                                              std::to_string(table->bucket_count()) +
                                              " partitions: the new count must be larger");
    } else if (!table->descriptor().primary_key.empty() ||
               !table->descriptor().bucket_key.empty()) {
      fail(ErrorCode::kInvalidPartitions,
           "topic " + Quote(t.name) +
               " places each record in the partition of its key's hash: more partitions would "
               "move its keys (a compacted topic keeps its partition count)");
    } else if (!request.validate_only) {
      auto added = node_->AddBuckets(table->name(), t.count);
      if (!added.ok()) {
        const Status& st = added.status();
        fail(st.IsInvalid() ? ErrorCode::kInvalidPartitions : ToErrorCode(st), st.message());
      }
    }
    response.results.push_back(std::move(result));
  }
  return response;
}

}  // namespace oxbow::kafka::internal
