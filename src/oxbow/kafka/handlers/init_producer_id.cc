// InitProducerId: ids for idempotent producers, and for transactional ones the producer of their
// transactional id from the TransactionCoordinator (its epoch bumped, fencing older instances).
#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka::internal {

Result<msg::InitProducerIdResponse> Broker::InitProducerId(msg::InitProducerIdRequest& request,
                                                           RequestContext& ctx) {
  msg::InitProducerIdResponse response;
  response.producer_epoch = -1;
  if (request.transactional_id) {
    if (!transactions_) {
      response.error_code = ErrorCode::kTransactionalIdAuthorizationFailed;
      return response;
    }
    // PRODUCER_FENCED is known from v4 on.
    auto producer = transactions_->InitProducer(*request.transactional_id,
                                                request.transaction_timeout_ms, request.producer_id,
                                                request.producer_epoch, ctx.version() >= 4);
    response.error_code = producer.answer.error;
    response.producer_id = producer.producer_id;
    response.producer_epoch = producer.epoch;
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
