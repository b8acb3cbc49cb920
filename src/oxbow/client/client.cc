#include "oxbow/client/client.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/sync_stream.h>

#include "oxbow/auth/auth.h"
#include "oxbow/flight/flight_data.h"

namespace oxbow::client {
namespace {

namespace ipc = arrow::ipc;
namespace proto = ::arrow::flight::protocol;
using flight::FlightDataIn;
using flight::FlightPayload;
using flight::FromGrpcStatus;

// Bounds the call when `timeout_ms` > 0.
void SetTimeout(grpc::ClientContext* context, int64_t timeout_ms) {
  if (timeout_ms > 0) {
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  }
}

// Every call after a login carries its bearer token.
void Authorize(grpc::ClientContext* context, const std::string& authorization) {
  if (!authorization.empty()) context->AddMetadata("authorization", authorization);
}

grpc::internal::RpcMethod Method(const char* name, grpc::internal::RpcMethod::RpcType type,
                                 const std::shared_ptr<grpc::Channel>& channel) {
  return grpc::internal::RpcMethod(name, type, channel);
}

FlightPayload PayloadOf(const ipc::EncodedMessage& message) {
  FlightPayload p;
  p.data_header = message.metadata;
  p.data_body = message.body;
  p.body_length = message.body_length;
  return p;
}

Result<proto::FlightDescriptor> PathDescriptor(const std::string& table) {
  auto dot = table.find('.');
  if (dot == std::string::npos) {
    return Status::Invalid("table name '" + table + "' must be 'namespace.table'");
  }
  proto::FlightDescriptor descriptor;
  descriptor.set_type(proto::FlightDescriptor::PATH);
  descriptor.add_path(table.substr(0, dot));
  descriptor.add_path(table.substr(dot + 1));
  return descriptor;
}

proto::FlightDescriptor CommandDescriptor(const flight::Command& command) {
  proto::FlightDescriptor descriptor;
  descriptor.set_type(proto::FlightDescriptor::CMD);
  descriptor.set_cmd(flight::CommandToJson(command));
  return descriptor;
}

// The first message of a DoPut or DoExchange: the descriptor and the schema.
Result<FlightPayload> FirstPayload(proto::FlightDescriptor descriptor,
                                   const arrow::SchemaPtr& schema) {
  ASSIGN_OR_RAISE(auto encoded, ipc::EncodeSchema(*schema));
  FlightPayload first = PayloadOf(encoded);
  first.descriptor = std::move(descriptor);
  return first;
}

using FlightReader = grpc::internal::ReaderInterface<FlightDataIn>;

// The Schema message that starts a stream of batches; nullptr when the stream ended first.
Result<arrow::SchemaPtr> ReadSchema(FlightReader& reader, const char* rpc) {
  FlightDataIn first;
  if (!reader.Read(&first)) return arrow::SchemaPtr();
  if (!first.data_header)
    return Status::Invalid(std::string(rpc) + " stream did not start with a schema");
  ASSIGN_OR_RAISE(auto message, ipc::ParseMessage(first.data_header, Buffer::Empty()));
  if (message.type != ipc::MessageType::kSchema) {
    return Status::Invalid(std::string(rpc) + " stream did not start with a schema");
  }
  return ipc::DecodeSchema(*message.metadata);
}

// The next record batch of the stream; nullopt when it ended.
Result<std::optional<GetStream::Chunk>> ReadChunk(FlightReader& reader,
                                                  const arrow::SchemaPtr& schema) {
  FlightDataIn data;
  while (reader.Read(&data)) {
    if (!data.data_header) continue;
    ASSIGN_OR_RAISE(auto body, data.AlignedBody());
    ASSIGN_OR_RAISE(auto message, ipc::ParseMessage(data.data_header, body));
    if (message.type != ipc::MessageType::kRecordBatch) continue;
    ASSIGN_OR_RAISE(auto batch, ipc::DecodeRecordBatch(schema, message));
    const auto body_length = static_cast<int64_t>(body->size());
    return std::optional<GetStream::Chunk>(
        GetStream::Chunk{std::move(batch), std::move(data.app_metadata), body_length});
  }
  return std::optional<GetStream::Chunk>();
}

// A bidirectional call that sends FlightData (DoPut, DoExchange) and reads `In`: its start and
// its end, shared by the put and exchange streams.
template <typename In>
class BidiCall {
 public:
  // Starts the call and sends `first`; false when the stream is closed already.
  bool Start(const std::shared_ptr<grpc::Channel>& channel, const std::string& authorization,
             const char* method, const FlightPayload& first) {
    Authorize(&context_, authorization);
    stream_.reset(grpc::internal::ClientReaderWriterFactory<FlightPayload, In>::Create(
        channel.get(), Method(method, grpc::internal::RpcMethod::BIDI_STREAMING, channel),
        &context_));
    return stream_->Write(first);
  }

  grpc::ClientReaderWriter<FlightPayload, In>& stream() { return *stream_; }

  Status DoneWriting() {
    stream_->WritesDone();
    return Status::OK();
  }

  Status Finish() {
    if (!finished_) {
      finished_ = true;
      final_ = FromGrpcStatus(stream_->Finish());
    }
    return final_;
  }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<FlightPayload, In>> stream_;
  bool finished_ = false;
  Status final_;
};

class FlightPutStream : public PutStream {
 public:
  explicit FlightPutStream(ipc::WriteOptions options) : options_(options) {}

  Status Start(const std::shared_ptr<grpc::Channel>& channel, const std::string& authorization,
               proto::FlightDescriptor descriptor, const arrow::SchemaPtr& schema) {
    ASSIGN_OR_RAISE(auto first, FirstPayload(std::move(descriptor), schema));
    if (!call_.Start(channel, authorization, flight::method::kDoPut, first)) return Finish();
    return Status::OK();
  }

  Status Send(const arrow::RecordBatch& batch) override {
    ASSIGN_OR_RAISE(auto encoded, ipc::EncodeRecordBatch(batch, options_));
    if (!call_.stream().Write(PayloadOf(encoded))) return Finish();
    return Status::OK();
  }

  Result<std::optional<std::string>> ReadAck() override {
    proto::PutResult ack;
    if (call_.stream().Read(&ack)) return std::optional<std::string>(ack.app_metadata());
    return std::optional<std::string>();
  }

  Status DoneWriting() override { return call_.DoneWriting(); }
  Status Finish() override { return call_.Finish(); }

 private:
  ipc::WriteOptions options_;
  BidiCall<proto::PutResult> call_;
};

// Starts a DoGet of `ticket` on `context` (authorized, its deadline set by the caller).
std::unique_ptr<grpc::ClientReader<FlightDataIn>> StartDoGet(
    const std::shared_ptr<grpc::Channel>& channel, grpc::ClientContext* context,
    const std::string& ticket) {
  proto::Ticket request;
  request.set_ticket(ticket);
  auto method =
      Method(flight::method::kDoGet, grpc::internal::RpcMethod::SERVER_STREAMING, channel);
  return std::unique_ptr<grpc::ClientReader<FlightDataIn>>(
      grpc::internal::ClientReaderFactory<FlightDataIn>::Create(channel.get(), method, context,
                                                                request));
}

class FlightGetStream : public GetStream {
 public:
  Status Start(const std::shared_ptr<grpc::Channel>& channel, const std::string& authorization,
               const std::string& ticket, int64_t timeout_ms) {
    SetTimeout(&context_, timeout_ms);
    Authorize(&context_, authorization);
    reader_ = StartDoGet(channel, &context_, ticket);
    ASSIGN_OR_RAISE(schema_, ReadSchema(*reader_, "DoGet"));
    if (!schema_) return Finished("DoGet stream ended before its schema");
    return Status::OK();
  }

  const arrow::SchemaPtr& schema() const override { return schema_; }

  Result<std::optional<Chunk>> Next() override {
    ASSIGN_OR_RAISE(auto chunk, ReadChunk(*reader_, schema_));
    if (!chunk) RETURN_NOT_OK(Finished("DoGet"));
    return chunk;
  }

  void Cancel() override { context_.TryCancel(); }

 private:
  Status Finished(const std::string& what) {
    Status st = FromGrpcStatus(reader_->Finish());
    if (st.code() == StatusCode::kCancelled) return Status::OK();
    return st.ok() ? st : st.WithContext(what);
  }

  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<FlightDataIn>> reader_;
  arrow::SchemaPtr schema_;
};

class FlightExchangeStream : public ExchangeStream {
 public:
  Status Start(const std::shared_ptr<grpc::Channel>& channel, const std::string& authorization,
               proto::FlightDescriptor descriptor, const arrow::SchemaPtr& schema) {
    ASSIGN_OR_RAISE(auto first, FirstPayload(std::move(descriptor), schema));
    if (!call_.Start(channel, authorization, flight::method::kDoExchange, first)) {
      return FinishOrError("DoExchange stream closed before its schema");
    }
    ASSIGN_OR_RAISE(schema_, ReadSchema(call_.stream(), "DoExchange"));
    if (!schema_) return FinishOrError("DoExchange stream ended before its schema");
    return Status::OK();
  }

  const arrow::SchemaPtr& schema() const override { return schema_; }

  Status Send(const arrow::RecordBatch& batch) override {
    ASSIGN_OR_RAISE(auto encoded, ipc::EncodeRecordBatch(batch));
    if (!call_.stream().Write(PayloadOf(encoded))) {
      return FinishOrError("DoExchange stream closed by the server");
    }
    return Status::OK();
  }

  Result<std::optional<GetStream::Chunk>> Next() override {
    ASSIGN_OR_RAISE(auto chunk, ReadChunk(call_.stream(), schema_));
    if (!chunk) RETURN_NOT_OK(Finish());
    return chunk;
  }

  Status DoneWriting() override { return call_.DoneWriting(); }
  Status Finish() override { return call_.Finish(); }

 private:
  // The server's error, or `what` when the stream ended without one.
  Status FinishOrError(const std::string& what) {
    RETURN_NOT_OK(Finish());
    return Status::IOError(what);
  }

  BidiCall<FlightDataIn> call_;
  arrow::SchemaPtr schema_;
};

}  // namespace

Result<std::unique_ptr<Client>> Client::Connect(const std::string& address,
                                                const ConnectOptions& options) {
  std::string target = address;
  bool tls = false;
  for (const char* scheme : {"grpc://", "grpc+tcp://", "grpc+tls://"}) {
    const std::string_view prefix(scheme);
    if (target.rfind(prefix, 0) == 0) {
      target = target.substr(prefix.size());
      tls = prefix == "grpc+tls://";
    }
  }
  if (target.empty() || target.find(':') == std::string::npos) {
    return Status::Invalid("server address '" + address + "' must be host:port");
  }
  const bool tls_options = !options.tls_root_certs.empty() || !options.tls_cert_chain.empty();
  if (tls_options && !tls) {
    return Status::Invalid("TLS options need a grpc+tls://host:port server address, not '" +
                           address + "'");
  }
  if (options.tls_cert_chain.empty() != options.tls_private_key.empty()) {
    return Status::Invalid("a client certificate needs its key, and a key its certificate");
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // A server that restarts (a cluster's rolling restart, a failover) is reachable again within
  // a second: gRPC's default reconnect backoff grows to two minutes.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (tls) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls_root_certs;
    ssl.pem_cert_chain = options.tls_cert_chain;
    ssl.pem_private_key = options.tls_private_key;
    credentials = grpc::SslCredentials(ssl);
  }
  auto channel = grpc::CreateCustomChannel(target, credentials, args);
  return std::unique_ptr<Client>(new Client(std::move(channel)));
}

Status Client::Login(const std::string& user, const std::string& password) {
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Basic " + auth::EncodeBasicCredentials(user, password));
  auto method =
      Method(flight::method::kHandshake, grpc::internal::RpcMethod::BIDI_STREAMING, channel_);
  std::unique_ptr<grpc::ClientReaderWriter<proto::HandshakeRequest, proto::HandshakeResponse>>
      stream(grpc::internal::ClientReaderWriterFactory<
             proto::HandshakeRequest, proto::HandshakeResponse>::Create(channel_.get(), method,
                                                                        &context));
  stream->WritesDone();
  proto::HandshakeResponse response;
  while (stream->Read(&response)) {
  }
  RETURN_NOT_OK(FromGrpcStatus(stream->Finish()));
  const auto& headers = context.GetServerInitialMetadata();
  auto it = headers.find("authorization");
  if (it == headers.end()) return Status::OK();  // a server without --auth needs no token
  authorization_.assign(it->second.data(), it->second.size());
  return Status::OK();
}

Result<std::string> Client::DoAction(const std::string& type, const std::string& body,
                                     int64_t timeout_ms) {
  proto::Action action;
  action.set_type(type);
  action.set_body(body);
  grpc::ClientContext context;
  SetTimeout(&context, timeout_ms);
  Authorize(&context, authorization_);
  auto method =
      Method(flight::method::kDoAction, grpc::internal::RpcMethod::SERVER_STREAMING, channel_);
  std::unique_ptr<grpc::ClientReader<proto::Result>> reader(
      grpc::internal::ClientReaderFactory<proto::Result>::Create(channel_.get(), method, &context,
                                                                 action));
  std::string out;
  proto::Result result;
  while (reader->Read(&result)) out += result.body();
  RETURN_NOT_OK(FromGrpcStatus(reader->Finish()));
  return out;
}

Result<std::unique_ptr<PutStream>> Client::DoPut(const std::string& table,
                                                 const arrow::SchemaPtr& schema,
                                                 ipc::WriteOptions options) {
  ASSIGN_OR_RAISE(auto descriptor, PathDescriptor(table));
  auto stream = std::make_unique<FlightPutStream>(options);
  RETURN_NOT_OK(stream->Start(channel_, authorization_, std::move(descriptor), schema));
  return std::unique_ptr<PutStream>(std::move(stream));
}

Result<std::unique_ptr<PutStream>> Client::DoPut(const flight::Command& command,
                                                 const arrow::SchemaPtr& schema,
                                                 ipc::WriteOptions options) {
  auto stream = std::make_unique<FlightPutStream>(options);
  RETURN_NOT_OK(stream->Start(channel_, authorization_, CommandDescriptor(command), schema));
  return std::unique_ptr<PutStream>(std::move(stream));
}

Result<std::unique_ptr<ExchangeStream>> Client::DoExchange(const flight::Command& command,
                                                           const arrow::SchemaPtr& schema) {
  auto stream = std::make_unique<FlightExchangeStream>();
  RETURN_NOT_OK(stream->Start(channel_, authorization_, CommandDescriptor(command), schema));
  return std::unique_ptr<ExchangeStream>(std::move(stream));
}

class FlightRawGetStream : public RawGetStream {
 public:
  void Start(const std::shared_ptr<grpc::Channel>& channel, const std::string& authorization,
             const std::string& ticket, int64_t timeout_ms) {
    Authorize(&context_, authorization);
    SetTimeout(&context_, timeout_ms);
    reader_ = StartDoGet(channel, &context_, ticket);
  }

  Result<std::optional<FlightDataIn>> Next() override {
    FlightDataIn data;
    if (reader_->Read(&data)) return std::optional<FlightDataIn>(std::move(data));
    RETURN_NOT_OK(FromGrpcStatus(reader_->Finish()));
    return std::optional<FlightDataIn>();
  }

  void Cancel() override { context_.TryCancel(); }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<FlightDataIn>> reader_;
};

Result<std::unique_ptr<RawGetStream>> Client::DoGetRaw(const std::string& ticket,
                                                       int64_t timeout_ms) {
  auto stream = std::make_unique<FlightRawGetStream>();
  stream->Start(channel_, authorization_, ticket, timeout_ms);
  return std::unique_ptr<RawGetStream>(std::move(stream));
}

Result<std::unique_ptr<GetStream>> Client::DoGet(const std::string& ticket, int64_t timeout_ms) {
  auto stream = std::make_unique<FlightGetStream>();
  RETURN_NOT_OK(stream->Start(channel_, authorization_, ticket, timeout_ms));
  return std::unique_ptr<GetStream>(std::move(stream));
}

}  // namespace oxbow::client
