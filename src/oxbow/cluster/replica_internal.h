// One bucket's replica on this server: the leader's side (followers' log ends, the ISR it wants,
// the high watermark, acks) and the follower's side (a fetcher thread pulling from the leader,
// truncating to it first after a leader change, KIP-101).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "oxbow/cluster/cluster.h"
#include "oxbow/engine/table.h"

namespace oxbow::client {
class Client;
}

namespace oxbow::cluster::internal {

using Clock = std::chrono::steady_clock;

// The Unavailable answer of a server that does not lead a bucket (Cluster::CheckLeader).
Status NotLeader(const std::string& table, int32_t bucket, int32_t leader,
                 const std::string& location, int32_t leader_epoch);

// A rate shared by the fetches it governs, each taking its turn (Kafka's replication quota).
class Throttle {
 public:
  explicit Throttle(int64_t bytes_per_second) : bytes_per_second_(bytes_per_second) {}
  int64_t bytes_per_second() const { return bytes_per_second_; }
  // When `bytes` more may be sent, so that the rate stays at most bytes_per_second.
  Clock::time_point Reserve(int64_t bytes);

 private:
  const int64_t bytes_per_second_;
  std::mutex mu_;
  Clock::time_point free_at_{};
};

class Replica {
 public:
  // `on_stale_metadata` asks the owner to re-read ZooKeeper (a fetch saw a newer epoch).
  // `throttle` (null: none) paces what this replica, leading, sends to followers not in sync.
  // `latest_kv_snapshot` reads the bucket's latest KV snapshot (a primary-key bucket's follower
  // far behind restores it rather than fetch the changelog under it); empty: never.
  Replica(std::string table, int32_t bucket, std::shared_ptr<engine::Table> engine_table,
          const ClusterOptions& options, std::function<void()> on_stale_metadata,
          std::shared_ptr<Throttle> throttle = nullptr,
          std::function<Result<std::optional<engine::KvSnapshotRef>>()> latest_kv_snapshot = {});
  ~Replica();  // stops the fetcher
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;

  const std::shared_ptr<engine::Table>& engine_table() const { return engine_table_; }
  log::BucketLog& log() const { return *engine_table_->logs()[static_cast<size_t>(bucket_)]; }

  // Role changes; the owner's metadata thread alone calls these.
  void BecomeLeader(const BucketState& state, const std::vector<int32_t>& replicas,
                    int32_t min_insync);
  // The same leader epoch, a newer state (the ISR or its znode version changed) or replica set
  // (a bucket being moved).
  void UpdateLeaderState(const BucketState& state, const std::vector<int32_t>& replicas,
                         int32_t min_insync);
  // Follows `state.leader` at `location` ("" while the leader is offline or unknown).
  void BecomeFollower(const BucketState& state, const std::string& location);
  // No longer a replica here (or shutting down): fences appends, ends waits, stops fetching.
  void Stop();
  // Where a role change would lead: the leader and epoch it acts on now.
  bool IsLeaderAt(int32_t epoch) const;
  bool IsLeader() const;
  bool IsFollowing(int32_t leader, int32_t epoch, const std::string& location) const;
  // The session that made this server leader ended: acts as a follower until told otherwise.
  void Fence(const std::string& why);

  // Leader side.
  Status CheckWritable(Acks acks) const;
  Status WaitAcknowledgeable(int64_t next_offset, Acks acks, Clock::time_point deadline);
  // Cluster::DeleteBefore on this bucket's leader.
  Status DeleteBefore(int64_t offset, Clock::time_point deadline);
  Result<FetchEnd> ServeFetch(const ReplicaFetch& fetch,
                              const std::function<Status(const log::LogBatch&, int32_t)>& emit);
  Result<log::EpochEnd> EndOffsetForEpoch(int32_t epoch) const;
  // The ISR this leader wants written now (followers lagging longer than the lag time leave,
  // caught-up ones join), or nullopt when it is right. The state carries the znode version the
  // write must check. From now until the next proposal, the high watermark waits for the
  // members it adds as well: once the write lands, a controller may elect one of them.
  // Only followers for which `is_replica` holds (the bucket's assignment names them) stay, and
  // of those only ones for which `may_join` holds join.
  std::optional<BucketState> ProposeIsr(Clock::time_point now,
                                        const std::function<bool(int32_t)>& is_replica,
                                        const std::function<bool(int32_t)>& may_join);
  // The write of ProposeIsr succeeded: `written` is the state now in ZooKeeper.
  void IsrWritten(const BucketState& written);

  void FillStatus(BucketReplicaStatus* status) const;

 private:
  enum class Role { kNone, kLeader, kFollower };
  struct Follower {
    int64_t log_end = -1;   // -1: has not fetched since this leader took over
    int64_t log_start = 0;  // as of its last fetch
    Clock::time_point last_caught_up{};
    int64_t leader_end_at_last_fetch = -1;
    Clock::time_point last_fetch{};
  };

  // Raises the high watermark to the smallest log end in the ISR and among the proposed
  // members. Requires mu_.
  void AdvanceHighWatermarkLocked();
  void StopFetcher();
  void FetchLoop(int32_t leader, int32_t epoch, std::string location);
  // One fetch: appends what the leader sent. Returns false when the fetcher should stop.
  Status FetchOnce(client::Client& leader, int32_t epoch);
  Status TruncateToLeader(client::Client& leader, int32_t epoch);
  // A primary-key follower whose changelog ends before the latest KV snapshot restores it and
  // fetches from its offset (Table::RestoreKvSnapshot). Returns whether it did.
  Result<bool> RestoreKvSnapshot();

  const std::string table_;
  const int32_t bucket_;
  const std::shared_ptr<engine::Table> engine_table_;
  const ClusterOptions options_;
  const std::function<void()> on_stale_metadata_;
  const std::shared_ptr<Throttle> throttle_;
  const std::function<Result<std::optional<engine::KvSnapshotRef>>()> latest_kv_snapshot_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // the high watermark moved, or the role changed
  Role role_ = Role::kNone;
  BucketState state_;  // as last known in ZooKeeper
  // Joining the ISR, written or about to be: the high watermark counts them as members
  // (Kafka's maximal ISR).
  std::vector<int32_t> proposed_members_;
  std::vector<int32_t> replicas_;
  int32_t min_insync_ = 1;
  std::string leader_location_;            // follower: where the leader is
  std::map<int32_t, Follower> followers_;  // leader only
  int64_t high_watermark_ = 0;

  std::thread fetcher_;
  std::shared_ptr<std::atomic<bool>> fetcher_stop_;
  std::mutex fetch_cancel_mu_;
  std::function<void()> cancel_fetch_;  // ends the fetch under way
};

}  // namespace oxbow::cluster::internal
