// A web console inside oxbowd (docs/console.md): pages that show the server or cluster, its
// tables, their buckets, rows and lake, the Kafka consumer groups, at a glance, with charts of
// the last hour, and the JSON API those pages read. Read-only but for a table's properties,
// which an admin may change. The pages are compiled into the binary; HTTP (cpp-httplib) stays
// inside the http module.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "oxbow/auth/auth.h"
#include "oxbow/http/http.h"
#include "oxbow/kafka/kafka.h"
#include "oxbow/node/node.h"

namespace oxbow::console {
namespace internal {
class History;
}

struct ConsoleOptions {
  // host:port of the console's HTTP listener; port 0 picks a free port. Default
  // "127.0.0.1:8080".
  std::string listen = "127.0.0.1:8080";
  // Serve HTTPS (and require client certificates) from these PEM files. Default: plain HTTP.
  http::TlsOptions tls;
  // When set, every request must log in (Basic, or the Flight handshake's bearer token), and a
  // user sees the tables it may read. Must outlive the server. Default: null, no users.
  auth::Authenticator* authenticator = nullptr;
  // The data dir, whose disk the overview shows. Default: none shown.
  std::string data_dir;
  // The Kafka listener, whose topics and consumer groups the Kafka page shows; must outlive the
  // server. Default: null, no Kafka page.
  kafka::KafkaServer* kafka = nullptr;
  // How often the charts' figures are sampled; an hour of samples is kept. Default 5 s.
  std::chrono::milliseconds sample_interval{5000};
};

class ConsoleServer {
 public:
  // Serves `node` (which must outlive the server) on options.listen. IOError when the address
  // cannot be bound.
  static Result<std::unique_ptr<ConsoleServer>> Start(node::Node* node, ConsoleOptions options);
  ~ConsoleServer();  // Stop()s
  ConsoleServer(const ConsoleServer&) = delete;
  ConsoleServer& operator=(const ConsoleServer&) = delete;

  int port() const { return listener_->port(); }
  // Stops sampling and serving, waiting for the requests in flight. Idempotent.
  void Stop();

 private:
  ConsoleServer();
  std::unique_ptr<internal::History> history_;
  std::unique_ptr<http::Listener> listener_;
};

}  // namespace oxbow::console
