#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "oxbow/client/client.h"
#include "oxbow/cluster/replica_internal.h"

namespace oxbow::cluster {

using json = nlohmann::json;

std::string ReplicaFetchToJson(const ReplicaFetch& fetch) {
  return json{{"replica_fetch",
               {{"table", fetch.table},
                {"bucket", fetch.bucket},
                {"from", fetch.from},
                {"log_start", fetch.log_start},
                {"leader_epoch", fetch.leader_epoch},
                {"replica", fetch.replica},
                {"max_wait_ms", fetch.max_wait_ms},
                {"max_bytes", fetch.max_bytes}}}}
      .dump();
}

Result<ReplicaFetch> ReplicaFetchFromJson(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Invalid("a replica_fetch ticket must be a JSON object");
  }
  ReplicaFetch fetch;
  try {
    fetch.table = j.at("table").get<std::string>();
    fetch.bucket = j.at("bucket").get<int32_t>();
    fetch.from = j.at("from").get<int64_t>();
    fetch.log_start = j.value("log_start", int64_t{0});
    fetch.leader_epoch = j.at("leader_epoch").get<int32_t>();
    fetch.replica = j.at("replica").get<int32_t>();
    fetch.max_wait_ms = std::clamp<int64_t>(j.value("max_wait_ms", int64_t{500}), 0, 10'000);
    fetch.max_bytes = std::clamp<int64_t>(j.value("max_bytes", int64_t{8} << 20), 1, 1 << 30);
  } catch (const json::exception& e) {
    return Status::Invalid(std::string("bad replica_fetch ticket: ") + e.what());
  }
  return fetch;
}

std::string FetchedBatchMetadata(const log::LogBatch& batch, int32_t leader_epoch) {
  return json{{"base_offset", batch.base_offset},
              {"rows", batch.row_count},
              {"min_ts", batch.min_timestamp_ms},
              {"max_ts", batch.max_timestamp_ms},
              {"append_time", batch.append_time_ms},
              {"schema_id", batch.schema_id},
              {"epoch", leader_epoch}}
      .dump();
}

std::string FetchEndMetadata(const FetchEnd& end) {
  return json{{"high_watermark", end.high_watermark}, {"log_start", end.log_start}}.dump();
}

namespace internal {

namespace {

constexpr auto kRetryBackoff = std::chrono::milliseconds(100);

}  // namespace

Status NotLeader(const std::string& table, int32_t bucket, int32_t leader,
                 const std::string& location, int32_t leader_epoch) {
  return Status::Unavailable(json{
      {"error", "not_leader"},
      {"table", table},
      {"bucket", bucket},
      {"leader", leader},
      {"location", location},
      {"leader_epoch",
       leader_epoch}}.dump());
}

Clock::time_point Throttle::Reserve(int64_t bytes) {
  std::lock_guard lock(mu_);
  free_at_ = std::max(free_at_, Clock::now()) +
             std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                 static_cast<double>(bytes) / static_cast<double>(bytes_per_second_)));
  return free_at_;
}

Replica::Replica(std::string table, int32_t bucket, std::shared_ptr<engine::Table> engine_table,
                 const ClusterOptions& options, std::function<void()> on_stale_metadata,
                 std::shared_ptr<Throttle> throttle,
                 std::function<Result<std::optional<engine::KvSnapshotRef>>()> latest_kv_snapshot)
    : table_(std::move(table)),
      bucket_(bucket),
      engine_table_(std::move(engine_table)),
      options_(options),
      on_stale_metadata_(std::move(on_stale_metadata)),
      throttle_(std::move(throttle)),
      latest_kv_snapshot_(std::move(latest_kv_snapshot)) {
  log().FenceAppends(NotLeader(table_, bucket_, -1, "", 0));
  // Readers see nothing a failover could take back: the high watermark starts at what this
  // replica knows to be replicated (nothing yet) and follows the leader's.
  if (log().high_watermark() == INT64_MAX) log().SetHighWatermark(0);
  high_watermark_ = log().high_watermark();
}

Replica::~Replica() { Stop(); }

void Replica::StopFetcher() {
  if (!fetcher_.joinable()) return;
  fetcher_stop_->store(true);
  {
    std::lock_guard lock(fetch_cancel_mu_);
    if (cancel_fetch_) cancel_fetch_();
  }
  fetcher_.join();
}

void Replica::BecomeLeader(const BucketState& state, const std::vector<int32_t>& replicas,
                           int32_t min_insync) {
  StopFetcher();
  log::BucketLog& l = log();
  if (Status st = l.AssignLeaderEpoch(state.leader_epoch, l.next_offset()); !st.ok()) {
    spdlog::error("{}[{}]: recording leader epoch {}: {}", table_, bucket_, state.leader_epoch,
                  st.ToString());
  }
  if (options_.on_leadership) options_.on_leadership(table_, bucket_);
  std::lock_guard lock(mu_);
  role_ = Role::kLeader;
  state_ = state;
  replicas_ = replicas;
  min_insync_ = min_insync;
  leader_location_.clear();
  followers_.clear();
  proposed_members_.clear();
  const auto now = Clock::now();
  for (int32_t id : replicas) {
    if (id != state.leader) followers_[id].last_caught_up = now;
  }
  high_watermark_ = std::min(l.high_watermark(), l.durable_offset());
  AdvanceHighWatermarkLocked();
  // State derived from the log (a primary-key bucket's rows) catches up before the first put.
  if (Status st = engine_table_->PrepareToLead(bucket_); !st.ok()) {
    role_ = Role::kNone;
    spdlog::error("{}[{}]: cannot lead: {}", table_, bucket_, st.ToString());
    l.FenceAppends(st.WithContext("bucket " + std::to_string(bucket_) + " of table " +
                                  Quote(table_) + " cannot take puts on this leader"));
    cv_.notify_all();
    return;
  }
  l.UnfenceAppends();
  spdlog::info("{}[{}]: leader at epoch {} from offset {} (ISR {})", table_, bucket_,
               state.leader_epoch, l.next_offset(), json(state.isr).dump());
  cv_.notify_all();
}

void Replica::UpdateLeaderState(const BucketState& state, const std::vector<int32_t>& replicas,
                                int32_t min_insync) {
  std::lock_guard lock(mu_);
  if (role_ != Role::kLeader || state.leader_epoch != state_.leader_epoch) return;
  if (replicas != replicas_) {
    replicas_ = replicas;
    std::erase_if(followers_, [&](const auto& f) {
      return std::find(replicas.begin(), replicas.end(), f.first) == replicas.end();
    });
    // A replica being added starts from nothing: it joins the ISR once it has caught up.
    for (int32_t id : replicas) {
      if (id != state.leader && !followers_.count(id)) followers_[id].last_caught_up = Clock::now();
    }
  }
  // A follower the controller took out of the ISR (its server left) rejoins only after it
  // fetches again; otherwise its last fetch would put it straight back.
  for (auto& [id, f] : followers_) {
    if (state_.InSync(id) && !state.InSync(id)) f.log_end = -1;
  }
  state_ = state;
  min_insync_ = min_insync;
  AdvanceHighWatermarkLocked();
  cv_.notify_all();
}

void Replica::BecomeFollower(const BucketState& state, const std::string& location) {
  log().FenceAppends(NotLeader(table_, bucket_, state.leader, location, state.leader_epoch));
  StopFetcher();
  {
    std::lock_guard lock(mu_);
    role_ = Role::kFollower;
    state_ = state;
    leader_location_ = location;
    followers_.clear();
    cv_.notify_all();
  }
  if (state.leader < 0 || location.empty()) return;
  fetcher_stop_ = std::make_shared<std::atomic<bool>>(false);
  fetcher_ = std::thread(&Replica::FetchLoop, this, state.leader, state.leader_epoch, location);
}

void Replica::Stop() {
  log().FenceAppends(NotLeader(table_, bucket_, -1, "", 0));
  StopFetcher();
  std::lock_guard lock(mu_);
  role_ = Role::kNone;
  cv_.notify_all();
}

void Replica::Fence(const std::string& why) {
  log().FenceAppends(Status::Unavailable(why));
  std::lock_guard lock(mu_);
  if (role_ == Role::kLeader) {
    role_ = Role::kNone;
    spdlog::warn("{}[{}]: no longer leader: {}", table_, bucket_, why);
  }
  cv_.notify_all();
}

bool Replica::IsLeaderAt(int32_t epoch) const {
  std::lock_guard lock(mu_);
  return role_ == Role::kLeader && state_.leader_epoch == epoch;
}

bool Replica::IsLeader() const {
  std::lock_guard lock(mu_);
  return role_ == Role::kLeader;
}

bool Replica::IsFollowing(int32_t leader, int32_t epoch, const std::string& location) const {
  std::lock_guard lock(mu_);
  return role_ == Role::kFollower && state_.leader == leader && state_.leader_epoch == epoch &&
         leader_location_ == location;
}

void Replica::AdvanceHighWatermarkLocked() {
  log::BucketLog& l = log();
  // What the leader acknowledges from: its fsynced end under --flush fsync, its written end
  // under --flush interval (as a single server acknowledges); followers report the same.
  int64_t candidate =
      l.flush_policy() == log::FlushPolicy::kEveryAppend ? l.durable_offset() : l.next_offset();
  auto include = [&](int32_t id) {
    if (id == state_.leader) return;
    auto it = followers_.find(id);
    candidate = std::min(candidate, it == followers_.end() ? -1 : it->second.log_end);
  };
  for (int32_t id : state_.isr) include(id);
  for (int32_t id : proposed_members_) include(id);
  if (candidate > high_watermark_) {
    high_watermark_ = candidate;
    l.SetHighWatermark(candidate);
    cv_.notify_all();
  }
}

Status Replica::CheckWritable(Acks acks) const {
  std::lock_guard lock(mu_);
  if (role_ != Role::kLeader) {
    return NotLeader(table_, bucket_, state_.leader, leader_location_, state_.leader_epoch);
  }
  if (acks == Acks::kAll && static_cast<int32_t>(state_.isr.size()) < min_insync_) {
    return Status::Unavailable(
        std::string(kNotEnoughReplicas) + ": bucket " + std::to_string(bucket_) + " of table " +
        Quote(table_) + " has " + std::to_string(state_.isr.size()) +
        " in-sync replicas, min.insync.replicas is " + std::to_string(min_insync_));
  }
  return Status::OK();
}

Status Replica::WaitAcknowledgeable(int64_t next_offset, Acks acks, Clock::time_point deadline) {
  std::unique_lock lock(mu_);
  const int32_t epoch = state_.leader_epoch;
  while (true) {
    if (role_ != Role::kLeader || state_.leader_epoch != epoch) {
      return Status::Unavailable("leadership of bucket " + std::to_string(bucket_) + " of table " +
                                 Quote(table_) +
                                 " moved before the put was replicated; it may or may not be "
                                 "in the log: write it again");
    }
    // The leader's own fsync may be the last to end: the watermark moves on it too.
    AdvanceHighWatermarkLocked();
    if (acks == Acks::kLeader) return Status::OK();
    if (high_watermark_ >= next_offset) {
      if (static_cast<int32_t>(state_.isr.size()) < min_insync_) {
        return Status::Unavailable(std::string(kNotEnoughReplicasAfterAppend) +
                                   ": the ISR of bucket " + std::to_string(bucket_) + " of table " +
                                   Quote(table_) + " shrank to " +
                                   std::to_string(state_.isr.size()));
      }
      return Status::OK();
    }
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout &&
        high_watermark_ < next_offset) {
      return Status::Unavailable(std::string(kTimedOutWaitingForReplicas) + " of bucket " +
                                 std::to_string(bucket_) + " of table " + Quote(table_));
    }
  }
}

Status Replica::DeleteBefore(int64_t offset, Clock::time_point deadline) {
  std::unique_lock lock(mu_);
  const int32_t epoch = state_.leader_epoch;
  if (role_ != Role::kLeader) {
    return NotLeader(table_, bucket_, state_.leader, leader_location_, state_.leader_epoch);
  }
  lock.unlock();
  RETURN_NOT_OK(log().DeleteBefore(offset));
  (void)log().EnforceRetention();  // the segments wholly below go now
  lock.lock();
  while (true) {
    if (role_ != Role::kLeader || state_.leader_epoch != epoch) {
      return Status::Unavailable("leadership of bucket " + std::to_string(bucket_) + " of table " +
                                 Quote(table_) +
                                 " moved before its followers moved their log "
                                 "start: delete the records again");
    }
    const bool all_moved = std::all_of(state_.isr.begin(), state_.isr.end(), [&](int32_t id) {
      auto f = followers_.find(id);
      return f == followers_.end() || f->second.log_start >= offset;  // not found: this server
    });
    if (all_moved) return Status::OK();
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
      return Status::Unavailable(std::string(kTimedOutWaitingForReplicas) + " to move the log " +
                                 "start of bucket " + std::to_string(bucket_) + " of table " +
                                 Quote(table_));
    }
  }
}

Result<FetchEnd> Replica::ServeFetch(
    const ReplicaFetch& fetch, const std::function<Status(const log::LogBatch&, int32_t)>& emit) {
  log::BucketLog& l = log();
  bool throttled = false;
  {
    std::lock_guard lock(mu_);
    if (role_ != Role::kLeader) {
      return NotLeader(table_, bucket_, state_.leader, leader_location_, state_.leader_epoch);
    }
    if (fetch.leader_epoch != state_.leader_epoch) {
      if (fetch.leader_epoch > state_.leader_epoch && on_stale_metadata_) on_stale_metadata_();
      return Status::Unavailable("fenced leader epoch: the fetch names epoch " +
                                 std::to_string(fetch.leader_epoch) + ", this leader has " +
                                 std::to_string(state_.leader_epoch));
    }
    auto it = followers_.find(fetch.replica);
    if (it == followers_.end()) {
      return Status::Invalid("server " + std::to_string(fetch.replica) +
                             " is not a follower of bucket " + std::to_string(bucket_) +
                             " of table " + Quote(table_));
    }
    throttled = throttle_ && !state_.InSync(fetch.replica);
    const int64_t leader_end = l.next_offset();
    if (fetch.from > leader_end) {
      return Status::OutOfRange("fetch from " + std::to_string(fetch.from) +
                                " is past the leader's log end " + std::to_string(leader_end));
    }
    Follower& f = it->second;
    const auto now = Clock::now();
    // Kafka's rule: caught up now when it has the leader's log end, or as of its previous fetch
    // when it has what the leader had then.
    if (fetch.from >= leader_end) {
      f.last_caught_up = now;
    } else if (f.leader_end_at_last_fetch >= 0 && fetch.from >= f.leader_end_at_last_fetch) {
      f.last_caught_up = std::max(f.last_caught_up, f.last_fetch);
    }
    f.log_end = fetch.from;
    f.log_start = fetch.log_start;
    f.leader_end_at_last_fetch = leader_end;
    f.last_fetch = now;
    AdvanceHighWatermarkLocked();
  }
  if (fetch.from < l.earliest_offset()) {
    return Status::OutOfRange("log_start=" + std::to_string(l.earliest_offset()));
  }
  // Followers get what the leader has written, fsynced or not: they write and fsync it while
  // the leader does (the high watermark still waits for the leader's own fsync).
  const auto deadline = Clock::now() + std::chrono::milliseconds(fetch.max_wait_ms);
  ASSIGN_OR_RAISE(int64_t end, l.WaitForData(fetch.from, deadline, log::ReadLimit::kWritten));
  if (fetch.from < end) {
    log::ReadOptions read_options;
    read_options.limit = log::ReadLimit::kWritten;
    // A throttled follower gets a tenth of a second's worth per fetch (at least one batch),
    // sent once the shared rate allows.
    const int64_t max_bytes =
        throttled ? std::min(fetch.max_bytes,
                             std::max<int64_t>(throttle_->bytes_per_second() / 10, int64_t{1}))
                  : fetch.max_bytes;
    ASSIGN_OR_RAISE(auto batches, l.Read(fetch.from, max_bytes, read_options));
    if (throttled) {
      int64_t bytes = 0;
      for (const auto& batch : batches) bytes += batch.metadata->size() + batch.body->size();
      std::this_thread::sleep_until(throttle_->Reserve(bytes));
    }
    for (const auto& batch : batches) {
      RETURN_NOT_OK(emit(batch, l.LeaderEpochAt(batch.base_offset)));
    }
  }
  const int64_t log_start = l.log_start();
  std::lock_guard lock(mu_);
  return FetchEnd{high_watermark_, log_start};
}

Result<log::EpochEnd> Replica::EndOffsetForEpoch(int32_t epoch) const {
  {
    std::lock_guard lock(mu_);
    if (role_ != Role::kLeader) {
      return NotLeader(table_, bucket_, state_.leader, leader_location_, state_.leader_epoch);
    }
  }
  return log().EndOffsetForEpoch(epoch);
}

std::optional<BucketState> Replica::ProposeIsr(Clock::time_point now,
                                               const std::function<bool(int32_t)>& is_replica,
                                               const std::function<bool(int32_t)>& may_join) {
  std::lock_guard lock(mu_);
  proposed_members_.clear();
  if (role_ != Role::kLeader) return std::nullopt;
  const auto lag = std::chrono::milliseconds(options_.replica_lag_time_max_ms);
  std::vector<int32_t> isr{state_.leader};
  for (const auto& [id, f] : followers_) {
    if (!is_replica(id)) continue;  // moved away, and may still fetch until it hears so
    const bool in_sync = state_.InSync(id);
    if (in_sync && now - f.last_caught_up <= lag) isr.push_back(id);
    // Joins once it has everything readers may see.
    if (!in_sync && f.log_end >= 0 && f.log_end >= high_watermark_ &&
        now - f.last_caught_up <= lag && may_join(id)) {
      isr.push_back(id);
    }
  }
  std::vector<int32_t> current = state_.isr;
  std::sort(isr.begin(), isr.end());
  std::sort(current.begin(), current.end());
  if (isr == current) return std::nullopt;
  // A member joins the watermark before it joins in ZooKeeper: a controller that sees the
  // written ISR may elect it at once (a preferred leader coming back), and it must then hold
  // every row this leader acknowledged. Leavers stay counted until the write lands.
  std::set_difference(isr.begin(), isr.end(), current.begin(), current.end(),
                      std::back_inserter(proposed_members_));
  BucketState wanted = state_;
  wanted.isr = isr;
  return wanted;
}

void Replica::IsrWritten(const BucketState& written) {
  std::lock_guard lock(mu_);
  if (role_ != Role::kLeader || written.leader_epoch != state_.leader_epoch) return;
  spdlog::info("{}[{}]: ISR {} -> {}", table_, bucket_, json(state_.isr).dump(),
               json(written.isr).dump());
  state_ = written;
  AdvanceHighWatermarkLocked();
  cv_.notify_all();
}

void Replica::FillStatus(BucketReplicaStatus* status) const {
  std::lock_guard lock(mu_);
  status->local = true;
  status->role = role_ == Role::kLeader ? "leader" : role_ == Role::kFollower ? "follower" : "none";
  status->log_end = log().next_offset();
  status->high_watermark = log().high_watermark();
  for (const auto& [id, f] : followers_) status->follower_log_ends[id] = f.log_end;
}

// --- Follower side ---

void Replica::FetchLoop(int32_t leader, int32_t epoch, std::string location) {
  const auto stop = fetcher_stop_;
  auto connected = client::Client::Connect(location);
  if (!connected.ok()) {
    spdlog::error("{}[{}]: cannot reach leader {} at {}: {}", table_, bucket_, leader, location,
                  connected.status().ToString());
    return;
  }
  std::unique_ptr<client::Client> client = std::move(connected).ValueOrDie();
  bool truncated = false;
  Status last_error;
  while (!stop->load()) {
    Status st = truncated ? FetchOnce(*client, epoch) : TruncateToLeader(*client, epoch);
    if (st.ok() && !truncated) {
      // Far behind (a new replica, a replaced disk): the snapshot beats fetching the changelog.
      if (auto restored = RestoreKvSnapshot(); !restored.ok()) {
        spdlog::warn("{}[{}]: not restored from a KV snapshot, fetching the changelog instead: {}",
                     table_, bucket_, restored.status().ToString());
      }
    }
    if (st.ok()) {
      truncated = true;
      last_error = Status::OK();
      continue;
    }
    if (stop->load()) break;
    if (st.ToString() != last_error.ToString()) {
      spdlog::warn("{}[{}]: fetching from leader {} (epoch {}): {}", table_, bucket_, leader, epoch,
                   st.ToString());
      last_error = st;
    }
    if (st.code() == StatusCode::kUnavailable && on_stale_metadata_) on_stale_metadata_();
    std::this_thread::sleep_for(kRetryBackoff);
  }
}

Status Replica::TruncateToLeader(client::Client& leader, int32_t epoch) {
  log::BucketLog& l = log();
  while (true) {
    const log::EpochEnd mine = l.LatestLeaderEpoch();
    if (mine.epoch < 0) return Status::OK();  // nothing written under any leader yet
    ASSIGN_OR_RAISE(std::string answer,
                    leader.DoAction("replica_epoch_end", json{{"table", table_},
                                                              {"bucket", bucket_},
                                                              {"epoch", mine.epoch},
                                                              {"leader_epoch", epoch}}
                                                             .dump()));
    json j = json::parse(answer, nullptr, false);
    if (j.is_discarded() || !j.contains("epoch") || !j.contains("end_offset")) {
      return Status::Invalid("the leader sent a bad replica_epoch_end answer: " + Quote(answer));
    }
    const log::EpochEnd theirs{j["epoch"].get<int32_t>(), j["end_offset"].get<int64_t>()};
    int64_t cut = std::min(l.next_offset(), theirs.end_offset);
    if (theirs.epoch < 0) {
      // The leader knows no epoch as old as ours (its changelog starts later, at a KV snapshot):
      // nothing to compare, so keep what our high watermark says is committed (Kafka's fallback).
      cut = std::max(std::min(l.next_offset(), l.high_watermark()), l.earliest_offset());
    }
    if (theirs.epoch >= 0 && theirs.epoch < mine.epoch) {
      // The leader never had our latest epoch: cut where our copy of its epoch ends too, then
      // compare again with our (now older) latest epoch (KIP-279).
      cut = std::min(cut, l.EndOffsetForEpoch(theirs.epoch).end_offset);
    }
    if (cut < l.next_offset()) {
      spdlog::warn("{}[{}]: truncating from {} to {} to match leader epoch {}", table_, bucket_,
                   l.next_offset(), cut, theirs.epoch);
      ASSIGN_OR_RAISE(int64_t end, l.TruncateTo(cut));
      (void)end;
    }
    if (theirs.epoch < 0 || theirs.epoch == mine.epoch ||
        l.LatestLeaderEpoch().epoch == mine.epoch) {
      return Status::OK();
    }
  }
}

Result<bool> Replica::RestoreKvSnapshot() {
  if (!latest_kv_snapshot_ || engine_table_->descriptor().primary_key.empty()) return false;
  ASSIGN_OR_RAISE(auto snapshot, latest_kv_snapshot_());
  if (!snapshot) return false;
  ASSIGN_OR_RAISE(bool restored, engine_table_->RestoreKvSnapshot(bucket_, *snapshot));
  if (restored) {
    std::lock_guard lock(mu_);
    high_watermark_ = log().high_watermark();
  }
  return restored;
}

Status Replica::FetchOnce(client::Client& leader, int32_t epoch) {
  log::BucketLog& l = log();
  ReplicaFetch fetch;
  fetch.table = table_;
  fetch.bucket = bucket_;
  // Under --flush fsync the log end reported to the leader (which acknowledges from it) is
  // fsynced: one fsync for the whole run the previous fetch brought.
  if (l.flush_policy() == log::FlushPolicy::kEveryAppend) {
    RETURN_NOT_OK(l.WaitDurable(l.next_offset()));
  }
  fetch.from = l.next_offset();
  fetch.log_start = l.log_start();
  fetch.leader_epoch = epoch;
  fetch.replica = options_.server_id;
  fetch.max_wait_ms = options_.replica_fetch_wait_ms;
  fetch.max_bytes = options_.replica_fetch_max_bytes;
  ASSIGN_OR_RAISE(auto stream,
                  leader.DoGetRaw(ReplicaFetchToJson(fetch), fetch.max_wait_ms + 30'000));
  {
    std::lock_guard lock(fetch_cancel_mu_);
    client::RawGetStream* raw = stream.get();
    cancel_fetch_ = [raw] { raw->Cancel(); };
  }
  struct ClearCancel {
    Replica* self;
    ~ClearCancel() {
      std::lock_guard lock(self->fetch_cancel_mu_);
      self->cancel_fetch_ = nullptr;
    }
  } clear{this};
  if (fetcher_stop_->load()) return Status::Cancelled("stopping");
  int64_t high_watermark = -1, log_start = 0;
  while (true) {
    auto next = stream->Next();
    if (!next.ok()) {
      const Status& st = next.status();
      const std::string& message = st.message();
      if (st.code() == StatusCode::kOutOfRange && message.find("log_start=") != std::string::npos) {
        const int64_t start = std::stoll(message.substr(message.find("log_start=") + 10));
        spdlog::warn("{}[{}]: the leader's log starts at {}, past ours; starting over there",
                     table_, bucket_, start);
        auto restored = RestoreKvSnapshot();
        if (!restored.ok()) {
          spdlog::warn("{}[{}]: not restored from a KV snapshot: {}", table_, bucket_,
                       restored.status().ToString());
        } else if (*restored && l.next_offset() >= start) {
          return Status::OK();
        }
        return l.ResetTo(start);
      }
      return st;
    }
    if (!next->has_value()) break;
    flight::FlightDataIn& data = **next;
    json meta = json::parse(data.app_metadata, nullptr, false);
    if (meta.is_discarded() || !meta.is_object()) {
      return Status::Invalid("the leader sent a fetch message without JSON app_metadata");
    }
    if (meta.contains("high_watermark")) {
      high_watermark = meta["high_watermark"].get<int64_t>();
      log_start = meta.value("log_start", int64_t{0});
      continue;
    }
    if (!data.data_header) return Status::Invalid("the leader sent a batch without metadata");
    log::ReplicaBatchInfo info;
    info.base_offset = meta.at("base_offset").get<int64_t>();
    info.info.row_count = meta.at("rows").get<int32_t>();
    info.info.min_timestamp_ms = meta.at("min_ts").get<int64_t>();
    info.info.max_timestamp_ms = meta.at("max_ts").get<int64_t>();
    info.info.schema_id = meta.at("schema_id").get<int32_t>();
    info.append_time_ms = meta.at("append_time").get<int64_t>();
    info.leader_epoch = meta.at("epoch").get<int32_t>();
    const ByteSpan metadata[1] = {
        ByteSpan(data.data_header->data(), static_cast<size_t>(data.data_header->size()))};
    std::vector<ByteSpan> body;
    if (data.data_body) {
      body.emplace_back(data.data_body->data(), static_cast<size_t>(data.data_body->size()));
    }
    auto appended = l.AppendReplica(info, metadata, body);
    if (!appended.ok()) return appended.status().WithContext("appending a fetched batch");
  }
  if (high_watermark >= 0) {
    l.SetHighWatermark(std::min(high_watermark, l.next_offset()));
    {
      std::lock_guard lock(mu_);
      high_watermark_ = l.high_watermark();
    }
    // A primary-key bucket's rows follow the committed changelog, warm for a failover.
    Status applied = engine_table_->ApplyReplicated(bucket_);
    if (applied.code() == StatusCode::kCorruption) {
      // Rows the changelog here cannot rebuild (its start passed them): a snapshot can.
      ASSIGN_OR_RAISE(bool restored, RestoreKvSnapshot());
      if (restored) applied = engine_table_->ApplyReplicated(bucket_);
    }
    RETURN_NOT_OK(applied.WithContext("applying fetched rows"));
    // The leader's log start (DeleteRecords), as far as this copy has the records.
    const int64_t start = std::min(log_start, l.visible_offset());
    if (start > l.log_start()) {
      RETURN_NOT_OK(l.DeleteBefore(start).WithContext("moving the log start"));
      (void)l.EnforceRetention();
    }
  }
  return Status::OK();
}

}  // namespace internal
}  // namespace oxbow::cluster
