// oxbow schema: the schema registry of oxbowd (docs/schema-registry.md) over its REST API.
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "oxbow/auth/auth.h"
#include "oxbow/cli/commands.h"
#include "oxbow/cli/input.h"
#include "oxbow/http/http.h"

namespace oxbow::cli {
namespace {

using json = nlohmann::json;

struct SchemaArgs {
  std::string registry = std::getenv("OXBOW_SCHEMA_REGISTRY") ? std::getenv("OXBOW_SCHEMA_REGISTRY")
                                                              : "http://127.0.0.1:8081";
  std::string tls_ca;
  std::string user;
  std::string subject;
  std::string version = "latest";
  std::string delete_version;  // delete: one version only
  int64_t id = 0;
  std::string file = "-";
  std::string level;
  bool deleted = false;
  bool permanent = false;
};

// Percent-encodes a subject for a path segment.
std::string Escape(const std::string& text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// Calls the registry; its error ({"error_code", "message"}) becomes the Status.
Result<json> Call(const SchemaArgs& args, const std::string& method, const std::string& path,
                  const json& body = nullptr) {
  std::string authorization;
  if (!args.user.empty()) {
    const char* password = std::getenv("OXBOW_PASSWORD");
    if (password == nullptr) {
      return Status::Invalid("--user " + args.user + " needs the password in OXBOW_PASSWORD");
    }
    authorization = "Basic " + auth::EncodeBasicCredentials(args.user, password);
  }
  ASSIGN_OR_RAISE(http::Response response,
                  http::Call(args.registry, method, path, body.is_null() ? "" : body.dump(),
                             authorization, args.tls_ca));
  const json answer = json::parse(response.body, nullptr, false);
  if (response.status != 200) {
    const std::string why = answer.is_object() && answer.contains("message")
                                ? answer["message"].get<std::string>() + " (error " +
                                      answer.value("error_code", json(response.status)).dump() + ")"
                                : "HTTP " + std::to_string(response.status);
    return Status::Invalid("schema registry " + args.registry + ": " + why);
  }
  if (answer.is_discarded()) return Status::Invalid("the registry answered no JSON");
  return answer;
}

Result<json> SchemaBody(const std::string& file) {
  ASSIGN_OR_RAISE(auto data, ReadInput(file));
  return json{{"schema", std::string(reinterpret_cast<const char*>(data->data()),
                                     static_cast<size_t>(data->size()))}};
}

Status Print(const Result<json>& answer) {
  RETURN_NOT_OK(answer.status());
  std::cout << answer->dump(2) << "\n";
  return Status::OK();
}

}  // namespace

void RegisterSchemaCommands(CLI::App& app) {
  auto args = std::make_shared<SchemaArgs>();
  auto* schema = app.add_subcommand("schema", "The schema registry: subjects, versions, schemas");
  schema->require_subcommand(1);
  auto common = [&](CLI::App* cmd) {
    cmd->add_option("--registry", args->registry, "The registry's URL (env OXBOW_SCHEMA_REGISTRY)")
        ->capture_default_str();
    cmd->add_option("--tls-ca", args->tls_ca, "PEM file of the CAs to trust (https)");
    cmd->add_option("--user", args->user,
                    "Log in as this user (oxbowd --auth); the password comes from OXBOW_PASSWORD")
        ->envname("OXBOW_USER");
  };
  auto subject = [&](CLI::App* cmd) {
    cmd->add_option("subject", args->subject, "Subject, e.g. orders-value")->required();
  };

  auto* list = schema->add_subcommand("list", "The subjects");
  common(list);
  list->add_flag("--deleted", args->deleted, "Soft-deleted ones too");
  SetAction(list, [args] {
    return Print(
        Call(*args, "GET", std::string("/subjects") + (args->deleted ? "?deleted=true" : "")));
  });

  auto* versions = schema->add_subcommand("versions", "A subject's versions");
  common(versions);
  subject(versions);
  SetAction(versions, [args] {
    return Print(Call(*args, "GET", "/subjects/" + Escape(args->subject) + "/versions"));
  });

  auto* get =
      schema->add_subcommand("get", "A subject's version (default latest), or --id's schema");
  common(get);
  get->add_option("subject", args->subject, "Subject");
  get->add_option("--version", args->version, "Version number or latest")->capture_default_str();
  get->add_option("--id", args->id, "The schema of this id instead");
  SetAction(get, [args] {
    if (args->id > 0) return Print(Call(*args, "GET", "/schemas/ids/" + std::to_string(args->id)));
    if (args->subject.empty()) return Status::Invalid("name a subject, or --id");
    return Print(Call(*args, "GET",
                      "/subjects/" + Escape(args->subject) + "/versions/" + Escape(args->version)));
  });

  auto* reg = schema->add_subcommand("register", "Register an Avro schema under a subject");
  common(reg);
  subject(reg);
  reg->add_option("file", args->file, "The schema's file ('-': standard input)")
      ->capture_default_str();
  SetAction(reg, [args] {
    ASSIGN_OR_RAISE(json body, SchemaBody(args->file));
    return Print(Call(*args, "POST", "/subjects/" + Escape(args->subject) + "/versions", body));
  });

  auto* check = schema->add_subcommand(
      "check", "Whether a schema is compatible with a subject's versions (exit 1 when not)");
  common(check);
  subject(check);
  check->add_option("file", args->file, "The schema's file ('-': standard input)")
      ->capture_default_str();
  SetAction(check, [args] {
    ASSIGN_OR_RAISE(json body, SchemaBody(args->file));
    ASSIGN_OR_RAISE(
        json answer,
        Call(*args, "POST",
             "/compatibility/subjects/" + Escape(args->subject) + "/versions?verbose=true", body));
    std::cout << answer.dump(2) << "\n";
    if (!answer.value("is_compatible", false)) {
      return Status::Invalid("the schema is not compatible with subject " + args->subject);
    }
    return Status::OK();
  });

  auto* del = schema->add_subcommand("delete", "Delete a subject, or one --version of it");
  common(del);
  subject(del);
  del->add_option("--version", args->delete_version, "Only this version");
  del->add_flag("--permanent", args->permanent, "Hard delete (after a soft one)");
  SetAction(del, [args] {
    std::string path = "/subjects/" + Escape(args->subject);
    if (!args->delete_version.empty()) path += "/versions/" + Escape(args->delete_version);
    return Print(Call(*args, "DELETE", path + (args->permanent ? "?permanent=true" : "")));
  });

  auto* config = schema->add_subcommand(
      "config", "The compatibility level of a subject, or the global one; --set changes it");
  common(config);
  config->add_option("subject", args->subject, "Subject (default: the global level)");
  config->add_option("--set", args->level,
                     "NONE, BACKWARD, FORWARD, FULL or their _TRANSITIVE forms");
  SetAction(config, [args] {
    const std::string path =
        "/config" + (args->subject.empty() ? std::string() : "/" + Escape(args->subject));
    if (!args->level.empty())
      return Print(Call(*args, "PUT", path, {{"compatibility", args->level}}));
    return Print(Call(*args, "GET", path + (args->subject.empty() ? "" : "?defaultToGlobal=true")));
  });
}

}  // namespace oxbow::cli
