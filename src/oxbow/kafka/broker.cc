#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "oxbow/arrow/builder.h"
#include "oxbow/arrow/record_batch.h"
#include "oxbow/kafka/broker_internal.h"
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
constexpr std::string_view kValueFormatProperty = "kafka.value.format";

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
  kOther,  // not served through Kafka
};

TableKind KindOf(const catalog::TableDescriptor& table) {
  if (table.schema->Equals(*RawTopicSchema())) return TableKind::kRaw;
  auto format = table.properties.find(std::string(kValueFormatProperty));
  if (format != table.properties.end() && format->second == "json") return TableKind::kJson;
  return TableKind::kOther;
}

std::string NotServedMessage(const std::string& table) {
  return "table " + Quote(table) +
         " is neither a raw Kafka table (key binary, value binary, timestamp, headers binary) "
         "nor has the property " +
         std::string(kValueFormatProperty) + "=json";
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

Uuid TopicId(int64_t table_id) {
  Uuid id{'o', 'x', 'b', 'o', 'w', 0, 0, 0};
  for (int i = 0; i < 8; ++i) id[15 - i] = static_cast<uint8_t>(table_id >> (8 * i));
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

Result<std::optional<std::string>> Broker::Handle(std::string_view frame,
                                                  const std::string& client_host) {
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
  // ApiVersions answers with header v0 whatever its version, so that any client can read it.
  EncodeResponseHeader(w, header.correlation_id,
                       IsFlexible(*api, header.api_version) && api->key != ApiKey::kApiVersions);
  bool no_response = false;
  ASSIGN_OR_RAISE(std::string body, HandleBody(header, *api, r, client_host, &no_response));
  if (no_response) return std::optional<std::string>();
  w.Raw(body);
  return std::optional<std::string>(w.Take());
}

Result<std::string> Broker::HandleBody(const RequestHeader& header, const ApiSupport& api,
                                       Reader& r, const std::string& client_host,
                                       bool* no_response) {
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
      Encode(Metadata(req), v, w);
      break;
    }
    case ApiKey::kCreateTopics: {
      ASSIGN_OR_RAISE(auto req, DecodeCreateTopics(r, v));
      Encode(CreateTopics(req, v), v, w);
      break;
    }
    case ApiKey::kDeleteTopics: {
      ASSIGN_OR_RAISE(auto req, DecodeDeleteTopics(r, v));
      Encode(DeleteTopics(req), v, w);
      break;
    }
    case ApiKey::kListOffsets: {
      ASSIGN_OR_RAISE(auto req, DecodeListOffsets(r, v));
      Encode(ListOffsets(req), v, w);
      break;
    }
    case ApiKey::kProduce: {
      ASSIGN_OR_RAISE(auto req, DecodeProduce(r, v));
      if (v >= 13) NameTopicsById(req.topics);
      ProduceResponse response = Produce(req, v);
      *no_response = req.acks == 0;
      Encode(response, v, w);
      break;
    }
    case ApiKey::kFetch: {
      ASSIGN_OR_RAISE(auto req, DecodeFetch(r, v));
      if (v >= 13) NameTopicsById(req.topics);
      Encode(Fetch(req), v, w);
      break;
    }
    case ApiKey::kFindCoordinator: {
      ASSIGN_OR_RAISE(auto req, DecodeFindCoordinator(r, v));
      Encode(FindCoordinator(req), v, w);
      break;
    }
    case ApiKey::kJoinGroup: {
      ASSIGN_OR_RAISE(auto req, DecodeJoinGroup(r, v));
      Encode(groups_->Join(req, header.client_id.value_or(""), client_host), v, w);
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
    case ApiKey::kOffsetCommit: {
      ASSIGN_OR_RAISE(auto req, DecodeOffsetCommit(r, v));
      auto response = groups_->Commit(req);
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
        Encode(failed, v, w);
      } else {
        Encode(*response, v, w);
      }
      break;
    }
    case ApiKey::kOffsetFetch: {
      ASSIGN_OR_RAISE(auto req, DecodeOffsetFetch(r, v));
      Encode(groups_->FetchOffsets(req), v, w);
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
      Encode(DescribeConfigs(req), v, w);
      break;
    }
  }
  return w.Take();
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
  if (created.ok()) return {ErrorCode::kNone, ""};
  const Status& st = created.status();
  return {st.code() == StatusCode::kAlreadyExists ? ErrorCode::kTopicAlreadyExists
                                                  : ErrorCode::kInvalidRequest,
          st.message()};
}

MetadataResponse Broker::Metadata(const MetadataRequest& request) {
  MetadataResponse response;
  response.brokers.push_back({kNodeId, host_, port_});
  response.cluster_id = kClusterId;
  response.controller_id = kNodeId;
  auto describe = [&](const catalog::TableDescriptor& table, std::string topic) {
    MetadataTopic t;
    t.name = std::move(topic);
    t.topic_id = TopicId(table.table_id);
    for (int32_t b = 0; b < table.buckets; ++b) {
      t.partitions.push_back({ErrorCode::kNone, b, kNodeId, {kNodeId}});
    }
    return t;
  };
  if (!request.topics) {
    for (const auto& table : node_->ListTables()) {
      response.topics.push_back(describe(table, TopicForTable(table.name)));
    }
    return response;
  }
  for (const std::string& topic : *request.topics) {
    auto table = TableForTopic(topic);
    if (!table.ok()) {
      response.topics.push_back({ErrorCode::kInvalidTopicException, topic, {}, {}});
      continue;
    }
    auto found = node_->DescribeTable(*table);
    if (found.status().IsNotFound() && request.allow_auto_topic_creation &&
        options_.auto_create_topics) {
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

CreateTopicsResponse Broker::CreateTopics(const CreateTopicsRequest& request, int16_t version) {
  CreateTopicsResponse response;
  for (const CreatableTopic& t : request.topics) {
    CreateTopicResult result;
    result.name = t.name;
    const int32_t partitions =
        t.num_partitions == -1 ? options_.default_partitions : t.num_partitions;
    if (partitions <= 0) {
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
        if (table.ok()) result.topic_id = TopicId(table->table.table.table_id);
      }
    }
    response.topics.push_back(std::move(result));
  }
  return response;
}

DeleteTopicsResponse Broker::DeleteTopics(const DeleteTopicsRequest& request) {
  DeleteTopicsResponse response;
  for (size_t i = 0; i < request.names.size(); ++i) {
    DeleteTopicResult result;
    result.name = request.names[i];
    result.topic_id = request.topic_ids[i];
    std::optional<std::string> table;
    if (result.name) {
      auto t = TableForTopic(*result.name);
      if (t.ok()) table = *t;
    } else {
      for (const auto& d : node_->ListTables()) {
        if (TopicId(d.table_id) == result.topic_id) {
          table = d.name;
          result.name = TopicForTable(d.name);
        }
      }
    }
    Status st = table ? node_->DropTable(*table) : Status::NotFound("no such topic");
    if (!st.ok()) {
      result.error = ToErrorCode(st);
      result.message = st.message();
    }
    response.results.push_back(std::move(result));
  }
  return response;
}

ListOffsetsResponse Broker::ListOffsets(const ListOffsetsRequest& request) {
  ListOffsetsResponse response;
  for (const auto& t : request.topics) {
    ListOffsetsTopicResult tr{t.name, {}};
    auto table = TableForTopic(t.name);
    auto described = table.ok() ? node_->DescribeTable(*table) : table.status();
    for (const auto& p : t.partitions) {
      ListOffsetsPartitionResult pr;
      pr.index = p.index;
      if (!described.ok() || p.index < 0 ||
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

ProduceResponse Broker::Produce(const ProduceRequest& request, int16_t version) {
  ProduceResponse response;
  for (const auto& t : request.topics) {
    ProduceTopicResult tr{t.name, t.topic_id, {}};
    for (const auto& p : t.partitions) {
      if (t.name.empty()) {
        tr.partitions.push_back({p.index, ErrorCode::kUnknownTopicId, -1, -1, {}, std::nullopt});
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
  for (size_t i = 0; i < batches->size(); ++i) {
    const RecordBatch& batch = (*batches)[i];
    if (batch.transactional || batch.control) {
      return fail(ErrorCode::kInvalidRecord, "transactional batches are not supported");
    }
    auto rows = kind == TableKind::kRaw ? ToRows(batch) : JsonToRows(batch, desc.schema);
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
      if (batch.producer_epoch > state->epoch) *state = ProducerState{batch.producer_epoch};
      const auto duplicate =
          std::find_if(state->recent.begin(), state->recent.end(), [&](const auto& a) {
            return a.first_sequence == batch.base_sequence && a.last_sequence == last_sequence;
          });
      if (duplicate != state->recent.end()) {
        if (i == 0) result.base_offset = duplicate->base_offset;
        continue;  // a retry of a batch already appended: acknowledged, not appended again
      }
      if (state->last_sequence >= 0 &&
          batch.base_sequence != ((state->last_sequence + int64_t{1}) & INT32_MAX)) {
        return fail(ErrorCode::kOutOfOrderSequenceNumber,
                    "sequence " + std::to_string(batch.base_sequence) + " after " +
                        std::to_string(state->last_sequence));
      }
    }
    auto appended = (*session)->Append(**rows);
    if (!appended.ok()) return fail(ToErrorCode(appended.status()), appended.status().message());
    const int64_t base_offset = appended->empty() ? -1 : appended->front().base_offset;
    if (i == 0) result.base_offset = base_offset;
    if (state != nullptr) {
      state->last_sequence = last_sequence;
      state->recent.push_back({batch.base_sequence, last_sequence, base_offset});
      if (state->recent.size() > kRecentBatches) state->recent.erase(state->recent.begin());
    }
  }
  return result;
}

FetchPartitionResult Broker::FetchPartition(const std::string& topic,
                                            const kafka::FetchPartition& part, int64_t max_bytes) {
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
    st = kind == TableKind::kRaw
             ? AppendRecords(*b.batch, b.base_offset, skip, &result.records)
             : AppendJsonRecords(*b.batch, b.base_offset, skip, b.append_time_ms, &result.records);
  }
  if (!st.ok()) {
    spdlog::error("kafka: fetch of '{}' partition {}: {}", topic, part.index, st.message());
    result.error = result.records.empty() ? ToErrorCode(st) : ErrorCode::kNone;
  }
  return result;
}

FetchResponse Broker::Fetch(const FetchRequest& request) {
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
        if (t.name.empty()) {
          tr.partitions.push_back({p.index, ErrorCode::kUnknownTopicId});
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
    if (request.key_type != 0) {
      c = {key,
           -1,
           "",
           -1,
           ErrorCode::kCoordinatorNotAvailable,
           "transactions are not supported, only consumer groups"};
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

DescribeConfigsResponse Broker::DescribeConfigs(const DescribeConfigsRequest& request) {
  constexpr int8_t kTopic = 2;
  constexpr int8_t kBroker = 4;
  DescribeConfigsResponse response;
  for (const auto& resource : request.resources) {
    DescribeConfigsResult result{ErrorCode::kNone, std::nullopt, resource};
    if (resource.type == kTopic) {
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

Status Broker::LoadProducerState() {
  FileSystem& fs = *PosixFileSystem::Default();
  const std::string path = JoinPath(options_.state_dir, kProducersFile);
  if (fs.FileSize(path).status().IsNotFound()) return Status::OK();
  ASSIGN_OR_RAISE(auto buffer, ReadWholeFile(fs, path));
  const auto doc = nlohmann::json::parse(buffer->data(), buffer->data() + buffer->size(), nullptr,
                                         /*allow_exceptions=*/false);
  if (!doc.is_array()) return Status::Corruption(path + " is not a producer state file");
  std::lock_guard lock(producers_mu_);
  try {
    for (const auto& p : doc) {
      ProducerState& state =
          producers_[{p.at("table").get<std::string>(), p.at("partition").get<int32_t>(),
                      p.at("producer_id").get<int64_t>()}];
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
  return fs.Remove(path);
}

Status Broker::SaveProducerState() {
  nlohmann::json doc = nlohmann::json::array();
  {
    std::lock_guard lock(producers_mu_);
    for (const auto& [key, state] : producers_) {
      nlohmann::json recent = nlohmann::json::array();
      for (const auto& a : state.recent) {
        recent.push_back({a.first_sequence, a.last_sequence, a.base_offset});
      }
      doc.push_back({{"table", std::get<0>(key)},
                     {"partition", std::get<1>(key)},
                     {"producer_id", std::get<2>(key)},
                     {"epoch", state.epoch},
                     {"last_sequence", state.last_sequence},
                     {"recent", recent}});
    }
  }
  return WriteFileAtomically(*PosixFileSystem::Default(), options_.state_dir, kProducersFile,
                             doc.dump());
}

}  // namespace oxbow::kafka::internal
