#include <algorithm>
#include <chrono>

#include "oxbow/arrow/builder.h"
#include "oxbow/kafka/avro_values_internal.h"
#include "oxbow/kafka/values_internal.h"
#include "oxbow/text/text.h"

namespace oxbow::kafka::internal {
namespace {

constexpr std::string_view kValueFormatProperty = "kafka.value.format";

// The rows of an Avro table as Kafka records: each value the row as an Avro datum, no key, the
// batch's append time.
Status AppendAvroRecords(const arrow::RecordBatch& rows, int64_t base_offset, int64_t skip,
                         int64_t append_time_ms, std::string* out) {
  if (skip >= rows.num_rows()) return Status::OK();
  RecordBatch batch;
  batch.base_offset = base_offset + skip;
  batch.base_timestamp = batch.max_timestamp = append_time_ms;
  for (int64_t i = skip; i < rows.num_rows(); ++i) {
    Record r;
    r.offset = base_offset + i;
    r.timestamp_ms = append_time_ms;
    std::string value;
    RETURN_NOT_OK(AppendAvroRow(rows, i, &value));
    r.value = std::move(value);
    batch.records.push_back(std::move(r));
  }
  batch.last_offset_delta = static_cast<int32_t>(rows.num_rows() - 1 - skip);
  return EncodeRecordBatch(batch, out);
}

// One Kafka record batch as rows of an Avro table; an error names the record.
Result<arrow::RecordBatchPtr> AvroBatchToRows(const RecordBatch& batch,
                                              const arrow::SchemaPtr& schema) {
  std::vector<std::string_view> values;
  for (size_t i = 0; i < batch.records.size(); ++i) {
    if (!batch.records[i].value) {
      return Status::Invalid("record " + std::to_string(i) + " has a null value");
    }
    values.push_back(*batch.records[i].value);
  }
  return AvroToRows(values, schema);
}

// The rows of a JSON table as Kafka records: each value the row as a JSON object (the JSON
// Lines form of docs/text-formats.md), no key, the batch's append time.
Status AppendJsonRecords(const arrow::RecordBatch& rows, int64_t base_offset, int64_t skip,
                         int64_t append_time_ms, std::string* out) {
  if (skip >= rows.num_rows()) return Status::OK();
  ASSIGN_OR_RAISE(std::string lines, text::FormatBatch(text::TextFormat::kJsonLines,
                                                       *rows.Slice(skip, rows.num_rows() - skip)));
  RecordBatch batch;
  batch.base_offset = base_offset + skip;
  batch.base_timestamp = batch.max_timestamp = append_time_ms;
  size_t start = 0;
  for (int64_t i = skip; i < rows.num_rows(); ++i) {
    const size_t end = lines.find('\n', start);
    Record r;
    r.offset = base_offset + i;
    r.timestamp_ms = append_time_ms;
    r.value = lines.substr(start, end - start);
    batch.records.push_back(std::move(r));
    start = end + 1;
  }
  batch.last_offset_delta = static_cast<int32_t>(rows.num_rows() - 1 - skip);
  return EncodeRecordBatch(batch, out);
}

// Parses values as JSON Lines rows of `schema`.
Result<arrow::RecordBatchPtr> ParseJsonRows(const std::string& lines, int64_t rows,
                                            const arrow::SchemaPtr& schema) {
  text::ReadOptions options;
  options.batch_rows = std::max<int64_t>(rows, 1);
  ASSIGN_OR_RAISE(auto reader,
                  text::TextReader::Make(text::TextFormat::kJsonLines, lines, schema, options));
  ASSIGN_OR_RAISE(auto batch, reader->Next());
  if (batch == nullptr || batch->num_rows() != rows) {
    return Status::Invalid("expected " + std::to_string(rows) + " JSON objects");
  }
  return batch;
}

// One Kafka record batch as rows of a JSON table; an error names the first record that is not
// a JSON object of the table's columns.
Result<arrow::RecordBatchPtr> JsonToRows(const RecordBatch& batch, const arrow::SchemaPtr& schema) {
  // JSON Lines needs one object per line: newlines between a value's tokens become spaces
  // (inside a string a raw newline is not JSON anyway).
  auto one_line = [](const Record& r, size_t i) -> Result<std::string> {
    if (!r.value) return Status::Invalid("record " + std::to_string(i) + " has a null value");
    std::string line = *r.value;
    std::replace(line.begin(), line.end(), '\n', ' ');
    std::replace(line.begin(), line.end(), '\r', ' ');
    if (line.find_first_not_of(" \t") == std::string::npos) {
      return Status::Invalid("record " + std::to_string(i) + " has an empty value");
    }
    return line;
  };
  std::string lines;
  for (size_t i = 0; i < batch.records.size(); ++i) {
    ASSIGN_OR_RAISE(std::string line, one_line(batch.records[i], i));
    lines += line;
    lines += '\n';
  }
  auto rows = ParseJsonRows(lines, static_cast<int64_t>(batch.records.size()), schema);
  if (rows.ok()) return rows;
  for (size_t i = 0; i < batch.records.size(); ++i) {  // which record is it?
    ASSIGN_OR_RAISE(std::string line, one_line(batch.records[i], i));
    auto one = ParseJsonRows(line + "\n", 1, schema);
    if (!one.ok()) return one.status().WithContext("record " + std::to_string(i));
  }
  return rows.status();
}

// The rows of a raw table as Kafka records, `skip` rows from its start left out.
Status AppendRawRecords(const arrow::RecordBatch& rows, int64_t base_offset, int64_t skip,
                        std::string* out) {
  if (skip >= rows.num_rows()) return Status::OK();
  const arrow::Array& key = rows.column(0);
  const arrow::Array& value = rows.column(1);
  const arrow::Array& timestamp = rows.column(2);
  const arrow::Array& headers = rows.column(3);
  RecordBatch batch;
  batch.base_offset = base_offset + skip;
  batch.base_timestamp = timestamp.Value<int64_t>(skip);
  batch.max_timestamp = batch.base_timestamp;
  for (int64_t i = skip; i < rows.num_rows(); ++i) {
    Record r;
    r.offset = base_offset + i;
    r.timestamp_ms = timestamp.Value<int64_t>(i);
    batch.max_timestamp = std::max(batch.max_timestamp, r.timestamp_ms);
    if (key.IsValid(i)) r.key = std::string(key.GetView(i));
    if (value.IsValid(i)) r.value = std::string(value.GetView(i));
    if (headers.IsValid(i)) {
      ASSIGN_OR_RAISE(r.headers, DecodeHeaders(headers.GetView(i)));
    }
    batch.records.push_back(std::move(r));
  }
  batch.last_offset_delta = static_cast<int32_t>(rows.num_rows() - 1 - skip);
  return EncodeRecordBatch(batch, out);
}

// One Kafka record batch as rows of a raw table.
Result<arrow::RecordBatchPtr> RawToRows(const RecordBatch& batch) {
  arrow::BinaryBuilder key(arrow::DataType::Binary());
  arrow::BinaryBuilder value(arrow::DataType::Binary());
  arrow::Int64Builder timestamp(RawTopicSchema()->field(2).type);
  arrow::BinaryBuilder headers(arrow::DataType::Binary());
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  for (const Record& r : batch.records) {
    RETURN_NOT_OK(r.key ? key.Append(*r.key) : key.AppendNull());
    RETURN_NOT_OK(r.value ? value.Append(*r.value) : value.AppendNull());
    RETURN_NOT_OK(timestamp.Append(batch.log_append_time ? now_ms : r.timestamp_ms));
    RETURN_NOT_OK(r.headers.empty() ? headers.AppendNull()
                                    : headers.Append(EncodeHeaders(r.headers)));
  }
  std::vector<arrow::Array> columns;
  for (arrow::ArrayBuilder* b :
       std::initializer_list<arrow::ArrayBuilder*>{&key, &value, &timestamp, &headers}) {
    ASSIGN_OR_RAISE(auto array, b->Finish());
    columns.push_back(std::move(array));
  }
  return arrow::RecordBatch::Make(RawTopicSchema(), static_cast<int64_t>(batch.records.size()),
                                  std::move(columns));
}

}  // namespace

const arrow::SchemaPtr& RawTopicSchema() {
  using arrow::DataType;
  static const arrow::SchemaPtr kSchema =
      std::make_shared<const arrow::Schema>(std::vector<arrow::Field>{
          {"key", DataType::Binary(), true, {}},
          {"value", DataType::Binary(), true, {}},
          {"timestamp", DataType::Timestamp(arrow::TimeUnit::kMilli, "UTC"), false, {}},
          {"headers", DataType::Binary(), true, {}}});
  return kSchema;
}

TableKind KindOf(const catalog::TableDescriptor& table) {
  if (table.schema->Equals(*RawTopicSchema())) return TableKind::kRaw;
  auto format = table.properties.find(std::string(kValueFormatProperty));
  if (format == table.properties.end()) return TableKind::kOther;
  if (format->second == "json") return TableKind::kJson;
  if (format->second == "avro") return TableKind::kAvro;
  return TableKind::kOther;
}

std::string NotServedMessage(const std::string& table) {
  return "table " + Quote(table) +
         " is neither a raw Kafka table (key binary, value binary, timestamp, headers binary) "
         "nor has the property " +
         std::string(kValueFormatProperty) + "=json or avro";
}

Status AppendRecords(TableKind kind, const arrow::RecordBatch& rows, int64_t base_offset,
                     int64_t skip, int64_t append_time_ms, std::string* out) {
  return kind == TableKind::kRaw ? AppendRawRecords(rows, base_offset, skip, out)
         : kind == TableKind::kJson
             ? AppendJsonRecords(rows, base_offset, skip, append_time_ms, out)
             : AppendAvroRecords(rows, base_offset, skip, append_time_ms, out);
}

Result<arrow::RecordBatchPtr> ToRows(TableKind kind, const RecordBatch& batch,
                                     const arrow::SchemaPtr& schema) {
  return kind == TableKind::kRaw    ? RawToRows(batch)
         : kind == TableKind::kJson ? JsonToRows(batch, schema)
                                    : AvroBatchToRows(batch, schema);
}

}  // namespace oxbow::kafka::internal
