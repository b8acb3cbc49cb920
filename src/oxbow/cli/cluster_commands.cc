// oxbow cluster status: the servers, the controller and every bucket's leader, ISR and offsets
// as the server asked sees them (docs/cluster.md).
#include <chrono>
#include <iomanip>
#include <iostream>
#include <memory>
#include <thread>

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
              << OrDash(b["high_watermark"]) << (under ? "  under-replicated" : "")
              << (b.value("moving_to", json()).is_array() ? "  moving to " + List(b["moving_to"])
                                                          : std::string())
              << "\n";
  }
}

// The bucket's entry in a cluster_status reply, or null.
json FindBucket(const json& status, const std::string& table, int bucket) {
  for (const auto& b : status["buckets"]) {
    if (b["table"] == table && b["bucket"] == bucket) return b;
  }
  return nullptr;
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

  struct MoveArgs {
    ServerArgs server;
    std::string table;
    int bucket = 0;
    std::vector<int32_t> replicas;
    int64_t wait_s = 0;
  };
  auto move = std::make_shared<MoveArgs>();
  auto* reassign = cluster->add_subcommand(
      "reassign",
      "Move a bucket onto other servers: the new replicas catch up and join the ISR, "
      "leadership moves to the first, the replicas left out are dropped");
  AddServerOption(reassign, &move->server);
  reassign->add_option("--table", move->table, "The table (ns.t)")->required();
  reassign->add_option("--bucket", move->bucket, "The bucket")->required();
  reassign->add_option("--replicas", move->replicas, "Server ids, the preferred leader first")
      ->delimiter(',')
      ->required();
  reassign->add_option("--wait", move->wait_s,
                       "Wait up to this many seconds for the move to finish (default 0: "
                       "start it and return)");
  SetAction(reassign, [move]() -> Status {
    ASSIGN_OR_RAISE(auto c, Connect(move->server));
    RETURN_NOT_OK(
        Action(*c, move->server.address, "reassign_bucket",
               json{{"table", move->table}, {"bucket", move->bucket}, {"replicas", move->replicas}})
            .status());
    std::cout << move->table << "[" << move->bucket << "]: moving to " << List(move->replicas)
              << "\n";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(move->wait_s);
    while (move->wait_s > 0) {
      ASSIGN_OR_RAISE(json status,
                      Action(*c, move->server.address, "cluster_status", json::object()));
      const json b = FindBucket(status, move->table, move->bucket);
      if (b.is_object() && b["moving_to"].is_null() &&
          b["replicas"].get<std::vector<int32_t>>() == move->replicas) {
        std::cout << move->table << "[" << move->bucket << "]: on " << List(b["replicas"])
                  << ", leader " << b["leader"] << ", ISR " << List(b["isr"]) << "\n";
        return Status::OK();
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return Status::Unavailable("the move of " + move->table + "[" +
                                   std::to_string(move->bucket) + "] has not finished after " +
                                   std::to_string(move->wait_s) + " s (see oxbow cluster status)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return Status::OK();
  });
}

}  // namespace oxbow::cli
