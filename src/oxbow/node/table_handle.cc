#include "oxbow/node/table_handle.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>

#include "oxbow/node/routing_internal.h"

namespace oxbow::node {

namespace {

// A put stream into a bucket this server leads, acknowledged as its acks level allows.
class ReplicatedPutSession : public engine::PutSession {
 public:
  ReplicatedPutSession(cluster::Cluster* cluster, std::string table, int32_t bucket,
                       cluster::Acks acks, bool defer_acks,
                       std::unique_ptr<engine::PutSession> local)
      : cluster_(cluster),
        table_(std::move(table)),
        bucket_(bucket),
        acks_(acks),
        defer_acks_(defer_acks),
        local_(std::move(local)) {}

  Result<std::vector<engine::AppendedRange>> Append(
      const arrow::ipc::RawMessage& message) override {
    RETURN_NOT_OK(cluster_->CheckWritable(table_, bucket_, acks_));
    return Acknowledge(local_->Append(message));
  }
  Result<std::vector<engine::AppendedRange>> Append(const arrow::RecordBatch& batch) override {
    RETURN_NOT_OK(cluster_->CheckWritable(table_, bucket_, acks_));
    return Acknowledge(local_->Append(batch));
  }
  Result<std::vector<engine::AppendedRange>> AppendWithMetadata(
      const arrow::RecordBatch& batch, const arrow::KeyValueMetadata& batch_metadata) override {
    RETURN_NOT_OK(cluster_->CheckWritable(table_, bucket_, acks_));
    return Acknowledge(local_->AppendWithMetadata(batch, batch_metadata));
  }
  void IncludeInAcknowledgement(int64_t next_offset) override {
    appended_end_ = std::max(appended_end_, next_offset);
  }
  Status WaitAcknowledged() override {
    if (appended_end_ < 0) return Status::OK();
    return cluster_->WaitAcknowledgeable(table_, bucket_, appended_end_, acks_);
  }

 private:
  Result<std::vector<engine::AppendedRange>> Acknowledge(
      Result<std::vector<engine::AppendedRange>> appended) {
    if (!appended.ok()) return appended;
    for (const auto& range : *appended) {
      appended_end_ = std::max(appended_end_, range.base_offset + range.rows);
    }
    if (!defer_acks_) RETURN_NOT_OK(WaitAcknowledged());
    return appended;
  }

  cluster::Cluster* const cluster_;
  const std::string table_;
  const int32_t bucket_;
  const cluster::Acks acks_;
  const bool defer_acks_;
  const std::unique_ptr<engine::PutSession> local_;
  int64_t appended_end_ = -1;  // the end of the last batch appended
};

std::atomic<uint32_t> next_put_bucket{0};

}  // namespace

Status CheckNotReserved(std::string_view table) {
  const std::string prefix = std::string(kReservedNamespace) + ".";
  if (table.substr(0, prefix.size()) == prefix) {
    return Status::PermissionDenied("table " + Quote(table) + " is Oxbow's own (namespace " +
                                    kReservedNamespace + " is reserved)");
  }
  return Status::OK();
}

Result<std::unique_ptr<engine::PutSession>> TableHandle::StartPut(
    const arrow::SchemaPtr& client_schema, engine::PutOp op, cluster::Acks acks,
    std::optional<int32_t> only_bucket) const {
  RETURN_NOT_OK(CheckNotReserved(name()));
  const bool keyed = !descriptor().primary_key.empty();
  if (only_bucket && (!cluster_ || !keyed)) {
    return Status::Invalid(
        "\"bucket\" in a put command is for the servers of a cluster "
        "routing a primary-key table's rows; leave it out");
  }
  if (!cluster_) return table_->StartPut(client_schema, op);
  if (keyed) {
    return internal::StartRoutedPut({cluster_, peers_, table_}, client_schema, op, acks,
                                    only_bucket);
  }
  // A log table in cluster mode has no bucket key (cluster::CreateTable): any bucket this
  // server leads takes the rows.
  const std::vector<int32_t> led = cluster_->LeaderBuckets(name());
  if (led.empty()) {
    RETURN_NOT_OK(cluster_->CheckLeader(name(), 0));
    return Status::Unavailable("this server leads no bucket of table " + Quote(name()));
  }
  const int32_t bucket = led[next_put_bucket.fetch_add(1) % led.size()];
  return StartReplicatedPut(client_schema, bucket, acks);
}

Result<std::unique_ptr<engine::PutSession>> TableHandle::StartPutToBucket(
    const arrow::SchemaPtr& client_schema, int32_t bucket, cluster::Acks acks,
    bool defer_acks) const {
  RETURN_NOT_OK(CheckNotReserved(name()));
  return StartReplicatedPut(client_schema, bucket, acks, defer_acks);
}

Result<std::unique_ptr<engine::PutSession>> TableHandle::StartReplicatedPut(
    const arrow::SchemaPtr& client_schema, int32_t bucket, cluster::Acks acks,
    bool defer_acks) const {
  if (!cluster_) return table_->StartPutToBucket(client_schema, bucket);
  RETURN_NOT_OK(cluster_->CheckLeader(name(), bucket));
  ASSIGN_OR_RAISE(auto local, table_->StartPutToBucket(client_schema, bucket));
  return std::unique_ptr<engine::PutSession>(
      new ReplicatedPutSession(cluster_, name(), bucket, acks, defer_acks, std::move(local)));
}

Result<std::unique_ptr<engine::SnapshotReader>> TableHandle::OpenSnapshot(
    const engine::SnapshotRequest& request) const {
  if (!cluster_ || descriptor().primary_key.empty()) return table_->OpenSnapshot(request);
  if (request.bucket) {
    RETURN_NOT_OK(cluster_->CheckLeader(name(), *request.bucket));
    return table_->OpenSnapshot(request);
  }
  return internal::OpenRoutedSnapshot({cluster_, peers_, table_}, request);
}

Result<arrow::RecordBatchPtr> TableHandle::Lookup(engine::LookupRequest request,
                                                  bool forwarded) const {
  if (cluster_ && !descriptor().primary_key.empty()) {
    internal::RouteLookup({cluster_, peers_, table_}, forwarded, &request);
  }
  return table_->Lookup(request);
}

Result<int64_t> TableHandle::DeleteBefore(int32_t bucket, int64_t offset) const {
  RETURN_NOT_OK(CheckNotReserved(name()));
  if (!descriptor().primary_key.empty()) {
    return Status::Invalid("primary-key table " + Quote(name()) +
                           " keeps its whole changelog: its rows recover from it");
  }
  if (bucket < 0 || bucket >= bucket_count()) {
    return Status::NotFound("table " + Quote(name()) + " has no bucket " + std::to_string(bucket));
  }
  if (cluster_) {
    // On the bucket's leader, which waits for its in-sync followers to move theirs.
    RETURN_NOT_OK(cluster_->DeleteBefore(name(), bucket, offset));
    return table_->logs()[static_cast<size_t>(bucket)]->earliest_offset();
  }
  log::BucketLog& log = *table_->logs()[static_cast<size_t>(bucket)];
  RETURN_NOT_OK(log.DeleteBefore(offset));
  // The segments wholly below go now (the start already holds without them).
  if (auto deleted = log.EnforceRetention(); !deleted.ok()) {
    spdlog::warn("table '{}' bucket {}: records before {} are deleted, their segments not yet: {}",
                 name(), bucket, offset, deleted.status().message());
  }
  return log.earliest_offset();
}

Result<std::unique_ptr<engine::ReadCursor>> TableHandle::OpenRead(
    engine::ReadRequest request) const {
  request.table = name();
  if (cluster_) RETURN_NOT_OK(cluster_->CheckLeader(name(), request.bucket));
  return lake::OpenLogRead(engine_, {tiering_->catalog(), tiering_->file_system()}, request);
}

Result<std::unique_ptr<lake::UnionReader>> TableHandle::OpenUnionRead(
    lake::UnionReadRequest request) const {
  request.table = name();
  if (cluster_) {
    // Each bucket's log part comes from this server's replica, as of its high watermark
    // (docs/cluster.md#the-lake).
    for (int32_t b = 0; b < bucket_count(); ++b) {
      if (!cluster_->HoldsReplica(name(), b)) {
        return Status::Unavailable("a union read of " + Quote(name()) +
                                   " needs a replica of every bucket, and server " +
                                   std::to_string(cluster_->server_id()) + " has none of bucket " +
                                   std::to_string(b) + ": ask a server that holds them all");
      }
    }
  }
  return lake::OpenUnionRead(engine_, {tiering_->catalog(), tiering_->file_system()}, request);
}

}  // namespace oxbow::node
