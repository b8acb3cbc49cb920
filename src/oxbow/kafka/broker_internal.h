// The Kafka listener's broker: each request frame in, its response frame out. Broker::Handle
// checks the header and the login and dispatches to the API's handler (handlers/, one file per
// API), which translates to and from node::Node calls (docs/kafka.md has the mapping).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "oxbow/auth/auth.h"
#include "oxbow/kafka/groups_internal.h"
#include "oxbow/kafka/kafka.h"
#include "oxbow/kafka/messages.h"
#include "oxbow/kafka/record_times_internal.h"
#include "oxbow/kafka/records.h"
#include "oxbow/kafka/registry_ids_internal.h"
#include "oxbow/kafka/topic_configs_internal.h"
#include "oxbow/kafka/transactions_internal.h"
#include "oxbow/kafka/values_internal.h"

namespace oxbow::kafka::internal {

// The one node of an embedded server, its id in every answer (in cluster mode: the server id).
constexpr int32_t kNodeId = 0;
// The Kafka error of a failed node call.
ErrorCode ToErrorCode(const Status& st);
// The error a group coordinator answers for a failure to serve or store a group's offsets.
ErrorCode CoordinatorErrorCode(const Status& st);
// ApiVersions' answer: the APIs and versions served (apis.inc).
msg::ApiVersionsResponse ApiVersionsAnswer(ErrorCode error);
// A partition's answer to Produce before (or instead of) appending: no offsets yet.
msg::ProduceResponse::PartitionProduceResponse ProduceResult(int32_t index, ErrorCode error,
                                                             std::optional<std::string> message);

// Why a transactional request is refused where transactions are not served (cluster mode).
inline constexpr char kNoTransactionsMessage[] =
    "transactions are not served in cluster mode yet (docs/kafka.md#transactions)";

// The longest part of a table name (catalog::ValidateTableName).
constexpr size_t kMaxTablePart = 128;
// The property that names the topic of a table whose name is a hash of it (a topic name that is
// no table name, docs/kafka.md#topic-names).
inline constexpr char kTopicProperty[] = "kafka.topic";
// The topic a table is listed as: its kafka.topic for a hash-named table, else the table name
// without the "kafka." namespace.
std::string TopicForTable(const catalog::TableDescriptor& table);
// A table's topic id in Kafka's v7+ messages: the first 16 bytes of HMAC-SHA256 of the table
// id under the server secret, so ids neither count the tables nor repeat after a drop.
Uuid TopicId(std::string_view server_secret, int64_t table_id);

// What one connection has established: its peer and, under --auth, its SASL login.
struct Session {
  std::string client_host;  // "/127.0.0.1", as DescribeGroups reports members
  std::string mechanism;    // chosen by SaslHandshake
  std::unique_ptr<auth::ScramSha256Server> scram;  // a SCRAM exchange under way
  std::optional<auth::User> user;                  // once authenticated
  std::chrono::steady_clock::time_point user_loaded;
  // Set when the response is the last one: the connection closes after sending it.
  bool close_after_response = false;
};

// How Broker::ProducePartition takes a partition's batches.
struct ProduceMode {
  // A transactional producer's: checked and staged with its transaction, not appended.
  const std::string* transactional_id = nullptr;
  // A committed transaction's, appended now: sequences may skip aborted transactions'.
  bool committing = false;
};

class Broker {
 public:
  Broker(node::Node* node, KafkaOptions options, int port,
         std::unique_ptr<GroupCoordinator> groups);

  // The answer to a request, returned when called: the response frame, or nothing when the
  // request wants no answer (Produce with acks=0). Most answers are built when the request is
  // accepted; a Produce's waits in the call for the in-sync replicas, so that the connection
  // may read and accept its next requests meanwhile (their answers go out in order).
  using Answer = std::function<Result<std::optional<std::string>>()>;
  // Accepts one request frame (without its length prefix), doing everything the requests after
  // it may depend on (a Produce's appends, a login). An error, here or from the answer, means
  // the frame cannot be answered (unknown API, malformed header, a request before the SASL
  // login under --auth): the connection closes. `session` is the connection's.
  Result<Answer> Accept(std::string_view frame, Session& session);
  // Accept, then the answer.
  Result<std::optional<std::string>> Handle(std::string_view frame, Session& session);
  // Whether a connection must log in (SASL) before anything but ApiVersions and SASL.
  bool auth_required() const { return options_.authenticator != nullptr; }
  // Embedded mode: opens the transaction coordinator on <client_state_dir>/transactions,
  // carrying out the commits a crash interrupted. Without it, transactions are refused.
  Status OpenTransactions(const std::string& dir);
  // Wakes long-polling fetches and group waits; they answer at once.
  void Stop();
  node::Node* node() const { return node_; }
  std::vector<ConsumerGroup> ConsumerGroups() { return groups_->Snapshot(); }

 private:
  // A partition appended on this server whose acknowledgement (the in-sync replicas' copies)
  // a Produce waits for after appending every partition of the request.
  struct PendingAck {
    std::unique_ptr<engine::PutSession> session;
    std::string table;
    std::vector<metrics::BucketRows> rows;
    int64_t bytes = 0;
    std::chrono::steady_clock::time_point started;
  };
  // What a handler gets besides its request: the header, the connection's session, and a way
  // to say that the request wants no answer.
  struct RequestContext {
    const RequestHeader& header;
    Session& session;
    bool no_response = false;
    // A Produce's partitions appended here and waiting for their replicas: each is
    // (topic index, partition index) of the response and what to wait on.
    std::vector<std::tuple<size_t, size_t, PendingAck>> pending_acks;
    int16_t version() const { return header.api_version; }
  };
  // The encoded response body, once it returns.
  using Body = std::function<Result<std::string>()>;
  // Decodes the body, runs its handler, encodes the response body (a Produce's after its
  // pending acknowledgements, in the Body).
  using Serve = Result<Body> (*)(Broker& broker, Reader& r, RequestContext& ctx);
  template <auto kHandler>
  static Result<Body> ServeWith(Broker& broker, Reader& r, RequestContext& ctx);
  // The handler of each API served (apis.inc): the method of the API's name, under handlers/.
  static const std::map<ApiKey, Serve>& Handlers();

  // Under --auth: whether the session's user has `access` to the topic's table (without
  // --auth: always).
  bool Allows(const Session& session, const std::string& topic, auth::Access access) const;
  Result<msg::ApiVersionsResponse> ApiVersions(msg::ApiVersionsRequest& request,
                                               RequestContext& ctx);
  Result<msg::SaslHandshakeResponse> SaslHandshake(msg::SaslHandshakeRequest& request,
                                                   RequestContext& ctx);
  Result<msg::SaslAuthenticateResponse> SaslAuthenticate(msg::SaslAuthenticateRequest& request,
                                                         RequestContext& ctx);
  Result<msg::MetadataResponse> Metadata(msg::MetadataRequest& request, RequestContext& ctx);
  Result<msg::CreateTopicsResponse> CreateTopics(msg::CreateTopicsRequest& request,
                                                 RequestContext& ctx);
  Result<msg::DeleteTopicsResponse> DeleteTopics(msg::DeleteTopicsRequest& request,
                                                 RequestContext& ctx);
  Result<msg::CreatePartitionsResponse> CreatePartitions(msg::CreatePartitionsRequest& request,
                                                         RequestContext& ctx);
  Result<msg::DeleteRecordsResponse> DeleteRecords(msg::DeleteRecordsRequest& request,
                                                   RequestContext& ctx);
  Result<msg::ListOffsetsResponse> ListOffsets(msg::ListOffsetsRequest& request,
                                               RequestContext& ctx);
  // Appends every partition; what waits for replicas is left in ctx.pending_acks.
  Result<msg::ProduceResponse> Produce(msg::ProduceRequest& request, RequestContext& ctx);
  // Waits for each pending partition's acknowledgement, setting the error of those refused.
  void AwaitAcks(msg::ProduceResponse& response,
                 std::vector<std::tuple<size_t, size_t, PendingAck>>& pending);
  // Appends one partition's batches; what is left to wait for goes to `pending` (no session
  // when the partition failed or had nothing to append).
  msg::ProduceResponse::PartitionProduceResponse ProducePartition(
      const std::string& topic, const msg::ProduceRequest::PartitionProduceData& part, int16_t acks,
      PendingAck* pending, ProduceMode mode = {});
  // Waits for a partition's in-sync replicas, then counts its rows.
  Status AwaitAck(PendingAck& ack);
  // The TransactionCoordinator's Committer::append: one staged batch appended (acks=all).
  Status AppendCommitted(const std::string& topic, int32_t partition, std::string_view batch);
  // The transactional APIs (handlers/transactions.cc).
  Result<msg::AddPartitionsToTxnResponse> AddPartitionsToTxn(
      msg::AddPartitionsToTxnRequest& request, RequestContext& ctx);
  Result<msg::AddOffsetsToTxnResponse> AddOffsetsToTxn(msg::AddOffsetsToTxnRequest& request,
                                                       RequestContext& ctx);
  Result<msg::TxnOffsetCommitResponse> TxnOffsetCommit(msg::TxnOffsetCommitRequest& request,
                                                       RequestContext& ctx);
  Result<msg::EndTxnResponse> EndTxn(msg::EndTxnRequest& request, RequestContext& ctx);
  // Cluster mode: the server that coordinates group `group` (the leader of its bucket of the
  // group offsets table); nullopt in embedded mode; Unavailable while it has none.
  Result<std::optional<cluster::ServerInfo>> GroupCoordinatorServer(const std::string& group) const;
  // Whether this server serves `group` now: NOT_COORDINATOR when another server coordinates it,
  // COORDINATOR_LOAD_IN_PROGRESS while its offsets load, COORDINATOR_NOT_AVAILABLE while nobody
  // coordinates it (cluster mode).
  ErrorCode CheckCoordinator(const std::string& group) const;
  Result<msg::FetchResponse> Fetch(msg::FetchRequest& request, RequestContext& ctx);
  msg::FetchResponse::PartitionData FetchPartition(const std::string& topic,
                                                   const msg::FetchRequest::FetchPartition& part,
                                                   int64_t max_bytes);
  // The topic an id names, when the session may read its table (a topic it may not read is
  // answered as an unknown id, so ids reveal no name).
  std::optional<std::string> TopicById(const Uuid& topic_id, const Session& session) const;
  Result<msg::FindCoordinatorResponse> FindCoordinator(msg::FindCoordinatorRequest& request,
                                                       RequestContext& ctx);
  Result<msg::InitProducerIdResponse> InitProducerId(msg::InitProducerIdRequest& request,
                                                     RequestContext& ctx);
  Result<msg::DescribeConfigsResponse> DescribeConfigs(msg::DescribeConfigsRequest& request,
                                                       RequestContext& ctx);
  Result<msg::IncrementalAlterConfigsResponse> IncrementalAlterConfigs(
      msg::IncrementalAlterConfigsRequest& request, RequestContext& ctx);
  // What a topic without log configs of its own has (the server's).
  TopicDefaults TopicConfigDefaults() const;
  // The configs CreateTopics v5+ answers for a topic of `table`.
  std::vector<msg::CreateTopicsResponse::CreatableTopicConfigs> CreatedTopicConfigs(
      const catalog::TableDescriptor& table) const;
  // The consumer groups' APIs, answered by the GroupCoordinator (handlers/groups.cc).
  Result<msg::JoinGroupResponse> JoinGroup(msg::JoinGroupRequest& request, RequestContext& ctx);
  Result<msg::SyncGroupResponse> SyncGroup(msg::SyncGroupRequest& request, RequestContext& ctx);
  Result<msg::HeartbeatResponse> Heartbeat(msg::HeartbeatRequest& request, RequestContext& ctx);
  Result<msg::LeaveGroupResponse> LeaveGroup(msg::LeaveGroupRequest& request, RequestContext& ctx);
  Result<msg::DescribeGroupsResponse> DescribeGroups(msg::DescribeGroupsRequest& request,
                                                     RequestContext& ctx);
  Result<msg::ListGroupsResponse> ListGroups(msg::ListGroupsRequest& request, RequestContext& ctx);
  Result<msg::DeleteGroupsResponse> DeleteGroups(msg::DeleteGroupsRequest& request,
                                                 RequestContext& ctx);
  Result<msg::OffsetDeleteResponse> OffsetDelete(msg::OffsetDeleteRequest& request,
                                                 RequestContext& ctx);
  Result<msg::OffsetCommitResponse> OffsetCommit(msg::OffsetCommitRequest& request,
                                                 RequestContext& ctx);
  Result<msg::OffsetFetchResponse> OffsetFetch(msg::OffsetFetchRequest& request,
                                               RequestContext& ctx);
  // Creates a raw topic, `compacted` a primary-key table keyed by the record key; the error and
  // message Kafka's CreateTopics would answer. `replication_factor` -1: the cluster's default.
  std::pair<ErrorCode, std::string> CreateRawTopic(
      const std::string& topic, int32_t partitions, int16_t replication_factor = -1,
      const std::map<std::string, std::string>& properties = {}, bool compacted = false);
  // The table of a topic: NotFound when there is none, or when the table is another topic's
  // (a hash-named table); Invalid when the name is no topic name.
  Result<node::TableHandle> GetTopicTable(const std::string& topic) const;
  // FormatOf `table`, with the schema registry's ids of an avro-confluent table's schemas.
  Result<TopicFormat> FormatFor(const catalog::TableDescriptor& table);
  // This server's node id: the cluster's server id, or kNodeId.
  int32_t NodeId() const;

  node::Node* const node_;
  const KafkaOptions options_;
  const std::string host_;
  const int port_;
  std::unique_ptr<GroupCoordinator> groups_;
  std::unique_ptr<TransactionCoordinator> transactions_;  // null: transactions refused
  RecordTimes record_times_;                              // ListOffsets by time of raw log tables
  RegistryIds registry_ids_;
  std::atomic<bool> stopping_{false};
  // Produces notify long-polling fetches; Flight puts are seen by their periodic re-check.
  std::mutex appended_mu_;
  std::condition_variable appended_;
  uint64_t appends_ = 0;  // guarded by appended_mu_
};

}  // namespace oxbow::kafka::internal
