#include "oxbow/kafka/records.h"

#include "oxbow/common/crc32c.h"
#include "oxbow/kafka/compression_internal.h"
#include "oxbow/kafka/wire.h"

namespace oxbow::kafka {
namespace {

// Bytes of a batch header from the attributes field on (what the CRC covers starts there).
constexpr size_t kBatchOverhead = 61;     // baseOffset .. records count
constexpr size_t kLengthFieldEnd = 12;    // baseOffset + batchLength
constexpr size_t kCrcOffset = 17;         // + partitionLeaderEpoch + magic
constexpr size_t kAttributesOffset = 21;  // + crc
constexpr int16_t kCompressionMask = 0x07;
constexpr int16_t kTimestampTypeBit = 0x08;
constexpr int16_t kTransactionalBit = 0x10;
constexpr int16_t kControlBit = 0x20;

std::optional<std::string> NullableVarBytes(Reader& r) {
  const int32_t n = r.Varint();
  if (!r.ok() || n < 0) return std::nullopt;
  return std::string(r.Raw(static_cast<size_t>(n)));
}

void WriteNullableVarBytes(Writer& w, const std::optional<std::string>& v) {
  if (!v) return w.Varint(-1);
  w.Varint(static_cast<int32_t>(v->size()));
  w.Raw(*v);
}

std::vector<Header> ReadHeaders(Reader& r) {
  std::vector<Header> headers;
  const int32_t n = r.Varint();
  if (n < 0 || static_cast<size_t>(n) > r.remaining()) {
    r.Fail("header count " + std::to_string(n) + " is out of range");
    return headers;
  }
  headers.reserve(static_cast<size_t>(n));
  for (int32_t i = 0; i < n && r.ok(); ++i) {
    Header h;
    auto key = NullableVarBytes(r);
    if (!key && r.ok()) r.Fail("header key is null");
    h.key = key.value_or("");
    h.value = NullableVarBytes(r);
    headers.push_back(std::move(h));
  }
  return headers;
}

void WriteHeaders(Writer& w, const std::vector<Header>& headers) {
  w.Varint(static_cast<int32_t>(headers.size()));
  for (const auto& h : headers) {
    WriteNullableVarBytes(w, h.key);
    WriteNullableVarBytes(w, h.value);
  }
}

Status DecodeRecords(std::string_view data, int32_t count, RecordBatch* batch) {
  Reader r(data);
  batch->records.reserve(static_cast<size_t>(std::min<int64_t>(count, data.size())));
  for (int32_t i = 0; i < count; ++i) {
    const int32_t length = r.Varint();
    if (!r.ok()) break;
    if (length < 0) return Status::Invalid("record " + std::to_string(i) + " has negative length");
    Reader rec(r.Raw(static_cast<size_t>(length)));
    if (!r.ok()) break;
    Record out;
    (void)rec.Int8();  // attributes: unused in magic 2
    out.timestamp_ms = batch->base_timestamp + rec.Varlong();
    out.offset = batch->base_offset + rec.Varint();
    out.key = NullableVarBytes(rec);
    out.value = NullableVarBytes(rec);
    out.headers = ReadHeaders(rec);
    if (rec.ok() && rec.remaining() != 0) rec.Fail("trailing bytes after the headers");
    if (!rec.ok()) return rec.status().WithContext("record " + std::to_string(i));
    batch->records.push_back(std::move(out));
  }
  if (!r.ok()) return r.status().WithContext("records");
  if (r.remaining() != 0) {
    return Status::Invalid(std::to_string(r.remaining()) + " bytes after the last of " +
                           std::to_string(count) + " records");
  }
  return Status::OK();
}

Result<RecordBatch> DecodeBatch(std::string_view bytes) {
  Reader r(bytes);
  RecordBatch batch;
  batch.base_offset = r.Int64();
  (void)r.Int32();  // batch length: the caller framed the batch with it
  batch.partition_leader_epoch = r.Int32();
  const int8_t magic = r.Int8();
  const uint32_t crc = r.UInt32();
  if (!r.ok()) return r.status();
  if (magic != 2) {
    return Status::Invalid("magic " + std::to_string(magic) +
                           " is not supported (only record batch v2, magic 2)");
  }
  const uint32_t actual =
      crc32c::Value(bytes.data() + kAttributesOffset, bytes.size() - kAttributesOffset);
  if (actual != crc) return Status::Invalid("CRC32C mismatch: the batch is corrupt");
  const int16_t attributes = r.Int16();
  const int codec = attributes & kCompressionMask;
  if (codec > static_cast<int>(Compression::kZstd)) {
    return Status::Invalid("unknown compression codec " + std::to_string(codec));
  }
  batch.compression = static_cast<Compression>(codec);
  batch.log_append_time = (attributes & kTimestampTypeBit) != 0;
  batch.transactional = (attributes & kTransactionalBit) != 0;
  batch.control = (attributes & kControlBit) != 0;
  batch.last_offset_delta = r.Int32();
  batch.base_timestamp = r.Int64();
  batch.max_timestamp = r.Int64();
  batch.producer_id = r.Int64();
  batch.producer_epoch = r.Int16();
  batch.base_sequence = r.Int32();
  const int32_t count = r.Int32();
  if (!r.ok()) return r.status();
  if (count < 0) return Status::Invalid("negative record count " + std::to_string(count));
  std::string_view body = r.Raw(r.remaining());
  if (batch.compression == Compression::kNone) {
    RETURN_NOT_OK(DecodeRecords(body, count, &batch));
  } else {
    ASSIGN_OR_RAISE(std::string plain, internal::Decompress(batch.compression, body));
    RETURN_NOT_OK(DecodeRecords(plain, count, &batch));
  }
  return batch;
}

}  // namespace

Result<std::vector<RecordBatch>> DecodeRecordBatches(std::string_view data) {
  std::vector<RecordBatch> batches;
  size_t pos = 0;
  while (pos < data.size()) {
    const std::string context = "record batch " + std::to_string(batches.size());
    Reader header(data.substr(pos));
    (void)header.Int64();
    const int32_t length = header.Int32();
    if (!header.ok()) return header.status().WithContext(context);
    if (length < static_cast<int32_t>(kBatchOverhead - kLengthFieldEnd) ||
        static_cast<size_t>(length) > data.size() - pos - kLengthFieldEnd) {
      return Status::Invalid(context + ": batch length " + std::to_string(length) +
                             " does not fit the " + std::to_string(data.size() - pos) +
                             " bytes left");
    }
    const size_t size = kLengthFieldEnd + static_cast<size_t>(length);
    auto batch = DecodeBatch(data.substr(pos, size));
    if (!batch.ok()) return batch.status().WithContext(context);
    batches.push_back(std::move(batch).ValueOrDie());
    batches.back().bytes = data.substr(pos, size);
    pos += size;
  }
  return batches;
}

Status EncodeRecordBatch(const RecordBatch& batch, std::string* out) {
  Writer records;
  for (const Record& rec : batch.records) {
    Writer body;
    body.Int8(0);
    body.Varlong(rec.timestamp_ms - batch.base_timestamp);
    body.Varint(static_cast<int32_t>(rec.offset - batch.base_offset));
    WriteNullableVarBytes(body, rec.key);
    WriteNullableVarBytes(body, rec.value);
    WriteHeaders(body, rec.headers);
    records.Varint(static_cast<int32_t>(body.size()));
    records.Raw(body.buffer());
  }
  ASSIGN_OR_RAISE(std::string payload, internal::Compress(batch.compression, records.buffer()));
  Writer w;
  w.Int64(batch.base_offset);
  w.Int32(0);  // batch length, patched below
  w.Int32(batch.partition_leader_epoch);
  w.Int8(2);
  w.UInt32(0);  // CRC, patched below
  int16_t attributes = static_cast<int16_t>(batch.compression);
  if (batch.log_append_time) attributes |= kTimestampTypeBit;
  if (batch.transactional) attributes |= kTransactionalBit;
  if (batch.control) attributes |= kControlBit;
  w.Int16(attributes);
  w.Int32(batch.last_offset_delta);
  w.Int64(batch.base_timestamp);
  w.Int64(batch.max_timestamp);
  w.Int64(batch.producer_id);
  w.Int16(batch.producer_epoch);
  w.Int32(batch.base_sequence);
  w.Int32(static_cast<int32_t>(batch.records.size()));
  w.Raw(payload);
  w.PatchInt32(8, static_cast<int32_t>(w.size() - kLengthFieldEnd));
  const std::string& bytes = w.buffer();
  w.PatchInt32(kCrcOffset, static_cast<int32_t>(crc32c::Value(bytes.data() + kAttributesOffset,
                                                              bytes.size() - kAttributesOffset)));
  out->append(bytes);
  return Status::OK();
}

std::string EncodeHeaders(const std::vector<Header>& headers) {
  Writer w;
  WriteHeaders(w, headers);
  return w.Take();
}

Result<std::vector<Header>> DecodeHeaders(std::string_view data) {
  Reader r(data);
  auto headers = ReadHeaders(r);
  if (r.ok() && r.remaining() != 0) r.Fail("trailing bytes after the headers");
  if (!r.ok()) return r.status().WithContext("headers");
  return headers;
}

}  // namespace oxbow::kafka
