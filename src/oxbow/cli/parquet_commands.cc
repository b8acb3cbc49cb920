#include "oxbow/cli/commands.h"

namespace oxbow::cli {

void RegisterParquetCommands(CLI::App& /*app*/) {}

}  // namespace oxbow::cli
