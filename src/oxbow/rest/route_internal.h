// The routes of the Iceberg REST catalog (open-api/rest-catalog-open-api.yaml of apache/iceberg):
// which operation a request's method and raw path name, with its percent-decoded namespace and
// table. docs/rest-catalog.md lists them and what Oxbow answers.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "oxbow/common/status.h"

namespace oxbow::rest {

enum class Operation {
  kGetConfig,        // GET  /v1/config
  kListNamespaces,   // GET  /v1/namespaces
  kLoadNamespace,    // GET  /v1/namespaces/{ns}
  kNamespaceExists,  // HEAD /v1/namespaces/{ns}
  kListTables,       // GET  /v1/namespaces/{ns}/tables
  kLoadTable,        // GET  /v1/namespaces/{ns}/tables/{t}
  kTableExists,      // HEAD /v1/namespaces/{ns}/tables/{t}
  kReportMetrics,    // POST /v1/namespaces/{ns}/tables/{t}/metrics (accepted, not kept)
  kWrite,            // any route that would change the catalog: refused
};

struct Route {
  Operation operation = Operation::kGetConfig;
  // The {namespace} path parameter split at the 0x1F separator; empty without one.
  std::vector<std::string> namespace_parts;
  std::string table;  // the {table} path parameter; empty without one
  // For kWrite: what the request asked for, completed by the namespace or table when there is
  // one: "create a table in" 'shop', "drop table" 'shop.orders', "rename a table".
  std::string write;
};

// The route of `method` ("GET", "HEAD", ...) on `path`, the request-target without its query
// ("/v1/namespaces/shop/tables/orders"). Each path segment is percent-decoded on its own, so
// "%2F" stays inside its segment. Invalid naming the problem for a bad percent escape or an empty
// namespace part or table name, and naming method and path when no route matches.
Result<Route> ParseRoute(std::string_view method, std::string_view path);

// "a%1Fb" style percent-decoding of one path segment or query value ('+' stays '+').
Result<std::string> PercentDecode(std::string_view text);

// The {namespace} parameter (decoded) split at 0x1F; Invalid when a part is empty.
Result<std::vector<std::string>> SplitNamespace(std::string_view decoded);

}  // namespace oxbow::rest
