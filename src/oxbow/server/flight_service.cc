#include "oxbow/server/flight_service.h"

#include <nlohmann/json.hpp>

#include "oxbow/arrow/builder.h"
#include "oxbow/arrow/ipc.h"
#include "oxbow/flight/requests.h"
#include "oxbow/text/text.h"

namespace oxbow::server {

using namespace flight::method;  // NOLINT: the method names
using flight::FlightDataIn;
using flight::FlightPayload;

namespace {

using nlohmann::json;
namespace ipc = arrow::ipc;

constexpr auto kFollowPoll = std::chrono::milliseconds(100);
constexpr std::string_view kReplicaFetchPrefix = "{\"replica_fetch\"";

// What follows `scheme` ("Bearer", "Basic") in the call's authorization header, if it has one.
std::optional<std::string_view> AuthorizationValue(grpc::ServerContext* ctx,
                                                   std::string_view scheme) {
  const auto& headers = ctx->client_metadata();
  auto it = headers.find("authorization");
  if (it == headers.end()) return std::nullopt;
  return auth::AuthorizationValue(std::string_view(it->second.data(), it->second.size()), scheme);
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct ActionInfo {
  const char* type;
  const char* description;
};
constexpr ActionInfo kActions[] = {
    {"create_table", "Create a table: {\"table\":\"ns.t\",\"schema\":{...},\"buckets\":N,...}"},
    {"drop_table", "Drop a table: {\"table\":\"ns.t\"}"},
    {"alter_table",
     "Change a table's columns and properties, atomically: "
     "{\"table\":\"ns.t\",\"changes\":[{\"op\":"
     "\"add_column\",...}]}"},
    {"list_tables", "List every table with its descriptor"},
    {"describe_table", "Schema, buckets and offsets of a table: {\"table\":\"ns.t\"}"},
    {"cluster_status",
     "Cluster mode: servers, controller, and each bucket's leader, ISR and offsets as this "
     "server sees them"},
    {"reassign_bucket",
     "Cluster mode: move a bucket onto other servers, the first its preferred leader "
     "{\"table\":\"ns.t\",\"bucket\":b,\"replicas\":[4,1,2]}; returns at once, "
     "cluster_status shows the move under way"},
    {"replica_epoch_end",
     "Cluster mode, between servers: where a leader epoch ends in a bucket leader's log "
     "{\"table\":\"ns.t\",\"bucket\":b,\"epoch\":e}"},
};

Result<std::string> TableFromDescriptor(const proto::FlightDescriptor& d) {
  if (d.type() != proto::FlightDescriptor::PATH) {
    return Status::Invalid(
        "flight descriptor must be a PATH descriptor [namespace, table] or, for DoPut and "
        "DoExchange, a CMD descriptor {\"table\": \"ns.t\", \"op\": ...}");
  }
  std::string name;
  if (d.path_size() == 2) {
    name = d.path(0) + "." + d.path(1);
  } else if (d.path_size() == 1) {
    name = d.path(0);
  } else {
    return Status::Invalid("flight descriptor path must be [namespace, table], got " +
                           std::to_string(d.path_size()) + " parts");
  }
  RETURN_NOT_OK(catalog::ValidateTableName(name));
  return name;
}

// A DoPut or DoExchange descriptor: a PATH [namespace, table] upserts; a CMD names the op.
Result<flight::Command> CommandFromDescriptor(const proto::FlightDescriptor& d) {
  if (d.type() == proto::FlightDescriptor::CMD) {
    ASSIGN_OR_RAISE(auto command, flight::ParseCommand(d.cmd()));
    RETURN_NOT_OK(catalog::ValidateTableName(command.table));
    return command;
  }
  flight::Command command;
  ASSIGN_OR_RAISE(command.table, TableFromDescriptor(d));
  return command;
}

// A batch as one FlightData payload.
Result<FlightPayload> BatchPayload(const arrow::RecordBatch& batch, std::string app_metadata = {}) {
  ASSIGN_OR_RAISE(auto encoded, ipc::EncodeRecordBatch(batch));
  FlightPayload p;
  p.data_header = encoded.metadata;
  p.data_body = std::move(encoded.body);
  p.body_length = encoded.body_length;
  p.app_metadata = std::move(app_metadata);
  return p;
}

// A batch of `schema` with no rows.
Result<arrow::RecordBatchPtr> EmptyBatch(const arrow::SchemaPtr& schema) {
  std::vector<arrow::Array> columns;
  for (const auto& field : schema->fields()) {
    ASSIGN_OR_RAISE(auto builder, arrow::ArrayBuilder::Make(field.type));
    ASSIGN_OR_RAISE(auto array, builder->Finish());
    columns.push_back(std::move(array));
  }
  return arrow::RecordBatch::Make(schema, 0, std::move(columns));
}

// The lookup keys of a ticket (JSON Lines) as Arrow batches of the table's key columns.
Result<std::vector<arrow::RecordBatchPtr>> LookupKeyBatches(const catalog::TableDescriptor& table,
                                                            const flight::Ticket& ticket) {
  if (table.primary_key.empty()) {
    return Status::Invalid("table " + Quote(table.name) +
                           " is a log table: lookups need a primary key");
  }
  std::vector<arrow::Field> fields;
  for (const auto& name : ticket.prefix ? table.bucket_key : table.primary_key) {
    fields.push_back(table.schema->field(table.schema->GetFieldIndex(name)));
  }
  auto schema = std::make_shared<arrow::Schema>(std::move(fields));
  ASSIGN_OR_RAISE(auto reader,
                  text::TextReader::Make(text::TextFormat::kJsonLines, ticket.lookup_keys, schema));
  auto batches = reader->ReadAll();
  if (!batches.ok()) return batches.status().WithContext("ticket \"lookup\"");
  return batches;
}

engine::StartPosition::Kind ToStartKind(flight::StartPosition::Kind kind) {
  switch (kind) {
    case flight::StartPosition::Kind::kEarliest: return engine::StartPosition::Kind::kEarliest;
    case flight::StartPosition::Kind::kLatest: return engine::StartPosition::Kind::kLatest;
    case flight::StartPosition::Kind::kTimestamp: return engine::StartPosition::Kind::kTimestamp;
    case flight::StartPosition::Kind::kOffset: break;
  }
  return engine::StartPosition::Kind::kOffset;
}

engine::ReadRequest ToReadRequest(flight::Ticket ticket) {
  engine::ReadRequest request;
  request.table = std::move(ticket.table);
  request.bucket = ticket.bucket;
  request.from = {ToStartKind(ticket.from.kind), ticket.from.offset, ticket.from.timestamp_ms};
  request.to = ticket.to;
  request.columns = std::move(ticket.columns);
  request.follow = ticket.follow;
  request.schema_id = ticket.schema_id;
  return request;
}

std::string OffsetsMetadata(const std::vector<engine::AppendedRange>& ranges) {
  json offsets = json::array();
  for (const auto& r : ranges) {
    offsets.push_back({{"bucket", r.bucket}, {"base_offset", r.base_offset}, {"rows", r.rows}});
  }
  return json{{"offsets", std::move(offsets)}}.dump();
}

FlightPayload SchemaPayload(const ipc::EncodedMessage& schema_message) {
  FlightPayload p;
  p.data_header = schema_message.metadata;
  return p;
}

json BucketStatusJson(const engine::TableStatus& status) {
  json buckets = json::array();
  for (const auto& b : status.buckets) {
    json bucket = {{"bucket", b.bucket},
                   {"earliest_offset", b.earliest_offset},
                   {"next_offset", b.next_offset},
                   {"local_segments", b.segments},
                   {"local_bytes", b.size_bytes},
                   {"cold", {{"segments", b.cold.segments}, {"bytes", b.cold.bytes}}}};
    if (!b.cold.error.empty()) bucket["cold"]["error"] = b.cold.error;
    for (const auto& d : b.damaged) {
      bucket["damaged"].push_back({{"from_offset", d.from_offset},
                                   {"to_offset", d.to_offset},
                                   {"segment", d.segment_path},
                                   {"position", d.position},
                                   {"end_position", d.end_position},
                                   {"reason", d.reason}});
    }
    if (b.recovery.truncated_position >= 0) {
      bucket["recovery_truncated"] = {{"segment", b.recovery.truncated_segment},
                                      {"position", b.recovery.truncated_position},
                                      {"bytes", b.recovery.bytes_truncated},
                                      {"from_offset", b.recovery.truncated_from_offset},
                                      {"reason", b.recovery.truncated_reason}};
    }
    buckets.push_back(std::move(bucket));
  }
  return buckets;
}

json LakeStatusJson(const lake::LakeTableStatus& lake) {
  json j = {{"enabled", lake.enabled}};
  if (!lake.enabled) return j;
  j["metadata_location"] =
      lake.metadata_location.empty() ? json(nullptr) : json(lake.metadata_location);
  j["tiered_offsets"] = lake.tiered_offsets;
  j["start_offsets"] = lake.start_offsets;
  if (!lake.earliest_offsets.empty()) {
    json earliest = json::array();
    for (const auto& e : lake.earliest_offsets) earliest.push_back(e ? json(*e) : json());
    j["earliest_offsets"] = std::move(earliest);
  }
  j["lag_rows"] = lake.lag_rows;
  j["lag_ms"] = lake.lag_ms;
  j["snapshots"] = lake.snapshots;
  j["data_files"] = lake.data_files;
  if (lake.changelog) {
    j["changelog"] = {{"metadata_location", lake.changelog_metadata_location.empty()
                                                ? json(nullptr)
                                                : json(lake.changelog_metadata_location)},
                      {"tiered_offsets", lake.changelog_tiered_offsets},
                      {"start_offsets", lake.changelog_start_offsets}};
  }
  if (!lake.error.empty()) j["error"] = lake.error;
  for (const auto& d : lake.damaged_files) {
    j["damaged_files"].push_back({{"path", d.path}, {"problem", d.problem}});
  }
  return j;
}

template <typename Service, typename Req, typename Resp>
grpc::internal::RpcServiceMethod* Unary(const char* name, Service* service,
                                        grpc::Status (Service::*fn)(grpc::ServerContext*,
                                                                    const Req*, Resp*)) {
  return new grpc::internal::RpcServiceMethod(
      name, grpc::internal::RpcMethod::NORMAL_RPC,
      new grpc::internal::RpcMethodHandler<Service, Req, Resp>(
          [fn](Service* s, grpc::ServerContext* c, const Req* q, Resp* r) {
            return (s->*fn)(c, q, r);
          },
          service));
}

}  // namespace

FlightService::FlightService(node::Node* node, auth::Authenticator* authenticator)
    : node_(node), authenticator_(authenticator) {
  using grpc::internal::RpcMethod;
  using grpc::internal::RpcServiceMethod;

  AddMethod(new RpcServiceMethod(
      kHandshake, RpcMethod::BIDI_STREAMING,
      new grpc::internal::BidiStreamingHandler<FlightService, proto::HandshakeRequest,
                                               proto::HandshakeResponse>(
          [](FlightService* s, grpc::ServerContext* c, auto* stream) {
            return s->Handshake(c, stream);
          },
          this)));
  AddMethod(new RpcServiceMethod(
      kListFlights, RpcMethod::SERVER_STREAMING,
      new grpc::internal::ServerStreamingHandler<FlightService, proto::Criteria, proto::FlightInfo>(
          [](FlightService* s, grpc::ServerContext* c, const proto::Criteria* q, auto* w) {
            return s->ListFlights(c, q, w);
          },
          this)));
  AddMethod(Unary(kGetFlightInfo, this, &FlightService::GetFlightInfo));
  AddMethod(Unary(kGetSchema, this, &FlightService::GetSchema));
  AddMethod(new RpcServiceMethod(
      kDoGet, RpcMethod::SERVER_STREAMING,
      new grpc::internal::ServerStreamingHandler<FlightService, proto::Ticket, FlightPayload>(
          [](FlightService* s, grpc::ServerContext* c, const proto::Ticket* q, auto* w) {
            return s->DoGet(c, q, w);
          },
          this)));
  AddMethod(new RpcServiceMethod(
      kDoPut, RpcMethod::BIDI_STREAMING,
      new grpc::internal::BidiStreamingHandler<FlightService, FlightDataIn, proto::PutResult>(
          [](FlightService* s, grpc::ServerContext* c, auto* stream) {
            return s->DoPut(c, stream);
          },
          this)));
  AddMethod(new RpcServiceMethod(
      kDoExchange, RpcMethod::BIDI_STREAMING,
      new grpc::internal::BidiStreamingHandler<FlightService, FlightDataIn, FlightPayload>(
          [](FlightService* s, grpc::ServerContext* c, auto* stream) {
            return s->DoExchange(c, stream);
          },
          this)));
  AddMethod(new RpcServiceMethod(
      kDoAction, RpcMethod::SERVER_STREAMING,
      new grpc::internal::ServerStreamingHandler<FlightService, proto::Action, proto::Result>(
          [](FlightService* s, grpc::ServerContext* c, const proto::Action* q, auto* w) {
            return s->DoAction(c, q, w);
          },
          this)));
  AddMethod(new RpcServiceMethod(
      kListActions, RpcMethod::SERVER_STREAMING,
      new grpc::internal::ServerStreamingHandler<FlightService, proto::Empty, proto::ActionType>(
          [](FlightService* s, grpc::ServerContext* c, const proto::Empty* q, auto* w) {
            return s->ListActions(c, q, w);
          },
          this)));
}

Result<FlightService::Caller> FlightService::Authenticate(grpc::ServerContext* ctx) {
  if (!authenticator_) return Caller();
  auto token = AuthorizationValue(ctx, "Bearer");
  if (!token) {
    return Status::Unauthenticated(
        "this server requires authentication: handshake with basic auth (user, password), then "
        "send the \"authorization: Bearer <token>\" header it returns");
  }
  ASSIGN_OR_RAISE(auto user, authenticator_->Verify(*token));
  return Caller(std::move(user));
}

Status FlightService::Authorize(const Caller& caller, const std::string& table,
                                auth::Access access) {
  if (!caller || caller->Allows(table, access)) return Status::OK();
  return Status::PermissionDenied("user " + Quote(caller->name) + " may not " +
                                  std::string(auth::AccessName(access)) + " table " + Quote(table));
}

Status FlightService::Login(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<proto::HandshakeResponse, proto::HandshakeRequest>* stream) {
  proto::HandshakeRequest request;
  if (!authenticator_) {
    while (stream->Read(&request)) {
      proto::HandshakeResponse response;
      response.set_protocol_version(request.protocol_version());
      stream->Write(response);
    }
    return Status::OK();
  }
  while (stream->Read(&request)) {
  }
  auto basic = AuthorizationValue(ctx, "Basic");
  if (!basic) {
    return Status::Unauthenticated(
        "the handshake needs basic auth: \"authorization: Basic base64(user:password)\"");
  }
  ASSIGN_OR_RAISE(auto credentials, auth::ParseBasicCredentials(*basic));
  ASSIGN_OR_RAISE(std::string token, authenticator_->Login(credentials.first, credentials.second));
  ctx->AddInitialMetadata("authorization", "Bearer " + token);
  return Status::OK();
}

grpc::Status FlightService::Handshake(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<proto::HandshakeResponse, proto::HandshakeRequest>* stream) {
  return Finish("handshake", Login(ctx, stream));
}

Result<proto::FlightInfo> FlightService::MakeFlightInfo(const node::TableHandle& table) const {
  ASSIGN_OR_RAISE(ipc::EncodedMessage schema, ipc::EncodeSchema(*table.read_schema()));
  ASSIGN_OR_RAISE(auto schema_bytes, schema.ToEncapsulatedBuffer());
  proto::FlightInfo info;
  info.set_schema(std::string(schema_bytes->view()));
  auto* descriptor = info.mutable_flight_descriptor();
  descriptor->set_type(proto::FlightDescriptor::PATH);
  const std::string& name = table.name();
  auto dot = name.find('.');
  descriptor->add_path(name.substr(0, dot));
  descriptor->add_path(name.substr(dot + 1));
  int64_t total = 0;
  const auto cluster_meta = node_->cluster() ? node_->cluster()->Metadata() : nullptr;
  for (const auto& b : table.Buckets()) {
    flight::Ticket read;
    read.table = name;
    read.bucket = b.bucket;
    // A bucket led elsewhere is read to its end when the leader serves it: this server's
    // copy may trail the leader's.
    if (!cluster_meta) read.to = b.next_offset;
    auto* endpoint = info.add_endpoint();
    endpoint->mutable_ticket()->set_ticket(flight::TicketToJson(read));
    if (cluster_meta) {
      // In cluster mode a bucket is read from its leader.
      const cluster::TableMeta* meta = cluster_meta->FindTable(name);
      if (meta && b.bucket < static_cast<int32_t>(meta->states.size())) {
        auto server = cluster_meta->servers.find(meta->states[b.bucket].leader);
        if (server != cluster_meta->servers.end()) {
          endpoint->add_location()->set_uri(server->second.flight);
        }
      }
    }
    total += b.next_offset - b.earliest_offset;
  }
  info.set_total_records(total);
  info.set_total_bytes(-1);
  return info;
}

grpc::Status FlightService::ListFlights(grpc::ServerContext* ctx, const proto::Criteria*,
                                        grpc::ServerWriter<proto::FlightInfo>* writer) {
  auto caller = Authenticate(ctx);
  if (!caller.ok()) return Finish("action", caller.status());
  for (const auto& table : node_->ListTables()) {
    if (!Authorize(*caller, table.name, auth::Access::kRead).ok()) continue;
    auto handle = node_->GetTable(table.name);
    if (!handle.ok()) continue;  // dropped meanwhile
    auto info = MakeFlightInfo(*handle);
    if (!info.ok()) return ToGrpcStatus(info.status());
    writer->Write(*info);
  }
  return grpc::Status::OK;
}

Result<node::TableHandle> FlightService::TableForRead(grpc::ServerContext* ctx,
                                                      const proto::FlightDescriptor& descriptor) {
  ASSIGN_OR_RAISE(auto caller, Authenticate(ctx));
  ASSIGN_OR_RAISE(auto name, TableFromDescriptor(descriptor));
  RETURN_NOT_OK(Authorize(caller, name, auth::Access::kRead));
  return node_->GetTable(name);
}

grpc::Status FlightService::GetFlightInfo(grpc::ServerContext* ctx,
                                          const proto::FlightDescriptor* descriptor,
                                          proto::FlightInfo* info) {
  auto table = TableForRead(ctx, *descriptor);
  if (!table.ok()) return Finish("action", table.status());
  auto made = MakeFlightInfo(*table);
  if (!made.ok()) return ToGrpcStatus(made.status());
  *info = std::move(made).ValueOrDie();
  return grpc::Status::OK;
}

grpc::Status FlightService::GetSchema(grpc::ServerContext* ctx,
                                      const proto::FlightDescriptor* descriptor,
                                      proto::SchemaResult* result) {
  auto table = TableForRead(ctx, *descriptor);
  if (!table.ok()) return Finish("action", table.status());
  auto schema = ipc::EncodeSchema(*table->descriptor().schema);
  if (!schema.ok()) return ToGrpcStatus(schema.status());
  auto bytes = schema->ToEncapsulatedBuffer();
  if (!bytes.ok()) return ToGrpcStatus(bytes.status());
  result->set_schema(std::string((*bytes)->view()));
  return grpc::Status::OK;
}

Status FlightService::SendSnapshot(const flight::Ticket& ticket,
                                   grpc::ServerWriter<FlightPayload>* writer) {
  engine::SnapshotRequest request;
  request.table = ticket.table;
  if (ticket.has_bucket) request.bucket = ticket.bucket;
  request.columns = ticket.columns;
  ASSIGN_OR_RAISE(const node::TableHandle table, node_->GetTable(ticket.table));
  ASSIGN_OR_RAISE(auto reader, table.OpenSnapshot(request));
  ASSIGN_OR_RAISE(auto schema, ipc::EncodeSchema(*reader->schema()));
  if (!writer->Write(SchemaPayload(schema))) return Status::OK();
  // The first batch (empty when the table is) says where the snapshot stands in each changelog.
  json offsets = json::array();
  for (const auto& o : reader->offsets()) {
    offsets.push_back({{"bucket", o.bucket}, {"next_offset", o.next_offset}});
  }
  std::string metadata = json{{"offsets", std::move(offsets)}}.dump();
  bool sent = false;
  while (true) {
    if (stopping_) return ShuttingDown();
    const auto start = std::chrono::steady_clock::now();
    ASSIGN_OR_RAISE(auto batch, reader->Next());
    if (!batch) {
      if (sent) break;
      ASSIGN_OR_RAISE(batch, EmptyBatch(reader->schema()));
    }
    ASSIGN_OR_RAISE(auto payload, BatchPayload(*batch, std::move(metadata)));
    node_->metrics().AddFetch(ticket.table, ticket.has_bucket ? ticket.bucket : metrics::kNoBucket,
                              batch->num_rows(), payload.body_length, SecondsSince(start));
    metadata.clear();
    sent = true;
    if (!writer->Write(payload)) break;
  }
  return Status::OK();
}

Status FlightService::SendLookup(const flight::Ticket& ticket,
                                 grpc::ServerWriter<FlightPayload>* writer) {
  ASSIGN_OR_RAISE(const node::TableHandle table, node_->GetTable(ticket.table));
  ASSIGN_OR_RAISE(auto keys, LookupKeyBatches(table.descriptor(), ticket));
  bool schema_sent = false;
  for (const auto& batch : keys) {
    const auto start = std::chrono::steady_clock::now();
    engine::LookupRequest request{ticket.table, batch, ticket.prefix, ticket.columns};
    ASSIGN_OR_RAISE(auto rows, table.Lookup(request));
    if (!schema_sent) {
      ASSIGN_OR_RAISE(auto schema, ipc::EncodeSchema(*rows->schema()));
      if (!writer->Write(SchemaPayload(schema))) return Status::OK();
      schema_sent = true;
    }
    ASSIGN_OR_RAISE(auto payload, BatchPayload(*rows));
    node_->metrics().AddFetch(ticket.table, metrics::kNoBucket, rows->num_rows(),
                              payload.body_length, SecondsSince(start));
    if (!writer->Write(payload)) break;
  }
  return Status::OK();
}

Status FlightService::SendUnion(grpc::ServerContext* ctx, const flight::Ticket& ticket,
                                grpc::ServerWriter<FlightPayload>* writer) {
  lake::UnionReadRequest request;
  request.table = ticket.table;
  request.columns = ticket.columns;
  request.limit = ticket.limit;
  request.follow = ticket.follow;
  request.filter = ticket.filter;
  ASSIGN_OR_RAISE(const node::TableHandle table, node_->GetTable(ticket.table));
  ASSIGN_OR_RAISE(auto reader, table.OpenUnionRead(std::move(request)));
  ASSIGN_OR_RAISE(auto schema, ipc::EncodeSchema(*reader->schema()));
  if (!writer->Write(SchemaPayload(schema))) return Status::OK();
  metrics::Metrics& metrics = node_->metrics();
  if (ticket.follow) metrics.AddFollowReaders(ticket.table, 1);
  struct ReadEnd {  // counts what the read pruned and that it no longer follows
    metrics::Metrics* metrics;
    const flight::Ticket* ticket;
    const lake::UnionReader* reader;
    ~ReadEnd() {
      if (ticket->follow) metrics->AddFollowReaders(ticket->table, -1);
      const lake::UnionPruning pruned = reader->pruning();
      metrics->AddUnionPruning(ticket->table, pruned.files_skipped, pruned.row_groups_skipped);
    }
  } read_end{&metrics, &ticket, reader.get()};
  // The first message (an empty batch when nothing comes at once) says what the read covers.
  json offsets = json::array();
  for (const auto& b : reader->buckets()) {
    offsets.push_back(
        {{"bucket", b.bucket}, {"lake_offset", b.lake_offset}, {"next_offset", b.next_offset}});
  }
  json first = {{"offsets", std::move(offsets)},
                {"snapshot_id", reader->snapshot_id() ? json(*reader->snapshot_id()) : json()}};
  bool sent = false;
  while (!ctx->IsCancelled()) {
    if (stopping_) return ShuttingDown();
    const auto start = std::chrono::steady_clock::now();
    ASSIGN_OR_RAISE(auto next, reader->Next(start + kFollowPoll));
    if (!next && sent) {
      if (reader->done()) break;
      continue;  // following: nothing new yet
    }
    json metadata = sent ? json::object() : first;
    FlightPayload payload;
    if (next) {
      switch (next->part) {
        case lake::UnionBatch::Part::kLake: metadata["part"] = "lake"; break;
        case lake::UnionBatch::Part::kLog: metadata["part"] = "log"; break;
        case lake::UnionBatch::Part::kChanges: metadata["part"] = "changes"; break;
      }
      if (next->part != lake::UnionBatch::Part::kLake) {
        metadata["bucket"] = next->bucket;
        metadata["base_offset"] = next->base_offset;
        metadata["next_offset"] = next->next_offset;
      }
      payload.data_header = next->message.metadata;
      payload.data_body = std::move(next->message.body);
      payload.body_length = next->message.body_length;
    } else {
      ASSIGN_OR_RAISE(auto empty, EmptyBatch(reader->schema()));
      ASSIGN_OR_RAISE(payload, BatchPayload(*empty));
    }
    payload.app_metadata = metadata.dump();
    const int32_t bucket =
        next && next->part != lake::UnionBatch::Part::kLake ? next->bucket : metrics::kNoBucket;
    metrics.AddFetch(ticket.table, bucket, next ? next->rows : 0, payload.body_length,
                     SecondsSince(start));
    sent = true;
    if (!writer->Write(payload) || (!next && reader->done())) break;
  }
  return Status::OK();
}

Status FlightService::Get(grpc::ServerContext* ctx, const proto::Ticket* ticket,
                          grpc::ServerWriter<FlightPayload>* writer) {
  ASSIGN_OR_RAISE(auto caller, Authenticate(ctx));
  if (node_->cluster() && ticket->ticket().starts_with(kReplicaFetchPrefix)) {
    return ServeReplicaFetch(ticket->ticket(), writer);
  }
  ASSIGN_OR_RAISE(auto request, flight::ParseTicket(ticket->ticket()));
  RETURN_NOT_OK(Authorize(caller, request.table, auth::Access::kRead));
  if (request.kind == flight::Ticket::Kind::kSnapshot) return SendSnapshot(request, writer);
  if (request.kind == flight::Ticket::Kind::kLookup) return SendLookup(request, writer);
  if (request.kind == flight::Ticket::Kind::kUnion) return SendUnion(ctx, request, writer);
  const std::string table = request.table;
  const bool follow = request.follow;
  ASSIGN_OR_RAISE(const node::TableHandle handle, node_->GetTable(table));
  ASSIGN_OR_RAISE(auto cursor, handle.OpenRead(ToReadRequest(std::move(request))));
  ASSIGN_OR_RAISE(auto schema, ipc::EncodeSchema(*cursor->schema()));
  if (!writer->Write(SchemaPayload(schema))) return Status::OK();  // client went away
  metrics::Metrics& metrics = node_->metrics();
  if (follow) metrics.AddFollowReaders(table, 1);
  struct FollowEnd {
    metrics::Metrics* metrics;
    const std::string* table;
    bool follow;
    ~FollowEnd() {
      if (follow) metrics->AddFollowReaders(*table, -1);
    }
  } follow_end{&metrics, &table, follow};
  while (!ctx->IsCancelled()) {
    if (stopping_) return ShuttingDown();
    const auto start = std::chrono::steady_clock::now();
    ASSIGN_OR_RAISE(auto next, cursor->Next(start + kFollowPoll));
    if (!next.has_value()) {
      if (cursor->done()) break;
      continue;  // following: nothing new yet
    }
    engine::ReadBatch& batch = *next;
    metrics.AddFetch(table, cursor->bucket(), batch.next_offset - batch.base_offset,
                     batch.message.body_length, SecondsSince(start));
    FlightPayload payload;
    payload.data_header = batch.message.metadata;
    payload.data_body = std::move(batch.message.body);
    payload.body_length = batch.message.body_length;
    payload.app_metadata = json{
        {"bucket", cursor->bucket()},
        {"base_offset", batch.base_offset},
        {"next_offset", batch.next_offset},
        {"append_time_ms",
         batch.append_time_ms}}.dump();
    if (!writer->Write(payload)) break;
  }
  return Status::OK();
}

Status FlightService::ServeReplicaFetch(const std::string& ticket,
                                        grpc::ServerWriter<FlightPayload>* writer) {
  json j = json::parse(ticket, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("replica_fetch")) {
    return Status::Invalid("a replica_fetch ticket must be {\"replica_fetch\": {...}}");
  }
  ASSIGN_OR_RAISE(auto fetch, cluster::ReplicaFetchFromJson(j["replica_fetch"].dump()));
  bool client_gone = false;
  ASSIGN_OR_RAISE(
      cluster::FetchEnd fetch_end,
      node_->cluster()->ServeFetch(fetch, [&](const log::LogBatch& batch, int32_t epoch) {
        if (client_gone) return Status::OK();
        FlightPayload payload;
        payload.data_header = batch.metadata;
        payload.data_body = {batch.body};
        payload.body_length = batch.body ? batch.body->size() : 0;
        payload.app_metadata = cluster::FetchedBatchMetadata(batch, epoch);
        client_gone = !writer->Write(payload);
        return Status::OK();
      }));
  FlightPayload end;
  end.app_metadata = cluster::FetchEndMetadata(fetch_end);
  writer->Write(end);
  return Status::OK();
}

grpc::Status FlightService::DoGet(grpc::ServerContext* ctx, const proto::Ticket* ticket,
                                  grpc::ServerWriter<FlightPayload>* writer) {
  return Finish("fetch", Get(ctx, ticket, writer));
}

Status FlightService::Put(grpc::ServerContext* ctx,
                          grpc::ServerReaderWriter<proto::PutResult, FlightDataIn>* stream) {
  ASSIGN_OR_RAISE(auto caller, Authenticate(ctx));
  FlightDataIn first;
  if (!stream->Read(&first)) return Status::Invalid("DoPut stream sent no messages");
  if (!first.descriptor) {
    return Status::Invalid(
        "the first DoPut message must carry a flight descriptor [namespace, table]");
  }
  ASSIGN_OR_RAISE(auto command, CommandFromDescriptor(*first.descriptor));
  if (command.op == flight::Command::Op::kLookup) {
    return Status::Invalid("lookups go through DoExchange or a DoGet ticket, not DoPut");
  }
  const std::string& table = command.table;
  RETURN_NOT_OK(Authorize(caller, table, auth::Access::kWrite));
  if (!first.data_header) return Status::Invalid("the first DoPut message must carry the schema");
  ASSIGN_OR_RAISE(auto schema_message, ipc::ParseMessage(first.data_header, Buffer::Empty()));
  if (schema_message.type != ipc::MessageType::kSchema) {
    return Status::Invalid("the first DoPut message must be a Schema message");
  }
  auto schema = ipc::DecodeSchema(*schema_message.metadata);
  if (!schema.ok()) {
    // A type Oxbow cannot store is a schema mismatch from the client's point of view.
    Status st = schema.status();
    if (st.code() == StatusCode::kNotImplemented) {
      st = Status::Invalid("schema mismatch for table " + Quote(table) + ": " + st.message());
    }
    return st;
  }
  ASSIGN_OR_RAISE(const node::TableHandle handle, node_->GetTable(table));
  ASSIGN_OR_RAISE(
      auto session,
      handle.StartPut(*schema,
                      command.op == flight::Command::Op::kDelete ? engine::PutOp::kDelete
                                                                 : engine::PutOp::kUpsert,
                      command.acks_leader ? cluster::Acks::kLeader : cluster::Acks::kAll,
                      command.bucket));
  FlightDataIn data;
  while (stream->Read(&data)) {
    if (!data.data_header) continue;  // metadata-only messages carry nothing to store
    const auto start = std::chrono::steady_clock::now();
    ASSIGN_OR_RAISE(auto body, data.AlignedBody());
    ASSIGN_OR_RAISE(auto message, ipc::ParseMessage(data.data_header, body));
    if (message.type != ipc::MessageType::kRecordBatch) {
      return Status::Invalid(
          "DoPut expects RecordBatch messages after the schema (dictionary batches are not "
          "supported)");
    }
    ASSIGN_OR_RAISE(auto appended, session->Append(message));
    std::vector<metrics::BucketRows> rows;
    for (const auto& range : appended) rows.push_back({range.bucket, range.rows});
    node_->metrics().AddPut(table, rows, message.body->size(), SecondsSince(start));
    proto::PutResult ack;
    ack.set_app_metadata(OffsetsMetadata(appended));
    if (!stream->Write(ack)) break;
  }
  return Status::OK();
}

grpc::Status FlightService::DoPut(
    grpc::ServerContext* ctx, grpc::ServerReaderWriter<proto::PutResult, FlightDataIn>* stream) {
  return Finish("put", Put(ctx, stream));
}

grpc::Status FlightService::Finish(const char* operation, const Status& status) {
  if (!status.ok()) node_->metrics().AddError(operation, StatusCodeName(status.code()));
  return ToGrpcStatus(status);
}

Status FlightService::ExchangeLookups(
    grpc::ServerContext* ctx, grpc::ServerReaderWriter<FlightPayload, FlightDataIn>* stream) {
  ASSIGN_OR_RAISE(auto caller, Authenticate(ctx));
  FlightDataIn first;
  if (!stream->Read(&first)) return Status::Invalid("DoExchange stream sent no messages");
  if (!first.descriptor || first.descriptor->type() != proto::FlightDescriptor::CMD) {
    return Status::Invalid(
        "the first DoExchange message must carry a CMD descriptor {\"table\": \"ns.t\", "
        "\"op\": \"lookup\"}");
  }
  ASSIGN_OR_RAISE(auto command, CommandFromDescriptor(*first.descriptor));
  if (command.op != flight::Command::Op::kLookup) {
    return Status::Invalid("DoExchange serves \"op\": \"lookup\" only");
  }
  RETURN_NOT_OK(Authorize(caller, command.table, auth::Access::kRead));
  // pyarrow sends the descriptor alone, then the schema of the keys.
  while (!first.data_header) {
    if (!stream->Read(&first)) return Status::Invalid("DoExchange stream ended before the schema");
  }
  ASSIGN_OR_RAISE(auto schema_message, ipc::ParseMessage(first.data_header, Buffer::Empty()));
  if (schema_message.type != ipc::MessageType::kSchema) {
    return Status::Invalid("DoExchange expects the Schema message of the keys first");
  }
  ASSIGN_OR_RAISE(auto key_schema, ipc::DecodeSchema(*schema_message.metadata));
  engine::LookupRequest request{command.table, nullptr, command.prefix, command.columns};
  // An empty lookup checks the request and gives the answer's schema before any key arrives.
  ASSIGN_OR_RAISE(request.keys, EmptyBatch(key_schema));
  ASSIGN_OR_RAISE(const node::TableHandle table, node_->GetTable(command.table));
  // "bucket": another server forwarded the keys of a bucket this one leads.
  const bool forwarded = command.bucket.has_value();
  ASSIGN_OR_RAISE(auto empty, table.Lookup(request, forwarded));
  ASSIGN_OR_RAISE(auto schema, ipc::EncodeSchema(*empty->schema()));
  if (!stream->Write(SchemaPayload(schema))) return Status::OK();
  FlightDataIn data;
  while (stream->Read(&data)) {
    if (stopping_) return ShuttingDown();
    if (!data.data_header) continue;
    const auto start = std::chrono::steady_clock::now();
    ASSIGN_OR_RAISE(auto body, data.AlignedBody());
    ASSIGN_OR_RAISE(auto message, ipc::ParseMessage(data.data_header, body));
    if (message.type != ipc::MessageType::kRecordBatch) {
      return Status::Invalid("DoExchange expects RecordBatch messages of keys after the schema");
    }
    ASSIGN_OR_RAISE(request.keys, ipc::DecodeRecordBatch(key_schema, message));
    ASSIGN_OR_RAISE(auto rows, table.Lookup(request, forwarded));
    ASSIGN_OR_RAISE(auto payload, BatchPayload(*rows));
    node_->metrics().AddFetch(command.table, metrics::kNoBucket, rows->num_rows(),
                              payload.body_length, SecondsSince(start));
    if (!stream->Write(payload)) break;
  }
  return Status::OK();
}

grpc::Status FlightService::DoExchange(
    grpc::ServerContext* ctx, grpc::ServerReaderWriter<FlightPayload, FlightDataIn>* stream) {
  return Finish("lookup", ExchangeLookups(ctx, stream));
}

Result<std::string> FlightService::RunAction(const Caller& caller, const std::string& type,
                                             const std::string& body) {
  if (type == "create_table") {
    ASSIGN_OR_RAISE(auto request, catalog::ParseCreateTable(body));
    RETURN_NOT_OK(Authorize(caller, request.table.name, auth::Access::kAdmin));
    ASSIGN_OR_RAISE(auto table, node_->CreateTable(request));
    return catalog::DescriptorToJson(table);
  }
  if (type == "drop_table") {
    ASSIGN_OR_RAISE(std::string name, flight::ParseTableNameBody(body));
    RETURN_NOT_OK(Authorize(caller, name, auth::Access::kAdmin));
    RETURN_NOT_OK(node_->DropTable(name));
    return json{{"dropped", name}}.dump();
  }
  if (type == "alter_table") {
    ASSIGN_OR_RAISE(auto request, catalog::ParseAlterTable(body));
    RETURN_NOT_OK(Authorize(caller, request.table, auth::Access::kAdmin));
    ASSIGN_OR_RAISE(auto table, node_->AlterTable(request));
    return catalog::DescriptorToJson(table);
  }
  if (type == "list_tables") {
    json tables = json::array();
    for (const auto& t : node_->ListTables()) {
      if (!Authorize(caller, t.name, auth::Access::kRead).ok()) continue;
      tables.push_back(json::parse(catalog::DescriptorToJson(t)));
    }
    return json{{"tables", std::move(tables)}}.dump();
  }
  if (type == "describe_table") {
    ASSIGN_OR_RAISE(std::string name, flight::ParseTableNameBody(body));
    RETURN_NOT_OK(Authorize(caller, name, auth::Access::kRead));
    ASSIGN_OR_RAISE(auto description, node_->DescribeTable(name));
    json j = json::parse(catalog::DescriptorToJson(description.table.table));
    j["bucket_offsets"] = BucketStatusJson(description.table);
    j["lake"] = LakeStatusJson(description.lake);
    return j.dump();
  }
  if (type == "cluster_status") {
    return ClusterStatusJson();
  }
  if (type == "reassign_bucket") {
    if (!node_->cluster()) return Status::Invalid("reassign_bucket needs cluster mode");
    json j = json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("table") || !j["table"].is_string() ||
        !j.contains("bucket") || !j["bucket"].is_number_integer() || !j.contains("replicas") ||
        !j["replicas"].is_array()) {
      return Status::Invalid(
          "reassign_bucket needs {\"table\": \"ns.t\", \"bucket\": b, \"replicas\": [ids]}");
    }
    const std::string table = j["table"].get<std::string>();
    RETURN_NOT_OK(Authorize(caller, table, auth::Access::kAdmin));
    std::vector<int32_t> replicas;
    for (const json& id : j["replicas"]) {
      if (!id.is_number_integer()) return Status::Invalid("replicas must be server ids");
      replicas.push_back(id.get<int32_t>());
    }
    RETURN_NOT_OK(node_->cluster()->ReassignBucket(table, j["bucket"].get<int32_t>(), replicas));
    return json{{"table", table}, {"bucket", j["bucket"]}, {"moving_to", replicas}}.dump();
  }
  if (type == "replica_epoch_end" && node_->cluster()) {
    json j = json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("table") || !j.contains("bucket") ||
        !j.contains("epoch")) {
      return Status::Invalid("replica_epoch_end needs {\"table\", \"bucket\", \"epoch\"}");
    }
    ASSIGN_OR_RAISE(auto end, node_->cluster()->EndOffsetForEpoch(j["table"].get<std::string>(),
                                                                  j["bucket"].get<int32_t>(),
                                                                  j["epoch"].get<int32_t>()));
    return json{{"epoch", end.epoch}, {"end_offset", end.end_offset}}.dump();
  }
  std::string known;
  for (const auto& a : kActions) known += std::string(known.empty() ? "" : ", ") + a.type;
  return Status::NotImplemented("unknown action " + Quote(type) + " (known: " + known + ")");
}

Result<std::string> FlightService::ClusterStatusJson() const {
  const cluster::Cluster* cluster = node_->cluster();
  if (!cluster) return json{{"mode", "embedded"}}.dump();
  auto meta = cluster->Metadata();
  json servers = json::array();
  for (const auto& [id, server] : meta->servers) {
    servers.push_back(
        {{"id", id}, {"flight", server.flight}, {"kafka", server.kafka}, {"rack", server.rack}});
  }
  json buckets = json::array();
  for (const auto& b : cluster->BucketStatuses()) {
    json followers = json::object();
    for (const auto& [id, end] : b.follower_log_ends) followers[std::to_string(id)] = end;
    buckets.push_back({{"table", b.table},
                       {"bucket", b.bucket},
                       {"replicas", b.replicas},
                       {"leader", b.state.leader},
                       {"leader_epoch", b.state.leader_epoch},
                       {"isr", b.state.isr},
                       {"role", b.role},
                       {"log_end", b.local ? json(b.log_end) : json(nullptr)},
                       {"high_watermark", b.local ? json(b.high_watermark) : json(nullptr)},
                       {"follower_log_ends", followers},
                       {"moving_to", b.moving_to.empty() ? json(nullptr) : json(b.moving_to)}});
  }
  return json{{"mode", "cluster"},
              {"server_id", cluster->server_id()},
              {"controller", meta->controller},
              {"controller_epoch", meta->controller_epoch},
              {"servers", servers},
              {"buckets", buckets}}
      .dump();
}

grpc::Status FlightService::DoAction(grpc::ServerContext* ctx, const proto::Action* action,
                                     grpc::ServerWriter<proto::Result>* writer) {
  auto caller = Authenticate(ctx);
  if (!caller.ok()) return Finish("action", caller.status());
  auto result = RunAction(*caller, action->type(), action->body());
  if (!result.ok()) return Finish("action", result.status());
  proto::Result r;
  r.set_body(*result);
  writer->Write(r);
  return grpc::Status::OK;
}

grpc::Status FlightService::ListActions(grpc::ServerContext* ctx, const proto::Empty*,
                                        grpc::ServerWriter<proto::ActionType>* writer) {
  if (auto caller = Authenticate(ctx); !caller.ok()) return Finish("action", caller.status());
  for (const auto& a : kActions) {
    proto::ActionType t;
    t.set_type(a.type);
    t.set_description(a.description);
    writer->Write(t);
  }
  return grpc::Status::OK;
}

}  // namespace oxbow::server
