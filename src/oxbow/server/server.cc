#include "oxbow/server/server.h"

#include <grpcpp/grpcpp.h>

#include "oxbow/server/flight_service.h"

namespace oxbow::server {

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options) {
  std::unique_ptr<Server> server(new Server());
  ASSIGN_OR_RAISE(server->node_, node::Node::Open(std::move(options.node)));
  server->service_ = std::make_unique<FlightService>(server->node_.get());
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(), &server->port_);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(-1);
  builder.SetMaxSendMessageSize(-1);
  // gRPC shares ports (SO_REUSEPORT) by default; a second oxbowd on a busy port must fail.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  server->grpc_server_ = builder.BuildAndStart();
  if (!server->grpc_server_ || server->port_ == 0) {
    (void)server->node_->Close();
    return Status::IOError("cannot listen on " + options.listen +
                           " (address in use, or not a valid host:port?)");
  }
  if (!options.catalog.listen.empty()) {
    auto catalog = rest::CatalogServer::Start(server->node_.get(), std::move(options.catalog));
    if (!catalog.ok()) {
      (void)server->Shutdown();
      return catalog.status();
    }
    server->catalog_ = std::move(catalog).ValueOrDie();
  }
  return server;
}

Server::~Server() { (void)Shutdown(); }

void Server::Wait() {
  if (grpc_server_) grpc_server_->Wait();
}

Status Server::Shutdown() {
  if (shut_down_) return Status::OK();
  shut_down_ = true;
  if (catalog_) catalog_->Stop();
  if (service_) service_->StopStreams();
  if (grpc_server_) {
    grpc_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }
  return node_ ? node_->Close() : Status::OK();
}

}  // namespace oxbow::server
