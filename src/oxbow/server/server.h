// oxbowd: the engine behind an Arrow Flight endpoint.
#pragma once

#include <memory>
#include <string>

#include "oxbow/engine/engine.h"
#include "oxbow/lake/lake.h"

namespace grpc {
class Server;
}

namespace oxbow::server {

class FlightService;

struct ServerOptions {
  // host:port of the Flight endpoint. Default: "127.0.0.1:8815". Port 0 picks a free port.
  std::string listen = "127.0.0.1:8815";
  engine::EngineOptions engine;
  // Tiering of every table into the Iceberg warehouse (LakeOptions::warehouse).
  lake::LakeOptions lake;
};

class Server {
 public:
  // Opens the engine (recovering every log) and starts serving.
  static Result<std::unique_ptr<Server>> Start(ServerOptions options);
  ~Server();

  // The port actually bound (useful with port 0).
  int port() const { return port_; }
  // Blocks until Shutdown() is called from another thread.
  void Wait();
  // Ends streams, stops accepting calls, waits for running calls, stops tiering, then closes
  // the engine.
  Status Shutdown();

 private:
  Server() = default;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<lake::TieringService> tiering_;
  std::unique_ptr<FlightService> service_;
  std::unique_ptr<grpc::Server> grpc_server_;
  int port_ = 0;
  bool shut_down_ = false;
};

// The whole oxbowd command line: flags, logging, signals. Returns the exit code.
int RunDaemon(int argc, char** argv);

}  // namespace oxbow::server
