// A table resolved once — per Flight call, per Kafka request — and the calls a front end makes
// on it. Resolving is a map lookup; nothing on a handle reads the lake's Iceberg
// metadata except the reads that serve lake rows (OpenRead below the log, union reads).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oxbow/catalog/descriptor.h"
#include "oxbow/cluster/cluster.h"
#include "oxbow/engine/engine.h"
#include "oxbow/lake/lake.h"
#include "oxbow/lake/lake_read.h"

namespace oxbow::node {

// Tables Oxbow keeps for itself (the consumer groups' offsets of cluster mode) live in this
// namespace; clients read them but never create, alter, drop or write them.
inline constexpr char kReservedNamespace[] = "__oxbow";
// PermissionDenied naming the table when it is in the reserved namespace.
Status CheckNotReserved(std::string_view table);

class ReplicatedOffsetStore;
namespace internal {
class Peers;
}

class TableHandle {
 public:
  // Node::GetTable makes handles; `engine`, `tiering`, `cluster` and `peers` (both null in
  // embedded mode) outlive them.
  TableHandle(engine::Engine* engine, lake::TieringService* tiering, cluster::Cluster* cluster,
              internal::Peers* peers, std::shared_ptr<engine::Table> table)
      : engine_(engine),
        tiering_(tiering),
        cluster_(cluster),
        peers_(peers),
        table_(std::move(table)) {}

  const catalog::TableDescriptor& descriptor() const { return table_->descriptor(); }
  const std::string& name() const { return descriptor().name; }
  int32_t bucket_count() const { return descriptor().buckets; }
  // What a read of the table's log returns (a primary-key changelog adds a column).
  const arrow::SchemaPtr& read_schema() const { return table_->read_schema(); }
  // Each bucket's offsets and sizes now, from memory.
  std::vector<engine::BucketStatus> Buckets() const { return table_->Buckets(); }
  // The engine's view: descriptor, buckets and read schema.
  engine::TableStatus EngineStatus() const { return {descriptor(), Buckets(), read_schema()}; }
  // The state the lake last published for the table (enabled=false when it has no lake).
  Result<lake::LakeTableStatus> LakeStatus() const { return tiering_->Describe(name()); }

  // A put stream of `client_schema` batches (InvalidArgument naming the field on mismatch).
  // In cluster mode each Append returns once `acks` allows (docs/cluster.md): a log table's rows
  // go to a bucket this server leads (Unavailable naming a leader when it leads none); a
  // primary-key table's go to their buckets' leaders, here or forwarded. `only_bucket` (a put
  // forwarded by another server, primary-key tables in cluster mode only): every row is in that
  // bucket, which this server must lead.
  Result<std::unique_ptr<engine::PutSession>> StartPut(
      const arrow::SchemaPtr& client_schema, engine::PutOp op,
      cluster::Acks acks = cluster::Acks::kAll,
      std::optional<int32_t> only_bucket = std::nullopt) const;
  // The same, every batch going to `bucket` (Kafka's partitions). With `defer_acks` an
  // Append returns once the leader has the batch, and WaitAcknowledged waits for what `acks`
  // asks (a Kafka produce appends every partition first, then waits for them together).
  Result<std::unique_ptr<engine::PutSession>> StartPutToBucket(
      const arrow::SchemaPtr& client_schema, int32_t bucket,
      cluster::Acks acks = cluster::Acks::kAll, bool defer_acks = false) const;
  // A read of one bucket (`request.table` is ignored); offsets the log's retention deleted come
  // from the lake while it has them (lake::OpenLogRead). In cluster mode, of a bucket this
  // server leads, up to its high watermark.
  Result<std::unique_ptr<engine::ReadCursor>> OpenRead(engine::ReadRequest request) const;
  // The table's whole contents now: its lake snapshot plus the log after it (lake::UnionReader).
  Result<std::unique_ptr<lake::UnionReader>> OpenUnionRead(lake::UnionReadRequest request) const;
  // Primary-key tables: the current rows, and batch lookups by key. In cluster mode a snapshot
  // of one bucket is served by its leader only; one of every bucket, and a lookup, gather what
  // other servers lead from them (unless `forwarded`: a lookup another server sent).
  Result<std::unique_ptr<engine::SnapshotReader>> OpenSnapshot(
      const engine::SnapshotRequest& request) const;
  Result<arrow::RecordBatchPtr> Lookup(engine::LookupRequest request, bool forwarded = false) const;
  // A log table's bucket no longer serves the offsets below `offset` (Kafka's DeleteRecords;
  // the lake keeps what it already has); returns the bucket's earliest offset after it.
  // OutOfRange past the bucket's end; a primary-key table refuses (its changelog is the log its
  // rows recover from), and so does cluster mode, whose followers would keep the records.
  Result<int64_t> DeleteBefore(int32_t bucket, int64_t offset) const;

 private:
  friend class ReplicatedOffsetStore;
  // StartPutToBucket without the reserved-namespace check.
  Result<std::unique_ptr<engine::PutSession>> StartReplicatedPut(
      const arrow::SchemaPtr& client_schema, int32_t bucket, cluster::Acks acks,
      bool defer_acks = false) const;

  engine::Engine* engine_;
  lake::TieringService* tiering_;
  cluster::Cluster* cluster_;
  internal::Peers* peers_;
  std::shared_ptr<engine::Table> table_;
};

}  // namespace oxbow::node
