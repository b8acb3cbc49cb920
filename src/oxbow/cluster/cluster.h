// Cluster mode (docs/cluster.md): this server's membership in a cluster of oxbowd processes that
// share one ZooKeeper ensemble. It registers the server, takes part in the controller election
// (and, while elected, assigns bucket replicas and elects leaders), mirrors the tables kept in
// ZooKeeper into the local engine, and replicates each bucket's log: a leader serves its
// followers' fetches and keeps the high watermark; a follower fetches from its leader. Front
// ends reach it only through node::TableHandle, which checks leadership and waits for acks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oxbow/catalog/descriptor.h"
#include "oxbow/cluster/metadata.h"
#include "oxbow/common/status.h"
#include "oxbow/engine/engine.h"
#include "oxbow/log/bucket_log.h"

namespace oxbow::cluster {

struct ClusterOptions {
  // "host:port,host:port" of the ZooKeeper ensemble, with an optional chroot ("/oxbow-a").
  // Empty: embedded mode (no Cluster at all).
  std::string zookeeper;
  // This server's id, unique and stable (> 0).
  int32_t server_id = -1;
  // What clients are told: "grpc://host:port" of the Flight endpoint, "host:port" of the Kafka
  // listener (empty: none).
  std::string advertised_flight;
  std::string advertised_kafka;
  // The rack, for rack-aware assignment. Default: none.
  std::string rack;
  // ZooKeeper's session timeout: a server silent this long is dead. Default 6 s.
  int64_t session_timeout_ms = 6000;
  // A follower that has not caught up with its leader's log end for this long leaves the ISR.
  // Default 10 s (Kafka's replica.lag.time.max.ms).
  int64_t replica_lag_time_max_ms = 10'000;
  // A follower's fetch waits at most this long for new data. Default 500 ms.
  int64_t replica_fetch_wait_ms = 500;
  // A fetch response carries at most this many bytes (at least one batch). Default 8 MiB.
  int64_t replica_fetch_max_bytes = int64_t{8} << 20;
  // An acks=all put fails with Unavailable when its rows are not in sync on the ISR this soon.
  // Default 30 s (Kafka's request.timeout.ms).
  int64_t ack_timeout_ms = 30'000;
  // Bytes per second this server, as a leader, sends to followers that are not in the ISR
  // (replicas being added by a move, or catching up after a restart); 0: unlimited. Default 0.
  int64_t replication_throttle_bytes = 0;
  // A stopping server waits at most this long for its buckets' leadership to move (Leave).
  // Default 10 s.
  int64_t controlled_shutdown_timeout_ms = 10'000;
  // Runs when this server becomes a bucket's leader, before it takes puts (the state kept for
  // clients beside the rows catches up with the log). Default: none.
  std::function<void(const std::string& table, int32_t bucket)> on_leadership;
  // Mirroring an alter_table: runs `alter` (the engine's change of `table`). The node runs it
  // while no tiering round of the table is under way, so no round mixes two schemas. Default:
  // runs it.
  std::function<Result<catalog::TableDescriptor>(
      const std::string& table, const std::function<Result<catalog::TableDescriptor>()>& alter)>
      apply_alter;
};

// How the Unavailable answers of a put start, so that front ends can tell them apart (Kafka's
// NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT; any other
// Unavailable means "not the leader").
inline constexpr char kNotEnoughReplicas[] = "not enough replicas";
inline constexpr char kNotEnoughReplicasAfterAppend[] = "not enough replicas after append";
inline constexpr char kTimedOutWaitingForReplicas[] = "timed out waiting for the in-sync replicas";

// When a put is acknowledged.
enum class Acks {
  kLeader,  // once durable on the leader (Kafka acks=1); a failover can lose it
  kAll,     // once every in-sync replica has it, with at least min.insync.replicas of them
};

// A follower's fetch of a bucket's log from its leader (the internal Flight DoGet ticket
// {"replica_fetch": {...}}, docs/cluster.md#replication-of-a-buckets-log).
struct ReplicaFetch {
  std::string table;
  int32_t bucket = 0;
  int64_t from = 0;          // the follower's log end
  int64_t log_start = 0;     // the follower's log start (DeleteRecords)
  int32_t leader_epoch = 0;  // the epoch the follower believes the leader has
  int32_t replica = -1;      // the follower's server id
  int64_t max_wait_ms = 500;
  int64_t max_bytes = int64_t{8} << 20;
};
std::string ReplicaFetchToJson(const ReplicaFetch& fetch);
// `json` is the value of "replica_fetch".
Result<ReplicaFetch> ReplicaFetchFromJson(std::string_view json);

// What the last message of a fetch response carries besides batches: the leader's high
// watermark and log start (which followers move theirs up to).
struct FetchEnd {
  int64_t high_watermark = 0;
  int64_t log_start = 0;
};
// The app_metadata of each message of a fetch response: a batch (its data_header and body are
// the stored metadata and body), and the last message, the FetchEnd.
std::string FetchedBatchMetadata(const log::LogBatch& batch, int32_t leader_epoch);
std::string FetchEndMetadata(const FetchEnd& end);

// One bucket as this server sees it, for status pages.
struct BucketReplicaStatus {
  std::string table;
  int32_t bucket = 0;
  std::vector<int32_t> replicas;
  std::vector<int32_t> moving_to;  // the target of a move under way; empty: none
  BucketState state;
  // This server's log of the bucket, when it holds a replica.
  bool local = false;
  std::string role;  // "leader", "follower", "none"
  int64_t log_end = 0;
  int64_t high_watermark = 0;
  // Leader only: each follower's log end as its last fetch said (-1: not yet fetched).
  std::map<int32_t, int64_t> follower_log_ends;
};

// What the metrics count.
struct ClusterCounters {
  int64_t leader_elections = 0;  // made by this server while controller
  int64_t isr_changes = 0;       // ISR shrinks and expands written by this server as leader
};

class Cluster {
 public:
  // Connects to ZooKeeper, registers this server, mirrors the tables into `engine` and starts
  // replicating. `engine` outlives the Cluster.
  static Result<std::unique_ptr<Cluster>> Start(ClusterOptions options, engine::Engine* engine);
  ~Cluster();  // Close()s
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  int32_t server_id() const;
  // A random secret the whole cluster shares (made once, kept in ZooKeeper): what derived
  // identifiers such as Kafka topic ids are keyed with, so that every server gives the same.
  const std::string& cluster_secret() const;
  // The cluster as of the last read of ZooKeeper.
  std::shared_ptr<const ClusterMetadata> Metadata() const;
  // Reads ZooKeeper and applies what changed now (a table a client names that this server has
  // not mirrored yet).
  Status Refresh();

  // Tables live in ZooKeeper: these write there, then wait until this server mirrored the change.
  Result<catalog::TableDescriptor> CreateTable(const catalog::CreateTableRequest& request);
  Status DropTable(const std::string& name);
  // Moves `bucket` of `table` onto `replicas` (live servers, the first its preferred leader):
  // records the move in ZooKeeper and returns; the controller adds the new replicas, waits for
  // them to join the ISR, moves leadership onto one and drops the others
  // (docs/cluster.md#moving-buckets). A second call replaces the move under way.
  Status ReassignBucket(const std::string& table, int32_t bucket,
                        const std::vector<int32_t>& replicas);
  // Records `snapshot` in ZooKeeper as the latest KV snapshot of the bucket, unless one at the
  // same or a later offset is recorded already (docs/cluster.md#kv-snapshots-in-object-storage).
  Status RecordKvSnapshot(const std::string& table, int32_t bucket,
                          const engine::KvSnapshotRef& snapshot);
  // The lake pointer of `table` (`changelog`: of its changelog lake table) as ZooKeeper holds
  // it: the znode's data and version; NotFound when there is none (docs/cluster.md#the-lake).
  Result<std::pair<std::string, int32_t>> ReadLakePointer(const std::string& table, bool changelog);
  // Writes `data` as that pointer provided it is still at `expected_version` (none: it must not
  // exist) and, in the same multi-op, that ZooKeeper's state of bucket 0 names this process as
  // its leader: only the tiering owner commits, and a deposed one is fenced. AlreadyExists when
  // either changed; another error leaves the outcome unknown.
  Status ReplaceLakePointer(const std::string& table, bool changelog,
                            std::optional<int32_t> expected_version, const std::string& data);
  // The schema registry's document and its znode version; NotFound when none is stored yet.
  Result<std::pair<std::string, int32_t>> ReadRegistryDocument();
  // Replaces that document at `expected_version` (nullopt: none may exist yet) with `data`; the
  // new version. Aborted when another server changed it first.
  Result<int32_t> WriteRegistryDocument(const std::string& data,
                                        std::optional<int32_t> expected_version);
  // Replaces `before` (still current, else Aborted) with `after`.
  Result<catalog::TableDescriptor> AlterTable(const catalog::TableDescriptor& before,
                                              const catalog::TableDescriptor& after);

  // OK when this server leads `bucket`; Unavailable otherwise, its message JSON naming the
  // leader: {"error": "not_leader", "table": t, "bucket": b, "leader": id, "location":
  // "grpc://...", "leader_epoch": e} ("leader": -1 when the bucket is offline).
  Status CheckLeader(const std::string& table, int32_t bucket) const;
  // Whether `bucket` of `table` has a replica on this server (in its last picture of ZooKeeper).
  bool HoldsReplica(const std::string& table, int32_t bucket) const;
  // The buckets of `table` this server leads now.
  std::vector<int32_t> LeaderBuckets(const std::string& table) const;
  // Before a put into `bucket`: CheckLeader, and for kAll Unavailable ("not enough replicas")
  // while the ISR has fewer than min.insync.replicas members.
  Status CheckWritable(const std::string& table, int32_t bucket, Acks acks) const;
  // After the leader appended rows up to `next_offset` (durable locally): returns once the put
  // may be acknowledged under `acks`; Unavailable when leadership was lost meanwhile, the ISR
  // shrank below min.insync.replicas, or ack_timeout_ms passed. Never OK for rows that a
  // failover may take back under kAll.
  Status WaitAcknowledgeable(const std::string& table, int32_t bucket, int64_t next_offset,
                             Acks acks);
  // DeleteRecords on the leader of `bucket`: moves its log start up to `offset`, then returns
  // once every in-sync follower moved theirs too (so no failover brings the records back);
  // Unavailable when this server does not lead the bucket or ack_timeout_ms passed.
  Status DeleteBefore(const std::string& table, int32_t bucket, int64_t offset);

  // The leader's side of a follower's fetch: `emit` gets each batch from `fetch.from` on (up to
  // max_bytes, waiting up to max_wait_ms for the first) with the leader epoch it was written
  // in; returns the high watermark and log start to send along. OutOfRange naming the log start
  // when `fetch.from` is below it.
  Result<FetchEnd> ServeFetch(const ReplicaFetch& fetch,
                              const std::function<Status(const log::LogBatch&, int32_t)>& emit);
  // The leader's answer to a follower's OffsetsForLeaderEpoch (KIP-101).
  Result<log::EpochEnd> EndOffsetForEpoch(const std::string& table, int32_t bucket,
                                          int32_t epoch) const;

  // Every bucket of every table, as this server sees it.
  std::vector<BucketReplicaStatus> BucketStatuses() const;
  ClusterCounters Counters() const;

  // Controlled shutdown, before Close: withdraws this server's registration so that the
  // controller moves the leadership of its buckets to other in-sync replicas and takes it out of
  // every ISR while it still serves (clients then find the new leaders at once), and waits
  // until it leads no bucket, at most controlled_shutdown_timeout_ms (then Unavailable).
  Status Leave();
  // Leaves the cluster: stops fetchers, closes the ZooKeeper session (ephemeral znodes go at
  // once, so the controller moves leadership without waiting for a timeout). Idempotent.
  Status Close();

 private:
  class Impl;
  explicit Cluster(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace oxbow::cluster
