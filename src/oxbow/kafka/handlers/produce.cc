// Produce: each partition's record batches appended to its table's bucket (Broker::
// ProducePartition, which keeps the idempotent producers' sequences), long-polling fetches
// woken after.
#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka::internal {

msg::ProduceResponse::PartitionProduceResponse ProduceResult(int32_t index, ErrorCode error,
                                                             std::optional<std::string> message) {
  msg::ProduceResponse::PartitionProduceResponse result;
  result.index = index;
  result.error_code = error;
  result.base_offset = -1;
  result.error_message = std::move(message);
  return result;
}

Result<msg::ProduceResponse> Broker::Produce(msg::ProduceRequest& request, RequestContext& ctx) {
  const int16_t version = ctx.version();
  ctx.no_response = request.acks == 0;
  msg::ProduceResponse response;
  for (auto& t : request.topic_data) {
    // v13+ names topics by id; an unknown id (or one the session may not read) leaves the name
    // empty.
    if (version >= 13) t.name = TopicById(t.topic_id, ctx.session).value_or("");
    msg::ProduceResponse::TopicProduceResponse tr;
    tr.name = t.name;
    tr.topic_id = t.topic_id;
    for (const auto& p : t.partition_data) {
      if (t.name.empty()) {
        tr.partition_responses.push_back(
            ProduceResult(p.index, ErrorCode::kUnknownTopicId, std::nullopt));
      } else if (!Allows(ctx.session, t.name, auth::Access::kWrite)) {
        tr.partition_responses.push_back(
            ProduceResult(p.index, ErrorCode::kTopicAuthorizationFailed,
                          "producing to " + Quote(t.name) + " needs write access to its table"));
      } else if (version < 3) {
        tr.partition_responses.push_back(
            ProduceResult(p.index, ErrorCode::kUnsupportedVersion,
                          "Produce v" + std::to_string(version) +
                              " (message format v0/v1) is not supported: use v3+"));
      } else if (request.transactional_id) {
        tr.partition_responses.push_back(
            ProduceResult(p.index, ErrorCode::kTransactionalIdAuthorizationFailed,
                          "transactions are not supported"));
      } else {
        tr.partition_responses.push_back(ProducePartition(t.name, p));
      }
    }
    response.responses.push_back(std::move(tr));
  }
  {
    std::lock_guard lock(appended_mu_);
    ++appends_;
    appended_.notify_all();
  }
  return response;
}

}  // namespace oxbow::kafka::internal
