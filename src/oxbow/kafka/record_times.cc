#include <algorithm>
#include <chrono>

#include "oxbow/kafka/record_times_internal.h"

namespace oxbow::kafka::internal {
namespace {

// The raw schema's timestamp column (values_internal.h).
constexpr int kTimestampColumn = 2;

// Reads [from, to) of the bucket, calling `visit` with each batch and its base offset.
template <typename Visit>
Status ReadBatches(const node::TableHandle& table, int32_t bucket, int64_t from, int64_t to,
                   Visit&& visit) {
  engine::ReadRequest read;
  read.bucket = bucket;
  read.from.kind = engine::StartPosition::Kind::kOffset;
  read.from.offset = from;
  read.to = to;
  ASSIGN_OR_RAISE(auto cursor, table.OpenRead(read));
  while (true) {
    ASSIGN_OR_RAISE(auto batch, cursor->NextDecoded(std::chrono::steady_clock::now()));
    if (!batch) return Status::OK();
    visit(*batch);
  }
}

}  // namespace

Result<RecordTimes::Bucket*> RecordTimes::Indexed(const node::TableHandle& table, int32_t bucket,
                                                  int64_t earliest, int64_t next) {
  Bucket& b = buckets_[{table.descriptor().table_id, bucket}];
  if (next < b.indexed_to) b = Bucket{};  // the log was cut back (an unclean election)
  const int64_t from = std::max(b.indexed_to, earliest);
  if (from >= next) return &b;
  RETURN_NOT_OK(ReadBatches(table, bucket, from, next, [&](const engine::DecodedBatch& d) {
    if (d.base_offset < from) return;  // indexed already (a read starts at a whole batch)
    Batch batch{d.base_offset, d.next_offset, {}};
    const arrow::Array& times = d.batch->column(kTimestampColumn);
    for (int64_t i = 0; i < d.batch->num_rows(); ++i) {
      const int64_t t = times.Value<int64_t>(i);
      if (batch.newest.offset < 0 || t > batch.newest.timestamp_ms) {
        batch.newest = {d.base_offset + i, t};
      }
    }
    b.batches.push_back(batch);
    b.indexed_to = d.next_offset;
  }));
  return &b;
}

Result<std::optional<TimedOffset>> RecordTimes::FirstAtOrAfter(const node::TableHandle& table,
                                                               int32_t bucket,
                                                               int64_t timestamp_ms) {
  const engine::BucketStatus status = table.Buckets()[static_cast<size_t>(bucket)];
  std::lock_guard lock(mu_);
  ASSIGN_OR_RAISE(Bucket * b, Indexed(table, bucket, status.earliest_offset, status.next_offset));
  for (const Batch& batch : b->batches) {
    if (batch.next_offset <= status.earliest_offset || batch.newest.timestamp_ms < timestamp_ms) {
      continue;
    }
    // This batch holds the first such record: find it.
    std::optional<TimedOffset> found;
    RETURN_NOT_OK(ReadBatches(
        table, bucket, batch.base_offset, batch.next_offset, [&](const engine::DecodedBatch& d) {
          const arrow::Array& times = d.batch->column(kTimestampColumn);
          for (int64_t i = 0; i < d.batch->num_rows() && !found; ++i) {
            const int64_t offset = d.base_offset + i;
            if (offset >= batch.base_offset && times.Value<int64_t>(i) >= timestamp_ms) {
              found = TimedOffset{offset, times.Value<int64_t>(i)};
            }
          }
        }));
    if (found) return found;
  }
  return std::optional<TimedOffset>();
}

Result<std::optional<TimedOffset>> RecordTimes::Newest(const node::TableHandle& table,
                                                       int32_t bucket) {
  const engine::BucketStatus status = table.Buckets()[static_cast<size_t>(bucket)];
  std::lock_guard lock(mu_);
  ASSIGN_OR_RAISE(Bucket * b, Indexed(table, bucket, status.earliest_offset, status.next_offset));
  std::optional<TimedOffset> newest;
  for (const Batch& batch : b->batches) {
    if (batch.next_offset <= status.earliest_offset) continue;
    if (!newest || batch.newest.timestamp_ms > newest->timestamp_ms) newest = batch.newest;
  }
  return newest;  // retention deletes whole segments, so whole batches
}

}  // namespace oxbow::kafka::internal
