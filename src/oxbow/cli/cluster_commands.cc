// oxbow cluster: status (the servers, the controller and every bucket's leader, ISR and offsets
// as the server asked sees them), reassign (move a bucket) and decommission (empty a server)
// (docs/cluster.md).
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <map>
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

struct Move {
  std::string table;
  int bucket = 0;
  std::vector<int32_t> replicas;
};

std::string Name(const Move& m) { return m.table + "[" + std::to_string(m.bucket) + "]"; }

// Every bucket on server `id` gets the live server holding the fewest replicas in its place
// (one not holding the bucket yet); a preferred leader being replaced hands that role to the
// next replica, which is in sync already.
Result<std::vector<Move>> PlanDecommission(const json& status, int32_t id) {
  std::map<int32_t, int> load;
  for (const auto& s : status["servers"]) {
    if (s["id"].get<int32_t>() != id) load[s["id"].get<int32_t>()] = 0;
  }
  for (const auto& b : status["buckets"]) {
    for (const auto& r : b["replicas"]) {
      if (load.count(r.get<int32_t>())) ++load[r.get<int32_t>()];
    }
  }
  std::vector<Move> moves;
  for (const auto& b : status["buckets"]) {
    auto replicas = b["replicas"].get<std::vector<int32_t>>();
    auto at = std::find(replicas.begin(), replicas.end(), id);
    if (at == replicas.end()) continue;
    Move m{b["table"].get<std::string>(), b["bucket"].get<int>(), {}};
    int32_t best = -1;
    for (const auto& [server, count] : load) {
      if (std::find(replicas.begin(), replicas.end(), server) != replicas.end()) continue;
      if (best < 0 || count < load[best]) best = server;
    }
    if (best < 0) {
      return Status::Invalid("no live server can take server " + std::to_string(id) +
                             "'s place in " + Name(m) + " (it is on every other one)");
    }
    ++load[best];
    replicas.erase(at);
    replicas.push_back(best);
    m.replicas = std::move(replicas);
    moves.push_back(std::move(m));
  }
  return moves;
}

// Starts each move, then waits up to `wait_s` seconds (0: not at all) until all are done.
Status RunMoves(client::Client& c, const std::string& address, const std::vector<Move>& moves,
                int64_t wait_s) {
  for (const Move& m : moves) {
    RETURN_NOT_OK(Action(c, address, "reassign_bucket",
                         json{{"table", m.table}, {"bucket", m.bucket}, {"replicas", m.replicas}})
                      .status());
    std::cout << Name(m) << ": moving to " << List(m.replicas) << "\n";
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
  std::vector<Move> pending = moves;
  while (wait_s > 0 && !pending.empty()) {
    ASSIGN_OR_RAISE(json status, Action(c, address, "cluster_status", json::object()));
    std::erase_if(pending, [&](const Move& m) {
      const json b = FindBucket(status, m.table, m.bucket);
      if (!b.is_object() || !b["moving_to"].is_null() ||
          b["replicas"].get<std::vector<int32_t>>() != m.replicas) {
        return false;
      }
      std::cout << Name(m) << ": on " << List(b["replicas"]) << ", leader " << b["leader"]
                << ", ISR " << List(b["isr"]) << "\n";
      return true;
    });
    if (pending.empty()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::Unavailable(
          "the move of " + Name(pending.front()) +
          (pending.size() > 1 ? " (and " + std::to_string(pending.size() - 1) + " more)"
                              : std::string()) +
          " has not finished after " + std::to_string(wait_s) + " s (see oxbow cluster status)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return Status::OK();
}

void AddWaitOption(CLI::App* command, int64_t* wait_s) {
  command->add_option("--wait", *wait_s,
                      "Wait up to this many seconds for the moves to finish (default 0: start "
                      "them and return)");
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
    Move move;
    int64_t wait_s = 0;
  };
  auto move = std::make_shared<MoveArgs>();
  auto* reassign = cluster->add_subcommand(
      "reassign",
      "Move a bucket onto other servers: the new replicas catch up and join the ISR, "
      "leadership moves to the first, the replicas left out are dropped");
  AddServerOption(reassign, &move->server);
  reassign->add_option("--table", move->move.table, "The table (ns.t)")->required();
  reassign->add_option("--bucket", move->move.bucket, "The bucket")->required();
  reassign->add_option("--replicas", move->move.replicas, "Server ids, the preferred leader first")
      ->delimiter(',')
      ->required();
  AddWaitOption(reassign, &move->wait_s);
  SetAction(reassign, [move]() -> Status {
    ASSIGN_OR_RAISE(auto c, Connect(move->server));
    return RunMoves(*c, move->server.address, {move->move}, move->wait_s);
  });

  struct DecommissionArgs {
    ServerArgs server;
    int32_t id = -1;
    int64_t wait_s = 0;
  };
  auto retire = std::make_shared<DecommissionArgs>();
  auto* decommission = cluster->add_subcommand(
      "decommission",
      "Move every replica off a server, each onto the live server holding the fewest, so that "
      "it can be stopped for good");
  AddServerOption(decommission, &retire->server);
  decommission->add_option("--id", retire->id, "The server to empty")->required();
  AddWaitOption(decommission, &retire->wait_s);
  SetAction(decommission, [retire]() -> Status {
    ASSIGN_OR_RAISE(auto c, Connect(retire->server));
    ASSIGN_OR_RAISE(json status,
                    Action(*c, retire->server.address, "cluster_status", json::object()));
    ASSIGN_OR_RAISE(std::vector<Move> moves, PlanDecommission(status, retire->id));
    if (moves.empty()) {
      std::cout << "server " << retire->id << " holds no replica\n";
      return Status::OK();
    }
    return RunMoves(*c, retire->server.address, moves, retire->wait_s);
  });
}

}  // namespace oxbow::cli
