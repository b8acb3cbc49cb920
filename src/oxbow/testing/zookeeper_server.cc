#include "oxbow/testing/zookeeper_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

namespace oxbow::testing {

int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(addr);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0;
  close(fd);
  return ok ? ntohs(addr.sin_port) : 0;
}

namespace {

std::string& Reason() {
  static std::string reason;
  return reason;
}

std::string Script() { return std::string(OXBOW_SOURCE_DIR) + "/scripts/zookeeper.sh"; }

}  // namespace

ZooKeeperServer* ZooKeeperServer::Shared() {
  static std::unique_ptr<ZooKeeperServer> server = []() -> std::unique_ptr<ZooKeeperServer> {
    if (const char* shared = std::getenv("OXBOW_TEST_ZOOKEEPER"); shared && *shared) {
      std::unique_ptr<ZooKeeperServer> s(new ZooKeeperServer());
      s->hosts_ = shared;  // someone else's: never stopped here
      return s;
    }
    if (std::system("command -v java > /dev/null") != 0) {
      Reason() = "no java on PATH: run scripts/setup.sh";
      return nullptr;
    }
    char tmpl[] = "/tmp/oxbow_zookeeper_XXXXXX";
    if (!mkdtemp(tmpl)) {
      Reason() = "cannot make a temporary directory";
      return nullptr;
    }
    std::unique_ptr<ZooKeeperServer> s(new ZooKeeperServer());
    s->dir_ = tmpl;
    const int port = FreeLoopbackPort();
    const std::string start =
        Script() + " start " + std::to_string(port) + " " + s->dir_ + " > /dev/null";
    if (port == 0 || std::system(start.c_str()) != 0) {
      Reason() = "scripts/zookeeper.sh could not start ZooKeeper (see " + s->dir_ +
                 "/zookeeper.log); run scripts/setup.sh";
      return nullptr;
    }
    s->hosts_ = "127.0.0.1:" + std::to_string(port);
    return s;
  }();
  return server.get();
}

const std::string& ZooKeeperServer::SkipReason() { return Reason(); }

std::string ZooKeeperServer::Chroot() {
  return hosts_ + "/test-" + std::to_string(getpid()) + "-" + std::to_string(++chroots_);
}

ZooKeeperServer::~ZooKeeperServer() {
  if (dir_.empty()) return;
  (void)std::system((Script() + " stop " + dir_).c_str());
  std::filesystem::remove_all(dir_);
}

}  // namespace oxbow::testing
