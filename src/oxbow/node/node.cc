#include "oxbow/node/node.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>

#include "oxbow/node/group_offsets.h"
#include "oxbow/node/lake_pointers_internal.h"
#include "oxbow/node/routing_internal.h"

namespace oxbow::node {

namespace {

// Fluss's kv.snapshot.interval.
constexpr int64_t kKvSnapshotIntervalMs = int64_t{10} * 60 * 1000;

// Where an embedded server copies what only its data dir knows
// (docs/operations.md#recovering-a-lost-data-dir).
std::string CopiesDir(const std::string& warehouse) { return JoinPath(warehouse, "_catalog"); }
std::string LakePointerCopiesDir(const std::string& warehouse) {
  return JoinPath(CopiesDir(warehouse), "lake");
}

// Puts the lake's files on S3, after checking that the bucket answers to the credentials.
Status UseS3Warehouse(const storage::S3Options& s3, lake::LakeOptions* lake,
                      std::map<std::string, std::string>* reader_config) {
  auto fs = storage::S3FileSystem::Make(s3);
  if (!fs.ok()) return fs.status().WithContext("warehouse " + lake->warehouse);
  RETURN_NOT_OK((*fs)->CheckAccess(lake->warehouse));
  lake->fs = *fs;
  const std::string endpoint =
      s3.endpoint.empty() ? "https://s3." + s3.region + ".amazonaws.com" : s3.endpoint;
  // s3.region is pyiceberg's name for the region, client.region Iceberg Java's.
  *reader_config = {{"s3.endpoint", endpoint},
                    {"s3.region", s3.region},
                    {"client.region", s3.region},
                    {"s3.path-style-access", s3.path_style ? "true" : "false"}};
  return Status::OK();
}

// The warehouse as the lake uses it: a directory as given, "file:///dir" as /dir, "s3://"
// as is; any other scheme is refused, since no other is served.
Result<std::string> ResolveWarehouse(const std::string& warehouse) {
  const size_t colon = warehouse.find("://");
  const std::string_view scheme = std::string_view(warehouse).substr(0, colon);
  const bool is_scheme =
      colon != std::string::npos && !scheme.empty() &&
      std::isalpha(static_cast<unsigned char>(scheme[0])) &&
      std::all_of(scheme.begin(), scheme.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
      });
  if (!is_scheme || scheme == "s3") return warehouse;
  if (scheme == "file") {
    const std::string path = warehouse.substr(colon + 3);
    if (path.starts_with("/")) return path;
    return Status::Invalid("warehouse " + Quote(warehouse) +
                           ": a file URI names an absolute path on this host, file:///dir");
  }
  return Status::Invalid("warehouse " + Quote(warehouse) + ": scheme " + Quote(scheme) +
                         " is not served (a directory, file:///dir or s3://bucket/prefix; "
                         "schemes are lower case, and S3 is s3://, not s3a://)");
}

// Copies the pointer of every lake table (those of a data dir older than the copies, or whose
// last copy failed before a restart); a failure is logged, and the next commit copies again.
void CopyLakePointers(const engine::Engine& engine, internal::CopiedLakePointers& pointers) {
  for (const catalog::TableDescriptor& table : engine.ListTables()) {
    if (!lake::IsLakeEnabled(table)) continue;
    const auto dot = table.name.find('.');
    const iceberg::TableIdentifier id{table.name.substr(0, dot), table.name.substr(dot + 1)};
    for (const auto& lake_id :
         {id, iceberg::TableIdentifier{id.namespace_name, id.name + lake::kChangelogSuffix}}) {
      if (Status st = pointers.Copy(lake_id); !st.ok()) {
        spdlog::warn("lake: copying the pointer of {} to the warehouse: {}", lake_id.ToString(),
                     st.message());
      }
    }
  }
}

// Rebuilds the empty data dir from the warehouse (engine::RecoverDataDir), the lake pointers
// first when `pointers` keeps them, and logs what came back and what was left out.
Status RecoverFromWarehouse(const NodeOptions& options, internal::CopiedLakePointers* pointers) {
  engine::RecoveryLake lake;
  if (pointers) {
    lake.restore_pointers = [&] {
      ASSIGN_OR_RAISE(int restored, internal::CopiedLakePointers::Restore(
                                        *options.lake.fs,
                                        LakePointerCopiesDir(options.lake.warehouse), *pointers));
      spdlog::info("recovery: {} lake table pointers restored", restored);
      return Status::OK();
    };
  }
  lake.held_offsets = [&](const catalog::TableDescriptor& t) {
    return lake::HeldOffsets(options.lake, t);
  };
  ASSIGN_OR_RAISE(engine::Recovery recovery, engine::RecoverDataDir(options.engine, lake));
  for (const auto& table : recovery.tables) {
    std::string offsets;
    for (int64_t offset : table.next_offsets) {
      offsets += (offsets.empty() ? "" : ", ") + std::to_string(offset);
    }
    spdlog::info("recovery: table '{}' rebuilt, its buckets' logs going on at offsets {}",
                 table.name, offsets);
  }
  for (const std::string& why : recovery.left_out) spdlog::error("recovery: left out {}", why);
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<Node>> Node::Open(NodeOptions options) {
  std::unique_ptr<Node> node(new Node());
  // The lake must see every row before retention deletes it, and refuses what it cannot hold.
  options.engine.holds_retention = lake::IsLakeEnabled;
  options.engine.make_batch_check = lake::MakeBatchCheck;
  options.engine.log.on_fsync = [m = node->metrics_.get()](double s) { m->ObserveFsync(s); };
  const std::string data_dir = options.engine.data_dir;
  ASSIGN_OR_RAISE(options.lake.warehouse, ResolveWarehouse(options.lake.warehouse));
  const bool s3_warehouse = storage::IsS3Uri(options.lake.warehouse) && !options.lake.fs;
  if (s3_warehouse) {
    RETURN_NOT_OK(UseS3Warehouse(options.s3, &options.lake, &node->lake_reader_config_));
  }
  // The cold log lives in the warehouse too (docs/storage.md#cold-log).
  options.engine.cold_fs = options.lake.fs ? options.lake.fs : PosixFileSystem::Default();
  options.engine.cold_root = JoinPath(options.lake.warehouse, "_log");
  options.engine.replicated = !options.cluster.zookeeper.empty();
  // KV snapshots go to the warehouse; by default every 10 min in cluster mode, where a replica
  // restores them (docs/cluster.md#kv-snapshots-in-object-storage), never in embedded mode.
  if (options.engine.kv_snapshot_interval_ms < 0) {
    options.engine.kv_snapshot_interval_ms = options.engine.replicated ? kKvSnapshotIntervalMs : 0;
  }
  options.engine.kv_snapshot_fs = options.engine.cold_fs;
  options.engine.kv_snapshot_root = JoinPath(options.lake.warehouse, "_kv");
  if (options.engine.replicated) {
    // Each bucket's leader uploads and records its snapshots; the cluster joins after the
    // engine opens, so until then nobody does.
    options.engine.kv_snapshot_wanted = [n = node.get()](const catalog::TableDescriptor& t,
                                                         int32_t bucket) {
      cluster::Cluster* cluster = n->joined_cluster_.load();
      return cluster && cluster->CheckLeader(t.name, bucket).ok();
    };
    options.engine.on_kv_snapshot = [n = node.get()](const catalog::TableDescriptor& t,
                                                     int32_t bucket,
                                                     const engine::KvSnapshotRef& snapshot) {
      cluster::Cluster* cluster = n->joined_cluster_.load();
      if (!cluster) return;
      if (Status st = cluster->RecordKvSnapshot(t.name, bucket, snapshot); !st.ok()) {
        spdlog::warn("recording the KV snapshot of {}[{}]: {}", t.name, bucket, st.message());
      }
    };
  }
  std::shared_ptr<internal::CopiedLakePointers> copied_pointers;
  if (!options.engine.replicated) {
    // What the data dir alone knows is copied to the warehouse, so that a lost data dir can be
    // rebuilt from it (docs/operations.md#recovering-a-lost-data-dir).
    options.engine.catalog_copy = {options.engine.cold_fs,
                                   JoinPath(CopiesDir(options.lake.warehouse), "catalog.json")};
    if (s3_warehouse) {
      // An object store has no rename: each table's metadata pointer lives in the data dir
      // (docs/storage.md, "Commits without rename"), copied to the warehouse.
      copied_pointers = std::make_shared<internal::CopiedLakePointers>(
          std::make_shared<iceberg::LocalPointerStore>(PosixFileSystem::Default(),
                                                       JoinPath(data_dir, "lake-catalog")),
          options.lake.fs, LakePointerCopiesDir(options.lake.warehouse));
      options.lake.catalog = std::make_shared<iceberg::PointerCatalog>(
          options.lake.fs, options.lake.warehouse, copied_pointers);
    }
  } else if (options.recover_from_warehouse) {
    return Status::Invalid(
        "--recover-from-warehouse rebuilds an embedded server's data dir; a cluster's replicas "
        "rebuild themselves from their peers and the KV snapshots");
  }
  if (options.recover_from_warehouse) {
    RETURN_NOT_OK(RecoverFromWarehouse(options, copied_pointers.get()));
  }
  if (options.engine.replicated) {
    // One server tiers each table, the leader of its bucket 0; the lake pointers live in
    // ZooKeeper, where only it may swap them (docs/cluster.md#the-lake).
    options.lake.catalog = std::make_shared<iceberg::PointerCatalog>(
        options.lake.fs ? options.lake.fs : PosixFileSystem::Default(), options.lake.warehouse,
        std::make_shared<internal::ClusterLakePointers>(node->joined_cluster_));
    options.lake.owns_tiering = [n = node.get()](const catalog::TableDescriptor& t) {
      cluster::Cluster* cluster = n->joined_cluster_.load();
      return cluster && cluster->CheckLeader(t.name, 0).ok();
    };
    options.lake.holds_bucket = [n = node.get()](const std::string& table, int32_t bucket) {
      cluster::Cluster* cluster = n->joined_cluster_.load();
      return cluster && cluster->HoldsReplica(table, bucket);
    };
    options.lake.read_remote_bucket = [n = node.get()](
                                          const std::string& table, int32_t bucket,
                                          int64_t from) -> Result<lake::RemoteBucketRead> {
      cluster::Cluster* cluster = n->joined_cluster_.load();
      if (!cluster) return Status::Unavailable("this server has not joined its cluster yet");
      ASSIGN_OR_RAISE(auto runtime, n->engine_->GetTable(table));
      return internal::ReadBucketOnLeader({cluster, n->peers_.get(), runtime}, bucket, from);
    };
  }
  ASSIGN_OR_RAISE(node->engine_, engine::Engine::Open(std::move(options.engine)));
  if (copied_pointers) CopyLakePointers(*node->engine_, *copied_pointers);
  metrics::Metrics* m = node->metrics_.get();
  options.lake.observer.on_round = [m](const std::string& t, double s, bool ok) {
    m->ObserveLakeRound(t, s, ok);
  };
  options.lake.observer.on_compaction = [m](const std::string& t, double s, bool ok) {
    m->ObserveCompaction(t, s, ok);
  };
  options.lake.observer.on_commit = [m](const std::string& t, const char* kind) {
    m->AddLakeCommit(t, kind);
  };
  auto tiering = lake::TieringService::Start(node->engine_.get(), std::move(options.lake));
  if (!tiering.ok()) {
    (void)node->engine_->Close();
    return tiering.status();
  }
  node->tiering_ = std::move(tiering).ValueOrDie();
  if (!options.client_state_dir.empty()) {
    auto offsets =
        clientstate::OffsetStore::Open(PosixFileSystem::Default(), options.client_state_dir);
    auto producers = offsets.ok() ? clientstate::ProducerStates::Open(node->engine_.get(),
                                                                      options.client_state_dir,
                                                                      options.may_hold_producers)
                                  : offsets.status();
    if (!producers.ok()) {
      (void)node->Close();
      return producers.status();
    }
    node->offsets_ = std::move(offsets).ValueOrDie();
    node->producers_ = std::move(producers).ValueOrDie();
    node->client_state_dir_ = options.client_state_dir;
  }
  if (!options.cluster.zookeeper.empty()) {
    // A new leader rebuilds its buckets' idempotent producers from the log before taking puts.
    clientstate::ProducerStates* producers = node->producers_.get();
    engine::Engine* engine = node->engine_.get();
    options.cluster.on_leadership = [producers, engine, may_hold = options.may_hold_producers](
                                        const std::string& table, int32_t bucket) {
      auto runtime = engine->GetTable(table);
      if (!producers || !may_hold || !runtime.ok() || !may_hold((*runtime)->descriptor())) return;
      if (Status st = producers->RebuildBucket(table, bucket); !st.ok()) {
        spdlog::warn("rebuilding the idempotent producers of {}[{}]: {}", table, bucket,
                     st.message());
      }
    };
    options.cluster.apply_alter =
        [n = node.get()](const std::string& table,
                         const std::function<Result<catalog::TableDescriptor>()>& alter) {
          return n->tiering_->AlterTable(table, alter);
        };
    auto cluster = cluster::Cluster::Start(options.cluster, node->engine_.get());
    if (!cluster.ok()) {
      (void)node->Close();
      return cluster.status().WithContext("joining the cluster");
    }
    node->cluster_ = std::move(cluster).ValueOrDie();
    node->peers_ = std::make_unique<internal::Peers>();
    node->joined_cluster_.store(node->cluster_.get());
    if (node->offsets_) {
      // Groups' offsets live in a replicated table (docs/cluster.md#consumer-groups).
      node->offsets_ = std::make_unique<ReplicatedOffsetStore>(
          node.get(), node->engine_.get(), node->cluster_.get(), options.table_for_topic);
    }
  }
  return node;
}

Node::~Node() { (void)Close(); }

Result<catalog::TableDescriptor> Node::CreateTable(const catalog::CreateTableRequest& request) {
  RETURN_NOT_OK(CheckNotReserved(request.table.name));
  RETURN_NOT_OK(lake::CheckTableIsTierable(request.table));
  if (cluster_) {
    // In a cluster a log table's lake is opt-in, as in Fluss: it needs a warehouse every server
    // shares (docs/cluster.md#the-lake).
    catalog::CreateTableRequest cluster_request = request;
    cluster_request.table.properties.try_emplace(std::string(lake::kEnabledProperty), "false");
    return cluster_->CreateTable(cluster_request);
  }
  return engine_->CreateTable(request);
}

Status Node::DropTable(const std::string& name) {
  RETURN_NOT_OK(CheckNotReserved(name));
  ASSIGN_OR_RAISE(auto table, engine_->DescribeTable(name));
  RETURN_NOT_OK(cluster_ ? cluster_->DropTable(name) : engine_->DropTable(name));
  metrics_->ForgetTable(name);
  return tiering_->DropTable(table.table);
}

Result<catalog::TableDescriptor> Node::AlterTable(const catalog::AlterTableRequest& request) {
  RETURN_NOT_OK(CheckNotReserved(request.table));
  ASSIGN_OR_RAISE(auto status, engine_->DescribeTable(request.table));
  const catalog::TableDescriptor& before = status.table;
  ASSIGN_OR_RAISE(auto after, catalog::ApplyAlter(before, request.changes));
  RETURN_NOT_OK(lake::CheckLakeAlter(before, after, request.changes));
  RETURN_NOT_OK(lake::CheckTableIsTierable(after));
  RETURN_NOT_OK(tiering_->CheckPartitionSources(before, after));
  if (cluster_) return cluster_->AlterTable(before, after);
  return tiering_->AlterTable(before.name, [&] { return engine_->AlterTable(before, after); });
}

Result<catalog::TableDescriptor> Node::AddBuckets(const std::string& table, int32_t buckets) {
  RETURN_NOT_OK(CheckNotReserved(table));
  ASSIGN_OR_RAISE(auto status, engine_->DescribeTable(table));
  const catalog::TableDescriptor& before = status.table;
  if (!before.primary_key.empty() || !before.bucket_key.empty()) {
    return Status::Invalid("table " + Quote(table) +
                           " places each row in the bucket of its key's hash modulo the bucket "
                           "count: more buckets would move its keys");
  }
  if (buckets <= before.buckets) {
    return Status::Invalid("table " + Quote(table) + " has " + std::to_string(before.buckets) +
                           " buckets: the new count must be larger");
  }
  catalog::TableDescriptor after = before;
  after.buckets = buckets;
  if (cluster_) return cluster_->AlterTable(before, after);
  return tiering_->AlterTable(before.name, [&] { return engine_->AlterTable(before, after); });
}

std::vector<catalog::TableDescriptor> Node::ListTables() const { return engine_->ListTables(); }

Result<TableHandle> Node::GetTable(const std::string& name) const {
  auto table = engine_->GetTable(name);
  if (!table.ok() && cluster_ && table.status().code() == StatusCode::kNotFound) {
    // Created on another server a moment ago: mirror ZooKeeper now rather than at the next pass.
    RETURN_NOT_OK(cluster_->Refresh());
    table = engine_->GetTable(name);
  }
  if (!table.ok()) return table.status();
  return TableHandle(engine_.get(), tiering_.get(), cluster_.get(), peers_.get(),
                     std::move(table).ValueOrDie());
}

Result<TableDescription> Node::DescribeTable(const std::string& name) const {
  ASSIGN_OR_RAISE(const TableHandle handle, GetTable(name));
  TableDescription description;
  description.table = handle.EngineStatus();
  ASSIGN_OR_RAISE(description.lake, handle.LakeStatus());
  return description;
}

namespace {

// Cluster mode: the buckets this server leads (under-replicated ones, followers' lag), what it
// replicates, and its elections and ISR changes.
void AddClusterSamples(const cluster::Cluster& cluster, std::vector<metrics::Sample>* samples) {
  int64_t under_replicated = 0;
  int64_t offline = 0;
  for (const auto& b : cluster.BucketStatuses()) {
    if (b.state.leader < 0) ++offline;
    if (b.role != "leader") continue;
    const std::vector<std::pair<std::string, std::string>> labels = {
        {"table", b.table}, {"bucket", std::to_string(b.bucket)}};
    if (b.state.isr.size() < b.replicas.size()) ++under_replicated;
    samples->push_back({"oxbow_cluster_isr_size", "In-sync replicas of a bucket this server leads",
                        false, labels, static_cast<double>(b.state.isr.size())});
    samples->push_back({"oxbow_cluster_high_watermark",
                        "High watermark of a bucket this server leads", false, labels,
                        static_cast<double>(b.high_watermark)});
    for (const auto& [follower, end] : b.follower_log_ends) {
      auto follower_labels = labels;
      follower_labels.push_back({"follower", std::to_string(follower)});
      samples->push_back({"oxbow_cluster_replica_lag_rows",
                          "Rows a follower's last fetch was behind this leader's log end (-1: "
                          "not fetched since this server became leader)",
                          false, follower_labels,
                          end < 0 ? -1.0 : static_cast<double>(b.log_end - end)});
    }
  }
  samples->push_back({"oxbow_cluster_under_replicated_buckets",
                      "Buckets this server leads whose ISR lacks a replica",
                      false,
                      {},
                      static_cast<double>(under_replicated)});
  samples->push_back({"oxbow_cluster_offline_buckets",
                      "Buckets without a live in-sync replica to lead them",
                      false,
                      {},
                      static_cast<double>(offline)});
  const cluster::ClusterCounters counters = cluster.Counters();
  samples->push_back({"oxbow_cluster_leader_elections_total",
                      "Leader elections this server made as controller",
                      true,
                      {},
                      static_cast<double>(counters.leader_elections)});
  samples->push_back({"oxbow_cluster_isr_changes_total",
                      "ISR shrinks and expands this server wrote as leader",
                      true,
                      {},
                      static_cast<double>(counters.isr_changes)});
  const auto meta = cluster.Metadata();
  samples->push_back({"oxbow_cluster_is_controller",
                      "1 while this server is the controller",
                      false,
                      {},
                      meta->controller == cluster.server_id() ? 1.0 : 0.0});
  samples->push_back({"oxbow_cluster_live_servers",
                      "Servers registered in ZooKeeper",
                      false,
                      {},
                      static_cast<double>(meta->servers.size())});
}

}  // namespace

std::string Node::MetricsPage() const {
  std::vector<metrics::Sample> samples;
  auto add = [&](const char* name, const char* help,
                 std::vector<std::pair<std::string, std::string>> labels, double value) {
    samples.push_back({name, help, false, std::move(labels), value});
  };
  for (const auto& descriptor : engine_->ListTables()) {
    auto description = DescribeTable(descriptor.name);
    if (!description.ok()) continue;  // dropped meanwhile
    const std::string& table = descriptor.name;
    for (const auto& b : description->table.buckets) {
      std::vector<std::pair<std::string, std::string>> labels = {
          {"table", table}, {"bucket", std::to_string(b.bucket)}};
      add("oxbow_log_next_offset", "The offset the next durable row of the bucket gets", labels,
          static_cast<double>(b.next_offset));
      add("oxbow_log_earliest_offset", "The first offset retention kept", labels,
          static_cast<double>(b.earliest_offset));
      add("oxbow_log_size_bytes", "Bytes of the bucket's log segments on local disk", labels,
          static_cast<double>(b.size_bytes));
      add("oxbow_log_segments", "Segments of the bucket's log on local disk", labels,
          static_cast<double>(b.segments));
      add("oxbow_log_cold_bytes", "Bytes of the bucket's segments in the cold log", labels,
          static_cast<double>(b.cold.bytes));
      add("oxbow_log_cold_segments", "Segments of the bucket's log in the cold log", labels,
          static_cast<double>(b.cold.segments));
    }
    const lake::LakeTableStatus& lake = description->lake;
    if (!lake.enabled) continue;
    add("oxbow_lake_lag_rows", "Durable rows not yet in the lake", {{"table", table}},
        static_cast<double>(lake.lag_rows));
    add("oxbow_lake_lag_ms", "How far the lake's view trails the log", {{"table", table}},
        static_cast<double>(lake.lag_ms));
    add("oxbow_lake_snapshots", "Snapshots of the table's Iceberg copy", {{"table", table}},
        static_cast<double>(lake.snapshots));
    add("oxbow_lake_data_files", "Live data files of the table's Iceberg copy", {{"table", table}},
        static_cast<double>(lake.data_files));
    add("oxbow_lake_error", "1 while the table's last tiering round failed", {{"table", table}},
        lake.error.empty() ? 0 : 1);
    if (lake.last_tiered_ms > 0) {
      add("oxbow_lake_last_tiered_timestamp_seconds",
          "Unix time of the newest snapshot tiering appended", {{"table", table}},
          static_cast<double>(lake.last_tiered_ms) / 1000.0);
    }
    add("oxbow_lake_damaged_files", "Live lake data files the scrubber found damaged",
        {{"table", table}}, static_cast<double>(lake.damaged_files.size()));
  }
  if (const auto kv = engine_->key_value_figures()) {
    add("oxbow_kv_block_cache_bytes", "Primary-key store: block cache in use (memtables included)",
        {}, static_cast<double>(kv->block_cache_usage));
    add("oxbow_kv_block_cache_pinned_bytes", "Primary-key store: block cache pinned by readers", {},
        static_cast<double>(kv->block_cache_pinned));
    add("oxbow_kv_block_cache_capacity_bytes", "Primary-key store: block cache budget", {},
        static_cast<double>(kv->block_cache_capacity));
    add("oxbow_kv_memtable_bytes", "Primary-key store: memtable bytes", {},
        static_cast<double>(kv->memtable_usage));
    samples.push_back({"oxbow_kv_block_cache_hits_total",
                       "Primary-key store: block cache lookups that found the block",
                       true,
                       {},
                       static_cast<double>(kv->block_cache_hits)});
    samples.push_back({"oxbow_kv_block_cache_misses_total",
                       "Primary-key store: block cache lookups that read the block from disk",
                       true,
                       {},
                       static_cast<double>(kv->block_cache_misses)});
  }
  if (cluster_) AddClusterSamples(*cluster_, &samples);
  add("oxbow_process_resident_memory_bytes", "Resident set size of oxbowd", {},
      static_cast<double>(metrics::ProcessRssBytes()));
  add("oxbow_process_open_fds", "Open file descriptors of oxbowd", {},
      static_cast<double>(metrics::ProcessOpenFiles()));
  return metrics_->Render(samples);
}

Status Node::Close() {
  if (closed_) return Status::OK();
  closed_ = true;
  if (producers_) {
    if (Status st = producers_->Save(); !st.ok()) {
      spdlog::error("saving the idempotent producers' state: {}", st.message());
    }
  }
  if (tiering_) tiering_->Stop();
  if (cluster_) {
    if (Status st = cluster_->Close(); !st.ok()) {
      spdlog::error("leaving the cluster: {}", st.message());
    }
  }
  return engine_ ? engine_->Close() : Status::OK();
}

}  // namespace oxbow::node
