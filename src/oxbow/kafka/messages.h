// The Kafka requests and responses Oxbow serves, written by hand from the message definitions
// of kafka-clients 4.4.0 (common/message/*.json): each field exactly in the versions that
// define it, flexible versions with compact strings and tagged fields. docs/kafka.md lists the
// versions served. Decoders take untrusted bytes and return Invalid naming the first problem.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/kafka/wire.h"

namespace oxbow::kafka {

enum class ApiKey : int16_t {
  kProduce = 0,
  kFetch = 1,
  kListOffsets = 2,
  kMetadata = 3,
  kOffsetCommit = 8,
  kOffsetFetch = 9,
  kFindCoordinator = 10,
  kJoinGroup = 11,
  kHeartbeat = 12,
  kLeaveGroup = 13,
  kSyncGroup = 14,
  kDescribeGroups = 15,
  kListGroups = 16,
  kSaslHandshake = 17,
  kApiVersions = 18,
  kCreateTopics = 19,
  kDeleteTopics = 20,
  kInitProducerId = 22,
  kDescribeConfigs = 32,
  kSaslAuthenticate = 36,
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
  kMessageTooLarge = 10,
  kCoordinatorNotAvailable = 15,
  kInvalidTopicException = 17,
  kRecordListTooLarge = 18,
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
  kInvalidRequest = 42,
  kUnsupportedForMessageFormat = 43,
  kOutOfOrderSequenceNumber = 45,
  kDuplicateSequenceNumber = 46,
  kInvalidProducerEpoch = 47,
  kTransactionalIdAuthorizationFailed = 53,
  kSaslAuthenticationFailed = 58,
  kUnknownProducerId = 59,
  kGroupIdNotFound = 69,
  kUnknownTopicId = 100,
  kMemberIdRequired = 79,
  kFencedInstanceId = 82,
  kInvalidRecord = 87,
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

// --- ApiVersions (18) ---
struct ApiVersionsRequest {
  std::string client_software_name;     // v3+
  std::string client_software_version;  // v3+
};
struct ApiVersionsResponse {
  ErrorCode error = ErrorCode::kNone;
  std::vector<ApiSupport> apis;
};
Result<ApiVersionsRequest> DecodeApiVersions(Reader& r, int16_t version);
void Encode(const ApiVersionsResponse& m, int16_t version, Writer& w);

// --- Metadata (3) ---
struct MetadataRequest {
  std::optional<std::vector<std::string>> topics;  // null (or empty in v0): all topics
  bool allow_auto_topic_creation = true;           // v4+
};
struct MetadataBroker {
  int32_t node_id = 0;
  std::string host;
  int32_t port = 0;
};
struct MetadataPartition {
  ErrorCode error = ErrorCode::kNone;
  int32_t index = 0;
  int32_t leader = 0;
  std::vector<int32_t> replicas;
};
struct MetadataTopic {
  ErrorCode error = ErrorCode::kNone;
  std::string name;
  Uuid topic_id{};  // v10+
  std::vector<MetadataPartition> partitions;
};
struct MetadataResponse {
  std::vector<MetadataBroker> brokers;
  std::string cluster_id;
  int32_t controller_id = 0;
  std::vector<MetadataTopic> topics;
};
Result<MetadataRequest> DecodeMetadata(Reader& r, int16_t version);
void Encode(const MetadataResponse& m, int16_t version, Writer& w);

// --- CreateTopics (19) ---
struct CreatableTopic {
  std::string name;
  int32_t num_partitions = -1;
  int16_t replication_factor = -1;
  int32_t assignments = 0;  // manual replica assignments (refused)
  std::vector<std::pair<std::string, std::optional<std::string>>> configs;
};
struct CreateTopicsRequest {
  std::vector<CreatableTopic> topics;
  int32_t timeout_ms = 0;
  bool validate_only = false;  // v1+
};
struct CreateTopicResult {
  std::string name;
  Uuid topic_id{};  // v7+
  ErrorCode error = ErrorCode::kNone;
  std::optional<std::string> message;
  int32_t num_partitions = -1;      // v5+
  int16_t replication_factor = -1;  // v5+
};
struct CreateTopicsResponse {
  std::vector<CreateTopicResult> topics;
};
Result<CreateTopicsRequest> DecodeCreateTopics(Reader& r, int16_t version);
void Encode(const CreateTopicsResponse& m, int16_t version, Writer& w);

// --- DeleteTopics (20) ---
struct DeleteTopicsRequest {
  std::vector<std::optional<std::string>> names;  // v6+: null names come with a topic id
  std::vector<Uuid> topic_ids;                    // v6+, one per name
  int32_t timeout_ms = 0;
};
struct DeleteTopicResult {
  std::optional<std::string> name;
  Uuid topic_id{};  // v6+
  ErrorCode error = ErrorCode::kNone;
  std::optional<std::string> message;  // v5+
};
struct DeleteTopicsResponse {
  std::vector<DeleteTopicResult> results;
};
Result<DeleteTopicsRequest> DecodeDeleteTopics(Reader& r, int16_t version);
void Encode(const DeleteTopicsResponse& m, int16_t version, Writer& w);

// --- ListOffsets (2) ---
struct ListOffsetsPartition {
  int32_t index = 0;
  int64_t timestamp = 0;  // -1 latest, -2 earliest, -3 max timestamp, -4 earliest local
};
struct ListOffsetsTopic {
  std::string name;
  std::vector<ListOffsetsPartition> partitions;
};
struct ListOffsetsRequest {
  int8_t isolation_level = 0;  // v2+
  std::vector<ListOffsetsTopic> topics;
};
struct ListOffsetsPartitionResult {
  int32_t index = 0;
  ErrorCode error = ErrorCode::kNone;
  int64_t timestamp = -1;
  int64_t offset = -1;
};
struct ListOffsetsTopicResult {
  std::string name;
  std::vector<ListOffsetsPartitionResult> partitions;
};
struct ListOffsetsResponse {
  std::vector<ListOffsetsTopicResult> topics;
};
Result<ListOffsetsRequest> DecodeListOffsets(Reader& r, int16_t version);
void Encode(const ListOffsetsResponse& m, int16_t version, Writer& w);

// --- Produce (0) ---
struct ProducePartition {
  int32_t index = 0;
  std::optional<std::string_view> records;  // points into the request frame
};
struct ProduceTopic {
  std::string name;  // before v13
  Uuid topic_id{};   // v13+
  std::vector<ProducePartition> partitions;
};
struct ProduceRequest {
  std::optional<std::string> transactional_id;  // v3+
  int16_t acks = -1;
  int32_t timeout_ms = 0;
  std::vector<ProduceTopic> topics;
};
struct ProducePartitionResult {
  int32_t index = 0;
  ErrorCode error = ErrorCode::kNone;
  int64_t base_offset = -1;
  int64_t log_start_offset = -1;  // v5+
  // v8+: the batch (by index in the record set) that failed, and why.
  std::vector<std::pair<int32_t, std::string>> record_errors;
  std::optional<std::string> message;  // v8+
};
struct ProduceTopicResult {
  std::string name;  // before v13
  Uuid topic_id{};   // v13+
  std::vector<ProducePartitionResult> partitions;
};
struct ProduceResponse {
  std::vector<ProduceTopicResult> topics;
};
Result<ProduceRequest> DecodeProduce(Reader& r, int16_t version);
void Encode(const ProduceResponse& m, int16_t version, Writer& w);

// --- Fetch (1) ---
struct FetchPartition {
  int32_t index = 0;
  int64_t fetch_offset = 0;
  int32_t max_bytes = 0;
};
struct FetchTopic {
  std::string name;  // before v13
  Uuid topic_id{};   // v13+
  std::vector<FetchPartition> partitions;
};
struct FetchRequest {
  int32_t max_wait_ms = 0;
  int32_t min_bytes = 0;
  int32_t max_bytes = 0x7fffffff;  // v3+
  int8_t isolation_level = 0;      // v4+
  int32_t session_id = 0;          // v7+
  int32_t session_epoch = -1;      // v7+
  std::vector<FetchTopic> topics;
};
struct FetchPartitionResult {
  int32_t index = 0;
  ErrorCode error = ErrorCode::kNone;
  int64_t high_watermark = -1;
  int64_t log_start_offset = -1;  // v5+
  std::string records;            // record batches, possibly empty
};
struct FetchTopicResult {
  std::string name;  // before v13
  Uuid topic_id{};   // v13+
  std::vector<FetchPartitionResult> partitions;
};
struct FetchResponse {
  ErrorCode error = ErrorCode::kNone;  // v7+
  std::vector<FetchTopicResult> topics;
};
Result<FetchRequest> DecodeFetch(Reader& r, int16_t version);
void Encode(const FetchResponse& m, int16_t version, Writer& w);

// --- FindCoordinator (10) ---
struct FindCoordinatorRequest {
  int8_t key_type = 0;            // v1+: 0 group, 1 transaction
  std::vector<std::string> keys;  // one key before v4
};
struct Coordinator {
  std::string key;
  int32_t node_id = 0;
  std::string host;
  int32_t port = 0;
  ErrorCode error = ErrorCode::kNone;
  std::optional<std::string> message;
};
struct FindCoordinatorResponse {
  std::vector<Coordinator> coordinators;  // exactly one before v4
};
Result<FindCoordinatorRequest> DecodeFindCoordinator(Reader& r, int16_t version);
void Encode(const FindCoordinatorResponse& m, int16_t version, Writer& w);

// --- JoinGroup (11) ---
struct GroupProtocol {
  std::string name;
  std::string metadata;
};
struct JoinGroupRequest {
  std::string group_id;
  int32_t session_timeout_ms = 0;
  int32_t rebalance_timeout_ms = -1;  // v1+
  std::string member_id;
  std::optional<std::string> group_instance_id;  // v5+
  std::string protocol_type;
  std::vector<GroupProtocol> protocols;
};
struct JoinGroupMember {
  std::string member_id;
  std::optional<std::string> group_instance_id;  // v5+
  std::string metadata;
};
struct JoinGroupResponse {
  ErrorCode error = ErrorCode::kNone;
  int32_t generation_id = -1;
  std::optional<std::string> protocol_type;  // v7+
  std::optional<std::string> protocol_name;
  std::string leader;
  std::string member_id;
  std::vector<JoinGroupMember> members;
};
Result<JoinGroupRequest> DecodeJoinGroup(Reader& r, int16_t version);
void Encode(const JoinGroupResponse& m, int16_t version, Writer& w);

// --- SyncGroup (14) ---
struct SyncGroupRequest {
  std::string group_id;
  int32_t generation_id = 0;
  std::string member_id;
  std::optional<std::string> group_instance_id;                  // v3+
  std::vector<std::pair<std::string, std::string>> assignments;  // member id, assignment
};
struct SyncGroupResponse {
  ErrorCode error = ErrorCode::kNone;
  std::optional<std::string> protocol_type;  // v5+
  std::optional<std::string> protocol_name;  // v5+
  std::string assignment;
};
Result<SyncGroupRequest> DecodeSyncGroup(Reader& r, int16_t version);
void Encode(const SyncGroupResponse& m, int16_t version, Writer& w);

// --- SaslHandshake (17) ---
struct SaslHandshakeRequest {
  std::string mechanism;
};
struct SaslHandshakeResponse {
  ErrorCode error = ErrorCode::kNone;
  std::vector<std::string> mechanisms;
};
Result<SaslHandshakeRequest> DecodeSaslHandshake(Reader& r, int16_t version);
void Encode(const SaslHandshakeResponse& m, int16_t version, Writer& w);

// --- SaslAuthenticate (36) ---
struct SaslAuthenticateRequest {
  std::string auth_bytes;
};
struct SaslAuthenticateResponse {
  ErrorCode error = ErrorCode::kNone;
  std::optional<std::string> message;
  std::string auth_bytes;
  int64_t session_lifetime_ms = 0;  // v1+
};
Result<SaslAuthenticateRequest> DecodeSaslAuthenticate(Reader& r, int16_t version);
void Encode(const SaslAuthenticateResponse& m, int16_t version, Writer& w);

// --- Heartbeat (12) ---
struct HeartbeatRequest {
  std::string group_id;
  int32_t generation_id = 0;
  std::string member_id;
  std::optional<std::string> group_instance_id;  // v3+
};
Result<HeartbeatRequest> DecodeHeartbeat(Reader& r, int16_t version);
// Heartbeat's response is a bare error code (and throttle time).
void EncodeHeartbeat(ErrorCode error, int16_t version, Writer& w);

// --- LeaveGroup (13) ---
struct LeavingMember {
  std::string member_id;
  std::optional<std::string> group_instance_id;  // v3+
  ErrorCode error = ErrorCode::kNone;            // in the response
};
struct LeaveGroupRequest {
  std::string group_id;
  std::vector<LeavingMember> members;  // one before v3
};
struct LeaveGroupResponse {
  ErrorCode error = ErrorCode::kNone;  // before v3: the one member's
  std::vector<LeavingMember> members;  // v3+
};
Result<LeaveGroupRequest> DecodeLeaveGroup(Reader& r, int16_t version);
void Encode(const LeaveGroupResponse& m, int16_t version, Writer& w);

// --- DescribeGroups (15) ---
struct DescribeGroupsRequest {
  std::vector<std::string> groups;
};
struct DescribedMember {
  std::string member_id;
  std::optional<std::string> group_instance_id;  // v4+
  std::string client_id;
  std::string client_host;
  std::string metadata;
  std::string assignment;
};
struct DescribedGroup {
  ErrorCode error = ErrorCode::kNone;
  std::string group_id;
  std::string state;  // Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
  std::string protocol_type;
  std::string protocol_name;
  std::vector<DescribedMember> members;
};
struct DescribeGroupsResponse {
  std::vector<DescribedGroup> groups;
};
Result<DescribeGroupsRequest> DecodeDescribeGroups(Reader& r, int16_t version);
void Encode(const DescribeGroupsResponse& m, int16_t version, Writer& w);

// --- ListGroups (16) ---
struct ListGroupsRequest {
  std::vector<std::string> states;  // v4+: empty means every state
  std::vector<std::string> types;   // v5+: empty means every type
};
struct ListedGroup {
  std::string group_id;
  std::string protocol_type;
  std::string state;  // v4+
};
struct ListGroupsResponse {
  std::vector<ListedGroup> groups;
};
Result<ListGroupsRequest> DecodeListGroups(Reader& r, int16_t version);
void Encode(const ListGroupsResponse& m, int16_t version, Writer& w);

// --- DescribeConfigs (32) ---
struct ConfigResource {
  int8_t type = 0;  // 2 topic, 4 broker
  std::string name;
};
struct DescribeConfigsRequest {
  std::vector<ConfigResource> resources;
};
struct DescribeConfigsResult {
  ErrorCode error = ErrorCode::kNone;
  std::optional<std::string> message;
  ConfigResource resource;
};
struct DescribeConfigsResponse {
  std::vector<DescribeConfigsResult> results;  // each with no configs: Oxbow has none to show
};
Result<DescribeConfigsRequest> DecodeDescribeConfigs(Reader& r, int16_t version);
void Encode(const DescribeConfigsResponse& m, int16_t version, Writer& w);

// --- OffsetCommit (8) ---
struct OffsetCommitPartition {
  int32_t index = 0;
  int64_t offset = 0;
  std::optional<std::string> metadata;
};
struct OffsetCommitTopic {
  std::string name;
  std::vector<OffsetCommitPartition> partitions;
};
struct OffsetCommitRequest {
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;  // v7+
  std::vector<OffsetCommitTopic> topics;
};
struct PartitionError {
  int32_t index = 0;
  ErrorCode error = ErrorCode::kNone;
};
struct OffsetCommitTopicResult {
  std::string name;
  std::vector<PartitionError> partitions;
};
struct OffsetCommitResponse {
  std::vector<OffsetCommitTopicResult> topics;
};
Result<OffsetCommitRequest> DecodeOffsetCommit(Reader& r, int16_t version);
void Encode(const OffsetCommitResponse& m, int16_t version, Writer& w);

// --- OffsetFetch (9) ---
struct OffsetFetchTopic {
  std::string name;
  std::vector<int32_t> partitions;
};
struct OffsetFetchGroup {
  std::string group_id;
  std::optional<std::vector<OffsetFetchTopic>> topics;  // null: every committed partition
};
struct OffsetFetchRequest {
  std::vector<OffsetFetchGroup> groups;  // one before v8
};
struct OffsetFetchPartitionResult {
  int32_t index = 0;
  int64_t offset = -1;
  std::optional<std::string> metadata;
  ErrorCode error = ErrorCode::kNone;
};
struct OffsetFetchTopicResult {
  std::string name;
  std::vector<OffsetFetchPartitionResult> partitions;
};
struct OffsetFetchGroupResult {
  std::string group_id;
  std::vector<OffsetFetchTopicResult> topics;
  ErrorCode error = ErrorCode::kNone;
};
struct OffsetFetchResponse {
  std::vector<OffsetFetchGroupResult> groups;  // one before v8
};
Result<OffsetFetchRequest> DecodeOffsetFetch(Reader& r, int16_t version);
void Encode(const OffsetFetchResponse& m, int16_t version, Writer& w);

// --- InitProducerId (22) ---
struct InitProducerIdRequest {
  std::optional<std::string> transactional_id;
  int32_t transaction_timeout_ms = 0;
  int64_t producer_id = -1;     // v3+
  int16_t producer_epoch = -1;  // v3+
};
struct InitProducerIdResponse {
  ErrorCode error = ErrorCode::kNone;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
};
Result<InitProducerIdRequest> DecodeInitProducerId(Reader& r, int16_t version);
void Encode(const InitProducerIdResponse& m, int16_t version, Writer& w);

}  // namespace oxbow::kafka
