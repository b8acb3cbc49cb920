// The classic consumer group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and the
// group offsets (OffsetCommit, OffsetFetch), with this node as every group's coordinator.
// Assignment stays on the client: the leader's assignor (range, roundrobin, cooperative-sticky)
// computes it, the coordinator only hands it out. Committed offsets are durable in one file.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "oxbow/common/file_system.h"
#include "oxbow/kafka/messages.h"

namespace oxbow::kafka::internal {

class GroupCoordinator {
 public:
  // Loads the committed offsets of `dir`/offsets.json (absent: none).
  static Result<std::unique_ptr<GroupCoordinator>> Open(std::shared_ptr<FileSystem> fs,
                                                        std::string dir);

  // Blocks until the group's rebalance completes (every member rejoined, or the rebalance
  // timeout dropped those that did not) or Stop().
  // `client_id` and `client_host` are what DescribeGroups reports of the member.
  JoinGroupResponse Join(const JoinGroupRequest& request, const std::string& client_id,
                         const std::string& client_host);
  // A follower blocks until the leader's SyncGroup hands out the assignment.
  SyncGroupResponse Sync(const SyncGroupRequest& request);
  ErrorCode Heartbeat(const HeartbeatRequest& request);
  LeaveGroupResponse Leave(const LeaveGroupRequest& request);
  Result<OffsetCommitResponse> Commit(const OffsetCommitRequest& request);
  OffsetFetchResponse FetchOffsets(const OffsetFetchRequest& request);
  DescribeGroupsResponse Describe(const DescribeGroupsRequest& request);
  // Groups with members or committed offsets.
  ListGroupsResponse List(const ListGroupsRequest& request);
  // Wakes every blocked call; they answer with an error.
  void Stop();

 private:
  using Clock = std::chrono::steady_clock;
  enum class State { kEmpty, kPreparingRebalance, kCompletingRebalance, kStable };
  struct Member {
    std::string id;
    std::string client_id;
    std::string client_host;
    std::vector<GroupProtocol> protocols;
    int32_t session_timeout_ms = 0;
    int32_t rebalance_timeout_ms = 0;
    Clock::time_point last_seen;
    bool joined = false;  // has sent JoinGroup in the current rebalance
    std::string assignment;
  };
  struct Group {
    State state = State::kEmpty;
    int32_t generation = 0;
    std::string protocol_type;
    std::string protocol_name;
    std::string leader;
    std::map<std::string, Member> members;
    Clock::time_point rebalance_deadline;
    // The joins answered by the last completed rebalance: member id -> response.
    std::map<std::string, JoinGroupResponse> join_results;
  };
  struct Committed {
    int64_t offset = -1;
    std::optional<std::string> metadata;
  };
  // group -> topic -> partition -> offset
  using Offsets = std::map<std::string, std::map<std::string, std::map<int32_t, Committed>>>;

  GroupCoordinator(std::shared_ptr<FileSystem> fs, std::string dir)
      : fs_(std::move(fs)), dir_(std::move(dir)) {}
  // Drops members whose session expired; a change starts a rebalance.
  void ExpireMembers(Group& group, Clock::time_point now);
  void StartRebalance(Group& group, Clock::time_point now);
  static std::string StateName(State state);
  // Completes the rebalance when every member has joined, or when its deadline passed (then
  // without those that did not rejoin).
  void MaybeCompleteRebalance(Group& group, Clock::time_point now);
  Status SaveOffsets();

  const std::shared_ptr<FileSystem> fs_;
  const std::string dir_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, Group> groups_;
  Offsets offsets_;
  uint64_t next_member_ = 0;
  bool stopping_ = false;
};

}  // namespace oxbow::kafka::internal
