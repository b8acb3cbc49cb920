// AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn: a transactional producer's
// transaction, kept by the TransactionCoordinator (docs/kafka.md#transactions). Versions 4+ of
// AddPartitionsToTxn are broker to broker, and EndTxn v5 / TxnOffsetCommit v5 belong to
// transaction.version 2, which Oxbow does not advertise: clients use the versions served.
#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka::internal {
namespace {

// PRODUCER_FENCED is known from v2 of the coordinator's requests on (before:
// INVALID_PRODUCER_EPOCH).
bool KnowsFenced(int16_t version) { return version >= 2; }

// The coordinator's answer to `call`; where transactions are not served, the refusal.
template <typename Call>
ErrorCode Ask(TransactionCoordinator* coordinator, const Call& call) {
  return coordinator ? call(*coordinator).error : ErrorCode::kTransactionalIdAuthorizationFailed;
}

}  // namespace

Result<msg::AddPartitionsToTxnResponse> Broker::AddPartitionsToTxn(
    msg::AddPartitionsToTxnRequest& request, RequestContext& ctx) {
  msg::AddPartitionsToTxnResponse response;
  auto answer_all = [&](auto&& error_of) {
    for (const auto& t : request.v3_and_below_topics) {
      msg::AddPartitionsToTxnResponse::AddPartitionsToTxnTopicResult result{t.name, {}};
      for (int32_t p : t.partitions) {
        result.results_by_partition.push_back({p, static_cast<int16_t>(error_of(t.name, p))});
      }
      response.results_by_topic_v3_and_below.push_back(std::move(result));
    }
    return response;
  };
  if (!transactions_) {
    return answer_all(
        [](auto&, int32_t) { return ErrorCode::kTransactionalIdAuthorizationFailed; });
  }
  // Kafka's rule: when any partition is refused, the others are not attempted.
  std::map<std::pair<std::string, int32_t>, ErrorCode> refused;
  std::vector<clientstate::TopicPartition> partitions;
  for (const auto& t : request.v3_and_below_topics) {
    auto table = GetTopicTable(t.name);
    for (int32_t p : t.partitions) {
      if (!Allows(ctx.session, t.name, auth::Access::kWrite)) {
        refused[{t.name, p}] = ErrorCode::kTopicAuthorizationFailed;
      } else if (!table.ok() || p < 0 || p >= table->descriptor().buckets) {
        refused[{t.name, p}] = ErrorCode::kUnknownTopicOrPartition;
      } else {
        partitions.push_back({t.name, p});
      }
    }
  }
  if (!refused.empty()) {
    return answer_all([&](const std::string& topic, int32_t p) {
      auto it = refused.find({topic, p});
      return it == refused.end() ? ErrorCode::kOperationNotAttempted : it->second;
    });
  }
  const TxnAnswer added = transactions_->AddPartitions(
      request.v3_and_below_transactional_id, request.v3_and_below_producer_id,
      request.v3_and_below_producer_epoch, partitions, KnowsFenced(ctx.version()));
  return answer_all([&](auto&, int32_t) { return added.error; });
}

Result<msg::AddOffsetsToTxnResponse> Broker::AddOffsetsToTxn(msg::AddOffsetsToTxnRequest& request,
                                                             RequestContext& ctx) {
  msg::AddOffsetsToTxnResponse response;
  response.error_code = Ask(transactions_.get(), [&](TransactionCoordinator& c) {
    return c.AddGroup(request.transactional_id, request.producer_id, request.producer_epoch,
                      request.group_id, KnowsFenced(ctx.version()));
  });
  return response;
}

Result<msg::TxnOffsetCommitResponse> Broker::TxnOffsetCommit(msg::TxnOffsetCommitRequest& request,
                                                             RequestContext& ctx) {
  msg::TxnOffsetCommitResponse response;
  ErrorCode error =
      transactions_ ? ErrorCode::kNone : ErrorCode::kTransactionalIdAuthorizationFailed;
  if (error == ErrorCode::kNone) {
    error = groups_->CheckTxnCommitter(request.group_id, request.member_id,
                                       request.generation_id_or_member_epoch,
                                       request.group_instance_id);
  }
  std::vector<clientstate::OffsetCommit> commits;
  for (const auto& t : request.topics) {
    for (const auto& p : t.partitions) {
      commits.push_back({t.name, p.partition_index, {p.committed_offset, p.committed_metadata}});
    }
  }
  if (error == ErrorCode::kNone) {
    for (const auto& t : request.topics) {
      // Committing a topic's offsets needs read access to it, as OffsetCommit does.
      if (!Allows(ctx.session, t.name, auth::Access::kRead)) {
        error = ErrorCode::kTopicAuthorizationFailed;
      }
    }
  }
  if (error == ErrorCode::kNone) {
    error = transactions_
                ->StageOffsets(request.transactional_id, request.producer_id,
                               request.producer_epoch, request.group_id, commits)
                .error;
  }
  for (const auto& t : request.topics) {
    msg::TxnOffsetCommitResponse::TxnOffsetCommitResponseTopic result{t.name, {}};
    for (const auto& p : t.partitions) result.partitions.push_back({p.partition_index, error});
    response.topics.push_back(std::move(result));
  }
  return response;
}

Result<msg::EndTxnResponse> Broker::EndTxn(msg::EndTxnRequest& request, RequestContext& ctx) {
  msg::EndTxnResponse response;
  response.error_code = Ask(transactions_.get(), [&](TransactionCoordinator& c) {
    return c.End(request.transactional_id, request.producer_id, request.producer_epoch,
                 request.committed, KnowsFenced(ctx.version()));
  });
  return response;
}

}  // namespace oxbow::kafka::internal
