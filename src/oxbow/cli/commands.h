// Each command family registers its subcommands on the root app (internal to the cli module).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "oxbow/common/status.h"

namespace oxbow::cli {

// Runs `action` when `command` is chosen; an error Status prints "oxbow: error: <message>" on
// stderr and exits with code 1.
void SetAction(CLI::App* command, std::function<Status()> action);

void RegisterIpcCommands(CLI::App& app);
void RegisterParquetCommands(CLI::App& app);
void RegisterSelfcheckCommand(CLI::App& app);
// table create|list|describe|drop, produce, consume, lake status: talk to oxbowd.
void RegisterServerCommands(CLI::App& app);
// lookup, snapshot, delete: the key operations of primary-key tables.
void RegisterKeyCommands(CLI::App& app);
// user add|remove|list: the users file of a data dir.
void RegisterUserCommands(CLI::App& app);
// cluster status: a cluster's servers, controller and buckets.
void RegisterClusterCommands(CLI::App& app);
// schema list|versions|get|register|check|delete|config: the schema registry.
void RegisterSchemaCommands(CLI::App& app);

}  // namespace oxbow::cli
