// ListOffsets: a partition's latest or earliest offset, the first at a timestamp, or the first
// at the newest timestamp (max timestamp, -3): by the records' timestamps in a raw log table
// (CreateTime, RecordTimes), by the batches' append times in the others (LogAppendTime).
#include <chrono>

#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka::internal {
namespace {

// The first batch of `bucket` from `from`; nullopt when there is none.
Result<std::optional<engine::ReadBatch>> FirstBatch(const node::TableHandle& table, int32_t bucket,
                                                    engine::StartPosition from) {
  engine::ReadRequest read;
  read.bucket = bucket;
  read.from = from;
  ASSIGN_OR_RAISE(auto cursor, table.OpenRead(read));
  return cursor->Next(std::chrono::steady_clock::now());
}

// The batch at `timestamp_ms` or after it, as ListOffsets answers a timestamp (Kafka's
// LogAppendTime topics: every record of a batch has its batch's time).
Status AnswerByTime(const node::TableHandle& table, int32_t bucket, int64_t timestamp_ms,
                    msg::ListOffsetsResponse::ListOffsetsPartitionResponse* out) {
  engine::StartPosition from;
  from.kind = engine::StartPosition::Kind::kTimestamp;
  from.timestamp_ms = timestamp_ms;
  ASSIGN_OR_RAISE(auto batch, FirstBatch(table, bucket, from));
  if (batch) {
    out->offset = batch->base_offset;
    out->timestamp = batch->append_time_ms;
  }
  return Status::OK();
}

// Max timestamp (KIP-734): the newest batch's time, and the first batch appended at that time,
// as Kafka answers for a LogAppendTime topic. -1 and -1 for an empty partition.
Status AnswerMaxTime(const node::TableHandle& table, const engine::BucketStatus& bucket,
                     int32_t index, msg::ListOffsetsResponse::ListOffsetsPartitionResponse* out) {
  if (bucket.next_offset <= bucket.earliest_offset) return Status::OK();
  engine::StartPosition last;
  last.kind = engine::StartPosition::Kind::kOffset;
  last.offset = bucket.next_offset - 1;
  ASSIGN_OR_RAISE(auto newest, FirstBatch(table, index, last));
  if (!newest) return Status::OK();
  return AnswerByTime(table, index, newest->append_time_ms, out);
}

}  // namespace

Result<msg::ListOffsetsResponse> Broker::ListOffsets(msg::ListOffsetsRequest& request,
                                                     RequestContext& ctx) {
  const Session& session = ctx.session;
  msg::ListOffsetsResponse response;
  for (const auto& t : request.topics) {
    msg::ListOffsetsResponse::ListOffsetsTopicResponse tr;
    tr.name = t.name;
    auto handle = GetTopicTable(t.name);
    const std::vector<engine::BucketStatus> buckets =
        handle.ok() ? handle->Buckets() : std::vector<engine::BucketStatus>{};
    const TopicFormat format = handle.ok() ? FormatOf(handle->descriptor()) : TopicFormat{};
    const bool by_record_time = format.kind == TableKind::kRaw && !format.keyed();
    const bool allowed = Allows(session, t.name, auth::Access::kRead);
    for (const auto& p : t.partitions) {
      msg::ListOffsetsResponse::ListOffsetsPartitionResponse pr;
      pr.partition_index = p.partition_index;
      if (!allowed) {
        pr.error_code = ErrorCode::kTopicAuthorizationFailed;
      } else if (!handle.ok() || p.partition_index < 0 ||
                 p.partition_index >= static_cast<int32_t>(buckets.size())) {
        pr.error_code = ErrorCode::kUnknownTopicOrPartition;
      } else if (Status leads = node_->cluster() ? node_->cluster()->CheckLeader(handle->name(),
                                                                                 p.partition_index)
                                                 : Status::OK();
                 !leads.ok()) {
        pr.error_code = ToErrorCode(leads);
      } else {
        const engine::BucketStatus& bucket = buckets[static_cast<size_t>(p.partition_index)];
        auto answer = [&](Result<std::optional<TimedOffset>> found) {
          if (found.ok() && *found) {
            pr.offset = (*found)->offset;
            pr.timestamp = (*found)->timestamp_ms;
          }
          return found.status();
        };
        Status answered;
        if (p.timestamp == -1) {
          pr.offset = bucket.next_offset;
        } else if (p.timestamp == -2 || p.timestamp == -4) {
          pr.offset = bucket.earliest_offset;
        } else if (p.timestamp == -3) {
          answered = by_record_time ? answer(record_times_.Newest(*handle, p.partition_index))
                                    : AnswerMaxTime(*handle, bucket, p.partition_index, &pr);
        } else if (p.timestamp < 0) {
          pr.error_code = ErrorCode::kInvalidRequest;  // tiered offsets (-5) and the like
        } else if (by_record_time) {
          answered = answer(record_times_.FirstAtOrAfter(*handle, p.partition_index, p.timestamp));
        } else {
          answered = AnswerByTime(*handle, p.partition_index, p.timestamp, &pr);
        }
        if (!answered.ok()) {
          pr.error_code = ToErrorCode(answered);
          pr.offset = pr.timestamp = -1;
        }
      }
      // Cluster mode leaves the epoch unknown, so clients do not validate positions with
      // OffsetsForLeaderEpoch, which is not served.
      pr.leader_epoch = pr.offset >= 0 && !node_->cluster() ? 0 : -1;
      tr.partitions.push_back(pr);
    }
    response.topics.push_back(std::move(tr));
  }
  return response;
}

}  // namespace oxbow::kafka::internal
