// The Iceberg REST catalog front end: serves the lake of a node read-only over HTTP, so Spark,
// Trino, Flink, pyiceberg and DuckDB find Oxbow's tables by name. Written from the REST catalog
// OpenAPI spec (apache/iceberg open-api/rest-catalog-open-api.yaml); docs/rest-catalog.md lists
// the routes and answers. HTTP (cpp-httplib) stays inside this module.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "oxbow/node/node.h"

namespace httplib {
class Server;
}

namespace oxbow::rest {

struct CatalogOptions {
  // host:port of the catalog's HTTP listener. Default: "127.0.0.1:8181". Port 0 picks a free
  // port; an empty string turns the catalog off (oxbowd's --catalog-listen '').
  std::string listen = "127.0.0.1:8181";
  // When not empty, every request must carry "Authorization: Bearer <token>" (401 otherwise).
  // Default: empty, no check.
  std::string token;
};

class CatalogServer {
 public:
  // Serves the lake of `node` (which must outlive the server) on options.listen. IOError when
  // the address cannot be bound, Invalid when it is not host:port.
  static Result<std::unique_ptr<CatalogServer>> Start(node::Node* node, CatalogOptions options);
  ~CatalogServer();  // Stop()s
  CatalogServer(const CatalogServer&) = delete;
  CatalogServer& operator=(const CatalogServer&) = delete;

  // The port actually bound (useful with port 0).
  int port() const { return port_; }
  // Stops accepting connections and waits for the requests in flight. Idempotent.
  void Stop();

 private:
  CatalogServer() = default;

  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace oxbow::rest
