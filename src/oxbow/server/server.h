// oxbowd: a node (the tables and their lake) behind an Arrow Flight endpoint and, over the
// lake, an Iceberg REST catalog.
#pragma once

#include <memory>
#include <string>

#include "oxbow/node/node.h"
#include "oxbow/rest/rest.h"

namespace grpc {
class Server;
}

namespace oxbow::server {

class FlightService;

struct ServerOptions {
  // host:port of the Flight endpoint. Default: "127.0.0.1:8815". Port 0 picks a free port.
  std::string listen = "127.0.0.1:8815";
  // The data dir, the warehouse and everything about them.
  node::NodeOptions node;
  // The Iceberg REST catalog over the lake (default 127.0.0.1:8181; listen "" turns it off).
  rest::CatalogOptions catalog;
};

class Server {
 public:
  // Opens the node (recovering every log, starting tiering) and starts serving.
  static Result<std::unique_ptr<Server>> Start(ServerOptions options);
  ~Server();

  // The port actually bound (useful with port 0).
  int port() const { return port_; }
  // The REST catalog's port; 0 when it is off.
  int catalog_port() const { return catalog_ ? catalog_->port() : 0; }
  // Blocks until Shutdown() is called from another thread.
  void Wait();
  // Ends streams, stops accepting calls, waits for running calls, then closes the node.
  Status Shutdown();

 private:
  Server() = default;
  std::unique_ptr<node::Node> node_;
  std::unique_ptr<FlightService> service_;
  std::unique_ptr<grpc::Server> grpc_server_;
  std::unique_ptr<rest::CatalogServer> catalog_;
  int port_ = 0;
  bool shut_down_ = false;
};

// The whole oxbowd command line: flags, logging, signals. Returns the exit code.
int RunDaemon(int argc, char** argv);

}  // namespace oxbow::server
