#include "oxbow/cli/cli.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "oxbow/cli/commands.h"

namespace oxbow::cli {

void SetAction(CLI::App* command, std::function<Status()> action) {
  command->callback([action = std::move(action)] {
    Status st = action();
    if (!st.ok()) {
      std::cerr << "oxbow: error: " << st.message() << std::endl;
      throw CLI::RuntimeError(1);
    }
  });
}

int RunCli(int argc, char** argv) {
  CLI::App app{"oxbow: the Oxbow command-line tool"};
  app.require_subcommand(1);
  RegisterIpcCommands(app);
  RegisterParquetCommands(app);
  RegisterSelfcheckCommand(app);
  RegisterServerCommands(app);
  RegisterKeyCommands(app);
  RegisterUserCommands(app);
  RegisterClusterCommands(app);
  RegisterSchemaCommands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // app.exit prints help or the usage problem; an action's failure was printed already.
    const int code = app.exit(e);
    if (code == 0 || e.get_name() == "RuntimeError") return code;
    return 2;
  }
  return 0;
}

}  // namespace oxbow::cli
