// oxbow cluster status: the servers, the controller and every bucket's leader, ISR and offsets
// as the server asked sees them (docs/cluster.md).
#include <iomanip>
#include <iostream>
#include <memory>

#include "oxbow/cli/commands.h"
#include "oxbow/cli/server_support.h"

namespace oxbow::cli {

using nlohmann::json;

namespace {

std::string List(const json& ids) {
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ",") + std::to_string(id.get<int>());
  return out;
}

std::string OrDash(const json& value) {
  return value.is_null() ? "-" : std::to_string(value.get<int64_t>());
}

void PrintStatus(const json& status) {
  if (status.value("mode", "") != "cluster") {
    std::cout << "embedded mode: this server is not part of a cluster\n";
    return;
  }
  std::cout << "server " << status["server_id"] << " of " << status["servers"].size()
            << " live; controller " << status["controller"] << " (epoch "
            << status["controller_epoch"] << ")\n\n";
  for (const auto& s : status["servers"]) {
    std::cout << "  server " << s["id"] << "  flight " << s["flight"].get<std::string>()
              << "  kafka "
              << (s["kafka"].get<std::string>().empty() ? "-" : s["kafka"].get<std::string>())
              << (s["rack"].get<std::string>().empty() ? ""
                                                       : "  rack " + s["rack"].get<std::string>())
              << "\n";
  }
  std::cout << "\n"
            << std::left << std::setw(24) << "table" << std::setw(7) << "bucket" << std::setw(7)
            << "leader" << std::setw(6) << "epoch" << std::setw(10) << "replicas" << std::setw(10)
            << "isr" << std::setw(10) << "role" << std::setw(12) << "log_end"
            << "hw\n";
  for (const auto& b : status["buckets"]) {
    const bool under = b["isr"].size() < b["replicas"].size();
    std::cout << std::left << std::setw(24) << b["table"].get<std::string>() << std::setw(7)
              << b["bucket"].get<int>() << std::setw(7)
              << (b["leader"].get<int>() < 0 ? std::string("none")
                                             : std::to_string(b["leader"].get<int>()))
              << std::setw(6) << b["leader_epoch"].get<int>() << std::setw(10)
              << List(b["replicas"]) << std::setw(10) << List(b["isr"]) << std::setw(10)
              << b["role"].get<std::string>() << std::setw(12) << OrDash(b["log_end"])
              << OrDash(b["high_watermark"]) << (under ? "  under-replicated" : "") << "\n";
  }
}

}  // namespace

void RegisterClusterCommands(CLI::App& app) {
  auto* cluster = app.add_subcommand("cluster", "Cluster mode: servers, controller, buckets");
  cluster->require_subcommand(1);
  struct Args {
    ServerArgs server;
    bool json_output = false;
  };
  auto args = std::make_shared<Args>();
  auto* status = cluster->add_subcommand(
      "status", "Servers, the controller, and each bucket's leader, ISR and offsets");
  AddServerOption(status, &args->server);
  status->add_flag("--json", args->json_output, "Print the server's JSON");
  SetAction(status, [args]() -> Status {
    ASSIGN_OR_RAISE(auto c, Connect(args->server));
    ASSIGN_OR_RAISE(json reply, Action(*c, args->server.address, "cluster_status", json::object()));
    if (args->json_output) {
      std::cout << reply.dump(2) << "\n";
    } else {
      PrintStatus(reply);
    }
    return Status::OK();
  });
}

}  // namespace oxbow::cli
