// Kafka transactions (KIP-98) as Oxbow keeps them (docs/kafka.md#transactions): a transaction's
// record batches and offset commits are staged, not appended. Each transactional.id has a file
// under <client_state_dir>/transactions holding its producer id, epoch and state, and what its
// open transaction staged. EndTxn(commit) records the decision durably, then appends the staged
// batches to their partitions and commits the staged offsets; abort drops them. So the logs, and
// everyone reading them (Fetch at either isolation level, Flight, the lake), hold committed
// records only, and the last stable offset is the high watermark.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "oxbow/clientstate/offset_store.h"
#include "oxbow/common/file_system.h"
#include "oxbow/kafka/api.h"
#include "oxbow/kafka/records.h"

namespace oxbow::kafka::internal {

// Kafka's transaction.max.timeout.ms: a producer asking for more is refused.
inline constexpr int32_t kMaxTransactionTimeoutMs = 15 * 60 * 1000;
// Kafka's transactional.id.expiration.ms: an id without an open transaction, unused this long,
// is forgotten (its file removed), as ids a Flink job makes per checkpoint must be.
inline constexpr std::chrono::milliseconds kTransactionalIdExpiration = std::chrono::hours(24 * 7);

// What a coordinator call answers: Kafka's error and, when there is one, why.
struct TxnAnswer {
  ErrorCode error = ErrorCode::kNone;
  std::string message;
  bool ok() const { return error == ErrorCode::kNone; }
};

class TransactionCoordinator {
 public:
  // What a commit does with the staged parts; both must be idempotent (a commit interrupted by
  // a crash is carried out again at open), and fail with Unavailable, IOError or
  // ResourceExhausted only when trying again may succeed.
  struct Committer {
    // Appends one staged record batch (the bytes the producer sent) to its partition.
    std::function<Status(const std::string& topic, int32_t partition, std::string_view batch)>
        append;
    std::function<Status(const std::string& group,
                         const std::vector<clientstate::OffsetCommit>& offsets)>
        commit_offsets;
  };

  // Loads every transactional id's file under `dir` (created when absent): a commit that was
  // decided but not carried out is carried out now; open transactions stay open, their timeout
  // counted from now. Starts the thread that aborts transactions past their timeout.
  // Ids unused for `id_expiration` (and restarts count as use) are forgotten.
  static Result<std::unique_ptr<TransactionCoordinator>> Open(
      std::string dir, Committer committer, std::function<int64_t()> new_producer_id,
      std::chrono::milliseconds id_expiration = kTransactionalIdExpiration);
  ~TransactionCoordinator();
  TransactionCoordinator(const TransactionCoordinator&) = delete;
  TransactionCoordinator& operator=(const TransactionCoordinator&) = delete;

  struct ProducerIdAndEpoch {
    TxnAnswer answer;
    int64_t producer_id = -1;
    int16_t epoch = -1;
  };
  // InitProducerId with a transactional id: the id's producer with its epoch bumped (fencing
  // every older instance), its open transaction aborted; a new producer id the first time.
  // `expected_id`/`expected_epoch` (v3+, -1 when unset): the producer the caller had.
  ProducerIdAndEpoch InitProducer(const std::string& transactional_id, int32_t timeout_ms,
                                  int64_t expected_id, int16_t expected_epoch, bool fenced_error);

  // AddPartitionsToTxn / AddOffsetsToTxn: the partitions (or the group's offsets) join the
  // producer's transaction, which starts with the first of them. `fenced_error`: whether the
  // request version knows PRODUCER_FENCED (else INVALID_PRODUCER_EPOCH).
  TxnAnswer AddPartitions(const std::string& transactional_id, int64_t producer_id, int16_t epoch,
                          const std::vector<clientstate::TopicPartition>& partitions,
                          bool fenced_error);
  TxnAnswer AddGroup(const std::string& transactional_id, int64_t producer_id, int16_t epoch,
                     const std::string& group, bool fenced_error);

  // Produce of a transactional batch: staged durably, acknowledged without an offset. A retry
  // of a batch already staged is acknowledged again and not staged twice.
  TxnAnswer StageBatch(const std::string& transactional_id, const std::string& topic,
                       int32_t partition, const RecordBatch& batch, std::string_view bytes);
  // TxnOffsetCommit: the offsets are committed with the transaction.
  TxnAnswer StageOffsets(const std::string& transactional_id, int64_t producer_id, int16_t epoch,
                         const std::string& group,
                         const std::vector<clientstate::OffsetCommit>& offsets);
  // EndTxn: commits (appends what was staged, then forgets it) or aborts (forgets it). A retry
  // of the end just made answers as it did.
  TxnAnswer End(const std::string& transactional_id, int64_t producer_id, int16_t epoch,
                bool commit, bool fenced_error);

  // Whether an open transaction holds offsets of the group's partition (OffsetFetch's
  // require_stable answers UNSTABLE_OFFSET_COMMIT then).
  bool HasPendingOffsets(const std::string& group, const std::string& topic, int32_t partition);

  // Stops the timeout thread. Idempotent.
  void Stop();

 private:
  using Clock = std::chrono::steady_clock;
  using Partition = std::pair<std::string, int32_t>;
  enum class State { kEmpty, kOngoing, kPrepareCommit };
  enum class LastEnd { kNone, kCommit, kAbort };
  struct Transaction {
    std::mutex mu;  // one call at a time per transactional id
    std::string id;
    std::string path;
    int64_t producer_id = -1;
    int16_t epoch = -1;
    int32_t timeout_ms = 60000;
    State state = State::kEmpty;
    LastEnd last_end = LastEnd::kNone;
    Clock::time_point started;
    Clock::time_point last_used = Clock::now();  // guarded by the coordinator's mu_
    std::set<Partition> partitions;
    std::set<std::string> groups;
    // The open transaction's staged batches' sequences per partition: (first, last) of each.
    std::map<Partition, std::vector<std::pair<int32_t, int32_t>>> sequences;
    std::map<std::string, std::map<Partition, clientstate::CommittedOffset>> offsets;
    std::unique_ptr<File> file;
    int64_t file_size = 0;
  };

  TransactionCoordinator(std::string dir, Committer committer,
                         std::function<int64_t()> new_producer_id,
                         std::chrono::milliseconds id_expiration);
  Status Load();
  Status LoadFile(const std::string& name);
  // The transaction of an id, created (not yet stored) when `create`; null when absent.
  std::shared_ptr<Transaction> Find(const std::string& transactional_id, bool create);
  // Runs `then` on the id's transaction, locked, once the request's producer passed
  // CheckProducer; the check's answer otherwise (INVALID_PRODUCER_ID_MAPPING for an unknown id).
  TxnAnswer WithProducer(const std::string& transactional_id, int64_t producer_id, int16_t epoch,
                         bool fenced_error, const std::function<TxnAnswer(Transaction&)>& then);
  // AddPartitionsToTxn's and AddOffsetsToTxn's: `add` adds to the transaction (false: it had
  // everything already), which begins with it; `undo` takes it back when that is not stored.
  TxnAnswer Join(Transaction& txn, const std::function<bool()>& add,
                 const std::function<void()>& undo);
  // Kafka's producer checks of a coordinator request: the id's producer id and epoch.
  static TxnAnswer CheckProducer(const Transaction& txn, int64_t producer_id, int16_t epoch,
                                 bool fenced_error);
  // Makes the transaction ongoing (from now on, when it was not), its state stored durably.
  Status Begin(Transaction& txn);
  // Appends one framed record to the transaction's file, synced.
  Status AppendRecord(Transaction& txn, char kind, std::string_view payload);
  // Replaces the file with the transaction's state alone (what it staged is gone), synced.
  Status Rewrite(Transaction& txn);
  std::string StateRecord(const Transaction& txn) const;
  // Carries out a decided commit: every staged batch in order, then the offsets; then the
  // transaction is empty.
  Status CarryOutCommit(Transaction& txn);
  // Drops what the open transaction staged; `bump`: fences its producer (timeouts).
  Status Abort(Transaction& txn, bool bump);
  void ResetOpen(Transaction& txn);
  // The timeout thread: aborts transactions past their timeout, forgets expired ids.
  void AbortTimedOut();
  void ForgetExpired();

  const std::string dir_;
  const Committer committer_;
  const std::function<int64_t()> new_producer_id_;
  const std::chrono::milliseconds id_expiration_;
  std::shared_ptr<FileSystem> fs_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Transaction>> transactions_;  // guarded by mu_
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // guarded by mu_
  std::thread reaper_;
};

}  // namespace oxbow::kafka::internal
