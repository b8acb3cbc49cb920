// DeleteRecords: a partition's log start moves up (node::TableHandle::DeleteBefore).
#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka::internal {

Result<msg::DeleteRecordsResponse> Broker::DeleteRecords(msg::DeleteRecordsRequest& request,
                                                         RequestContext& ctx) {
  msg::DeleteRecordsResponse response;
  for (const auto& t : request.topics) {
    msg::DeleteRecordsResponse::DeleteRecordsTopicResult tr;
    tr.name = t.name;
    auto table = GetTopicTable(t.name);
    const bool allowed = Allows(ctx.session, t.name, auth::Access::kAdmin);
    for (const auto& p : t.partitions) {
      msg::DeleteRecordsResponse::DeleteRecordsPartitionResult pr;
      pr.partition_index = p.partition_index;
      pr.low_watermark = -1;
      if (!allowed) {
        pr.error_code = ErrorCode::kTopicAuthorizationFailed;
      } else if (!table.ok() || p.partition_index < 0 ||
                 p.partition_index >= table->bucket_count()) {
        pr.error_code = ErrorCode::kUnknownTopicOrPartition;
      } else {
        const int64_t end = table->Buckets()[static_cast<size_t>(p.partition_index)].next_offset;
        // -1: everything up to the high watermark, as in Kafka.
        const int64_t offset = p.offset == -1 ? end : p.offset;
        auto earliest = offset < 0 ? Status::OutOfRange("negative offset")
                                   : table->DeleteBefore(p.partition_index, offset);
        if (earliest.ok()) {
          pr.low_watermark = *earliest;
        } else if (earliest.status().IsInvalid()) {
          pr.error_code = ErrorCode::kPolicyViolation;
        } else {
          pr.error_code = ToErrorCode(earliest.status());
        }
      }
      tr.partitions.push_back(pr);
    }
    response.topics.push_back(std::move(tr));
  }
  return response;
}

}  // namespace oxbow::kafka::internal
