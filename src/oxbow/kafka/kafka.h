// The Kafka listener: Kafka's producers, consumers and tools against a node's log tables
// (docs/kafka.md). A topic is a table, a partition a bucket, a Kafka offset an Oxbow offset.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/common/status.h"
#include "oxbow/node/node.h"

namespace oxbow::auth {
class Authenticator;
}

namespace oxbow::kafka {

// The schema registry's ids, for tables with kafka.value.format=avro-confluent
// (docs/kafka.md#avro-confluent): their values (and a primary-key table's keys) are Confluent's
// framing of an Avro datum, whose schema id the registry gives.
class SchemaIds {
 public:
  virtual ~SchemaIds() = default;
  // The id of the Avro schema `avro` (JSON), registered when the registry does not hold it yet.
  virtual Result<int32_t> IdOf(const std::string& avro) = 0;
};

struct KafkaOptions {
  // host:port to accept Kafka connections on. Port 0 picks a free port.
  std::string listen = "127.0.0.1:9092";
  // The host clients are told to connect to (Metadata, FindCoordinator). Default (empty): the
  // host of `listen`.
  std::string advertised_host;
  // A request frame larger than this closes the connection (Kafka's socket.request.max.bytes).
  int32_t max_request_bytes = 100 << 20;
  // Whether Metadata creates a topic it is asked about that does not exist.
  bool auto_create_topics = true;
  // The partitions of a topic created without a count (auto-created, or NumPartitions -1).
  int32_t default_partitions = 1;
  // What DescribeConfigs shows of a topic without retention.ms / retention.bytes of its own:
  // the server's log retention (log::LogOptions; -1: no limit). Default: LogOptions' defaults.
  int64_t default_retention_ms = int64_t{7} * 24 * 3600 * 1000;
  int64_t default_retention_bytes = -1;
  // The same for segment.bytes: the server's log segment size.
  int64_t default_segment_bytes = int64_t{256} << 20;
  // Users and grants: every connection must log in with SASL (PLAIN or SCRAM-SHA-256) and
  // each request needs a grant on the tables it touches. Default (null): no authentication.
  auth::Authenticator* authenticator = nullptr;
  // Keys the topic ids (docs/kafka.md#topic-ids), so that they look random and stay the same
  // across restarts. The server passes the data dir's auth::LoadOrCreateServerSecret.
  // Default: empty, the ids are still keyed, by the empty key.
  std::string server_secret;
  // PEM certificate chain and private key: the listener speaks TLS only. Default: plaintext.
  std::string tls_cert_file;
  std::string tls_key_file;
  // PEM CA bundle: clients must present a certificate signed by it. Default: none asked.
  std::string tls_client_ca_file;
  // The schema registry, which must outlive the server. Default (null): none, and
  // avro-confluent tables are refused.
  SchemaIds* schema_ids = nullptr;
};

// Whether Kafka producers may write to `table`: it is served through Kafka (the raw topic
// schema, or kafka.value.format json or avro; docs/kafka.md#mapping). A node serving Kafka
// replays these tables' idempotent batches at open (node::NodeOptions::may_hold_producers).
bool MayHoldProducers(const catalog::TableDescriptor& table);

// The table behind a topic: "ns.t" for a topic named so, "kafka.<topic>" for a topic without a
// dot, and for a name that is no table name (two dots or more, an empty part, a part over 128
// characters) "kafka.<its start, '.' as '_'>_<16 hex digits of its hash>"
// (docs/kafka.md#topic-names). Invalid when the name is no Kafka topic name.
Result<std::string> TableForTopic(std::string_view topic);

// Whether `table` has kafka.value.format=avro-confluent.
bool IsAvroConfluent(const catalog::TableDescriptor& table);
// The topic `table` is listed as (the inverse of TableForTopic).
std::string TopicOf(const catalog::TableDescriptor& table);
// The Avro schema (JSON) of rows of `schema` as Kafka values carry them: a record named "row"
// with a field per column, a nullable one a union of "null" and its type (docs/kafka.md#avro).
// Invalid naming the column that has no Avro form.
Result<std::string> AvroSchemaOf(const arrow::Schema& schema);
// The alter_table changes that make a table of `schema` have the columns of the Avro record
// `avro` (JSON, as AvroSchemaOf writes one): a field it lacks drops the column, a new field adds
// one (a union with "null": new columns are nullable) after the field before it, a wider type
// widens, a union with "null" makes a column optional. Invalid naming the field for anything
// else (a narrower or other type, a column made required, a type without a column form). The
// order of the fields is not checked here: AvroSchemaOf of the altered table tells.
Result<std::vector<catalog::SchemaChange>> ChangesToAvro(const arrow::Schema& schema,
                                                         std::string_view avro);

// A consumer group as its coordinator sees it: what `kafka-consumer-groups --describe` shows
// (the lag is its readers' to work out from the partitions' ends).
struct ConsumerGroup {
  struct Member {
    std::string member_id;
    std::optional<std::string> instance_id;  // a static member's group.instance.id
    std::string client_id;
    std::string client_host;
    // The partitions the group's leader assigned it (topic -> partitions); empty while the
    // group rebalances or when its assignment is not the consumer protocol's.
    std::map<std::string, std::vector<int32_t>> assignment;
  };
  struct Committed {
    std::string topic;
    int32_t partition = 0;
    int64_t offset = -1;
  };
  std::string group_id;
  std::string state;          // Empty, PreparingRebalance, CompletingRebalance or Stable
  std::string protocol_type;  // "consumer" for consumers ("" when it has no members)
  std::string protocol;       // the assignor chosen (range, roundrobin...), once Stable
  std::vector<Member> members;
  std::vector<Committed> committed;
};

class KafkaServer {
 public:
  // Binds `options.listen` and serves `node`, which must outlive the server and keep client
  // state (node::NodeOptions::client_state_dir: producer sequences, group offsets).
  static Result<std::unique_ptr<KafkaServer>> Start(node::Node* node, KafkaOptions options);
  virtual ~KafkaServer() = default;
  // The port actually bound.
  virtual int port() const = 0;
  // The groups this server coordinates (with members or committed offsets), by id.
  virtual std::vector<ConsumerGroup> ConsumerGroups() = 0;
  // Stops accepting, closes every connection and waits for their threads. Idempotent.
  virtual void Stop() = 0;
};

}  // namespace oxbow::kafka
