// The classic consumer group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), the
// groups' descriptions (DescribeGroups, ListGroups) and their deletion (DeleteGroups), answered
// by the GroupCoordinator (in cluster mode, NOT_COORDINATOR on any server but the group's).
#include <spdlog/spdlog.h>

#include "oxbow/kafka/broker_internal.h"

namespace oxbow::kafka::internal {

Result<msg::JoinGroupResponse> Broker::JoinGroup(msg::JoinGroupRequest& request,
                                                 RequestContext& ctx) {
  // v0 has no rebalance timeout: the session timeout is the rebalance's too.
  if (ctx.version() < 1) request.rebalance_timeout_ms = request.session_timeout_ms;
  if (ErrorCode error = CheckCoordinator(request.group_id); error != ErrorCode::kNone) {
    msg::JoinGroupResponse response;
    response.error_code = error;
    response.member_id = request.member_id;
    return response;
  }
  return groups_->Join(request, ctx.header.client_id.value_or(""), ctx.session.client_host);
}

Result<msg::SyncGroupResponse> Broker::SyncGroup(msg::SyncGroupRequest& request, RequestContext&) {
  if (ErrorCode error = CheckCoordinator(request.group_id); error != ErrorCode::kNone) {
    msg::SyncGroupResponse response;
    response.error_code = error;
    return response;
  }
  return groups_->Sync(request);
}

Result<msg::HeartbeatResponse> Broker::Heartbeat(msg::HeartbeatRequest& request, RequestContext&) {
  msg::HeartbeatResponse response;
  response.error_code = CheckCoordinator(request.group_id);
  if (response.error_code == ErrorCode::kNone) response.error_code = groups_->Heartbeat(request);
  return response;
}

Result<msg::LeaveGroupResponse> Broker::LeaveGroup(msg::LeaveGroupRequest& request,
                                                   RequestContext& ctx) {
  // Before v3 one member leaves, and its error is the response's.
  const bool one_member = ctx.version() < 3;
  if (one_member) request.members = {{request.member_id, std::nullopt, std::nullopt}};
  if (ErrorCode error = CheckCoordinator(request.group_id); error != ErrorCode::kNone) {
    msg::LeaveGroupResponse response;
    response.error_code = error;
    return response;
  }
  msg::LeaveGroupResponse response = groups_->Leave(request);
  if (one_member) {
    response.error_code = response.members.front().error_code;
    response.members.clear();
  }
  return response;
}

Result<msg::DescribeGroupsResponse> Broker::DescribeGroups(msg::DescribeGroupsRequest& request,
                                                           RequestContext&) {
  return groups_->Describe(request);
}

Result<msg::ListGroupsResponse> Broker::ListGroups(msg::ListGroupsRequest& request,
                                                   RequestContext&) {
  return groups_->List(request);
}

Result<msg::DeleteGroupsResponse> Broker::DeleteGroups(msg::DeleteGroupsRequest& request,
                                                       RequestContext& ctx) {
  msg::DeleteGroupsResponse response;
  for (const auto& group_id : request.groups_names) {
    msg::DeleteGroupsResponse::DeletableGroupResult result;
    result.group_id = group_id;
    result.error_code = CheckCoordinator(group_id);
    // Deleting a group deletes its committed offsets, which only readers of the topics may.
    if (result.error_code == ErrorCode::kNone) {
      for (const auto& topic : groups_->CommittedTopics(group_id)) {
        if (!Allows(ctx.session, topic, auth::Access::kRead)) {
          result.error_code = ErrorCode::kGroupAuthorizationFailed;
          break;
        }
      }
    }
    if (result.error_code == ErrorCode::kNone) {
      auto deleted = groups_->DeleteGroup(group_id);
      if (deleted.ok()) {
        result.error_code = *deleted;
      } else {
        spdlog::error("kafka: deleting group '{}': {}", group_id, deleted.status().message());
        result.error_code = node_->cluster() ? CoordinatorErrorCode(deleted.status())
                                             : ErrorCode::kUnknownServerError;
      }
    }
    response.results.push_back(std::move(result));
  }
  return response;
}

}  // namespace oxbow::kafka::internal
