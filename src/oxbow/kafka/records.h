// Kafka's record batch, magic v2 (docs/kafka.md#records): the unit a producer sends and a
// consumer fetches. Decoding checks the CRC32C and decompresses gzip, snappy, lz4 and zstd.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/common/status.h"

namespace oxbow::kafka {

enum class Compression : int8_t { kNone = 0, kGzip = 1, kSnappy = 2, kLz4 = 3, kZstd = 4 };

struct Header {
  std::string key;
  std::optional<std::string> value;
};

struct Record {
  int64_t offset = 0;        // base offset + offset delta
  int64_t timestamp_ms = 0;  // base timestamp + timestamp delta
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<Header> headers;
};

struct RecordBatch {
  int64_t base_offset = 0;
  int32_t partition_leader_epoch = -1;
  Compression compression = Compression::kNone;
  bool log_append_time = false;  // timestamp type
  bool transactional = false;
  bool control = false;
  int32_t last_offset_delta = 0;
  int64_t base_timestamp = 0;
  int64_t max_timestamp = 0;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  std::vector<Record> records;
  // Decoded batches: the batch as sent, a view into the decoded data (EncodeRecordBatch ignores
  // it).
  std::string_view bytes;
};

// The most bytes one batch may decompress to; more is refused (a decompression bomb).
inline constexpr size_t kMaxDecompressedBytes = size_t{256} << 20;

// Decodes every batch of a produce request's record set (magic 2 only). Errors name the batch
// by its index and say what is wrong (CRC mismatch, unknown codec, truncation...).
Result<std::vector<RecordBatch>> DecodeRecordBatches(std::string_view data);

// Appends `batch` uncompressed, or compressed with `batch.compression`, computing the lengths,
// the offset delta and the CRC. Records' offsets must start at base_offset.
Status EncodeRecordBatch(const RecordBatch& batch, std::string* out);

// Kafka's record header encoding (count, then key/value pairs, all varint-prefixed), which the
// `headers` column of a raw table holds.
std::string EncodeHeaders(const std::vector<Header>& headers);
Result<std::vector<Header>> DecodeHeaders(std::string_view data);

}  // namespace oxbow::kafka
