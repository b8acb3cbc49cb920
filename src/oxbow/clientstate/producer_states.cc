#include "oxbow/clientstate/producer_states.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "oxbow/arrow/ipc.h"

namespace oxbow::clientstate {
namespace {

constexpr char kProducersFile[] = "producers.json";
constexpr size_t kRecentBatches = 5;
// A restart after a crash replays at most the batches appended since the last snapshot.
constexpr auto kSnapshotInterval = std::chrono::seconds(10);
// The batch metadata of an idempotent batch: "<producer id> <epoch> <first> <last sequence>".
constexpr std::string_view kProducerMetadataKey = "kafka.producer";

std::string ProducerMetadata(const IdempotentBatch& b) {
  return std::to_string(b.producer_id) + " " + std::to_string(b.epoch) + " " +
         std::to_string(b.first_sequence) + " " + std::to_string(b.last_sequence);
}

bool ParseProducerMetadata(const std::string& text, IdempotentBatch* batch) {
  std::istringstream in(text);
  int32_t epoch = -1;
  in >> batch->producer_id >> epoch >> batch->first_sequence >> batch->last_sequence;
  batch->epoch = static_cast<int16_t>(epoch);
  return !in.fail() && in.eof() && batch->producer_id >= 0 && epoch >= 0 && epoch <= INT16_MAX &&
         batch->first_sequence >= 0 && batch->last_sequence >= 0;
}

}  // namespace

void ProducerStates::Producer::Record(const IdempotentBatch& batch, int64_t base_offset) {
  if (batch.epoch < epoch) return;
  if (batch.epoch > epoch) *this = Producer{batch.epoch};
  if (!recent.empty() && base_offset <= recent.back().base_offset) return;
  last_sequence = batch.last_sequence;
  recent.push_back({batch.first_sequence, batch.last_sequence, base_offset});
  if (recent.size() > kRecentBatches) recent.erase(recent.begin());
}

ProducerStates::ProducerStates(engine::Engine* engine, std::string dir)
    : engine_(engine),
      dir_(std::move(dir)),
      next_producer_id_(std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count()) {}

Result<std::unique_ptr<ProducerStates>> ProducerStates::Open(
    engine::Engine* engine, std::string dir,
    std::function<bool(const catalog::TableDescriptor&)> may_hold) {
  RETURN_NOT_OK(PosixFileSystem::Default()->CreateDirs(dir));
  std::unique_ptr<ProducerStates> states(new ProducerStates(engine, std::move(dir)));
  RETURN_NOT_OK(states->Load(may_hold));
  return states;
}

Result<SequencedAppend> ProducerStates::Append(
    const std::string& table, int32_t bucket, const IdempotentBatch& batch,
    const std::function<Result<int64_t>(const arrow::KeyValueMetadata&)>& append,
    bool transactional) {
  std::lock_guard lock(mu_);
  Producer& state = producers_[{table, bucket, batch.producer_id}];
  if (batch.epoch < state.epoch) {
    return SequencedAppend{SequencedAppend::Outcome::kStaleEpoch, -1,
                           "producer epoch " + std::to_string(batch.epoch) + " is older than " +
                               std::to_string(state.epoch)};
  }
  if (batch.epoch == state.epoch) {
    const auto duplicate =
        std::find_if(state.recent.begin(), state.recent.end(), [&](const auto& a) {
          return a.first_sequence == batch.first_sequence && a.last_sequence == batch.last_sequence;
        });
    if (duplicate != state.recent.end()) {
      return SequencedAppend{SequencedAppend::Outcome::kDuplicate, duplicate->base_offset, ""};
    }
    if (transactional && batch.first_sequence <= state.last_sequence) {
      return SequencedAppend{SequencedAppend::Outcome::kDuplicate, -1, ""};
    }
    if (!transactional && state.last_sequence >= 0 &&
        batch.first_sequence != ((state.last_sequence + int64_t{1}) & INT32_MAX)) {
      return SequencedAppend{SequencedAppend::Outcome::kOutOfOrder, -1,
                             "sequence " + std::to_string(batch.first_sequence) + " after " +
                                 std::to_string(state.last_sequence)};
    }
  }
  ASSIGN_OR_RAISE(const int64_t base_offset,
                  append({{std::string(kProducerMetadataKey), ProducerMetadata(batch)}}));
  state.Record(batch, base_offset);
  changed_ = true;
  return SequencedAppend{SequencedAppend::Outcome::kAppended, base_offset, ""};
}

// producers.json: {"covered": [{"table", "table_id", "partition", "next_offset"}],
// "producers": [{"table", "partition", "producer_id", "epoch", "last_sequence",
// "recent": [[first_sequence, last_sequence, base_offset]...]}]}. The state reflects every
// batch below each partition's next_offset; batches from there on are replayed.
Status ProducerStates::Load(const std::function<bool(const catalog::TableDescriptor&)>& may_hold) {
  FileSystem& fs = *PosixFileSystem::Default();
  const std::string path = JoinPath(dir_, kProducersFile);
  // (table, partition) -> the offset the snapshot covers, for tables that still have its id.
  std::map<std::pair<std::string, int32_t>, int64_t> covered;
  std::map<std::string, int64_t> table_ids;
  for (const auto& t : engine_->ListTables()) table_ids[t.name] = t.table_id;
  std::lock_guard lock(mu_);
  if (!fs.FileSize(path).status().IsNotFound()) {
    ASSIGN_OR_RAISE(auto buffer, ReadWholeFile(fs, path));
    const auto doc = nlohmann::json::parse(buffer->data(), buffer->data() + buffer->size(), nullptr,
                                           /*allow_exceptions=*/false);
    // Before the batches carried their producer, the file was a bare array written at stop.
    const bool legacy = doc.is_array();
    if (!doc.is_object() && !legacy) {
      return Status::Corruption(path + " is not a producer state file");
    }
    try {
      for (const auto& c : legacy ? nlohmann::json::array() : doc.at("covered")) {
        const auto table = c.at("table").get<std::string>();
        const auto id = table_ids.find(table);
        if (id == table_ids.end() || id->second != c.at("table_id").get<int64_t>()) continue;
        covered[{table, c.at("partition").get<int32_t>()}] = c.at("next_offset").get<int64_t>();
      }
      for (const auto& p : legacy ? doc : doc.at("producers")) {
        const auto table = p.at("table").get<std::string>();
        const auto partition = p.at("partition").get<int32_t>();
        if (!legacy && !covered.contains({table, partition})) continue;  // the table was dropped
        Producer& state = producers_[{table, partition, p.at("producer_id").get<int64_t>()}];
        state.epoch = p.at("epoch").get<int16_t>();
        state.last_sequence = p.at("last_sequence").get<int32_t>();
        for (const auto& a : p.at("recent")) {
          state.recent.push_back(
              {a.at(0).get<int32_t>(), a.at(1).get<int32_t>(), a.at(2).get<int64_t>()});
        }
      }
    } catch (const std::exception& e) {
      return Status::Corruption(path + ": " + e.what());
    }
  }
  // Replays the idempotent batches the snapshot does not cover (all of them without one).
  int64_t replayed = 0;
  for (const auto& [name, id] : table_ids) {
    auto table = engine_->DescribeTable(name);
    if (!table.ok() || !may_hold(table->table)) continue;
    for (const engine::BucketStatus& bucket : table->buckets) {
      const auto c = covered.find({name, bucket.bucket});
      const int64_t from = std::max(bucket.earliest_offset, c == covered.end() ? 0 : c->second);
      if (from >= bucket.next_offset) continue;
      // Damage in the log must not keep the front end from starting: what was read counts.
      if (Status st = Replay(name, bucket.bucket, from, bucket.next_offset, &replayed); !st.ok()) {
        spdlog::warn(
            "replaying the idempotent producers of table '{}' bucket {} stopped ({}); a retry "
            "of a batch after that point may be appended again",
            name, bucket.bucket, st.message());
      }
    }
  }
  if (replayed > 0) {
    spdlog::info("replayed {} idempotent batches the producer state snapshot did not cover",
                 replayed);
    changed_ = true;
  }
  return Status::OK();
}

Status ProducerStates::Replay(const std::string& table, int32_t bucket, int64_t from, int64_t to,
                              int64_t* replayed) {
  // The log itself, fsynced or not: in cluster mode a new leader replays what its high
  // watermark does not cover yet too, since a producer may retry any of it.
  ASSIGN_OR_RAISE(auto runtime, engine_->GetTable(table));
  if (bucket < 0 || bucket >= static_cast<int32_t>(runtime->logs().size())) {
    return Status::OutOfRange("table " + Quote(table) + " has no bucket " + std::to_string(bucket));
  }
  log::BucketLog& log = *runtime->logs()[static_cast<size_t>(bucket)];
  log::ReadOptions read;
  read.verify_body = false;  // only the metadata is read
  read.limit = log::ReadLimit::kWritten;
  for (int64_t offset = from; offset < to;) {
    ASSIGN_OR_RAISE(auto batches, log.Read(offset, int64_t{8} << 20, read));
    if (batches.empty()) return Status::OK();
    for (const log::LogBatch& batch : batches) {
      offset = batch.next_offset();
      ASSIGN_OR_RAISE(auto metadata, arrow::ipc::MessageCustomMetadata(*batch.metadata));
      const auto producer = arrow::FindMetadata(metadata, kProducerMetadataKey);
      if (!producer) continue;
      IdempotentBatch parsed;
      if (!ParseProducerMetadata(*producer, &parsed)) {
        return Status::Corruption("offset " + std::to_string(batch.base_offset) + ": " +
                                  std::string(kProducerMetadataKey) + " " + Quote(*producer) +
                                  " is not \"<producer id> <epoch> <first> <last sequence>\"");
      }
      producers_[{table, bucket, parsed.producer_id}].Record(parsed, batch.base_offset);
      ++*replayed;
    }
  }
  return Status::OK();
}

Status ProducerStates::RebuildBucket(const std::string& table, int32_t bucket) {
  ASSIGN_OR_RAISE(auto runtime, engine_->GetTable(table));
  if (bucket < 0 || bucket >= static_cast<int32_t>(runtime->logs().size())) {
    return Status::OutOfRange("table " + Quote(table) + " has no bucket " + std::to_string(bucket));
  }
  const log::BucketLog& log = *runtime->logs()[static_cast<size_t>(bucket)];
  std::lock_guard lock(mu_);
  std::erase_if(producers_, [&](const auto& entry) {
    return std::get<0>(entry.first) == table && std::get<1>(entry.first) == bucket;
  });
  int64_t replayed = 0;
  RETURN_NOT_OK(Replay(table, bucket, log.earliest_offset(), log.next_offset(), &replayed));
  changed_ = true;
  return Status::OK();
}

Status ProducerStates::Save() {
  nlohmann::json covered = nlohmann::json::array();
  nlohmann::json producers = nlohmann::json::array();
  {
    // Under the lock no idempotent batch is between its append and its state update, so the
    // state reflects exactly the batches below each bucket's next offset now.
    std::lock_guard lock(mu_);
    std::set<std::string> tables;
    for (const auto& [key, state] : producers_) tables.insert(std::get<0>(key));
    for (const auto& table : tables) {
      auto described = engine_->DescribeTable(table);
      if (!described.ok()) continue;  // dropped: its producers are forgotten
      for (const engine::BucketStatus& bucket : described->buckets) {
        covered.push_back({{"table", table},
                           {"table_id", described->table.table_id},
                           {"partition", bucket.bucket},
                           {"next_offset", bucket.next_offset}});
      }
    }
    for (const auto& [key, state] : producers_) {
      nlohmann::json recent = nlohmann::json::array();
      for (const auto& a : state.recent) {
        recent.push_back({a.first_sequence, a.last_sequence, a.base_offset});
      }
      producers.push_back({{"table", std::get<0>(key)},
                           {"partition", std::get<1>(key)},
                           {"producer_id", std::get<2>(key)},
                           {"epoch", state.epoch},
                           {"last_sequence", state.last_sequence},
                           {"recent", recent}});
    }
    changed_ = false;
    saved_ = Clock::now();
  }
  return WriteFileAtomically(
      *PosixFileSystem::Default(), dir_, kProducersFile,
      nlohmann::json{{"covered", std::move(covered)}, {"producers", std::move(producers)}}.dump());
}

void ProducerStates::SaveIfDue() {
  {
    std::lock_guard lock(mu_);
    if (!changed_ || Clock::now() - saved_ < kSnapshotInterval) return;
  }
  if (Status st = Save(); !st.ok()) {
    spdlog::error("saving the idempotent producers' state: {}", st.message());
  }
}

}  // namespace oxbow::clientstate
