#include "oxbow/cluster/cluster.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "oxbow/cluster/replica_internal.h"
#include "oxbow/cluster/zookeeper.h"

namespace oxbow::cluster {

using internal::Clock;
using internal::Replica;

namespace {

constexpr auto kPassInterval = std::chrono::milliseconds(200);
// Every pass re-reads ZooKeeper at least this often, watches or not.
constexpr auto kFullReadInterval = std::chrono::seconds(5);
constexpr auto kMirrorTimeout = std::chrono::seconds(20);

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The table properties cluster mode refuses, at create and alter alike.
Status CheckClusterProperties(const catalog::TableDescriptor& table) {
  // A replica's rows follow the changelog it had committed; an unclean election can take back
  // committed changes, which its rows would keep.
  if (!table.primary_key.empty() && UncleanLeaderElection(table)) {
    return Status::Invalid(std::string(kUncleanLeaderElectionProperty) +
                           "=true is refused for primary-key table " + Quote(table.name) +
                           ": its replicas' rows cannot follow a changelog that loses "
                           "committed changes");
  }
  // Every replica would move its own segments to the same place of the shared warehouse.
  if (table.properties.count(engine::kLocalRetentionProperty)) {
    return Status::NotImplemented(std::string(engine::kLocalRetentionProperty) +
                                  " (the cold log) is not served in cluster mode yet: the "
                                  "replicas of a bucket would share one place in the warehouse");
  }
  return Status::OK();
}

}  // namespace

namespace internal {

// What the watches and the replicas set to wake the metadata thread; shared with the watches,
// which may fire after the Cluster is gone.
struct Wakeup {
  std::mutex mu;
  std::condition_variable cv;
  bool dirty = true;
  bool stop = false;
  int64_t passes = 0;           // passes completed
  int64_t requested = 0;        // the pass a caller waits for
  std::set<std::string> armed;  // paths with a watch set and not fired yet

  void MarkDirty() {
    std::lock_guard lock(mu);
    dirty = true;
    cv.notify_all();
  }
};

}  // namespace internal

class Cluster::Impl {
 public:
  Impl(ClusterOptions options, engine::Engine* engine)
      : options_(std::move(options)), engine_(engine) {}

  ~Impl() { (void)Close(); }

  Status Start() {
    if (options_.server_id <= 0) return Status::Invalid("--server-id must be a positive integer");
    if (options_.advertised_flight.empty()) {
      return Status::Invalid("cluster mode needs the Flight address clients reach this server at");
    }
    RETURN_NOT_OK(Connect());
    ASSIGN_OR_RAISE(cluster_secret_, ReadOrMakeSecret(*Zk()));
    RETURN_NOT_OK(Pass(/*force_read=*/true));
    thread_ = std::thread(&Impl::Loop, this);
    return Status::OK();
  }

  int32_t server_id() const { return options_.server_id; }
  const std::string& cluster_secret() const { return cluster_secret_; }

  std::shared_ptr<const ClusterMetadata> Metadata() const {
    std::lock_guard lock(meta_mu_);
    return metadata_;
  }

  // Asks the metadata thread for a full pass and waits for it.
  Status Refresh() {
    std::unique_lock lock(wakeup_->mu);
    const int64_t wanted = ++wakeup_->requested;
    wakeup_->dirty = true;
    wakeup_->cv.notify_all();
    const bool done = wakeup_->cv.wait_for(
        lock, kMirrorTimeout, [&] { return wakeup_->passes >= wanted || wakeup_->stop; });
    if (!done) return Status::Unavailable("ZooKeeper did not answer in time");
    return Status::OK();
  }

  Result<catalog::TableDescriptor> CreateTable(const catalog::CreateTableRequest& request) {
    catalog::TableDescriptor table = request.table;
    RETURN_NOT_OK(CheckClusterProperties(table));
    // A primary-key table buckets by key (its puts are routed, node::TableHandle); a log
    // table's puts go to any bucket its server leads.
    if (!table.bucket_key.empty() && table.primary_key.empty()) {
      return Status::NotImplemented(
          "tables bucketed by key in cluster mode come with cluster mode part 2: put routing by "
          "key (docs/cluster.md); create the table without bucket.key");
    }
    // A fresh read: the replication factor counts servers that registered a moment ago.
    RETURN_NOT_OK(Refresh());
    auto meta = Metadata();
    if (const TableMeta* existing = meta->FindTable(table.name)) {
      if (request.if_not_exists) return existing->descriptor;
      return Status::AlreadyExists("table " + Quote(table.name) + " already exists");
    }
    ASSIGN_OR_RAISE(int32_t factor,
                    ReplicationFactor(table, static_cast<int32_t>(meta->servers.size())));
    table.properties[kReplicationFactorProperty] = std::to_string(factor);
    ASSIGN_OR_RAISE(int32_t min_insync, MinInsyncReplicas(table));
    table.properties[kMinInsyncReplicasProperty] = std::to_string(min_insync);
    if (min_insync > factor) {
      return Status::Invalid("min.insync.replicas " + std::to_string(min_insync) +
                             " is above replication.factor " + std::to_string(factor));
    }
    if (factor > static_cast<int32_t>(meta->servers.size())) {
      return Status::Invalid("replication.factor " + std::to_string(factor) +
                             " needs as many live servers; the cluster has " +
                             std::to_string(meta->servers.size()));
    }
    table.ResetSchemaVersions();
    table.created_ms = NowMs();
    RETURN_NOT_OK(engine_->CheckTable(table));
    auto zk = Zk();
    ASSIGN_OR_RAISE(table.table_id, NextTableId(*zk));
    auto created = zk->Create(paths::Table(table.name), catalog::DescriptorToJson(table));
    if (!created.ok()) {
      if (created.status().code() == StatusCode::kAlreadyExists) {
        RETURN_NOT_OK(Refresh());
        auto again = Metadata();
        if (request.if_not_exists && again->FindTable(table.name)) {
          return again->FindTable(table.name)->descriptor;
        }
        return Status::AlreadyExists("table " + Quote(table.name) + " already exists");
      }
      return created.status();
    }
    const auto deadline = Clock::now() + kMirrorTimeout;
    while (Clock::now() < deadline) {
      RETURN_NOT_OK(Refresh());
      const TableMeta* mirrored = Metadata()->FindTable(table.name);
      if (mirrored && !mirrored->states.empty() && engine_->GetTable(table.name).ok()) {
        return mirrored->descriptor;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return Status::Unavailable("table " + Quote(table.name) +
                               " was created, but no controller assigned its buckets yet");
  }

  Status DropTable(const std::string& name) {
    if (!Metadata()->FindTable(name)) {
      RETURN_NOT_OK(Refresh());
      if (!Metadata()->FindTable(name)) {
        return Status::NotFound("table " + Quote(name) + " does not exist");
      }
    }
    RETURN_NOT_OK(Zk()->DeleteAll(paths::Table(name)));
    return Refresh();
  }

  Status RecordKvSnapshot(const std::string& table, int32_t bucket,
                          const engine::KvSnapshotRef& snapshot) {
    auto zk = Zk();
    if (!zk) return Status::Unavailable("this server has left the cluster");
    const std::string path = paths::KvSnapshot(table, bucket);
    const std::string data = KvSnapshotToJson(snapshot);
    // Another leader of the bucket (before or after a failover) may record at the same time: the
    // later offset wins.
    for (int attempt = 0; attempt < 5; ++attempt) {
      auto node = zk->Get(path);
      if (node.status().IsNotFound()) {
        auto created = zk->Create(path, data);
        if (created.status().code() == StatusCode::kAlreadyExists) continue;
        return created.status();
      }
      RETURN_NOT_OK(node.status());
      ASSIGN_OR_RAISE(auto recorded, KvSnapshotFromJson(node->data));
      if (recorded.offset >= snapshot.offset) return Status::OK();
      auto set = zk->Set(path, data, node->stat.version);
      if (set.status().code() == StatusCode::kAborted) continue;
      return set.status();
    }
    return Status::Aborted("recording the KV snapshot of " + Quote(table) + " bucket " +
                           std::to_string(bucket) + " kept racing with another writer");
  }

  Result<std::pair<std::string, int32_t>> ReadLakePointer(const std::string& table,
                                                          bool changelog) {
    auto zk = Zk();
    if (!zk) return Status::Unavailable("this server has left the cluster");
    ASSIGN_OR_RAISE(auto node, zk->Get(paths::LakePointer(table, changelog)));
    return std::make_pair(std::move(node.data), node.stat.version);
  }

  Status ReplaceLakePointer(const std::string& table, bool changelog,
                            std::optional<int32_t> expected_version, const std::string& data) {
    auto zk = Zk();
    if (!zk) return Status::Unavailable("this server has left the cluster");
    const std::string path = paths::LakePointer(table, changelog);
    const std::string state_path = paths::State(table, 0);
    // Bucket 0's state may change for other reasons (its ISR): then the check is made again.
    for (int attempt = 0; attempt < 5; ++attempt) {
      ASSIGN_OR_RAISE(auto node, zk->Get(state_path));
      ASSIGN_OR_RAISE(auto state, BucketStateFromJson(node.data));
      if (state.leader != options_.server_id ||
          (state.leader_incarnation != 0 && state.leader_incarnation != incarnation_)) {
        return Status::AlreadyExists("server " + std::to_string(options_.server_id) +
                                     " is no longer the tiering owner of " + Quote(table) +
                                     ": bucket 0 is led by server " + std::to_string(state.leader) +
                                     " in epoch " + std::to_string(state.leader_epoch));
      }
      Status st = zk->Multi(
          {ZkOp::Check(state_path, node.stat.version),
           expected_version ? ZkOp::Set(path, data, *expected_version) : ZkOp::Create(path, data)});
      if (st.ok()) return st;
      if (st.code() != StatusCode::kAborted && st.code() != StatusCode::kAlreadyExists &&
          !st.IsNotFound()) {
        return st;
      }
      auto now = zk->Exists(path);
      RETURN_NOT_OK(now.status());
      const std::optional<int32_t> version =
          *now ? std::optional<int32_t>((*now)->version) : std::nullopt;
      if (version != expected_version) {
        return Status::AlreadyExists("commit conflict: the lake pointer of " + Quote(table) +
                                     " changed meanwhile");
      }
    }
    return Status::Aborted("committing the lake of " + Quote(table) +
                           ": the state of its bucket 0 kept changing");
  }

  // The bucket's latest KV snapshot as recorded in ZooKeeper; nullopt when none is.
  Result<std::optional<engine::KvSnapshotRef>> LatestKvSnapshot(const std::string& table,
                                                                int32_t bucket) {
    auto zk = Zk();
    if (!zk) return Status::Unavailable("this server has left the cluster");
    auto node = zk->Get(paths::KvSnapshot(table, bucket));
    if (node.status().IsNotFound()) return std::optional<engine::KvSnapshotRef>();
    RETURN_NOT_OK(node.status());
    ASSIGN_OR_RAISE(auto recorded, KvSnapshotFromJson(node->data));
    return std::optional<engine::KvSnapshotRef>(std::move(recorded));
  }

  Status ReassignBucket(const std::string& table, int32_t bucket,
                        const std::vector<int32_t>& replicas) {
    RETURN_NOT_OK(Refresh());
    auto meta = Metadata();
    const TableMeta* t = meta->FindTable(table);
    if (!t) return Status::NotFound("table " + Quote(table) + " does not exist");
    if (bucket < 0 || bucket >= static_cast<int32_t>(t->replicas.size())) {
      return Status::Invalid("table " + Quote(table) + " has no bucket " + std::to_string(bucket));
    }
    if (replicas.empty()) return Status::Invalid("a bucket needs at least one replica");
    std::set<int32_t> named;
    for (int32_t id : replicas) {
      if (!named.insert(id).second) {
        return Status::Invalid("server " + std::to_string(id) + " is named twice");
      }
      if (!meta->servers.count(id)) {
        return Status::Invalid("server " + std::to_string(id) + " is not live");
      }
    }
    auto zk = Zk();
    // The controller rewrites the assignment as other moves finish or replicas catch up; such a
    // write does not contradict this request, so read again and reapply it.
    constexpr int kAttempts = 20;
    for (int attempt = 1;; ++attempt) {
      ASSIGN_OR_RAISE(Znode node, zk->Get(paths::Assignment(table)));
      ASSIGN_OR_RAISE(Assignment assignment, AssignmentFromJson(node.data));
      if (assignment.replicas[static_cast<size_t>(bucket)] == replicas) {
        assignment.targets.erase(bucket);  // already there (a move under way is called off)
      } else {
        assignment.targets[bucket] = replicas;
      }
      auto set = zk->Set(paths::Assignment(table), AssignmentToJson(assignment), node.stat.version);
      if (set.ok()) break;
      if (set.status().code() != StatusCode::kAborted) return set.status();
      if (attempt == kAttempts) {
        return Status::Aborted("the assignment of table " + Quote(table) + " changed " +
                               std::to_string(kAttempts) +
                               " times while this move was written; run it again");
      }
    }
    spdlog::info("cluster: {}[{}] moving to [{}]", table, bucket, fmt::join(replicas, ","));
    return Refresh();
  }

  Result<std::pair<std::string, int32_t>> ReadRegistryDocument() {
    auto zk = Zk();
    if (!zk) return Status::Unavailable("this server has left the cluster");
    ASSIGN_OR_RAISE(auto node, zk->Get(paths::kSchemaRegistry));
    return std::make_pair(std::move(node.data), node.stat.version);
  }

  Result<int32_t> WriteRegistryDocument(const std::string& data,
                                        std::optional<int32_t> expected_version) {
    auto zk = Zk();
    if (!zk) return Status::Unavailable("this server has left the cluster");
    if (!expected_version) {
      auto created = zk->Create(paths::kSchemaRegistry, data);
      if (created.status().code() == StatusCode::kAlreadyExists) {
        return Status::Aborted("another server stored the schema registry first");
      }
      RETURN_NOT_OK(created.status());
      return 0;
    }
    ASSIGN_OR_RAISE(ZnodeStat stat, zk->Set(paths::kSchemaRegistry, data, *expected_version));
    return stat.version;
  }

  Result<catalog::TableDescriptor> AlterTable(const catalog::TableDescriptor& before,
                                              const catalog::TableDescriptor& after) {
    auto zk = Zk();
    ASSIGN_OR_RAISE(Znode node, zk->Get(paths::Table(before.name)));
    if (node.data != catalog::DescriptorToJson(before)) {
      return Status::Aborted("table " + Quote(before.name) +
                             " changed while this alter ran; run it again");
    }
    RETURN_NOT_OK(CheckClusterProperties(after));
    RETURN_NOT_OK(engine_->CheckTable(after));
    auto set =
        zk->Set(paths::Table(before.name), catalog::DescriptorToJson(after), node.stat.version);
    if (!set.ok()) {
      if (set.status().code() == StatusCode::kAborted) {
        return Status::Aborted("table " + Quote(before.name) +
                               " changed while this alter ran; run it again");
      }
      return set.status();
    }
    RETURN_NOT_OK(Refresh());
    return after;
  }

  std::shared_ptr<Replica> FindReplica(const std::string& table, int32_t bucket) const {
    std::lock_guard lock(replicas_mu_);
    auto it = replicas_.find({table, bucket});
    return it == replicas_.end() ? nullptr : it->second;
  }

  Status NotLeaderHere(const std::string& table, int32_t bucket) const {
    auto meta = Metadata();
    const TableMeta* t = meta->FindTable(table);
    if (!t) return Status::NotFound("table " + Quote(table) + " does not exist");
    if (bucket < 0 || bucket >= static_cast<int32_t>(t->states.size())) {
      return Status::OutOfRange("table " + Quote(table) + " has no bucket " +
                                std::to_string(bucket));
    }
    const BucketState& state = t->states[static_cast<size_t>(bucket)];
    auto server = meta->servers.find(state.leader);
    return internal::NotLeader(table, bucket, state.leader,
                               server == meta->servers.end() ? "" : server->second.flight,
                               state.leader_epoch);
  }

  Status CheckWritable(const std::string& table, int32_t bucket, Acks acks) const {
    auto replica = FindReplica(table, bucket);
    if (!replica) return NotLeaderHere(table, bucket);
    Status st = replica->CheckWritable(acks);
    if (st.code() == StatusCode::kUnavailable &&
        st.message().find("not_leader") != std::string::npos) {
      return NotLeaderHere(table, bucket);
    }
    return st;
  }

  Status WaitAcknowledgeable(const std::string& table, int32_t bucket, int64_t next_offset,
                             Acks acks) {
    auto replica = FindReplica(table, bucket);
    if (!replica) return NotLeaderHere(table, bucket);
    return replica->WaitAcknowledgeable(
        next_offset, acks, Clock::now() + std::chrono::milliseconds(options_.ack_timeout_ms));
  }

  std::vector<int32_t> LeaderBuckets(const std::string& table) const {
    std::vector<int32_t> out;
    auto meta = Metadata();
    const TableMeta* t = meta->FindTable(table);
    if (!t) return out;
    for (int32_t b = 0; b < static_cast<int32_t>(t->states.size()); ++b) {
      auto replica = FindReplica(table, b);
      if (replica && replica->IsLeaderAt(t->states[static_cast<size_t>(b)].leader_epoch)) {
        out.push_back(b);
      }
    }
    return out;
  }

  Status DeleteBefore(const std::string& table, int32_t bucket, int64_t offset) {
    auto replica = FindReplica(table, bucket);
    if (!replica) return NotLeaderHere(table, bucket);
    return replica->DeleteBefore(offset,
                                 Clock::now() + std::chrono::milliseconds(options_.ack_timeout_ms));
  }

  Result<FetchEnd> ServeFetch(const ReplicaFetch& fetch,
                              const std::function<Status(const log::LogBatch&, int32_t)>& emit) {
    auto replica = FindReplica(fetch.table, fetch.bucket);
    if (!replica) return NotLeaderHere(fetch.table, fetch.bucket);
    return replica->ServeFetch(fetch, emit);
  }

  Result<log::EpochEnd> EndOffsetForEpoch(const std::string& table, int32_t bucket,
                                          int32_t epoch) const {
    auto replica = FindReplica(table, bucket);
    if (!replica) return NotLeaderHere(table, bucket);
    return replica->EndOffsetForEpoch(epoch);
  }

  std::vector<BucketReplicaStatus> BucketStatuses() const {
    std::vector<BucketReplicaStatus> out;
    auto meta = Metadata();
    for (const auto& [name, t] : meta->tables) {
      for (int32_t b = 0; b < static_cast<int32_t>(t.states.size()); ++b) {
        BucketReplicaStatus status;
        status.table = name;
        status.bucket = b;
        status.replicas = t.replicas[static_cast<size_t>(b)];
        if (auto target = t.targets.find(b); target != t.targets.end()) {
          status.moving_to = target->second;
        }
        status.state = t.states[static_cast<size_t>(b)];
        status.role = "none";
        if (auto replica = FindReplica(name, b)) replica->FillStatus(&status);
        out.push_back(std::move(status));
      }
    }
    return out;
  }

  Status Leave() {
    leaving_ = true;
    if (auto zk = Zk()) {
      Status removed = zk->Delete(paths::Server(options_.server_id));
      if (!removed.ok() && !removed.IsNotFound()) return removed.WithContext("leaving the cluster");
    }
    const auto deadline =
        Clock::now() + std::chrono::milliseconds(options_.controlled_shutdown_timeout_ms);
    while (true) {
      RETURN_NOT_OK(Refresh());
      size_t led = 0;
      {
        std::lock_guard lock(replicas_mu_);
        for (const auto& [key, replica] : replicas_) led += replica->IsLeader() ? 1 : 0;
      }
      if (led == 0) {
        spdlog::info("cluster: server {} left; it leads no bucket now", options_.server_id);
        return Status::OK();
      }
      if (Clock::now() > deadline) {
        return Status::Unavailable("server " + std::to_string(options_.server_id) +
                                   " still leads " + std::to_string(led) + " buckets after " +
                                   std::to_string(options_.controlled_shutdown_timeout_ms) + " ms");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  Status Close() {
    {
      std::lock_guard lock(wakeup_->mu);
      if (wakeup_->stop && !thread_.joinable()) return Status::OK();
      wakeup_->stop = true;
      wakeup_->cv.notify_all();
    }
    if (thread_.joinable()) thread_.join();
    std::map<std::pair<std::string, int32_t>, std::shared_ptr<Replica>> replicas;
    {
      std::lock_guard lock(replicas_mu_);
      replicas.swap(replicas_);
    }
    for (auto& [key, replica] : replicas) replica->Stop();
    replicas.clear();
    std::lock_guard lock(zk_mu_);
    zk_.reset();  // closes the session: our ephemeral znodes go now
    return Status::OK();
  }

 private:
  std::shared_ptr<ZooKeeper> Zk() const {
    std::lock_guard lock(zk_mu_);
    return zk_;
  }

  // A watch that marks the metadata dirty, set on `path` only while none is pending there.
  Watcher Watch(const std::string& path) {
    std::lock_guard lock(wakeup_->mu);
    if (!wakeup_->armed.insert(path).second) return {};
    std::weak_ptr<internal::Wakeup> weak = wakeup_;
    return [weak, path] {
      if (auto wakeup = weak.lock()) {
        std::lock_guard lock(wakeup->mu);
        wakeup->armed.erase(path);
        wakeup->dirty = true;
        wakeup->cv.notify_all();
      }
    };
  }

  void Disarm(const std::string& path) {
    std::lock_guard lock(wakeup_->mu);
    wakeup_->armed.erase(path);
  }

  // A new ZooKeeper session: the paths exist, this server is registered.
  Status Connect() {
    ZooKeeperOptions zk_options;
    zk_options.hosts = options_.zookeeper;
    zk_options.session_timeout_ms = options_.session_timeout_ms;
    std::weak_ptr<internal::Wakeup> weak = wakeup_;
    auto expired = session_expired_;
    ASSIGN_OR_RAISE(std::unique_ptr<ZooKeeper> zk, ZooKeeper::Open(zk_options, [weak, expired] {
                      expired->store(true);
                      if (auto wakeup = weak.lock()) wakeup->MarkDirty();
                    }));
    std::shared_ptr<ZooKeeper> session = std::move(zk);
    for (const char* path : {paths::kServers, paths::kTables}) {
      RETURN_NOT_OK(session->CreateAll(path));
    }
    ServerInfo self{options_.server_id, options_.advertised_flight, options_.advertised_kafka,
                    options_.rack, incarnation_};
    // A server restarted within the session timeout finds its old registration still there:
    // wait for ZooKeeper to expire it. One that is leaving stays unregistered.
    const auto deadline = Clock::now() + std::chrono::milliseconds(3 * options_.session_timeout_ms);
    while (!leaving_) {
      auto created = session->Create(paths::Server(options_.server_id), ServerInfoToJson(self),
                                     CreateMode::kEphemeral);
      if (created.ok()) break;
      if (created.status().code() != StatusCode::kAlreadyExists || Clock::now() > deadline) {
        return created.status().WithContext("registering server " +
                                            std::to_string(options_.server_id));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    spdlog::info("cluster: server {} {} in ZooKeeper {} (session 0x{:x})", options_.server_id,
                 leaving_ ? "leaving, not registered" : "registered", options_.zookeeper,
                 session->session_id());
    {
      std::lock_guard lock(wakeup_->mu);
      wakeup_->armed.clear();
      wakeup_->dirty = true;
    }
    session_expired_->store(false);
    controller_ = false;
    std::lock_guard lock(zk_mu_);
    zk_ = std::move(session);
    return Status::OK();
  }

  void Loop() {
    auto last_full_read = Clock::now();
    while (true) {
      bool read = false;
      {
        std::unique_lock lock(wakeup_->mu);
        wakeup_->cv.wait_for(lock, kPassInterval, [&] { return wakeup_->dirty || wakeup_->stop; });
        if (wakeup_->stop) return;
        read = wakeup_->dirty;
      }
      if (Clock::now() - last_full_read > kFullReadInterval) read = true;
      if (read) last_full_read = Clock::now();
      if (Status st = Pass(read); !st.ok()) {
        spdlog::warn("cluster: {}", st.ToString());
        std::this_thread::sleep_for(kPassInterval);
      }
    }
  }

  // One round of the metadata thread: the session, ZooKeeper's state, the controller's duties,
  // the local replicas, the ISRs.
  Status Pass(bool force_read) {
    const int64_t pass_target = [&] {
      std::lock_guard lock(wakeup_->mu);
      return wakeup_->requested;
    }();
    if (session_expired_->load()) {
      FenceAll("this server's ZooKeeper session expired");
      RETURN_NOT_OK(Connect());
      force_read = true;
    }
    Status st;
    if (force_read) {
      {
        std::lock_guard lock(wakeup_->mu);
        wakeup_->dirty = false;
      }
      auto meta = ReadMetadata();
      if (meta.ok()) {
        {
          std::lock_guard lock(meta_mu_);
          metadata_ = std::make_shared<const ClusterMetadata>(std::move(meta).ValueOrDie());
        }
        auto current = Metadata();
        if (Status elect = MaybeElect(*current); !elect.ok()) st = elect;
        if (controller_) {
          if (Status control = ControllerPass(*current); !control.ok()) st = control;
        }
        Reconcile(*current);
      } else {
        st = meta.status();
        // A failed call may have left its watch unset: arm every path again on the next read.
        {
          std::lock_guard lock(wakeup_->mu);
          wakeup_->armed.clear();
        }
        MarkDirty();
      }
    }
    MaintainIsr();
    {
      std::lock_guard lock(wakeup_->mu);
      wakeup_->passes = std::max(wakeup_->passes, pass_target);
      wakeup_->cv.notify_all();
    }
    return st;
  }

  void MarkDirty() { wakeup_->MarkDirty(); }

  Result<ClusterMetadata> ReadMetadata() {
    auto zk = Zk();
    ClusterMetadata meta;
    ASSIGN_OR_RAISE(auto servers, zk->GetChildren(paths::kServers, Watch(paths::kServers)));
    for (const std::string& child : servers) {
      auto node = zk->Get(std::string(paths::kServers) + "/" + child);
      if (!node.ok()) continue;  // left meanwhile
      ASSIGN_OR_RAISE(ServerInfo server, ServerInfoFromJson(node->data));
      meta.servers[server.id] = server;
    }
    auto controller = zk->Get(paths::kController, Watch(paths::kController));
    if (controller.ok()) {
      ASSIGN_OR_RAISE(auto who, ControllerFromJson(controller->data));
      meta.controller = who.first;
      meta.controller_epoch = who.second;
    } else if (controller.status().code() == StatusCode::kNotFound) {
      Disarm(paths::kController);
      ASSIGN_OR_RAISE(auto exists, zk->Exists(paths::kController, Watch(paths::kController)));
      // Created between the two calls: its watch now waits for a change that may never come.
      if (exists) MarkDirty();
    } else {
      Disarm(paths::kController);
      return controller.status();
    }
    ASSIGN_OR_RAISE(auto tables, zk->GetChildren(paths::kTables, Watch(paths::kTables)));
    for (const std::string& name : tables) {
      const std::string table_path = paths::Table(name);
      auto node = zk->Get(table_path, Watch(table_path));
      if (!node.ok()) {
        Disarm(table_path);
        continue;  // dropped meanwhile
      }
      TableMeta t;
      ASSIGN_OR_RAISE(t.descriptor, catalog::DescriptorFromJson(node->data));
      t.descriptor_version = node->stat.version;
      const std::string assignment_path = paths::Assignment(name);
      auto assignment = zk->Get(assignment_path, Watch(assignment_path));
      if (assignment.ok()) {
        ASSIGN_OR_RAISE(Assignment parsed, AssignmentFromJson(assignment->data));
        t.replicas = std::move(parsed.replicas);
        t.targets = std::move(parsed.targets);
        t.assignment_version = assignment->stat.version;
        for (int32_t b = 0; b < static_cast<int32_t>(t.replicas.size()); ++b) {
          const std::string state_path = paths::State(name, b);
          auto state_node = zk->Get(state_path, Watch(state_path));
          if (!state_node.ok()) {
            Disarm(state_path);
            t.states.clear();
            break;
          }
          ASSIGN_OR_RAISE(BucketState state, BucketStateFromJson(state_node->data));
          state.version = state_node->stat.version;
          t.states.push_back(state);
        }
        if (t.states.size() != t.replicas.size()) t.states.clear();
      } else {
        Disarm(assignment_path);
        ASSIGN_OR_RAISE(auto exists, zk->Exists(assignment_path, Watch(assignment_path)));
        if (exists) MarkDirty();
      }
      meta.tables[name] = std::move(t);
    }
    return meta;
  }

  // Controller election: the first server to create the ephemeral /oxbow/controller wins and
  // bumps controller_epoch in the same multi-op.
  Status MaybeElect(const ClusterMetadata& meta) {
    if (meta.controller == options_.server_id && controller_) return Status::OK();
    controller_ = false;
    if (meta.controller >= 0 || leaving_) return Status::OK();
    auto zk = Zk();
    int32_t epoch = 0;
    int32_t version = -1;
    auto node = zk->Get(paths::kControllerEpoch);
    if (node.ok()) {
      epoch = std::stoi(node->data);
      version = node->stat.version;
    } else if (node.status().code() == StatusCode::kNotFound) {
      auto created = zk->Create(paths::kControllerEpoch, "0");
      if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
        return created.status();
      }
      MarkDirty();
      return Status::OK();
    } else {
      return node.status();
    }
    Status st =
        zk->Multi({ZkOp::Create(paths::kController, ControllerToJson(options_.server_id, epoch + 1),
                                CreateMode::kEphemeral),
                   ZkOp::Set(paths::kControllerEpoch, std::to_string(epoch + 1), version)});
    MarkDirty();
    if (!st.ok()) {
      if (st.code() == StatusCode::kAlreadyExists || st.code() == StatusCode::kAborted) {
        return Status::OK();  // another server won
      }
      return st;
    }
    controller_ = true;
    controller_epoch_ = epoch + 1;
    controller_epoch_version_ = version + 1;
    spdlog::info("cluster: server {} is the controller (epoch {})", options_.server_id,
                 controller_epoch_);
    return Status::OK();
  }

  // A state write of the controller, fenced by the controller epoch.
  Status WriteState(const std::string& table, int32_t bucket, const BucketState& state) {
    BucketState written = state;
    written.controller_epoch = controller_epoch_;
    Status st = Zk()->Multi(
        {ZkOp::Check(paths::kControllerEpoch, controller_epoch_version_),
         ZkOp::Set(paths::State(table, bucket), BucketStateToJson(written), state.version)});
    if (st.code() == StatusCode::kAborted) {
      MarkDirty();  // lost a race with a leader's ISR change, or deposed: read again
      return Status::OK();
    }
    return st;
  }

  Status ControllerPass(const ClusterMetadata& meta) {
    std::vector<ServerInfo> live;
    for (const auto& [id, server] : meta.servers) live.push_back(server);
    auto alive = [&](int32_t id) { return meta.servers.count(id) > 0; };
    auto incarnation = [&](int32_t id) {
      auto it = meta.servers.find(id);
      return it == meta.servers.end() ? int64_t{0} : it->second.incarnation;
    };
    for (const auto& [name, t] : meta.tables) {
      if (t.replicas.empty()) {
        RETURN_NOT_OK(Assign(name, t, live));
        continue;
      }
      if (t.states.empty()) continue;
      if (static_cast<int32_t>(t.replicas.size()) < t.descriptor.buckets) {
        RETURN_NOT_OK(Assign(name, t, live));  // buckets added: the next pass sees them
        continue;
      }
      const bool unclean = UncleanLeaderElection(t.descriptor);
      for (int32_t b = 0; b < static_cast<int32_t>(t.states.size()); ++b) {
        const BucketState& state = t.states[static_cast<size_t>(b)];
        const std::vector<int32_t>& replicas = t.replicas[static_cast<size_t>(b)];
        // An ISR holds live assigned replicas only (a leader that has not yet heard of a
        // finished move may have added one that moved away).
        std::vector<int32_t> live_isr;
        for (int32_t id : state.isr) {
          if (alive(id) && std::find(replicas.begin(), replicas.end(), id) != replicas.end()) {
            live_isr.push_back(id);
          }
        }
        BucketState next = state;
        // A leader that restarted since its election may have lost its disk: another in-sync
        // replica takes over, and it rejoins the ISR once caught up (Kafka's KIP-380).
        const bool restarted = state.leader >= 0 && alive(state.leader) &&
                               state.leader_incarnation != 0 &&
                               incarnation(state.leader) != state.leader_incarnation;
        if (restarted) {
          std::erase(live_isr, state.leader);
          if (live_isr.empty()) live_isr = {state.leader};  // the only copy there is
        }
        if (state.leader < 0 || !alive(state.leader) || restarted) {
          int32_t leader = -1;
          for (int32_t id : replicas) {
            if (std::find(live_isr.begin(), live_isr.end(), id) != live_isr.end()) {
              leader = id;
              break;
            }
          }
          if (leader < 0 && unclean) {
            for (int32_t id : replicas) {
              if (alive(id)) {
                leader = id;
                live_isr = {id};
                spdlog::warn("cluster: unclean election of {} for {}[{}]: rows may be lost", id,
                             name, b);
                break;
              }
            }
          }
          if (leader < 0 && state.leader < 0) continue;  // still offline
          next.leader = leader;
          next.leader_epoch = state.leader_epoch + 1;
          next.leader_incarnation = incarnation(leader);
          // An offline bucket keeps its last ISR, so that its members may lead again.
          if (leader >= 0) next.isr = live_isr;
          spdlog::info("cluster: {}[{}] leader {} -> {} (epoch {})", name, b, state.leader, leader,
                       next.leader_epoch);
          ++leader_elections_;
        } else if (live_isr.size() != state.isr.size()) {
          next.isr = live_isr;
        } else if (!replicas.empty() && replicas[0] != state.leader && alive(replicas[0]) &&
                   state.InSync(replicas[0])) {
          next.leader = replicas[0];  // back to the preferred leader
          next.leader_epoch = state.leader_epoch + 1;
          next.leader_incarnation = incarnation(replicas[0]);
          spdlog::info("cluster: {}[{}] back to preferred leader {} (epoch {})", name, b,
                       replicas[0], next.leader_epoch);
          ++leader_elections_;
        } else {
          continue;
        }
        RETURN_NOT_OK(WriteState(name, b, next));
      }
      if (!t.targets.empty()) RETURN_NOT_OK(MoveBuckets(name, t));
    }
    return Status::OK();
  }

  // One step of each bucket move (Kafka's reassignment): first the target replicas join the
  // assignment (target first, so its first member becomes the preferred leader and takes over
  // once in sync); once every target replica is in the ISR and one of them leads, the
  // assignment shrinks to the target, the ISR with it, in one multi-op.
  Status MoveBuckets(const std::string& name, const TableMeta& t) {
    auto in = [](const std::vector<int32_t>& ids, int32_t id) {
      return std::find(ids.begin(), ids.end(), id) != ids.end();
    };
    Assignment next{t.replicas, t.targets};
    std::vector<ZkOp> states;
    for (const auto& [b, target] : t.targets) {
      if (b < 0 || b >= static_cast<int32_t>(t.states.size())) {
        next.targets.erase(b);
        continue;
      }
      std::vector<int32_t>& replicas = next.replicas[static_cast<size_t>(b)];
      const BucketState& state = t.states[static_cast<size_t>(b)];
      const bool all_assigned =
          std::all_of(target.begin(), target.end(), [&](int32_t id) { return in(replicas, id); });
      if (!all_assigned || replicas[0] != target[0]) {
        std::vector<int32_t> widened = target;
        for (int32_t id : replicas) {
          if (!in(widened, id)) widened.push_back(id);
        }
        replicas = widened;
        continue;
      }
      const bool in_sync =
          std::all_of(target.begin(), target.end(), [&](int32_t id) { return state.InSync(id); });
      if (!in_sync || !in(target, state.leader)) continue;
      replicas = target;
      next.targets.erase(b);
      BucketState narrowed = state;
      narrowed.isr.clear();
      for (int32_t id : state.isr) {
        if (in(target, id)) narrowed.isr.push_back(id);
      }
      narrowed.controller_epoch = controller_epoch_;
      states.push_back(
          ZkOp::Set(paths::State(name, b), BucketStateToJson(narrowed), state.version));
      spdlog::info("cluster: {}[{}] moved to [{}]", name, b, fmt::join(target, ","));
    }
    if (next.replicas == t.replicas && next.targets == t.targets) return Status::OK();
    std::vector<ZkOp> ops{
        ZkOp::Check(paths::kControllerEpoch, controller_epoch_version_),
        ZkOp::Set(paths::Assignment(name), AssignmentToJson(next), t.assignment_version)};
    ops.insert(ops.end(), states.begin(), states.end());
    Status st = Zk()->Multi(ops);
    MarkDirty();
    if (st.code() == StatusCode::kAborted || st.code() == StatusCode::kNotFound) {
      return Status::OK();  // someone changed the assignment or a state: read again
    }
    return st;
  }

  // Assigns replicas to the buckets that have none: every bucket of a new table, or those a
  // table gained (node::Node::AddBuckets). Each bucket's first replica leads it.
  Status Assign(const std::string& name, const TableMeta& t, const std::vector<ServerInfo>& live) {
    if (live.empty()) return Status::OK();
    const int32_t assigned = static_cast<int32_t>(t.replicas.size());
    ASSIGN_OR_RAISE(int32_t factor,
                    ReplicationFactor(t.descriptor, static_cast<int32_t>(live.size())));
    std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(live.size()) - 1);
    auto replicas = AssignReplicas(live, t.descriptor.buckets - assigned, factor, pick(random_));
    if (!replicas.ok()) {
      spdlog::warn("cluster: cannot assign table {} yet: {}", name, replicas.status().ToString());
      return Status::OK();
    }
    Assignment next{t.replicas, t.targets};
    next.replicas.insert(next.replicas.end(), replicas->begin(), replicas->end());
    const std::string assignment = AssignmentToJson(next);
    std::vector<ZkOp> ops{ZkOp::Check(paths::kControllerEpoch, controller_epoch_version_),
                          ZkOp::Check(paths::Table(name), t.descriptor_version)};
    if (assigned == 0) {
      ops.push_back(ZkOp::Create(paths::Assignment(name), assignment));
      ops.push_back(ZkOp::Create(paths::Buckets(name), ""));
    } else {
      ops.push_back(ZkOp::Set(paths::Assignment(name), assignment, t.assignment_version));
    }
    for (int32_t b = assigned; b < t.descriptor.buckets; ++b) {
      BucketState state;
      state.leader = next.replicas[static_cast<size_t>(b)][0];
      for (const ServerInfo& server : live) {
        if (server.id == state.leader) state.leader_incarnation = server.incarnation;
      }
      state.isr = next.replicas[static_cast<size_t>(b)];
      state.controller_epoch = controller_epoch_;
      ops.push_back(ZkOp::Create(paths::Bucket(name, b), ""));
      ops.push_back(ZkOp::Create(paths::State(name, b), BucketStateToJson(state)));
    }
    Status st = Zk()->Multi(ops);
    MarkDirty();
    if (st.code() == StatusCode::kAborted || st.code() == StatusCode::kAlreadyExists ||
        st.code() == StatusCode::kNotFound) {
      return Status::OK();  // deposed, or the table changed or went: read again
    }
    if (st.ok()) spdlog::info("cluster: assigned table {}: {}", name, assignment);
    return st;
  }

  static Result<std::string> ReadOrMakeSecret(ZooKeeper& zk) {
    auto node = zk.Get(paths::kClusterSecret);
    if (node.ok()) return node->data;
    if (node.status().code() != StatusCode::kNotFound) return node.status();
    std::random_device random;
    std::string secret;
    for (int i = 0; i < 8; ++i) secret += fmt::format("{:08x}", random());
    auto created = zk.Create(paths::kClusterSecret, secret);
    if (created.ok()) return secret;
    if (created.status().code() != StatusCode::kAlreadyExists) return created.status();
    ASSIGN_OR_RAISE(Znode made, zk.Get(paths::kClusterSecret));  // another server was first
    return made.data;
  }

  Result<int64_t> NextTableId(ZooKeeper& zk) {
    for (int attempt = 0; attempt < 100; ++attempt) {
      auto node = zk.Get(paths::kNextTableId);
      if (!node.ok()) {
        if (node.status().code() != StatusCode::kNotFound) return node.status();
        auto created = zk.Create(paths::kNextTableId, "1");
        if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
          return created.status();
        }
        continue;
      }
      const int64_t id = std::stoll(node->data);
      auto set = zk.Set(paths::kNextTableId, std::to_string(id + 1), node->stat.version);
      if (set.ok()) return id;
      if (set.status().code() != StatusCode::kAborted) return set.status();
    }
    return Status::Unavailable("could not allocate a table id: too much contention");
  }

  // Mirrors the tables of `meta` into the engine and gives each local replica its role.
  void Reconcile(const ClusterMetadata& meta) {
    for (const auto& descriptor : engine_->ListTables()) {
      const TableMeta* t = meta.FindTable(descriptor.name);
      if (t && t->descriptor.table_id == descriptor.table_id) continue;
      StopReplicas(descriptor.name);
      spdlog::info("cluster: dropping local table {}: ZooKeeper {}", descriptor.name,
                   t ? "holds a newer table of that name" : "no longer lists it");
      if (Status st = engine_->DropTable(descriptor.name); !st.ok()) {
        spdlog::warn("cluster: dropping local table {}: {}", descriptor.name, st.ToString());
      }
    }
    for (const auto& [name, t] : meta.tables) {
      if (t.states.empty()) continue;
      auto local = engine_->GetTable(name);
      if (!local.ok()) {
        if (Status st = engine_->AdoptTable(t.descriptor); !st.ok()) {
          spdlog::error("cluster: mirroring table {}: {}", name, st.ToString());
          continue;
        }
      } else if (catalog::DescriptorToJson((*local)->descriptor()) !=
                 catalog::DescriptorToJson(t.descriptor)) {
        auto alter = [&, &target = t.descriptor] {
          return engine_->AlterTable((*local)->descriptor(), target);
        };
        auto altered = options_.apply_alter ? options_.apply_alter(name, alter) : alter();
        if (!altered.ok()) {
          spdlog::error("cluster: altering local table {}: {}", name, altered.status().ToString());
          continue;
        }
      }
      auto table = engine_->GetTable(name);
      if (!table.ok()) continue;
      ReconcileReplicas(meta, name, t, *table);
    }
  }

  void ReconcileReplicas(const ClusterMetadata& meta, const std::string& name, const TableMeta& t,
                         const std::shared_ptr<engine::Table>& table) {
    auto min_insync = MinInsyncReplicas(t.descriptor);
    for (int32_t b = 0; b < static_cast<int32_t>(t.states.size()); ++b) {
      const BucketState& state = t.states[static_cast<size_t>(b)];
      const std::vector<int32_t>& replicas = t.replicas[static_cast<size_t>(b)];
      const bool mine =
          std::find(replicas.begin(), replicas.end(), options_.server_id) != replicas.end();
      std::shared_ptr<Replica> replica = FindReplica(name, b);
      if (replica && (!mine || replica->engine_table() != table)) {
        RemoveReplica(name, b);
        replica = nullptr;
      }
      if (!mine) {
        log::BucketLog& log = *table->logs()[static_cast<size_t>(b)];
        log.FenceAppends(internal::NotLeader(name, b, state.leader, Location(meta, state.leader),
                                             state.leader_epoch));
        // A replica moved away (now, or while this server was down) leaves no files behind.
        if (!replicas.empty() && log.next_offset() > 0) {
          if (Status st = table->DropBucketData(b); !st.ok()) {
            spdlog::error("cluster: deleting {}[{}], moved away from this server: {}", name, b,
                          st.ToString());
          } else {
            spdlog::info("cluster: {}[{}] moved away from this server; its data here is deleted",
                         name, b);
          }
        }
        continue;
      }
      if (!replica) {
        replica = std::make_shared<Replica>(
            name, b, table, options_,
            [w = std::weak_ptr(wakeup_)] {
              if (auto wakeup = w.lock()) wakeup->MarkDirty();
            },
            throttle_, [this, name, b] { return LatestKvSnapshot(name, b); });
        std::lock_guard lock(replicas_mu_);
        replicas_[{name, b}] = replica;
      }
      if (state.leader == options_.server_id && state.leader_incarnation != 0 &&
          state.leader_incarnation != incarnation_) {
        // Elected before this process started (it restarted within its session timeout, maybe
        // on an empty disk): it does not lead on that election; the controller elects again.
        if (!replica->IsFollowing(state.leader, state.leader_epoch, "")) {
          spdlog::warn(
              "{}[{}]: ZooKeeper names this server leader from before its restart; "
              "waiting for the controller to elect again",
              name, b);
          replica->BecomeFollower(state, "");
        }
      } else if (state.leader == options_.server_id) {
        if (replica->IsLeaderAt(state.leader_epoch)) {
          replica->UpdateLeaderState(state, replicas, min_insync.ok() ? *min_insync : 2);
        } else {
          replica->BecomeLeader(state, replicas, min_insync.ok() ? *min_insync : 2);
        }
      } else {
        const std::string location = Location(meta, state.leader);
        if (!replica->IsFollowing(state.leader, state.leader_epoch, location)) {
          replica->BecomeFollower(state, location);
        }
      }
    }
  }

  static std::string Location(const ClusterMetadata& meta, int32_t server) {
    auto it = meta.servers.find(server);
    return it == meta.servers.end() ? "" : it->second.flight;
  }

  void RemoveReplica(const std::string& table, int32_t bucket) {
    std::shared_ptr<Replica> replica;
    {
      std::lock_guard lock(replicas_mu_);
      auto it = replicas_.find({table, bucket});
      if (it == replicas_.end()) return;
      replica = std::move(it->second);
      replicas_.erase(it);
    }
    replica->Stop();
  }

  void StopReplicas(const std::string& table) {
    std::vector<int32_t> buckets;
    {
      std::lock_guard lock(replicas_mu_);
      for (const auto& [key, replica] : replicas_) {
        if (key.first == table) buckets.push_back(key.second);
      }
    }
    for (int32_t b : buckets) RemoveReplica(table, b);
  }

  // The session ended: nothing this server leads may acknowledge until ZooKeeper says again
  // that it leads.
  void FenceAll(const std::string& why) {
    std::lock_guard lock(replicas_mu_);
    for (auto& [key, replica] : replicas_) replica->Fence(why);
    controller_ = false;
  }

  // Leaders write the ISR they want (a conditional update of the state znode).
  void MaintainIsr() {
    std::vector<std::pair<std::pair<std::string, int32_t>, std::shared_ptr<Replica>>> replicas;
    {
      std::lock_guard lock(replicas_mu_);
      for (const auto& entry : replicas_) replicas.push_back(entry);
    }
    const auto now = Clock::now();
    const auto meta = Metadata();
    // Only registered servers join an ISR: not one that is leaving (nor one that left).
    auto registered = [&](int32_t id) { return meta->servers.count(id) > 0; };
    for (const auto& [key, replica] : replicas) {
      const TableMeta* t = meta->FindTable(key.first);
      if (!t || key.second >= static_cast<int32_t>(t->replicas.size())) continue;
      const std::vector<int32_t>& assigned = t->replicas[static_cast<size_t>(key.second)];
      auto is_replica = [&](int32_t id) {
        return std::find(assigned.begin(), assigned.end(), id) != assigned.end();
      };
      auto wanted = replica->ProposeIsr(now, is_replica, registered);
      if (!wanted) continue;
      auto zk = Zk();
      auto set =
          zk->Set(paths::State(key.first, key.second), BucketStateToJson(*wanted), wanted->version);
      if (!set.ok()) {
        MarkDirty();  // someone else changed the state: read it again
        continue;
      }
      BucketState written = *wanted;
      written.version = set->version;
      replica->IsrWritten(written);
      ++isr_changes_;
    }
  }

  const ClusterOptions options_;
  engine::Engine* const engine_;
  std::string cluster_secret_;
  const std::shared_ptr<internal::Wakeup> wakeup_ = std::make_shared<internal::Wakeup>();
  const std::shared_ptr<std::atomic<bool>> session_expired_ =
      std::make_shared<std::atomic<bool>>(false);

  mutable std::mutex zk_mu_;
  std::shared_ptr<ZooKeeper> zk_;

  mutable std::mutex meta_mu_;
  std::shared_ptr<const ClusterMetadata> metadata_ = std::make_shared<const ClusterMetadata>();

  mutable std::mutex replicas_mu_;
  std::map<std::pair<std::string, int32_t>, std::shared_ptr<Replica>> replicas_;

  // The metadata thread's own state.
  bool controller_ = false;
  // Shared by every bucket this server leads (--replication-throttle-bytes); null: none.
  const std::shared_ptr<internal::Throttle> throttle_ =
      options_.replication_throttle_bytes > 0
          ? std::make_shared<internal::Throttle>(options_.replication_throttle_bytes)
          : nullptr;
  std::atomic<bool> leaving_ = false;  // Leave() ran: never registers or runs for controller
  int32_t controller_epoch_ = 0;
  int32_t controller_epoch_version_ = -1;
  std::mt19937 random_{std::random_device{}()};
  // This process's incarnation (ServerInfo::incarnation).
  const int64_t incarnation_ =
      static_cast<int64_t>((uint64_t{std::random_device{}()} << 31 ^ std::random_device{}()) | 1);

 public:
  std::atomic<int64_t> leader_elections_{0};
  std::atomic<int64_t> isr_changes_{0};

 private:
  std::thread thread_;
};

Cluster::Cluster(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Cluster::~Cluster() { (void)Close(); }

Result<std::unique_ptr<Cluster>> Cluster::Start(ClusterOptions options, engine::Engine* engine) {
  auto impl = std::make_unique<Impl>(std::move(options), engine);
  RETURN_NOT_OK(impl->Start());
  return std::unique_ptr<Cluster>(new Cluster(std::move(impl)));
}

int32_t Cluster::server_id() const { return impl_->server_id(); }
const std::string& Cluster::cluster_secret() const { return impl_->cluster_secret(); }
std::shared_ptr<const ClusterMetadata> Cluster::Metadata() const { return impl_->Metadata(); }
Status Cluster::Refresh() { return impl_->Refresh(); }
Result<catalog::TableDescriptor> Cluster::CreateTable(const catalog::CreateTableRequest& request) {
  return impl_->CreateTable(request);
}
Status Cluster::DropTable(const std::string& name) { return impl_->DropTable(name); }
Status Cluster::ReassignBucket(const std::string& table, int32_t bucket,
                               const std::vector<int32_t>& replicas) {
  return impl_->ReassignBucket(table, bucket, replicas);
}
Status Cluster::RecordKvSnapshot(const std::string& table, int32_t bucket,
                                 const engine::KvSnapshotRef& snapshot) {
  return impl_->RecordKvSnapshot(table, bucket, snapshot);
}
Result<std::pair<std::string, int32_t>> Cluster::ReadLakePointer(const std::string& table,
                                                                 bool changelog) {
  return impl_->ReadLakePointer(table, changelog);
}
Status Cluster::ReplaceLakePointer(const std::string& table, bool changelog,
                                   std::optional<int32_t> expected_version,
                                   const std::string& data) {
  return impl_->ReplaceLakePointer(table, changelog, expected_version, data);
}
Result<std::pair<std::string, int32_t>> Cluster::ReadRegistryDocument() {
  return impl_->ReadRegistryDocument();
}
Result<int32_t> Cluster::WriteRegistryDocument(const std::string& data,
                                               std::optional<int32_t> expected_version) {
  return impl_->WriteRegistryDocument(data, expected_version);
}
Result<catalog::TableDescriptor> Cluster::AlterTable(const catalog::TableDescriptor& before,
                                                     const catalog::TableDescriptor& after) {
  return impl_->AlterTable(before, after);
}
Status Cluster::CheckLeader(const std::string& table, int32_t bucket) const {
  return impl_->CheckWritable(table, bucket, Acks::kLeader);
}
bool Cluster::HoldsReplica(const std::string& table, int32_t bucket) const {
  auto meta = Metadata();
  const TableMeta* t = meta->FindTable(table);
  if (!t || bucket < 0 || bucket >= static_cast<int32_t>(t->replicas.size())) return false;
  const auto& replicas = t->replicas[static_cast<size_t>(bucket)];
  return std::find(replicas.begin(), replicas.end(), server_id()) != replicas.end();
}
std::vector<int32_t> Cluster::LeaderBuckets(const std::string& table) const {
  return impl_->LeaderBuckets(table);
}
Status Cluster::CheckWritable(const std::string& table, int32_t bucket, Acks acks) const {
  return impl_->CheckWritable(table, bucket, acks);
}
Status Cluster::WaitAcknowledgeable(const std::string& table, int32_t bucket, int64_t next_offset,
                                    Acks acks) {
  return impl_->WaitAcknowledgeable(table, bucket, next_offset, acks);
}
Status Cluster::DeleteBefore(const std::string& table, int32_t bucket, int64_t offset) {
  return impl_->DeleteBefore(table, bucket, offset);
}
Result<FetchEnd> Cluster::ServeFetch(
    const ReplicaFetch& fetch, const std::function<Status(const log::LogBatch&, int32_t)>& emit) {
  return impl_->ServeFetch(fetch, emit);
}
Result<log::EpochEnd> Cluster::EndOffsetForEpoch(const std::string& table, int32_t bucket,
                                                 int32_t epoch) const {
  return impl_->EndOffsetForEpoch(table, bucket, epoch);
}
std::vector<BucketReplicaStatus> Cluster::BucketStatuses() const { return impl_->BucketStatuses(); }
ClusterCounters Cluster::Counters() const {
  return {impl_->leader_elections_.load(), impl_->isr_changes_.load()};
}
Status Cluster::Leave() { return impl_->Leave(); }
Status Cluster::Close() { return impl_->Close(); }

}  // namespace oxbow::cluster
