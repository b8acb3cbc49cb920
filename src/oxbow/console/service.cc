#include "oxbow/console/assets_internal.h"
#include "oxbow/console/service_internal.h"

namespace oxbow::console::internal {
namespace {

const char* ContentType(std::string_view file) {
  if (file.ends_with(".html")) return "text/html; charset=utf-8";
  if (file.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (file.ends_with(".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

}  // namespace

http::Response Json(int status, const json& body) {
  http::Response response;
  response.status = status;
  response.body =
      body.dump(/*indent=*/-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace);
  return response;
}

http::Response Problem(int status, const std::string& message) {
  return Json(status, {{"error", message}});
}

http::Response ProblemOf(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalid: return Problem(400, status.message());
    case StatusCode::kPermissionDenied: return Problem(403, status.message());
    case StatusCode::kNotFound: return Problem(404, status.message());
    case StatusCode::kAborted:
    case StatusCode::kAlreadyExists: return Problem(409, status.message());
    case StatusCode::kUnavailable: return Problem(503, status.message());
    default: return Problem(500, status.message());
  }
}

const char* KindOf(const catalog::TableDescriptor& table) {
  return table.primary_key.empty() ? "log" : "primary_key";
}

LogSize LogSizeOf(const std::vector<engine::BucketStatus>& buckets) {
  LogSize size;
  for (const engine::BucketStatus& b : buckets) {
    size.records += b.next_offset - b.earliest_offset;
    size.bytes += b.size_bytes;
  }
  return size;
}

http::Response Service::Handle(const http::Request& request) const {
  std::optional<auth::User> user;
  if (authenticator_ != nullptr) {
    auto verified = authenticator_->VerifyHeader(request.authorization);
    if (!verified.ok()) {
      http::Response refused = Problem(401, "log in: " + verified.status().message());
      refused.headers.emplace("WWW-Authenticate", "Basic realm=\"oxbow console\"");
      return refused;
    }
    user = std::move(verified).ValueOrDie();
  }
  auto segments = http::PathSegments(request.path);
  if (!segments) return Problem(400, "a malformed %-escape in " + Quote(request.path));
  const auto& s = *segments;
  if (!s.empty() && s[0] == "api") return Api(user ? &*user : nullptr, request, s);
  if (request.method != "GET" && request.method != "HEAD") {
    return Problem(405, request.method + " " + Quote(request.path) + " is not served");
  }
  if (s.empty() || (s.size() == 1 && Assets().contains(s[0]))) {
    const std::string file = s.empty() ? "index.html" : s[0];
    http::Response page;
    page.body = std::string(Assets().at(file));
    page.content_type = ContentType(file);
    return page;
  }
  return Problem(404, "no page " + Quote(request.path));
}

http::Response Service::Api(const auth::User* user, const http::Request& request,
                            const std::vector<std::string>& s) const {
  // The one change the console makes: a table's properties, by an admin. A JSON body is
  // required, so that a page of another site cannot send it without CORS, which is not served.
  if (s.size() == 4 && s[1] == "tables" && s[3] == "properties") {
    if (request.method != "POST") return Problem(405, "properties are changed by POST");
    if (!request.content_type.starts_with("application/json")) {
      return Problem(415, "properties are changed by a JSON body (Content-Type: application/json)");
    }
    if (user != nullptr && !user->Allows(s[2], auth::Access::kAdmin)) {
      return Problem(403, "user " + Quote(user->name) + " may not alter table " + Quote(s[2]));
    }
    return AlterProperties(s[2], request);
  }
  if (request.method != "GET" && request.method != "HEAD") {
    return Problem(405, "the console's API is read-only but for a table's properties: " +
                            request.method + " " + Quote(request.path) + " is not served");
  }
  if (s.size() == 2 && s[1] == "overview") return Overview(user);
  if (s.size() == 2 && s[1] == "cluster") return Cluster(user);
  if (s.size() == 2 && s[1] == "kafka") return Kafka(user);
  if (s.size() == 2 && s[1] == "tables") return Tables(user, request);
  if (s.size() >= 3 && s.size() <= 4 && s[1] == "tables") {
    if (user != nullptr && !user->Allows(s[2], auth::Access::kRead)) {
      return Problem(403, "user " + Quote(user->name) + " may not read table " + Quote(s[2]));
    }
    if (s.size() == 3) return TablePage(s[2]);
    if (s[3] == "rows") return Rows(s[2], request);
    if (s[3] == "lookup") return Lookup(s[2], request);
    if (s[3] == "lake") return Lake(s[2], request);
  }
  return Problem(404, "no API " + Quote(request.path));
}

}  // namespace oxbow::console::internal
