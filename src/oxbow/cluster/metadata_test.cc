#include "oxbow/cluster/metadata.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace oxbow::cluster {
namespace {

std::vector<ServerInfo> Servers(std::vector<std::string> racks) {
  std::vector<ServerInfo> out;
  for (size_t i = 0; i < racks.size(); ++i) {
    out.push_back({static_cast<int32_t>(i + 1), "grpc://h:1", "h:2", racks[i]});
  }
  return out;
}

TEST(AssignReplicasTest, SpreadsLeadersAndNeverRepeatsAServer) {
  auto assigned = AssignReplicas(Servers({"", "", ""}), 6, 3, 1);
  ASSERT_TRUE(assigned.ok()) << assigned.status().ToString();
  ASSERT_EQ(assigned->size(), 6u);
  std::map<int32_t, int> leaders;
  for (const auto& replicas : *assigned) {
    ASSERT_EQ(replicas.size(), 3u);
    EXPECT_EQ(std::set<int32_t>(replicas.begin(), replicas.end()).size(), 3u);
    ++leaders[replicas[0]];
  }
  EXPECT_EQ(leaders, (std::map<int32_t, int>{{1, 2}, {2, 2}, {3, 2}}));
  EXPECT_EQ((*assigned)[0], (std::vector<int32_t>{2, 3, 1}));  // starts at index 1
}

TEST(AssignReplicasTest, PutsReplicasOnDistinctRacksFirst) {
  // Servers 1, 2 on rack a; 3, 4 on rack b: every bucket gets one replica per rack.
  auto assigned = AssignReplicas(Servers({"a", "a", "b", "b"}), 8, 2, 0);
  ASSERT_TRUE(assigned.ok());
  for (const auto& replicas : *assigned) {
    const bool first_on_a = replicas[0] <= 2;
    const bool second_on_a = replicas[1] <= 2;
    EXPECT_NE(first_on_a, second_on_a) << replicas[0] << "," << replicas[1];
  }
}

TEST(AssignReplicasTest, RefusesMoreReplicasThanServers) {
  auto assigned = AssignReplicas(Servers({"", ""}), 1, 3, 0);
  ASSERT_FALSE(assigned.ok());
  EXPECT_NE(assigned.status().message().find("the cluster has 2"), std::string::npos);
}

TEST(MetadataJsonTest, RoundTripsAndNamesWhatIsMissing) {
  BucketState state{2, 7, {2, 3}, 4};
  auto back = BucketStateFromJson(BucketStateToJson(state));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->leader, 2);
  EXPECT_EQ(back->leader_epoch, 7);
  EXPECT_EQ(back->isr, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(back->controller_epoch, 4);
  auto bad = BucketStateFromJson(R"({"leader": 1, "isr": [1]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruption);
  EXPECT_NE(bad.status().message().find("leader_epoch"), std::string::npos);
  EXPECT_FALSE(ServerInfoFromJson("not json").ok());
  auto assignment = AssignmentFromJson(AssignmentToJson({{{1, 2}, {2, 1}}, {{1, {3, 2}}}}));
  ASSERT_TRUE(assignment.ok());
  EXPECT_EQ(assignment->replicas[1], (std::vector<int32_t>{2, 1}));
  EXPECT_EQ(assignment->targets.at(1), (std::vector<int32_t>{3, 2}));
  // Written before buckets could move: no "moving".
  auto plain = AssignmentFromJson(R"({"buckets": [[1, 2]]})");
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->targets.empty());
}

TEST(TablePropertiesTest, DefaultsFollowTheClusterSize) {
  catalog::TableDescriptor table;
  EXPECT_EQ(*ReplicationFactor(table, 5), 3);
  EXPECT_EQ(*ReplicationFactor(table, 2), 2);
  table.properties[kReplicationFactorProperty] = "1";
  EXPECT_EQ(*MinInsyncReplicas(table), 1);
  table.properties[kReplicationFactorProperty] = "3";
  EXPECT_EQ(*MinInsyncReplicas(table), 2);
  table.properties[kMinInsyncReplicasProperty] = "zero";
  EXPECT_FALSE(MinInsyncReplicas(table).ok());
  EXPECT_FALSE(UncleanLeaderElection(table));
  table.properties[kUncleanLeaderElectionProperty] = "true";
  EXPECT_TRUE(UncleanLeaderElection(table));
}

}  // namespace
}  // namespace oxbow::cluster
