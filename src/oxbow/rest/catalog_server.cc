#include "oxbow/rest/handler_internal.h"
#include "oxbow/rest/rest.h"

namespace oxbow::rest {
namespace {

// Request bodies are only checked and refused (writes) or dropped (metrics reports).
constexpr size_t kMaxBodyBytes = 1 << 20;

// The spec's error type of an HTTP status cpp-httplib answers on its own.
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
  http::Service service;
  service.handle = [handler](const http::Request& request) { return handler->Handle(request); };
  service.error = [](int status, const std::string& what) {
    return ErrorResponse(status, TypeOfStatus(status), what);
  };
  service.max_body_bytes = kMaxBodyBytes;
  ASSIGN_OR_RAISE(server->listener_, http::Listener::Serve("the REST catalog", options.listen,
                                                           options.tls, std::move(service)));
  return server;
}

CatalogServer::~CatalogServer() { Stop(); }

void CatalogServer::Stop() {
  if (listener_) listener_->Stop();
}

}  // namespace oxbow::rest
