// InitProducerId: ids for idempotent producers; transactional ones are refused.
#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka::internal {

Result<msg::InitProducerIdResponse> Broker::InitProducerId(msg::InitProducerIdRequest& request,
                                                           RequestContext&) {
  msg::InitProducerIdResponse response;
  response.producer_epoch = -1;
  if (request.transactional_id) {
    response.error_code = ErrorCode::kTransactionalIdAuthorizationFailed;
    return response;
  }
  if (request.producer_id >= 0) {
    // An idempotent producer bumping its epoch after an error keeps its id.
    response.producer_id = request.producer_id;
    response.producer_epoch = static_cast<int16_t>(request.producer_epoch + 1);
    return response;
  }
  response.producer_id = node_->producers()->NewProducerId();
  response.producer_epoch = 0;
  return response;
}

}  // namespace oxbow::kafka::internal
