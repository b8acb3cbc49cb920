// The Arrow Flight service of oxbowd (docs/api.md). gRPC stays inside this module.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/impl/rpc_service_method.h>
#include <grpcpp/impl/service_type.h>
#include <grpcpp/support/method_handler.h>
#include <grpcpp/support/sync_stream.h>

#include <atomic>

#include "oxbow/auth/auth.h"
#include "oxbow/flight/flight.pb.h"
#include "oxbow/flight/flight_data.h"
#include "oxbow/flight/requests.h"
#include "oxbow/node/node.h"

namespace oxbow::server {

namespace proto = ::arrow::flight::protocol;
using flight::FlightDataIn;
using flight::FlightPayload;
using flight::ToGrpcStatus;

class FlightService : public grpc::Service {
 public:
  // A thin adapter: every call goes to `node`, which must outlive the service. With
  // `authenticator` (may be null: no authentication), every call needs a bearer token from the
  // handshake and a grant on the table it touches (docs/security.md).
  FlightService(node::Node* node, auth::Authenticator* authenticator);

  // Makes following DoGet streams end, so the server can shut down.
  // Ends the reads and lookup streams in progress with UNAVAILABLE (ShuttingDown), so that no
  // client takes a cut-short read, or the end of a follow, for its end.
  void StopStreams() { stopping_ = true; }

 private:
  grpc::Status Handshake(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<proto::HandshakeResponse, proto::HandshakeRequest>* stream);
  grpc::Status ListFlights(grpc::ServerContext* ctx, const proto::Criteria* criteria,
                           grpc::ServerWriter<proto::FlightInfo>* writer);
  grpc::Status GetFlightInfo(grpc::ServerContext* ctx, const proto::FlightDescriptor* descriptor,
                             proto::FlightInfo* info);
  grpc::Status GetSchema(grpc::ServerContext* ctx, const proto::FlightDescriptor* descriptor,
                         proto::SchemaResult* result);
  grpc::Status DoGet(grpc::ServerContext* ctx, const proto::Ticket* ticket,
                     grpc::ServerWriter<flight::FlightPayload>* writer);
  grpc::Status DoPut(grpc::ServerContext* ctx,
                     grpc::ServerReaderWriter<proto::PutResult, FlightDataIn>* stream);
  grpc::Status DoExchange(grpc::ServerContext* ctx,
                          grpc::ServerReaderWriter<FlightPayload, FlightDataIn>* stream);
  grpc::Status DoAction(grpc::ServerContext* ctx, const proto::Action* action,
                        grpc::ServerWriter<proto::Result>* writer);
  grpc::Status ListActions(grpc::ServerContext* ctx, const proto::Empty* empty,
                           grpc::ServerWriter<proto::ActionType>* writer);

  Result<proto::FlightInfo> MakeFlightInfo(const node::TableHandle& table) const;
  // What a stream StopStreams() ends answers: Unavailable, so that clients read again.
  static Status ShuttingDown() {
    return Status::Unavailable(
        "oxbowd is shutting down: the stream ended before its end; read again (from the last "
        "offset received) once a server answers");
  }
  // Who calls: the user of the call's bearer token; std::nullopt when authentication is off.
  using Caller = std::optional<auth::User>;
  Result<Caller> Authenticate(grpc::ServerContext* ctx);
  // PermissionDenied unless `caller` may do `access` on `table`.
  static Status Authorize(const Caller& caller, const std::string& table, auth::Access access);
  // The table of a GetFlightInfo or GetSchema call, which the caller must be allowed to read.
  Result<node::TableHandle> TableForRead(grpc::ServerContext* ctx,
                                         const proto::FlightDescriptor& descriptor);
  // The bodies of Handshake, DoGet and DoPut.
  Status Login(grpc::ServerContext* ctx,
               grpc::ServerReaderWriter<proto::HandshakeResponse, proto::HandshakeRequest>* stream);
  Status Get(grpc::ServerContext* ctx, const proto::Ticket* ticket,
             grpc::ServerWriter<flight::FlightPayload>* writer);
  Status Put(grpc::ServerContext* ctx,
             grpc::ServerReaderWriter<proto::PutResult, flight::FlightDataIn>* stream);
  // Counts a failed call of `operation` and translates its status.
  grpc::Status Finish(const char* operation, const Status& status);
  // DoGet of a snapshot ticket and of a lookup ticket.
  Status SendSnapshot(const flight::Ticket& ticket,
                      grpc::ServerWriter<flight::FlightPayload>* writer);
  // A union read: the lake snapshot's rows, then each bucket's log after it (docs/api.md).
  Status SendUnion(grpc::ServerContext* ctx, const flight::Ticket& ticket,
                   grpc::ServerWriter<flight::FlightPayload>* writer);
  Status SendLookup(const flight::Ticket& ticket,
                    grpc::ServerWriter<flight::FlightPayload>* writer);
  // DoExchange: batches of keys in, batches of their rows out.
  Status ExchangeLookups(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<flight::FlightPayload, flight::FlightDataIn>* stream);
  // Cluster mode: a follower's fetch of a bucket this server leads (a {"replica_fetch": ...}
  // ticket): the stored batches byte for byte, then the high watermark.
  Status ServeReplicaFetch(const std::string& ticket, grpc::ServerWriter<FlightPayload>* writer);
  Result<std::string> ClusterStatusJson() const;
  Result<std::string> RunAction(const Caller& caller, const std::string& type,
                                const std::string& body);

  node::Node* node_;
  auth::Authenticator* authenticator_;
  std::atomic<bool> stopping_{false};
};

}  // namespace oxbow::server
