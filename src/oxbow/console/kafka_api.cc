// GET /api/kafka: the topics Kafka clients see and the consumer groups this server
// coordinates, with each partition's lag, as `kafka-consumer-groups --describe` shows them.
#include "oxbow/console/service_internal.h"

namespace oxbow::console::internal {

http::Response Service::Kafka(const auth::User* user) const {
  if (kafka_ == nullptr) return Json(200, {{"enabled", false}});
  // Each topic's partitions' ends (the log's next offset on this server), which lags are of.
  std::map<std::string, std::vector<int64_t>> log_ends;
  json topics = json::array();
  for (const catalog::TableDescriptor& table : node_->ListTables()) {
    if (user != nullptr && !user->Allows(table.name, auth::Access::kRead)) continue;
    auto handle = node_->GetTable(table.name);
    if (!handle.ok()) continue;
    const std::string topic = kafka::TopicOf(table);
    const std::vector<engine::BucketStatus> buckets = handle->Buckets();
    std::vector<int64_t>& ends = log_ends[topic];
    for (const engine::BucketStatus& b : buckets) ends.push_back(b.next_offset);
    auto format = table.properties.find("kafka.value.format");
    topics.push_back({{"topic", topic},
                      {"table", table.name},
                      {"partitions", table.buckets},
                      {"messages", LogSizeOf(buckets).records},
                      {"value_format", format == table.properties.end() ? "raw" : format->second},
                      {"compacted", !table.primary_key.empty()}});
  }
  json groups = json::array();
  for (const kafka::ConsumerGroup& group : kafka_->ConsumerGroups()) {
    // A user sees a group's partitions of the topics it may read, and the group when it has any
    // (or, without a member or commit yet, only with --auth off).
    std::map<std::pair<std::string, int32_t>, std::string> owner;  // partition -> member id
    json members = json::array();
    for (const kafka::ConsumerGroup::Member& m : group.members) {
      json assignment = json::array();
      for (const auto& [topic, partitions] : m.assignment) {
        if (!log_ends.contains(topic)) continue;
        assignment.push_back({{"topic", topic}, {"partitions", partitions}});
        for (int32_t p : partitions) owner[{topic, p}] = m.member_id;
      }
      members.push_back({{"member_id", m.member_id},
                         {"instance_id", m.instance_id ? json(*m.instance_id) : json(nullptr)},
                         {"client_id", m.client_id},
                         {"host", m.client_host},
                         {"assignment", std::move(assignment)}});
    }
    // One row per partition, as kafka-consumer-groups prints it; `committed` null while the
    // group has no position there.
    json partitions = json::array();
    int64_t total_lag = 0;
    auto add_partition = [&](const std::string& topic, int32_t p, json committed) {
      const std::vector<int64_t>& ends = log_ends.at(topic);
      json row = {{"topic", topic},
                  {"partition", p},
                  {"committed_offset", committed},
                  {"log_end_offset", nullptr},
                  {"lag", nullptr},
                  {"member_id", nullptr}};
      if (p >= 0 && p < std::ssize(ends)) {
        const int64_t end = ends[static_cast<size_t>(p)];
        row["log_end_offset"] = end;
        if (committed.is_number() && committed.get<int64_t>() >= 0) {
          const int64_t lag = std::max<int64_t>(0, end - committed.get<int64_t>());
          row["lag"] = lag;
          total_lag += lag;
        }
      }
      if (auto o = owner.find({topic, p}); o != owner.end()) {
        row["member_id"] = o->second;
        owner.erase(o);
      }
      partitions.push_back(std::move(row));
    };
    for (const kafka::ConsumerGroup::Committed& c : group.committed) {
      if (log_ends.contains(c.topic)) add_partition(c.topic, c.partition, c.offset);
    }
    // Then the assigned partitions the group has not committed yet.
    while (!owner.empty()) {
      const auto [topic, p] = owner.begin()->first;
      add_partition(topic, p, nullptr);
    }
    const bool visible = user == nullptr || !partitions.empty() ||
                         std::any_of(members.begin(), members.end(),
                                     [](const json& m) { return !m["assignment"].empty(); });
    if (!visible) continue;
    groups.push_back({{"group_id", group.group_id},
                      {"state", group.state},
                      {"protocol_type", group.protocol_type},
                      {"protocol", group.protocol},
                      {"members", std::move(members)},
                      {"partitions", std::move(partitions)},
                      {"lag", total_lag}});
  }
  return Json(200,
              {{"enabled", true}, {"topics", std::move(topics)}, {"groups", std::move(groups)}});
}

}  // namespace oxbow::console::internal
