#include "oxbow/cluster/zookeeper.h"

#include <spdlog/spdlog.h>
#include <zookeeper/zookeeper.h>

#include <chrono>

namespace oxbow::cluster {

struct ZooKeeper::WatchContext {
  ZooKeeper* owner;
  Watcher watch;
  bool fired = false;
};

namespace {

// The one place the C client's error codes become a Status.
Status ToStatus(int rc, std::string_view operation, const std::string& path) {
  if (rc == ZOK) return Status::OK();
  std::string message = "ZooKeeper " + std::string(operation) + " " + path + ": " + zerror(rc);
  switch (rc) {
    case ZNONODE: return Status::NotFound(std::move(message));
    case ZNODEEXISTS: return Status::AlreadyExists(std::move(message));
    case ZBADVERSION: return Status::Aborted(std::move(message));
    case ZNOTEMPTY: return Status::Invalid(std::move(message));
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    case ZSESSIONEXPIRED:
    case ZCLOSING:
    case ZINVALIDSTATE: return Status::Unavailable(std::move(message));
    case ZNOAUTH: return Status::PermissionDenied(std::move(message));
    default: return Status::IOError(std::move(message));
  }
}

int ModeFlags(CreateMode mode) {
  switch (mode) {
    case CreateMode::kPersistent: return ZOO_PERSISTENT;
    case CreateMode::kEphemeral: return ZOO_EPHEMERAL;
    case CreateMode::kPersistentSequential: return ZOO_PERSISTENT_SEQUENTIAL;
    case CreateMode::kEphemeralSequential: return ZOO_EPHEMERAL_SEQUENTIAL;
  }
  return ZOO_PERSISTENT;
}

ZnodeStat ToStat(const struct Stat& s) {
  return {s.version, s.czxid, s.mzxid, s.ephemeralOwner, s.numChildren};
}

void LogLine(const char* message) { spdlog::warn("zookeeper client: {}", message); }

const char* KindName(ZkOp::Kind kind) {
  switch (kind) {
    case ZkOp::Kind::kCreate: return "create";
    case ZkOp::Kind::kSet: return "set";
    case ZkOp::Kind::kDelete: return "delete";
    case ZkOp::Kind::kCheck: return "check";
  }
  return "?";
}

}  // namespace

ZkOp ZkOp::Create(std::string path, std::string data, CreateMode mode) {
  ZkOp op;
  op.kind = Kind::kCreate;
  op.path = std::move(path);
  op.data = std::move(data);
  op.mode = mode;
  return op;
}
ZkOp ZkOp::Set(std::string path, std::string data, int32_t version) {
  ZkOp op;
  op.kind = Kind::kSet;
  op.path = std::move(path);
  op.data = std::move(data);
  op.version = version;
  return op;
}
ZkOp ZkOp::Delete(std::string path, int32_t version) {
  ZkOp op;
  op.kind = Kind::kDelete;
  op.path = std::move(path);
  op.version = version;
  return op;
}
ZkOp ZkOp::Check(std::string path, int32_t version) {
  ZkOp op;
  op.kind = Kind::kCheck;
  op.path = std::move(path);
  op.version = version;
  return op;
}

Result<std::unique_ptr<ZooKeeper>> ZooKeeper::Open(ZooKeeperOptions options,
                                                   std::function<void()> on_session_expired) {
  zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
  const size_t slash = options.hosts.find('/');
  if (slash != std::string::npos && slash + 1 < options.hosts.size()) {
    // The C client needs the chroot to exist: make it through a session without one.
    ZooKeeperOptions root = options;
    root.hosts = options.hosts.substr(0, slash);
    ASSIGN_OR_RAISE(auto session, Open(root));
    RETURN_NOT_OK(session->CreateAll(options.hosts.substr(slash)));
  }
  std::unique_ptr<ZooKeeper> zk(new ZooKeeper());
  zk->on_session_expired_ = std::move(on_session_expired);
  zk->handle_ =
      zookeeper_init2(options.hosts.c_str(), &ZooKeeper::OnSessionEvent,
                      static_cast<int>(options.session_timeout_ms), nullptr, zk.get(), 0, &LogLine);
  if (!zk->handle_) {
    return Status::Invalid("cannot start a ZooKeeper client for " + Quote(options.hosts) + ": " +
                           std::strerror(errno));
  }
  std::unique_lock lock(zk->mu_);
  if (!zk->connected_cv_.wait_for(lock, std::chrono::milliseconds(options.connect_timeout_ms),
                                  [&] { return zk->connected_ || zk->expired_.load(); }) ||
      !zk->connected_) {
    return Status::Unavailable("no ZooKeeper server of " + Quote(options.hosts) + " answered in " +
                               std::to_string(options.connect_timeout_ms) + " ms");
  }
  return zk;
}

ZooKeeper::~ZooKeeper() {
  if (handle_) zookeeper_close(handle_);
  // No callback runs after zookeeper_close: the watches that never fired go now.
  std::lock_guard lock(watches_mu_);
  for (WatchContext* context : watches_) delete context;
}

int64_t ZooKeeper::session_id() const {
  const clientid_t* id = zoo_client_id(handle_);
  return id ? id->client_id : 0;
}

void ZooKeeper::OnSessionEvent(_zhandle*, int type, int state, const char*, void* context) {
  auto* self = static_cast<ZooKeeper*>(context);
  if (type != ZOO_SESSION_EVENT) return;
  if (state == ZOO_EXPIRED_SESSION_STATE) {
    if (!self->expired_.exchange(true)) {
      spdlog::warn("ZooKeeper session 0x{:x} expired", self->session_id());
      if (self->on_session_expired_) self->on_session_expired_();
    }
  }
  std::lock_guard lock(self->mu_);
  self->connected_ = state == ZOO_CONNECTED_STATE;
  self->connected_cv_.notify_all();
}

void ZooKeeper::OnWatch(_zhandle*, int type, int state, const char*, void* context) {
  auto* watch = static_cast<WatchContext*>(context);
  // The client calls every watch on each session event; only expiry ends the watch.
  if (type == ZOO_SESSION_EVENT && state != ZOO_EXPIRED_SESSION_STATE) return;
  ZooKeeper* owner = watch->owner;
  {
    std::lock_guard lock(owner->watches_mu_);
    if (watch->fired) return;
    watch->fired = true;
  }
  if (watch->watch) watch->watch();
  // A watch that fired on a change is gone from the client; one that fired on expiry stays in
  // its tables until the session closes, and is freed then.
  if (type != ZOO_SESSION_EVENT) owner->Disarm(watch);
}

ZooKeeper::WatchContext* ZooKeeper::Arm(Watcher watch) {
  if (!watch) return nullptr;
  auto* context = new WatchContext{this, std::move(watch)};
  std::lock_guard lock(watches_mu_);
  watches_.insert(context);
  return context;
}

void ZooKeeper::Disarm(WatchContext* context) {
  if (!context) return;
  std::lock_guard lock(watches_mu_);
  if (watches_.erase(context)) delete context;
}

Result<std::string> ZooKeeper::Create(const std::string& path, const std::string& data,
                                      CreateMode mode) {
  std::string created(path.size() + 64, '\0');
  const int rc = zoo_create(handle_, path.c_str(), data.data(), static_cast<int>(data.size()),
                            &ZOO_OPEN_ACL_UNSAFE, ModeFlags(mode), created.data(),
                            static_cast<int>(created.size()));
  RETURN_NOT_OK(ToStatus(rc, "create", path));
  created.resize(std::strlen(created.c_str()));
  return created;
}

Status ZooKeeper::CreateAll(const std::string& path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string prefix = path.substr(0, slash);
    auto created = Create(prefix, "");
    if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
      return created.status();
    }
    if (slash == std::string::npos) return Status::OK();
  }
}

Result<Znode> ZooKeeper::Get(const std::string& path, Watcher watch) {
  WatchContext* context = Arm(std::move(watch));
  std::string buffer(64 << 10, '\0');
  struct Stat stat {};
  while (true) {
    int length = static_cast<int>(buffer.size());
    const int rc = zoo_wget(handle_, path.c_str(), context ? &ZooKeeper::OnWatch : nullptr, context,
                            buffer.data(), &length, &stat);
    if (rc != ZOK) {
      Disarm(context);
      return ToStatus(rc, "get", path);
    }
    if (stat.dataLength <= static_cast<int>(buffer.size())) {
      buffer.resize(length < 0 ? 0 : static_cast<size_t>(length));
      return Znode{std::move(buffer), ToStat(stat)};
    }
    // Larger than the buffer: read again with room for it (the watch is set once already).
    buffer.assign(static_cast<size_t>(stat.dataLength), '\0');
    context = nullptr;
  }
}

Result<std::optional<ZnodeStat>> ZooKeeper::Exists(const std::string& path, Watcher watch) {
  WatchContext* context = Arm(std::move(watch));
  struct Stat stat {};
  const int rc =
      zoo_wexists(handle_, path.c_str(), context ? &ZooKeeper::OnWatch : nullptr, context, &stat);
  if (rc == ZNONODE) return std::optional<ZnodeStat>();  // the watch waits for its creation
  if (rc != ZOK) {
    Disarm(context);
    return ToStatus(rc, "exists", path);
  }
  return std::optional<ZnodeStat>(ToStat(stat));
}

Result<ZnodeStat> ZooKeeper::Set(const std::string& path, const std::string& data,
                                 int32_t version) {
  struct Stat stat {};
  const int rc =
      zoo_set2(handle_, path.c_str(), data.data(), static_cast<int>(data.size()), version, &stat);
  RETURN_NOT_OK(ToStatus(rc, "set", path));
  return ToStat(stat);
}

Status ZooKeeper::Delete(const std::string& path, int32_t version) {
  return ToStatus(zoo_delete(handle_, path.c_str(), version), "delete", path);
}

Status ZooKeeper::DeleteAll(const std::string& path) {
  auto children = GetChildren(path);
  if (!children.ok()) {
    return children.status().code() == StatusCode::kNotFound ? Status::OK() : children.status();
  }
  for (const std::string& child : *children) RETURN_NOT_OK(DeleteAll(path + "/" + child));
  Status st = Delete(path);
  return st.code() == StatusCode::kNotFound ? Status::OK() : st;
}

Result<std::vector<std::string>> ZooKeeper::GetChildren(const std::string& path, Watcher watch) {
  WatchContext* context = Arm(std::move(watch));
  struct String_vector children {};
  const int rc = zoo_wget_children(handle_, path.c_str(), context ? &ZooKeeper::OnWatch : nullptr,
                                   context, &children);
  if (rc != ZOK) {
    Disarm(context);
    return ToStatus(rc, "get children of", path);
  }
  std::vector<std::string> out(children.data, children.data + children.count);
  deallocate_String_vector(&children);
  return out;
}

Status ZooKeeper::Multi(const std::vector<ZkOp>& ops) {
  if (ops.empty()) return Status::OK();
  std::vector<zoo_op_t> c_ops(ops.size());
  std::vector<zoo_op_result_t> results(ops.size());
  std::vector<std::string> created(ops.size());
  std::vector<struct Stat> stats(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const ZkOp& op = ops[i];
    switch (op.kind) {
      case ZkOp::Kind::kCreate:
        created[i].assign(op.path.size() + 64, '\0');
        zoo_create_op_init(&c_ops[i], op.path.c_str(), op.data.data(),
                           static_cast<int>(op.data.size()), &ZOO_OPEN_ACL_UNSAFE,
                           ModeFlags(op.mode), created[i].data(),
                           static_cast<int>(created[i].size()));
        break;
      case ZkOp::Kind::kSet:
        zoo_set_op_init(&c_ops[i], op.path.c_str(), op.data.data(),
                        static_cast<int>(op.data.size()), op.version, &stats[i]);
        break;
      case ZkOp::Kind::kDelete: zoo_delete_op_init(&c_ops[i], op.path.c_str(), op.version); break;
      case ZkOp::Kind::kCheck: zoo_check_op_init(&c_ops[i], op.path.c_str(), op.version); break;
    }
  }
  const int rc = zoo_multi(handle_, static_cast<int>(ops.size()), c_ops.data(), results.data());
  if (rc == ZOK) return Status::OK();
  for (size_t i = 0; i < ops.size(); ++i) {
    if (results[i].err != ZOK && results[i].err != ZRUNTIMEINCONSISTENCY) {
      return ToStatus(results[i].err,
                      "multi op " + std::to_string(i) + " (" + KindName(ops[i].kind) + ")",
                      ops[i].path);
    }
  }
  return ToStatus(rc, "multi", ops.front().path);
}

}  // namespace oxbow::cluster
