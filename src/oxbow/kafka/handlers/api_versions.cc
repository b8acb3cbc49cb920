// ApiVersions: the APIs and versions served (a too new request is answered by Broker::Handle).
#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka::internal {

msg::ApiVersionsResponse ApiVersionsAnswer(ErrorCode error) {
  msg::ApiVersionsResponse response;
  response.error_code = error;
  for (const ApiSupport& api : SupportedApis()) {
    response.api_keys.push_back({static_cast<int16_t>(api.key), api.min_version, api.max_version});
  }
  return response;
}

Result<msg::ApiVersionsResponse> Broker::ApiVersions(msg::ApiVersionsRequest&, RequestContext&) {
  return ApiVersionsAnswer(ErrorCode::kNone);
}

}  // namespace oxbow::kafka::internal
