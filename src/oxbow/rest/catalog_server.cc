#include <httplib.h>
#include <spdlog/spdlog.h>

#include "oxbow/rest/handler_internal.h"
#include "oxbow/rest/rest.h"

namespace oxbow::rest {
namespace {

// Request bodies are only checked and refused (writes) or dropped (metrics reports).
constexpr size_t kMaxBodyBytes = 1 << 20;

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
    case 403: return "ForbiddenException";
    case 404: return "NotFoundException";
    case 413: return "RequestTooLargeException";
    default: return status >= 500 ? "InternalServerError" : "BadRequestException";
  }
}

}  // namespace

Result<std::unique_ptr<CatalogServer>> CatalogServer::Start(node::Node* node,
                                                            CatalogOptions options) {
  if (!options.token.empty() && options.authenticator) {
    return Status::Invalid(
        "the REST catalog takes either one bearer token (--catalog-token) or the users of "
        "--auth, not both");
  }
  std::unique_ptr<CatalogServer> server(new CatalogServer());
  auto handler =
      std::make_shared<const CatalogHandler>(node, std::move(options.token), options.authenticator);
  auto routes = [&handler](httplib::Server& http) {
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
    // One request per connection: an idle keep-alive connection would hold up Stop() (so
    // oxbowd's SIGTERM) for cpp-httplib's whole keep-alive timeout, and catalog calls are few.
    http.set_keep_alive_max_count(1);
    http.set_error_handler(httplib::Server::HandlerWithResponse(
        [](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty() || req.method == "HEAD")
            return httplib::Server::HandlerResponse::Unhandled;
          // A request line too long to read (414) leaves method and target empty.
          const std::string what =
              !req.method.empty() ? req.method + " " + req.target
              : res.status == 414 ? "a request whose URI is longer than " +
                                        std::to_string(CPPHTTPLIB_REQUEST_URI_MAX_LENGTH) + " bytes"
                                  : "a request that could not be read";
          HttpResponse error = ErrorResponse(res.status, TypeOfStatus(res.status),
                                             "HTTP " + std::to_string(res.status) + " for " + what);
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
  };
  ASSIGN_OR_RAISE(server->listener_,
                  http::Listener::Start("the REST catalog", options.listen, options.tls, routes));
  return server;
}

CatalogServer::~CatalogServer() { Stop(); }

void CatalogServer::Stop() {
  if (listener_) listener_->Stop();
}

}  // namespace oxbow::rest
