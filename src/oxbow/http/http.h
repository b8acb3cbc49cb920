// One HTTP or HTTPS listener on a thread of its own, shared by the front ends that speak HTTP
// (the metrics listener, the Iceberg REST catalog): address parsing, binding without sharing
// the port, TLS and mutual TLS from PEM files, start and stop. cpp-httplib is its face: the
// caller registers its routes on the httplib::Server it is handed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "oxbow/common/status.h"

namespace httplib {
class Server;
}

namespace oxbow::http {

// TLS of a listener. All empty: plain HTTP.
struct TlsOptions {
  std::string cert_file;       // PEM certificate chain (with key_file). Default: none.
  std::string key_file;        // PEM private key of cert_file. Default: none.
  std::string client_ca_file;  // PEM CA that client certificates must chain to (mutual TLS;
                               // needs the other two). Default: none, no client certificate.
  bool enabled() const { return !cert_file.empty(); }
};

// A request as a JSON service sees it.
struct Request {
  std::string method;                             // "GET", "HEAD", "POST", ...
  std::string path;                               // the request-target up to '?', not decoded
  std::multimap<std::string, std::string> query;  // decoded parameters
  std::string authorization;                      // the Authorization header ("" when absent)
  std::string content_type;                       // the Content-Type header ("" when absent)
  std::string body;
};

struct Response {
  int status = 200;
  std::string body;  // empty for 204 and for HEAD
  std::string content_type = "application/json";
  std::multimap<std::string, std::string> headers;  // more headers (e.g. WWW-Authenticate)
};

// A service answering every method and path of a listener.
struct Service {
  std::function<Response(const Request&)> handle;
  // The answer to what cpp-httplib refuses on its own (a body over max_body_bytes, a request it
  // cannot read) and to an exception out of `handle`: `status` and what happened.
  std::function<Response(int status, const std::string& what)> error;
  size_t max_body_bytes = 1 << 20;
};

// One request to `base_url` ("http://host:port" or "https://host:port"; `ca_file` is the PEM
// CA to trust for https, empty: the system's) with a JSON body when `body` is not empty and the
// Authorization header when `authorization` is not. The answer whatever its status; IOError
// naming the URL when nothing answers.
Result<Response> Call(const std::string& base_url, const std::string& method,
                      const std::string& path, const std::string& body,
                      const std::string& authorization, const std::string& ca_file = "");

// The segments of a request path ("/subjects/a%2Fb/versions": subjects, a/b, versions),
// percent-decoded; nullopt when an escape is malformed.
std::optional<std::vector<std::string>> PathSegments(const std::string& path);

// "host:port", "[::1]:port": the host (brackets removed) and the port (0-65535).
Result<std::pair<std::string, int>> ParseListen(std::string_view what, const std::string& listen);

class Listener {
 public:
  // Binds `listen` (port 0 picks a free one), lets `routes` register the handlers, and serves
  // on a new thread. `what` names the listener in errors ("metrics", "the REST catalog").
  // Invalid for a bad address or TLS files that do not make a server; IOError when the address
  // cannot be bound.
  static Result<std::unique_ptr<Listener>> Start(
      std::string_view what, const std::string& listen, const TlsOptions& tls,
      const std::function<void(httplib::Server&)>& routes);
  ~Listener();  // Stop()s
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Start with `service` as the routes. One request per connection: an idle keep-alive
  // connection would hold up Stop() (so oxbowd's SIGTERM) for cpp-httplib's whole keep-alive
  // timeout, and these services are called seldom.
  static Result<std::unique_ptr<Listener>> Serve(std::string_view what, const std::string& listen,
                                                 const TlsOptions& tls, Service service);

  int port() const { return port_; }
  // Stops accepting and waits for the requests in flight. Idempotent.
  void Stop();

 private:
  Listener() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace oxbow::http
