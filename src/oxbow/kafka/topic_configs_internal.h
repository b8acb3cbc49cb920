// The Kafka topic configs Oxbow serves, each a table property (docs/kafka.md#topic-configs):
// retention.ms is log.retention, retention.bytes is log.retention.bytes, Oxbow's lake.* table
// properties are themselves, and cleanup.policy is the table's kind, fixed at create: delete for a
// log table, compact for a primary-key table.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "oxbow/catalog/descriptor.h"
#include "oxbow/common/status.h"

namespace oxbow::kafka::internal {

inline constexpr char kCleanupPolicyConfig[] = "cleanup.policy";
inline constexpr char kDeletePolicy[] = "delete";
inline constexpr char kCompactPolicy[] = "compact";
// "compact" for a primary-key table, else "delete".
std::string CleanupPolicyOf(const catalog::TableDescriptor& table);

// What a topic without a retention of its own keeps: the server's --retention-ms and
// --retention-bytes (-1: no limit).
struct RetentionDefaults {
  int64_t ms = -1;
  int64_t bytes = -1;
};

// One config's value as its table property: `value` nullopt (back to the server's default)
// removes the property. Invalid naming the config when it is not served or its value is wrong.
Result<std::pair<std::string, std::optional<std::string>>> PropertyForConfig(
    const std::string& name, const std::optional<std::string>& value);

struct TopicConfig {
  std::string name;
  std::string value;
  bool set_on_topic = false;  // false: the server's default
  int8_t type = 0;            // Kafka's ConfigType: 2 STRING, 5 LONG, 7 LIST
  std::string documentation;
};
// The served configs of `table`'s topic, in name order: the lake.* ones only when set.
std::vector<TopicConfig> TopicConfigs(const catalog::TableDescriptor& table,
                                      const RetentionDefaults& defaults);

}  // namespace oxbow::kafka::internal
