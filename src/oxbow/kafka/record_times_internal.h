// Kafka's time index for raw log tables (docs/kafka.md#record-timestamps): each stored batch's
// offsets and largest record timestamp (the `timestamp` column), read once per batch and kept
// per bucket in memory, so that ListOffsets by time answers by the records' own timestamps
// (CreateTime) as Kafka does.
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
  struct Batch {
    int64_t base_offset = 0;
    int64_t next_offset = 0;
    TimedOffset newest;  // the batch's largest timestamp, at its first record
  };
  struct Bucket {
    std::vector<Batch> batches;
    int64_t indexed_to = 0;  // batches below this offset are indexed
  };
  // The bucket's index, brought up to its end; `mu_` held.
  Result<Bucket*> Indexed(const node::TableHandle& table, int32_t bucket, int64_t earliest,
                          int64_t next);

  std::mutex mu_;
  std::map<std::pair<int64_t, int32_t>, Bucket> buckets_;  // by table id and bucket
};

}  // namespace oxbow::kafka::internal
