#include <algorithm>
#include <chrono>
#include <climits>
#include <numeric>
#include <span>

#include "oxbow/arrow/builder.h"
#include "oxbow/common/parse.h"
#include "oxbow/kafka/avro_values_internal.h"
#include "oxbow/kafka/topic_configs_internal.h"
#include "oxbow/kafka/values_internal.h"
#include "oxbow/text/text.h"

namespace oxbow::kafka::internal {
namespace {

constexpr std::string_view kValueFormatProperty = "kafka.value.format";
constexpr std::string_view kUpdateBefore = "-U";
constexpr std::string_view kDelete = "-D";

using Records = std::span<const Record>;

constexpr size_t kFramingBytes = 5;  // Confluent's: a zero byte, then the schema id

// Each row of a JSON or Avro table's `rows` as a Kafka value: the row as a JSON object (the
// JSON Lines form of docs/text-formats.md) or as an Avro datum, framed with `schema_id` for an
// avro-confluent table.
Result<std::vector<std::string>> EncodeRows(TableKind kind, const arrow::RecordBatch& rows,
                                            int32_t schema_id) {
  std::vector<std::string> values;
  values.reserve(static_cast<size_t>(rows.num_rows()));
  if (kind == TableKind::kAvro || kind == TableKind::kAvroConfluent) {
    for (int64_t i = 0; i < rows.num_rows(); ++i) {
      std::string& value = values.emplace_back();
      if (kind == TableKind::kAvroConfluent) {
        value.push_back('\0');
        for (int shift = 24; shift >= 0; shift -= 8) {
          value.push_back(static_cast<char>(static_cast<uint32_t>(schema_id) >> shift));
        }
      }
      RETURN_NOT_OK(AppendAvroRow(rows, i, &value));
    }
    return values;
  }
  ASSIGN_OR_RAISE(std::string lines, text::FormatBatch(text::TextFormat::kJsonLines, rows));
  size_t start = 0;
  for (int64_t i = 0; i < rows.num_rows(); ++i) {
    const size_t end = lines.find('\n', start);
    values.push_back(lines.substr(start, end - start));
    start = end + 1;
  }
  return values;
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

// The values (or, `keys`, the keys) of records `first`.. as rows of a JSON table's `schema`; an
// error names the first record that is not a JSON object of its columns.
Result<arrow::RecordBatchPtr> JsonToRows(Records records, size_t first,
                                         const arrow::SchemaPtr& schema, bool keys) {
  const char* what = keys ? "key" : "value";
  // JSON Lines needs one object per line: newlines between a value's tokens become spaces
  // (inside a string a raw newline is not JSON anyway).
  auto one_line = [&](size_t i) -> Result<std::string> {
    const std::optional<std::string>& bytes = keys ? records[i].key : records[i].value;
    const std::string where = "record " + std::to_string(first + i);
    if (!bytes) return Status::Invalid(where + " has a null " + what);
    std::string line = *bytes;
    std::replace(line.begin(), line.end(), '\n', ' ');
    std::replace(line.begin(), line.end(), '\r', ' ');
    if (line.find_first_not_of(" \t") == std::string::npos) {
      return Status::Invalid(where + " has an empty " + what);
    }
    return line;
  };
  std::string lines;
  for (size_t i = 0; i < records.size(); ++i) {
    ASSIGN_OR_RAISE(std::string line, one_line(i));
    lines += line;
    lines += '\n';
  }
  auto rows = ParseJsonRows(lines, static_cast<int64_t>(records.size()), schema);
  if (rows.ok()) return rows;
  for (size_t i = 0; i < records.size(); ++i) {  // which record is it?
    ASSIGN_OR_RAISE(std::string line, one_line(i));
    auto one = ParseJsonRows(line + "\n", 1, schema);
    if (!one.ok()) {
      return one.status().WithContext("record " + std::to_string(first + i) +
                                      (keys ? "'s key" : ""));
    }
  }
  return rows.status();
}

// The same for an Avro table: each value (key) one Avro datum.
Result<arrow::RecordBatchPtr> AvroRecordsToRows(Records records, size_t first,
                                                const arrow::SchemaPtr& schema, bool keys) {
  std::vector<std::string_view> datums;
  for (size_t i = 0; i < records.size(); ++i) {
    const std::optional<std::string>& bytes = keys ? records[i].key : records[i].value;
    if (!bytes) {
      return Status::Invalid("record " + std::to_string(first + i) + " has a null " +
                             (keys ? "key" : "value"));
    }
    datums.push_back(*bytes);
  }
  return AvroToRows(datums, schema, first);
}

// The same for an avro-confluent table: each value (key) Confluent's framing of an Avro datum
// of the current schema, or, for a value, of an earlier version (read into the current one).
Result<arrow::RecordBatchPtr> FramedRecordsToRows(const TopicFormat& format, Records records,
                                                  size_t first, const arrow::SchemaPtr& schema,
                                                  bool keys) {
  const char* what = keys ? "key" : "value";
  const int32_t current = keys ? format.key_schema_id : format.value_schema_id;
  std::vector<std::string_view> datums;
  std::vector<std::string> converted;  // earlier versions' values, encoded in the current one
  converted.reserve(records.size());
  // A run of values framed with the same earlier version's id.
  std::vector<std::string_view> earlier;
  int32_t earlier_id = current;
  size_t earlier_first = 0;
  auto convert_earlier = [&]() -> Status {
    if (earlier.empty()) return Status::OK();
    ASSIGN_OR_RAISE(auto rows, format.read_earlier(earlier_id, earlier, first + earlier_first));
    for (int64_t i = 0; i < rows->num_rows(); ++i) {
      RETURN_NOT_OK(AppendAvroRow(*rows, i, &converted.emplace_back()));
      datums.push_back(converted.back());
    }
    earlier.clear();
    return Status::OK();
  };
  for (size_t i = 0; i < records.size(); ++i) {
    const std::optional<std::string>& bytes = keys ? records[i].key : records[i].value;
    const std::string where = "record " + std::to_string(first + i);
    if (!bytes) return Status::Invalid(where + " has a null " + what);
    if (bytes->size() < kFramingBytes || (*bytes)[0] != '\0') {
      return Status::Invalid(where + "'s " + what +
                             " has no Confluent framing (a zero byte, then a 4-byte schema id)");
    }
    uint32_t id = 0;
    for (size_t k = 1; k < kFramingBytes; ++k) id = (id << 8) | static_cast<uint8_t>((*bytes)[k]);
    const std::string_view datum = std::string_view(*bytes).substr(kFramingBytes);
    if (static_cast<int32_t>(id) == current) {
      RETURN_NOT_OK(convert_earlier());
      datums.push_back(datum);
      continue;
    }
    if (keys) {
      return Status::Invalid(where + "'s key has schema id " + std::to_string(id) +
                             ", and the key schema is id " + std::to_string(current));
    }
    if (static_cast<int32_t>(id) != earlier_id) {
      RETURN_NOT_OK(convert_earlier());
      earlier_id = static_cast<int32_t>(id);
      earlier_first = i;
    }
    earlier.push_back(datum);
  }
  RETURN_NOT_OK(convert_earlier());
  return AvroToRows(datums, schema, first);
}

// Records as rows of a raw table of `schema`; with `keyed` (a compacted topic) each needs a key.
Result<arrow::RecordBatchPtr> RawToRows(Records records, size_t first, bool log_append_time,
                                        const arrow::SchemaPtr& schema, bool keyed) {
  arrow::BinaryBuilder key(arrow::DataType::Binary());
  arrow::BinaryBuilder value(arrow::DataType::Binary());
  arrow::Int64Builder timestamp(RawTopicSchema()->field(2).type);
  arrow::BinaryBuilder headers(arrow::DataType::Binary());
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  for (size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    if (keyed && !r.key) {
      return Status::Invalid("record " + std::to_string(first + i) +
                             " has no key: a compacted topic's records need one");
    }
    RETURN_NOT_OK(r.key ? key.Append(*r.key) : key.AppendNull());
    RETURN_NOT_OK(r.value ? value.Append(*r.value) : value.AppendNull());
    RETURN_NOT_OK(timestamp.Append(log_append_time ? now_ms : r.timestamp_ms));
    RETURN_NOT_OK(r.headers.empty() ? headers.AppendNull()
                                    : headers.Append(EncodeHeaders(r.headers)));
  }
  std::vector<arrow::Array> columns;
  for (arrow::ArrayBuilder* b :
       std::initializer_list<arrow::ArrayBuilder*>{&key, &value, &timestamp, &headers}) {
    ASSIGN_OR_RAISE(auto array, b->Finish());
    columns.push_back(std::move(array));
  }
  return arrow::RecordBatch::Make(schema, static_cast<int64_t>(records.size()), std::move(columns));
}

// Records as rows (their values) of a table of `format` and `schema`.
Result<arrow::RecordBatchPtr> ValuesToRows(const TopicFormat& format, Records records, size_t first,
                                           bool log_append_time, const arrow::SchemaPtr& schema) {
  switch (format.kind) {
    case TableKind::kRaw:
      return RawToRows(records, first, log_append_time || format.log_append_time, schema,
                       format.keyed());
    case TableKind::kJson: return JsonToRows(records, first, schema, /*keys=*/false);
    case TableKind::kAvroConfluent:
      return FramedRecordsToRows(format, records, first, schema, /*keys=*/false);
    default: return AvroRecordsToRows(records, first, schema, /*keys=*/false);
  }
}

// The keys of records as rows of a primary-key table's key columns.
Result<arrow::RecordBatchPtr> KeysToRows(const TopicFormat& format, Records records, size_t first) {
  switch (format.kind) {
    case TableKind::kRaw: {
      arrow::BinaryBuilder key(arrow::DataType::Binary());
      for (size_t i = 0; i < records.size(); ++i) {
        if (!records[i].key) {
          return Status::Invalid("record " + std::to_string(first + i) +
                                 " deletes (it has no value) but has no key");
        }
        RETURN_NOT_OK(key.Append(*records[i].key));
      }
      ASSIGN_OR_RAISE(auto keys, key.Finish());
      return arrow::RecordBatch::Make(format.key_schema, static_cast<int64_t>(records.size()),
                                      {std::move(keys)});
    }
    case TableKind::kJson: return JsonToRows(records, first, format.key_schema, /*keys=*/true);
    case TableKind::kAvroConfluent:
      return FramedRecordsToRows(format, records, first, format.key_schema, /*keys=*/true);
    default: return AvroRecordsToRows(records, first, format.key_schema, /*keys=*/true);
  }
}

// An upsert's rows of a JSON or Avro table: the key of each record that has one must be the
// key columns of its value.
Status CheckKeysMatch(const TopicFormat& format, Records records, size_t first,
                      const arrow::RecordBatch& rows) {
  ASSIGN_OR_RAISE(auto row_keys, rows.SelectColumns(format.key_columns));
  // Every record keyed (what Kafka clients send): the keys parse and compare as one batch.
  if (std::all_of(records.begin(), records.end(), [](const Record& r) { return r.key; })) {
    auto keys = KeysToRows(format, records, first);
    if (keys.ok() && (*keys)->Equals(*row_keys)) return Status::OK();
  }
  // Otherwise record by record, to skip the unkeyed ones and name the first that differs.
  for (size_t i = 0; i < records.size(); ++i) {
    if (!records[i].key) continue;
    ASSIGN_OR_RAISE(auto key, KeysToRows(format, records.subspan(i, 1), first + i));
    if (!key->Equals(*row_keys->Slice(static_cast<int64_t>(i), 1))) {
      return Status::Invalid("record " + std::to_string(first + i) +
                             ": its key and the key columns of its value differ");
    }
  }
  return Status::OK();
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

const arrow::SchemaPtr& RawCompactedTopicSchema() {
  static const arrow::SchemaPtr kSchema = [] {
    std::vector<arrow::Field> fields = RawTopicSchema()->fields();
    fields[0].nullable = false;
    return std::make_shared<const arrow::Schema>(std::move(fields));
  }();
  return kSchema;
}

std::optional<Compression> CompressionNamed(std::string_view name) {
  static const std::pair<std::string_view, Compression> kCodecs[] = {
      {"producer", Compression::kNone}, {"uncompressed", Compression::kNone},
      {"gzip", Compression::kGzip},     {"snappy", Compression::kSnappy},
      {"lz4", Compression::kLz4},       {"zstd", Compression::kZstd}};
  for (const auto& [codec_name, codec] : kCodecs) {
    if (name == codec_name) return codec;
  }
  return std::nullopt;
}

TopicFormat FormatOf(const catalog::TableDescriptor& table) {
  TopicFormat format;
  if (table.schema == nullptr) return format;
  if (table.schema->Equals(*RawTopicSchema()) || table.schema->Equals(*RawCompactedTopicSchema())) {
    format.kind = TableKind::kRaw;
    // A raw table keyed by anything but its key column is no compacted topic.
    if (!table.primary_key.empty() && table.primary_key != std::vector<std::string>{"key"}) {
      format.kind = TableKind::kOther;
    }
  } else if (auto it = table.properties.find(std::string(kValueFormatProperty));
             it != table.properties.end()) {
    if (it->second == "json") format.kind = TableKind::kJson;
    if (it->second == "avro") format.kind = TableKind::kAvro;
    if (it->second == "avro-confluent") format.kind = TableKind::kAvroConfluent;
  }
  if (format.kind == TableKind::kOther) return format;
  auto time_type = table.properties.find(kTimestampTypeProperty);
  format.log_append_time = format.kind != TableKind::kRaw || (time_type != table.properties.end() &&
                                                              time_type->second == kLogAppendTime);
  // Values set through Kafka were checked (PropertyForConfig); others count as unset.
  if (auto it = table.properties.find(kCompressionTypeProperty); it != table.properties.end()) {
    format.fetch_compression = CompressionNamed(it->second).value_or(Compression::kNone);
  }
  if (auto it = table.properties.find(kMaxMessageBytesProperty); it != table.properties.end()) {
    auto limit = ParseInt64(it->second);
    format.max_message_bytes = limit.ok() ? *limit : -1;
  }
  for (const std::string& column : table.primary_key) {
    format.key_columns.push_back(table.schema->GetFieldIndex(column));
  }
  if (format.keyed()) {
    auto key_schema = table.schema->Select(format.key_columns);
    if (!key_schema.ok()) return TopicFormat{};  // a descriptor's key columns are its columns
    format.key_schema = std::move(key_schema).ValueOrDie();
  }
  return format;
}

std::string NotServedMessage(const std::string& table) {
  return "table " + Quote(table) +
         " is neither a raw Kafka table (key binary, value binary, timestamp, headers binary) "
         "nor has the property " +
         std::string(kValueFormatProperty) + "=json, avro or avro-confluent";
}

Status AppendRecords(const TopicFormat& format, const arrow::RecordBatch& rows, int64_t base_offset,
                     int64_t skip, int64_t append_time_ms, std::string* out) {
  if (skip >= rows.num_rows()) return Status::OK();
  const arrow::RecordBatchPtr slice = rows.Slice(skip, rows.num_rows() - skip);
  // A changelog's rows: the table's columns, then the change type.
  const arrow::Array* change = nullptr;
  arrow::RecordBatchPtr table_rows = slice;
  if (format.keyed()) {
    change = &slice->column(slice->num_columns() - 1);
    std::vector<int> columns(static_cast<size_t>(slice->num_columns() - 1));
    std::iota(columns.begin(), columns.end(), 0);
    ASSIGN_OR_RAISE(table_rows, slice->SelectColumns(columns));
  }
  const bool raw = format.kind == TableKind::kRaw;
  std::vector<std::string> values, keys;
  if (!raw) {
    ASSIGN_OR_RAISE(values, EncodeRows(format.kind, *table_rows, format.value_schema_id));
    if (format.keyed()) {
      ASSIGN_OR_RAISE(auto key_rows, table_rows->SelectColumns(format.key_columns));
      ASSIGN_OR_RAISE(keys, EncodeRows(format.kind, *key_rows, format.key_schema_id));
    }
  }
  RecordBatch batch;
  batch.compression = format.fetch_compression;
  batch.base_offset = base_offset + skip;
  batch.log_append_time = format.log_append_time;
  batch.base_timestamp = raw ? INT64_MAX : append_time_ms;
  batch.max_timestamp = raw ? INT64_MIN : append_time_ms;
  for (int64_t i = 0; i < table_rows->num_rows(); ++i) {
    const std::string_view change_type = change ? change->GetView(i) : std::string_view();
    if (change_type == kUpdateBefore) continue;  // the +U after it says the row
    const bool tombstone = change_type == kDelete;
    Record r;
    r.offset = batch.base_offset + i;
    const size_t row = static_cast<size_t>(i);
    if (raw) {
      const arrow::RecordBatch& t = *table_rows;
      r.timestamp_ms = tombstone ? append_time_ms : t.column(2).Value<int64_t>(i);
      if (t.column(0).IsValid(i)) r.key = std::string(t.column(0).GetView(i));
      if (!tombstone && t.column(1).IsValid(i)) r.value = std::string(t.column(1).GetView(i));
      if (!tombstone && t.column(3).IsValid(i)) {
        ASSIGN_OR_RAISE(r.headers, DecodeHeaders(t.column(3).GetView(i)));
      }
    } else {
      r.timestamp_ms = append_time_ms;
      if (format.keyed()) r.key = std::move(keys[row]);
      if (!tombstone) r.value = std::move(values[row]);
    }
    batch.base_timestamp = std::min(batch.base_timestamp, r.timestamp_ms);
    batch.max_timestamp = std::max(batch.max_timestamp, r.timestamp_ms);
    batch.records.push_back(std::move(r));
  }
  if (batch.records.empty()) batch.base_timestamp = batch.max_timestamp = append_time_ms;
  // The batch spans every row, also those left out, so that a consumer moves past them.
  batch.last_offset_delta = static_cast<int32_t>(table_rows->num_rows() - 1);
  return EncodeRecordBatch(batch, out);
}

Result<std::vector<RowRun>> ToRowRuns(const TopicFormat& format, const RecordBatch& batch,
                                      const arrow::SchemaPtr& schema) {
  const Records records(batch.records);
  std::vector<RowRun> runs;
  if (!format.keyed()) {
    ASSIGN_OR_RAISE(auto rows, ValuesToRows(format, records, 0, batch.log_append_time, schema));
    runs.push_back({engine::PutOp::kUpsert, std::move(rows)});
    return runs;
  }
  for (size_t first = 0; first < records.size();) {
    const bool deletes = !records[first].value;
    size_t end = first + 1;
    while (end < records.size() && !records[end].value == deletes) ++end;
    const Records run = records.subspan(first, end - first);
    RowRun out;
    if (deletes) {
      out.op = engine::PutOp::kDelete;
      ASSIGN_OR_RAISE(out.rows, KeysToRows(format, run, first));
    } else {
      ASSIGN_OR_RAISE(out.rows, ValuesToRows(format, run, first, batch.log_append_time, schema));
      if (format.kind != TableKind::kRaw) {
        RETURN_NOT_OK(CheckKeysMatch(format, run, first, *out.rows));
      }
    }
    runs.push_back(std::move(out));
    first = end;
  }
  return runs;
}

}  // namespace oxbow::kafka::internal
