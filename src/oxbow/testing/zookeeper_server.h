// A real ZooKeeper server for a test binary: the one OXBOW_TEST_ZOOKEEPER names (scripts/test.sh
// starts one for the whole run), else one started on first use by scripts/zookeeper.sh (Debian's
// ZooKeeper, installed by scripts/setup.sh) on a free loopback port and stopped at exit.
#pragma once

#include <string>

namespace oxbow::testing {

// A loopback port nothing listens on now (0 when none could be found).
int FreeLoopbackPort();

class ZooKeeperServer {
 public:
  // The process's server, started on first call; null when it cannot start (SkipReason says
  // why: Java or the ZooKeeper jars missing).
  static ZooKeeperServer* Shared();
  static const std::string& SkipReason();

  // "127.0.0.1:<port>".
  const std::string& hosts() const { return hosts_; }
  // hosts() with a chroot no other call returned: a test's own namespace.
  std::string Chroot();

  ~ZooKeeperServer();

 private:
  ZooKeeperServer() = default;
  std::string dir_;
  std::string hosts_;
  int chroots_ = 0;
};

}  // namespace oxbow::testing
