#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>

#include "oxbow/kafka/broker_internal.h"
#include "oxbow/metrics/metrics.h"

namespace oxbow::kafka::internal {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kDefaultNamespace[] = "kafka";
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
    case StatusCode::kUnavailable: {
      // Cluster mode's answers (cluster::Cluster): which retriable error a client acts on.
      const std::string& message = st.message();
      if (message.starts_with(cluster::kNotEnoughReplicasAfterAppend)) {
        return ErrorCode::kNotEnoughReplicasAfterAppend;
      }
      if (message.starts_with(cluster::kNotEnoughReplicas)) return ErrorCode::kNotEnoughReplicas;
      if (message.starts_with(cluster::kTimedOutWaitingForReplicas)) {
        return ErrorCode::kRequestTimedOut;
      }
      return ErrorCode::kNotLeaderOrFollower;
    }
    case StatusCode::kNotFound: return ErrorCode::kUnknownTopicOrPartition;
    case StatusCode::kOutOfRange: return ErrorCode::kOffsetOutOfRange;
    case StatusCode::kInvalid: return ErrorCode::kInvalidRecord;
    case StatusCode::kAlreadyExists: return ErrorCode::kTopicAlreadyExists;
    case StatusCode::kPermissionDenied: return ErrorCode::kTopicAuthorizationFailed;
    default: return ErrorCode::kUnknownServerError;
  }
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

namespace {

// The topic a table is named for when that topic's name is no table name (kTopicProperty).
std::optional<std::string> HashNamedTopic(const catalog::TableDescriptor& table) {
  auto it = table.properties.find(kTopicProperty);
  if (it == table.properties.end()) return std::nullopt;
  auto mapped = TableForTopic(it->second);
  if (!mapped.ok() || *mapped != table.name) return std::nullopt;
  return it->second;
}

// The topic of a table named after it: the name without the "kafka." namespace.
std::string PlainTopicForTable(std::string_view table) {
  const std::string prefix = std::string(kDefaultNamespace) + ".";
  return std::string(table.starts_with(prefix) ? table.substr(prefix.size()) : table);
}

}  // namespace

std::string TopicForTable(const catalog::TableDescriptor& table) {
  return HashNamedTopic(table).value_or(PlainTopicForTable(table.name));
}

Result<node::TableHandle> Broker::GetTopicTable(const std::string& topic) const {
  ASSIGN_OR_RAISE(std::string table, TableForTopic(topic));
  ASSIGN_OR_RAISE(node::TableHandle handle, node_->GetTable(table));
  if (auto owner = HashNamedTopic(handle.descriptor()); owner && *owner != topic) {
    // A topic named as another topic's hash-named table is not that topic.
    return Status::NotFound("topic " + Quote(topic) + " does not exist (table " + Quote(table) +
                            " is topic " + Quote(*owner) + ")");
  }
  return handle;
}

Broker::Broker(node::Node* node, KafkaOptions options, int port,
               std::unique_ptr<GroupCoordinator> groups)
    : node_(node),
      options_(std::move(options)),
      host_(options_.advertised_host.empty() ? options_.listen.substr(0, options_.listen.rfind(':'))
                                             : options_.advertised_host),
      port_(port),
      groups_(std::move(groups)),
      registry_ids_(options_.schema_ids) {}

Result<TopicFormat> Broker::FormatFor(const catalog::TableDescriptor& table) {
  TopicFormat format = FormatOf(table);
  if (format.kind == TableKind::kAvroConfluent)
    RETURN_NOT_OK(registry_ids_.Resolve(table, &format));
  return format;
}

Status Broker::OpenTransactions(const std::string& dir) {
  TransactionCoordinator::Committer committer{
      [this](const std::string& topic, int32_t partition, std::string_view batch) {
        return AppendCommitted(topic, partition, batch);
      },
      [this](const std::string& group, const std::vector<clientstate::OffsetCommit>& offsets) {
        return node_->offsets()->Commit(group, offsets);
      }};
  ASSIGN_OR_RAISE(transactions_, TransactionCoordinator::Open(dir, std::move(committer), [this] {
                    return node_->producers()->NewProducerId();
                  }));
  return Status::OK();
}

void Broker::Stop() {
  stopping_ = true;
  if (transactions_) transactions_->Stop();
  {
    std::lock_guard lock(appended_mu_);
    appended_.notify_all();
  }
  groups_->Stop();
}

Result<std::optional<std::string>> Broker::Handle(std::string_view frame, Session& session) {
  ASSIGN_OR_RAISE(Answer answer, Accept(frame, session));
  return answer();
}

Result<Broker::Answer> Broker::Accept(std::string_view frame, Session& session) {
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
    return Answer([frame = w.Take()]() mutable -> Result<std::optional<std::string>> {
      return std::optional<std::string>(std::move(frame));  // called once
    });
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
  const std::string context = "API key " + std::to_string(header.api_key) + " version " +
                              std::to_string(header.api_version);
  auto body = Handlers().at(api->key)(*this, r, ctx);
  if (!body.ok()) return body.status().WithContext(context);
  return Answer([head = w.Take(), body = std::move(body).ValueOrDie(), context,
                 no_response = ctx.no_response]() -> Result<std::optional<std::string>> {
    auto encoded = body();
    if (!encoded.ok()) return encoded.status().WithContext(context);
    if (no_response) return std::optional<std::string>();
    return std::optional<std::string>(head + *encoded);
  });
}

template <auto kHandler>
Result<Broker::Body> Broker::ServeWith(Broker& broker, Reader& r, RequestContext& ctx) {
  using Types = HandlerTypes<decltype(kHandler)>;
  ASSIGN_OR_RAISE(auto request, Decode<typename Types::RequestType>(r, ctx.version()));
  ASSIGN_OR_RAISE(auto response, (broker.*kHandler)(request, ctx));
  const int16_t version = ctx.version();
  if constexpr (std::is_same_v<typename Types::ResponseType, msg::ProduceResponse>) {
    if (!ctx.pending_acks.empty()) {
      // Shared: a Body is copyable, the pending sessions are not.
      auto waiting = std::make_shared<std::pair<msg::ProduceResponse, decltype(ctx.pending_acks)>>(
          std::move(response), std::move(ctx.pending_acks));
      return Body([&broker, waiting, version]() -> Result<std::string> {
        broker.AwaitAcks(waiting->first, waiting->second);
        return Encode(waiting->first, version);
      });
    }
  }
  return Body([encoded = Encode(response, version)]() mutable -> Result<std::string> {
    return std::move(encoded);  // called once
  });
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
    std::string topic = TopicForTable(table);
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

Result<std::optional<cluster::ServerInfo>> Broker::GroupCoordinatorServer(
    const std::string& group) const {
  if (!node_->cluster()) return std::optional<cluster::ServerInfo>();
  ASSIGN_OR_RAISE(std::optional<int32_t> id, node_->offsets()->Coordinator(group));
  if (!id) return std::optional<cluster::ServerInfo>();
  auto meta = node_->cluster()->Metadata();
  auto server = meta->servers.find(*id);
  if (server == meta->servers.end() || server->second.kafka.find(':') == std::string::npos) {
    return Status::Unavailable("the coordinator of group " + Quote(group) + ", server " +
                               std::to_string(*id) + ", serves no Kafka listener now");
  }
  return std::optional<cluster::ServerInfo>(server->second);
}

ErrorCode CoordinatorErrorCode(const Status& st) {
  if (st.ok()) return ErrorCode::kNone;
  if (st.message().starts_with(clientstate::kCoordinatorLoading)) {
    return ErrorCode::kCoordinatorLoadInProgress;
  }
  // As Kafka's coordinator answers its own appends' errors: leadership lost means "ask again
  // who coordinates", anything else "not available now".
  if (st.code() == StatusCode::kUnavailable && ToErrorCode(st) == ErrorCode::kNotLeaderOrFollower) {
    return ErrorCode::kNotCoordinator;
  }
  return ErrorCode::kCoordinatorNotAvailable;
}

ErrorCode Broker::CheckCoordinator(const std::string& group) const {
  if (!node_->cluster()) return ErrorCode::kNone;
  Status ready = node_->offsets()->Prepare(group);
  if (!ready.ok() && ready.code() != StatusCode::kUnavailable) {
    spdlog::error("kafka: loading the offsets of group '{}': {}", group, ready.message());
  }
  return CoordinatorErrorCode(ready);
}

int32_t Broker::NodeId() const {
  return node_->cluster() ? node_->cluster()->server_id() : kNodeId;
}

std::pair<ErrorCode, std::string> Broker::CreateRawTopic(
    const std::string& topic, int32_t partitions, int16_t replication_factor,
    const std::map<std::string, std::string>& properties, bool compacted) {
  auto table = TableForTopic(topic);
  if (!table.ok()) return {ErrorCode::kInvalidTopicException, table.status().message()};
  catalog::CreateTableRequest request;
  request.table.name = *table;
  if (*table != topic && PlainTopicForTable(*table) != topic) {
    request.table.properties[kTopicProperty] = topic;  // a hash-named table
  }
  request.table.schema = compacted ? RawCompactedTopicSchema() : RawTopicSchema();
  request.table.buckets = partitions;
  if (compacted) {
    // A compacted topic is a primary-key table keyed by the record key whose changelog a new
    // consumer reads from its start: nothing of it expires unless the topic asks for that
    // (cleanup.policy=compact alone deletes nothing in Kafka either), and a consumer needs no
    // row before an update (docs/kafka.md#primary-key-tables).
    request.table.primary_key = {"key"};
    request.table.properties = {{std::string(engine::kRetentionProperty), "none"},
                                {std::string(engine::kRetentionBytesProperty), "none"},
                                {"changelog.image", "none"}};
  }
  for (const auto& [key, value] : properties) request.table.properties[key] = value;
  if (replication_factor > 0) {
    request.table.properties[cluster::kReplicationFactorProperty] =
        std::to_string(replication_factor);
  }
  auto created = node_->CreateTable(request);
  if (created.ok()) {
    // Offsets committed to an earlier topic of this name (one dropped over Flight) are stale.
    if (Status forgot = groups_->ForgetTopics({topic, PlainTopicForTable(*table)}); !forgot.ok()) {
      spdlog::error("kafka: created topic {} but kept stale committed offsets: {}", topic,
                    forgot.message());
    }
    return {ErrorCode::kNone, ""};
  }
  const Status& st = created.status();
  ErrorCode error = ErrorCode::kInvalidRequest;
  if (st.code() == StatusCode::kAlreadyExists) error = ErrorCode::kTopicAlreadyExists;
  if (st.IsInvalid() && !properties.empty()) error = ErrorCode::kInvalidConfig;  // a lake.* one
  return {error, st.message()};
}

}  // namespace oxbow::kafka::internal

namespace oxbow::kafka {

Result<std::string> TableForTopic(std::string_view topic) {
  // Kafka's own rule (org.apache.kafka.common.internals.Topic.validate).
  if (topic.empty() || topic.size() > 249) {
    return Status::Invalid("topic name must have 1 to 249 characters");
  }
  if (topic == "." || topic == "..") {
    return Status::Invalid("topic name cannot be \".\" or \"..\"");
  }
  for (char c : topic) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return Status::Invalid("topic " + Quote(topic) +
                             ": a topic name has only ASCII letters, digits, '.', '_' and '-'");
    }
  }
  const std::string prefix = std::string(internal::kDefaultNamespace) + ".";
  std::string table =
      topic.find('.') == std::string_view::npos ? prefix + std::string(topic) : std::string(topic);
  if (catalog::ValidateTableName(table).ok()) return table;
  // Two dots or more, an empty part, a part over 128 characters: the readable start of the
  // name with '_' for '.', then a hash of the whole name (docs/kafka.md#topic-names).
  constexpr size_t kHashHex = 16;
  std::string readable(topic.substr(0, internal::kMaxTablePart - kHashHex - 1));
  std::replace(readable.begin(), readable.end(), '.', '_');
  const std::string hash = auth::KeyedHash("kafka-topic-name", topic);
  static constexpr char kHex[] = "0123456789abcdef";
  readable += '_';
  for (size_t i = 0; i < kHashHex / 2; ++i) {
    readable += kHex[static_cast<uint8_t>(hash[i]) >> 4];
    readable += kHex[static_cast<uint8_t>(hash[i]) & 0xf];
  }
  return prefix + readable;
}

bool IsAvroConfluent(const catalog::TableDescriptor& table) {
  return internal::FormatOf(table).kind == internal::TableKind::kAvroConfluent;
}

std::string TopicOf(const catalog::TableDescriptor& table) {
  return internal::TopicForTable(table);
}

bool MayHoldProducers(const catalog::TableDescriptor& table) {
  // A primary-key table's changes keep no producer: its upserts are idempotent anyway.
  const internal::TopicFormat format = internal::FormatOf(table);
  return format.kind != internal::TableKind::kOther && !format.keyed();
}

}  // namespace oxbow::kafka
