// The request handlers of the Kafka listener: each request frame in, its response frame out,
// translated to and from node::Node calls (docs/kafka.md has the mapping).
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

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
// A table's topic id in Kafka's v10+ messages: "oxbow" then the table id, big-endian.
Uuid TopicId(int64_t table_id);

class Broker {
 public:
  Broker(node::Node* node, KafkaOptions options, int port,
         std::unique_ptr<GroupCoordinator> groups);

  // Answers one request frame (without its length prefix): the response frame, or nothing
  // when the request wants no answer (Produce with acks=0). An error means the frame cannot
  // be answered (unknown API, malformed header): the connection closes. `client_host` is the
  // peer's address, which DescribeGroups reports.
  Result<std::optional<std::string>> Handle(std::string_view frame, const std::string& client_host);
  // Wakes long-polling fetches and group waits; they answer at once.
  void Stop();
  // The idempotent producers' sequences are kept across a clean restart: saved to
  // <state_dir>/producers.json once no request runs any more, loaded (and the file removed, so
  // that a crash leaves none behind) at start.
  Status LoadProducerState();
  Status SaveProducerState();

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
  };

  Result<std::string> HandleBody(const RequestHeader& header, const ApiSupport& api, Reader& r,
                                 const std::string& client_host, bool* no_response);
  ApiVersionsResponse ApiVersions(ErrorCode error) const;
  MetadataResponse Metadata(const MetadataRequest& request);
  CreateTopicsResponse CreateTopics(const CreateTopicsRequest& request, int16_t version);
  DeleteTopicsResponse DeleteTopics(const DeleteTopicsRequest& request);
  ListOffsetsResponse ListOffsets(const ListOffsetsRequest& request);
  ProduceResponse Produce(const ProduceRequest& request, int16_t version);
  ProducePartitionResult ProducePartition(const std::string& topic, const ProducePartition& part);
  FetchResponse Fetch(const FetchRequest& request);
  FetchPartitionResult FetchPartition(const std::string& topic, const kafka::FetchPartition& part,
                                      int64_t max_bytes);
  // Names the topics of a v13+ Produce or Fetch, which name them by id; an unknown id leaves
  // the name empty.
  template <typename Topics>
  void NameTopicsById(Topics& topics) const {
    const auto tables = node_->ListTables();
    for (auto& t : topics) {
      for (const auto& table : tables) {
        if (TopicId(table.table_id) == t.topic_id) t.name = TopicForTable(table.name);
      }
    }
  }
  FindCoordinatorResponse FindCoordinator(const FindCoordinatorRequest& request) const;
  InitProducerIdResponse InitProducerId(const InitProducerIdRequest& request);
  DescribeConfigsResponse DescribeConfigs(const DescribeConfigsRequest& request);
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
  std::map<std::tuple<std::string, int32_t, int64_t>, ProducerState> producers_;
};

}  // namespace oxbow::kafka::internal
