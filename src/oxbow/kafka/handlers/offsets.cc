// OffsetCommit, OffsetFetch and OffsetDelete: a group's committed offsets, kept by the
// GroupCoordinator, for the topics the session may read.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka::internal {
namespace {

// The answer to a commit of `topic`'s partitions that all failed with `error`.
msg::OffsetCommitResponse::OffsetCommitResponseTopic CommitFailed(
    const msg::OffsetCommitRequest::OffsetCommitRequestTopic& topic, ErrorCode error) {
  msg::OffsetCommitResponse::OffsetCommitResponseTopic result{topic.name, {}};
  for (const auto& p : topic.partitions) result.partitions.push_back({p.partition_index, error});
  return result;
}

}  // namespace

Result<msg::OffsetCommitResponse> Broker::OffsetCommit(msg::OffsetCommitRequest& request,
                                                       RequestContext& ctx) {
  if (ErrorCode error = CheckCoordinator(request.group_id); error != ErrorCode::kNone) {
    msg::OffsetCommitResponse response;
    for (const auto& t : request.topics) response.topics.push_back(CommitFailed(t, error));
    return response;
  }
  // Committing a topic's offsets needs read access to it.
  std::vector<msg::OffsetCommitResponse::OffsetCommitResponseTopic> denied;
  std::erase_if(request.topics, [&](const auto& t) {
    if (Allows(ctx.session, t.name, auth::Access::kRead)) return false;
    denied.push_back(CommitFailed(t, ErrorCode::kTopicAuthorizationFailed));
    return true;
  });
  auto response = groups_->Commit(request, ctx.version());
  if (!response.ok()) {
    spdlog::error("kafka: committing offsets of group '{}': {}", request.group_id,
                  response.status().message());
    const ErrorCode error =
        node_->cluster() ? CoordinatorErrorCode(response.status()) : ErrorCode::kUnknownServerError;
    msg::OffsetCommitResponse failed;
    for (const auto& t : request.topics) failed.topics.push_back(CommitFailed(t, error));
    for (auto& d : denied) failed.topics.push_back(std::move(d));
    return failed;
  }
  for (auto& d : denied) response->topics.push_back(std::move(d));
  return response;
}

Result<msg::OffsetFetchResponse> Broker::OffsetFetch(msg::OffsetFetchRequest& request,
                                                     RequestContext& ctx) {
  // Before v8 a request names one group, and its answer is the response's own fields.
  const bool one_group = ctx.version() < 8;
  if (one_group) {
    msg::OffsetFetchRequest::OffsetFetchRequestGroup group;
    group.group_id = request.group_id;
    if (request.topics) {
      group.topics.emplace();
      for (const auto& t : *request.topics) group.topics->push_back({t.name, t.partition_indexes});
    }
    request.groups = {std::move(group)};
  }
  for (const auto& g : request.groups) {
    if (ErrorCode error = CheckCoordinator(g.group_id); error != ErrorCode::kNone) {
      msg::OffsetFetchResponse response;
      response.error_code = error;
      for (const auto& rg : request.groups) {
        msg::OffsetFetchResponse::OffsetFetchResponseGroup failed;
        failed.group_id = rg.group_id;
        failed.error_code = error;
        response.groups.push_back(std::move(failed));
      }
      if (one_group) response.groups.clear();
      return response;
    }
  }
  msg::OffsetFetchResponse response = groups_->FetchOffsets(request);
  // A consumer reading committed data (require_stable) waits while an open transaction holds
  // offsets of its partitions.
  if (request.require_stable && transactions_) {
    for (auto& g : response.groups) {
      for (auto& t : g.topics) {
        for (auto& p : t.partitions) {
          if (transactions_->HasPendingOffsets(g.group_id, t.name, p.partition_index)) {
            p = {p.partition_index, -1, -1, std::nullopt, ErrorCode::kUnstableOffsetCommit};
          }
        }
      }
    }
  }
  // The committed offsets of a topic are shown to readers of the topic only.
  for (auto& g : response.groups) {
    std::erase_if(g.topics, [&](auto& t) {
      if (Allows(ctx.session, t.name, auth::Access::kRead)) return false;
      const bool asked =
          std::any_of(request.groups.begin(), request.groups.end(), [&](const auto& rg) {
            return rg.group_id == g.group_id && rg.topics &&
                   std::any_of(rg.topics->begin(), rg.topics->end(),
                               [&](const auto& rt) { return rt.name == t.name; });
          });
      for (auto& p : t.partitions) {
        p = {p.partition_index, -1, -1, std::nullopt, ErrorCode::kTopicAuthorizationFailed};
      }
      return !asked;  // named topics are answered with the error, the others left out
    });
  }
  if (one_group) {
    const auto& g = response.groups.front();
    for (const auto& t : g.topics) {
      msg::OffsetFetchResponse::OffsetFetchResponseTopic topic{t.name, {}};
      for (const auto& p : t.partitions) {
        topic.partitions.push_back({p.partition_index, p.committed_offset, p.committed_leader_epoch,
                                    p.metadata, p.error_code});
      }
      response.topics.push_back(std::move(topic));
    }
    response.error_code = g.error_code;
    response.groups.clear();
  }
  return response;
}

Result<msg::OffsetDeleteResponse> Broker::OffsetDelete(msg::OffsetDeleteRequest& request,
                                                       RequestContext& ctx) {
  msg::OffsetDeleteResponse response;
  response.error_code = CheckCoordinator(request.group_id);
  if (response.error_code != ErrorCode::kNone) return response;
  // Deleting a topic's offsets needs read access to it, as committing them does.
  std::vector<msg::OffsetDeleteResponse::OffsetDeleteResponseTopic> denied;
  std::erase_if(request.topics, [&](const auto& t) {
    if (Allows(ctx.session, t.name, auth::Access::kRead)) return false;
    msg::OffsetDeleteResponse::OffsetDeleteResponseTopic result{t.name, {}};
    for (const auto& p : t.partitions) {
      result.partitions.push_back({p.partition_index, ErrorCode::kTopicAuthorizationFailed});
    }
    denied.push_back(std::move(result));
    return true;
  });
  auto deleted = groups_->DeleteOffsets(request);
  if (!deleted.ok()) {
    spdlog::error("kafka: deleting offsets of group '{}': {}", request.group_id,
                  deleted.status().message());
    response.error_code =
        node_->cluster() ? CoordinatorErrorCode(deleted.status()) : ErrorCode::kUnknownServerError;
    return response;
  }
  if (deleted->error_code == ErrorCode::kNone) {
    for (auto& d : denied) deleted->topics.push_back(std::move(d));
  }
  return deleted;
}

}  // namespace oxbow::kafka::internal
