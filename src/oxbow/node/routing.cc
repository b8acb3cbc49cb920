#include <functional>
#include <nlohmann/json.hpp>

#include "oxbow/arrow/compute.h"
#include "oxbow/node/routing_internal.h"

namespace oxbow::node::internal {

namespace {

using json = nlohmann::json;

const std::string& TableName(const Route& route) { return route.table->descriptor().name; }

// Runs `call` on the leader of `bucket` as the cluster's metadata names it (`not_leader`, this
// server's answer, while the bucket has no leader). When the connection is down (the leader
// restarted a moment ago, and gRPC would wait out its reconnect backoff), once more on a new one.
template <typename T>
Result<T> OnLeader(const Route& route, int32_t bucket, const Status& not_leader,
                   const std::function<Result<T>(client::Client&)>& call) {
  const auto meta = route.cluster->Metadata();
  const cluster::TableMeta* table = meta->FindTable(TableName(route));
  if (!table || bucket >= static_cast<int32_t>(table->states.size())) return not_leader;
  const auto server = meta->servers.find(table->states[static_cast<size_t>(bucket)].leader);
  if (server == meta->servers.end() || server->second.flight.empty()) return not_leader;
  const std::string& location = server->second.flight;
  ASSIGN_OR_RAISE(client::Client * leader, route.peers->Get(location));
  Result<T> result = call(*leader);
  const Status& st = result.status();
  if (st.code() != StatusCode::kUnavailable ||
      st.message().find("not_leader") != std::string::npos) {
    return result;
  }
  ASSIGN_OR_RAISE(leader, route.peers->Get(location, /*reconnect=*/true));
  return call(*leader);
}

// The ranges of a DoPut acknowledgement, {"offsets": [{"bucket", "base_offset", "rows"}]}.
Result<std::vector<engine::AppendedRange>> ParseAck(const std::string& ack) {
  json j = json::parse(ack, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("offsets") || !j["offsets"].is_array()) {
    return Status::Invalid("a leader acknowledged a forwarded put without offsets: " + Quote(ack));
  }
  std::vector<engine::AppendedRange> ranges;
  try {
    for (const auto& o : j["offsets"]) {
      ranges.push_back({o.at("bucket").get<int32_t>(), o.at("base_offset").get<int64_t>(),
                        o.at("rows").get<int64_t>()});
    }
  } catch (const json::exception& e) {
    return Status::Invalid("a leader acknowledged a forwarded put with bad offsets: " +
                           std::string(e.what()));
  }
  return ranges;
}

class RoutedPutSession : public engine::PutSession {
 public:
  RoutedPutSession(Route route, arrow::SchemaPtr schema, engine::PutOp op, cluster::Acks acks,
                   std::optional<int32_t> only_bucket, std::unique_ptr<engine::PutSession> local)
      : route_(std::move(route)),
        schema_(std::move(schema)),
        op_(op),
        acks_(acks),
        only_bucket_(only_bucket),
        local_(std::move(local)) {}

  ~RoutedPutSession() override {
    for (auto& [bucket, stream] : forwarded_) Close(*stream);
  }

  Result<std::vector<engine::AppendedRange>> Append(
      const arrow::ipc::RawMessage& message) override {
    ASSIGN_OR_RAISE(auto batch, arrow::ipc::DecodeRecordBatch(schema_, message));
    return Append(*batch);
  }

  Result<std::vector<engine::AppendedRange>> Append(const arrow::RecordBatch& batch) override {
    if (batch.num_rows() == 0) return std::vector<engine::AppendedRange>{};
    ASSIGN_OR_RAISE(const std::vector<int32_t> buckets, route_.table->BucketsOf(batch));
    std::map<int32_t, std::vector<int32_t>> rows_of;
    for (size_t r = 0; r < buckets.size(); ++r) {
      rows_of[buckets[r]].push_back(static_cast<int32_t>(r));
    }
    std::vector<int32_t> local_rows;
    std::vector<int32_t> remote;
    for (const auto& [bucket, rows] : rows_of) {
      if (only_bucket_ && bucket != *only_bucket_) {
        return Status::Invalid("a put to bucket " + std::to_string(*only_bucket_) + " of table " +
                               Quote(TableName(route_)) + " has a row of bucket " +
                               std::to_string(bucket));
      }
      Status leads = route_.cluster->CheckLeader(TableName(route_), bucket);
      if (leads.ok()) {
        RETURN_NOT_OK(route_.cluster->CheckWritable(TableName(route_), bucket, acks_));
        local_rows.insert(local_rows.end(), rows.begin(), rows.end());
      } else if (only_bucket_) {
        return leads;  // forwarded here, but the leadership moved: the sender retries
      } else {
        remote.push_back(bucket);
      }
    }
    // The leaders elsewhere get their rows first and work while this server appends its own.
    for (int32_t bucket : remote) {
      ASSIGN_OR_RAISE(client::PutStream * stream, Forwarded(bucket));
      ASSIGN_OR_RAISE(auto rows, arrow::TakeRows(batch, rows_of[bucket]));
      if (Status st = stream->Send(*rows); !st.ok()) {
        forwarded_.erase(bucket);
        return st;
      }
    }
    std::vector<engine::AppendedRange> out;
    Status first;
    if (!local_rows.empty()) {
      auto appended = AppendLocal(batch, local_rows);
      if (appended.ok()) {
        out = std::move(appended).ValueOrDie();
      } else {
        first = appended.status();
      }
    }
    for (int32_t bucket : remote) {
      auto ranges = ReadAck(bucket);
      if (!ranges.ok()) {
        if (first.ok()) first = ranges.status();
        continue;
      }
      out.insert(out.end(), ranges->begin(), ranges->end());
    }
    if (!first.ok()) return first;
    return out;
  }

 private:
  Result<std::vector<engine::AppendedRange>> AppendLocal(const arrow::RecordBatch& batch,
                                                         const std::vector<int32_t>& rows) {
    arrow::RecordBatchPtr mine;
    if (static_cast<int64_t>(rows.size()) < batch.num_rows()) {
      ASSIGN_OR_RAISE(mine, arrow::TakeRows(batch, rows));
    }
    ASSIGN_OR_RAISE(auto appended, local_->Append(mine ? *mine : batch));
    for (const auto& range : appended) {
      RETURN_NOT_OK(route_.cluster->WaitAcknowledgeable(TableName(route_), range.bucket,
                                                        range.base_offset + range.rows, acks_));
    }
    return appended;
  }

  // The put stream to the leader of `bucket`, opened on first use.
  Result<client::PutStream*> Forwarded(int32_t bucket) {
    auto it = forwarded_.find(bucket);
    if (it != forwarded_.end()) return it->second.get();
    flight::Command command;
    command.table = TableName(route_);
    command.op =
        op_ == engine::PutOp::kDelete ? flight::Command::Op::kDelete : flight::Command::Op::kUpsert;
    command.acks_leader = acks_ == cluster::Acks::kLeader;
    command.bucket = bucket;
    ASSIGN_OR_RAISE(auto stream,
                    OnLeader<std::unique_ptr<client::PutStream>>(
                        route_, bucket, route_.cluster->CheckLeader(TableName(route_), bucket),
                        [&](client::Client& leader) { return leader.DoPut(command, schema_); }));
    return forwarded_.emplace(bucket, std::move(stream)).first->second.get();
  }

  Result<std::vector<engine::AppendedRange>> ReadAck(int32_t bucket) {
    client::PutStream& stream = *forwarded_.at(bucket);
    auto ack = stream.ReadAck();
    if (ack.ok() && *ack) return ParseAck(**ack);
    // The leader ended the stream: its error (not_leader after a failover) goes to the client.
    Status st = ack.ok() ? stream.Finish() : ack.status();
    forwarded_.erase(bucket);
    if (st.ok()) {
      st = Status::Unavailable("the leader of bucket " + std::to_string(bucket) + " of table " +
                               Quote(TableName(route_)) + " ended a forwarded put; write again");
    }
    return st;
  }

  static void Close(client::PutStream& stream) {
    if (!stream.DoneWriting().ok()) return;
    while (true) {
      auto ack = stream.ReadAck();
      if (!ack.ok() || !*ack) break;
    }
    (void)stream.Finish();
  }

  const Route route_;
  const arrow::SchemaPtr schema_;
  const engine::PutOp op_;
  const cluster::Acks acks_;
  const std::optional<int32_t> only_bucket_;
  const std::unique_ptr<engine::PutSession> local_;
  std::map<int32_t, std::unique_ptr<client::PutStream>> forwarded_;
};

// One bucket's snapshot, read from its leader.
class RemoteSnapshotReader : public engine::SnapshotReader {
 public:
  static Result<std::unique_ptr<RemoteSnapshotReader>> Open(client::Client* leader,
                                                            const std::string& ticket) {
    std::unique_ptr<RemoteSnapshotReader> reader(new RemoteSnapshotReader());
    ASSIGN_OR_RAISE(reader->stream_, leader->DoGet(ticket));
    // The first batch says where the snapshot stands (flight_service's SendSnapshot).
    ASSIGN_OR_RAISE(auto first, reader->stream_->Next());
    if (!first) return Status::Invalid("a leader sent a snapshot without batches");
    json j = json::parse(first->app_metadata, nullptr, false);
    if (j.is_discarded() || !j.contains("offsets") || !j["offsets"].is_array()) {
      return Status::Invalid("a leader sent a snapshot without offsets");
    }
    for (const auto& o : j["offsets"]) {
      reader->offsets_.push_back(
          {o.value("bucket", int32_t{0}), o.value("next_offset", int64_t{0})});
    }
    reader->first_ = std::move(first->batch);
    return reader;
  }

  const arrow::SchemaPtr& schema() const override { return stream_->schema(); }
  const std::vector<engine::SnapshotOffset>& offsets() const override { return offsets_; }

  Result<arrow::RecordBatchPtr> Next() override {
    if (first_) {
      auto batch = std::move(first_);
      first_ = nullptr;
      if (batch->num_rows() > 0) return batch;
    }
    while (true) {
      ASSIGN_OR_RAISE(auto chunk, stream_->Next());
      if (!chunk) return arrow::RecordBatchPtr();
      if (chunk->batch->num_rows() > 0) return std::move(chunk->batch);
    }
  }

 private:
  RemoteSnapshotReader() = default;
  std::unique_ptr<client::GetStream> stream_;
  std::vector<engine::SnapshotOffset> offsets_;
  arrow::RecordBatchPtr first_;
};

// A bucket's log as its leader serves it to tiering: decoded batches with their offsets and
// append times (ReadBucketOnLeader).
class RemoteLogCursor : public engine::ReadCursor {
 public:
  RemoteLogCursor(int32_t bucket, std::unique_ptr<client::GetStream> stream)
      : bucket_(bucket), stream_(std::move(stream)) {}

  const arrow::SchemaPtr& schema() const override { return stream_->schema(); }
  int32_t bucket() const override { return bucket_; }
  Result<std::optional<engine::ReadBatch>> Next(std::chrono::steady_clock::time_point) override {
    return Status::NotImplemented("a leader's log read for tiering is decoded only");
  }
  Result<std::optional<engine::DecodedBatch>> NextDecoded(
      std::chrono::steady_clock::time_point) override {
    ASSIGN_OR_RAISE(auto chunk, stream_->Next());
    if (!chunk) {
      done_ = true;
      return std::optional<engine::DecodedBatch>();
    }
    json j = json::parse(chunk->app_metadata, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("base_offset") ||
        !j.contains("next_offset")) {
      return Status::Invalid("the leader of bucket " + std::to_string(bucket_) +
                             " sent a batch without offsets: " + Quote(chunk->app_metadata));
    }
    return std::optional<engine::DecodedBatch>(engine::DecodedBatch{
        std::move(chunk->batch), chunk->body_length, j.value("base_offset", int64_t{0}),
        j.value("next_offset", int64_t{0}), j.value("append_time_ms", int64_t{0})});
  }
  bool done() const override { return done_; }

 private:
  const int32_t bucket_;
  std::unique_ptr<client::GetStream> stream_;
  bool done_ = false;
};

// The snapshots of several buckets, one after the other.
class ConcatenatedSnapshotReader : public engine::SnapshotReader {
 public:
  explicit ConcatenatedSnapshotReader(std::vector<std::unique_ptr<engine::SnapshotReader>> parts)
      : parts_(std::move(parts)) {
    for (const auto& part : parts_) {
      offsets_.insert(offsets_.end(), part->offsets().begin(), part->offsets().end());
    }
  }

  const arrow::SchemaPtr& schema() const override { return parts_.front()->schema(); }
  const std::vector<engine::SnapshotOffset>& offsets() const override { return offsets_; }

  Result<arrow::RecordBatchPtr> Next() override {
    for (; next_part_ < parts_.size(); ++next_part_) {
      ASSIGN_OR_RAISE(auto batch, parts_[next_part_]->Next());
      if (batch) return batch;
    }
    return arrow::RecordBatchPtr();
  }

 private:
  std::vector<std::unique_ptr<engine::SnapshotReader>> parts_;
  std::vector<engine::SnapshotOffset> offsets_;
  size_t next_part_ = 0;
};

}  // namespace

Result<client::Client*> Peers::Get(const std::string& location, bool reconnect) {
  std::lock_guard lock(mu_);
  auto it = clients_.find(location);
  if (it == clients_.end() || reconnect) {
    ASSIGN_OR_RAISE(auto connected, client::Client::Connect(location));
    auto& slot = clients_[location];
    // A replaced client may still serve a call on another thread: kept until the Peers go.
    if (slot) retired_.push_back(std::move(slot));
    slot = std::move(connected);
    return slot.get();
  }
  return it->second.get();
}

Result<std::unique_ptr<engine::PutSession>> StartRoutedPut(const Route& route,
                                                           const arrow::SchemaPtr& client_schema,
                                                           engine::PutOp op, cluster::Acks acks,
                                                           std::optional<int32_t> only_bucket) {
  if (only_bucket) RETURN_NOT_OK(route.cluster->CheckLeader(TableName(route), *only_bucket));
  ASSIGN_OR_RAISE(auto local, route.table->StartPut(client_schema, op));
  return std::unique_ptr<engine::PutSession>(
      new RoutedPutSession(route, client_schema, op, acks, only_bucket, std::move(local)));
}

void RouteLookup(const Route& route, bool forwarded, engine::LookupRequest* request) {
  // Where each bucket is led, as of the start of the lookup.
  auto led = std::make_shared<std::vector<bool>>();
  for (int32_t b = 0; b < route.table->descriptor().buckets; ++b) {
    led->push_back(route.cluster->CheckLeader(TableName(route), b).ok());
  }
  request->is_local = [led](int32_t bucket) { return (*led)[static_cast<size_t>(bucket)]; };
  request->remote = [route, forwarded, prefix = request->prefix](
                        int32_t bucket,
                        const arrow::RecordBatchPtr& keys) -> Result<arrow::RecordBatchPtr> {
    Status not_leader = route.cluster->CheckLeader(TableName(route), bucket);
    if (not_leader.ok()) {
      return Status::Unavailable("bucket " + std::to_string(bucket) + " of table " +
                                 Quote(TableName(route)) +
                                 " changed leader during the lookup; look up again");
    }
    if (forwarded) return not_leader;
    flight::Command command;
    command.table = TableName(route);
    command.op = flight::Command::Op::kLookup;
    command.prefix = prefix;
    command.bucket = bucket;
    return OnLeader<arrow::RecordBatchPtr>(
        route, bucket, not_leader, [&](client::Client& leader) -> Result<arrow::RecordBatchPtr> {
          ASSIGN_OR_RAISE(auto exchange, leader.DoExchange(command, keys->schema()));
          RETURN_NOT_OK(exchange->Send(*keys));
          RETURN_NOT_OK(exchange->DoneWriting());
          ASSIGN_OR_RAISE(auto answer, exchange->Next());
          if (!answer) return Status::Invalid("the leader of a bucket sent no lookup answer");
          ASSIGN_OR_RAISE(auto end, exchange->Next());
          (void)end;
          return std::move(answer->batch);
        });
  };
}

Result<lake::RemoteBucketRead> ReadBucketOnLeader(const Route& route, int32_t bucket,
                                                  int64_t from) {
  // A round holds its table while it reads: a leader that stops answering (paused, cut off)
  // must not hold it longer than this.
  constexpr int64_t kTimeoutMs = 10'000;
  const std::string& table = TableName(route);
  const Status no_leader = Status::Unavailable("bucket " + std::to_string(bucket) + " of " +
                                               Quote(table) + " has no leader to read from");
  ASSIGN_OR_RAISE(
      std::string described,
      OnLeader<std::string>(route, bucket, no_leader, [&](client::Client& leader) {
        return leader.DoAction("describe_table", json{{"table", table}}.dump(), kTimeoutMs);
      }));
  json j = json::parse(described, nullptr, false);
  lake::RemoteBucketRead read;
  bool found = false;
  if (!j.is_discarded() && j.is_object() && j.contains("bucket_offsets")) {
    for (const auto& b : j["bucket_offsets"]) {
      if (b.value("bucket", -1) != bucket) continue;
      read.earliest_offset = b.value("earliest_offset", int64_t{0});
      read.next_offset = b.value("next_offset", int64_t{0});
      found = true;
    }
  }
  if (!found) {
    return Status::Invalid("the leader of bucket " + std::to_string(bucket) + " of " +
                           Quote(table) + " described no offsets for it");
  }
  from = std::max(from, read.earliest_offset);
  if (from >= read.next_offset) return read;
  const std::string ticket =
      json{{"table", table}, {"bucket", bucket}, {"from", from}, {"to", read.next_offset}}.dump();
  ASSIGN_OR_RAISE(auto stream, OnLeader<std::unique_ptr<client::GetStream>>(
                                   route, bucket, no_leader, [&](client::Client& leader) {
                                     return leader.DoGet(ticket, kTimeoutMs);
                                   }));
  read.cursor = std::make_unique<RemoteLogCursor>(bucket, std::move(stream));
  return read;
}

Result<std::unique_ptr<engine::SnapshotReader>> OpenRoutedSnapshot(
    const Route& route, const engine::SnapshotRequest& request) {
  std::vector<std::unique_ptr<engine::SnapshotReader>> parts;
  for (int32_t b = 0; b < route.table->descriptor().buckets; ++b) {
    engine::SnapshotRequest one = request;
    one.bucket = b;
    Status not_leader = route.cluster->CheckLeader(TableName(route), b);
    if (not_leader.ok()) {
      ASSIGN_OR_RAISE(auto part, route.table->OpenSnapshot(one));
      parts.push_back(std::move(part));
      continue;
    }
    flight::Ticket ticket;
    ticket.kind = flight::Ticket::Kind::kSnapshot;
    ticket.table = TableName(route);
    ticket.bucket = b;
    ticket.has_bucket = true;
    ticket.columns = request.columns;
    ASSIGN_OR_RAISE(auto part, OnLeader<std::unique_ptr<RemoteSnapshotReader>>(
                                   route, b, not_leader, [&](client::Client& leader) {
                                     return RemoteSnapshotReader::Open(
                                         &leader, flight::TicketToJson(ticket));
                                   }));
    parts.push_back(std::move(part));
  }
  return std::unique_ptr<engine::SnapshotReader>(new ConcatenatedSnapshotReader(std::move(parts)));
}

}  // namespace oxbow::node::internal
