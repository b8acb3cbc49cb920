#include "oxbow/engine/table.h"

namespace oxbow::engine {

namespace {

Status NeedsPrimaryKey(const catalog::TableDescriptor& table, const char* what) {
  return Status::Invalid("table " + Quote(table.name) + " is a log table: " + what +
                         " need a primary key");
}

}  // namespace

Result<std::unique_ptr<SnapshotReader>> Table::OpenSnapshot(const SnapshotRequest&) {
  return NeedsPrimaryKey(descriptor(), "snapshots");
}

Result<arrow::RecordBatchPtr> Table::Lookup(const LookupRequest&) {
  return NeedsPrimaryKey(descriptor(), "lookups");
}

Result<std::optional<KvSnapshotRef>> Table::UploadKvSnapshot(int32_t, int64_t) {
  return NeedsPrimaryKey(descriptor(), "KV snapshots");
}

Result<bool> Table::RestoreKvSnapshot(int32_t, const KvSnapshotRef&) {
  return NeedsPrimaryKey(descriptor(), "KV snapshots");
}

Status Table::DropBucketData(int32_t bucket) { return logs()[bucket]->ResetTo(0); }

Result<std::vector<int32_t>> Table::BucketsOf(const arrow::RecordBatch&) const {
  return Status::NotImplemented("table " + Quote(descriptor().name) +
                                " does not choose buckets by key");
}

}  // namespace oxbow::engine
