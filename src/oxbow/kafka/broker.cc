#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "oxbow/arrow/builder.h"
#include "oxbow/arrow/ipc.h"
#include "oxbow/arrow/record_batch.h"
#include "oxbow/kafka/avro_values_internal.h"
#include "oxbow/kafka/broker_internal.h"
#include "oxbow/metrics/metrics.h"
#include "oxbow/text/text.h"

namespace oxbow::kafka::internal {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kDefaultNamespace[] = "kafka";
constexpr int32_t kNodeId = 0;
constexpr char kClusterId[] = "oxbow";
// Tables put through Flight do not wake long-polling fetches; they re-check this often.
constexpr auto kFetchRecheck = std::chrono::milliseconds(20);
// The recent batches an idempotent producer may retry (Kafka's max in-flight requests).
constexpr size_t kRecentBatches = 5;
constexpr char kProducersFile[] = "producers.json";
// How often a changed producer state is saved: a restart after a crash replays at most the
// batches appended since.
constexpr auto kProducerSnapshotInterval = std::chrono::seconds(10);
// The metadata of an idempotent producer's stored batch: "<producer id> <epoch> <first sequence>
// <last sequence>".
constexpr std::string_view kProducerMetadataKey = "kafka.producer";

std::string ProducerMetadata(int64_t producer_id, int16_t epoch, int32_t first_sequence,
                             int32_t last_sequence) {
  return std::to_string(producer_id) + " " + std::to_string(epoch) + " " +
         std::to_string(first_sequence) + " " + std::to_string(last_sequence);
}

bool ParseProducerMetadata(const std::string& text, int64_t* producer_id, int32_t* epoch,
                           int32_t* first_sequence, int32_t* last_sequence) {
  std::istringstream in(text);
  in >> *producer_id >> *epoch >> *first_sequence >> *last_sequence;
  return !in.fail() && in.eof() && *producer_id >= 0 && *epoch >= 0 && *epoch <= INT16_MAX &&
         *first_sequence >= 0 && *last_sequence >= 0;
}
constexpr std::string_view kValueFormatProperty = "kafka.value.format";
constexpr std::string_view kSaslPlain = "PLAIN";
constexpr std::string_view kSaslScram = "SCRAM-SHA-256";
// How long a connection's grants are trusted before users.json is read again.
constexpr auto kUserRefresh = std::chrono::seconds(1);

ErrorCode ToErrorCode(const Status& st) {
  switch (st.code()) {
    case StatusCode::kNotFound: return ErrorCode::kUnknownTopicOrPartition;
    case StatusCode::kOutOfRange: return ErrorCode::kOffsetOutOfRange;
    case StatusCode::kInvalid: return ErrorCode::kInvalidRecord;
    case StatusCode::kAlreadyExists: return ErrorCode::kTopicAlreadyExists;
    default: return ErrorCode::kUnknownServerError;
  }
}

// How a table's rows are Kafka records (docs/kafka.md#mapping).
enum class TableKind {
  kRaw,    // the raw schema: key, value, timestamp, headers
  kJson,   // kafka.value.format=json: each value is one row as a JSON object
  kAvro,   // kafka.value.format=avro: each value is one row as an Avro datum
  kOther,  // not served through Kafka
};

TableKind KindOf(const catalog::TableDescriptor& table) {
  if (table.schema->Equals(*RawTopicSchema())) return TableKind::kRaw;
  auto format = table.properties.find(std::string(kValueFormatProperty));
  if (format == table.properties.end()) return TableKind::kOther;
  if (format->second == "json") return TableKind::kJson;
  if (format->second == "avro") return TableKind::kAvro;
  return TableKind::kOther;
}

std::string NotServedMessage(const std::string& table) {
  return "table " + Quote(table) +
         " is neither a raw Kafka table (key binary, value binary, timestamp, headers binary) "
         "nor has the property " +
         std::string(kValueFormatProperty) + "=json or avro";
}

// The rows of an Avro table as Kafka records: each value the row as an Avro datum, no key, the
// batch's append time.
Status AppendAvroRecords(const arrow::RecordBatch& rows, int64_t base_offset, int64_t skip,
                         int64_t append_time_ms, std::string* out) {
  if (skip >= rows.num_rows()) return Status::OK();
  RecordBatch batch;
  batch.base_offset = base_offset + skip;
  batch.base_timestamp = batch.max_timestamp = append_time_ms;
  for (int64_t i = skip; i < rows.num_rows(); ++i) {
    Record r;
    r.offset = base_offset + i;
    r.timestamp_ms = append_time_ms;
    std::string value;
    RETURN_NOT_OK(AppendAvroRow(rows, i, &value));
    r.value = std::move(value);
    batch.records.push_back(std::move(r));
  }
  batch.last_offset_delta = static_cast<int32_t>(rows.num_rows() - 1 - skip);
  return EncodeRecordBatch(batch, out);
}

// One Kafka record batch as rows of an Avro table; an error names the record.
Result<arrow::RecordBatchPtr> AvroBatchToRows(const RecordBatch& batch,
                                              const arrow::SchemaPtr& schema) {
  std::vector<std::string_view> values;
  for (size_t i = 0; i < batch.records.size(); ++i) {
    if (!batch.records[i].value) {
      return Status::Invalid("record " + std::to_string(i) + " has a null value");
    }
    values.push_back(*batch.records[i].value);
  }
  return AvroToRows(values, schema);
}

// The rows of a JSON table as Kafka records: each value the row as a JSON object (the JSON
// Lines form of docs/text-formats.md), no key, the batch's append time.
Status AppendJsonRecords(const arrow::RecordBatch& rows, int64_t base_offset, int64_t skip,
                         int64_t append_time_ms, std::string* out) {
  if (skip >= rows.num_rows()) return Status::OK();
  ASSIGN_OR_RAISE(std::string lines, text::FormatBatch(text::TextFormat::kJsonLines,
                                                       *rows.Slice(skip, rows.num_rows() - skip)));
  RecordBatch batch;
  batch.base_offset = base_offset + skip;
  batch.base_timestamp = batch.max_timestamp = append_time_ms;
  size_t start = 0;
  for (int64_t i = skip; i < rows.num_rows(); ++i) {
    const size_t end = lines.find('\n', start);
    Record r;
    r.offset = base_offset + i;
    r.timestamp_ms = append_time_ms;
    r.value = lines.substr(start, end - start);
    batch.records.push_back(std::move(r));
    start = end + 1;
  }
  batch.last_offset_delta = static_cast<int32_t>(rows.num_rows() - 1 - skip);
  return EncodeRecordBatch(batch, out);
}

// Parses values as JSON Lines rows of `schema`.
Result<arrow::RecordBatchPtr> ParseJsonRows(const std::string& lines, int64_t rows,
                                            const arrow::SchemaPtr& schema) {
  text::ReadOptions options;
  options.batch_rows = std::max<int64_t>(rows, 1);
  ASSIGN_OR_RAISE(auto reader,
                  text::TextReader::Make(text::TextFormat::kJsonLines, lines, schema, options));
  ASSIGN_OR_RAISE(auto batch, reader->Next());
  if (batch == nullptr || batch->num_rows() != rows) {
    return Status::Invalid("expected " + std::to_string(rows) + " JSON objects");
  }
  return batch;
}

// One Kafka record batch as rows of a JSON table; an error names the first record that is not
// a JSON object of the table's columns.
Result<arrow::RecordBatchPtr> JsonToRows(const RecordBatch& batch, const arrow::SchemaPtr& schema) {
  // JSON Lines needs one object per line: newlines between a value's tokens become spaces
  // (inside a string a raw newline is not JSON anyway).
  auto one_line = [](const Record& r, size_t i) -> Result<std::string> {
    if (!r.value) return Status::Invalid("record " + std::to_string(i) + " has a null value");
    std::string line = *r.value;
    std::replace(line.begin(), line.end(), '\n', ' ');
    std::replace(line.begin(), line.end(), '\r', ' ');
    if (line.find_first_not_of(" \t") == std::string::npos) {
      return Status::Invalid("record " + std::to_string(i) + " has an empty value");
    }
    return line;
  };
  std::string lines;
  for (size_t i = 0; i < batch.records.size(); ++i) {
    ASSIGN_OR_RAISE(std::string line, one_line(batch.records[i], i));
    lines += line;
    lines += '\n';
  }
  auto rows = ParseJsonRows(lines, static_cast<int64_t>(batch.records.size()), schema);
  if (rows.ok()) return rows;
  for (size_t i = 0; i < batch.records.size(); ++i) {  // which record is it?
    ASSIGN_OR_RAISE(std::string line, one_line(batch.records[i], i));
    auto one = ParseJsonRows(line + "\n", 1, schema);
    if (!one.ok()) return one.status().WithContext("record " + std::to_string(i));
  }
  return rows.status();
}

// The rows of a raw table as Kafka records, `skip` rows from its start left out.
Status AppendRecords(const arrow::RecordBatch& rows, int64_t base_offset, int64_t skip,
                     std::string* out) {
  if (skip >= rows.num_rows()) return Status::OK();
  const arrow::Array& key = rows.column(0);
  const arrow::Array& value = rows.column(1);
  const arrow::Array& timestamp = rows.column(2);
  const arrow::Array& headers = rows.column(3);
  RecordBatch batch;
  batch.base_offset = base_offset + skip;
  batch.base_timestamp = timestamp.Value<int64_t>(skip);
  batch.max_timestamp = batch.base_timestamp;
  for (int64_t i = skip; i < rows.num_rows(); ++i) {
    Record r;
    r.offset = base_offset + i;
    r.timestamp_ms = timestamp.Value<int64_t>(i);
    batch.max_timestamp = std::max(batch.max_timestamp, r.timestamp_ms);
    if (key.IsValid(i)) r.key = std::string(key.GetView(i));
    if (value.IsValid(i)) r.value = std::string(value.GetView(i));
    if (headers.IsValid(i)) {
      ASSIGN_OR_RAISE(r.headers, DecodeHeaders(headers.GetView(i)));
    }
    batch.records.push_back(std::move(r));
  }
  batch.last_offset_delta = static_cast<int32_t>(rows.num_rows() - 1 - skip);
  return EncodeRecordBatch(batch, out);
}

// One Kafka record batch as rows of a raw table.
Result<arrow::RecordBatchPtr> ToRows(const RecordBatch& batch) {
  arrow::BinaryBuilder key(arrow::DataType::Binary());
  arrow::BinaryBuilder value(arrow::DataType::Binary());
  arrow::Int64Builder timestamp(RawTopicSchema()->field(2).type);
  arrow::BinaryBuilder headers(arrow::DataType::Binary());
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  for (const Record& r : batch.records) {
    RETURN_NOT_OK(r.key ? key.Append(*r.key) : key.AppendNull());
    RETURN_NOT_OK(r.value ? value.Append(*r.value) : value.AppendNull());
    RETURN_NOT_OK(timestamp.Append(batch.log_append_time ? now_ms : r.timestamp_ms));
    RETURN_NOT_OK(r.headers.empty() ? headers.AppendNull()
                                    : headers.Append(EncodeHeaders(r.headers)));
  }
  std::vector<arrow::Array> columns;
  for (arrow::ArrayBuilder* b :
       std::initializer_list<arrow::ArrayBuilder*>{&key, &value, &timestamp, &headers}) {
    ASSIGN_OR_RAISE(auto array, b->Finish());
    columns.push_back(std::move(array));
  }
  return arrow::RecordBatch::Make(RawTopicSchema(), static_cast<int64_t>(batch.records.size()),
                                  std::move(columns));
}

}  // namespace

const arrow::SchemaPtr& RawTopicSchema() {
  using arrow::DataType;
  static const arrow::SchemaPtr kSchema =
      std::make_shared<const arrow::Schema>(std::vector<arrow::Field>{
          {"key", DataType::Binary(), true, {}},
          {"value", DataType::Binary(), true, {}},
          {"timestamp", DataType::Timestamp(arrow::TimeUnit::kMilli, "UTC"), false, {}},
          {"headers", DataType::Binary(), true, {}}});
  return kSchema;
}

Result<std::string> TableForTopic(std::string_view topic) {
  if (topic.empty() || topic.size() > 249) {
    return Status::Invalid("topic name must have 1 to 249 characters");
  }
  std::string table = topic.find('.') == std::string_view::npos
                          ? std::string(kDefaultNamespace) + "." + std::string(topic)
                          : std::string(topic);
  RETURN_NOT_OK(catalog::ValidateTableName(table).WithContext("topic " + Quote(topic)));
  return table;
}

Uuid TopicId(std::string_view server_secret, int64_t table_id) {
  const std::string mac =
      auth::KeyedHash(server_secret, "kafka-topic-id:" + std::to_string(table_id));
  Uuid id{};
  std::copy_n(mac.begin(), id.size(), id.begin());
  // Never Kafka's reserved ids: zero, and 1 (the metadata topic).
  if (std::all_of(id.begin(), id.end() - 1, [](uint8_t b) { return b == 0; })) id[0] = 1;
  return id;
}

std::string TopicForTable(std::string_view table) {
  const std::string prefix = std::string(kDefaultNamespace) + ".";
  return table.starts_with(prefix) ? std::string(table.substr(prefix.size())) : std::string(table);
}

Broker::Broker(node::Node* node, KafkaOptions options, int port,
               std::unique_ptr<GroupCoordinator> groups)
    : node_(node),
      options_(std::move(options)),
      host_(options_.advertised_host.empty() ? options_.listen.substr(0, options_.listen.rfind(':'))
                                             : options_.advertised_host),
      port_(port),
      groups_(std::move(groups)),
      // Ids unique across restarts without storing a counter: microseconds since the epoch.
      next_producer_id_(std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count()) {}

void Broker::Stop() {
  stopping_ = true;
  {
    std::lock_guard lock(appended_mu_);
    appended_.notify_all();
  }
  groups_->Stop();
}

Result<std::optional<std::string>> Broker::Handle(std::string_view frame, Session& session) {
  Reader r(frame);
  const RequestHeader header = DecodeRequestHeader(r);
  if (!r.ok()) return r.status().WithContext("request header");
  const ApiSupport* api = FindApi(header.api_key);
  if (api == nullptr) {
    return Status::NotImplemented("API key " + std::to_string(header.api_key) + " is not served");
  }
  const bool supported =
      header.api_version >= api->min_version && header.api_version <= api->max_version;
  Writer w;
  if (api->key == ApiKey::kApiVersions && !supported) {
    // Kafka's answer to a too new ApiVersions: v0, UNSUPPORTED_VERSION and the versions served.
    EncodeResponseHeader(w, header.correlation_id, false);
    Encode(ApiVersions(ErrorCode::kUnsupportedVersion), 0, w);
    return std::optional<std::string>(w.Take());
  }
  if (!supported) {
    return Status::NotImplemented("API key " + std::to_string(header.api_key) + " version " +
                                  std::to_string(header.api_version) + " is not served (" +
                                  std::to_string(api->min_version) + "-" +
                                  std::to_string(api->max_version) + ")");
  }
  const bool sasl_api = api->key == ApiKey::kApiVersions || api->key == ApiKey::kSaslHandshake ||
                        api->key == ApiKey::kSaslAuthenticate;
  if (auth_required() && !sasl_api) {
    if (!session.user) {
      return Status::Unauthenticated("API key " + std::to_string(header.api_key) +
                                     " before the SASL login (the listener requires --auth)");
    }
    if (Clock::now() - session.user_loaded > kUserRefresh) {
      // Grants and removals in users.json apply to open connections too.
      ASSIGN_OR_RAISE(session.user, options_.authenticator->Reload(*session.user));
      session.user_loaded = Clock::now();
    }
  }
  // ApiVersions answers with header v0 whatever its version, so that any client can read it.
  EncodeResponseHeader(w, header.correlation_id,
                       IsFlexible(*api, header.api_version) && api->key != ApiKey::kApiVersions);
  bool no_response = false;
  auto body = HandleBody(header, *api, r, session, &no_response);
  if (!body.ok()) {
    return body.status().WithContext("API key " + std::to_string(header.api_key) + " version " +
                                     std::to_string(header.api_version));
  }
  if (no_response) return std::optional<std::string>();
  w.Raw(*body);
  return std::optional<std::string>(w.Take());
}

Result<std::string> Broker::HandleBody(const RequestHeader& header, const ApiSupport& api,
                                       Reader& r, Session& session, bool* no_response) {
  const int16_t v = header.api_version;
  Writer w;
  switch (api.key) {
    case ApiKey::kApiVersions: {
      ASSIGN_OR_RAISE(auto req, DecodeApiVersions(r, v));
      (void)req;
      Encode(ApiVersions(ErrorCode::kNone), v, w);
      break;
    }
    case ApiKey::kMetadata: {
      ASSIGN_OR_RAISE(auto req, DecodeMetadata(r, v));
      Encode(Metadata(req, session), v, w);
      break;
    }
    case ApiKey::kCreateTopics: {
      ASSIGN_OR_RAISE(auto req, DecodeCreateTopics(r, v));
      Encode(CreateTopics(req, v, session), v, w);
      break;
    }
    case ApiKey::kDeleteTopics: {
      ASSIGN_OR_RAISE(auto req, DecodeDeleteTopics(r, v));
      Encode(DeleteTopics(req, session), v, w);
      break;
    }
    case ApiKey::kListOffsets: {
      ASSIGN_OR_RAISE(auto req, DecodeListOffsets(r, v));
      Encode(ListOffsets(req, session), v, w);
      break;
    }
    case ApiKey::kProduce: {
      ASSIGN_OR_RAISE(auto req, DecodeProduce(r, v));
      if (v >= 13) NameTopicsById(req.topics, session);
      ProduceResponse response = Produce(req, v, session);
      *no_response = req.acks == 0;
      Encode(response, v, w);
      break;
    }
    case ApiKey::kFetch: {
      ASSIGN_OR_RAISE(auto req, DecodeFetch(r, v));
      if (v >= 13) NameTopicsById(req.topics, session);
      Encode(Fetch(req, session), v, w);
      break;
    }
    case ApiKey::kFindCoordinator: {
      ASSIGN_OR_RAISE(auto req, DecodeFindCoordinator(r, v));
      Encode(FindCoordinator(req), v, w);
      break;
    }
    case ApiKey::kJoinGroup: {
      ASSIGN_OR_RAISE(auto req, DecodeJoinGroup(r, v));
      Encode(groups_->Join(req, header.client_id.value_or(""), session.client_host), v, w);
      break;
    }
    case ApiKey::kSyncGroup: {
      ASSIGN_OR_RAISE(auto req, DecodeSyncGroup(r, v));
      Encode(groups_->Sync(req), v, w);
      break;
    }
    case ApiKey::kHeartbeat: {
      ASSIGN_OR_RAISE(auto req, DecodeHeartbeat(r, v));
      EncodeHeartbeat(groups_->Heartbeat(req), v, w);
      break;
    }
    case ApiKey::kLeaveGroup: {
      ASSIGN_OR_RAISE(auto req, DecodeLeaveGroup(r, v));
      Encode(groups_->Leave(req), v, w);
      break;
    }
    case ApiKey::kSaslHandshake: {
      ASSIGN_OR_RAISE(auto req, DecodeSaslHandshake(r, v));
      Encode(SaslHandshake(req, session), v, w);
      break;
    }
    case ApiKey::kSaslAuthenticate: {
      ASSIGN_OR_RAISE(auto req, DecodeSaslAuthenticate(r, v));
      Encode(SaslAuthenticate(req, session), v, w);
      break;
    }
    case ApiKey::kOffsetCommit: {
      ASSIGN_OR_RAISE(auto req, DecodeOffsetCommit(r, v));
      // Committing a topic's offsets needs read access to it.
      std::vector<OffsetCommitTopicResult> denied_commits;
      std::erase_if(req.topics, [&](const OffsetCommitTopic& t) {
        if (Allows(session, t.name, auth::Access::kRead)) return false;
        OffsetCommitTopicResult result{t.name, {}};
        for (const auto& p : t.partitions) {
          result.partitions.push_back({p.index, ErrorCode::kTopicAuthorizationFailed});
        }
        denied_commits.push_back(std::move(result));
        return true;
      });
      auto response = groups_->Commit(req, v);
      if (!response.ok()) {
        spdlog::error("kafka: committing offsets of group '{}': {}", req.group_id,
                      response.status().message());
        OffsetCommitResponse failed;
        for (const auto& t : req.topics) {
          OffsetCommitTopicResult result{t.name, {}};
          for (const auto& p : t.partitions) {
            result.partitions.push_back({p.index, ErrorCode::kUnknownServerError});
          }
          failed.topics.push_back(std::move(result));
        }
        for (auto& d : denied_commits) failed.topics.push_back(std::move(d));
        Encode(failed, v, w);
      } else {
        for (auto& d : denied_commits) response->topics.push_back(std::move(d));
        Encode(*response, v, w);
      }
      break;
    }
    case ApiKey::kOffsetFetch: {
      ASSIGN_OR_RAISE(auto req, DecodeOffsetFetch(r, v));
      OffsetFetchResponse response = groups_->FetchOffsets(req);
      // The committed offsets of a topic are shown to readers of the topic only.
      for (auto& g : response.groups) {
        std::erase_if(g.topics, [&](OffsetFetchTopicResult& t) {
          if (Allows(session, t.name, auth::Access::kRead)) return false;
          const bool asked = std::any_of(req.groups.begin(), req.groups.end(), [&](const auto& rg) {
            return rg.group_id == g.group_id && rg.topics &&
                   std::any_of(rg.topics->begin(), rg.topics->end(),
                               [&](const auto& rt) { return rt.name == t.name; });
          });
          for (auto& p : t.partitions) {
            p = {p.index, -1, std::nullopt, ErrorCode::kTopicAuthorizationFailed};
          }
          return !asked;  // named topics are answered with the error, the others left out
        });
      }
      Encode(response, v, w);
      break;
    }
    case ApiKey::kInitProducerId: {
      ASSIGN_OR_RAISE(auto req, DecodeInitProducerId(r, v));
      Encode(InitProducerId(req), v, w);
      break;
    }
    case ApiKey::kDescribeGroups: {
      ASSIGN_OR_RAISE(auto req, DecodeDescribeGroups(r, v));
      Encode(groups_->Describe(req), v, w);
      break;
    }
    case ApiKey::kListGroups: {
      ASSIGN_OR_RAISE(auto req, DecodeListGroups(r, v));
      Encode(groups_->List(req), v, w);
      break;
    }
    case ApiKey::kDescribeConfigs: {
      ASSIGN_OR_RAISE(auto req, DecodeDescribeConfigs(r, v));
      Encode(DescribeConfigs(req, session), v, w);
      break;
    }
  }
  return w.Take();
}

std::optional<std::string> Broker::TopicById(const Uuid& topic_id, const Session& session) const {
  for (const auto& table : node_->ListTables()) {
    if (TopicId(options_.server_secret, table.table_id) != topic_id) continue;
    std::string topic = TopicForTable(table.name);
    if (!Allows(session, topic, auth::Access::kRead)) return std::nullopt;
    return topic;
  }
  return std::nullopt;
}

bool Broker::Allows(const Session& session, const std::string& topic, auth::Access access) const {
  if (!auth_required()) return true;
  if (!session.user) return false;
  auto table = TableForTopic(topic);
  // A name that is no table is answered as such by the request's own checks.
  return !table.ok() || session.user->Allows(*table, access);
}

namespace {

// What a client is told of a failed login: the lockout says so and when to retry (the
// Authenticator's message); any other failure gives nothing away.
std::string LoginFailureMessage(const Status& status, std::string_view otherwise) {
  if (status.code() == StatusCode::kResourceExhausted) {
    return "Authentication failed: " + status.message();
  }
  return "Authentication failed: " + std::string(otherwise);
}

}  // namespace

SaslHandshakeResponse Broker::SaslHandshake(const SaslHandshakeRequest& request, Session& session) {
  SaslHandshakeResponse response;
  if (!auth_required()) {
    // Kafka's PLAINTEXT and SSL listeners know no SASL mechanism either.
    response.error = ErrorCode::kUnsupportedSaslMechanism;
    session.close_after_response = true;
    return response;
  }
  response.mechanisms = {std::string(kSaslPlain), std::string(kSaslScram)};
  if (session.user || !session.mechanism.empty()) {
    response.error = ErrorCode::kIllegalSaslState;  // no re-authentication
    session.close_after_response = true;
  } else if (request.mechanism != kSaslPlain && request.mechanism != kSaslScram) {
    response.error = ErrorCode::kUnsupportedSaslMechanism;
    session.close_after_response = true;
  } else {
    session.mechanism = request.mechanism;
  }
  return response;
}

SaslAuthenticateResponse Broker::SaslAuthenticate(const SaslAuthenticateRequest& request,
                                                  Session& session) {
  SaslAuthenticateResponse response;
  auto fail = [&](ErrorCode error, std::string message) {
    response.error = error;
    response.message = std::move(message);
    response.auth_bytes.clear();
    session.close_after_response = true;  // as Kafka does after a failed login
    return response;
  };
  if (!auth_required() || session.mechanism.empty() || session.user) {
    return fail(ErrorCode::kIllegalSaslState,
                "SaslAuthenticate needs a SaslHandshake first (and only one login per connection)");
  }
  auto login = [&](auth::User user) {
    spdlog::debug("kafka: {} logged in from {} with {}", user.name, session.client_host,
                  session.mechanism);
    session.user = std::move(user);
    session.user_loaded = Clock::now();
  };
  if (session.mechanism == kSaslPlain) {
    auto credentials = auth::ParseSaslPlain(request.auth_bytes);
    if (!credentials.ok()) {
      node_->metrics().AddError("sasl", StatusCodeName(credentials.status().code()));
      return fail(ErrorCode::kSaslAuthenticationFailed, credentials.status().message());
    }
    auto user = options_.authenticator->CheckPassword(credentials->first, credentials->second);
    if (!user.ok()) {
      spdlog::warn("kafka: failed SASL/PLAIN login from {}", session.client_host);
      node_->metrics().AddError("sasl", StatusCodeName(user.status().code()));
      return fail(ErrorCode::kSaslAuthenticationFailed,
                  LoginFailureMessage(user.status(), "invalid username or password"));
    }
    login(std::move(user).ValueOrDie());
    return response;
  }
  if (!session.scram) {
    session.scram = std::make_unique<auth::ScramSha256Server>(options_.authenticator);
    auto first = session.scram->ClientFirst(request.auth_bytes);
    if (!first.ok()) {
      spdlog::warn("kafka: failed SASL/SCRAM-SHA-256 login from {}", session.client_host);
      node_->metrics().AddError("sasl", StatusCodeName(first.status().code()));
      return fail(ErrorCode::kSaslAuthenticationFailed,
                  LoginFailureMessage(first.status(), first.status().message()));
    }
    response.auth_bytes = std::move(first).ValueOrDie();
    return response;
  }
  auto final_message = session.scram->ClientFinal(request.auth_bytes);
  if (!final_message.ok()) {
    spdlog::warn("kafka: failed SASL/SCRAM-SHA-256 login from {}", session.client_host);
    node_->metrics().AddError("sasl", StatusCodeName(final_message.status().code()));
    return fail(ErrorCode::kSaslAuthenticationFailed,
                LoginFailureMessage(final_message.status(),
                                    "invalid credentials with SASL mechanism SCRAM-SHA-256"));
  }
  response.auth_bytes = std::move(final_message->first);
  login(std::move(final_message->second));
  session.scram.reset();
  return response;
}

ApiVersionsResponse Broker::ApiVersions(ErrorCode error) const {
  return ApiVersionsResponse{error, SupportedApis()};
}

std::pair<ErrorCode, std::string> Broker::CreateRawTopic(const std::string& topic,
                                                         int32_t partitions) {
  auto table = TableForTopic(topic);
  if (!table.ok()) return {ErrorCode::kInvalidTopicException, table.status().message()};
  catalog::CreateTableRequest request;
  request.table.name = *table;
  request.table.schema = RawTopicSchema();
  request.table.buckets = partitions;
  auto created = node_->CreateTable(request);
  if (created.ok()) {
    // Offsets committed to an earlier topic of this name (one dropped over Flight) are stale.
    if (Status forgot = groups_->ForgetTopics({topic, TopicForTable(*table)}); !forgot.ok()) {
      spdlog::error("kafka: created topic {} but kept stale committed offsets: {}", topic,
                    forgot.message());
    }
    return {ErrorCode::kNone, ""};
  }
  const Status& st = created.status();
  return {st.code() == StatusCode::kAlreadyExists ? ErrorCode::kTopicAlreadyExists
                                                  : ErrorCode::kInvalidRequest,
          st.message()};
}

MetadataResponse Broker::Metadata(const MetadataRequest& request, const Session& session) {
  MetadataResponse response;
  response.brokers.push_back({kNodeId, host_, port_});
  response.cluster_id = kClusterId;
  response.controller_id = kNodeId;
  auto describe = [&](const catalog::TableDescriptor& table, std::string topic) {
    MetadataTopic t;
    t.name = std::move(topic);
    t.topic_id = TopicId(options_.server_secret, table.table_id);
    for (int32_t b = 0; b < table.buckets; ++b) {
      t.partitions.push_back({ErrorCode::kNone, b, kNodeId, {kNodeId}});
    }
    return t;
  };
  if (!request.topics) {
    for (const auto& table : node_->ListTables()) {
      const std::string topic = TopicForTable(table.name);
      if (Allows(session, topic, auth::Access::kRead)) {
        response.topics.push_back(describe(table, topic));
      }
    }
    return response;
  }
  for (const std::string& topic : *request.topics) {
    auto table = TableForTopic(topic);
    if (!table.ok()) {
      response.topics.push_back({ErrorCode::kInvalidTopicException, topic, {}, {}});
      continue;
    }
    if (!Allows(session, topic, auth::Access::kRead)) {
      response.topics.push_back({ErrorCode::kTopicAuthorizationFailed, topic, {}, {}});
      continue;
    }
    auto found = node_->DescribeTable(*table);
    const bool create = found.status().IsNotFound() && request.allow_auto_topic_creation &&
                        options_.auto_create_topics;
    if (create && !Allows(session, topic, auth::Access::kAdmin)) {
      // As Kafka answers a missing topic the user may not create.
      response.topics.push_back({ErrorCode::kTopicAuthorizationFailed, topic, {}, {}});
      continue;
    }
    if (create) {
      const auto [error, message] = CreateRawTopic(topic, options_.default_partitions);
      if (error != ErrorCode::kNone && error != ErrorCode::kTopicAlreadyExists) {
        spdlog::warn("kafka: auto-creating topic '{}': {}", topic, message);
      }
      found = node_->DescribeTable(*table);
    }
    if (!found.ok()) {
      response.topics.push_back({ErrorCode::kUnknownTopicOrPartition, topic, {}, {}});
      continue;
    }
    response.topics.push_back(describe(found->table.table, topic));
  }
  return response;
}

CreateTopicsResponse Broker::CreateTopics(const CreateTopicsRequest& request, int16_t version,
                                          const Session& session) {
  CreateTopicsResponse response;
  for (const CreatableTopic& t : request.topics) {
    CreateTopicResult result;
    result.name = t.name;
    const int32_t partitions =
        t.num_partitions == -1 ? options_.default_partitions : t.num_partitions;
    if (!Allows(session, t.name, auth::Access::kAdmin)) {
      result.error = ErrorCode::kTopicAuthorizationFailed;
      result.message = "creating " + Quote(t.name) + " needs admin access to its table";
    } else if (partitions <= 0) {
      result.error = ErrorCode::kInvalidPartitions;
      result.message = "the number of partitions must be positive";
    } else if (t.replication_factor != -1 && t.replication_factor != 1) {
      result.error = ErrorCode::kInvalidReplicationFactor;
      result.message = "Oxbow keeps one copy of each partition: replication factor must be 1";
    } else if (t.assignments > 0) {
      result.error = ErrorCode::kInvalidRequest;
      result.message = "manual replica assignments are not supported";
    } else if (!t.configs.empty()) {
      result.error = ErrorCode::kInvalidConfig;
      result.message = "topic configs are not supported (" + Quote(t.configs[0].first) +
                       "): set table properties through Flight";
    } else if (auto table = TableForTopic(t.name); !table.ok()) {
      result.error = ErrorCode::kInvalidTopicException;
      result.message = table.status().message();
    } else if (request.validate_only) {
      if (node_->DescribeTable(*table).ok()) {
        result.error = ErrorCode::kTopicAlreadyExists;
        result.message = "topic " + Quote(t.name) + " already exists";
      }
    } else {
      auto [error, message] = CreateRawTopic(t.name, partitions);
      result.error = error;
      if (error != ErrorCode::kNone) result.message = std::move(message);
    }
    if (result.error == ErrorCode::kNone) {
      result.num_partitions = partitions;
      result.replication_factor = 1;
      if (version >= 7 && !request.validate_only) {
        auto table = node_->DescribeTable(*TableForTopic(t.name));
        if (table.ok()) {
          result.topic_id = TopicId(options_.server_secret, table->table.table.table_id);
        }
      }
    }
    response.topics.push_back(std::move(result));
  }
  return response;
}

DeleteTopicsResponse Broker::DeleteTopics(const DeleteTopicsRequest& request,
                                          const Session& session) {
  DeleteTopicsResponse response;
  for (size_t i = 0; i < request.names.size(); ++i) {
    DeleteTopicResult result;
    result.name = request.names[i];
    result.topic_id = request.topic_ids[i];
    if (!result.name) {
      // By id: an id whose table the session may not read is answered as unknown, nameless.
      result.name = TopicById(result.topic_id, session);
      if (!result.name) {
        result.error = ErrorCode::kUnknownTopicId;
        result.message = "no topic has this id";
        response.results.push_back(std::move(result));
        continue;
      }
    }
    std::optional<std::string> table;
    if (auto t = TableForTopic(*result.name); t.ok()) table = *t;
    if (!Allows(session, *result.name, auth::Access::kAdmin)) {
      result.error = ErrorCode::kTopicAuthorizationFailed;
      result.message = "deleting " + Quote(*result.name) + " needs admin access to its table";
      response.results.push_back(std::move(result));
      continue;
    }
    Status st = table ? node_->DropTable(*table) : Status::NotFound("no such topic");
    if (!st.ok()) {
      result.error = ToErrorCode(st);
      result.message = st.message();
    } else if (Status forgot = groups_->ForgetTopics({*result.name, TopicForTable(*table)});
               !forgot.ok()) {
      // As in Kafka, the topic is gone whatever becomes of its groups' offsets.
      spdlog::error("kafka: deleted topic {} but not its committed offsets: {}", *result.name,
                    forgot.message());
    }
    response.results.push_back(std::move(result));
  }
  return response;
}

ListOffsetsResponse Broker::ListOffsets(const ListOffsetsRequest& request, const Session& session) {
  ListOffsetsResponse response;
  for (const auto& t : request.topics) {
    ListOffsetsTopicResult tr{t.name, {}};
    auto table = TableForTopic(t.name);
    auto described = table.ok() ? node_->DescribeTable(*table) : table.status();
    const bool allowed = Allows(session, t.name, auth::Access::kRead);
    for (const auto& p : t.partitions) {
      ListOffsetsPartitionResult pr;
      pr.index = p.index;
      if (!allowed) {
        pr.error = ErrorCode::kTopicAuthorizationFailed;
      } else if (!described.ok() || p.index < 0 ||
                 p.index >= static_cast<int32_t>(described->table.buckets.size())) {
        pr.error = ErrorCode::kUnknownTopicOrPartition;
      } else {
        const engine::BucketStatus& bucket = described->table.buckets[p.index];
        if (p.timestamp == -1) {
          pr.offset = bucket.next_offset;
        } else if (p.timestamp == -2 || p.timestamp == -4) {
          pr.offset = bucket.earliest_offset;
        } else if (p.timestamp < 0) {
          pr.error = ErrorCode::kInvalidRequest;  // max timestamp (-3) and tiered offsets
        } else {
          engine::ReadRequest read;
          read.table = *table;
          read.bucket = p.index;
          read.from.kind = engine::StartPosition::Kind::kTimestamp;
          read.from.timestamp_ms = p.timestamp;
          auto cursor = node_->OpenRead(read);
          auto batch = cursor.ok() ? (*cursor)->Next(Clock::now())
                                   : Result<std::optional<engine::ReadBatch>>(cursor.status());
          if (!batch.ok()) {
            pr.error = ToErrorCode(batch.status());
          } else if (batch->has_value()) {
            pr.offset = (*batch)->base_offset;
            pr.timestamp = (*batch)->append_time_ms;
          }
        }
      }
      tr.partitions.push_back(pr);
    }
    response.topics.push_back(std::move(tr));
  }
  return response;
}

ProduceResponse Broker::Produce(const ProduceRequest& request, int16_t version,
                                const Session& session) {
  ProduceResponse response;
  for (const auto& t : request.topics) {
    ProduceTopicResult tr{t.name, t.topic_id, {}};
    for (const auto& p : t.partitions) {
      if (t.name.empty()) {
        tr.partitions.push_back({p.index, ErrorCode::kUnknownTopicId, -1, -1, {}, std::nullopt});
      } else if (!Allows(session, t.name, auth::Access::kWrite)) {
        tr.partitions.push_back(
            {p.index,
             ErrorCode::kTopicAuthorizationFailed,
             -1,
             -1,
             {},
             "producing to " + Quote(t.name) + " needs write access to its table"});
      } else if (version < 3) {
        tr.partitions.push_back({p.index,
                                 ErrorCode::kUnsupportedVersion,
                                 -1,
                                 -1,
                                 {},
                                 "Produce v" + std::to_string(version) +
                                     " (message format v0/v1) is not supported: use v3+"});
      } else if (request.transactional_id) {
        tr.partitions.push_back({p.index,
                                 ErrorCode::kTransactionalIdAuthorizationFailed,
                                 -1,
                                 -1,
                                 {},
                                 "transactions are not supported"});
      } else {
        tr.partitions.push_back(ProducePartition(t.name, p));
      }
    }
    response.topics.push_back(std::move(tr));
  }
  {
    std::lock_guard lock(appended_mu_);
    ++appends_;
    appended_.notify_all();
  }
  return response;
}

ProducePartitionResult Broker::ProducePartition(const std::string& topic,
                                                const kafka::ProducePartition& part) {
  const auto started = Clock::now();
  ProducePartitionResult result;
  result.index = part.index;
  auto fail = [&](ErrorCode error, std::string message) {
    result.error = error;
    result.message = std::move(message);
    return result;
  };
  auto table = TableForTopic(topic);
  if (!table.ok()) return fail(ErrorCode::kUnknownTopicOrPartition, table.status().message());
  auto described = node_->DescribeTable(*table);
  if (!described.ok())
    return fail(ErrorCode::kUnknownTopicOrPartition, described.status().message());
  const catalog::TableDescriptor& desc = described->table.table;
  if (part.index < 0 || part.index >= desc.buckets) {
    return fail(ErrorCode::kUnknownTopicOrPartition,
                "partition " + std::to_string(part.index) + " does not exist");
  }
  const TableKind kind = KindOf(desc);
  if (kind == TableKind::kOther)
    return fail(ErrorCode::kInvalidRecord, NotServedMessage(desc.name));
  if (!part.records) return fail(ErrorCode::kCorruptMessage, "null record set");
  auto batches = DecodeRecordBatches(*part.records);
  if (!batches.ok()) return fail(ErrorCode::kCorruptMessage, batches.status().message());
  auto session = node_->StartPutToBucket(*table, desc.schema, part.index);
  if (!session.ok()) return fail(ToErrorCode(session.status()), session.status().message());
  result.log_start_offset = described->table.buckets[part.index].earliest_offset;
  std::vector<metrics::BucketRows> appended_rows;
  for (size_t i = 0; i < batches->size(); ++i) {
    const RecordBatch& batch = (*batches)[i];
    if (batch.transactional || batch.control) {
      return fail(ErrorCode::kInvalidRecord, "transactional batches are not supported");
    }
    auto rows = kind == TableKind::kRaw    ? ToRows(batch)
                : kind == TableKind::kJson ? JsonToRows(batch, desc.schema)
                                           : AvroBatchToRows(batch, desc.schema);
    if (!rows.ok()) {
      result.record_errors.push_back({static_cast<int32_t>(i), rows.status().message()});
      return fail(ErrorCode::kInvalidRecord,
                  "record batch " + std::to_string(i) + ": " + rows.status().message());
    }
    std::unique_lock producers(producers_mu_, std::defer_lock);
    ProducerState* state = nullptr;
    const int32_t last_sequence = batch.base_sequence + batch.last_offset_delta;
    if (batch.producer_id >= 0) {
      producers.lock();
      state = &producers_[{*table, part.index, batch.producer_id}];
      if (batch.producer_epoch < state->epoch) {
        return fail(ErrorCode::kInvalidProducerEpoch,
                    "producer epoch " + std::to_string(batch.producer_epoch) + " is older than " +
                        std::to_string(state->epoch));
      }
      const bool same_epoch = batch.producer_epoch == state->epoch;
      const auto duplicate =
          std::find_if(state->recent.begin(), state->recent.end(), [&](const auto& a) {
            return a.first_sequence == batch.base_sequence && a.last_sequence == last_sequence;
          });
      if (same_epoch && duplicate != state->recent.end()) {
        if (i == 0) result.base_offset = duplicate->base_offset;
        continue;  // a retry of a batch already appended: acknowledged, not appended again
      }
      if (same_epoch && state->last_sequence >= 0 &&
          batch.base_sequence != ((state->last_sequence + int64_t{1}) & INT32_MAX)) {
        return fail(ErrorCode::kOutOfOrderSequenceNumber,
                    "sequence " + std::to_string(batch.base_sequence) + " after " +
                        std::to_string(state->last_sequence));
      }
    }
    // An idempotent batch carries its producer in the stored batch, durable with its rows.
    auto appended = state == nullptr
                        ? (*session)->Append(**rows)
                        : (*session)->AppendWithMetadata(
                              **rows, {{std::string(kProducerMetadataKey),
                                        ProducerMetadata(batch.producer_id, batch.producer_epoch,
                                                         batch.base_sequence, last_sequence)}});
    if (!appended.ok()) return fail(ToErrorCode(appended.status()), appended.status().message());
    const int64_t base_offset = appended->empty() ? -1 : appended->front().base_offset;
    if (i == 0) result.base_offset = base_offset;
    if (state != nullptr) {
      state->Record(batch.producer_epoch, batch.base_sequence, last_sequence, base_offset);
      producers_changed_ = true;
    }
    for (const auto& range : *appended) appended_rows.push_back({range.bucket, range.rows});
  }
  if (!appended_rows.empty()) {
    node_->metrics().AddPut(*table, appended_rows, static_cast<int64_t>(part.records->size()),
                            std::chrono::duration<double>(Clock::now() - started).count());
  }
  return result;
}

FetchPartitionResult Broker::FetchPartition(const std::string& topic,
                                            const kafka::FetchPartition& part, int64_t max_bytes) {
  const auto started = Clock::now();
  FetchPartitionResult result;
  result.index = part.index;
  auto table = TableForTopic(topic);
  auto described = table.ok() ? node_->DescribeTable(*table) : table.status();
  if (!described.ok() || part.index < 0 || part.index >= described->table.table.buckets) {
    result.error = ErrorCode::kUnknownTopicOrPartition;
    return result;
  }
  const engine::BucketStatus& bucket = described->table.buckets[part.index];
  result.high_watermark = bucket.next_offset;
  result.log_start_offset = bucket.earliest_offset;
  if (part.fetch_offset < bucket.earliest_offset || part.fetch_offset > bucket.next_offset) {
    result.error = ErrorCode::kOffsetOutOfRange;
    return result;
  }
  if (part.fetch_offset == bucket.next_offset) return result;
  const TableKind kind = KindOf(described->table.table);
  if (kind == TableKind::kOther) {
    spdlog::warn("kafka: fetch from {}", NotServedMessage(*table));
    result.error = ErrorCode::kInvalidRecord;
    return result;
  }
  engine::ReadRequest read;
  read.table = *table;
  read.bucket = part.index;
  read.from.kind = engine::StartPosition::Kind::kOffset;
  read.from.offset = part.fetch_offset;
  read.to = bucket.next_offset;
  auto cursor = node_->OpenRead(read);
  Status st = cursor.status();
  const int64_t limit = std::min<int64_t>(max_bytes, part.max_bytes);
  int64_t rows_sent = 0;
  // Always one batch at least, however large, so that consumers make progress (KIP-74).
  while (st.ok() &&
         (result.records.empty() || static_cast<int64_t>(result.records.size()) < limit)) {
    auto batch = (*cursor)->NextDecoded(Clock::now());
    if (!batch.ok()) {
      st = batch.status();
      break;
    }
    if (!batch->has_value()) break;
    const engine::DecodedBatch& b = **batch;
    const int64_t skip = std::max<int64_t>(0, part.fetch_offset - b.base_offset);
    rows_sent += std::max<int64_t>(0, b.batch->num_rows() - skip);
    st = kind == TableKind::kRaw ? AppendRecords(*b.batch, b.base_offset, skip, &result.records)
         : kind == TableKind::kJson
             ? AppendJsonRecords(*b.batch, b.base_offset, skip, b.append_time_ms, &result.records)
             : AppendAvroRecords(*b.batch, b.base_offset, skip, b.append_time_ms, &result.records);
  }
  if (!st.ok()) {
    spdlog::error("kafka: fetch of '{}' partition {}: {}", topic, part.index, st.message());
    result.error = result.records.empty() ? ToErrorCode(st) : ErrorCode::kNone;
  }
  if (rows_sent > 0) {
    node_->metrics().AddFetch(*table, part.index, rows_sent,
                              static_cast<int64_t>(result.records.size()),
                              std::chrono::duration<double>(Clock::now() - started).count());
  }
  return result;
}

FetchResponse Broker::Fetch(const FetchRequest& request, const Session& session) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(std::max(0, request.max_wait_ms));
  while (true) {
    uint64_t seen;
    {
      std::lock_guard lock(appended_mu_);
      seen = appends_;
    }
    FetchResponse response;
    int64_t bytes = 0;
    bool error = false;
    for (const auto& t : request.topics) {
      FetchTopicResult tr{t.name, t.topic_id, {}};
      for (const auto& p : t.partitions) {
        if (t.name.empty() || !Allows(session, t.name, auth::Access::kRead)) {
          tr.partitions.push_back({p.index, t.name.empty() ? ErrorCode::kUnknownTopicId
                                                           : ErrorCode::kTopicAuthorizationFailed});
          error = true;
          continue;
        }
        tr.partitions.push_back(
            FetchPartition(t.name, p, std::max<int64_t>(0, request.max_bytes - bytes)));
        bytes += static_cast<int64_t>(tr.partitions.back().records.size());
        error |= tr.partitions.back().error != ErrorCode::kNone;
      }
      response.topics.push_back(std::move(tr));
    }
    if (bytes >= request.min_bytes || error || stopping_ || Clock::now() >= deadline) {
      return response;
    }
    std::unique_lock lock(appended_mu_);
    appended_.wait_until(lock, std::min(deadline, Clock::now() + kFetchRecheck),
                         [&] { return appends_ != seen || stopping_; });
  }
}

FindCoordinatorResponse Broker::FindCoordinator(const FindCoordinatorRequest& request) const {
  FindCoordinatorResponse response;
  for (const auto& key : request.keys) {
    Coordinator c{key, kNodeId, host_, port_, ErrorCode::kNone, std::nullopt};
    // Transactions are not served: a non-retriable error, so that a transactional producer
    // fails at once (librdkafka, the Java client and kafka-python all take 53 as fatal)
    // instead of retrying until its timeout; any other key type is not Kafka's either.
    if (request.key_type == 1) {
      c = {key,
           -1,
           "",
           -1,
           ErrorCode::kTransactionalIdAuthorizationFailed,
           "transactions are not supported, only consumer groups"};
    } else if (request.key_type != 0) {
      c = {key,
           -1,
           "",
           -1,
           ErrorCode::kInvalidRequest,
           "coordinator key type " + std::to_string(request.key_type) + " is not served"};
    }
    response.coordinators.push_back(std::move(c));
  }
  return response;
}

InitProducerIdResponse Broker::InitProducerId(const InitProducerIdRequest& request) {
  InitProducerIdResponse response;
  if (request.transactional_id) {
    response.error = ErrorCode::kTransactionalIdAuthorizationFailed;
    return response;
  }
  if (request.producer_id >= 0) {
    // An idempotent producer bumping its epoch after an error keeps its id.
    response.producer_id = request.producer_id;
    response.producer_epoch = static_cast<int16_t>(request.producer_epoch + 1);
    return response;
  }
  response.producer_id = next_producer_id_++;
  response.producer_epoch = 0;
  return response;
}

DescribeConfigsResponse Broker::DescribeConfigs(const DescribeConfigsRequest& request,
                                                const Session& session) {
  constexpr int8_t kTopic = 2;
  constexpr int8_t kBroker = 4;
  DescribeConfigsResponse response;
  for (const auto& resource : request.resources) {
    DescribeConfigsResult result{ErrorCode::kNone, std::nullopt, resource};
    if (resource.type == kTopic && !Allows(session, resource.name, auth::Access::kRead)) {
      result.error = ErrorCode::kTopicAuthorizationFailed;
      result.message = "topic " + Quote(resource.name) + " needs read access";
    } else if (resource.type == kTopic) {
      auto table = TableForTopic(resource.name);
      if (!table.ok() || !node_->DescribeTable(*table).ok()) {
        result.error = ErrorCode::kUnknownTopicOrPartition;
        result.message = "topic " + Quote(resource.name) + " does not exist";
      }
    } else if (resource.type != kBroker) {
      result.error = ErrorCode::kInvalidRequest;
      result.message = "only topic and broker configs can be described";
    }
    response.results.push_back(std::move(result));
  }
  return response;
}

void Broker::ProducerState::Record(int16_t batch_epoch, int32_t first_sequence,
                                   int32_t last_sequence_of_batch, int64_t base_offset) {
  if (batch_epoch < epoch) return;
  if (batch_epoch > epoch) *this = ProducerState{batch_epoch};
  if (!recent.empty() && base_offset <= recent.back().base_offset) return;
  last_sequence = last_sequence_of_batch;
  recent.push_back({first_sequence, last_sequence_of_batch, base_offset});
  if (recent.size() > kRecentBatches) recent.erase(recent.begin());
}

// producers.json: {"covered": [{"table", "table_id", "partition", "next_offset"}],
// "producers": [{"table", "partition", "producer_id", "epoch", "last_sequence",
// "recent": [[first_sequence, last_sequence, base_offset]...]}]}. The state reflects every
// batch below each partition's next_offset; batches from there on are replayed.
Status Broker::LoadProducerState() {
  FileSystem& fs = *PosixFileSystem::Default();
  const std::string path = JoinPath(options_.state_dir, kProducersFile);
  // (table, partition) -> the offset the snapshot covers, for tables that still have its id.
  std::map<std::pair<std::string, int32_t>, int64_t> covered;
  std::map<std::string, int64_t> table_ids;
  for (const auto& t : node_->ListTables()) table_ids[t.name] = t.table_id;
  std::lock_guard lock(producers_mu_);
  if (!fs.FileSize(path).status().IsNotFound()) {
    ASSIGN_OR_RAISE(auto buffer, ReadWholeFile(fs, path));
    const auto doc = nlohmann::json::parse(buffer->data(), buffer->data() + buffer->size(), nullptr,
                                           /*allow_exceptions=*/false);
    // Before the batches carried their producer, the file was a bare array written at stop.
    const bool legacy = doc.is_array();
    if (!doc.is_object() && !legacy) {
      return Status::Corruption(path + " is not a producer state file");
    }
    try {
      for (const auto& c : legacy ? nlohmann::json::array() : doc.at("covered")) {
        const auto table = c.at("table").get<std::string>();
        const auto id = table_ids.find(table);
        if (id == table_ids.end() || id->second != c.at("table_id").get<int64_t>()) continue;
        covered[{table, c.at("partition").get<int32_t>()}] = c.at("next_offset").get<int64_t>();
      }
      for (const auto& p : legacy ? doc : doc.at("producers")) {
        const auto table = p.at("table").get<std::string>();
        const auto partition = p.at("partition").get<int32_t>();
        if (!legacy && !covered.contains({table, partition})) continue;  // the table was dropped
        ProducerState& state = producers_[{table, partition, p.at("producer_id").get<int64_t>()}];
        state.epoch = p.at("epoch").get<int16_t>();
        state.last_sequence = p.at("last_sequence").get<int32_t>();
        for (const auto& a : p.at("recent")) {
          state.recent.push_back(
              {a.at(0).get<int32_t>(), a.at(1).get<int32_t>(), a.at(2).get<int64_t>()});
        }
      }
    } catch (const std::exception& e) {
      return Status::Corruption(path + ": " + e.what());
    }
  }
  // Replays the idempotent batches the snapshot does not cover (all of them without one).
  int64_t replayed = 0;
  auto replay = [&](const std::string& name, const engine::ReadRequest& read) -> Status {
    ASSIGN_OR_RAISE(auto cursor, node_->OpenRead(read));
    while (true) {
      ASSIGN_OR_RAISE(auto batch, cursor->Next(Clock::now()));
      if (!batch.has_value()) return Status::OK();
      ASSIGN_OR_RAISE(auto metadata, arrow::ipc::MessageCustomMetadata(*batch->message.metadata));
      const auto producer = arrow::FindMetadata(metadata, kProducerMetadataKey);
      if (!producer) continue;
      int64_t producer_id;
      int32_t epoch, first_sequence, last_sequence;
      if (!ParseProducerMetadata(*producer, &producer_id, &epoch, &first_sequence,
                                 &last_sequence)) {
        return Status::Corruption("offset " + std::to_string(batch->base_offset) + ": " +
                                  std::string(kProducerMetadataKey) + " " + Quote(*producer) +
                                  " is not \"<producer id> <epoch> <first> <last sequence>\"");
      }
      producers_[{name, read.bucket, producer_id}].Record(
          static_cast<int16_t>(epoch), first_sequence, last_sequence, batch->base_offset);
      ++replayed;
    }
  };
  for (const auto& [name, id] : table_ids) {
    auto described = node_->DescribeTable(name);
    if (!described.ok() || KindOf(described->table.table) == TableKind::kOther) continue;
    for (const engine::BucketStatus& bucket : described->table.buckets) {
      const auto c = covered.find({name, bucket.bucket});
      engine::ReadRequest read;
      read.table = name;
      read.bucket = bucket.bucket;
      read.from.kind = engine::StartPosition::Kind::kOffset;
      read.from.offset = std::max(bucket.earliest_offset, c == covered.end() ? 0 : c->second);
      read.to = bucket.next_offset;
      if (read.from.offset >= read.to) continue;
      // Damage in the log must not keep the listener from starting: what was read counts.
      if (Status st = replay(name, read); !st.ok()) {
        spdlog::warn(
            "kafka: replaying the idempotent producers of table '{}' partition {} stopped ({}); "
            "a retry of a batch after that point may be appended again",
            name, bucket.bucket, st.message());
      }
    }
  }
  if (replayed > 0) {
    spdlog::info("kafka: replayed {} idempotent batches the producer state snapshot did not cover",
                 replayed);
    producers_changed_ = true;
  }
  return Status::OK();
}

Status Broker::SaveProducerState() {
  nlohmann::json covered = nlohmann::json::array();
  nlohmann::json producers = nlohmann::json::array();
  {
    // Under the lock no idempotent batch is between its append and its state update, so the
    // state reflects exactly the batches below each partition's next offset now.
    std::lock_guard lock(producers_mu_);
    std::set<std::string> tables;
    for (const auto& [key, state] : producers_) tables.insert(std::get<0>(key));
    for (const auto& table : tables) {
      auto described = node_->DescribeTable(table);
      if (!described.ok()) continue;  // dropped: its producers are forgotten
      for (const engine::BucketStatus& bucket : described->table.buckets) {
        covered.push_back({{"table", table},
                           {"table_id", described->table.table.table_id},
                           {"partition", bucket.bucket},
                           {"next_offset", bucket.next_offset}});
      }
    }
    for (const auto& [key, state] : producers_) {
      nlohmann::json recent = nlohmann::json::array();
      for (const auto& a : state.recent) {
        recent.push_back({a.first_sequence, a.last_sequence, a.base_offset});
      }
      producers.push_back({{"table", std::get<0>(key)},
                           {"partition", std::get<1>(key)},
                           {"producer_id", std::get<2>(key)},
                           {"epoch", state.epoch},
                           {"last_sequence", state.last_sequence},
                           {"recent", recent}});
    }
    producers_changed_ = false;
    producers_saved_ = Clock::now();
  }
  return WriteFileAtomically(
      *PosixFileSystem::Default(), options_.state_dir, kProducersFile,
      nlohmann::json{{"covered", std::move(covered)}, {"producers", std::move(producers)}}.dump());
}

void Broker::SaveProducerStateIfDue() {
  {
    std::lock_guard lock(producers_mu_);
    if (!producers_changed_ || Clock::now() - producers_saved_ < kProducerSnapshotInterval) return;
  }
  if (Status st = SaveProducerState(); !st.ok()) {
    spdlog::error("kafka: saving the idempotent producers' state: {}", st.message());
  }
}

}  // namespace oxbow::kafka::internal
