// The Kafka topic configs Oxbow serves, each a table property (docs/kafka.md#topic-configs):
// retention.ms is log.retention, retention.bytes is log.retention.bytes, segment.bytes is
// log.segment.bytes, message.timestamp.type is kafka.timestamp.type, compression.type is
// kafka.compression.type, max.message.bytes is kafka.max.message.bytes, Oxbow's lake.* table
// properties are themselves, and cleanup.policy is the table's kind, fixed at create: delete for
// a log table, compact for a primary-key table.
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

inline constexpr char kTimestampTypeConfig[] = "message.timestamp.type";
inline constexpr char kCreateTime[] = "CreateTime";
inline constexpr char kLogAppendTime[] = "LogAppendTime";
// A raw table's record timestamps: the producer's (CreateTime, the default) or the server's
// (LogAppendTime). Other tables keep no record timestamp: their records carry append times.
inline constexpr char kTimestampTypeProperty[] = "kafka.timestamp.type";
// What a table's records carry: "CreateTime" or "LogAppendTime".
std::string TimestampTypeOf(const catalog::TableDescriptor& table);

// The codec of the record batches Fetch serves: "producer" (Kafka's default) and
// "uncompressed" serve them uncompressed, as Oxbow stores rows and not the producer's batches.
inline constexpr char kCompressionTypeConfig[] = "compression.type";
inline constexpr char kCompressionTypeProperty[] = "kafka.compression.type";
// The largest record batch Produce takes, in bytes; larger is MESSAGE_TOO_LARGE.
inline constexpr char kMaxMessageBytesConfig[] = "max.message.bytes";
inline constexpr char kMaxMessageBytesProperty[] = "kafka.max.message.bytes";

// What a topic without a config of its own has: the server's --retention-ms,
// --retention-bytes (-1: no limit), --segment-bytes and --kafka-max-request-bytes.
struct TopicDefaults {
  int64_t retention_ms = -1;
  int64_t retention_bytes = -1;
  int64_t segment_bytes = 0;
  int64_t max_message_bytes = 0;
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
                                      const TopicDefaults& defaults);

}  // namespace oxbow::kafka::internal
