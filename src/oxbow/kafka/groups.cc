#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <random>

#include "oxbow/kafka/groups_internal.h"

namespace oxbow::kafka::internal {
namespace {

// Blocked calls re-check deadlines and member sessions this often.
constexpr auto kWakeInterval = std::chrono::milliseconds(100);

}  // namespace

void GroupCoordinator::Stop() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  changed_.notify_all();
}

void GroupCoordinator::ExpireMembers(Group& group, Clock::time_point now) {
  const bool syncs_overdue =
      group.state == State::kCompletingRebalance && now > group.sync_deadline;
  std::string removed;
  for (auto it = group.members.begin(); it != group.members.end();) {
    const Member& m = it->second;
    const bool waiting_in_join = group.state == State::kPreparingRebalance && m.joined;
    const bool expired =
        !waiting_in_join && !m.awaiting_sync &&
        (syncs_overdue || now - m.last_seen > std::chrono::milliseconds(m.session_timeout_ms));
    if (expired) {
      removed += (removed.empty() ? "" : ", ") + it->first;
      RemoveMember(group, it++);
    } else {
      ++it;
    }
  }
  if (removed.empty()) return;
  const std::string reason =
      (syncs_overdue ? "no SyncGroup within the rebalance timeout from " : "session expired: ") +
      removed;
  if (group.state == State::kPreparingRebalance) {
    spdlog::info("kafka: group {}: {}", group.id, reason);
    MaybeCompleteRebalance(group, now);
  } else {
    StartRebalance(group, now, reason);
  }
}

ErrorCode GroupCoordinator::ValidateMember(const Group& group, const std::string& member_id,
                                           const std::optional<std::string>& instance_id) {
  if (instance_id) {
    auto holder = group.static_members.find(*instance_id);
    if (holder == group.static_members.end()) return ErrorCode::kUnknownMemberId;
    if (holder->second != member_id) return ErrorCode::kFencedInstanceId;
  }
  return group.members.count(member_id) ? ErrorCode::kNone : ErrorCode::kUnknownMemberId;
}

ErrorCode GroupCoordinator::GoneError(const Group& group, const std::string& member_id,
                                      const std::optional<std::string>& instance_id) {
  const ErrorCode error = ValidateMember(group, member_id, instance_id);
  return error == ErrorCode::kNone ? ErrorCode::kUnknownMemberId : error;
}

void GroupCoordinator::RemoveMember(Group& group, std::map<std::string, Member>::iterator member) {
  if (member->second.instance_id) {
    auto holder = group.static_members.find(*member->second.instance_id);
    if (holder != group.static_members.end() && holder->second == member->first) {
      group.static_members.erase(holder);
    }
  }
  group.join_results.erase(member->first);
  group.members.erase(member);
}

void GroupCoordinator::ReplaceStaticMember(Group& group, const std::string& old_id,
                                           const std::string& new_id) {
  auto old = group.members.find(old_id);
  Member member = std::move(old->second);
  group.members.erase(old);
  group.join_results.erase(old_id);
  member.id = new_id;
  member.joined = false;
  member.awaiting_sync = false;
  group.static_members[*member.instance_id] = new_id;
  group.members[new_id] = std::move(member);
  if (group.leader == old_id) group.leader = new_id;
  changed_.notify_all();  // the old member's blocked JoinGroup or SyncGroup answers: fenced
}

void GroupCoordinator::StartRebalance(Group& group, Clock::time_point now,
                                      const std::string& reason) {
  spdlog::info("kafka: group {} prepares a rebalance from generation {}: {}", group.id,
               group.generation, reason);
  group.state = State::kPreparingRebalance;
  group.join_results.clear();
  int32_t timeout_ms = 0;
  for (auto& [id, m] : group.members) {
    m.joined = false;
    timeout_ms = std::max(timeout_ms, m.rebalance_timeout_ms);
  }
  group.rebalance_deadline = now + std::chrono::milliseconds(timeout_ms);
  changed_.notify_all();
  MaybeCompleteRebalance(group, now);
}

void GroupCoordinator::MaybeCompleteRebalance(Group& group, Clock::time_point now) {
  if (group.state != State::kPreparingRebalance) return;
  const bool all_joined = std::all_of(group.members.begin(), group.members.end(),
                                      [](const auto& m) { return m.second.joined; });
  if (!all_joined && now < group.rebalance_deadline) return;
  // Dynamic members that did not rejoin leave; static ones stay (their session decides).
  for (auto it = group.members.begin(); it != group.members.end();) {
    if (!it->second.joined && !it->second.instance_id) {
      RemoveMember(group, it++);
    } else {
      ++it;
    }
  }
  const auto joined = std::find_if(group.members.begin(), group.members.end(),
                                   [](const auto& m) { return m.second.joined; });
  if (joined == group.members.end() && !group.members.empty()) {
    // Only static members that have not rejoined: wait for them another rebalance timeout.
    int32_t timeout_ms = 0;
    for (const auto& [id, m] : group.members)
      timeout_ms = std::max(timeout_ms, m.rebalance_timeout_ms);
    group.rebalance_deadline = now + std::chrono::milliseconds(timeout_ms);
    return;
  }
  ++group.generation;
  if (group.members.empty()) {
    group.state = State::kEmpty;
    group.leader.clear();
    changed_.notify_all();
    return;
  }
  if (!group.members.count(group.leader) || !group.members.at(group.leader).joined) {
    group.leader = joined->first;
  }
  // The first protocol of the leader's preference that every member supports.
  group.protocol_name.clear();
  for (const auto& candidate : group.members.at(group.leader).protocols) {
    const bool everyone =
        std::all_of(group.members.begin(), group.members.end(), [&](const auto& m) {
          return std::any_of(m.second.protocols.begin(), m.second.protocols.end(),
                             [&](const auto& p) { return p.name == candidate.name; });
        });
    if (everyone) {
      group.protocol_name = candidate.name;
      break;
    }
  }
  int32_t timeout_ms = 0;
  for (auto& [id, m] : group.members) {
    timeout_ms = std::max(timeout_ms, m.rebalance_timeout_ms);
    m.last_seen = now;
    m.assignment.clear();
    if (!m.joined) continue;  // a static member that did not rejoin: nobody waits for an answer
    msg::JoinGroupResponse r;
    r.error_code =
        group.protocol_name.empty() ? ErrorCode::kInconsistentGroupProtocol : ErrorCode::kNone;
    r.generation_id = group.generation;
    r.protocol_type = group.protocol_type;
    r.protocol_name = group.protocol_name;
    r.leader = group.leader;
    r.member_id = id;
    if (id == group.leader) {
      for (const auto& [other_id, other] : group.members) {
        for (const auto& p : other.protocols) {
          if (p.name == group.protocol_name)
            r.members.push_back({other_id, other.instance_id, p.metadata});
        }
      }
    }
    group.join_results[id] = std::move(r);
  }
  group.sync_deadline = now + std::chrono::milliseconds(timeout_ms);
  group.state = State::kCompletingRebalance;
  changed_.notify_all();
}

msg::JoinGroupResponse GroupCoordinator::Join(const msg::JoinGroupRequest& request,
                                              const std::string& client_id,
                                              const std::string& client_host) {
  msg::JoinGroupResponse response;
  response.member_id = request.member_id;
  if (request.group_id.empty()) {
    response.error_code = ErrorCode::kInvalidGroupId;
    return response;
  }
  if (request.session_timeout_ms <= 0) {
    response.error_code = ErrorCode::kInvalidSessionTimeout;
    return response;
  }
  std::unique_lock lock(mu_);
  Group& group = groups_[request.group_id];
  group.id = request.group_id;
  auto now = Clock::now();
  ExpireMembers(group, now);
  if (!group.members.empty() && group.protocol_type != request.protocol_type) {
    response.error_code = ErrorCode::kInconsistentGroupProtocol;
    return response;
  }
  const std::optional<std::string>& instance = request.group_instance_id;
  std::string member_id = request.member_id;
  std::optional<std::string> replaced;  // the member id a returning static member takes over
  if (member_id.empty()) {
    static thread_local std::mt19937_64 random(std::random_device{}());
    member_id = (instance ? *instance : "oxbow") + "-" + std::to_string(++next_member_) + "-" +
                std::to_string(random());
    if (instance) {
      auto holder = group.static_members.find(*instance);
      if (holder != group.static_members.end()) replaced = holder->second;
    }
  } else if (const ErrorCode error = ValidateMember(group, member_id, instance);
             error != ErrorCode::kNone) {
    response.error_code = error;
    return response;
  }
  const std::string leader_before = group.leader;
  if (replaced) ReplaceStaticMember(group, *replaced, member_id);
  Member& member = group.members[member_id];
  member.id = member_id;
  member.client_id = client_id;
  member.client_host = client_host;
  member.protocols = request.protocols;
  member.session_timeout_ms = request.session_timeout_ms;
  member.rebalance_timeout_ms = request.rebalance_timeout_ms;
  member.last_seen = now;
  if (instance) {
    member.instance_id = instance;
    group.static_members[*instance] = member_id;
  }
  group.protocol_type = request.protocol_type;
  const bool keeps_protocol =
      std::any_of(member.protocols.begin(), member.protocols.end(),
                  [&](const auto& p) { return p.name == group.protocol_name; });
  if (replaced && group.state == State::kStable && keeps_protocol) {
    // A static member's restart: the group goes on as it was, and SyncGroup hands the member
    // its old assignment. A restarted leader is answered as a follower (the leader id it is
    // told is its old one), so that it does not assign again.
    response.generation_id = group.generation;
    response.protocol_type = group.protocol_type;
    response.protocol_name = group.protocol_name;
    response.leader = leader_before;
    response.member_id = member_id;
    return response;
  }
  if (group.state != State::kPreparingRebalance) {
    StartRebalance(group, now,
                   "member " + member_id + " joins" + (request.member_id.empty() ? "" : " again"));
  }
  group.members.at(member_id).joined = true;
  MaybeCompleteRebalance(group, now);
  while (!stopping_) {
    auto result = group.join_results.find(member_id);
    if (result != group.join_results.end() && group.state != State::kPreparingRebalance) {
      return result->second;
    }
    if (!group.members.count(member_id)) break;
    changed_.wait_for(lock, kWakeInterval);
    // Members that crashed are dropped at their session timeout, so the join can complete.
    ExpireMembers(group, Clock::now());
    MaybeCompleteRebalance(group, Clock::now());
  }
  response.member_id = member_id;
  response.error_code = GoneError(group, member_id, instance);
  return response;
}

msg::SyncGroupResponse GroupCoordinator::Sync(const msg::SyncGroupRequest& request) {
  msg::SyncGroupResponse response;
  std::unique_lock lock(mu_);
  auto g = groups_.find(request.group_id);
  if (g == groups_.end()) {
    response.error_code = ErrorCode::kUnknownMemberId;
    return response;
  }
  Group& group = g->second;
  if (const ErrorCode error = ValidateMember(group, request.member_id, request.group_instance_id);
      error != ErrorCode::kNone) {
    response.error_code = error;
    return response;
  }
  if (request.generation_id != group.generation) {
    response.error_code = ErrorCode::kIllegalGeneration;
    return response;
  }
  if (group.state == State::kPreparingRebalance) {
    response.error_code = ErrorCode::kRebalanceInProgress;
    return response;
  }
  response.protocol_type = group.protocol_type;
  response.protocol_name = group.protocol_name;
  group.members.at(request.member_id).last_seen = Clock::now();
  if (group.state == State::kCompletingRebalance && request.member_id == group.leader) {
    for (const auto& [member_id, assignment] : request.assignments) {
      auto m = group.members.find(member_id);
      if (m != group.members.end()) m->second.assignment = assignment;
    }
    group.state = State::kStable;
    changed_.notify_all();
  }
  const int32_t generation = group.generation;
  auto waiting = [&] {
    return !stopping_ && group.state == State::kCompletingRebalance &&
           group.generation == generation && group.members.count(request.member_id);
  };
  // While it waits the member's session cannot expire, as in Kafka; others' can.
  group.members.at(request.member_id).awaiting_sync = true;
  while (waiting()) {
    changed_.wait_for(lock, kWakeInterval);
    ExpireMembers(group, Clock::now());
  }
  auto m = group.members.find(request.member_id);
  if (m != group.members.end()) {
    m->second.awaiting_sync = false;
    m->second.last_seen = Clock::now();
  }
  if (m == group.members.end()) {
    response.error_code = GoneError(group, request.member_id, request.group_instance_id);
  } else if (group.state == State::kStable && group.generation == generation) {
    response.assignment = m->second.assignment;
  } else {
    response.error_code = ErrorCode::kRebalanceInProgress;
  }
  return response;
}

ErrorCode GroupCoordinator::Heartbeat(const msg::HeartbeatRequest& request) {
  std::lock_guard lock(mu_);
  auto g = groups_.find(request.group_id);
  if (g == groups_.end()) return ErrorCode::kUnknownMemberId;
  Group& group = g->second;
  const auto now = Clock::now();
  ExpireMembers(group, now);
  MaybeCompleteRebalance(group, now);
  if (const ErrorCode error = ValidateMember(group, request.member_id, request.group_instance_id);
      error != ErrorCode::kNone) {
    return error;
  }
  if (request.generation_id != group.generation) return ErrorCode::kIllegalGeneration;
  group.members.at(request.member_id).last_seen = now;
  if (group.state == State::kPreparingRebalance) return ErrorCode::kRebalanceInProgress;
  return ErrorCode::kNone;
}

msg::LeaveGroupResponse GroupCoordinator::Leave(const msg::LeaveGroupRequest& request) {
  msg::LeaveGroupResponse response;
  std::lock_guard lock(mu_);
  auto g = groups_.find(request.group_id);
  bool removed = false;
  for (const auto& leaving : request.members) {
    msg::LeaveGroupResponse::MemberResponse member{leaving.member_id, leaving.group_instance_id,
                                                   ErrorCode::kNone};
    if (g == groups_.end()) {
      member.error_code = ErrorCode::kUnknownMemberId;
    } else if (member.member_id.empty() && member.group_instance_id) {
      // A static member removed by its instance id alone (an administrator's removal).
      auto holder = g->second.static_members.find(*member.group_instance_id);
      member.error_code =
          holder == g->second.static_members.end() ? ErrorCode::kUnknownMemberId : ErrorCode::kNone;
      if (member.error_code == ErrorCode::kNone) {
        RemoveMember(g->second, g->second.members.find(holder->second));
      }
    } else {
      member.error_code = ValidateMember(g->second, member.member_id, member.group_instance_id);
      if (member.error_code == ErrorCode::kNone) {
        RemoveMember(g->second, g->second.members.find(member.member_id));
      }
    }
    removed |= member.error_code == ErrorCode::kNone;
    response.members.push_back(std::move(member));
  }
  if (removed) {
    Group& group = g->second;
    if (group.state == State::kPreparingRebalance) {
      MaybeCompleteRebalance(group, Clock::now());
    } else {
      StartRebalance(group, Clock::now(), "a member left");
    }
  }
  return response;
}

Result<msg::OffsetCommitResponse> GroupCoordinator::Commit(const msg::OffsetCommitRequest& request,
                                                           int16_t version) {
  std::lock_guard lock(mu_);
  ErrorCode error = ErrorCode::kNone;
  auto g = groups_.find(request.group_id);
  const bool exists = g != groups_.end() || offsets_->HasGroup(request.group_id);
  const bool from_a_member = request.generation_id_or_member_epoch >= 0 ||
                             !request.member_id.empty() || request.group_instance_id.has_value();
  State state = State::kEmpty;
  if (g != groups_.end()) {
    ExpireMembers(g->second, Clock::now());
    state = g->second.state;
  }
  if (request.group_id.empty()) {
    error = ErrorCode::kInvalidGroupId;
  } else if (!exists) {
    // A group nobody joined takes commits from outside (assign() consumers, tools) only.
    if (request.generation_id_or_member_epoch >= 0) {
      error = version >= 9 ? ErrorCode::kGroupIdNotFound : ErrorCode::kIllegalGeneration;
    }
  } else if (from_a_member) {
    error = g == groups_.end()
                ? ErrorCode::kUnknownMemberId
                : ValidateMember(g->second, request.member_id, request.group_instance_id);
    if (error == ErrorCode::kNone &&
        request.generation_id_or_member_epoch != g->second.generation) {
      error = ErrorCode::kIllegalGeneration;
    }
  } else if (state != State::kEmpty) {
    // A commit from outside the group: only while nobody is in it.
    error = ErrorCode::kUnknownMemberId;
  }
  if (error == ErrorCode::kNone && state == State::kCompletingRebalance) {
    error = ErrorCode::kRebalanceInProgress;
  }
  if (error == ErrorCode::kNone && from_a_member && g != groups_.end()) {
    g->second.members.at(request.member_id).last_seen = Clock::now();
  }
  if (error == ErrorCode::kNone) {
    std::vector<clientstate::OffsetCommit> commits;
    for (const auto& t : request.topics) {
      for (const auto& p : t.partitions) {
        commits.push_back({t.name, p.partition_index, {p.committed_offset, p.committed_metadata}});
      }
    }
    RETURN_NOT_OK(offsets_->Commit(request.group_id, commits));
  }
  msg::OffsetCommitResponse response;
  for (const auto& t : request.topics) {
    msg::OffsetCommitResponse::OffsetCommitResponseTopic result{t.name, {}};
    for (const auto& p : t.partitions) result.partitions.push_back({p.partition_index, error});
    response.topics.push_back(std::move(result));
  }
  return response;
}

Result<ErrorCode> GroupCoordinator::DeleteGroup(const std::string& group_id) {
  std::lock_guard lock(mu_);
  auto g = groups_.find(group_id);
  if (g != groups_.end()) {
    ExpireMembers(g->second, Clock::now());
    if (!g->second.members.empty()) return ErrorCode::kNonEmptyGroup;
  }
  const std::optional<clientstate::GroupOffsets> committed = offsets_->Offsets(group_id);
  if (!committed && g == groups_.end()) return ErrorCode::kGroupIdNotFound;
  if (committed) {
    std::vector<clientstate::TopicPartition> all;
    for (const auto& [topic, partitions] : *committed) {
      for (const auto& [partition, position] : partitions) all.push_back({topic, partition});
    }
    RETURN_NOT_OK(offsets_->Forget(group_id, all));
  }
  if (g != groups_.end()) groups_.erase(g);
  return ErrorCode::kNone;
}

std::optional<std::set<std::string>> GroupCoordinator::SubscribedTopics(const Group& group) {
  std::set<std::string> topics;
  for (const auto& [id, member] : group.members) {
    for (const auto& protocol : member.protocols) {
      if (protocol.name != group.protocol_name) continue;
      // ConsumerProtocolSubscription: version (int16), then the topics (int32 count, each an
      // int16-length string); what follows differs by version and is not needed here.
      Reader reader(protocol.metadata);
      reader.Int16();
      const int32_t count = reader.ArrayLength(/*flexible=*/false);
      for (int32_t i = 0; i < count && reader.ok(); ++i) {
        topics.insert(reader.String(/*flexible=*/false));
      }
      if (!reader.ok()) return std::nullopt;
    }
  }
  return topics;
}

Result<msg::OffsetDeleteResponse> GroupCoordinator::DeleteOffsets(
    const msg::OffsetDeleteRequest& request) {
  std::lock_guard lock(mu_);
  msg::OffsetDeleteResponse response;
  auto g = groups_.find(request.group_id);
  if (g != groups_.end()) ExpireMembers(g->second, Clock::now());
  const bool has_members = g != groups_.end() && !g->second.members.empty();
  if (!has_members && !offsets_->HasGroup(request.group_id)) {
    response.error_code = ErrorCode::kGroupIdNotFound;
    return response;
  }
  const std::optional<std::set<std::string>> subscribed =
      has_members ? SubscribedTopics(g->second) : std::set<std::string>();
  std::vector<clientstate::TopicPartition> forget;
  for (const auto& t : request.topics) {
    msg::OffsetDeleteResponse::OffsetDeleteResponseTopic result{t.name, {}};
    const bool in_use = !subscribed || subscribed->contains(t.name);
    for (const auto& p : t.partitions) {
      result.partitions.push_back(
          {p.partition_index, in_use ? ErrorCode::kGroupSubscribedToTopic : ErrorCode::kNone});
      if (!in_use) forget.push_back({t.name, p.partition_index});
    }
    response.topics.push_back(std::move(result));
  }
  RETURN_NOT_OK(offsets_->Forget(request.group_id, forget));
  return response;
}

ErrorCode GroupCoordinator::CheckTxnCommitter(const std::string& group_id,
                                              const std::string& member_id, int32_t generation,
                                              const std::optional<std::string>& instance_id) {
  std::lock_guard lock(mu_);
  auto g = groups_.find(group_id);
  if (g == groups_.end()) {
    return member_id.empty() ? ErrorCode::kNone : ErrorCode::kUnknownMemberId;
  }
  if (!member_id.empty()) {
    if (ErrorCode error = ValidateMember(g->second, member_id, instance_id);
        error != ErrorCode::kNone) {
      return error;
    }
  }
  if (generation >= 0 && generation != g->second.generation) return ErrorCode::kIllegalGeneration;
  return ErrorCode::kNone;
}

std::vector<std::string> GroupCoordinator::CommittedTopics(const std::string& group_id) {
  std::vector<std::string> topics;
  if (auto committed = offsets_->Offsets(group_id)) {
    for (const auto& [topic, partitions] : *committed) topics.push_back(topic);
  }
  return topics;
}

Status GroupCoordinator::ForgetTopics(const std::vector<std::string>& topics) {
  return offsets_->ForgetTopics(topics);
}

msg::OffsetFetchResponse GroupCoordinator::FetchOffsets(const msg::OffsetFetchRequest& request) {
  std::lock_guard lock(mu_);
  msg::OffsetFetchResponse response;
  for (const auto& g : request.groups) {
    msg::OffsetFetchResponse::OffsetFetchResponseGroup result;
    result.group_id = g.group_id;
    const std::optional<clientstate::GroupOffsets> committed = offsets_->Offsets(g.group_id);
    auto lookup = [&](const std::string& topic, int32_t partition) {
      msg::OffsetFetchResponse::OffsetFetchResponsePartitions p;
      p.partition_index = partition;
      p.committed_offset = -1;
      if (!committed) return p;
      auto t = committed->find(topic);
      if (t == committed->end()) return p;
      auto c = t->second.find(partition);
      if (c == t->second.end()) return p;
      p.committed_offset = c->second.offset;
      p.metadata = c->second.metadata;
      return p;
    };
    if (g.topics) {
      for (const auto& t : *g.topics) {
        msg::OffsetFetchResponse::OffsetFetchResponseTopics tr{t.name, {}};
        for (int32_t partition : t.partition_indexes) {
          tr.partitions.push_back(lookup(t.name, partition));
        }
        result.topics.push_back(std::move(tr));
      }
    } else if (committed) {
      for (const auto& [topic, partitions] : *committed) {
        msg::OffsetFetchResponse::OffsetFetchResponseTopics tr{topic, {}};
        for (const auto& [partition, c] : partitions)
          tr.partitions.push_back(lookup(topic, partition));
        result.topics.push_back(std::move(tr));
      }
    }
    response.groups.push_back(std::move(result));
  }
  return response;
}

std::string GroupCoordinator::StateName(State state) {
  switch (state) {
    case State::kEmpty: return "Empty";
    case State::kPreparingRebalance: return "PreparingRebalance";
    case State::kCompletingRebalance: return "CompletingRebalance";
    case State::kStable: return "Stable";
  }
  return "Dead";
}

msg::DescribeGroupsResponse GroupCoordinator::Describe(const msg::DescribeGroupsRequest& request) {
  std::lock_guard lock(mu_);
  msg::DescribeGroupsResponse response;
  for (const auto& group_id : request.groups) {
    msg::DescribeGroupsResponse::DescribedGroup d;
    d.group_id = group_id;
    auto g = groups_.find(group_id);
    if (g == groups_.end()) {
      d.group_state = offsets_->HasGroup(group_id) ? "Empty" : "Dead";
    } else {
      ExpireMembers(g->second, Clock::now());
      const Group& group = g->second;
      d.group_state = StateName(group.state);
      d.protocol_type = group.protocol_type;
      if (group.state == State::kStable) d.protocol_data = group.protocol_name;
      for (const auto& [id, m] : group.members) {
        msg::DescribeGroupsResponse::DescribedGroupMember dm{
            id, m.instance_id, m.client_id, m.client_host, {}, {}};
        if (group.state == State::kStable) {
          for (const auto& p : m.protocols) {
            if (p.name == group.protocol_name) dm.member_metadata = p.metadata;
          }
          dm.member_assignment = m.assignment;
        }
        d.members.push_back(std::move(dm));
      }
    }
    response.groups.push_back(std::move(d));
  }
  return response;
}

msg::ListGroupsResponse GroupCoordinator::List(const msg::ListGroupsRequest& request) {
  std::lock_guard lock(mu_);
  std::map<std::string, msg::ListGroupsResponse::ListedGroup> listed;
  for (const auto& group_id : offsets_->Groups()) {
    listed[group_id] = {group_id, "consumer", "Empty", "classic"};
  }
  for (const auto& [group_id, group] : groups_) {
    if (group.members.empty() && !offsets_->HasGroup(group_id)) continue;
    listed[group_id] = {group_id, group.protocol_type, StateName(group.state), "classic"};
  }
  // Kafka matches the filters ignoring case (clients send "Stable", "Classic", ...).
  auto listed_in = [](const std::vector<std::string>& filter, std::string_view value) {
    return filter.empty() || std::any_of(filter.begin(), filter.end(), [&](const std::string& f) {
             return f.size() == value.size() &&
                    std::equal(f.begin(), f.end(), value.begin(), [](char a, char b) {
                      return std::tolower(static_cast<unsigned char>(a)) ==
                             std::tolower(static_cast<unsigned char>(b));
                    });
           });
  };
  msg::ListGroupsResponse response;
  for (auto& [group_id, g] : listed) {
    if (listed_in(request.states_filter, g.group_state) &&
        listed_in(request.types_filter, "classic")) {
      response.groups.push_back(std::move(g));
    }
  }
  return response;
}

namespace {

// ConsumerProtocolAssignment: version (int16), the topics (int32 count, each an int16-length
// name and an int32 count of int32 partitions), then user data; empty when it does not decode.
std::map<std::string, std::vector<int32_t>> DecodeAssignment(std::string_view assignment) {
  std::map<std::string, std::vector<int32_t>> topics;
  if (assignment.empty()) return topics;
  Reader reader(assignment);
  reader.Int16();
  const int32_t count = reader.ArrayLength(/*flexible=*/false);
  for (int32_t i = 0; i < count && reader.ok(); ++i) {
    std::vector<int32_t>& partitions = topics[reader.String(/*flexible=*/false)];
    const int32_t n = reader.ArrayLength(/*flexible=*/false);
    for (int32_t p = 0; p < n && reader.ok(); ++p) partitions.push_back(reader.Int32());
  }
  if (!reader.ok()) return {};
  return topics;
}

}  // namespace

std::vector<ConsumerGroup> GroupCoordinator::Snapshot() {
  std::lock_guard lock(mu_);
  std::map<std::string, ConsumerGroup> described;
  for (const auto& group_id : offsets_->Groups()) {
    described[group_id] = {group_id, "Empty", "", "", {}, {}};
  }
  const auto now = Clock::now();
  for (auto& [group_id, group] : groups_) {
    ExpireMembers(group, now);
    if (group.members.empty() && !offsets_->HasGroup(group_id)) continue;
    ConsumerGroup& d = described[group_id];
    d.group_id = group_id;
    d.state = StateName(group.state);
    d.protocol_type = group.protocol_type;
    if (group.state == State::kStable) d.protocol = group.protocol_name;
    for (const auto& [id, m] : group.members) {
      d.members.push_back({id, m.instance_id, m.client_id, m.client_host,
                           group.state == State::kStable && group.protocol_type == "consumer"
                               ? DecodeAssignment(m.assignment)
                               : std::map<std::string, std::vector<int32_t>>()});
    }
  }
  std::vector<ConsumerGroup> groups;
  for (auto& [group_id, d] : described) {
    if (auto committed = offsets_->Offsets(group_id)) {
      for (const auto& [topic, partitions] : *committed) {
        for (const auto& [partition, position] : partitions) {
          d.committed.push_back({topic, partition, position.offset});
        }
      }
    }
    groups.push_back(std::move(d));
  }
  return groups;
}

}  // namespace oxbow::kafka::internal
