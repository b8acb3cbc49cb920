// The REST catalog's requests and answers without HTTP: catalog_server.cc adapts cpp-httplib to
// this, and nothing here knows a socket.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "oxbow/auth/auth.h"
#include "oxbow/http/http.h"
#include "oxbow/node/node.h"
#include "oxbow/rest/route_internal.h"

namespace oxbow::rest {

// The spec's IcebergErrorResponse: {"error":{"message":...,"type":...,"code":status}}.
http::Response ErrorResponse(int status, std::string_view type, std::string_view message);

class CatalogHandler {
 public:
  // `token`: the bearer token every request must carry; empty for none. `authenticator`: when
  // not null, every request must name a user, who sees only the tables they may read.
  CatalogHandler(node::Node* node, std::string token, auth::Authenticator* authenticator)
      : node_(node), token_(std::move(token)), authenticator_(authenticator) {}

  http::Response Handle(const http::Request& request) const;

 private:
  bool Authorized(std::string_view authorization) const;
  // `user` is null when there are no users (no authenticator): everything is visible.
  http::Response Dispatch(const Route& route, const http::Request& request,
                          const auth::User* user) const;
  // The tables `user` may read.
  std::vector<catalog::TableDescriptor> VisibleTables(const auth::User* user) const;
  http::Response ListNamespaces(const http::Request& request, const auth::User* user) const;
  http::Response ListTables(const std::string& namespace_name, const http::Request& request,
                            const auth::User* user) const;
  http::Response LoadTable(const std::string& namespace_name, const std::string& table,
                           bool head) const;

  node::Node* node_;
  std::string token_;
  auth::Authenticator* authenticator_;
};

}  // namespace oxbow::rest
