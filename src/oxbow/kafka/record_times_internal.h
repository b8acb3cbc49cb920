// Kafka's time index for raw log tables (docs/kafka.md#record-timestamps): the largest record
// timestamp (the `timestamp` column) of each span of stored batches of about 64 KiB, read once
// and kept per bucket in memory, so that ListOffsets by time answers by the records' own
// timestamps (CreateTime) as Kafka does.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "oxbow/node/table_handle.h"

namespace oxbow::kafka::internal {

// A record: its offset and timestamp (ms).
struct TimedOffset {
  int64_t offset = -1;
  int64_t timestamp_ms = -1;
};

class RecordTimes {
 public:
  // The first record of the bucket, from its earliest offset, whose timestamp is at or after
  // `timestamp_ms`; nullopt when none is.
  Result<std::optional<TimedOffset>> FirstAtOrAfter(const node::TableHandle& table, int32_t bucket,
                                                    int64_t timestamp_ms);
  // The record with the largest timestamp (the first of them); nullopt for an empty bucket.
  Result<std::optional<TimedOffset>> Newest(const node::TableHandle& table, int32_t bucket);

 private:
  // Consecutive whole batches.
  struct Span {
    int64_t base_offset = 0;
    int64_t next_offset = 0;
    int64_t bytes = 0;   // of the batches' bodies
    TimedOffset newest;  // the span's largest timestamp, at its first record
  };
  struct Bucket {
    std::vector<Span> spans;
    int64_t indexed_to = 0;  // batches below this offset are indexed
  };
  // Indexes the batches of [from, to), appending to `spans`.
  Status IndexRange(const node::TableHandle& table, int32_t bucket, int64_t from, int64_t to,
                    std::vector<Span>* spans);
  // The bucket's index from `earliest` up to `next`; `mu_` held.
  Result<Bucket*> Indexed(const node::TableHandle& table, int32_t bucket, int64_t earliest,
                          int64_t next);

  std::mutex mu_;
  std::map<std::pair<int64_t, int32_t>, Bucket> buckets_;  // by table id and bucket
};

}  // namespace oxbow::kafka::internal
