#include <algorithm>
#include <chrono>

#include "oxbow/kafka/record_times_internal.h"

namespace oxbow::kafka::internal {
namespace {

// The raw schema's timestamp column (values_internal.h).
constexpr int kTimestampColumn = 2;
// A span of the index covers batches of about this many bytes: the index costs 32 bytes per
// span, and an answer reads one span.
constexpr int64_t kSpanBytes = 64 << 10;

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

Status RecordTimes::IndexRange(const node::TableHandle& table, int32_t bucket, int64_t from,
                               int64_t to, std::vector<Span>* spans) {
  return ReadBatches(table, bucket, from, to, [&](const engine::DecodedBatch& d) {
    if (d.base_offset < from) return;  // indexed already (a read starts at a whole batch)
    const bool extend = !spans->empty() && spans->back().next_offset == d.base_offset &&
                        spans->back().bytes < kSpanBytes;
    if (!extend) spans->push_back({d.base_offset, d.base_offset, 0, {}});
    Span& span = spans->back();
    const arrow::Array& times = d.batch->column(kTimestampColumn);
    for (int64_t i = 0; i < d.batch->num_rows(); ++i) {
      const int64_t t = times.Value<int64_t>(i);
      if (span.newest.offset < 0 || t > span.newest.timestamp_ms) {
        span.newest = {d.base_offset + i, t};
      }
    }
    span.next_offset = d.next_offset;
    span.bytes += d.body_length;
  });
}

Result<RecordTimes::Bucket*> RecordTimes::Indexed(const node::TableHandle& table, int32_t bucket,
                                                  int64_t earliest, int64_t next) {
  Bucket& b = buckets_[{table.descriptor().table_id, bucket}];
  if (next < b.indexed_to) b = Bucket{};  // the log was cut back (an unclean election)
  // Retention deleted what is below `earliest`: its spans go, and a span it cut is indexed
  // again from `earliest`.
  size_t gone = 0;
  while (gone < b.spans.size() && b.spans[gone].base_offset < earliest) ++gone;
  if (gone > 0) {
    const int64_t cut_end = b.spans[gone - 1].next_offset;
    b.spans.erase(b.spans.begin(), b.spans.begin() + static_cast<std::ptrdiff_t>(gone));
    if (cut_end > earliest) {
      std::vector<Span> rest;
      RETURN_NOT_OK(IndexRange(table, bucket, earliest, cut_end, &rest));
      b.spans.insert(b.spans.begin(), rest.begin(), rest.end());
    }
  }
  const int64_t from = std::max(b.indexed_to, earliest);
  if (from < next) {
    RETURN_NOT_OK(IndexRange(table, bucket, from, next, &b.spans));
    b.indexed_to = b.spans.empty() ? next : b.spans.back().next_offset;
  }
  return &b;
}

Result<std::optional<TimedOffset>> RecordTimes::FirstAtOrAfter(const node::TableHandle& table,
                                                               int32_t bucket,
                                                               int64_t timestamp_ms) {
  const engine::BucketStatus status = table.Buckets()[static_cast<size_t>(bucket)];
  std::lock_guard lock(mu_);
  ASSIGN_OR_RAISE(Bucket * b, Indexed(table, bucket, status.earliest_offset, status.next_offset));
  for (const Span& span : b->spans) {
    if (span.newest.timestamp_ms < timestamp_ms) continue;
    // This span holds the first such record: find it.
    std::optional<TimedOffset> found;
    RETURN_NOT_OK(ReadBatches(table, bucket, span.base_offset, span.next_offset,
                              [&](const engine::DecodedBatch& d) {
                                const arrow::Array& times = d.batch->column(kTimestampColumn);
                                for (int64_t i = 0; i < d.batch->num_rows() && !found; ++i) {
                                  if (times.Value<int64_t>(i) >= timestamp_ms) {
                                    found = TimedOffset{d.base_offset + i, times.Value<int64_t>(i)};
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
  for (const Span& span : b->spans) {
    if (!newest || span.newest.timestamp_ms > newest->timestamp_ms) newest = span.newest;
  }
  return newest;
}

}  // namespace oxbow::kafka::internal
