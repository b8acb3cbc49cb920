// How a table's rows and Kafka's records convert into each other: raw tables (key, value,
// timestamp, headers), JSON tables and Avro tables (docs/kafka.md#mapping).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/arrow/record_batch.h"
#include "oxbow/catalog/catalog.h"
#include "oxbow/engine/table.h"
#include "oxbow/kafka/records.h"

namespace oxbow::kafka::internal {

// The schema of a table created through Kafka: key binary, value binary, timestamp
// timestamp[ms, tz=UTC] not null, headers binary (Kafka's header encoding; null when none).
const arrow::SchemaPtr& RawTopicSchema();
// The same with a key that is not null: a compacted topic's (cleanup.policy=compact), a
// primary-key table keyed by "key".
const arrow::SchemaPtr& RawCompactedTopicSchema();

// How a table's rows are Kafka records (docs/kafka.md#mapping).
enum class TableKind {
  kRaw,   // the raw schema: key, value, timestamp, headers
  kJson,  // kafka.value.format=json: each value is one row as a JSON object
  kAvro,  // kafka.value.format=avro: each value is one row as an Avro datum
  // kafka.value.format=avro-confluent: the same after Confluent's framing (a zero byte and the
  // schema registry's id of the datum's schema, int32 big-endian)
  kAvroConfluent,
  kOther,  // not served through Kafka
};

// A table as a topic: how its values are encoded and, for a primary-key table, its key
// (docs/kafka.md#primary-key-tables): a record's key is the key columns, a record without a
// value deletes its key, and Fetch serves the changelog.
struct TopicFormat {
  TableKind kind = TableKind::kOther;
  std::vector<int> key_columns;  // indices into the table's schema; empty for a log table
  arrow::SchemaPtr key_schema;   // the key columns' schema; null for a log table
  // A raw table whose records carry the server's time (kafka.timestamp.type LogAppendTime);
  // JSON and Avro records always do.
  bool log_append_time = false;
  // The codec of the batches Fetch serves (kafka.compression.type).
  Compression fetch_compression = Compression::kNone;
  // The largest record batch Produce takes (kafka.max.message.bytes); -1: the request limit.
  int64_t max_message_bytes = -1;
  // kAvroConfluent (RegistryIds::Resolve fills these): the registry's ids of the current value
  // schema and of the key columns' schema, and the values framed with an earlier schema
  // version's id as rows of the current version (Invalid naming the record for another id).
  int32_t value_schema_id = -1;
  int32_t key_schema_id = -1;
  std::function<Result<arrow::RecordBatchPtr>(
      int32_t id, const std::vector<std::string_view>& datums, size_t first)>
      read_earlier;
  bool keyed() const { return !key_columns.empty(); }
};

// The codec a compression.type names ("producer" and "uncompressed": none); nullopt when it
// names none.
std::optional<Compression> CompressionNamed(std::string_view name);

TopicFormat FormatOf(const catalog::TableDescriptor& table);
// Why a table of kind kOther is not served.
std::string NotServedMessage(const std::string& table);

// The rows of a table as Kafka records appended to `out` as one batch, `skip` rows from its
// start left out; JSON and Avro records carry the batch's append time. A primary-key table's
// rows are its changelog's: "-U" rows are left out, "-D" rows become tombstones.
Status AppendRecords(const TopicFormat& format, const arrow::RecordBatch& rows, int64_t base_offset,
                     int64_t skip, int64_t append_time_ms, std::string* out);

// Consecutive records of one batch that do the same: upsert (or append) rows, or delete keys.
struct RowRun {
  engine::PutOp op = engine::PutOp::kUpsert;
  arrow::RecordBatchPtr rows;  // kDelete: the key columns (format.key_schema)
};
// One Kafka record batch as rows of a table of `format` (not kOther): one kUpsert run for a log
// table; for a primary-key table, a run per change of op. An error names the record.
Result<std::vector<RowRun>> ToRowRuns(const TopicFormat& format, const RecordBatch& batch,
                                      const arrow::SchemaPtr& schema);

}  // namespace oxbow::kafka::internal
