// How a table's rows and Kafka's records convert into each other: raw tables (key, value,
// timestamp, headers), JSON tables and Avro tables (docs/kafka.md#mapping).
#pragma once

#include <string>

#include "oxbow/arrow/record_batch.h"
#include "oxbow/catalog/catalog.h"
#include "oxbow/kafka/records.h"

namespace oxbow::kafka::internal {

// The schema of a table created through Kafka: key binary, value binary, timestamp
// timestamp[ms, tz=UTC] not null, headers binary (Kafka's header encoding; null when none).
const arrow::SchemaPtr& RawTopicSchema();

// How a table's rows are Kafka records (docs/kafka.md#mapping).
enum class TableKind {
  kRaw,    // the raw schema: key, value, timestamp, headers
  kJson,   // kafka.value.format=json: each value is one row as a JSON object
  kAvro,   // kafka.value.format=avro: each value is one row as an Avro datum
  kOther,  // not served through Kafka
};

TableKind KindOf(const catalog::TableDescriptor& table);
// Why a table of kind kOther is not served.
std::string NotServedMessage(const std::string& table);

// The rows of a table as Kafka records appended to `out` as one batch, `skip` rows from its
// start left out; JSON and Avro records carry the batch's append time.
Status AppendRecords(TableKind kind, const arrow::RecordBatch& rows, int64_t base_offset,
                     int64_t skip, int64_t append_time_ms, std::string* out);
// One Kafka record batch as rows of a table of `kind` (not kOther); an error names the record.
Result<arrow::RecordBatchPtr> ToRows(TableKind kind, const RecordBatch& batch,
                                     const arrow::SchemaPtr& schema);

}  // namespace oxbow::kafka::internal
