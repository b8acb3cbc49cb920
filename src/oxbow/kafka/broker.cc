#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "oxbow/arrow/ipc.h"
#include "oxbow/kafka/broker_internal.h"
#include "oxbow/metrics/metrics.h"

namespace oxbow::kafka::internal {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kDefaultNamespace[] = "kafka";
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
// How long a connection's grants are trusted before users.json is read again.
constexpr auto kUserRefresh = std::chrono::seconds(1);

// The request and response types of a handler, Broker::X(msg::XRequest&, RequestContext&).
template <typename Handler>
struct HandlerTypes;
template <typename Request, typename Response, typename Context>
struct HandlerTypes<Result<Response> (Broker::*)(Request&, Context&)> {
  using RequestType = Request;
  using ResponseType = Response;
};

}  // namespace

ErrorCode ToErrorCode(const Status& st) {
  switch (st.code()) {
    case StatusCode::kNotFound: return ErrorCode::kUnknownTopicOrPartition;
    case StatusCode::kOutOfRange: return ErrorCode::kOffsetOutOfRange;
    case StatusCode::kInvalid: return ErrorCode::kInvalidRecord;
    case StatusCode::kAlreadyExists: return ErrorCode::kTopicAlreadyExists;
    default: return ErrorCode::kUnknownServerError;
  }
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
    w.Raw(Encode(ApiVersionsAnswer(ErrorCode::kUnsupportedVersion), 0));
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
  RequestContext ctx{header, session};
  auto body = Handlers().at(api->key)(*this, r, ctx);
  if (!body.ok()) {
    return body.status().WithContext("API key " + std::to_string(header.api_key) + " version " +
                                     std::to_string(header.api_version));
  }
  if (ctx.no_response) return std::optional<std::string>();
  w.Raw(*body);
  return std::optional<std::string>(w.Take());
}

template <auto kHandler>
Result<std::string> Broker::ServeWith(Broker& broker, Reader& r, RequestContext& ctx) {
  using Types = HandlerTypes<decltype(kHandler)>;
  ASSIGN_OR_RAISE(auto request, Decode<typename Types::RequestType>(r, ctx.version()));
  ASSIGN_OR_RAISE(auto response, (broker.*kHandler)(request, ctx));
  return Encode(response, ctx.version());
}

const std::map<ApiKey, Broker::Serve>& Broker::Handlers() {
  // Each API of apis.inc is served by the Broker method of its name.
  static const std::map<ApiKey, Serve> kHandlers = {
#define KAFKA_API(name, key, min_version, max_version, first_flexible) \
  {ApiKey::k##name, &ServeWith<&Broker::name>},
#include "oxbow/kafka/apis.inc"
#undef KAFKA_API
  };
  return kHandlers;
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

msg::ProduceResponse::PartitionProduceResponse Broker::ProducePartition(
    const std::string& topic, const msg::ProduceRequest::PartitionProduceData& part) {
  const auto started = Clock::now();
  msg::ProduceResponse::PartitionProduceResponse result =
      ProduceResult(part.index, ErrorCode::kNone, std::nullopt);
  auto fail = [&](ErrorCode error, std::string message) {
    result.error_code = error;
    result.error_message = std::move(message);
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
    auto rows = ToRows(kind, batch, desc.schema);
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
