// FindCoordinator: this node coordinates every group (in cluster mode: the leader of the group's
// bucket of the group offsets table) and, in embedded mode, every transactional id.
#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka::internal {

Result<msg::FindCoordinatorResponse> Broker::FindCoordinator(msg::FindCoordinatorRequest& request,
                                                             RequestContext& ctx) {
  // Before v4 a request names one key, and its answer is the response's own fields.
  const bool one_key = ctx.version() < 4;
  if (one_key) request.coordinator_keys = {request.key};
  msg::FindCoordinatorResponse response;
  for (const auto& key : request.coordinator_keys) {
    msg::FindCoordinatorResponse::Coordinator c{key,   kNodeId,          host_,
                                                port_, ErrorCode::kNone, std::nullopt};
    auto coordinator =
        request.key_type == 0 ? GroupCoordinatorServer(key) : std::optional<cluster::ServerInfo>();
    if (!coordinator.ok()) {
      c = {key,
           -1,
           "",
           -1,
           ErrorCode::kCoordinatorNotAvailable,
           std::string(coordinator.status().message())};
    } else if (*coordinator) {
      const std::string& address = (*coordinator)->kafka;
      const size_t colon = address.rfind(':');
      c.node_id = (*coordinator)->id;
      c.host = address.substr(0, colon);
      c.port = std::stoi(address.substr(colon + 1));
    }
    // Where transactions are not served: a non-retriable error, so that a transactional producer
    // fails at once (librdkafka, the Java client and kafka-python all take 53 as fatal)
    // instead of retrying until its timeout; any other key type is not Kafka's either.
    if (request.key_type == 1 && !transactions_) {
      c = {key, -1, "", -1, ErrorCode::kTransactionalIdAuthorizationFailed, kNoTransactionsMessage};
    } else if (request.key_type != 0 && request.key_type != 1) {
      c = {key,
           -1,
           "",
           -1,
           ErrorCode::kInvalidRequest,
           "coordinator key type " + std::to_string(request.key_type) + " is not served"};
    }
    response.coordinators.push_back(std::move(c));
  }
  if (one_key) {
    const auto& c = response.coordinators.front();
    response.error_code = c.error_code;
    response.error_message = c.error_message;
    response.node_id = c.node_id;
    response.host = c.host;
    response.port = c.port;
    response.coordinators.clear();
  }
  return response;
}

}  // namespace oxbow::kafka::internal
