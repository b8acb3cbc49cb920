// A C++ Arrow Flight client for oxbowd, used by the oxbow CLI and the benchmarks. It speaks only
// the public API of docs/api.md, so anything it does a pyarrow.flight user can do too.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "oxbow/arrow/ipc.h"
#include "oxbow/common/status.h"
#include "oxbow/flight/flight_data.h"
#include "oxbow/flight/requests.h"

namespace grpc {
class Channel;
}

namespace oxbow::client {

// One DoPut stream. Send() and ReadAck() may run on two threads (one each).
class PutStream {
 public:
  virtual ~PutStream() = default;
  // Sends one record batch of the stream's schema.
  virtual Status Send(const arrow::RecordBatch& batch) = 0;
  // The next acknowledgement's app_metadata ({"offsets":[...]}), or nullopt once the server
  // has acknowledged everything and the stream is finished.
  virtual Result<std::optional<std::string>> ReadAck() = 0;
  // Tells the server no more batches come (call once, after the last Send).
  virtual Status DoneWriting() = 0;
  // The stream's final status; call after ReadAck() returned nullopt or failed.
  virtual Status Finish() = 0;
};

// One DoGet stream.
class GetStream {
 public:
  struct Chunk {
    arrow::RecordBatchPtr batch;
    std::string app_metadata;  // {"bucket":b,"base_offset":o,"next_offset":n,...}
    int64_t body_length = 0;   // bytes of its IPC body as sent
  };
  virtual ~GetStream() = default;
  virtual const arrow::SchemaPtr& schema() const = 0;
  // The next chunk, or nullopt at the end of the stream.
  virtual Result<std::optional<Chunk>> Next() = 0;
  // Ends a following read from another thread.
  virtual void Cancel() = 0;
};

// One DoGet stream as it arrives: FlightData messages, not decoded (cluster replication moves
// stored batches byte for byte).
class RawGetStream {
 public:
  virtual ~RawGetStream() = default;
  // The next message, or nullopt at the end of the stream.
  virtual Result<std::optional<flight::FlightDataIn>> Next() = 0;
  // Ends the stream from another thread.
  virtual void Cancel() = 0;
};

// One DoExchange stream: batches go out, batches come back (for oxbowd's lookups, one answer per
// batch of keys, in order).
class ExchangeStream {
 public:
  virtual ~ExchangeStream() = default;
  // The schema of the batches that come back.
  virtual const arrow::SchemaPtr& schema() const = 0;
  virtual Status Send(const arrow::RecordBatch& batch) = 0;
  // The next batch that came back, or nullopt at the end of the stream.
  virtual Result<std::optional<GetStream::Chunk>> Next() = 0;
  // Tells the server no more batches come (call once, after the last Send).
  virtual Status DoneWriting() = 0;
  // The stream's final status; call after Next() returned nullopt or failed.
  virtual Status Finish() = 0;
};

// How to reach a server over TLS (a "grpc+tls://" address).
struct ConnectOptions {
  // PEM of the CAs that the server's certificate must chain to. Default: empty, the system's.
  std::string tls_root_certs;
  // PEM certificate chain and its key, for a server that asks for client certificates (mutual
  // TLS). Default: none.
  std::string tls_cert_chain;
  std::string tls_private_key;
};

class Client {
 public:
  // `address` is "host:port", "grpc://host:port", or "grpc+tls://host:port" for TLS. Connects
  // lazily; fails only on a bad address or TLS options without a grpc+tls address.
  static Result<std::unique_ptr<Client>> Connect(const std::string& address,
                                                 const ConnectOptions& options = {});

  // The Flight handshake with basic auth (docs/security.md): every later call carries the bearer
  // token the server returns (a server without --auth returns none and needs none).
  // Unauthenticated for a wrong user or password.
  Status Login(const std::string& user, const std::string& password);

  // Runs an action and returns its result body (JSON); `timeout_ms` > 0 bounds the call.
  Result<std::string> DoAction(const std::string& type, const std::string& body,
                               int64_t timeout_ms = 0);
  // A DoPut with the PATH descriptor [namespace, table].
  Result<std::unique_ptr<PutStream>> DoPut(const std::string& table, const arrow::SchemaPtr& schema,
                                           arrow::ipc::WriteOptions options = {});
  // A DoPut with the CMD descriptor of `command` (upsert or delete).
  Result<std::unique_ptr<PutStream>> DoPut(const flight::Command& command,
                                           const arrow::SchemaPtr& schema,
                                           arrow::ipc::WriteOptions options = {});
  // A DoExchange with the CMD descriptor of `command`, sending batches of `schema`.
  Result<std::unique_ptr<ExchangeStream>> DoExchange(const flight::Command& command,
                                                     const arrow::SchemaPtr& schema);
  // `ticket` is the JSON ticket of docs/api.md; `timeout_ms` > 0 bounds the whole stream.
  Result<std::unique_ptr<GetStream>> DoGet(const std::string& ticket, int64_t timeout_ms = 0);
  // The same, handing out the FlightData messages undecoded; `timeout_ms` > 0 bounds the call.
  Result<std::unique_ptr<RawGetStream>> DoGetRaw(const std::string& ticket, int64_t timeout_ms = 0);

 private:
  explicit Client(std::shared_ptr<grpc::Channel> channel) : channel_(std::move(channel)) {}
  std::shared_ptr<grpc::Channel> channel_;
  std::string authorization_;  // "Bearer <token>" after Login; empty before
};

}  // namespace oxbow::client
