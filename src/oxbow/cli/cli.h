// The `oxbow` command-line interface; tools/oxbow/main.cc only forwards to RunCli.
#pragma once

namespace oxbow::cli {

// Parses argv, runs the chosen subcommand and returns the process exit code.
int RunCli(int argc, char** argv);

}  // namespace oxbow::cli
