// Produce: each partition's record batches appended to its table's bucket (an idempotent
// producer's through the node's clientstate::ProducerStates), or, for a primary-key table,
// upserting and deleting keys wherever the table puts them; long-polling fetches woken after.
// A transactional producer's batches are checked, then staged with its transaction
// (TransactionCoordinator), and come back here when it commits.
#include "oxbow/kafka/broker_internal.h"
#include "oxbow/kafka/records.h"
#include "oxbow/kafka/values_internal.h"

namespace oxbow::kafka::internal {
namespace {

// The batches of one partition of a primary-key table: each record upserts or deletes its key
// (docs/kafka.md#primary-key-tables), in order, in the bucket the table's bucketing chooses.
// Every batch is decoded before any is applied. Returns the changelog offset of the first change
// when it is in `partition`'s bucket, else -1.
Result<int64_t> ApplyChanges(const node::TableHandle& table, const TopicFormat& format,
                             int32_t partition, const std::vector<RecordBatch>& batches,
                             cluster::Acks acks, std::vector<metrics::BucketRows>* appended,
                             std::vector<msg::ProduceResponse::BatchIndexAndErrorMessage>* errors) {
  std::vector<RowRun> runs;
  for (size_t i = 0; i < batches.size(); ++i) {
    auto decoded = ToRowRuns(format, batches[i], table.descriptor().schema);
    if (!decoded.ok()) {
      errors->push_back({static_cast<int32_t>(i), decoded.status().message()});
      return decoded.status().WithContext("record batch " + std::to_string(i));
    }
    for (RowRun& run : *decoded) runs.push_back(std::move(run));
  }
  std::unique_ptr<engine::PutSession> upserts, deletes;
  int64_t first_offset = -1;
  bool first = true;
  for (const RowRun& run : runs) {
    const bool upsert = run.op == engine::PutOp::kUpsert;
    std::unique_ptr<engine::PutSession>& session = upsert ? upserts : deletes;
    if (!session) {
      ASSIGN_OR_RAISE(
          session,
          table.StartPut(upsert ? table.descriptor().schema : format.key_schema, run.op, acks));
    }
    ASSIGN_OR_RAISE(auto ranges, session->Append(*run.rows));
    for (const auto& range : ranges) {
      appended->push_back({range.bucket, range.rows});
      if (first && range.bucket == partition && range.rows > 0) first_offset = range.base_offset;
      first = first && range.rows == 0;
    }
  }
  return first_offset;
}

}  // namespace

msg::ProduceResponse::PartitionProduceResponse ProduceResult(int32_t index, ErrorCode error,
                                                             std::optional<std::string> message) {
  msg::ProduceResponse::PartitionProduceResponse result;
  result.index = index;
  result.error_code = error;
  result.base_offset = -1;
  result.error_message = std::move(message);
  return result;
}

msg::ProduceResponse::PartitionProduceResponse Broker::ProducePartition(
    const std::string& topic, const msg::ProduceRequest::PartitionProduceData& part, int16_t acks,
    PendingAck* pending, ProduceMode mode) {
  using Outcome = clientstate::SequencedAppend::Outcome;
  const auto started = std::chrono::steady_clock::now();
  msg::ProduceResponse::PartitionProduceResponse result =
      ProduceResult(part.index, ErrorCode::kNone, std::nullopt);
  auto fail = [&](ErrorCode error, std::string message) {
    result.error_code = error;
    result.error_message = std::move(message);
    return result;
  };
  auto table = GetTopicTable(topic);
  if (!table.ok()) return fail(ErrorCode::kUnknownTopicOrPartition, table.status().message());
  const std::string& name = table->name();
  const catalog::TableDescriptor& desc = table->descriptor();
  if (part.index < 0 || part.index >= desc.buckets) {
    return fail(ErrorCode::kUnknownTopicOrPartition,
                "partition " + std::to_string(part.index) + " does not exist");
  }
  auto resolved = FormatFor(desc);
  if (!resolved.ok()) return fail(ErrorCode::kInvalidRecord, resolved.status().message());
  const TopicFormat& format = *resolved;
  if (format.kind == TableKind::kOther) {
    return fail(ErrorCode::kInvalidRecord, NotServedMessage(desc.name));
  }
  if (!part.records) return fail(ErrorCode::kCorruptMessage, "null record set");
  auto batches = DecodeRecordBatches(*part.records);
  if (!batches.ok()) return fail(ErrorCode::kCorruptMessage, batches.status().message());
  for (const RecordBatch& batch : *batches) {
    if (format.max_message_bytes >= 0 &&
        static_cast<int64_t>(batch.bytes.size()) > format.max_message_bytes) {
      return fail(ErrorCode::kMessageTooLarge,
                  "a record batch of " + std::to_string(batch.bytes.size()) +
                      " bytes is larger than the topic's max.message.bytes (" +
                      std::to_string(format.max_message_bytes) + ")");
    }
    const bool transactional = mode.transactional_id != nullptr || mode.committing;
    if (batch.control || batch.transactional != transactional ||
        (transactional && batch.producer_id < 0)) {
      return fail(ErrorCode::kInvalidRecord,
                  transactional ? "a transactional producer's batch must be transactional, with "
                                  "its producer id, and no control batch"
                                : "a transactional batch needs a transactional id (Produce's "
                                  "transactional_id); control batches are the broker's");
    }
  }
  if (mode.transactional_id) {
    for (size_t i = 0; i < batches->size(); ++i) {
      // Checked now, so that the commit cannot fail on them.
      if (auto runs = ToRowRuns(format, (*batches)[i], desc.schema); !runs.ok()) {
        result.record_errors.push_back({static_cast<int32_t>(i), runs.status().message()});
        return fail(ErrorCode::kInvalidRecord,
                    "record batch " + std::to_string(i) + ": " + runs.status().message());
      }
    }
    for (const RecordBatch& batch : *batches) {
      TxnAnswer staged =
          transactions_->StageBatch(*mode.transactional_id, topic, part.index, batch, batch.bytes);
      if (!staged.ok()) return fail(staged.error, staged.message);
    }
    return result;
  }
  if (format.keyed()) {
    // Upserts and deletes are idempotent as a producer's retries need (but for the aggregate
    // merge engine): no sequences are kept, and the changes are acknowledged when applied.
    std::vector<metrics::BucketRows> changed;
    auto applied = ApplyChanges(*table, format, part.index, *batches,
                                acks == -1 ? cluster::Acks::kAll : cluster::Acks::kLeader, &changed,
                                &result.record_errors);
    if (!applied.ok()) {
      return fail(
          result.record_errors.empty() ? ToErrorCode(applied.status()) : ErrorCode::kInvalidRecord,
          applied.status().message());
    }
    result.base_offset = *applied;
    result.log_start_offset = table->Buckets()[static_cast<size_t>(part.index)].earliest_offset;
    if (!changed.empty()) {
      node_->metrics().AddPut(
          name, changed, static_cast<int64_t>(part.records->size()),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
    return result;
  }
  // acks=-1 waits for every in-sync replica in cluster mode; 0 and 1 for the leader.
  auto session = table->StartPutToBucket(desc.schema, part.index,
                                         acks == -1 ? cluster::Acks::kAll : cluster::Acks::kLeader,
                                         /*defer_acks=*/true);
  if (!session.ok()) {
    // The partition is in the table (checked above) but not yet in this server's view of the
    // cluster (it was just added): the client retries once its metadata, and ours, catch up.
    return fail(session.status().IsOutOfRange() ? ErrorCode::kNotLeaderOrFollower
                                                : ToErrorCode(session.status()),
                session.status().message());
  }
  result.log_start_offset = table->Buckets()[static_cast<size_t>(part.index)].earliest_offset;
  std::vector<metrics::BucketRows> appended_rows;
  for (size_t i = 0; i < batches->size(); ++i) {
    const RecordBatch& batch = (*batches)[i];
    auto runs = ToRowRuns(format, batch, desc.schema);
    if (!runs.ok()) {
      result.record_errors.push_back({static_cast<int32_t>(i), runs.status().message()});
      return fail(ErrorCode::kInvalidRecord,
                  "record batch " + std::to_string(i) + ": " + runs.status().message());
    }
    const arrow::RecordBatchPtr& rows = runs->front().rows;  // a log table's: one run
    // An idempotent batch carries its producer in the stored batch, durable with its rows.
    auto append = [&](const arrow::KeyValueMetadata* metadata) -> Result<int64_t> {
      ASSIGN_OR_RAISE(auto appended, metadata ? (*session)->AppendWithMetadata(*rows, *metadata)
                                              : (*session)->Append(*rows));
      for (const auto& range : appended) appended_rows.push_back({range.bucket, range.rows});
      return appended.empty() ? int64_t{-1} : appended.front().base_offset;
    };
    clientstate::SequencedAppend done;
    if (batch.producer_id < 0) {
      auto appended = append(nullptr);
      if (!appended.ok()) return fail(ToErrorCode(appended.status()), appended.status().message());
      done.base_offset = *appended;
    } else {
      const clientstate::IdempotentBatch producer{batch.producer_id, batch.producer_epoch,
                                                  batch.base_sequence,
                                                  batch.base_sequence + batch.last_offset_delta};
      auto sequenced = node_->producers()->Append(
          name, part.index, producer,
          [&](const arrow::KeyValueMetadata& metadata) { return append(&metadata); },
          mode.committing);
      if (!sequenced.ok()) {
        return fail(ToErrorCode(sequenced.status()), sequenced.status().message());
      }
      done = std::move(sequenced).ValueOrDie();
    }
    if (done.outcome == Outcome::kStaleEpoch) {
      return fail(ErrorCode::kInvalidProducerEpoch, done.message);
    }
    if (done.outcome == Outcome::kOutOfOrder) {
      return fail(ErrorCode::kOutOfOrderSequenceNumber, done.message);
    }
    // A retry is answered once its first attempt is acknowledged (replicated), as an append is.
    if (done.outcome == Outcome::kDuplicate) {
      (*session)->IncludeInAcknowledgement(done.base_offset + batch.last_offset_delta + 1);
    }
    // A retry of a batch already appended is acknowledged at its offset, not appended again.
    if (i == 0) result.base_offset = done.base_offset;
  }
  *pending = {std::move(session).ValueOrDie(), name, std::move(appended_rows),
              static_cast<int64_t>(part.records->size()), started};
  return result;
}

Result<msg::ProduceResponse> Broker::Produce(msg::ProduceRequest& request, RequestContext& ctx) {
  const int16_t version = ctx.version();
  ctx.no_response = request.acks == 0;
  msg::ProduceResponse response;
  for (auto& t : request.topic_data) {
    // v13+ names topics by id; an unknown id (or one the session may not read) leaves the name
    // empty.
    if (version >= 13) t.name = TopicById(t.topic_id, ctx.session).value_or("");
    msg::ProduceResponse::TopicProduceResponse tr;
    tr.name = t.name;
    tr.topic_id = t.topic_id;
    for (const auto& p : t.partition_data) {
      if (t.name.empty()) {
        tr.partition_responses.push_back(
            ProduceResult(p.index, ErrorCode::kUnknownTopicId, std::nullopt));
      } else if (!Allows(ctx.session, t.name, auth::Access::kWrite)) {
        tr.partition_responses.push_back(
            ProduceResult(p.index, ErrorCode::kTopicAuthorizationFailed,
                          "producing to " + Quote(t.name) + " needs write access to its table"));
      } else if (version < 3) {
        tr.partition_responses.push_back(
            ProduceResult(p.index, ErrorCode::kUnsupportedVersion,
                          "Produce v" + std::to_string(version) +
                              " (message format v0/v1) is not supported: use v3+"));
      } else if (request.transactional_id && !transactions_) {
        tr.partition_responses.push_back(ProduceResult(
            p.index, ErrorCode::kTransactionalIdAuthorizationFailed, kNoTransactionsMessage));
      } else {
        PendingAck ack;
        tr.partition_responses.push_back(ProducePartition(
            t.name, p, request.acks, &ack,
            {.transactional_id = request.transactional_id ? &*request.transactional_id : nullptr}));
        if (ack.session) {
          ctx.pending_acks.emplace_back(response.responses.size(),
                                        tr.partition_responses.size() - 1, std::move(ack));
        }
      }
    }
    response.responses.push_back(std::move(tr));
  }
  {
    std::lock_guard lock(appended_mu_);
    ++appends_;
    appended_.notify_all();
  }
  return response;
}

Status Broker::AppendCommitted(const std::string& topic, int32_t partition,
                               std::string_view batch) {
  msg::ProduceRequest::PartitionProduceData part;
  part.index = partition;
  part.records = batch;
  PendingAck ack;
  auto result = ProducePartition(topic, part, /*acks=*/-1, &ack, {.committing = true});
  if (result.error_code == ErrorCode::kNone) {
    if (ack.session) RETURN_NOT_OK(AwaitAck(ack));
    std::lock_guard lock(appended_mu_);
    ++appends_;
    appended_.notify_all();
    return Status::OK();
  }
  const std::string why = "committing a batch of " + topic + "-" + std::to_string(partition) +
                          ": " + result.error_message.value_or("");
  switch (result.error_code) {
    case ErrorCode::kNotLeaderOrFollower:
    case ErrorCode::kNotEnoughReplicas:
    case ErrorCode::kNotEnoughReplicasAfterAppend:
    case ErrorCode::kRequestTimedOut:
    case ErrorCode::kUnknownServerError: return Status::Unavailable(why);  // may pass
    default: return Status::Invalid(why);
  }
}

Status Broker::AwaitAck(PendingAck& ack) {
  RETURN_NOT_OK(ack.session->WaitAcknowledged());
  if (!ack.rows.empty()) {
    node_->metrics().AddPut(
        ack.table, ack.rows, ack.bytes,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - ack.started).count());
  }
  return Status::OK();
}

void Broker::AwaitAcks(msg::ProduceResponse& response,
                       std::vector<std::tuple<size_t, size_t, PendingAck>>& pending) {
  // Every partition was appended: their replication ran at once, and is awaited here.
  for (auto& [topic, partition, ack] : pending) {
    auto& result = response.responses[topic].partition_responses[partition];
    if (Status acknowledged = AwaitAck(ack); !acknowledged.ok()) {
      result.error_code = ToErrorCode(acknowledged);
      result.error_message = acknowledged.message();
      result.base_offset = -1;
    }
  }
  // Long-polling fetches read up to the high watermark, which has moved now.
  std::lock_guard lock(appended_mu_);
  ++appends_;
  appended_.notify_all();
}

}  // namespace oxbow::kafka::internal
