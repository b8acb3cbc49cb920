// The REST catalog's requests and answers without HTTP: catalog_server.cc adapts cpp-httplib to
// this, and nothing here knows a socket.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "oxbow/auth/auth.h"
#include "oxbow/node/node.h"
#include "oxbow/rest/route_internal.h"

namespace oxbow::rest {

struct HttpRequest {
  std::string method;                             // "GET", "HEAD", "POST", ...
  std::string path;                               // the request-target up to '?', not decoded
  std::multimap<std::string, std::string> query;  // decoded parameters
  std::string authorization;                      // the Authorization header ("" when absent)
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string body;  // JSON; empty for 204 and for HEAD
};

// The spec's IcebergErrorResponse: {"error":{"message":...,"type":...,"code":status}}.
HttpResponse ErrorResponse(int status, std::string_view type, std::string_view message);

class CatalogHandler {
 public:
  // `token`: the bearer token every request must carry; empty for none. `authenticator`: when
  // not null, every request must name a user, who sees only the tables they may read.
  CatalogHandler(node::Node* node, std::string token, auth::Authenticator* authenticator)
      : node_(node), token_(std::move(token)), authenticator_(authenticator) {}

  HttpResponse Handle(const HttpRequest& request) const;

 private:
  bool Authorized(std::string_view authorization) const;
  // `user` is null when there are no users (no authenticator): everything is visible.
  HttpResponse Dispatch(const Route& route, const HttpRequest& request,
                        const auth::User* user) const;
  // The tables `user` may read.
  std::vector<catalog::TableDescriptor> VisibleTables(const auth::User* user) const;
  HttpResponse ListNamespaces(const HttpRequest& request, const auth::User* user) const;
  HttpResponse ListTables(const std::string& namespace_name, const HttpRequest& request,
                          const auth::User* user) const;
  HttpResponse LoadTable(const std::string& namespace_name, const std::string& table,
                         bool head) const;

  node::Node* node_;
  std::string token_;
  auth::Authenticator* authenticator_;
};

}  // namespace oxbow::rest
