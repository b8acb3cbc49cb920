// Fetch: record batches from each partition's bucket, long-polling until min_bytes arrive or
// max_wait_ms passes; no fetch sessions (every fetch is full) and no transactions. A primary-key
// table's partition is its changelog (values_internal.h).
#include <spdlog/spdlog.h>

#include <chrono>

#include "oxbow/kafka/broker_internal.h"
#include "oxbow/metrics/metrics.h"

namespace oxbow::kafka::internal {
namespace {

using Clock = std::chrono::steady_clock;

// Tables put through Flight do not wake long-polling fetches; they re-check this often.
constexpr auto kFetchRecheck = std::chrono::milliseconds(20);

// A partition's answer without records (yet): no offsets known, no aborted transactions.
msg::FetchResponse::PartitionData FetchResult(int32_t index, ErrorCode error) {
  msg::FetchResponse::PartitionData result;
  result.partition_index = index;
  result.error_code = error;
  result.high_watermark = result.last_stable_offset = -1;
  result.records.emplace();
  return result;
}

}  // namespace

msg::FetchResponse::PartitionData Broker::FetchPartition(
    const std::string& topic, const msg::FetchRequest::FetchPartition& part, int64_t max_bytes) {
  const auto started = Clock::now();
  msg::FetchResponse::PartitionData result = FetchResult(part.partition, ErrorCode::kNone);
  auto handle = GetTopicTable(topic);
  if (!handle.ok() || part.partition < 0 || part.partition >= handle->bucket_count()) {
    result.error_code = ErrorCode::kUnknownTopicOrPartition;
    return result;
  }
  const engine::BucketStatus bucket = handle->Buckets()[static_cast<size_t>(part.partition)];
  result.high_watermark = result.last_stable_offset = bucket.next_offset;
  result.log_start_offset = bucket.earliest_offset;
  if (part.fetch_offset < bucket.earliest_offset || part.fetch_offset > bucket.next_offset) {
    result.error_code = ErrorCode::kOffsetOutOfRange;
    return result;
  }
  if (part.fetch_offset == bucket.next_offset) return result;
  auto resolved = FormatFor(handle->descriptor());
  if (!resolved.ok() || resolved->kind == TableKind::kOther) {
    spdlog::warn("kafka: fetch from {}",
                 resolved.ok() ? NotServedMessage(handle->name()) : resolved.status().message());
    result.error_code = ErrorCode::kInvalidRecord;
    return result;
  }
  const TopicFormat& format = *resolved;
  engine::ReadRequest read;
  read.bucket = part.partition;
  read.from.kind = engine::StartPosition::Kind::kOffset;
  read.from.offset = part.fetch_offset;
  read.to = bucket.next_offset;
  auto cursor = handle->OpenRead(read);
  Status st = cursor.status();
  const int64_t limit = std::min<int64_t>(max_bytes, part.partition_max_bytes);
  int64_t rows_sent = 0;
  std::string& records = *result.records;
  // Always one batch at least, however large, so that consumers make progress (KIP-74).
  while (st.ok() && (records.empty() || static_cast<int64_t>(records.size()) < limit)) {
    auto batch = (*cursor)->NextDecoded(Clock::now());
    if (!batch.ok()) {
      st = batch.status();
      break;
    }
    if (!batch->has_value()) break;
    const engine::DecodedBatch& b = **batch;
    const int64_t skip = std::max<int64_t>(0, part.fetch_offset - b.base_offset);
    rows_sent += std::max<int64_t>(0, b.batch->num_rows() - skip);
    st = AppendRecords(format, *b.batch, b.base_offset, skip, b.append_time_ms, &records);
  }
  if (!st.ok()) {
    spdlog::error("kafka: fetch of '{}' partition {}: {}", topic, part.partition, st.message());
    result.error_code = records.empty() ? ToErrorCode(st) : ErrorCode::kNone;
  }
  if (rows_sent > 0) {
    node_->metrics().AddFetch(handle->name(), part.partition, rows_sent,
                              static_cast<int64_t>(records.size()),
                              std::chrono::duration<double>(Clock::now() - started).count());
  }
  return result;
}

Result<msg::FetchResponse> Broker::Fetch(msg::FetchRequest& request, RequestContext& ctx) {
  const Session& session = ctx.session;
  // v13+ names topics by id; an unknown id (or one the session may not read) leaves the name
  // empty.
  if (ctx.version() >= 13) {
    for (auto& t : request.topics) t.topic = TopicById(t.topic_id, session).value_or("");
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(std::max(0, request.max_wait_ms));
  while (true) {
    uint64_t seen;
    {
      std::lock_guard lock(appended_mu_);
      seen = appends_;
    }
    msg::FetchResponse response;
    int64_t bytes = 0;
    bool error = false;
    for (const auto& t : request.topics) {
      msg::FetchResponse::FetchableTopicResponse tr;
      tr.topic = t.topic;
      tr.topic_id = t.topic_id;
      for (const auto& p : t.partitions) {
        if (t.topic.empty() || !Allows(session, t.topic, auth::Access::kRead)) {
          tr.partitions.push_back(
              FetchResult(p.partition, t.topic.empty() ? ErrorCode::kUnknownTopicId
                                                       : ErrorCode::kTopicAuthorizationFailed));
          error = true;
          continue;
        }
        tr.partitions.push_back(
            FetchPartition(t.topic, p, std::max<int64_t>(0, request.max_bytes - bytes)));
        bytes += static_cast<int64_t>(tr.partitions.back().records->size());
        error |= tr.partitions.back().error_code != ErrorCode::kNone;
      }
      response.responses.push_back(std::move(tr));
    }
    if (bytes >= request.min_bytes || error || stopping_ || Clock::now() >= deadline) {
      return response;
    }
    std::unique_lock lock(appended_mu_);
    appended_.wait_until(lock, std::min(deadline, Clock::now() + kFetchRecheck),
                         [&] { return appends_ != seen || stopping_; });
  }
}

}  // namespace oxbow::kafka::internal
