// The sequences of idempotent producers (Kafka's enable.idempotence): per (table, bucket,
// producer id) the epoch, the last sequence and where the recent batches landed, so that a
// retried batch is acknowledged once and never appended twice, across restarts and crashes.
// Each such batch is stored with its producer ("kafka.producer" batch metadata, in the same
// durable write as its rows); <dir>/producers.json snapshots the state with the offset of each
// bucket it covers, and opening replays the batches after it (docs/kafka.md#idempotence).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "oxbow/arrow/schema.h"
#include "oxbow/catalog/descriptor.h"
#include "oxbow/engine/engine.h"

namespace oxbow::clientstate {

// The producer of one batch: its id, epoch and the sequences of its first and last record.
struct IdempotentBatch {
  int64_t producer_id = 0;
  int16_t epoch = 0;
  int32_t first_sequence = 0;
  int32_t last_sequence = 0;
};

// What Append did with a batch.
struct SequencedAppend {
  enum class Outcome {
    kAppended,    // new: appended at base_offset
    kDuplicate,   // a retry of a recent batch: acknowledged at its first base_offset, not stored
    kStaleEpoch,  // the producer has a newer epoch (message says which)
    kOutOfOrder,  // a gap in the producer's sequences (message says where)
  };
  Outcome outcome = Outcome::kAppended;
  int64_t base_offset = -1;
  std::string message;
};

class ProducerStates {
 public:
  // Loads <dir>/producers.json and replays what it does not cover of the logs of `engine`'s
  // tables for which `may_hold` is true (the tables a front end appends idempotent batches
  // to). Damage in a log stops that log's replay with a warning, not the open.
  static Result<std::unique_ptr<ProducerStates>> Open(
      engine::Engine* engine, std::string dir,
      std::function<bool(const catalog::TableDescriptor&)> may_hold);

  // A new producer id, unique across restarts (microseconds since the epoch at open, counted up).
  int64_t NewProducerId() { return next_producer_id_++; }

  // Checks `batch` against its producer's state on `bucket` of `table` and, when it is new,
  // appends it with `append` (which stores the given batch metadata with the rows, durably, and
  // returns the base offset) and records it. One batch at a time, so checks and appends of a
  // producer never interleave. `transactional`: a batch of a committed Kafka transaction,
  // appended at commit, whose sequences may skip those of aborted transactions (never appended);
  // one at or below the last sequence stored is a commit carried out again after a crash, a
  // duplicate.
  Result<SequencedAppend> Append(
      const std::string& table, int32_t bucket, const IdempotentBatch& batch,
      const std::function<Result<int64_t>(const arrow::KeyValueMetadata&)>& append,
      bool transactional = false);

  // Cluster mode: this server just became the leader of `bucket`; replaces what it knew of the
  // bucket's producers with what its log (the copy its followers hold too) says.
  Status RebuildBucket(const std::string& table, int32_t bucket);

  // Writes the snapshot now.
  Status Save();
  // Writes it when the state changed and the last snapshot is older than a few seconds.
  void SaveIfDue();

 private:
  using Clock = std::chrono::steady_clock;
  struct Producer {
    int16_t epoch = -1;
    int32_t last_sequence = -1;
    struct Appended {
      int32_t first_sequence;
      int32_t last_sequence;
      int64_t base_offset;
    };
    std::vector<Appended> recent;  // the last five, Kafka's max in-flight batches

    // Records a batch appended at `base_offset` (one already recorded, or of an older epoch,
    // changes nothing).
    void Record(const IdempotentBatch& batch, int64_t base_offset);
  };
  using Key = std::tuple<std::string, int32_t, int64_t>;  // table, bucket, producer id

  ProducerStates(engine::Engine* engine, std::string dir);
  Status Load(const std::function<bool(const catalog::TableDescriptor&)>& may_hold);
  // Replays the idempotent batches of one bucket's [from, to).
  Status Replay(const std::string& table, int32_t bucket, int64_t from, int64_t to,
                int64_t* replayed);

  engine::Engine* const engine_;
  const std::string dir_;
  std::atomic<int64_t> next_producer_id_;
  std::mutex mu_;
  std::map<Key, Producer> producers_;  // guarded by mu_
  bool changed_ = false;               // guarded by mu_
  Clock::time_point saved_ = Clock::now();
};

}  // namespace oxbow::clientstate
