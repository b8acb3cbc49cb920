// The Iceberg REST catalog front end: serves the lake of a node read-only over HTTP, so Spark,
// Trino, Flink, pyiceberg and DuckDB find Oxbow's tables by name. Written from the REST catalog
// OpenAPI spec (apache/iceberg open-api/rest-catalog-open-api.yaml); docs/rest-catalog.md lists
// the routes and answers. HTTP (cpp-httplib) stays inside this module.
#pragma once

#include <memory>
#include <string>

#include "oxbow/auth/auth.h"
#include "oxbow/http/http.h"
#include "oxbow/node/node.h"

namespace oxbow::rest {

struct CatalogOptions {
  // host:port of the catalog's HTTP listener. Default: "127.0.0.1:8181". Port 0 picks a free
  // port; an empty string turns the catalog off (oxbowd's --catalog-listen '').
  std::string listen = "127.0.0.1:8181";
  // When not empty, every request must carry "Authorization: Bearer <token>" (401 otherwise).
  // Default: empty, no check. Not with `authenticator`.
  std::string token;
  // Serve HTTPS (and require client certificates) from these PEM files. Default: plain HTTP.
  http::TlsOptions tls;
  // When set, every request must name a user: "Authorization: Bearer <token>" with a token of
  // the Flight handshake, or "Basic base64(user:password)"; tables and namespaces are served
  // only to users with a read grant on them (403 otherwise). Must outlive the server.
  // Default: null, no users.
  auth::Authenticator* authenticator = nullptr;
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
  int port() const { return listener_->port(); }
  // Stops accepting connections and waits for the requests in flight. Idempotent.
  void Stop();

 private:
  CatalogServer() = default;

  std::unique_ptr<http::Listener> listener_;
};

}  // namespace oxbow::rest
