// oxbowd: a node (the tables and their lake) behind an Arrow Flight endpoint and, over the
// lake, an Iceberg REST catalog.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "oxbow/auth/auth.h"
#include "oxbow/console/console.h"
#include "oxbow/kafka/kafka.h"
#include "oxbow/node/node.h"
#include "oxbow/registry/registry.h"
#include "oxbow/rest/rest.h"

namespace grpc {
class Server;
}

namespace oxbow::server {

class FlightService;

struct ServerOptions {
  // host:port of the Flight endpoint. Default: "127.0.0.1:8815". Port 0 picks a free port.
  std::string listen = "127.0.0.1:8815";
  // TLS of the Flight endpoint: PEM files of the certificate chain and its key (both or
  // neither), and of the CA that client certificates must chain to (mutual TLS; needs the
  // other two). Empty: plaintext.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  // Require the Flight handshake (basic auth against <data_dir>/users.json, managed by `oxbow
  // user`) and a grant on every table a call touches. Off by default.
  bool auth = false;
  // How long a bearer token of the handshake stays valid. Default: 86400 s (24 h).
  int64_t token_lifetime_s = 86400;
  // Serve without authentication on an address other than loopback; refused otherwise.
  bool allow_unauthenticated = false;
  // host:port of the metrics listener (/metrics, /healthz, /readyz). Default:
  // "127.0.0.1:9249"; port 0 picks a free port; empty: none.
  std::string metrics_listen = "127.0.0.1:9249";
  // Serve the metrics listener over HTTPS with tls_cert_file and tls_key_file (no client
  // certificate asked, so probes and scrapers need only the CA). Default: plain HTTP.
  bool metrics_tls = false;
  // Whether /metrics needs a login of a user with a grant on "*" (HTTP basic auth or a bearer
  // token of the handshake): "on" (needs auth), "off", or "auto", on when `auth` is and
  // metrics_listen is not loopback. Default: "auto". /healthz and /readyz stay open.
  std::string metrics_auth = "auto";
  // The data dir, the warehouse and everything about them.
  node::NodeOptions node;
  // The Kafka listener (docs/kafka.md); an empty kafka.listen serves no Kafka.
  kafka::KafkaOptions kafka;
  // The Iceberg REST catalog over the lake (default 127.0.0.1:8181; listen "" turns it off).
  // Its TLS and users are the Flight endpoint's (set by Start from the fields above).
  rest::CatalogOptions catalog;
  // The schema registry (docs/schema-registry.md; default 127.0.0.1:8081; listen "" turns it
  // off). In cluster mode its state is the cluster's. Its directory, TLS and users are set by
  // Start.
  registry::RegistryOptions schema_registry;
  // The web console (docs/console.md; default 127.0.0.1:8080; listen "" turns it off). Its TLS,
  // users and data dir are set by Start.
  console::ConsoleOptions console;
};

class Server {
 public:
  // Opens the node (recovering every log, starting tiering) and starts serving.
  static Result<std::unique_ptr<Server>> Start(ServerOptions options);
  ~Server();

  // The port actually bound (useful with port 0).
  int port() const { return port_; }
  // The metrics listener's port (0 without one).
  int metrics_port() const { return metrics_server_ ? metrics_server_->port() : 0; }
  // The Kafka listener's port; 0 when it is off.
  int kafka_port() const { return kafka_ ? kafka_->port() : 0; }
  // The REST catalog's port; 0 when it is off.
  int catalog_port() const { return catalog_ ? catalog_->port() : 0; }
  // The schema registry's port; 0 when it is off.
  int schema_registry_port() const { return schema_registry_ ? schema_registry_->port() : 0; }
  // The console's port; 0 when it is off.
  int console_port() const { return console_ ? console_->port() : 0; }
  // Blocks until Shutdown() is called from another thread.
  void Wait();
  // Ends streams, stops accepting calls, waits for running calls, then closes the node.
  Status Shutdown();

 private:
  Server() = default;
  std::unique_ptr<node::Node> node_;
  std::unique_ptr<auth::Authenticator> authenticator_;
  std::unique_ptr<FlightService> service_;
  std::unique_ptr<grpc::Server> grpc_server_;
  // Started first, so /healthz answers while the node recovers; /readyz once ready_.
  std::unique_ptr<metrics::MetricsServer> metrics_server_;
  std::atomic<bool> ready_{false};
  // The registry's view of avro-confluent tables and Kafka's of the registry's ids; declared
  // before (so destroyed after) the servers that use them.
  std::unique_ptr<registry::TableSubjects> table_subjects_;
  std::unique_ptr<registry::RegistryStore> registry_store_;  // cluster mode: ZooKeeper's
  std::unique_ptr<kafka::SchemaIds> schema_ids_;
  std::unique_ptr<kafka::KafkaServer> kafka_;
  std::unique_ptr<rest::CatalogServer> catalog_;
  std::unique_ptr<registry::SchemaRegistryServer> schema_registry_;
  std::unique_ptr<console::ConsoleServer> console_;
  int port_ = 0;
  bool shut_down_ = false;
};

// Whether /metrics asks for a login under `options` (ServerOptions::metrics_auth).
bool MetricsLoginRequired(const ServerOptions& options);

// The whole oxbowd command line: flags, logging, signals. Returns the exit code.
int RunDaemon(int argc, char** argv);

}  // namespace oxbow::server
