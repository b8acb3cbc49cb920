#include "oxbow/cli/cli.h"

int main(int argc, char** argv) { return oxbow::cli::RunCli(argc, argv); }
