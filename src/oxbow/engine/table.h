// The tables behind the engine: the interface every kind of table implements (the log table and
// the primary-key table), and the put and read streams a table hands out.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oxbow/arrow/ipc.h"
#include "oxbow/catalog/descriptor.h"
#include "oxbow/log/bucket_log.h"

namespace oxbow::engine {

// Where a read starts.
struct StartPosition {
  // kTimestamp: the first batch appended at or after timestamp_ms.
  enum class Kind { kEarliest, kLatest, kOffset, kTimestamp };
  Kind kind = Kind::kEarliest;
  int64_t offset = 0;        // for kOffset
  int64_t timestamp_ms = 0;  // for kTimestamp, ms since the epoch
};

// A read of one bucket: from a position to an optional end, optionally projected, optionally
// following new data.
struct ReadRequest {
  std::string table;
  int32_t bucket = 0;
  StartPosition from;
  std::optional<int64_t> to;                        // exclusive end offset
  std::optional<std::vector<std::string>> columns;  // projection, in output order
  bool follow = false;
  // Read every batch converted to this schema version of the table (docs/api.md#alter_table);
  // default: the current one. `columns` then names columns of that version.
  std::optional<int32_t> schema_id;
  // How far the read may go: the high watermark for clients; past it for readers inside the
  // server (a new leader of a primary-key bucket reading its uncommitted tail).
  log::ReadLimit limit = log::ReadLimit::kVisible;
};

// Where one appended piece of a batch went.
struct AppendedRange {
  int32_t bucket = 0;
  int64_t base_offset = 0;
  int64_t rows = 0;
};

// One batch of a read, ready to send: the (projected) RecordBatch message and its offsets.
struct ReadBatch {
  arrow::ipc::EncodedMessage message;
  int64_t base_offset = 0;
  int64_t next_offset = 0;
  int64_t append_time_ms = 0;  // when the server appended the batch
};

// One batch of an unprojected read, decoded.
struct DecodedBatch {
  arrow::RecordBatchPtr batch;
  int64_t body_length = 0;  // bytes of its stored IPC body
  int64_t base_offset = 0;
  int64_t next_offset = 0;
  int64_t append_time_ms = 0;
};

struct BucketStatus {
  int32_t bucket = 0;
  int64_t earliest_offset = 0;
  int64_t next_offset = 0;
  int64_t size_bytes = 0;  // of all its segments
  int64_t segments = 0;
  // Damage known in the bucket's log: offsets that cannot be served.
  std::vector<log::DamagedRange> damaged;
  // What opening the log found (a torn tail it cut, damage it kept).
  log::RecoveryInfo recovery;
  // Its segments in the cold store (docs/storage.md#cold-log).
  log::ColdStatus cold;
};

// A check of each batch put into a table beyond its schema (e.g. values its lake cannot hold):
// OK, or InvalidArgument naming the field and the row.
using BatchCheck = std::function<Status(const arrow::RecordBatch&)>;

// What a put stream does with its rows.
enum class PutOp {
  kUpsert,  // a log table appends them; a primary-key table upserts (or partially updates) them
  kDelete,  // a primary-key table deletes their keys (batches of the key columns)
};

// A read of the current rows of a primary-key table: one bucket, or every bucket.
struct SnapshotRequest {
  std::string table;
  std::optional<int32_t> bucket;
  std::optional<std::vector<std::string>> columns;  // projection, in output order
};

// Where a snapshot stands in a bucket's changelog: following from next_offset continues it.
struct SnapshotOffset {
  int32_t bucket = 0;
  int64_t next_offset = 0;
};

// The rows of a snapshot, batch by batch.
class SnapshotReader {
 public:
  virtual ~SnapshotReader() = default;
  virtual const arrow::SchemaPtr& schema() const = 0;
  // The changelog offsets the snapshot is consistent with.
  virtual const std::vector<SnapshotOffset>& offsets() const = 0;
  // The next batch, or null at the end.
  virtual Result<arrow::RecordBatchPtr> Next() = 0;
};

// A batch point lookup by primary key, or a prefix lookup by bucket key.
struct LookupRequest {
  std::string table;
  // Full key: the primary-key columns; prefix: the bucket-key columns (by name, any order).
  arrow::RecordBatchPtr keys;
  bool prefix = false;
  std::optional<std::vector<std::string>> columns;  // projection, in output order
  // Cluster mode: the keys of buckets for which `is_local` is false are looked up by `remote`
  // (on the bucket's leader), which returns their rows with every column of the current schema.
  // Empty: every bucket is here.
  std::function<bool(int32_t bucket)> is_local;
  std::function<Result<arrow::RecordBatchPtr>(int32_t bucket, const arrow::RecordBatchPtr& keys)>
      remote;
};

// A KV snapshot of one bucket of a primary-key table in the object store
// (docs/cluster.md#kv-snapshots-in-object-storage): its directory there, the changelog offset
// its rows are at, and the leader epoch of the changelog batch before that offset (-1: none), so
// that a replica whose changelog starts at the snapshot still answers KIP-101 epoch queries.
struct KvSnapshotRef {
  int64_t offset = 0;
  std::string path;
  int32_t leader_epoch = -1;
};

// One put stream: the client's schema has been checked against the table.
class PutSession {
 public:
  virtual ~PutSession() = default;
  // Appends one RecordBatch message as the client encoded it (stored as is when it lands in
  // one bucket); returns once every piece is durable. A batch that fails validation writes
  // nothing.
  virtual Result<std::vector<AppendedRange>> Append(const arrow::ipc::RawMessage& message) = 0;
  // The same for a decoded batch, for front ends that do not speak Arrow IPC.
  virtual Result<std::vector<AppendedRange>> Append(const arrow::RecordBatch& batch) = 0;
  // The same, storing `batch_metadata` as the custom_metadata of each stored RecordBatch
  // message, in the same durable write as the rows (the Kafka listener keeps its producer ids
  // and sequences there). Log tables only; others answer NotImplemented.
  virtual Result<std::vector<AppendedRange>> AppendWithMetadata(
      const arrow::RecordBatch& batch, const arrow::KeyValueMetadata& batch_metadata) {
    (void)batch;
    (void)batch_metadata;
    return Status::NotImplemented("only log tables keep batch metadata");
  }
  // Blocks until everything appended so far is acknowledged, for sessions whose appends return
  // before that (a replicated put that defers its acknowledgements); OK at once otherwise.
  virtual Status WaitAcknowledged() { return Status::OK(); }
  // Makes WaitAcknowledged cover the log below `next_offset` too: rows appended before (a
  // producer's retry answered with the offsets of its first attempt).
  virtual void IncludeInAcknowledgement(int64_t next_offset) { (void)next_offset; }
};

// One read stream over a bucket.
class ReadCursor {
 public:
  virtual ~ReadCursor() = default;
  virtual const arrow::SchemaPtr& schema() const = 0;
  virtual int32_t bucket() const = 0;
  // The next batch; std::nullopt when the range is done, or, when following, when `deadline`
  // passes without new data (call again to keep waiting).
  virtual Result<std::optional<ReadBatch>> Next(std::chrono::steady_clock::time_point deadline) = 0;
  // The same, decoded, for readers inside the server (tiering); unprojected reads only.
  virtual Result<std::optional<DecodedBatch>> NextDecoded(
      std::chrono::steady_clock::time_point deadline) = 0;
  // True once the requested range has been fully delivered (never when following).
  virtual bool done() const = 0;
};

// The runtime of one table.
class Table {
 public:
  virtual ~Table() = default;
  virtual const catalog::TableDescriptor& descriptor() const = 0;
  // Checks the client's schema against the table: InvalidArgument naming the field otherwise.
  virtual Result<std::unique_ptr<PutSession>> StartPut(const arrow::SchemaPtr& client_schema,
                                                       PutOp op) = 0;
  // An upsert stream with every batch going to `bucket` (Kafka's partitions); tables that choose
  // the bucket themselves (by key) refuse it.
  virtual Result<std::unique_ptr<PutSession>> StartPutToBucket(
      const arrow::SchemaPtr& client_schema, int32_t bucket) {
    (void)client_schema;
    (void)bucket;
    return Status::NotImplemented("table " + Quote(descriptor().name) +
                                  " does not take puts into a chosen bucket");
  }
  // A log table's log, or a primary-key table's changelog.
  virtual Result<std::unique_ptr<ReadCursor>> OpenRead(const ReadRequest& request) = 0;
  // The schema OpenRead returns before projection.
  virtual const arrow::SchemaPtr& read_schema() const = 0;
  // Primary-key tables only.
  virtual Result<std::unique_ptr<SnapshotReader>> OpenSnapshot(const SnapshotRequest& request);
  // Primary-key tables only: the rows of the keys found, in key order (a missing key is absent).
  virtual Result<arrow::RecordBatchPtr> Lookup(const LookupRequest& request);
  // Tables that choose the bucket of a row by its key (primary-key tables): the bucket of each
  // row of `batch`, which carries at least the bucket-key columns (by name).
  virtual Result<std::vector<int32_t>> BucketsOf(const arrow::RecordBatch& batch) const;
  virtual std::vector<BucketStatus> Buckets() const = 0;
  // The durable logs behind the table, one per bucket (retention and scrubbing walk them).
  virtual const std::vector<std::unique_ptr<log::BucketLog>>& logs() const = 0;
  // Cluster mode (docs/cluster.md#primary-key-tables), called by the bucket's replica: this
  // server now leads `bucket` (state derived from the log catches up before the first put), or
  // follows it and its log's high watermark moved. No-ops for a log table.
  virtual Status PrepareToLead(int32_t bucket) {
    (void)bucket;
    return Status::OK();
  }
  virtual Status ApplyReplicated(int32_t bucket) {
    (void)bucket;
    return Status::OK();
  }
  // Primary-key tables with a snapshot store (EngineOptions::kv_snapshot_fs): uploads the
  // bucket's rows, unless they are still at changelog offset `after_offset` (nullopt then).
  virtual Result<std::optional<KvSnapshotRef>> UploadKvSnapshot(int32_t bucket,
                                                                int64_t after_offset);
  // Primary-key tables, a follower's replica: when its changelog ends before the snapshot's
  // offset, replaces the bucket's rows with the snapshot's and restarts the changelog there
  // (true: fetching goes on from the snapshot's offset); when its rows are behind the start of
  // its changelog and the snapshot is within it, replaces the rows (true); otherwise changes
  // nothing (false).
  virtual Result<bool> RestoreKvSnapshot(int32_t bucket, const KvSnapshotRef& snapshot);
  // Cluster mode, a replica moved away from this server: deletes the bucket's log, which
  // restarts empty at offset 0, and a primary-key table's rows of it. A replica placed here
  // again fetches everything anew.
  virtual Status DropBucketData(int32_t bucket);
  // Flushes and closes the logs. Idempotent.
  virtual Status Close() = 0;
};

}  // namespace oxbow::engine
