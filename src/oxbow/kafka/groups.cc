#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <random>

#include "oxbow/kafka/groups_internal.h"

namespace oxbow::kafka::internal {
namespace {

constexpr char kOffsetsFile[] = "offsets.json";
// Blocked calls re-check deadlines and member sessions this often.
constexpr auto kWakeInterval = std::chrono::milliseconds(100);

}  // namespace

Result<std::unique_ptr<GroupCoordinator>> GroupCoordinator::Open(std::shared_ptr<FileSystem> fs,
                                                                 std::string dir) {
  RETURN_NOT_OK(fs->CreateDirs(dir));
  std::unique_ptr<GroupCoordinator> c(new GroupCoordinator(fs, dir));
  const std::string path = JoinPath(dir, kOffsetsFile);
  auto size = fs->FileSize(path);
  if (size.status().IsNotFound()) return c;
  ASSIGN_OR_RAISE(auto buffer, ReadWholeFile(*fs, path));
  const auto doc = nlohmann::json::parse(buffer->data(), buffer->data() + buffer->size(), nullptr,
                                         /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("groups") || !doc["groups"].is_object()) {
    return Status::Corruption(path + " is not a consumer group offsets file");
  }
  try {
    for (const auto& [group, topics] : doc["groups"].items()) {
      for (const auto& [topic, partitions] : topics.items()) {
        for (const auto& [partition, committed] : partitions.items()) {
          Committed& c_out = c->offsets_[group][topic][std::stoi(partition)];
          c_out.offset = committed.at("offset").get<int64_t>();
          if (committed.contains("metadata") && !committed["metadata"].is_null()) {
            c_out.metadata = committed["metadata"].get<std::string>();
          }
        }
      }
    }
  } catch (const std::exception& e) {
    return Status::Corruption(path + ": " + e.what());
  }
  return c;
}

Status GroupCoordinator::SaveOffsets() {
  nlohmann::json groups = nlohmann::json::object();
  for (const auto& [group, topics] : offsets_) {
    for (const auto& [topic, partitions] : topics) {
      for (const auto& [partition, committed] : partitions) {
        groups[group][topic][std::to_string(partition)] = {
            {"offset", committed.offset},
            {"metadata", committed.metadata ? nlohmann::json(*committed.metadata) : nullptr}};
      }
    }
  }
  const nlohmann::json doc = {{"groups", groups}};
  return WriteFileAtomically(*fs_, dir_, kOffsetsFile,
                             doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void GroupCoordinator::Stop() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  changed_.notify_all();
}

void GroupCoordinator::ExpireMembers(Group& group, Clock::time_point now) {
  bool removed = false;
  for (auto it = group.members.begin(); it != group.members.end();) {
    const Member& m = it->second;
    const bool waiting_in_join = group.state == State::kPreparingRebalance && m.joined;
    if (!waiting_in_join && now - m.last_seen > std::chrono::milliseconds(m.session_timeout_ms)) {
      it = group.members.erase(it);
      removed = true;
    } else {
      ++it;
    }
  }
  if (!removed) return;
  if (group.state == State::kPreparingRebalance) {
    MaybeCompleteRebalance(group, now);
  } else {
    StartRebalance(group, now);
  }
}

void GroupCoordinator::StartRebalance(Group& group, Clock::time_point now) {
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
  std::erase_if(group.members, [](const auto& m) { return !m.second.joined; });
  ++group.generation;
  if (group.members.empty()) {
    group.state = State::kEmpty;
    group.leader.clear();
    changed_.notify_all();
    return;
  }
  if (!group.members.count(group.leader)) group.leader = group.members.begin()->first;
  // The first protocol of the leader's preference that every member supports.
  group.protocol_name.clear();
  for (const auto& candidate : group.members.at(group.leader).protocols) {
    const bool everyone =
        std::all_of(group.members.begin(), group.members.end(), [&](const auto& m) {
          return std::any_of(m.second.protocols.begin(), m.second.protocols.end(),
                             [&](const GroupProtocol& p) { return p.name == candidate.name; });
        });
    if (everyone) {
      group.protocol_name = candidate.name;
      break;
    }
  }
  for (auto& [id, m] : group.members) {
    JoinGroupResponse r;
    r.error =
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
            r.members.push_back({other_id, std::nullopt, p.metadata});
        }
      }
    }
    group.join_results[id] = std::move(r);
    m.last_seen = now;
    m.assignment.clear();
  }
  group.state = State::kCompletingRebalance;
  changed_.notify_all();
}

JoinGroupResponse GroupCoordinator::Join(const JoinGroupRequest& request,
                                         const std::string& client_id,
                                         const std::string& client_host) {
  JoinGroupResponse response;
  response.member_id = request.member_id;
  if (request.group_id.empty()) {
    response.error = ErrorCode::kInvalidGroupId;
    return response;
  }
  if (request.session_timeout_ms <= 0) {
    response.error = ErrorCode::kInvalidSessionTimeout;
    return response;
  }
  std::unique_lock lock(mu_);
  Group& group = groups_[request.group_id];
  auto now = Clock::now();
  ExpireMembers(group, now);
  if (!group.members.empty() && group.protocol_type != request.protocol_type) {
    response.error = ErrorCode::kInconsistentGroupProtocol;
    return response;
  }
  std::string member_id = request.member_id;
  if (member_id.empty()) {
    static thread_local std::mt19937_64 random(std::random_device{}());
    member_id = "oxbow-" + std::to_string(++next_member_) + "-" + std::to_string(random());
  } else if (!group.members.count(member_id)) {
    response.error = ErrorCode::kUnknownMemberId;
    return response;
  }
  Member& member = group.members[member_id];
  member.id = member_id;
  member.client_id = client_id;
  member.client_host = client_host;
  member.protocols = request.protocols;
  member.session_timeout_ms = request.session_timeout_ms;
  member.rebalance_timeout_ms = request.rebalance_timeout_ms;
  member.last_seen = now;
  group.protocol_type = request.protocol_type;
  if (group.state != State::kPreparingRebalance) StartRebalance(group, now);
  group.members.at(member_id).joined = true;
  MaybeCompleteRebalance(group, now);
  while (!stopping_) {
    auto result = group.join_results.find(member_id);
    if (result != group.join_results.end() && group.state != State::kPreparingRebalance) {
      return result->second;
    }
    if (!group.members.count(member_id)) break;
    changed_.wait_for(lock, kWakeInterval);
    MaybeCompleteRebalance(group, Clock::now());
  }
  response.error = ErrorCode::kUnknownMemberId;
  return response;
}

SyncGroupResponse GroupCoordinator::Sync(const SyncGroupRequest& request) {
  SyncGroupResponse response;
  std::unique_lock lock(mu_);
  auto g = groups_.find(request.group_id);
  if (g == groups_.end() || !g->second.members.count(request.member_id)) {
    response.error = ErrorCode::kUnknownMemberId;
    return response;
  }
  Group& group = g->second;
  if (request.generation_id != group.generation) {
    response.error = ErrorCode::kIllegalGeneration;
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
  const auto deadline = Clock::now() + std::chrono::milliseconds(
                                           group.members.at(request.member_id).session_timeout_ms);
  changed_.wait_until(lock, deadline, [&] {
    return stopping_ || group.state != State::kCompletingRebalance ||
           group.generation != generation;
  });
  auto m = group.members.find(request.member_id);
  if (group.state == State::kStable && group.generation == generation && m != group.members.end()) {
    response.assignment = m->second.assignment;
  } else {
    response.error = ErrorCode::kRebalanceInProgress;
  }
  return response;
}

ErrorCode GroupCoordinator::Heartbeat(const HeartbeatRequest& request) {
  std::lock_guard lock(mu_);
  auto g = groups_.find(request.group_id);
  if (g == groups_.end()) return ErrorCode::kUnknownMemberId;
  Group& group = g->second;
  const auto now = Clock::now();
  ExpireMembers(group, now);
  MaybeCompleteRebalance(group, now);
  auto m = group.members.find(request.member_id);
  if (m == group.members.end()) return ErrorCode::kUnknownMemberId;
  m->second.last_seen = now;
  if (group.state == State::kPreparingRebalance) return ErrorCode::kRebalanceInProgress;
  if (request.generation_id != group.generation) return ErrorCode::kIllegalGeneration;
  return ErrorCode::kNone;
}

LeaveGroupResponse GroupCoordinator::Leave(const LeaveGroupRequest& request) {
  LeaveGroupResponse response;
  std::lock_guard lock(mu_);
  auto g = groups_.find(request.group_id);
  bool removed = false;
  for (const auto& member_id : request.member_ids) {
    const bool known = g != groups_.end() && g->second.members.erase(member_id) > 0;
    removed |= known;
    response.members.emplace_back(member_id,
                                  known ? ErrorCode::kNone : ErrorCode::kUnknownMemberId);
  }
  if (request.member_ids.size() == 1) response.error = response.members[0].second;
  if (removed) {
    Group& group = g->second;
    if (group.state == State::kPreparingRebalance) {
      MaybeCompleteRebalance(group, Clock::now());
    } else {
      StartRebalance(group, Clock::now());
    }
  }
  return response;
}

Result<OffsetCommitResponse> GroupCoordinator::Commit(const OffsetCommitRequest& request) {
  std::lock_guard lock(mu_);
  ErrorCode error = ErrorCode::kNone;
  auto g = groups_.find(request.group_id);
  const bool has_members = g != groups_.end() && !g->second.members.empty();
  if (request.group_id.empty()) {
    error = ErrorCode::kInvalidGroupId;
  } else if (request.generation_id < 0 && request.member_id.empty()) {
    // A commit from outside the group (assign() consumers, tools): only while nobody is in it.
    if (has_members) error = ErrorCode::kIllegalGeneration;
  } else if (!has_members || !g->second.members.count(request.member_id)) {
    error = ErrorCode::kUnknownMemberId;
  } else if (g->second.state == State::kPreparingRebalance) {
    error = ErrorCode::kRebalanceInProgress;
  } else if (request.generation_id != g->second.generation) {
    error = ErrorCode::kIllegalGeneration;
  }
  if (error == ErrorCode::kNone) {
    auto& topics = offsets_[request.group_id];
    for (const auto& t : request.topics) {
      for (const auto& p : t.partitions) topics[t.name][p.index] = {p.offset, p.metadata};
    }
    RETURN_NOT_OK(SaveOffsets());
  }
  OffsetCommitResponse response;
  for (const auto& t : request.topics) {
    OffsetCommitTopicResult result{t.name, {}};
    for (const auto& p : t.partitions) result.partitions.push_back({p.index, error});
    response.topics.push_back(std::move(result));
  }
  return response;
}

OffsetFetchResponse GroupCoordinator::FetchOffsets(const OffsetFetchRequest& request) {
  std::lock_guard lock(mu_);
  OffsetFetchResponse response;
  for (const auto& g : request.groups) {
    OffsetFetchGroupResult result;
    result.group_id = g.group_id;
    const auto committed = offsets_.find(g.group_id);
    auto lookup = [&](const std::string& topic, int32_t partition) {
      OffsetFetchPartitionResult p;
      p.index = partition;
      if (committed == offsets_.end()) return p;
      auto t = committed->second.find(topic);
      if (t == committed->second.end()) return p;
      auto c = t->second.find(partition);
      if (c == t->second.end()) return p;
      p.offset = c->second.offset;
      p.metadata = c->second.metadata;
      return p;
    };
    if (g.topics) {
      for (const auto& t : *g.topics) {
        OffsetFetchTopicResult tr{t.name, {}};
        for (int32_t partition : t.partitions) tr.partitions.push_back(lookup(t.name, partition));
        result.topics.push_back(std::move(tr));
      }
    } else if (committed != offsets_.end()) {
      for (const auto& [topic, partitions] : committed->second) {
        OffsetFetchTopicResult tr{topic, {}};
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

DescribeGroupsResponse GroupCoordinator::Describe(const DescribeGroupsRequest& request) {
  std::lock_guard lock(mu_);
  DescribeGroupsResponse response;
  for (const auto& group_id : request.groups) {
    DescribedGroup d;
    d.group_id = group_id;
    auto g = groups_.find(group_id);
    if (g == groups_.end()) {
      d.state = offsets_.count(group_id) ? "Empty" : "Dead";
    } else {
      ExpireMembers(g->second, Clock::now());
      const Group& group = g->second;
      d.state = StateName(group.state);
      d.protocol_type = group.protocol_type;
      if (group.state == State::kStable) d.protocol_name = group.protocol_name;
      for (const auto& [id, m] : group.members) {
        DescribedMember dm{id, m.client_id, m.client_host, {}, {}};
        if (group.state == State::kStable) {
          for (const auto& p : m.protocols) {
            if (p.name == group.protocol_name) dm.metadata = p.metadata;
          }
          dm.assignment = m.assignment;
        }
        d.members.push_back(std::move(dm));
      }
    }
    response.groups.push_back(std::move(d));
  }
  return response;
}

ListGroupsResponse GroupCoordinator::List(const ListGroupsRequest& request) {
  std::lock_guard lock(mu_);
  std::map<std::string, ListedGroup> listed;
  for (const auto& [group_id, committed] : offsets_)
    listed[group_id] = {group_id, "consumer", "Empty"};
  for (const auto& [group_id, group] : groups_) {
    if (group.members.empty() && !offsets_.count(group_id)) continue;
    listed[group_id] = {group_id, group.protocol_type, StateName(group.state)};
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
  ListGroupsResponse response;
  for (auto& [group_id, g] : listed) {
    if (listed_in(request.states, g.state) && listed_in(request.types, "classic")) {
      response.groups.push_back(std::move(g));
    }
  }
  return response;
}

}  // namespace oxbow::kafka::internal
