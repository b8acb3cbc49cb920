// Fuzzes what a console client controls: the method, path, query parameters and body of a
// request, answered by the console's service over a node holding a log table and a primary-key
// table (with rows). Input: method byte, then path NUL query NUL body; the query is
// "k=v&k=v" (taken as decoded). Every answer must be JSON with a status the API documents.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "oxbow/catalog/descriptor.h"
#include "oxbow/console/service_internal.h"
#include "oxbow/text/text.h"

namespace {

using oxbow::console::internal::History;
using oxbow::console::internal::Sample;
using oxbow::console::internal::Service;

struct Fixture {
  std::string dir;
  std::unique_ptr<oxbow::node::Node> node;
  std::unique_ptr<History> history;
  std::unique_ptr<Service> service;
};

void CreateAndFill(oxbow::node::Node& node, const std::string& name, bool keyed) {
  nlohmann::json body = {{"table", name},
                         {"buckets", 2},
                         {"schema",
                          {{"fields",
                            {{{"name", "id"}, {"type", "int64"}, {"nullable", false}},
                             {{"name", "name"}, {"type", "string"}}}}}}};
  if (keyed) body["primary_key"] = {"id"};
  auto request = oxbow::catalog::ParseCreateTable(body.dump());
  if (!request.ok() || !node.CreateTable(*request).ok()) std::abort();
  auto table = node.GetTable(name);
  if (!table.ok()) std::abort();
  auto reader = oxbow::text::TextReader::Make(
      oxbow::text::TextFormat::kJsonLines,
      "{\"id\": 1, \"name\": \"a\"}\n{\"id\": 2, \"name\": null}\n{\"id\": 3, \"name\": \"c\"}\n",
      table->descriptor().schema);
  if (!reader.ok()) std::abort();
  auto batch = (*reader)->Next();
  if (!batch.ok()) std::abort();
  auto put = table->StartPut(table->descriptor().schema, oxbow::engine::PutOp::kUpsert);
  if (!put.ok() || !(*put)->Append(**batch).ok()) std::abort();
}

Fixture& Shared() {
  static Fixture* fixture = [] {
    auto* f = new Fixture;
    char pattern[] = "/tmp/console-fuzz-XXXXXX";
    f->dir = mkdtemp(pattern);
    oxbow::node::NodeOptions options;
    options.engine.data_dir = f->dir + "/data";
    options.lake.warehouse = f->dir + "/warehouse";
    auto node = oxbow::node::Node::Open(std::move(options));
    if (!node.ok()) std::abort();
    f->node = std::move(node).ValueOrDie();
    CreateAndFill(*f->node, "shop.events", false);
    CreateAndFill(*f->node, "shop.people", true);
    oxbow::node::Node* raw = f->node.get();
    f->history = std::make_unique<History>([raw] { return Service::SampleOf(raw); },
                                           std::chrono::milliseconds(3600 * 1000));
    oxbow::console::ConsoleOptions console;
    console.data_dir = f->dir;
    f->service = std::make_unique<Service>(f->node.get(), f->history.get(), console);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(Shared().dir, ignored);
    });
    return f;
  }();
  return *fixture;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* const kMethods[] = {"GET", "POST", "HEAD", "PUT"};
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  oxbow::http::Request request;
  request.method = kMethods[data[0] % 4];
  request.content_type = data[0] & 4 ? "text/plain" : "application/json";
  const size_t first = input.find('\0');
  request.path = "/" + std::string(input.substr(0, first));
  if (first != std::string_view::npos) {
    const std::string_view rest = input.substr(first + 1);
    const size_t second = rest.find('\0');
    std::string_view query = rest.substr(0, second);
    while (!query.empty()) {
      const size_t amp = query.find('&');
      const std::string_view pair = query.substr(0, amp);
      const size_t eq = pair.find('=');
      request.query.emplace(std::string(pair.substr(0, eq)),
                            eq == std::string_view::npos ? "" : std::string(pair.substr(eq + 1)));
      query = amp == std::string_view::npos ? "" : query.substr(amp + 1);
    }
    if (second != std::string_view::npos) request.body = std::string(rest.substr(second + 1));
  }
  const oxbow::http::Response response = Shared().service->Handle(request);
  static const int kStatuses[] = {200, 400, 401, 403, 404, 405, 415, 409, 503, 500};
  if (std::find(std::begin(kStatuses), std::end(kStatuses), response.status) ==
      std::end(kStatuses)) {
    __builtin_trap();
  }
  // A 500 is a bug: every refusal the API makes names its reason with a 4xx.
  if (response.status == 500) __builtin_trap();
  if (response.content_type == "application/json" && !nlohmann::json::accept(response.body)) {
    __builtin_trap();
  }
  return 0;
}
