// Kafka record values in Avro for tables with kafka.value.format=avro (docs/kafka.md): each value
// is one row as a plain Avro binary datum of the record schema that RowSchema derives from the
// table's Arrow schema (avro-confluent tables: after Confluent's framing).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/arrow/record_batch.h"
#include "oxbow/common/status.h"

namespace oxbow::kafka::internal {

// The Avro schema (JSON) of a table's rows (kafka::AvroSchemaOf); Invalid naming the column when a
// type or a name has no Avro form.
Result<std::string> RowSchema(const arrow::Schema& schema);
// The Avro type of a column's values, without the union with "null" of a nullable one.
Result<nlohmann::json> AvroType(const arrow::Field& field);

// Rows from Avro datums, one per value; an error names the record (its index plus
// `first_record`) and the column.
Result<arrow::RecordBatchPtr> AvroToRows(const std::vector<std::string_view>& values,
                                         const arrow::SchemaPtr& schema, size_t first_record = 0);

// Row `row` of `batch` as an Avro datum, appended to `out`.
Status AppendAvroRow(const arrow::RecordBatch& batch, int64_t row, std::string* out);

}  // namespace oxbow::kafka::internal
