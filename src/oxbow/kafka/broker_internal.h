// The request handlers of the Kafka listener: each request frame in, its response frame out,
// translated to and from node::Node calls (docs/kafka.md has the mapping).
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
#include "oxbow/kafka/records.h"

namespace oxbow::kafka::internal {

// The schema of a table created through Kafka: key binary, value binary, timestamp
// timestamp[ms, tz=UTC] not null, headers binary (Kafka's header encoding; null when none).
const arrow::SchemaPtr& RawTopicSchema();

// The table behind a topic: "ns.t" for a topic named so, "kafka.<topic>" for a topic without a
// dot. Invalid when the topic cannot name a table.
Result<std::string> TableForTopic(std::string_view topic);
// The topic a table is listed as: the table name without the "kafka." namespace.
std::string TopicForTable(std::string_view table);
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

class Broker {
 public:
  Broker(node::Node* node, KafkaOptions options, int port,
         std::unique_ptr<GroupCoordinator> groups);

  // Answers one request frame (without its length prefix): the response frame, or nothing
  // when the request wants no answer (Produce with acks=0). An error means the frame cannot
  // be answered (unknown API, malformed header, a request before the SASL login under --auth):
  // the connection closes. `session` is the connection's.
  Result<std::optional<std::string>> Handle(std::string_view frame, Session& session);
  // Whether a connection must log in (SASL) before anything but ApiVersions and SASL.
  bool auth_required() const { return options_.authenticator != nullptr; }
  // Wakes long-polling fetches and group waits; they answer at once.
  void Stop();
  // The idempotent producers' sequences survive restarts and crashes: each of their batches is
  // stored with its producer id, epoch and sequences (the batch's "kafka.producer" metadata, in
  // the same durable write as its rows); a snapshot of the state in
  // <state_dir>/producers.json, with the offset of each partition it covers, is written now and
  // then and at stop. Load reads the snapshot and replays the batches after it.
  Status LoadProducerState();
  Status SaveProducerState();
  // Saves the state when it changed and the last snapshot is older than a few seconds.
  void SaveProducerStateIfDue();

 private:
  struct Partition {
    std::string table;
    int32_t bucket;
    auto operator<=>(const Partition&) const = default;
  };
  // The sequences of one idempotent producer on one partition, and where its recent batches
  // landed (Kafka keeps the last five for retries).
  struct ProducerState {
    int16_t epoch = -1;
    int32_t last_sequence = -1;
    struct Appended {
      int32_t first_sequence;
      int32_t last_sequence;
      int64_t base_offset;
    };
    std::vector<Appended> recent;

    // Records a batch appended at `base_offset` (one already recorded, or of an older epoch,
    // changes nothing).
    void Record(int16_t batch_epoch, int32_t first_sequence, int32_t last_sequence_of_batch,
                int64_t base_offset);
  };

  Result<std::string> HandleBody(const RequestHeader& header, const ApiSupport& api, Reader& r,
                                 Session& session, bool* no_response);
  // Under --auth: whether the session's user has `access` to the topic's table (without
  // --auth: always).
  bool Allows(const Session& session, const std::string& topic, auth::Access access) const;
  SaslHandshakeResponse SaslHandshake(const SaslHandshakeRequest& request, Session& session);
  SaslAuthenticateResponse SaslAuthenticate(const SaslAuthenticateRequest& request,
                                            Session& session);
  ApiVersionsResponse ApiVersions(ErrorCode error) const;
  MetadataResponse Metadata(const MetadataRequest& request, const Session& session);
  CreateTopicsResponse CreateTopics(const CreateTopicsRequest& request, int16_t version,
                                    const Session& session);
  DeleteTopicsResponse DeleteTopics(const DeleteTopicsRequest& request, const Session& session);
  ListOffsetsResponse ListOffsets(const ListOffsetsRequest& request, const Session& session);
  ProduceResponse Produce(const ProduceRequest& request, int16_t version, const Session& session);
  ProducePartitionResult ProducePartition(const std::string& topic, const ProducePartition& part);
  FetchResponse Fetch(const FetchRequest& request, const Session& session);
  FetchPartitionResult FetchPartition(const std::string& topic, const kafka::FetchPartition& part,
                                      int64_t max_bytes);
  // The topic an id names, when the session may read its table (a topic it may not read is
  // answered as an unknown id, so ids reveal no name).
  std::optional<std::string> TopicById(const Uuid& topic_id, const Session& session) const;
  // Names the topics of a v13+ Produce or Fetch, which name them by id; an unknown id (or one
  // the session may not read) leaves the name empty.
  template <typename Topics>
  void NameTopicsById(Topics& topics, const Session& session) const {
    for (auto& t : topics) t.name = TopicById(t.topic_id, session).value_or("");
  }
  FindCoordinatorResponse FindCoordinator(const FindCoordinatorRequest& request) const;
  InitProducerIdResponse InitProducerId(const InitProducerIdRequest& request);
  DescribeConfigsResponse DescribeConfigs(const DescribeConfigsRequest& request,
                                          const Session& session);
  // Creates a raw topic; the error and message Kafka's CreateTopics would answer.
  std::pair<ErrorCode, std::string> CreateRawTopic(const std::string& topic, int32_t partitions);

  node::Node* const node_;
  const KafkaOptions options_;
  const std::string host_;
  const int port_;
  std::unique_ptr<GroupCoordinator> groups_;
  std::atomic<bool> stopping_{false};
  // Produces notify long-polling fetches; Flight puts are seen by their periodic re-check.
  std::mutex appended_mu_;
  std::condition_variable appended_;
  uint64_t appends_ = 0;  // guarded by appended_mu_
  std::mutex producers_mu_;
  std::atomic<int64_t> next_producer_id_;
  std::map<std::tuple<std::string, int32_t, int64_t>, ProducerState> producers_;  // producers_mu_
  bool producers_changed_ = false;                                                // producers_mu_
  std::chrono::steady_clock::time_point producers_saved_ = std::chrono::steady_clock::now();
};

}  // namespace oxbow::kafka::internal
