// DeleteTopics: drops the topics' tables and forgets their groups' committed offsets.
#include <spdlog/spdlog.h>

#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka::internal {

Result<msg::DeleteTopicsResponse> Broker::DeleteTopics(msg::DeleteTopicsRequest& request,
                                                       RequestContext& ctx) {
  const Session& session = ctx.session;
  // Before v6 topics are named only; from v6 by name or, with a null name, by id.
  for (const std::string& name : request.topic_names) request.topics.push_back({name, Uuid{}});
  msg::DeleteTopicsResponse response;
  for (const auto& topic : request.topics) {
    msg::DeleteTopicsResponse::DeletableTopicResult result;
    result.name = topic.name;
    result.topic_id = topic.topic_id;
    if (!result.name) {
      // By id: an id whose table the session may not read is answered as unknown, nameless.
      result.name = TopicById(result.topic_id, session);
      if (!result.name) {
        result.error_code = ErrorCode::kUnknownTopicId;
        result.error_message = "no topic has this id";
        response.responses.push_back(std::move(result));
        continue;
      }
    }
    if (!Allows(session, *result.name, auth::Access::kAdmin)) {
      result.error_code = ErrorCode::kTopicAuthorizationFailed;
      result.error_message = "deleting " + Quote(*result.name) + " needs admin access to its table";
      response.responses.push_back(std::move(result));
      continue;
    }
    auto table = GetTopicTable(*result.name);
    Status st =
        table.ok() ? node_->DropTable(table->name()) : Status::NotFound(table.status().message());
    if (!st.ok()) {
      result.error_code = ToErrorCode(st);
      result.error_message = st.message();
    } else if (Status forgot =
                   groups_->ForgetTopics({*result.name, TopicForTable(table->descriptor())});
               !forgot.ok()) {
      // As in Kafka, the topic is gone whatever becomes of its groups' offsets.
      spdlog::error("kafka: deleted topic {} but not its committed offsets: {}", *result.name,
                    forgot.message());
    }
    response.responses.push_back(std::move(result));
  }
  return response;
}

}  // namespace oxbow::kafka::internal
