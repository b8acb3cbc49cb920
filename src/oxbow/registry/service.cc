// The REST routes of Confluent's Schema Registry API (docs/schema-registry.md has the list),
// their logins, and the listener serving them.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

#include "oxbow/common/parse.h"
#include "oxbow/registry/registry_internal.h"

namespace oxbow::registry {
namespace internal {
namespace {

using json = nlohmann::json;

constexpr char kContentType[] = "application/vnd.schemaregistry.v1+json";
constexpr size_t kMaxBodyBytes = 8 << 20;

}  // namespace

namespace {

bool Flag(const http::Request& request, const char* name) {
  auto it = request.query.find(name);
  return it != request.query.end() && it->second == "true";
}

bool AdminOfEveryTable(const auth::User& user) {
  return std::any_of(user.grants.begin(), user.grants.end(), [](const auth::Grant& g) {
    return g.tables == "*" && g.access == auth::Access::kAdmin;
  });
}

}  // namespace

std::optional<Reply> Service::Refuse(const http::Request& request, const std::string& subject,
                                     bool change) const {
  if (!authenticator_) return std::nullopt;
  auto user = authenticator_->VerifyHeader(request.authorization);
  if (!user.ok()) return Error(40101, "Unauthorized: " + user.status().message());
  const auto table =
      subject.empty() || !table_of_subject_ ? std::nullopt : table_of_subject_(subject);
  const bool allowed =
      table ? user->Allows(*table, change ? auth::Access::kAdmin : auth::Access::kRead)
            : !change || AdminOfEveryTable(*user);
  if (allowed) return std::nullopt;
  return Error(40301,
               "User '" + user->name + "' may not " + (change ? "change" : "read") +
                   (subject.empty() ? std::string(" the registry") : " subject '" + subject + "'") +
                   (table ? " (it needs " + std::string(change ? "admin" : "read") + " on table '" +
                                *table + "')"
                    : change ? " (it needs admin on every table)"
                             : ""));
}

Reply Service::Route(const http::Request& request) const {
  auto segments = http::PathSegments(request.path);
  if (!segments) return Error(404, "HTTP 404 Not Found: a malformed %-escape in the path");
  const auto& s = *segments;
  const std::string& method = request.method;
  json body;
  if (method == "POST" || method == "PUT") {
    body = json::parse(request.body, nullptr, false);
    if (body.is_discarded()) return Error(400, "The request body is not JSON");
  }
  const bool deleted = Flag(request, "deleted");
  const std::string subject = s.size() >= 2 && s[0] == "subjects"        ? s[1]
                              : s.size() >= 3 && s[0] == "compatibility" ? s[2]
                              : s.size() == 2 && s[0] == "config"        ? s[1]
                                                                         : "";
  const bool change =
      method == "DELETE" || method == "PUT" ||
      (method == "POST" && s.size() == 3 && s[0] == "subjects" && s[2] == "versions");
  if (auto refused = Refuse(request, subject, change)) return *refused;
  Registry& r = *registry_;
  if (s.empty()) {
    return method == "GET" ? Reply{200, json::object()} : Error(405, "HTTP 405 Method Not Allowed");
  }
  if (s[0] == "subjects") {
    if (s.size() == 1 && method == "GET") return r.ListSubjects(deleted);
    if (s.size() == 2 && method == "POST") return r.Lookup(subject, body, deleted);
    if (s.size() == 2 && method == "DELETE")
      return r.DeleteSubject(subject, Flag(request, "permanent"));
    if (s.size() == 3 && s[2] == "versions") {
      if (method == "GET") return r.ListVersions(subject, deleted);
      if (method == "POST") return r.Register(subject, body);
    }
    if (s.size() >= 4 && s[2] == "versions") {
      if (s.size() == 4 && method == "GET") return r.GetVersion(subject, s[3], deleted, false);
      if (s.size() == 5 && s[4] == "schema" && method == "GET") {
        return r.GetVersion(subject, s[3], deleted, true);
      }
      if (s.size() == 4 && method == "DELETE") {
        return r.DeleteVersion(subject, s[3], Flag(request, "permanent"));
      }
    }
  }
  if (s[0] == "schemas" && method == "GET") {
    if (s.size() == 2 && s[1] == "types") return {200, json::array({"AVRO"})};
    if (s.size() >= 3 && s.size() <= 4 && s[1] == "ids") {
      auto id = ParseInt64(s[2]);
      if (!id.ok()) return Error(40403, "Schema " + s[2] + " not found");
      return r.GetSchema(*id, s.size() == 4 ? s[3] : "");
    }
  }
  if (s[0] == "compatibility" && method == "POST" && s.size() >= 4 && s[1] == "subjects" &&
      s[3] == "versions") {
    return r.CheckCompatibility(subject, s.size() == 5 ? s[4] : "", body, Flag(request, "verbose"));
  }
  if (s[0] == "config" && s.size() <= 2) {
    if (method == "GET") return r.GetConfig(subject, Flag(request, "defaultToGlobal"));
    if (method == "PUT") return r.SetConfig(subject, body);
    if (method == "DELETE" && !subject.empty()) return r.DeleteConfig(subject);
  }
  if (s[0] == "mode" && method == "GET") return {200, {{"mode", "READWRITE"}}};
  return Error(404, "HTTP 404 Not Found: " + method + " " + request.path);
}

http::Response Service::Handle(const http::Request& request) const {
  Reply reply = Route(request);
  // Another server changed the registry first: the change is made again on its state.
  for (int attempt = 1; reply.conflict && attempt < kWriteAttempts; ++attempt) {
    reply = Route(request);
  }
  http::Response response;
  response.status = reply.status;
  response.body = request.method == "HEAD" ? "" : reply.body.dump();
  response.content_type = kContentType;
  return response;
}

}  // namespace internal

SchemaRegistryServer::SchemaRegistryServer() = default;

Result<std::unique_ptr<SchemaRegistryServer>> SchemaRegistryServer::Start(RegistryOptions options) {
  if (options.dir.empty() && options.store == nullptr) {
    return Status::Invalid("the schema registry needs a directory or a store");
  }
  std::unique_ptr<SchemaRegistryServer> server(new SchemaRegistryServer());
  if (options.store != nullptr) {
    ASSIGN_OR_RAISE(server->registry_, internal::Registry::Open(options.store, options.tables));
  } else {
    ASSIGN_OR_RAISE(server->registry_, internal::Registry::Open(PosixFileSystem::Default(),
                                                                options.dir, options.tables));
  }
  auto service = std::make_shared<const internal::Service>(server->registry_.get(), options);
  http::Service http_service;
  http_service.handle = [service](const http::Request& request) {
    return service->Handle(request);
  };
  http_service.error = [](int status, const std::string& what) {
    http::Response response;
    response.status = status;
    response.body = nlohmann::json{{"error_code", status}, {"message", what}}.dump();
    response.content_type = internal::kContentType;
    return response;
  };
  http_service.max_body_bytes = internal::kMaxBodyBytes;
  ASSIGN_OR_RAISE(server->listener_, http::Listener::Serve("the schema registry", options.listen,
                                                           options.tls, std::move(http_service)));
  return server;
}

SchemaRegistryServer::~SchemaRegistryServer() { Stop(); }

Result<int32_t> SchemaRegistryServer::IdOf(const std::string& avro) {
  ASSIGN_OR_RAISE(int64_t id, registry_->Intern(avro));
  return static_cast<int32_t>(id);
}

void SchemaRegistryServer::Stop() {
  if (listener_) listener_->Stop();
}

}  // namespace oxbow::registry
