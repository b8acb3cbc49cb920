#include "oxbow/cli/commands.h"

namespace oxbow::cli {

void RegisterIpcCommands(CLI::App& /*app*/) {}

}  // namespace oxbow::cli
