#include "oxbow/server/server.h"

int main(int argc, char** argv) { return oxbow::server::RunDaemon(argc, argv); }
