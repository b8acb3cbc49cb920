#include "oxbow/node/group_offsets.h"

#include <spdlog/spdlog.h>

#include "oxbow/arrow/builder.h"
#include "oxbow/node/node.h"

namespace oxbow::node {
namespace {

// One row per committed partition; a commit is one batch, so it lands whole or not at all.
const arrow::SchemaPtr& OffsetsSchema() {
  static const arrow::SchemaPtr schema = std::make_shared<const arrow::Schema>(
      std::vector<arrow::Field>{{"group", arrow::DataType::String(), false},
                                {"topic", arrow::DataType::String(), false},
                                {"topic_table_id", arrow::DataType::Int64(), false},
                                {"partition", arrow::DataType::Int32(), false},
                                {"offset", arrow::DataType::Int64(), false},
                                {"metadata", arrow::DataType::String(), true}});
  return schema;
}

// FNV-1a: the same bucket on every server.
int32_t BucketOf(const std::string& group) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : group) hash = (hash ^ c) * 16777619u;
  return static_cast<int32_t>(hash % kGroupOffsetsBuckets);
}

Status NotCoordinator(const std::string& group, const std::string& why) {
  return Status::Unavailable(std::string(clientstate::kNotCoordinator) + " of group " +
                             Quote(group) + ": " + why);
}

}  // namespace

Status ReplicatedOffsetStore::EnsureTable() {
  if (cluster_->Metadata()->FindTable(kGroupOffsetsTable)) return Status::OK();
  catalog::CreateTableRequest request;
  request.if_not_exists = true;
  request.table.name = kGroupOffsetsTable;
  request.table.schema = OffsetsSchema();
  request.table.buckets = kGroupOffsetsBuckets;
  request.table.properties[std::string(lake::kEnabledProperty)] = "false";
  auto created = cluster_->CreateTable(request);
  if (!created.ok()) {
    return Status::Unavailable("creating " + std::string(kGroupOffsetsTable) + ": " +
                               created.status().message());
  }
  spdlog::info("cluster: created {} for consumer groups' offsets", kGroupOffsetsTable);
  return Status::OK();
}

Result<std::optional<int32_t>> ReplicatedOffsetStore::Coordinator(const std::string& group) {
  RETURN_NOT_OK(EnsureTable());
  auto meta = cluster_->Metadata();
  const cluster::TableMeta* table = meta->FindTable(kGroupOffsetsTable);
  if (!table || table->states.size() != kGroupOffsetsBuckets) {
    return Status::Unavailable(std::string(kGroupOffsetsTable) + " has no leaders yet");
  }
  const int32_t leader = table->states[static_cast<size_t>(BucketOf(group))].leader;
  if (leader < 0) {
    return Status::Unavailable("the bucket of group " + Quote(group) + " has no leader now");
  }
  return std::optional<int32_t>(leader);
}

Result<ReplicatedOffsetStore::Bucket*> ReplicatedOffsetStore::Ready(const std::string& group) {
  auto runtime = engine_->GetTable(kGroupOffsetsTable);
  if (!runtime.ok()) return NotCoordinator(group, "this server holds no group offsets");
  const auto& logs = (*runtime)->logs();
  const int32_t bucket = BucketOf(group);
  if (Status leads = cluster_->CheckLeader(kGroupOffsetsTable, bucket); !leads.ok()) {
    return NotCoordinator(group, leads.message());
  }
  const log::BucketLog& log = *logs[static_cast<size_t>(bucket)];
  const int32_t epoch = log.LatestLeaderEpoch().epoch;
  Bucket& state = buckets_[bucket];
  if (state.loaded_epoch == epoch) return &state;
  // Everything the new leader holds must be acknowledged before it is the truth.
  if (log.high_watermark() < log.next_offset()) {
    return Status::Unavailable(std::string(clientstate::kCoordinatorLoading) + " of group " +
                               Quote(group) + ": waiting for the replicas to catch up");
  }
  Bucket loaded;
  RETURN_NOT_OK(Load(bucket, &loaded));
  loaded.loaded_epoch = epoch;
  state = std::move(loaded);
  return &state;
}

Status ReplicatedOffsetStore::Load(int32_t bucket, Bucket* into) {
  ASSIGN_OR_RAISE(TableHandle handle, node_->GetTable(kGroupOffsetsTable));
  engine::ReadRequest request;
  request.bucket = bucket;
  ASSIGN_OR_RAISE(auto cursor, handle.OpenRead(request));
  int64_t rows = 0;
  while (true) {
    ASSIGN_OR_RAISE(auto decoded, cursor->NextDecoded(std::chrono::steady_clock::now() +
                                                      std::chrono::seconds(10)));
    if (!decoded) break;
    const arrow::RecordBatch& batch = *decoded->batch;
    for (int64_t i = 0; i < batch.num_rows(); ++i) {
      Topics& topics = into->groups[std::string(batch.column(0).GetView(i))];
      const std::string topic(batch.column(1).GetView(i));
      const int32_t partition = batch.column(3).Value<int32_t>(i);
      ++rows;
      if (batch.column(2).Value<int64_t>(i) == kForgotten) {
        clientstate::ErasePartition(topics, topic, partition);
        continue;
      }
      Committed committed;
      committed.table_id = batch.column(2).Value<int64_t>(i);
      committed.position.offset = batch.column(4).Value<int64_t>(i);
      if (!batch.column(5).IsNull(i)) {
        committed.position.metadata = std::string(batch.column(5).GetView(i));
      }
      topics[topic][partition] = std::move(committed);
    }
    if (cursor->done()) break;
  }
  spdlog::info("cluster: loaded {} committed offsets of {} groups from {}[{}]", rows,
               into->groups.size(), kGroupOffsetsTable, bucket);
  return Status::OK();
}

Status ReplicatedOffsetStore::Prepare(const std::string& group) {
  std::lock_guard lock(mu_);
  return Ready(group).status();
}

int64_t ReplicatedOffsetStore::TableId(const std::string& topic) const {
  auto table = table_for_topic_ ? table_for_topic_(topic) : Result<std::string>(topic);
  if (!table.ok()) return -1;
  auto runtime = engine_->GetTable(*table);
  return runtime.ok() ? (*runtime)->descriptor().table_id : -1;
}

Result<std::vector<int64_t>> ReplicatedOffsetStore::Append(
    const std::string& group, const std::vector<clientstate::OffsetCommit>& commits, bool forget) {
  arrow::BinaryBuilder groups(arrow::DataType::String());
  arrow::BinaryBuilder topics(arrow::DataType::String());
  arrow::Int64Builder table_ids(arrow::DataType::Int64());
  arrow::Int32Builder partitions(arrow::DataType::Int32());
  arrow::Int64Builder offsets(arrow::DataType::Int64());
  arrow::BinaryBuilder metadata(arrow::DataType::String());
  std::vector<int64_t> ids;
  for (const auto& c : commits) {
    ids.push_back(forget ? kForgotten : TableId(c.topic));
    RETURN_NOT_OK(groups.Append(group));
    RETURN_NOT_OK(topics.Append(c.topic));
    RETURN_NOT_OK(table_ids.Append(ids.back()));
    RETURN_NOT_OK(partitions.Append(c.partition));
    RETURN_NOT_OK(offsets.Append(c.committed.offset));
    RETURN_NOT_OK(c.committed.metadata ? metadata.Append(*c.committed.metadata)
                                       : metadata.AppendNull());
  }
  std::vector<arrow::Array> columns;
  for (arrow::ArrayBuilder* b : std::initializer_list<arrow::ArrayBuilder*>{
           &groups, &topics, &table_ids, &partitions, &offsets, &metadata}) {
    ASSIGN_OR_RAISE(auto column, b->Finish());
    columns.push_back(std::move(column));
  }
  ASSIGN_OR_RAISE(auto batch,
                  arrow::RecordBatch::Make(OffsetsSchema(), static_cast<int64_t>(commits.size()),
                                           std::move(columns)));
  ASSIGN_OR_RAISE(TableHandle handle, node_->GetTable(kGroupOffsetsTable));
  ASSIGN_OR_RAISE(auto session,
                  handle.StartReplicatedPut(OffsetsSchema(), BucketOf(group), cluster::Acks::kAll));
  RETURN_NOT_OK(session->Append(*batch).status());
  return ids;
}

Status ReplicatedOffsetStore::Commit(const std::string& group,
                                     const std::vector<clientstate::OffsetCommit>& commits) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RAISE(Bucket * state, Ready(group));
  ASSIGN_OR_RAISE(std::vector<int64_t> ids, Append(group, commits, /*forget=*/false));
  Topics& committed = state->groups[group];
  for (size_t i = 0; i < commits.size(); ++i) {
    committed[commits[i].topic][commits[i].partition] = {commits[i].committed, ids[i]};
  }
  return Status::OK();
}

Status ReplicatedOffsetStore::Forget(const std::string& group,
                                     const std::vector<clientstate::TopicPartition>& partitions) {
  std::lock_guard lock(mu_);
  ASSIGN_OR_RAISE(Bucket * state, Ready(group));
  auto g = state->groups.find(group);
  if (g == state->groups.end()) return Status::OK();
  std::vector<clientstate::OffsetCommit> tombstones;
  for (const auto& [topic, partition] : partitions) {
    auto t = g->second.find(topic);
    if (t != g->second.end() && t->second.contains(partition)) {
      tombstones.push_back({topic, partition, {}});
    }
  }
  if (tombstones.empty()) return Status::OK();
  RETURN_NOT_OK(Append(group, tombstones, /*forget=*/true).status());
  for (const auto& tombstone : tombstones) {
    clientstate::ErasePartition(g->second, tombstone.topic, tombstone.partition);
  }
  if (g->second.empty()) state->groups.erase(g);
  return Status::OK();
}

std::optional<clientstate::GroupOffsets> ReplicatedOffsetStore::Visible(
    const Topics& topics) const {
  clientstate::GroupOffsets visible;
  for (const auto& [topic, partitions] : topics) {
    const int64_t table_id = TableId(topic);
    for (const auto& [partition, committed] : partitions) {
      if (committed.table_id == table_id) visible[topic][partition] = committed.position;
    }
  }
  if (visible.empty()) return std::nullopt;
  return visible;
}

std::optional<clientstate::GroupOffsets> ReplicatedOffsetStore::Offsets(
    const std::string& group) const {
  std::lock_guard lock(mu_);
  auto state = buckets_.find(BucketOf(group));
  if (state == buckets_.end()) return std::nullopt;
  auto g = state->second.groups.find(group);
  if (g == state->second.groups.end()) return std::nullopt;
  return Visible(g->second);
}

bool ReplicatedOffsetStore::HasGroup(const std::string& group) const {
  return Offsets(group).has_value();
}

std::vector<std::string> ReplicatedOffsetStore::Groups() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> names;
  for (const auto& [bucket, state] : buckets_) {
    if (!cluster_->CheckLeader(kGroupOffsetsTable, bucket).ok()) continue;
    for (const auto& [group, topics] : state.groups) {
      if (Visible(topics)) names.push_back(group);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

Status ReplicatedOffsetStore::ForgetTopics(const std::vector<std::string>& topics) {
  (void)topics;
  return Status::OK();
}

}  // namespace oxbow::node
