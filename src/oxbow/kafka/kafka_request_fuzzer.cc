// Fuzzes what a Kafka client controls: a request frame (header, then the body of any API and
// version served), the record batches inside Produce, and an Avro value of a table with a
// column of every type.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "oxbow/kafka/avro_values_internal.h"
#include "oxbow/kafka/messages.h"
#include "oxbow/kafka/records.h"

namespace {

using namespace oxbow::kafka;

template <typename T>
void Check(const oxbow::Result<T>& decoded) {
  if (!decoded.ok() && decoded.status().message().empty()) __builtin_trap();  // errors say why
}

void DecodeBody(const RequestHeader& h, Reader& r) {
  const int16_t v = h.api_version;
  switch (static_cast<ApiKey>(h.api_key)) {
    case ApiKey::kProduce: {
      auto req = DecodeProduce(r, v);
      Check(req);
      if (!req.ok()) return;
      for (const auto& t : req->topics) {
        for (const auto& p : t.partitions) {
          if (p.records) Check(DecodeRecordBatches(*p.records));
        }
      }
      return;
    }
    case ApiKey::kFetch: return Check(DecodeFetch(r, v));
    case ApiKey::kListOffsets: return Check(DecodeListOffsets(r, v));
    case ApiKey::kMetadata: return Check(DecodeMetadata(r, v));
    case ApiKey::kOffsetCommit: return Check(DecodeOffsetCommit(r, v));
    case ApiKey::kOffsetFetch: return Check(DecodeOffsetFetch(r, v));
    case ApiKey::kFindCoordinator: return Check(DecodeFindCoordinator(r, v));
    case ApiKey::kJoinGroup: return Check(DecodeJoinGroup(r, v));
    case ApiKey::kHeartbeat: return Check(DecodeHeartbeat(r, v));
    case ApiKey::kLeaveGroup: return Check(DecodeLeaveGroup(r, v));
    case ApiKey::kSyncGroup: return Check(DecodeSyncGroup(r, v));
    case ApiKey::kApiVersions: return Check(DecodeApiVersions(r, v));
    case ApiKey::kCreateTopics: return Check(DecodeCreateTopics(r, v));
    case ApiKey::kDeleteTopics: return Check(DecodeDeleteTopics(r, v));
    case ApiKey::kInitProducerId: return Check(DecodeInitProducerId(r, v));
    case ApiKey::kDescribeGroups: return Check(DecodeDescribeGroups(r, v));
    case ApiKey::kListGroups: return Check(DecodeListGroups(r, v));
    case ApiKey::kDescribeConfigs: return Check(DecodeDescribeConfigs(r, v));
    case ApiKey::kSaslHandshake: return Check(DecodeSaslHandshake(r, v));
    case ApiKey::kSaslAuthenticate: return Check(DecodeSaslAuthenticate(r, v));
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
