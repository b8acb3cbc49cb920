// The REST catalog's requests and answers without HTTP: catalog_server.cc adapts cpp-httplib to
// this, and nothing here knows a socket.
#pragma once

#include <map>
#include <string>
#include <string_view>

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
  // `token`: the bearer token every request must carry; empty for none.
  CatalogHandler(node::Node* node, std::string token) : node_(node), token_(std::move(token)) {}

  HttpResponse Handle(const HttpRequest& request) const;

 private:
  bool Authorized(std::string_view authorization) const;
  HttpResponse Dispatch(const Route& route, const HttpRequest& request) const;
  HttpResponse ListNamespaces(const HttpRequest& request) const;
  HttpResponse ListTables(const std::string& namespace_name, const HttpRequest& request) const;
  HttpResponse LoadTable(const std::string& namespace_name, const std::string& table,
                         bool head) const;

  node::Node* node_;
  std::string token_;
};

}  // namespace oxbow::rest
