// A ZooKeeper session over the C client (libzookeeper_mt): synchronous calls, one-shot watches
// as std::function, multi-ops, and the client's errors translated to Status in one place.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "oxbow/common/status.h"

struct _zhandle;

namespace oxbow::cluster {

struct ZooKeeperOptions {
  // "host:port,host:port" with an optional chroot suffix "/oxbow-a" (created when absent).
  std::string hosts;
  int64_t session_timeout_ms = 6000;
  // Open fails with Unavailable when no server answered within this long.
  int64_t connect_timeout_ms = 10000;
};

enum class CreateMode { kPersistent, kEphemeral, kPersistentSequential, kEphemeralSequential };

struct ZnodeStat {
  int32_t version = 0;
  int64_t czxid = 0;
  int64_t mzxid = 0;
  int64_t ephemeral_owner = 0;
  int32_t num_children = 0;
};

struct Znode {
  std::string data;
  ZnodeStat stat;
};

// Runs at most once, on the client's event thread, when the znode it was set on changes (or,
// for Exists, appears) or the session expires: it must not block or call the client.
using Watcher = std::function<void()>;

// One operation of a Multi.
struct ZkOp {
  enum class Kind { kCreate, kSet, kDelete, kCheck };
  static ZkOp Create(std::string path, std::string data, CreateMode mode = CreateMode::kPersistent);
  static ZkOp Set(std::string path, std::string data, int32_t version = -1);
  static ZkOp Delete(std::string path, int32_t version = -1);
  static ZkOp Check(std::string path, int32_t version);

  Kind kind = Kind::kCheck;
  std::string path;
  std::string data;
  int32_t version = -1;
  CreateMode mode = CreateMode::kPersistent;
};

class ZooKeeper {
 public:
  // Connects and waits for the session. `on_session_expired` runs once (on the event thread)
  // when ZooKeeper expires the session; every call then answers Unavailable and the owner opens
  // a new session. Connection losses short of expiry are retried by the client; calls made
  // meanwhile answer Unavailable.
  static Result<std::unique_ptr<ZooKeeper>> Open(ZooKeeperOptions options,
                                                 std::function<void()> on_session_expired = {});
  ~ZooKeeper();  // closes the session: its ephemeral znodes go at once
  ZooKeeper(const ZooKeeper&) = delete;
  ZooKeeper& operator=(const ZooKeeper&) = delete;

  int64_t session_id() const;
  bool expired() const { return expired_.load(); }

  // Returns the path created (with the sequence suffix for sequential modes).
  Result<std::string> Create(const std::string& path, const std::string& data,
                             CreateMode mode = CreateMode::kPersistent);
  // Creates `path` and any missing ancestors, persistent and empty; OK when it exists.
  Status CreateAll(const std::string& path);
  Result<Znode> Get(const std::string& path, Watcher watch = {});
  // nullopt when absent (a watch then fires on its creation).
  Result<std::optional<ZnodeStat>> Exists(const std::string& path, Watcher watch = {});
  Result<ZnodeStat> Set(const std::string& path, const std::string& data, int32_t version = -1);
  Status Delete(const std::string& path, int32_t version = -1);
  // Deletes `path` and everything under it (children first); OK when absent.
  Status DeleteAll(const std::string& path);
  Result<std::vector<std::string>> GetChildren(const std::string& path, Watcher watch = {});
  // All or nothing. A failure is the first failing op's Status (a lost version check is
  // Aborted), naming its index, kind and path.
  Status Multi(const std::vector<ZkOp>& ops);

  struct WatchContext;

 private:
  ZooKeeper() = default;
  static void OnSessionEvent(_zhandle* zh, int type, int state, const char* path, void* context);
  static void OnWatch(_zhandle* zh, int type, int state, const char* path, void* context);
  // A context for one watch, owned by this session until it fires or the session closes.
  WatchContext* Arm(Watcher watch);
  void Disarm(WatchContext* context);

  _zhandle* handle_ = nullptr;
  std::function<void()> on_session_expired_;
  std::atomic<bool> expired_{false};
  std::mutex mu_;
  std::condition_variable connected_cv_;
  bool connected_ = false;  // guarded by mu_
  std::mutex watches_mu_;
  std::set<WatchContext*> watches_;  // guarded by watches_mu_
};

}  // namespace oxbow::cluster
