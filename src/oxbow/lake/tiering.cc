#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "oxbow/common/parse.h"
#include "oxbow/lake/lake_scan_internal.h"
#include "oxbow/lake/tiering_internal.h"

namespace oxbow::lake {

namespace {

// Producers come first: on a busy machine the lake lags rather than the produce path.
void LowerThreadPriority(int nice, const char* what) {
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice) != 0) {
    spdlog::warn("lake: cannot lower the priority of the {}", what);
  }
}

// Rounds start every freshness/4: a row waits up to freshness/4 for its round to start, plus
// the round, whose length grows with the bytes a period brings (about 4 ms per MB).
std::chrono::milliseconds RoundPeriod(const LakeTable& state) {
  return std::chrono::milliseconds(std::max<int64_t>(1, state.freshness_ms / 4));
}

// Whether the last maintenance pass left the table or its changelog lake table a backlog.
bool CompactionBacklog(const LakeTable& state) {
  return state.compaction_backlog || (state.changelog && state.changelog->compaction_backlog);
}

// Runs `alter` holding the changelog lake table's lock, which retires when it succeeds.
Result<catalog::TableDescriptor> AlterRetiring(
    LakeTable& changelog, const std::function<Result<catalog::TableDescriptor>()>& alter)
    OXBOW_EXCLUDES(changelog.work) {
  MutexLock work(changelog.work);
  ASSIGN_OR_RAISE(auto altered, alter());
  changelog.dropped = true;
  return altered;
}

// The state of `table`'s changelog lake table, before its lake is opened or followed.
std::unique_ptr<LakeTable> ChangelogStateOf(const LakeTable& table) {
  auto changelog = std::make_unique<LakeTable>();
  changelog->descriptor = table.descriptor;
  changelog->descriptor.name += kChangelogSuffix;
  changelog->changelog_table = true;
  changelog->owner = table.owner;
  changelog->freshness_ms = table.freshness_ms;
  changelog->fresh_codec = table.fresh_codec;
  changelog->access = table.access;
  return changelog;
}

// Publishes `s`'s state; a stuck table is logged when its error changes, not every round.
void Report(LakeTable& s, const std::string& previous) OXBOW_REQUIRES(s.work) {
  const std::string error = s.Error();
  if (!error.empty() && error != previous) {
    spdlog::warn("lake: table '{}': {}", s.descriptor.name, error);
  }
  s.Publish(error);
}

// Fills in the defaults of the file system, the warehouse's absolute path and the catalog.
void ResolveDefaults(LakeOptions& options) {
  if (!options.fs) options.fs = PosixFileSystem::Default();
  if (options.warehouse.find("://") == std::string::npos) {
    options.warehouse = std::filesystem::absolute(options.warehouse).lexically_normal().string();
  }
  if (!options.catalog) {
    options.catalog = std::make_shared<iceberg::FileCatalog>(options.fs, options.warehouse);
  }
}

}  // namespace

Result<std::vector<int64_t>> HeldOffsets(const LakeOptions& given,
                                         const catalog::TableDescriptor& table) {
  LakeOptions options = given;
  ResolveDefaults(options);
  std::vector<int64_t> held(static_cast<size_t>(table.buckets), 0);
  if (!IsLakeEnabled(table)) return held;
  for (const bool changelog : {false, true}) {
    if (changelog && !HasChangelogLake(table)) continue;
    ASSIGN_OR_RAISE(LakeSnapshot lake,
                    LoadSnapshot({options.catalog, options.fs}, table, changelog));
    for (size_t b = 0; b < held.size(); ++b) held[b] = std::max(held[b], lake.tiered_offsets[b]);
  }
  return held;
}

Result<std::unique_ptr<TieringService>> TieringService::Start(engine::Engine* engine,
                                                              LakeOptions options) {
  if (options.tiering_threads < 1) return Status::Invalid("lake: tiering_threads must be >= 1");
  ResolveDefaults(options);
  RETURN_NOT_OK(options.fs->CreateDirs(options.warehouse));
  std::unique_ptr<TieringService> service(new TieringService(engine, std::move(options)));
  service->catalog_ = service->options_.catalog;
  TieringService* s = service.get();
  for (int i = 0; i < s->options_.tiering_threads; ++i) {
    s->round_workers_.emplace_back([s] { s->RoundWorker(); });
  }
  s->maintenance_thread_ = std::thread([s] { s->MaintenanceLoop(); });
  s->scheduler_ = std::thread([s] { s->ScheduleLoop(); });
  if (s->options_.scrub_interval_ms > 0 && s->options_.scrub_bytes_per_second > 0) {
    s->scrub_thread_ = std::thread([s] { s->ScrubLoop(); });
  }
  return service;
}

TieringService::~TieringService() { Stop(); }

void TieringService::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.NotifyAll();
  due_cv_.NotifyAll();
  if (scheduler_.joinable()) scheduler_.join();
  for (auto& worker : round_workers_) {
    if (worker.joinable()) worker.join();
  }
  if (maintenance_thread_.joinable()) maintenance_thread_.join();
  if (scrub_thread_.joinable()) scrub_thread_.join();
}

std::vector<std::shared_ptr<LakeTable>> TieringService::TieredTables() {
  std::vector<std::shared_ptr<LakeTable>> out;
  for (const auto& descriptor : engine_->ListTables()) {
    auto found = StateFor(descriptor);  // fails only for a table dropped meanwhile
    if (!found.ok()) continue;
    // enabled and init_error are set before the state is shared and never change.
    if ((*found)->enabled && (*found)->init_error.ok()) out.push_back(std::move(*found));
  }
  return out;
}

void TieringService::ScheduleLoop() {
  MutexLock lock(mu_);
  while (!stopping_) {
    lock.Unlock();
    const auto now = Clock::now();
    auto tables = TieredTables();
    lock.Lock();
    for (auto& state : tables) {
      {
        MutexLock schedule(state->schedule_mu);
        if (state->queued || now < state->next_round) continue;
        state->next_round = now + RoundPeriod(*state);
        state->queued = true;
      }
      due_.push_back(std::move(state));
      due_cv_.NotifyOne();
    }
    if (!stopping_) wake_.WaitFor(mu_, std::chrono::milliseconds(20));
  }
}

void TieringService::RoundWorker() {
  if (options_.round_nice != 0) LowerThreadPriority(options_.round_nice, "tiering threads");
  MutexLock lock(mu_);
  while (true) {
    while (!stopping_ && due_.empty()) due_cv_.Wait(mu_);
    if (stopping_) return;
    std::shared_ptr<LakeTable> state = std::move(due_.front());
    due_.pop_front();
    lock.Unlock();
    (void)Round(*state);  // errors are logged and published per table
    {
      MutexLock schedule(state->schedule_mu);
      state->queued = false;
    }
    lock.Lock();
  }
}

void TieringService::MaintenanceLoop() {
  if (options_.maintenance_nice != 0) {
    LowerThreadPriority(options_.maintenance_nice, "maintenance thread");
  }
  const auto interval = std::chrono::milliseconds(options_.maintenance_interval_ms);
  MutexLock lock(mu_);
  while (!stopping_) {
    lock.Unlock();
    for (const auto& state : TieredTables()) {
      const auto now = Clock::now();
      if (state->next_maintenance == Clock::time_point{}) {
        state->next_maintenance = now + interval;  // a table's first maintenance waits one interval
        continue;
      }
      // A backlog of small files gets its next step now (at this thread's low priority), so
      // compaction keeps up with a busy table; the other tables' passes come in between.
      const bool follow_up = now < state->next_maintenance && CompactionBacklog(*state);
      if (now < state->next_maintenance && !follow_up) continue;
      if (!follow_up) state->next_maintenance = now + interval;
      (void)Maintenance(*state, follow_up);  // errors are logged and published per table
    }
    lock.Lock();
    if (!stopping_) wake_.WaitFor(mu_, std::chrono::milliseconds(100));
  }
}

Status TieringService::RunOnce() {
  Status first;
  for (const auto& state : TieredTables()) {
    Status round = Round(*state);
    Status maintenance = Maintenance(*state, false);
    while (maintenance.ok() && CompactionBacklog(*state)) maintenance = Maintenance(*state, true);
    if (first.ok()) first = round.ok() ? maintenance : round;
  }
  return first;
}

std::shared_ptr<LakeTable> TieringService::Find(const catalog::TableDescriptor& table) {
  const bool owner = Owns(table);
  MutexLock lock(mu_);
  auto it = tables_.find(table.name);
  if (it != tables_.end() && it->second->descriptor.table_id == table.table_id &&
      it->second->descriptor.schema_id >= table.schema_id && it->second->owner == owner) {
    return it->second;
  }
  return nullptr;
}

bool TieringService::Owns(const catalog::TableDescriptor& table) const {
  return !options_.owns_tiering || options_.owns_tiering(table);
}

Result<std::shared_ptr<LakeTable>> TieringService::StateFor(const catalog::TableDescriptor& given) {
  MutexLock creating(init_mu_);  // one thread creates a table's state
  if (auto found = Find(given)) return found;
  // A new state is built from the engine's descriptor now: `given` may have been read before an
  // alter that AlterTable (holding init_mu_ while the engine changes) applied since, and a state
  // built from it would keep the old properties (a property change keeps the schema version).
  auto current = engine_->DescribeTable(given.name);
  if (!current.ok() || current->table.table_id != given.table_id) {
    return Status::NotFound("table '" + given.name + "' was dropped");
  }
  const catalog::TableDescriptor& descriptor = current->table;
  const bool owner = Owns(descriptor);
  std::shared_ptr<LakeTable> stale;
  {
    MutexLock lock(mu_);
    if (dropped_ids_.count(descriptor.table_id)) {
      return Status::NotFound("table '" + descriptor.name + "' was dropped");
    }
    auto it = tables_.find(descriptor.name);
    if (it != tables_.end() && it->second->descriptor.table_id == descriptor.table_id &&
        it->second->descriptor.schema_id >= descriptor.schema_id && it->second->owner == owner) {
      return it->second;
    }
    if (it != tables_.end() && it->second->descriptor.table_id == descriptor.table_id) {
      // Built from a descriptor read before an alter, or before this server became or stopped
      // being the table's tiering owner (a new owner starts from what the lake holds).
      stale = it->second;
    }
  }
  if (stale) {
    MutexLock work(stale->work);
    stale->dropped = true;
    if (stale->changelog) {
      MutexLock changelog_work(stale->changelog->work);
      stale->changelog->dropped = true;
    }
  }
  auto state = std::make_shared<LakeTable>();
  state->descriptor = descriptor;
  state->enabled = IsLakeEnabled(descriptor);
  state->owner = owner;
  state->freshness_ms = options_.freshness_ms;
  state->access = {catalog_, options_.fs};
  auto init = [&]() -> Status {
    if (!state->enabled) return Status::OK();
    ASSIGN_OR_RAISE(LakeForm form, MakeLakeForm(descriptor));
    state->schema = std::move(form.schema);
    state->spec = std::move(form.spec);
    if (form.freshness_ms) state->freshness_ms = *form.freshness_ms;
    state->delete_ratio = form.delete_ratio;
    state->fresh_codec = form.fresh_codec.value_or(options_.fresh_codec);
    const auto dot = descriptor.name.find('.');
    const iceberg::TableIdentifier lake_id{descriptor.name.substr(0, dot),
                                           descriptor.name.substr(dot + 1)};
    if (!owner) return InitFollower(*state, lake_id, form.changelog_schema.has_value());
    ASSIGN_OR_RAISE(const bool created, OpenLakeTable(*state, lake_id));
    // A new table has nothing to tier yet: its first round comes a period later, like every
    // later one (a lake loaded at startup starts at once, to catch up).
    if (created) {
      MutexLock schedule(state->schedule_mu);
      state->next_round = Clock::now() + RoundPeriod(*state);
    }
    if (form.changelog_schema) {
      auto changelog = ChangelogStateOf(*state);
      changelog->schema = std::move(*form.changelog_schema);
      changelog->spec = std::move(form.changelog_spec);
      RETURN_NOT_OK(
          OpenLakeTable(*changelog, {lake_id.namespace_name, lake_id.name + kChangelogSuffix})
              .status());
      state->changelog = std::move(changelog);
    }
    if (!descriptor.primary_key.empty()) {
      ASSIGN_OR_RAISE(state->index, LoadKeyIndex(options_.fs.get(), *state));
    }
    return SetRetentionFloors(engine_, descriptor.name, state->FloorOffsets());
  };
  state->init_error = init();
  if (!state->init_error.ok()) {
    spdlog::error("lake: table '{}' is not tiered: {}", descriptor.name,
                  state->init_error.message());
  }
  {
    MutexLock work(state->work);
    state->Publish(state->init_error.message());
  }
  MutexLock lock(mu_);
  tables_[descriptor.name] = state;
  return state;
}

Status TieringService::InitFollower(LakeTable& state, const iceberg::TableIdentifier& lake_id,
                                    bool with_changelog) {
  state.lake_id = lake_id;
  state.location = catalog_->TableLocation(lake_id);
  state.tiered.assign(static_cast<size_t>(state.descriptor.buckets), 0);
  state.start.assign(state.tiered.size(), 0);
  if (with_changelog) {
    auto changelog = ChangelogStateOf(state);
    changelog->lake_id = {lake_id.namespace_name, lake_id.name + kChangelogSuffix};
    changelog->location = catalog_->TableLocation(changelog->lake_id);
    changelog->tiered = state.tiered;
    changelog->start = state.start;
    state.changelog = std::move(changelog);
  }
  // Nothing is loaded here: a follower's errors are its rounds', retried every round.
  return Status::OK();
}

Status TieringService::Round(LakeTable& s) {
  const auto asked = Clock::now();
  MutexLock work(s.work);
  const int64_t waited = Millis(Clock::now() - asked);
  if (waited >= 100) {
    spdlog::info("lake: a round of '{}' waited {} ms for its table", s.descriptor.name, waited);
  }
  HoldTimer held(s, "a round");
  if (s.dropped) return Status::OK();
  {
    // A state built from a descriptor read before an alter: the next StateFor replaces it.
    auto current = engine_->DescribeTable(s.descriptor.name);
    if (current.ok() && current->table.schema_id != s.descriptor.schema_id) return Status::OK();
  }
  const std::string previous = s.Error();
  if (!s.owner) {
    Status st = FollowRound(engine_, options_, *catalog_, s);
    s.round_error = st.ok() ? "" : "following the lake: " + st.message();
    Report(s, previous);
    return st;
  }
  const int64_t version = s.table->version();
  const auto started = Clock::now();
  Status st = s.index ? TierPrimaryKeyRound(engine_, options_, s) : TierRound(engine_, options_, s);
  if (!st.ok() && engine_->DescribeTable(s.descriptor.name).status().IsNotFound()) {
    return Status::OK();  // dropped meanwhile
  }
  const LakeObserver& observer = options_.observer;
  const bool committed = s.table->version() != version;
  if ((committed || !st.ok()) && observer.on_round) {
    observer.on_round(s.descriptor.name,
                      std::chrono::duration<double>(Clock::now() - started).count(), st.ok());
  }
  if (committed && observer.on_commit) observer.on_commit(s.descriptor.name, "append");
  if (!st.ok()) s.NoteFailedCommit();
  s.round_error = st.ok() ? "" : "tiering: " + st.message();
  Report(s, previous);
  return st;
}

Status TieringService::Maintenance(LakeTable& s, bool follow_up) {
  if (!s.owner) return Status::OK();  // the owner maintains the lake
  MutexLock maintaining(s.maintaining);
  Status swept;
  // In a cluster another server may have become the owner and be committing right now: a sweep
  // here, from this server's view of the lake, could remove its new files. Leftovers of failed
  // commits wait for the sweep of the next owner's takeover (docs/cluster.md#the-lake).
  if (!options_.owns_tiering) {
    MutexLock work(s.work);
    swept = RemoveFailedCommitFiles(*catalog_, options_.fs.get(), s);
    if (s.changelog) {
      MutexLock changelog_work(s.changelog->work);
      Status changelog = RemoveFailedCommitFiles(*catalog_, options_.fs.get(), *s.changelog);
      if (swept.ok()) swept = changelog;
    }
  }
  Status st = Maintain(options_, s, follow_up);
  if (st.ok() && !swept.ok()) st = swept.WithContext("removing files of failed commits");
  MutexLock work(s.work);
  if (s.dropped) return Status::OK();
  if (!st.ok()) s.NoteFailedCommit();
  if (st.code() == StatusCode::kAlreadyExists || s.table->commit_outcome_unknown()) {
    // Another writer committed (a new tiering owner), or this commit may have landed: the next
    // round starts from what the lake holds.
    s.offsets_stale = true;
    if (s.index) s.index_stale = true;
  }
  const std::string previous = s.Error();
  s.maintenance_error = st.ok() ? "" : "maintenance: " + st.message();
  Report(s, previous);
  return st;
}

Result<LakeTableStatus> TieringService::Describe(const std::string& table) {
  ASSIGN_OR_RAISE(auto status, engine_->DescribeTable(table));  // the log's in-memory offsets
  std::shared_ptr<LakeTable> state = Find(status.table);
  if (!state) {
    ASSIGN_OR_RAISE(state, StateFor(status.table));  // a table tiering has not met yet
  }
  const auto [published, caught_up_ms] = state->Published();
  LakeTableStatus out = *published;
  if (!out.enabled) return out;
  for (const auto& b : status.buckets) {
    // A lake that could not be set up has tiered nothing: all of the log is lag. With a
    // changelog lake table, the lag is the larger of the two tables'.
    const size_t i = static_cast<size_t>(b.bucket);
    int64_t tiered = i < out.tiered_offsets.size() ? out.tiered_offsets[i] : b.earliest_offset;
    if (out.changelog) {
      tiered =
          std::min(tiered, i < out.changelog_tiered_offsets.size() ? out.changelog_tiered_offsets[i]
                                                                   : b.earliest_offset);
    }
    out.lag_rows += std::max<int64_t>(0, b.next_offset - tiered);
  }
  out.lag_ms = out.lag_rows == 0 ? 0 : std::max<int64_t>(0, WallMs() - caught_up_ms);
  return out;
}

Result<catalog::TableDescriptor> TieringService::AlterTable(
    const std::string& name, const std::function<Result<catalog::TableDescriptor>()>& alter) {
  MutexLock creating(init_mu_);  // no state is being created meanwhile
  std::shared_ptr<LakeTable> state;
  {
    MutexLock lock(mu_);
    auto it = tables_.find(name);
    if (it != tables_.end()) state = it->second;
  }
  if (!state) return alter();
  // Waits for a round in progress; none starts until the engine's change is done.
  MutexLock work(state->work);
  ASSIGN_OR_RAISE(auto altered,
                  state->changelog ? AlterRetiring(*state->changelog, alter) : alter());
  // The old state retires; the next StateFor builds the new one from the altered descriptor
  // (freshness, partitioning, enabled, columns), loading the same lake table.
  state->dropped = true;
  MutexLock lock(mu_);
  auto it = tables_.find(name);
  if (it != tables_.end() && it->second == state) tables_.erase(it);
  return altered;
}

Status TieringService::CheckPartitionSources(const catalog::TableDescriptor& before,
                                             const catalog::TableDescriptor& after) {
  const auto dot = before.name.find('.');
  auto loaded = iceberg::IcebergTable::Load(
      options_.fs, catalog_, {before.name.substr(0, dot), before.name.substr(dot + 1)});
  if (loaded.status().IsNotFound()) return Status::OK();
  ASSIGN_OR_RAISE(auto lake, std::move(loaded));
  if (lake->metadata().Property(internal::kTableIdProperty, "") !=
      std::to_string(before.table_id)) {
    return Status::OK();  // a lake left behind by a dropped table of the same name
  }
  auto ids = internal::LakeFieldIds(before, lake->schema());
  if (!ids.ok()) return Status::OK();  // tiering reports a lake that is no version of the table
  for (size_t i = 0; i < ids->size(); ++i) {
    const std::optional<int32_t> lake_id = (*ids)[i];
    if (!lake_id || std::find(after.field_ids.begin(), after.field_ids.end(),
                              before.field_ids[i]) != after.field_ids.end()) {
      continue;
    }
    for (const auto& spec : lake->metadata().partition_specs) {
      for (const auto& field : spec.fields()) {
        if (field.source_id != *lake_id) continue;
        return Status::Invalid(
            "column " + Quote(before.schema->field(static_cast<int>(i)).name) +
            " cannot be dropped: partition field " + Quote(field.name) + " of partition spec " +
            std::to_string(spec.spec_id()) +
            " of the lake uses it (Iceberg readers type the partition fields of every spec, "
            "earlier ones too, from the current schema)");
      }
    }
  }
  return Status::OK();
}

Status TieringService::DropTable(const catalog::TableDescriptor& table) {
  MutexLock creating(init_mu_);  // no state is being created meanwhile
  std::shared_ptr<LakeTable> state;
  {
    MutexLock lock(mu_);
    dropped_ids_.insert(table.table_id);
    auto it = tables_.find(table.name);
    if (it != tables_.end() && it->second->descriptor.table_id == table.table_id) {
      state = it->second;
      tables_.erase(it);
    }
  }
  if (!state) return Status::OK();
  // Waits for a maintenance pass in progress (compaction writes files without holding work),
  // then for a round.
  MutexLock maintaining(state->maintaining);
  MutexLock work(state->work);
  state->dropped = true;
  if (state->changelog) {
    MutexLock changelog_work(state->changelog->work);
    state->changelog->dropped = true;
    RETURN_NOT_OK(options_.fs->RemoveAll(state->changelog->location)
                      .WithContext("cannot remove changelog lake table"));
  }
  if (state->location.empty()) return Status::OK();
  return options_.fs->RemoveAll(state->location).WithContext("cannot remove lake table");
}

}  // namespace oxbow::lake
