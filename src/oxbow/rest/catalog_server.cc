#include <httplib.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>

#include "oxbow/common/parse.h"
#include "oxbow/rest/handler_internal.h"
#include "oxbow/rest/rest.h"

namespace oxbow::rest {
namespace {

// Request bodies are only checked and refused (writes) or dropped (metrics reports).
constexpr size_t kMaxBodyBytes = 1 << 20;

struct HostPort {
  std::string host;
  int port = 0;
};

// "127.0.0.1:8181", "[::1]:8181", "localhost:0".
Result<HostPort> ParseListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::Invalid("catalog listen address " + Quote(listen) + " is not host:port");
  }
  HostPort address{listen.substr(0, colon)};
  if (address.host.size() > 2 && address.host.front() == '[' && address.host.back() == ']') {
    address.host = address.host.substr(1, address.host.size() - 2);
  }
  auto port = ParseInt32(std::string_view(listen).substr(colon + 1));
  if (!port.ok() || *port < 0 || *port > 65535) {
    return Status::Invalid("catalog listen address " + Quote(listen) + " has no valid port");
  }
  address.port = *port;
  return address;
}

// cpp-httplib's request as the handler's, and the handler's answer back.
void Serve(const CatalogHandler& handler, const httplib::Request& req, httplib::Response& res) {
  HttpRequest request;
  request.method = req.method;
  request.path = req.target.substr(0, req.target.find('?'));
  request.query.insert(req.params.begin(), req.params.end());
  request.authorization = req.get_header_value("Authorization");
  request.body = req.body;
  HttpResponse response = handler.Handle(request);
  res.status = response.status;
  if (!response.body.empty()) res.set_content(response.body, "application/json");
}

// What cpp-httplib answers on its own (unknown method, oversized body, bad request line) in
// the spec's error body too.
std::string TypeOfStatus(int status) {
  switch (status) {
    case 401: return "NotAuthorizedException";
    case 404: return "NotFoundException";
    case 413: return "RequestTooLargeException";
    default: return status >= 500 ? "InternalServerError" : "BadRequestException";
  }
}

}  // namespace

Result<std::unique_ptr<CatalogServer>> CatalogServer::Start(node::Node* node,
                                                            CatalogOptions options) {
  ASSIGN_OR_RAISE(HostPort address, ParseListen(options.listen));
  std::unique_ptr<CatalogServer> server(new CatalogServer());
  server->http_ = std::make_unique<httplib::Server>();
  httplib::Server& http = *server->http_;
  auto handler = std::make_shared<const CatalogHandler>(node, std::move(options.token));
  auto serve = [handler](const httplib::Request& req, httplib::Response& res) {
    Serve(*handler, req, res);
  };
  // Every path of every method reaches the handler, which routes on the raw request-target.
  const std::string kAnyPath = R"([\s\S]*)";
  http.Get(kAnyPath, serve);  // and HEAD
  http.Post(kAnyPath, serve);
  http.Put(kAnyPath, serve);
  http.Patch(kAnyPath, serve);
  http.Delete(kAnyPath, serve);
  http.Options(kAnyPath, serve);
  http.set_payload_max_length(kMaxBodyBytes);
  // One request per connection: an idle keep-alive connection would hold up Stop() (so oxbowd's
  // SIGTERM) for cpp-httplib's whole keep-alive timeout, and catalog calls are few.
  http.set_keep_alive_max_count(1);
  // cpp-httplib shares ports (SO_REUSEPORT) by default; a second oxbowd on a busy port must fail.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  http.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty() || req.method == "HEAD")
          return httplib::Server::HandlerResponse::Unhandled;
        HttpResponse error = ErrorResponse(
            res.status, TypeOfStatus(res.status),
            "HTTP " + std::to_string(res.status) + " for " + req.method + " " + req.target);
        res.set_content(error.body, "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }));
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        spdlog::error("rest catalog: request failed: {}", what);
        res.status = 500;
        res.set_content(ErrorResponse(500, "InternalServerError", what).body, "application/json");
      });
  if (address.port == 0) {
    server->port_ = http.bind_to_any_port(address.host);
  } else if (http.bind_to_port(address.host, address.port)) {
    server->port_ = address.port;
  }
  if (server->port_ <= 0) {
    return Status::IOError("cannot listen on " + options.listen +
                           " for the REST catalog (address in use, or not a valid host?)");
  }
  auto ended = std::make_shared<std::atomic<bool>>(false);
  server->thread_ = std::thread([&http, ended] {
    http.listen_after_bind();
    ended->store(true);
  });
  // stop() only takes effect once the accept loop runs, so Stop() must not come before it.
  while (!http.is_running() && !ended->load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (ended->load()) {
    server->thread_.join();
    return Status::IOError("the REST catalog's listener on " + options.listen + " ended at once");
  }
  return server;
}

CatalogServer::~CatalogServer() { Stop(); }

void CatalogServer::Stop() {
  if (!thread_.joinable()) return;
  http_->stop();
  thread_.join();
}

}  // namespace oxbow::rest
