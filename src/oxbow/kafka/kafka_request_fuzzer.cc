// Fuzzes what a Kafka client controls: a request frame (header, then the body of any API and
// version served, through the generated decoders, round-tripped), the record batches inside
// Produce, those batches' records as the upserts and deletes of primary-key tables (JSON keys,
// raw keys), and an Avro value of a table with a column of every type.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "oxbow/kafka/avro_values_internal.h"
#include "oxbow/kafka/messages.h"
#include "oxbow/kafka/records.h"
#include "oxbow/kafka/values_internal.h"

namespace {

using namespace oxbow::kafka;

template <typename T>
void Check(const oxbow::Result<T>& decoded) {
  if (!decoded.ok() && decoded.status().message().empty()) __builtin_trap();  // errors say why
}

// A request body that decodes must encode and decode to the same request.
template <typename Request>
void DecodeBody(Reader& r, int16_t version) {
  auto request = Decode<Request>(r, version);
  Check(request);
  if (!request.ok()) return;
  const std::string again = Encode(*request, version);
  Reader reread(again);
  auto decoded = Decode<Request>(reread, version);
  if (!decoded.ok() || !(*decoded == *request)) __builtin_trap();
  if constexpr (std::is_same_v<Request, msg::ProduceRequest>) {
    for (const auto& t : request->topic_data) {
      for (const auto& p : t.partition_data) {
        if (p.records) Check(DecodeRecordBatches(*p.records));
      }
    }
  }
}

void DecodeBody(const RequestHeader& h, Reader& r) {
  switch (static_cast<ApiKey>(h.api_key)) {
#define KAFKA_API(name, key, min_version, max_version, first_flexible) \
  case ApiKey::k##name:                                                \
    return DecodeBody<msg::name##Request>(r, h.api_version);
#include "oxbow/kafka/apis.inc"
#undef KAFKA_API
  }
}

// A value of an Avro table: what decodes must encode and decode again.
void DecodeAvroValue(std::string_view value) {
  using oxbow::arrow::DataType;
  static const auto kSchema =
      std::make_shared<const oxbow::arrow::Schema>(std::vector<oxbow::arrow::Field>{
          {"b", DataType::Bool(), true, {}},
          {"i8", DataType::Int8(), false, {}},
          {"u16", DataType::UInt16(), true, {}},
          {"u64", DataType::UInt64(), true, {}},
          {"f", DataType::Float32(), true, {}},
          {"s", DataType::String(), true, {}},
          {"d", DataType::Decimal128(20, 3), true, {}},
          {"t", DataType::Timestamp(oxbow::arrow::TimeUnit::kMicro, "UTC"), true, {}},
          {"x", DataType::FixedSizeBinary(2), true, {}}});
  auto rows = internal::AvroToRows({value}, kSchema);
  Check(rows);
  if (!rows.ok()) return;
  std::string again;
  if (!internal::AppendAvroRow(**rows, 0, &again).ok()) __builtin_trap();
  if (!internal::AvroToRows({again}, kSchema).ok()) __builtin_trap();
}

// A primary-key table's format and schema: JSON or avro-confluent values keyed by (id, name),
// or a compacted topic's raw key (value_format empty).
struct KeyedTable {
  oxbow::arrow::SchemaPtr schema;
  internal::TopicFormat format;
};

KeyedTable MakeKeyedTable(const std::string& value_format) {
  using oxbow::arrow::DataType;
  oxbow::catalog::TableDescriptor table;
  const bool raw = value_format.empty();
  table.schema =
      raw ? internal::RawCompactedTopicSchema()
          : std::make_shared<const oxbow::arrow::Schema>(std::vector<oxbow::arrow::Field>{
                {"id", DataType::Int64(), false, {}},
                {"name", DataType::String(), false, {}},
                {"amount", DataType::Decimal128(12, 2), true, {}}});
  table.primary_key =
      raw ? std::vector<std::string>{"key"} : std::vector<std::string>{"id", "name"};
  if (!raw) table.properties["kafka.value.format"] = value_format;
  internal::TopicFormat format = internal::FormatOf(table);
  // Framed values: ids 1 (the current version), 2 (the key) and 3 (an earlier version, here
  // read as the current one).
  format.value_schema_id = 1;
  format.key_schema_id = 2;
  format.read_earlier = [schema = table.schema](
                            int32_t id, const std::vector<std::string_view>& datums,
                            size_t first) -> oxbow::Result<oxbow::arrow::RecordBatchPtr> {
    if (id != 3) return oxbow::Status::Invalid("no version has id " + std::to_string(id));
    return internal::AvroToRows(datums, schema, first);
  };
  return {table.schema, std::move(format)};
}

// A batch's records as a keyed table's changes: each run has rows, or an error says why.
void DecodeChanges(const RecordBatch& batch) {
  static const KeyedTable kTables[] = {MakeKeyedTable("json"), MakeKeyedTable("avro-confluent"),
                                       MakeKeyedTable("")};
  for (const KeyedTable& table : kTables) {
    auto runs = internal::ToRowRuns(table.format, batch, table.schema);
    Check(runs);
    if (!runs.ok()) continue;
    for (const auto& run : *runs) {
      if (run.rows == nullptr || !run.rows->Validate().ok()) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view frame(reinterpret_cast<const char*>(data), size);
  Reader r(frame);
  const RequestHeader header = DecodeRequestHeader(r);
  const ApiSupport* api = FindApi(header.api_key);
  if (r.ok() && api != nullptr && header.api_version >= api->min_version &&
      header.api_version <= api->max_version) {
    DecodeBody(header, r);
  }
  DecodeAvroValue(frame);
  // The same bytes as a record set; a batch that decodes must encode and decode to itself.
  auto batches = DecodeRecordBatches(frame);
  if (batches.ok()) {
    for (const auto& batch : *batches) {
      DecodeChanges(batch);
      std::string again;
      if (!EncodeRecordBatch(batch, &again).ok()) __builtin_trap();
      auto decoded = DecodeRecordBatches(again);
      if (!decoded.ok() || decoded->size() != 1 ||
          decoded->front().records.size() != batch.records.size()) {
        __builtin_trap();
      }
      for (size_t i = 0; i < batch.records.size(); ++i) {
        const Record& a = batch.records[i];
        const Record& b = decoded->front().records[i];
        if (a.key != b.key || a.value != b.value || a.offset != b.offset ||
            a.timestamp_ms != b.timestamp_ms || a.headers.size() != b.headers.size()) {
          __builtin_trap();
        }
      }
    }
  }
  return 0;
}
