// Feeds arbitrary bytes to the IPC stream reader, file reader, single-message decoder (flat and
// nested schemas) and projector, and decoded string columns to the UTF-8 validator. Nothing may
// crash, leak or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "oxbow/arrow/ipc.h"
#include "oxbow/arrow/utf8.h"

namespace {

using namespace oxbow::arrow;       // NOLINT
using namespace oxbow::arrow::ipc;  // NOLINT

ReadOptions FuzzOptions() {
  ReadOptions options;
  options.max_decompressed_buffer_size = 16 << 20;  // stay far below libFuzzer's RSS limit
  return options;
}

void Touch(const RecordBatchPtr& batch) {
  for (const Array& column : batch->columns()) {
    // What DoPut runs on a decoded string column.
    if (column.type().id() == TypeId::kString) (void)ValidateUtf8(column);
    if (column.length() > 0 && column.length() < 4096) {
      volatile bool sink = column.IsNull(column.length() - 1);
      (void)sink;
      // Walks the last element's children, offsets and values.
      if (column.type().is_nested()) {
        sink = column.ElementEquals(column.length() - 1, column, column.length() - 1);
      }
    }
  }
}

void ReadStream(const std::shared_ptr<oxbow::Buffer>& data) {
  auto reader = StreamReader::Open(data, FuzzOptions());
  if (!reader.ok()) return;
  const SchemaPtr schema = (*reader)->schema();
  for (int i = 0; i < 64; ++i) {
    const int64_t at = (*reader)->position();
    auto batch = (*reader)->Next();
    if (!batch.ok() || !*batch) break;
    Touch(*batch);
    // The same message through the projector, then decoded.
    int64_t offset = at;
    auto message = ReadMessage(data, &offset);
    if (!message.ok() || !message->has_value() || schema->num_fields() == 0) continue;
    std::vector<int> columns = {schema->num_fields() - 1, 0};
    auto projector = RecordBatchProjector::Make(schema, columns);
    if (!projector.ok()) continue;
    auto projected = projector->Project(**message);
    if (!projected.ok()) continue;
    auto body = projected->BodyAsBuffer();
    if (!body.ok()) continue;
    auto decoded = DecodeRecordBatch(projector->projected_schema(), *projected->metadata, *body,
                                     FuzzOptions());
    if (decoded.ok()) Touch(*decoded);
  }
}

void ReadFile(const std::shared_ptr<oxbow::Buffer>& data) {
  auto reader = FileReader::Open(data, FuzzOptions());
  if (!reader.ok()) return;
  for (int i = 0; i < (*reader)->num_record_batches() && i < 64; ++i) {
    auto batch = (*reader)->ReadRecordBatch(i);
    if (batch.ok()) Touch(*batch);
  }
}

// The first 4 bytes split the input into Flight-style metadata and body for one message.
void DecodeSingle(const uint8_t* data, size_t size) {
  if (size < 4) return;
  uint32_t split;
  std::memcpy(&split, data, 4);
  data += 4;
  size -= 4;
  split = static_cast<uint32_t>(split % (size + 1));
  auto metadata = oxbow::Buffer::CopyFrom({reinterpret_cast<const char*>(data), split});
  auto body = oxbow::Buffer::CopyFrom({reinterpret_cast<const char*>(data) + split, size - split});
  if (!metadata.ok() || !body.ok()) return;
  auto message = ParseMessage(*metadata, *body);
  if (!message.ok()) return;
  if (message->type == MessageType::kSchema) {
    (void)DecodeSchema(*message->metadata);
    return;
  }
  auto info = InspectRecordBatch(*message->metadata);
  if (!info.ok()) return;
  // A fixed schema of every type, so record batch bodies are exercised too.
  static const SchemaPtr schema = std::make_shared<const Schema>(std::vector<Field>{
      {"i", DataType::Int32()},
      {"s", DataType::String()},
      {"b", DataType::Bool()},
      {"d", DataType::Decimal128(10, 2)},
  });
  auto batch = DecodeRecordBatch(schema, *message, FuzzOptions());
  if (batch.ok()) Touch(*batch);
  // And one of nested types (seed single_nested).
  static const SchemaPtr nested = std::make_shared<const Schema>(std::vector<Field>{
      {"l", DataType::List({"item", DataType::Int32()})},
      {"s", DataType::Struct({{"a", DataType::Int32()}, {"b", DataType::String()}})},
      {"m", DataType::Map(DataType::String(), DataType::Int32())},
      {"f", DataType::FixedSizeList({"item", DataType::Int32()}, 2)},
  });
  batch = DecodeRecordBatch(nested, *message, FuzzOptions());
  if (batch.ok()) Touch(*batch);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto buffer = oxbow::Buffer::CopyFrom({reinterpret_cast<const char*>(data), size});
  if (!buffer.ok()) return 0;
  ReadStream(*buffer);
  ReadFile(*buffer);
  DecodeSingle(data, size);
  return 0;
}
