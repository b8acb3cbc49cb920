#include "oxbow/common/parse.h"
#include "oxbow/engine/engine.h"
#include "oxbow/kafka/topic_configs_internal.h"
#include "oxbow/kafka/values_internal.h"

namespace oxbow::kafka::internal {
namespace {

constexpr char kRetentionMs[] = "retention.ms";
constexpr char kRetentionBytes[] = "retention.bytes";
constexpr char kSegmentBytes[] = "segment.bytes";
constexpr char kLakePrefix[] = "lake.";
constexpr int8_t kString = 2;
constexpr int8_t kInt = 3;
constexpr int8_t kLong = 5;
constexpr int8_t kList = 7;

// A Kafka long config: -1 is "none" (no limit); `unit` follows other values.
Result<std::string> LimitProperty(const std::string& name, const std::string& value,
                                  const char* unit) {
  auto parsed = ParseInt64(value);
  if (!parsed.ok() || *parsed < -1) {
    return Status::Invalid("topic config " + name + "=" + Quote(value) +
                           ": a whole number, or -1 for no limit");
  }
  return *parsed == -1 ? std::string("none") : std::to_string(*parsed) + unit;
}

}  // namespace

Result<std::pair<std::string, std::optional<std::string>>> PropertyForConfig(
    const std::string& name, const std::optional<std::string>& value) {
  using Property = std::pair<std::string, std::optional<std::string>>;
  if (name == kRetentionMs || name == kRetentionBytes) {
    const bool ms = name == kRetentionMs;
    const std::string property = ms ? engine::kRetentionProperty : engine::kRetentionBytesProperty;
    if (!value) return Property{property, std::nullopt};
    ASSIGN_OR_RAISE(std::string v, LimitProperty(name, *value, ms ? "ms" : ""));
    return Property{property, std::move(v)};
  }
  if (name == kSegmentBytes) {
    // A whole number: log.segment.bytes, checked as create_table checks it.
    return Property{engine::kSegmentBytesProperty, value};
  }
  if (name == kTimestampTypeConfig) {
    if (value && *value != kCreateTime && *value != kLogAppendTime) {
      return Status::Invalid("topic config message.timestamp.type=" + Quote(*value) +
                             ": CreateTime or LogAppendTime");
    }
    return Property{kTimestampTypeProperty, value};
  }
  if (name == kCompressionTypeConfig) {
    if (value && !CompressionNamed(*value)) {
      return Status::Invalid("topic config compression.type=" + Quote(*value) +
                             ": producer, uncompressed, gzip, snappy, lz4 or zstd");
    }
    return Property{kCompressionTypeProperty, value};
  }
  if (name == kMaxMessageBytesConfig) {
    auto parsed = value ? ParseInt64(*value) : Result<int64_t>(0);
    if (!parsed.ok() || *parsed < 0 || *parsed > INT32_MAX) {
      return Status::Invalid("topic config max.message.bytes=" + Quote(value.value_or("")) +
                             ": a whole number of bytes from 0 to 2147483647");
    }
    return Property{kMaxMessageBytesProperty, value};
  }
  if (name.starts_with(kLakePrefix)) {
    return Property{name, value};  // Oxbow's own, checked as create_table checks it
  }
  if (name == kCleanupPolicyConfig) {
    // The table's kind, not a property: CreateTopics reads it, nothing alters it.
    if (!value || *value == kDeletePolicy || *value == kCompactPolicy) return Property{};
    return Status::Invalid("topic config cleanup.policy=" + Quote(*value) +
                           ": delete or compact (compact,delete is not served)");
  }
  return Status::Invalid("topic config " + Quote(name) +
                         " is not served (served: retention.ms, retention.bytes, segment.bytes, "
                         "message.timestamp.type, compression.type, max.message.bytes, "
                         "cleanup.policy and Oxbow's lake.* table properties)");
}

std::string CleanupPolicyOf(const catalog::TableDescriptor& table) {
  return table.primary_key.empty() ? kDeletePolicy : kCompactPolicy;
}

std::string TimestampTypeOf(const catalog::TableDescriptor& table) {
  return FormatOf(table).log_append_time ? kLogAppendTime : kCreateTime;
}

std::vector<TopicConfig> TopicConfigs(const catalog::TableDescriptor& table,
                                      const TopicDefaults& defaults) {
  // A property that does not parse cannot be on a table: create and alter check it.
  auto parsed = engine::LogPropertiesOf(table);
  const engine::TableLogProperties own = parsed.ok() ? *parsed : engine::TableLogProperties{};
  auto limit = [](const std::optional<int64_t>& set, int64_t fallback) {
    return std::to_string(set.value_or(fallback));
  };
  const bool compacted = CleanupPolicyOf(table) == kCompactPolicy;
  std::vector<TopicConfig> configs = {
      {kCleanupPolicyConfig, CleanupPolicyOf(table), compacted, kList,
       compacted ? "A primary-key table keyed by the record key: a record upserts its key, a "
                   "record without a value deletes it"
                 : "Old segments are deleted"},
  };
  for (const auto& [key, value] : table.properties) {
    if (key.starts_with(kLakePrefix)) {
      configs.push_back({key, value, true, kString, "The table's lake property (docs/lake.md)"});
    }
  }
  const TopicFormat format = FormatOf(table);
  const auto codec = table.properties.find(kCompressionTypeProperty);
  const bool codec_set = codec != table.properties.end();
  configs.push_back({kCompressionTypeConfig, codec_set ? codec->second : "producer", codec_set,
                     kString,
                     "The codec of the batches Fetch serves (producer and uncompressed: none; "
                     "rows are stored as Arrow, not as the producer's batches)"});
  configs.push_back({kMaxMessageBytesConfig,
                     std::to_string(format.max_message_bytes >= 0 ? format.max_message_bytes
                                                                  : defaults.max_message_bytes),
                     table.properties.count(kMaxMessageBytesProperty) > 0, kInt,
                     "The largest record batch a producer may send, in bytes"});
  configs.push_back({kTimestampTypeConfig, TimestampTypeOf(table),
                     table.properties.count(kTimestampTypeProperty) > 0, kString,
                     "Whose time a record carries: the producer's (CreateTime) or the server's "
                     "(LogAppendTime; JSON, Avro and primary-key tables)"});
  configs.push_back(
      {kRetentionBytes, limit(own.retention_bytes, defaults.retention_bytes),
       own.retention_bytes.has_value(), kLong,
       "Bytes each partition keeps before its oldest segments are deleted (-1: no limit)"});
  configs.push_back(
      {kRetentionMs, limit(own.retention_ms, defaults.retention_ms), own.retention_ms.has_value(),
       kLong, "Milliseconds a segment is kept after its newest record was appended (-1: forever)"});
  configs.push_back({kSegmentBytes, limit(own.segment_bytes, defaults.segment_bytes),
                     own.segment_bytes.has_value(), kInt,
                     "Bytes at which a partition's log segment is rolled"});
  return configs;
}

}  // namespace oxbow::kafka::internal
