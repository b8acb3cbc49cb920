#include <spdlog/spdlog.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "oxbow/auth/auth.h"
#include "oxbow/common/crc32c.h"
#include "oxbow/kafka/transactions_internal.h"

namespace oxbow::kafka::internal {
namespace {

// A transaction file is a sequence of records: [u32 length][u32 CRC32C of the rest][kind][payload],
// little-endian (docs/kafka.md#transactions).
constexpr char kStateRecord = 'S';    // the id's state, JSON; the last one counts
constexpr char kBatchRecord = 'B';    // [u16 topic length][topic][i32 partition][record batch]
constexpr char kOffsetsRecord = 'O';  // a TxnOffsetCommit, JSON
constexpr size_t kRecordHeader = 8;
constexpr char kFileSuffix[] = ".txn";

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
uint32_t GetU32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

std::string Frame(char kind, std::string_view payload) {
  std::string body(1, kind);
  body.append(payload);
  std::string out;
  PutU32(out, static_cast<uint32_t>(body.size()));
  PutU32(out, crc32c::Value(body.data(), body.size()));
  return out + body;
}

std::string BatchPayload(const std::string& topic, int32_t partition, std::string_view bytes) {
  std::string out;
  out.push_back(static_cast<char>(topic.size() & 0xff));
  out.push_back(static_cast<char>(topic.size() >> 8));
  out += topic;
  PutU32(out, static_cast<uint32_t>(partition));
  out.append(bytes);
  return out;
}

struct StagedBatch {
  std::string topic;
  int32_t partition = 0;
  std::string_view bytes;
};
Result<StagedBatch> ParseBatchPayload(std::string_view payload) {
  const auto* p = reinterpret_cast<const uint8_t*>(payload.data());
  if (payload.size() < 2) return Status::Corruption("staged batch too short");
  const size_t topic_length = p[0] | size_t{p[1]} << 8;
  if (payload.size() < 2 + topic_length + 4) return Status::Corruption("staged batch too short");
  return StagedBatch{std::string(payload.substr(2, topic_length)),
                     static_cast<int32_t>(GetU32(p + 2 + topic_length)),
                     payload.substr(2 + topic_length + 4)};
}

// The records of a file in order; stops at the first torn or damaged one, whose position goes
// to `valid_end`.
std::vector<std::pair<char, std::string_view>> ParseRecords(std::string_view data,
                                                            size_t* valid_end) {
  std::vector<std::pair<char, std::string_view>> records;
  size_t pos = 0;
  while (data.size() - pos >= kRecordHeader) {
    const auto* p = reinterpret_cast<const uint8_t*>(data.data() + pos);
    const uint32_t length = GetU32(p);
    if (length == 0 || data.size() - pos - kRecordHeader < length) break;
    if (crc32c::Value(p + kRecordHeader, length) != GetU32(p + 4)) break;
    records.emplace_back(data[pos + kRecordHeader],
                         data.substr(pos + kRecordHeader + 1, length - 1));
    pos += kRecordHeader + length;
  }
  *valid_end = pos;
  return records;
}

const char* StateName(int state) {
  static const char* kNames[] = {"empty", "ongoing", "prepare_commit"};
  return kNames[state];
}
const char* LastEndName(int end) {
  static const char* kNames[] = {"none", "commit", "abort"};
  return kNames[end];
}
template <typename Enum>
Result<Enum> ParseName(const std::string& name, const char* (*names)(int), int count) {
  for (int i = 0; i < count; ++i) {
    if (name == names(i)) return static_cast<Enum>(i);
  }
  return Status::Corruption("unknown transaction state '" + name + "'");
}

// Errors that may pass when a commit is tried again; any other skips the batch (its topic was
// deleted, its partition is gone) with a warning, as Kafka's markers skip a deleted topic.
bool MayPass(const Status& st) {
  return st.IsIOError() || st.code() == StatusCode::kResourceExhausted ||
         st.code() == StatusCode::kUnavailable;
}

std::string FileName(const std::string& transactional_id) {
  static constexpr char kHex[] = "0123456789abcdef";
  const std::string hash = auth::KeyedHash("kafka-transactional-id", transactional_id);
  std::string name;
  for (size_t i = 0; i < 16; ++i) {
    name += kHex[static_cast<uint8_t>(hash[i]) >> 4];
    name += kHex[static_cast<uint8_t>(hash[i]) & 0xf];
  }
  return name + kFileSuffix;
}

}  // namespace

TransactionCoordinator::TransactionCoordinator(std::string dir, Committer committer,
                                               std::function<int64_t()> new_producer_id,
                                               std::chrono::milliseconds id_expiration)
    : dir_(std::move(dir)),
      committer_(std::move(committer)),
      new_producer_id_(std::move(new_producer_id)),
      id_expiration_(id_expiration),
      fs_(PosixFileSystem::Default()) {}

Result<std::unique_ptr<TransactionCoordinator>> TransactionCoordinator::Open(
    std::string dir, Committer committer, std::function<int64_t()> new_producer_id,
    std::chrono::milliseconds id_expiration) {
  std::unique_ptr<TransactionCoordinator> coordinator(new TransactionCoordinator(
      std::move(dir), std::move(committer), std::move(new_producer_id), id_expiration));
  RETURN_NOT_OK(coordinator->Load());
  coordinator->reaper_ = std::thread([c = coordinator.get()] { c->AbortTimedOut(); });
  return coordinator;
}

TransactionCoordinator::~TransactionCoordinator() { Stop(); }

void TransactionCoordinator::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
}

Status TransactionCoordinator::Load() {
  RETURN_NOT_OK(fs_->CreateDirs(dir_));
  ASSIGN_OR_RAISE(auto names, fs_->ListDir(dir_));
  for (const auto& name : names) {
    if (!name.ends_with(kFileSuffix)) continue;
    RETURN_NOT_OK(LoadFile(name));
  }
  return Status::OK();
}

Status TransactionCoordinator::LoadFile(const std::string& name) {
  auto txn = std::make_shared<Transaction>();
  txn->path = JoinPath(dir_, name);
  ASSIGN_OR_RAISE(auto buffer, ReadWholeFile(*fs_, txn->path));
  const std::string_view data(reinterpret_cast<const char*>(buffer->data()),
                              static_cast<size_t>(buffer->size()));
  size_t valid_end = 0;
  bool has_state = false;
  for (const auto& [kind, payload] : ParseRecords(data, &valid_end)) {
    if (kind == kStateRecord) {
      const auto doc = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
      try {
        txn->id = doc.at("transactional_id").get<std::string>();
        txn->producer_id = doc.at("producer_id").get<int64_t>();
        txn->epoch = doc.at("epoch").get<int16_t>();
        txn->timeout_ms = doc.at("timeout_ms").get<int32_t>();
        ASSIGN_OR_RAISE(txn->state,
                        ParseName<State>(doc.at("state").get<std::string>(), StateName, 3));
        ASSIGN_OR_RAISE(txn->last_end,
                        ParseName<LastEnd>(doc.at("last_end").get<std::string>(), LastEndName, 3));
        txn->partitions.clear();
        for (const auto& p : doc.at("partitions")) {
          txn->partitions.emplace(p.at(0).get<std::string>(), p.at(1).get<int32_t>());
        }
        txn->groups = doc.at("groups").get<std::set<std::string>>();
      } catch (const std::exception& e) {
        return Status::Corruption(txn->path + ": " + e.what());
      }
      has_state = true;
    } else if (kind == kBatchRecord) {
      ASSIGN_OR_RAISE(StagedBatch staged, ParseBatchPayload(payload));
      auto batches = DecodeRecordBatches(staged.bytes);
      if (!batches.ok() || batches->size() != 1) {
        return Status::Corruption(txn->path + ": a staged batch does not decode");
      }
      const RecordBatch& batch = batches->front();
      txn->sequences[{staged.topic, staged.partition}].emplace_back(
          batch.base_sequence, batch.base_sequence + batch.last_offset_delta);
    } else if (kind == kOffsetsRecord) {
      const auto doc = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
      try {
        auto& group = txn->offsets[doc.at("group").get<std::string>()];
        for (const auto& o : doc.at("offsets")) {
          group[{o.at(0).get<std::string>(), o.at(1).get<int32_t>()}] = {
              o.at(2).get<int64_t>(),
              o.at(3).is_null() ? std::nullopt : std::optional(o.at(3).get<std::string>())};
        }
      } catch (const std::exception& e) {
        return Status::Corruption(txn->path + ": " + e.what());
      }
    } else {
      return Status::Corruption(txn->path + ": unknown record kind");
    }
  }
  if (!has_state) {
    // Torn while being created: nothing of it was ever acknowledged.
    return fs_->Remove(txn->path);
  }
  ASSIGN_OR_RAISE(txn->file, fs_->OpenFile(txn->path, FileMode::kWrite));
  if (valid_end < data.size()) {
    spdlog::warn("kafka: {}: dropping a torn record at byte {}", txn->path, valid_end);
    RETURN_NOT_OK(txn->file->Truncate(static_cast<int64_t>(valid_end)));
  }
  txn->file_size = static_cast<int64_t>(valid_end);
  txn->started = Clock::now();
  if (txn->state == State::kPrepareCommit) {
    spdlog::info("kafka: completing the commit of transactional id '{}'", txn->id);
    RETURN_NOT_OK(CarryOutCommit(*txn));
  }
  std::lock_guard lock(mu_);
  transactions_[txn->id] = std::move(txn);
  return Status::OK();
}

std::shared_ptr<TransactionCoordinator::Transaction> TransactionCoordinator::Find(
    const std::string& transactional_id, bool create) {
  std::lock_guard lock(mu_);
  auto it = transactions_.find(transactional_id);
  if (it != transactions_.end()) {
    it->second->last_used = Clock::now();
    return it->second;
  }
  if (!create) return nullptr;
  auto txn = std::make_shared<Transaction>();
  txn->id = transactional_id;
  txn->path = JoinPath(dir_, FileName(transactional_id));
  return transactions_[transactional_id] = txn;
}

TxnAnswer TransactionCoordinator::CheckProducer(const Transaction& txn, int64_t producer_id,
                                                int16_t epoch, bool fenced_error) {
  if (txn.producer_id < 0 || producer_id != txn.producer_id) {
    return {ErrorCode::kInvalidProducerIdMapping, "producer id " + std::to_string(producer_id) +
                                                      " is not transactional id '" + txn.id +
                                                      "''s"};
  }
  if (epoch < txn.epoch) {
    return {fenced_error ? ErrorCode::kProducerFenced : ErrorCode::kInvalidProducerEpoch,
            "producer epoch " + std::to_string(epoch) + " of transactional id '" + txn.id +
                "' was fenced by epoch " + std::to_string(txn.epoch)};
  }
  if (epoch > txn.epoch) {
    return {ErrorCode::kInvalidProducerEpoch, "producer epoch " + std::to_string(epoch) +
                                                  " is newer than " + std::to_string(txn.epoch)};
  }
  return {};
}

std::string TransactionCoordinator::StateRecord(const Transaction& txn) const {
  nlohmann::json partitions = nlohmann::json::array();
  for (const auto& [topic, partition] : txn.partitions) partitions.push_back({topic, partition});
  return nlohmann::json{{"transactional_id", txn.id},
                        {"producer_id", txn.producer_id},
                        {"epoch", txn.epoch},
                        {"timeout_ms", txn.timeout_ms},
                        {"state", StateName(static_cast<int>(txn.state))},
                        {"last_end", LastEndName(static_cast<int>(txn.last_end))},
                        {"partitions", std::move(partitions)},
                        {"groups", txn.groups}}
      .dump();
}

Status TransactionCoordinator::AppendRecord(Transaction& txn, char kind, std::string_view payload) {
  if (!txn.file) return Rewrite(txn);  // first state of a new id
  const std::string framed = Frame(kind, payload);
  Status st = txn.file->WriteAt(
      txn.file_size, ByteSpan(reinterpret_cast<const uint8_t*>(framed.data()), framed.size()));
  if (st.ok()) st = txn.file->Sync();
  if (!st.ok()) {
    // Nothing of a failed write counts: cut it off, so that the next record follows the last
    // good one.
    (void)txn.file->Truncate(txn.file_size);
    return st;
  }
  txn.file_size += static_cast<int64_t>(framed.size());
  return Status::OK();
}

Status TransactionCoordinator::Rewrite(Transaction& txn) {
  const std::string framed = Frame(kStateRecord, StateRecord(txn));
  const std::string name = txn.path.substr(dir_.size() + 1);
  RETURN_NOT_OK(WriteFileAtomically(*fs_, dir_, name, framed));
  ASSIGN_OR_RAISE(txn.file, fs_->OpenFile(txn.path, FileMode::kWrite));
  txn.file_size = static_cast<int64_t>(framed.size());
  return Status::OK();
}

void TransactionCoordinator::ResetOpen(Transaction& txn) {
  txn.partitions.clear();
  txn.groups.clear();
  txn.sequences.clear();
  txn.offsets.clear();
}

Status TransactionCoordinator::Begin(Transaction& txn) {
  if (txn.state == State::kOngoing) return AppendRecord(txn, kStateRecord, StateRecord(txn));
  txn.state = State::kOngoing;
  txn.started = Clock::now();
  Status st = AppendRecord(txn, kStateRecord, StateRecord(txn));
  if (!st.ok()) txn.state = State::kEmpty;
  return st;
}

Status TransactionCoordinator::CarryOutCommit(Transaction& txn) {
  ASSIGN_OR_RAISE(auto buffer, ReadWholeFile(*fs_, txn.path));
  const std::string_view data(
      reinterpret_cast<const char*>(buffer->data()),
      static_cast<size_t>(std::min<int64_t>(buffer->size(), txn.file_size)));
  size_t valid_end = 0;
  for (const auto& [kind, payload] : ParseRecords(data, &valid_end)) {
    if (kind != kBatchRecord) continue;
    ASSIGN_OR_RAISE(StagedBatch staged, ParseBatchPayload(payload));
    Status st = committer_.append(staged.topic, staged.partition, staged.bytes);
    if (!st.ok() && MayPass(st)) return st;
    if (!st.ok()) {
      spdlog::warn("kafka: transactional id '{}' commits without its batch of {}-{}: {}", txn.id,
                   staged.topic, staged.partition, st.message());
    }
  }
  for (const auto& [group, partitions] : txn.offsets) {
    std::vector<clientstate::OffsetCommit> commits;
    for (const auto& [partition, committed] : partitions) {
      commits.push_back({partition.first, partition.second, committed});
    }
    Status st = committer_.commit_offsets(group, commits);
    if (!st.ok() && MayPass(st)) return st;
    if (!st.ok()) {
      spdlog::warn("kafka: transactional id '{}' commits without group '{}''s offsets: {}", txn.id,
                   group, st.message());
    }
  }
  txn.state = State::kEmpty;
  txn.last_end = LastEnd::kCommit;
  ResetOpen(txn);
  return Rewrite(txn);
}

Status TransactionCoordinator::Abort(Transaction& txn, bool bump) {
  txn.state = State::kEmpty;
  // A fenced producer's retry of EndTxn is refused by its epoch anyway.
  txn.last_end = bump ? LastEnd::kNone : LastEnd::kAbort;
  ResetOpen(txn);
  if (bump) {
    if (txn.epoch >= INT16_MAX - 1) {
      txn.producer_id = new_producer_id_();
      txn.epoch = 0;
    } else {
      ++txn.epoch;
    }
  }
  return Rewrite(txn);
}

TransactionCoordinator::ProducerIdAndEpoch TransactionCoordinator::InitProducer(
    const std::string& transactional_id, int32_t timeout_ms, int64_t expected_id,
    int16_t expected_epoch, bool fenced_error) {
  ProducerIdAndEpoch out;
  if (timeout_ms <= 0 || timeout_ms > kMaxTransactionTimeoutMs) {
    out.answer = {ErrorCode::kInvalidTransactionTimeout,
                  "transaction.timeout.ms " + std::to_string(timeout_ms) + " is not in (0, " +
                      std::to_string(kMaxTransactionTimeoutMs) + "]"};
    return out;
  }
  auto txn = Find(transactional_id, /*create=*/true);
  std::lock_guard lock(txn->mu);
  if (txn->producer_id >= 0 && expected_id >= 0 &&
      (expected_id != txn->producer_id || expected_epoch != txn->epoch)) {
    out.answer = {fenced_error ? ErrorCode::kProducerFenced : ErrorCode::kInvalidProducerEpoch,
                  "producer " + std::to_string(expected_id) + " epoch " +
                      std::to_string(expected_epoch) + " is no longer transactional id '" +
                      transactional_id + "''s"};
    return out;
  }
  Status st;
  if (txn->state == State::kPrepareCommit) st = CarryOutCommit(*txn);
  if (st.ok() && txn->producer_id < 0) {
    txn->producer_id = new_producer_id_();
    txn->epoch = 0;
    txn->timeout_ms = timeout_ms;
    st = Rewrite(*txn);
  } else if (st.ok()) {
    txn->timeout_ms = timeout_ms;
    st = Abort(*txn, /*bump=*/true);  // an open transaction of an older instance ends here
  }
  if (!st.ok()) {
    out.answer = {ErrorCode::kCoordinatorNotAvailable, std::string(st.message())};
    return out;
  }
  out.producer_id = txn->producer_id;
  out.epoch = txn->epoch;
  return out;
}

TxnAnswer TransactionCoordinator::WithProducer(const std::string& transactional_id,
                                               int64_t producer_id, int16_t epoch,
                                               bool fenced_error,
                                               const std::function<TxnAnswer(Transaction&)>& then) {
  auto txn = Find(transactional_id, false);
  if (!txn) return {ErrorCode::kInvalidProducerIdMapping, "unknown transactional id"};
  std::lock_guard lock(txn->mu);
  if (TxnAnswer checked = CheckProducer(*txn, producer_id, epoch, fenced_error); !checked.ok()) {
    return checked;
  }
  return then(*txn);
}

TxnAnswer TransactionCoordinator::Join(Transaction& txn, const std::function<bool()>& add,
                                       const std::function<void()>& undo) {
  if (txn.state == State::kPrepareCommit) {
    return {ErrorCode::kConcurrentTransactions, "the last transaction is still committing"};
  }
  if (!add() && txn.state == State::kOngoing) return {};
  if (Status st = Begin(txn); !st.ok()) {
    undo();
    return {ErrorCode::kCoordinatorNotAvailable, std::string(st.message())};
  }
  return {};
}

TxnAnswer TransactionCoordinator::AddPartitions(
    const std::string& transactional_id, int64_t producer_id, int16_t epoch,
    const std::vector<clientstate::TopicPartition>& partitions, bool fenced_error) {
  return WithProducer(transactional_id, producer_id, epoch, fenced_error, [&](Transaction& txn) {
    std::vector<Partition> added;
    return Join(
        txn,
        [&] {
          for (const auto& p : partitions) {
            if (txn.partitions.emplace(p.topic, p.partition).second) {
              added.emplace_back(p.topic, p.partition);
            }
          }
          return !added.empty();
        },
        [&] {
          for (const auto& p : added) txn.partitions.erase(p);
        });
  });
}

TxnAnswer TransactionCoordinator::AddGroup(const std::string& transactional_id, int64_t producer_id,
                                           int16_t epoch, const std::string& group,
                                           bool fenced_error) {
  return WithProducer(transactional_id, producer_id, epoch, fenced_error, [&](Transaction& txn) {
    return Join(
        txn, [&] { return txn.groups.insert(group).second; }, [&] { txn.groups.erase(group); });
  });
}

TxnAnswer TransactionCoordinator::StageBatch(const std::string& transactional_id,
                                             const std::string& topic, int32_t partition,
                                             const RecordBatch& batch, std::string_view bytes) {
  return WithProducer(
      transactional_id, batch.producer_id, batch.producer_epoch, false,
      [&](Transaction& txn) -> TxnAnswer {
        const Partition key{topic, partition};
        if (txn.state != State::kOngoing || !txn.partitions.contains(key)) {
          return {ErrorCode::kInvalidTxnState,
                  "partition " + topic + "-" + std::to_string(partition) +
                      " is not in an open transaction of '" + transactional_id + "'"};
        }
        auto& sequences = txn.sequences[key];
        const int32_t last = batch.base_sequence + batch.last_offset_delta;
        for (const auto& [first, staged_last] : sequences) {
          if (first == batch.base_sequence && staged_last == last) return {};  // a retry
        }
        if (!sequences.empty() &&
            batch.base_sequence != ((int64_t{sequences.back().second} + 1) & INT32_MAX)) {
          return {ErrorCode::kOutOfOrderSequenceNumber,
                  "sequence " + std::to_string(batch.base_sequence) + " after " +
                      std::to_string(sequences.back().second)};
        }
        if (Status st = AppendRecord(txn, kBatchRecord, BatchPayload(topic, partition, bytes));
            !st.ok()) {
          return {ErrorCode::kUnknownServerError, std::string(st.message())};
        }
        sequences.emplace_back(batch.base_sequence, last);
        return {};
      });
}

TxnAnswer TransactionCoordinator::StageOffsets(
    const std::string& transactional_id, int64_t producer_id, int16_t epoch,
    const std::string& group, const std::vector<clientstate::OffsetCommit>& offsets) {
  return WithProducer(
      transactional_id, producer_id, epoch, true, [&](Transaction& txn) -> TxnAnswer {
        if (txn.state != State::kOngoing || !txn.groups.contains(group)) {
          return {
              ErrorCode::kInvalidTxnState,
              "group '" + group + "' is not in an open transaction of '" + transactional_id + "'"};
        }
        nlohmann::json list = nlohmann::json::array();
        for (const auto& o : offsets) {
          list.push_back({o.topic, o.partition, o.committed.offset,
                          o.committed.metadata ? nlohmann::json(*o.committed.metadata) : nullptr});
        }
        if (Status st = AppendRecord(txn, kOffsetsRecord,
                                     nlohmann::json{{"group", group}, {"offsets", list}}.dump());
            !st.ok()) {
          return {ErrorCode::kCoordinatorNotAvailable, std::string(st.message())};
        }
        for (const auto& o : offsets) txn.offsets[group][{o.topic, o.partition}] = o.committed;
        return {};
      });
}

TxnAnswer TransactionCoordinator::End(const std::string& transactional_id, int64_t producer_id,
                                      int16_t epoch, bool commit, bool fenced_error) {
  return WithProducer(
      transactional_id, producer_id, epoch, fenced_error, [&](Transaction& txn) -> TxnAnswer {
        const char* verb = commit ? "commit" : "abort";
        Status st;
        switch (txn.state) {
          case State::kEmpty:
            if (txn.last_end == (commit ? LastEnd::kCommit : LastEnd::kAbort)) return {};  // retry
            return {ErrorCode::kInvalidTxnState,
                    std::string("no open transaction of '") + transactional_id + "' to " + verb};
          case State::kPrepareCommit:
            if (!commit) {
              return {ErrorCode::kInvalidTxnState, "the transaction of '" + transactional_id +
                                                       "' is committing: it cannot abort"};
            }
            st = CarryOutCommit(txn);
            break;
          case State::kOngoing:
            if (!commit) {
              st = Abort(txn, /*bump=*/false);
              break;
            }
            txn.state = State::kPrepareCommit;
            st = AppendRecord(txn, kStateRecord, StateRecord(txn));
            if (!st.ok()) {
              txn.state = State::kOngoing;
              break;
            }
            st = CarryOutCommit(txn);
            break;
        }
        if (!st.ok()) {
          // The client tries again (it looks the coordinator up anew first).
          return {ErrorCode::kCoordinatorNotAvailable,
                  std::string("could not ") + verb + ": " + st.message()};
        }
        return {};
      });
}

bool TransactionCoordinator::HasPendingOffsets(const std::string& group, const std::string& topic,
                                               int32_t partition) {
  std::vector<std::shared_ptr<Transaction>> all;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, txn] : transactions_) all.push_back(txn);
  }
  for (const auto& txn : all) {
    std::lock_guard lock(txn->mu);
    auto it = txn->offsets.find(group);
    if (it != txn->offsets.end() && it->second.contains({topic, partition})) return true;
  }
  return false;
}

void TransactionCoordinator::AbortTimedOut() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    stop_cv_.wait_for(lock, std::chrono::milliseconds(500));
    if (stopping_) break;
    std::vector<std::shared_ptr<Transaction>> all;
    for (const auto& [id, txn] : transactions_) all.push_back(txn);
    lock.unlock();
    const auto now = Clock::now();
    for (const auto& txn : all) {
      std::lock_guard txn_lock(txn->mu);
      if (txn->state != State::kOngoing ||
          now - txn->started < std::chrono::milliseconds(txn->timeout_ms)) {
        continue;
      }
      spdlog::info("kafka: aborting the transaction of '{}': open longer than its timeout ({} ms)",
                   txn->id, txn->timeout_ms);
      if (Status st = Abort(*txn, /*bump=*/true); !st.ok()) {
        spdlog::error("kafka: aborting the transaction of '{}': {}", txn->id, st.message());
      }
    }
    lock.lock();
    ForgetExpired();
  }
}

void TransactionCoordinator::ForgetExpired() {
  const auto now = Clock::now();
  for (auto it = transactions_.begin(); it != transactions_.end();) {
    Transaction& txn = *it->second;
    // Holding mu_, so nobody finds the id meanwhile; one in use now is not expired.
    std::unique_lock txn_lock(txn.mu, std::try_to_lock);
    if (!txn_lock || txn.state != State::kEmpty || now - txn.last_used < id_expiration_) {
      ++it;
      continue;
    }
    txn.file.reset();
    if (Status st = fs_->Remove(txn.path); !st.ok() && !st.IsNotFound()) {
      spdlog::error("kafka: forgetting transactional id '{}': {}", txn.id, st.message());
      ++it;
      continue;
    }
    spdlog::info("kafka: forgot transactional id '{}', unused for {} s", txn.id,
                 std::chrono::duration_cast<std::chrono::seconds>(now - txn.last_used).count());
    txn_lock.unlock();
    it = transactions_.erase(it);
  }
}

}  // namespace oxbow::kafka::internal
