#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "oxbow/common/parse.h"
#include "oxbow/iceberg/manifest.h"
#include "oxbow/lake/lake.h"
#include "oxbow/rest/handler_internal.h"

namespace oxbow::rest {
namespace {

using nlohmann::json;

// Every route this server answers, in the spec's notation, for GET /v1/config's "endpoints".
// The writes are listed too: clients then send them and show the refusal that says why,
// instead of their own "server does not support endpoint". Views are not: clients skip them.
const char* const kEndpoints[] = {
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/transactions/commit",
};

// Invalid UTF-8 (a user's path echoed in a message) is replaced rather than thrown on.
std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

http::Response Ok(const json& body) { return {200, Dump(body)}; }
http::Response NoContent() { return {204, ""}; }
http::Response BadRequest(std::string_view message) {
  return ErrorResponse(400, "BadRequestException", message);
}
http::Response NoSuchNamespace(std::string_view name) {
  return ErrorResponse(404, "NoSuchNamespaceException",
                       "namespace " + Quote(name) + " does not exist");
}
http::Response NoSuchTable(std::string_view message) {
  return ErrorResponse(404, "NoSuchTableException", message);
}
http::Response ServerError(const Status& status) {
  spdlog::error("rest catalog: {}", status.ToString());
  return ErrorResponse(500, "InternalServerError", status.ToString());
}

const std::string* Param(const std::multimap<std::string, std::string>& query,
                         const std::string& name) {
  auto it = query.find(name);
  return it == query.end() ? nullptr : &it->second;
}

std::string JoinedNamespace(const std::vector<std::string>& parts) {
  std::string joined;
  for (const auto& part : parts) {
    if (!joined.empty()) joined += '.';
    joined += part;
  }
  return joined;
}

// Oxbow's namespaces: the part before the '.' of every table's name.
std::set<std::string> Namespaces(const std::vector<catalog::TableDescriptor>& tables) {
  std::set<std::string> namespaces;
  for (const auto& table : tables) namespaces.insert(table.name.substr(0, table.name.find('.')));
  return namespaces;
}

// The namespace `parts` names, when Oxbow has it (Oxbow's namespaces have one part).
std::optional<std::string> KnownNamespace(const std::vector<std::string>& parts,
                                          const std::vector<catalog::TableDescriptor>& tables) {
  if (parts.size() != 1 || !Namespaces(tables).count(parts[0])) return std::nullopt;
  return parts[0];
}

// The pageToken / pageSize pair: names after `after`, at most `size` of them.
struct Page {
  std::optional<std::string> after;
  std::optional<int64_t> size;
};

Result<Page> ParsePage(const http::Request& request) {
  Page page;
  if (const std::string* token = Param(request.query, "pageToken"); token && !token->empty()) {
    page.after = *token;
  }
  if (const std::string* size = Param(request.query, "pageSize")) {
    auto parsed = ParseInt64(*size);
    if (!parsed.ok() || *parsed < 1) {
      return Status::Invalid("pageSize must be a positive integer, got " + Quote(*size));
    }
    page.size = *parsed;
  }
  return page;
}

// The page of the sorted `names`; sets "next-page-token" in `body` when more follow.
std::vector<std::string> ApplyPage(const std::vector<std::string>& names, const Page& page,
                                   json* body) {
  auto first =
      page.after ? std::upper_bound(names.begin(), names.end(), *page.after) : names.begin();
  auto last = names.end();
  if (page.size && last - first > *page.size) {
    last = first + *page.size;
    (*body)["next-page-token"] = *(last - 1);
  }
  return {first, last};
}

// The Oxbow table whose lake holds the lake table `table`: itself, or for <t>$changelog (the
// changelog lake table, docs/lake.md) <t>.
std::string_view OwnerTable(std::string_view table) {
  const std::string_view suffix = lake::kChangelogSuffix;
  if (table.size() > suffix.size() && table.ends_with(suffix)) {
    return table.substr(0, table.size() - suffix.size());
  }
  return table;
}

// Compares without returning early, so the time taken tells nothing about the token.
bool ConstantTimeEquals(std::string_view given, std::string_view expected) {
  if (given.size() != expected.size()) return false;
  unsigned char differ = 0;
  for (size_t i = 0; i < given.size(); ++i) differ |= given[i] ^ expected[i];
  return differ == 0;
}

}  // namespace

http::Response ErrorResponse(int status, std::string_view type, std::string_view message) {
  return {status, Dump({{"error", {{"message", message}, {"type", type}, {"code", status}}}})};
}

bool CatalogHandler::Authorized(std::string_view authorization) const {
  if (token_.empty()) return true;
  auto token = auth::AuthorizationValue(authorization, "Bearer");
  return token && ConstantTimeEquals(*token, token_);
}

http::Response CatalogHandler::Handle(const http::Request& request) const {
  std::optional<auth::User> user;
  if (authenticator_) {
    auto verified = authenticator_->VerifyHeader(request.authorization);
    if (!verified.ok()) {
      if (verified.status().code() != StatusCode::kUnauthenticated &&
          verified.status().code() != StatusCode::kResourceExhausted) {
        return ServerError(verified.status());
      }
      node_->metrics().AddError("rest_login", StatusCodeName(verified.status().code()));
      return ErrorResponse(401, "NotAuthorizedException", verified.status().message());
    }
    user = std::move(verified).ValueOrDie();
  } else if (!Authorized(request.authorization)) {
    return ErrorResponse(401, "NotAuthorizedException",
                         "missing or wrong bearer token: this catalog requires the header "
                         "'Authorization: Bearer <token>' with oxbowd's --catalog-token");
  }
  auto route = ParseRoute(request.method, request.path);
  if (!route.ok()) return BadRequest(route.status().message());
  http::Response response = Dispatch(*route, request, user ? &*user : nullptr);
  if (request.method == "HEAD") response.body.clear();
  return response;
}

std::vector<catalog::TableDescriptor> CatalogHandler::VisibleTables(const auth::User* user) const {
  auto tables = node_->ListTables();
  if (user) {
    tables.erase(std::remove_if(tables.begin(), tables.end(),
                                [&](const catalog::TableDescriptor& t) {
                                  return !user->Allows(t.name, auth::Access::kRead);
                                }),
                 tables.end());
  }
  return tables;
}

http::Response CatalogHandler::Dispatch(const Route& route, const http::Request& request,
                                        const auth::User* user) const {
  switch (route.operation) {
    case Operation::kGetConfig:
      return Ok({{"defaults", json::object()},
                 {"overrides", json::object()},
                 {"endpoints",
                  json(std::vector<std::string>(std::begin(kEndpoints), std::end(kEndpoints)))}});
    case Operation::kListNamespaces: return ListNamespaces(request, user);
    case Operation::kLoadNamespace:
    case Operation::kNamespaceExists: {
      // A namespace without a table the user may read is hidden like one that does not exist.
      auto known = KnownNamespace(route.namespace_parts, VisibleTables(user));
      if (!known) return NoSuchNamespace(JoinedNamespace(route.namespace_parts));
      if (route.operation == Operation::kNamespaceExists) return NoContent();
      return Ok({{"namespace", json::array({*known})}, {"properties", json::object()}});
    }
    case Operation::kListTables: {
      auto known = KnownNamespace(route.namespace_parts, VisibleTables(user));
      if (!known) return NoSuchNamespace(JoinedNamespace(route.namespace_parts));
      return ListTables(*known, request, user);
    }
    case Operation::kLoadTable:
    case Operation::kTableExists:
    case Operation::kReportMetrics: {
      // Refused by name, before looking: a table one may not read is refused whether it
      // exists or not, so the answer tells nothing about it. A changelog lake table is read
      // with its table's permission.
      if (const std::string name =
              JoinedNamespace(route.namespace_parts) + "." + std::string(OwnerTable(route.table));
          user && !user->Allows(name, auth::Access::kRead)) {
        return ErrorResponse(403, "ForbiddenException",
                             "user " + Quote(user->name) + " may not read table " + Quote(name));
      }
      auto known = KnownNamespace(route.namespace_parts, node_->ListTables());
      if (!known) return NoSuchNamespace(JoinedNamespace(route.namespace_parts));
      if (route.operation == Operation::kLoadTable) {
        if (const std::string* snapshots = Param(request.query, "snapshots");
            snapshots && *snapshots != "all" && *snapshots != "refs") {
          return BadRequest("snapshots must be 'all' or 'refs', got " + Quote(*snapshots));
        }
        return LoadTable(*known, route.table, /*head=*/false);
      }
      if (route.operation == Operation::kReportMetrics &&
          !json::parse(request.body, nullptr, false).is_object()) {
        return BadRequest("the metrics report must be a JSON object");
      }
      return LoadTable(*known, route.table, /*head=*/true);
    }
    case Operation::kWrite: {
      if (!request.body.empty() && json::parse(request.body, nullptr, false).is_discarded()) {
        return BadRequest("the request body is not valid JSON");
      }
      std::string target;
      if (!route.namespace_parts.empty()) {
        target = JoinedNamespace(route.namespace_parts);
        if (!route.table.empty()) target += "." + route.table;
        target = " " + Quote(target);
      }
      return ErrorResponse(
          406, "UnsupportedOperationException",
          route.write + target +
              " refused: Oxbow owns the writes of its tables, so this catalog is read-only; "
              "create, write and drop tables through oxbowd's Arrow Flight API (docs/api.md)");
    }
  }
  return ServerError(Status::Internal("unhandled route"));
}

http::Response CatalogHandler::ListNamespaces(const http::Request& request,
                                              const auth::User* user) const {
  auto page = ParsePage(request);
  if (!page.ok()) return BadRequest(page.status().message());
  const auto tables = VisibleTables(user);
  json body = json::object();
  std::vector<std::string> names;
  if (const std::string* parent = Param(request.query, "parent"); parent && !parent->empty()) {
    auto parts = SplitNamespace(*parent);
    if (!parts.ok()) return BadRequest(parts.status().message());
    // Oxbow's namespaces have one part: none has children.
    if (!KnownNamespace(*parts, tables)) return NoSuchNamespace(JoinedNamespace(*parts));
  } else {
    const auto namespaces = Namespaces(tables);
    names.assign(namespaces.begin(), namespaces.end());
  }
  body["namespaces"] = json::array();
  for (const auto& name : ApplyPage(names, *page, &body))
    body["namespaces"].push_back(json::array({name}));
  return Ok(body);
}

http::Response CatalogHandler::ListTables(const std::string& namespace_name,
                                          const http::Request& request,
                                          const auth::User* user) const {
  auto page = ParsePage(request);
  if (!page.ok()) return BadRequest(page.status().message());
  std::vector<std::string> names;
  for (const auto& table : VisibleTables(user)) {
    const size_t dot = table.name.find('.');
    if (table.name.compare(0, dot, namespace_name) != 0 || !lake::IsLakeEnabled(table)) continue;
    std::vector<std::string> lake_tables = {table.name.substr(dot + 1)};
    if (lake::HasChangelogLake(table)) {
      lake_tables.push_back(lake_tables.front() + lake::kChangelogSuffix);
    }
    for (const std::string& name : lake_tables) {
      auto exists = node_->LakeCatalog()->TableExists({namespace_name, name});
      if (!exists.ok()) return ServerError(exists.status());
      if (*exists) names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  json body = json::object();
  body["identifiers"] = json::array();
  for (const auto& name : ApplyPage(names, *page, &body)) {
    body["identifiers"].push_back({{"namespace", json::array({namespace_name})}, {"name", name}});
  }
  return Ok(body);
}

http::Response CatalogHandler::LoadTable(const std::string& namespace_name,
                                         const std::string& table, bool head) const {
  const std::string name = namespace_name + "." + table;
  const std::string owner = namespace_name + "." + std::string(OwnerTable(table));
  const auto tables = node_->ListTables();
  auto descriptor =
      std::find_if(tables.begin(), tables.end(), [&](const auto& t) { return t.name == owner; });
  if (descriptor == tables.end()) {
    return NoSuchTable("table " + Quote(name) + " does not exist");
  }
  if (owner != name && !lake::HasChangelogLake(*descriptor)) {
    return NoSuchTable("table " + Quote(name) + " does not exist: " + Quote(owner) +
                       " has no changelog lake table (its lake.changelog is not true)");
  }
  if (!lake::IsLakeEnabled(*descriptor)) {
    return NoSuchTable("table " + Quote(name) + " is not in the lake: " +
                       (descriptor->primary_key.empty()
                            ? "its lake.enabled is false"
                            : "a primary-key table goes to the lake only with lake.enabled true"));
  }
  const iceberg::TableIdentifier id{namespace_name, table};
  // Snapshot expiry may remove the metadata file just found; the newer one is then current.
  for (int attempt = 0;; ++attempt) {
    auto pointer = node_->LakeCatalog()->CurrentMetadata(id);
    if (pointer.status().IsNotFound()) {
      return NoSuchTable("table " + Quote(name) +
                         " has no lake metadata yet: tiering creates it within lake.freshness");
    }
    if (!pointer.ok()) return ServerError(pointer.status());
    if (head) return NoContent();
    auto bytes = ReadWholeFile(*node_->LakeFileSystem(), iceberg::LocalPath(pointer->location));
    if (bytes.status().IsNotFound() && attempt == 0) continue;
    if (!bytes.ok()) return ServerError(bytes.status());
    json metadata = json::parse((*bytes)->view(), nullptr, false);
    if (!metadata.is_object()) {
      return ServerError(Status::Corruption("metadata file " + Quote(pointer->location) +
                                            " is not a JSON object"));
    }
    // A local warehouse is plain file IO; an S3 one adds its endpoint, never a secret: readers
    // bring their own credentials (docs/storage.md, "Readers").
    json config = {{"py-io-impl", "pyiceberg.io.pyarrow.PyArrowFileIO"}};
    config["io-impl"] = node_->LakeReaderConfig().empty() ? "org.apache.iceberg.hadoop.HadoopFileIO"
                                                          : "org.apache.iceberg.aws.s3.S3FileIO";
    for (const auto& [key, value] : node_->LakeReaderConfig()) config[key] = value;
    return Ok({{"metadata-location", pointer->location},
               {"metadata", std::move(metadata)},
               {"config", std::move(config)}});
  }
}

}  // namespace oxbow::rest
