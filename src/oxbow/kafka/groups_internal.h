// The classic consumer group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and the
// group offsets (OffsetCommit, OffsetFetch), with this node as every group's coordinator.
// Assignment stays on the client: the leader's assignor (range, roundrobin, cooperative-sticky)
// computes it, the coordinator only hands it out. Committed offsets are the node's
// clientstate::OffsetStore.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "oxbow/clientstate/offset_store.h"
#include "oxbow/kafka/kafka.h"
#include "oxbow/kafka/messages.h"

namespace oxbow::kafka::internal {

class GroupCoordinator {
 public:
  // Commits go to `offsets`, which outlives the coordinator.
  explicit GroupCoordinator(clientstate::OffsetStore* offsets) : offsets_(offsets) {}

  // Blocks until the group's rebalance completes (every member rejoined, or members that did
  // not were dropped at their session timeout or at the rebalance timeout) or Stop(). A static
  // member (group.instance.id) coming back takes its old place: in a Stable group it gets the
  // current generation at once and its old assignment, without a rebalance.
  // `client_id` and `client_host` are what DescribeGroups reports of the member.
  msg::JoinGroupResponse Join(const msg::JoinGroupRequest& request, const std::string& client_id,
                              const std::string& client_host);
  // A follower blocks until the leader's SyncGroup hands out the assignment.
  msg::SyncGroupResponse Sync(const msg::SyncGroupRequest& request);
  ErrorCode Heartbeat(const msg::HeartbeatRequest& request);
  // Each member of a request of any version (before v3 the handler makes its one member a list).
  msg::LeaveGroupResponse Leave(const msg::LeaveGroupRequest& request);
  // Kafka's rules: a commit of the current generation is accepted while the group is Stable
  // or PreparingRebalance, refused (REBALANCE_IN_PROGRESS) while CompletingRebalance.
  Result<msg::OffsetCommitResponse> Commit(const msg::OffsetCommitRequest& request,
                                           int16_t version);
  // TxnOffsetCommit's check of the committing member (KIP-447, as Kafka's classic groups check
  // it): a member id the group does not have is UNKNOWN_MEMBER_ID, a generation (>= 0) other
  // than the group's ILLEGAL_GENERATION; a producer without group metadata (no member id, no
  // generation) may commit.
  ErrorCode CheckTxnCommitter(const std::string& group_id, const std::string& member_id,
                              int32_t generation, const std::optional<std::string>& instance_id);
  // Forgets every group's committed offsets of these topics (a deleted topic), as Kafka does.
  Status ForgetTopics(const std::vector<std::string>& topics);
  // DeleteGroups of one group: its committed offsets go, and so does the group. NON_EMPTY_GROUP
  // while it has members, GROUP_ID_NOT_FOUND when it has neither members nor offsets.
  Result<ErrorCode> DeleteGroup(const std::string& group_id);
  // OffsetDelete: the group's offsets of these partitions go, except those of topics a member
  // of the group subscribes to (GROUP_SUBSCRIBED_TO_TOPIC); GROUP_ID_NOT_FOUND as above.
  Result<msg::OffsetDeleteResponse> DeleteOffsets(const msg::OffsetDeleteRequest& request);
  // The topics the group has committed offsets of.
  std::vector<std::string> CommittedTopics(const std::string& group_id);
  // The groups of a v8+ request (the handler makes an older one such a request).
  msg::OffsetFetchResponse FetchOffsets(const msg::OffsetFetchRequest& request);
  msg::DescribeGroupsResponse Describe(const msg::DescribeGroupsRequest& request);
  // Groups with members or committed offsets.
  msg::ListGroupsResponse List(const msg::ListGroupsRequest& request);
  // The same groups described, with their members' assignments and committed offsets.
  std::vector<ConsumerGroup> Snapshot();
  // Wakes every blocked call; they answer with an error.
  void Stop();

 private:
  using Clock = std::chrono::steady_clock;
  enum class State { kEmpty, kPreparingRebalance, kCompletingRebalance, kStable };
  struct Member {
    std::string id;
    std::string client_id;
    std::string client_host;
    std::vector<msg::JoinGroupRequest::JoinGroupRequestProtocol> protocols;
    int32_t session_timeout_ms = 0;
    int32_t rebalance_timeout_ms = 0;
    std::optional<std::string> instance_id;  // a static member's group.instance.id
    Clock::time_point last_seen;
    bool joined = false;         // has sent JoinGroup in the current rebalance
    bool awaiting_sync = false;  // blocked in SyncGroup, waiting for the leader's
    std::string assignment;
  };
  struct Group {
    std::string id;
    State state = State::kEmpty;
    int32_t generation = 0;
    std::string protocol_type;
    std::string protocol_name;
    std::string leader;
    std::map<std::string, Member> members;
    std::map<std::string, std::string> static_members;  // instance id -> member id
    Clock::time_point rebalance_deadline;
    // When CompletingRebalance gives up on the members that have not sent SyncGroup.
    Clock::time_point sync_deadline;
    // The joins answered by the last completed rebalance: member id -> response.
    std::map<std::string, msg::JoinGroupResponse> join_results;
  };
  // Drops members whose session expired (those waiting in JoinGroup or SyncGroup excepted),
  // and those that never sent SyncGroup by the group's sync deadline; a change starts a
  // rebalance, or completes the one under way.
  void ExpireMembers(Group& group, Clock::time_point now);
  // Kafka's validateMember: UNKNOWN_MEMBER_ID for a member (or instance id) the group does
  // not have, FENCED_INSTANCE_ID for an instance id that another member id now holds.
  static ErrorCode ValidateMember(const Group& group, const std::string& member_id,
                                  const std::optional<std::string>& instance_id);
  // The topics the group's members subscribe to (their consumer protocol metadata); nullopt
  // when a member's metadata does not decode (then every topic counts as subscribed).
  static std::optional<std::set<std::string>> SubscribedTopics(const Group& group);
  // Removes a member, and its instance id when it still holds it.
  static void RemoveMember(Group& group, std::map<std::string, Member>::iterator member);
  // A static member coming back under a new member id takes the place of `old_id`: its
  // assignment, its leadership, its instance id.
  void ReplaceStaticMember(Group& group, const std::string& old_id, const std::string& new_id);
  // The error of a member whose wait in JoinGroup or SyncGroup ended without it in the group.
  static ErrorCode GoneError(const Group& group, const std::string& member_id,
                             const std::optional<std::string>& instance_id);
  // Moves the group to PreparingRebalance (logged at INFO with `reason`, as Kafka logs it).
  void StartRebalance(Group& group, Clock::time_point now, const std::string& reason);
  static std::string StateName(State state);
  // Completes the rebalance when every member has joined, or when its deadline passed (then
  // without those that did not rejoin).
  void MaybeCompleteRebalance(Group& group, Clock::time_point now);

  clientstate::OffsetStore* const offsets_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, Group> groups_;
  uint64_t next_member_ = 0;
  bool stopping_ = false;
};

}  // namespace oxbow::kafka::internal
