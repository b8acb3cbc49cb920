// What Oxbow serves of the Kafka protocol and answers with: the APIs and versions (apis.inc),
// the error codes, and the request and response headers. The messages themselves are generated
// (messages.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "oxbow/kafka/wire.h"

namespace oxbow::kafka {

// The APIs served (apis.inc).
enum class ApiKey : int16_t {
#define KAFKA_API(name, key, min_version, max_version, first_flexible) k##name = key,
#include "oxbow/kafka/apis.inc"
#undef KAFKA_API
};

// An API this listener serves: the versions advertised and the first flexible one.
struct ApiSupport {
  ApiKey key;
  int16_t min_version;
  int16_t max_version;
  int16_t first_flexible;
};
const std::vector<ApiSupport>& SupportedApis();
// Null when the key is not served.
const ApiSupport* FindApi(int16_t api_key);
// Whether `version` of `api` uses the flexible encoding (header v2, compact fields).
inline bool IsFlexible(const ApiSupport& api, int16_t version) {
  return version >= api.first_flexible;
}

// Kafka's error codes that Oxbow answers with (org.apache.kafka.common.protocol.Errors).
enum class ErrorCode : int16_t {
  kNone = 0,
  kUnknownServerError = -1,
  kOffsetOutOfRange = 1,
  kCorruptMessage = 2,
  kUnknownTopicOrPartition = 3,
  kLeaderNotAvailable = 5,
  kNotLeaderOrFollower = 6,
  kRequestTimedOut = 7,
  kMessageTooLarge = 10,
  kCoordinatorLoadInProgress = 14,
  kCoordinatorNotAvailable = 15,
  kNotCoordinator = 16,
  kInvalidTopicException = 17,
  kRecordListTooLarge = 18,
  kNotEnoughReplicas = 19,
  kNotEnoughReplicasAfterAppend = 20,
  kIllegalGeneration = 22,
  kInconsistentGroupProtocol = 23,
  kInvalidGroupId = 24,
  kUnknownMemberId = 25,
  kInvalidSessionTimeout = 26,
  kRebalanceInProgress = 27,
  kTopicAuthorizationFailed = 29,
  kGroupAuthorizationFailed = 30,
  kClusterAuthorizationFailed = 31,
  kUnsupportedSaslMechanism = 33,
  kIllegalSaslState = 34,
  kUnsupportedVersion = 35,
  kTopicAlreadyExists = 36,
  kInvalidPartitions = 37,
  kInvalidReplicationFactor = 38,
  kInvalidConfig = 40,
  kPolicyViolation = 44,
  kInvalidRequest = 42,
  kUnsupportedForMessageFormat = 43,
  kOutOfOrderSequenceNumber = 45,
  kDuplicateSequenceNumber = 46,
  kInvalidProducerEpoch = 47,
  kInvalidTxnState = 48,
  kInvalidProducerIdMapping = 49,
  kInvalidTransactionTimeout = 50,
  kConcurrentTransactions = 51,
  kTransactionalIdAuthorizationFailed = 53,
  kOperationNotAttempted = 55,
  kSaslAuthenticationFailed = 58,
  kUnknownProducerId = 59,
  kNonEmptyGroup = 68,
  kGroupIdNotFound = 69,
  kUnknownTopicId = 100,
  kMemberIdRequired = 79,
  kFencedInstanceId = 82,
  kGroupSubscribedToTopic = 86,
  kInvalidRecord = 87,
  kUnstableOffsetCommit = 88,
  kProducerFenced = 90,
};

struct RequestHeader {
  int16_t api_key = 0;
  int16_t api_version = 0;
  int32_t correlation_id = 0;
  std::optional<std::string> client_id;
};
// Reads the header (v1, or v2 with tagged fields when the API version is flexible) of a
// request; `reader` is left at the body.
RequestHeader DecodeRequestHeader(Reader& reader);
// The response header: the correlation id, plus tagged fields when flexible (never for
// ApiVersions, whose response header stays v0 so that any client can read it).
void EncodeResponseHeader(Writer& w, int32_t correlation_id, bool flexible);

}  // namespace oxbow::kafka
