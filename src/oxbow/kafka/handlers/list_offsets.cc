// ListOffsets: a partition's latest or earliest offset, or the first at a timestamp.
#include <chrono>

#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka::internal {

Result<msg::ListOffsetsResponse> Broker::ListOffsets(msg::ListOffsetsRequest& request,
                                                     RequestContext& ctx) {
  const Session& session = ctx.session;
  msg::ListOffsetsResponse response;
  for (const auto& t : request.topics) {
    msg::ListOffsetsResponse::ListOffsetsTopicResponse tr;
    tr.name = t.name;
    auto table = TableForTopic(t.name);
    auto handle = table.ok() ? node_->GetTable(*table) : table.status();
    const std::vector<engine::BucketStatus> buckets =
        handle.ok() ? handle->Buckets() : std::vector<engine::BucketStatus>{};
    const bool allowed = Allows(session, t.name, auth::Access::kRead);
    for (const auto& p : t.partitions) {
      msg::ListOffsetsResponse::ListOffsetsPartitionResponse pr;
      pr.partition_index = p.partition_index;
      if (!allowed) {
        pr.error_code = ErrorCode::kTopicAuthorizationFailed;
      } else if (!handle.ok() || p.partition_index < 0 ||
                 p.partition_index >= static_cast<int32_t>(buckets.size())) {
        pr.error_code = ErrorCode::kUnknownTopicOrPartition;
      } else if (Status leads = node_->cluster()
                                    ? node_->cluster()->CheckLeader(*table, p.partition_index)
                                    : Status::OK();
                 !leads.ok()) {
        pr.error_code = ToErrorCode(leads);
      } else {
        const engine::BucketStatus& bucket = buckets[static_cast<size_t>(p.partition_index)];
        if (p.timestamp == -1) {
          pr.offset = bucket.next_offset;
        } else if (p.timestamp == -2 || p.timestamp == -4) {
          pr.offset = bucket.earliest_offset;
        } else if (p.timestamp < 0) {
          pr.error_code = ErrorCode::kInvalidRequest;  // max timestamp (-3) and tiered offsets
        } else {
          engine::ReadRequest read;
          read.bucket = p.partition_index;
          read.from.kind = engine::StartPosition::Kind::kTimestamp;
          read.from.timestamp_ms = p.timestamp;
          auto cursor = handle->OpenRead(read);
          auto batch = cursor.ok() ? (*cursor)->Next(std::chrono::steady_clock::now())
                                   : Result<std::optional<engine::ReadBatch>>(cursor.status());
          if (!batch.ok()) {
            pr.error_code = ToErrorCode(batch.status());
          } else if (batch->has_value()) {
            pr.offset = (*batch)->base_offset;
            pr.timestamp = (*batch)->append_time_ms;
          }
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
