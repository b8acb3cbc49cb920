// Encoding record batches and schemas, and the stream and file writers.
#include <cstring>
#include <string>
#include <utility>

#include "oxbow/arrow/ipc_internal.h"
#include "oxbow/common/bit_util.h"

namespace oxbow::arrow::ipc {

namespace fb = internal::fb;

namespace {

// Collects body pieces, buffer descriptors and field nodes of one RecordBatch message.
class BodyBuilder {
 public:
  BodyBuilder(Codec codec, int level, const KeyValueMetadata& custom_metadata)
      : codec_(codec), level_(level), custom_metadata_(custom_metadata) {}

  void AddNode(int64_t length, int64_t null_count) { nodes_.emplace_back(length, null_count); }

  // Appends one logical buffer (compressing it when asked), then pads to 8 bytes.
  Status AddBuffer(std::shared_ptr<Buffer> buffer) {
    const int64_t start = body_length_;
    const int64_t size = buffer ? buffer->size() : 0;
    if (size > 0) {
      if (codec_ == Codec::kNone) {
        Push(std::move(buffer));
      } else {
        RETURN_NOT_OK(AddCompressed(std::move(buffer)));
      }
    }
    buffers_.emplace_back(start, body_length_ - start);
    const int64_t padded = bit_util::RoundUp(body_length_, kIpcAlignment);
    if (padded > body_length_) Push(internal::ZeroPadding(padded - body_length_));
    return Status::OK();
  }

  EncodedMessage Finish(int64_t num_rows) {
    flatbuffers::FlatBufferBuilder fbb(256 + 32 * (nodes_.size() + buffers_.size()));
    auto nodes = fbb.CreateVectorOfStructs(nodes_);
    auto buffers = fbb.CreateVectorOfStructs(buffers_);
    flatbuffers::Offset<fb::BodyCompression> compression = 0;
    if (codec_ != Codec::kNone) {
      compression = fb::CreateBodyCompression(
          fbb, codec_ == Codec::kZstd ? fb::CompressionType::ZSTD : fb::CompressionType::LZ4_FRAME,
          fb::BodyCompressionMethod::BUFFER);
    }
    auto batch = fb::CreateRecordBatch(fbb, num_rows, nodes, buffers, compression);
    EncodedMessage out;
    out.metadata = internal::FinishMessage(&fbb, fb::MessageHeader::RecordBatch, batch.Union(),
                                           body_length_, custom_metadata_);
    out.body = std::move(pieces_);
    out.body_length = body_length_;
    return out;
  }

 private:
  void Push(std::shared_ptr<Buffer> piece) {
    body_length_ += piece->size();
    pieces_.push_back(std::move(piece));
  }

  Status AddCompressed(std::shared_ptr<Buffer> buffer) {
    const int64_t size = buffer->size();
    const int64_t bound = MaxCompressedLength(codec_, size);
    ASSIGN_OR_RAISE(auto out, MutableBuffer::Allocate(8 + bound));
    ASSIGN_OR_RAISE(int64_t n,
                    CompressInto(codec_, buffer->view(), level_, out->mutable_data() + 8, bound));
    if (n >= size) {
      // Compression does not help: prefix -1 and keep the original bytes (no copy).
      static const auto kUncompressed = [] {
        static const int64_t kMinusOne = -1;
        return std::make_shared<Buffer>(reinterpret_cast<const uint8_t*>(&kMinusOne), 8, nullptr);
      }();
      Push(kUncompressed);
      Push(std::move(buffer));
      return Status::OK();
    }
    std::memcpy(out->mutable_data(), &size, 8);
    out->Truncate(8 + n);
    Push(std::move(out));
    return Status::OK();
  }

  Codec codec_;
  int level_;
  const KeyValueMetadata& custom_metadata_;
  std::vector<fb::FieldNode> nodes_;
  std::vector<fb::Buffer> buffers_;
  std::vector<std::shared_ptr<Buffer>> pieces_;
  int64_t body_length_ = 0;
};

// The bitmap bits [offset, offset + length) starting at bit 0: a slice when byte-aligned.
Result<std::shared_ptr<Buffer>> BitmapForIpc(const std::shared_ptr<Buffer>& bitmap, int64_t offset,
                                             int64_t length) {
  const int64_t bytes = bit_util::BytesForBits(length);
  if (bitmap == nullptr || length == 0) return Buffer::Empty();
  if (offset % 8 == 0) return Buffer::Slice(bitmap, offset / 8, bytes);
  ASSIGN_OR_RAISE(auto copy, MutableBuffer::Allocate(bytes));
  std::memset(copy->mutable_data(), 0, static_cast<size_t>(bytes));
  bit_util::CopyBitmap(bitmap->data(), offset, length, copy->mutable_data());
  return std::shared_ptr<Buffer>(std::move(copy));
}

Status AddColumn(const Array& array, BodyBuilder* body);

// After the validity bitmap of a nested array: its offsets (list, map) and its children, sliced
// to the values the parent's [offset, offset + length) reaches.
Status AddNestedChildren(const Array& array, BodyBuilder* body) {
  const ArrayData& d = *array.data();
  const DataType& type = d.type;
  if (static_cast<int>(d.children.size()) != type.num_children()) {
    return Status::Invalid("a " + type.ToString() + " array has " +
                           std::to_string(d.children.size()) + " children");
  }
  int64_t child_offset = d.offset;
  int64_t child_length = d.length;
  if (type.id() == TypeId::kFixedSizeList) {
    child_offset = d.offset * type.list_size();
    child_length = d.length * type.list_size();
  } else if (type.id() == TypeId::kList || type.id() == TypeId::kMap) {
    if (d.buffers[1] == nullptr) {
      RETURN_NOT_OK(body->AddBuffer(nullptr));
      child_offset = 0;
      child_length = 0;
    } else {
      const int32_t* offsets = array.raw_offsets();
      const int32_t first = offsets[0];
      child_offset = first;
      child_length = offsets[d.length] - first;
      if (first == 0) {
        RETURN_NOT_OK(
            body->AddBuffer(Buffer::Slice(d.buffers[1], d.offset * 4, (d.length + 1) * 4)));
      } else {
        ASSIGN_OR_RAISE(auto rebased, MutableBuffer::Allocate((d.length + 1) * 4));
        auto* out = reinterpret_cast<int32_t*>(rebased->mutable_data());
        for (int64_t i = 0; i <= d.length; ++i) out[i] = offsets[i] - first;
        RETURN_NOT_OK(body->AddBuffer(std::move(rebased)));
      }
    }
  }
  for (int k = 0; k < type.num_children(); ++k) {
    RETURN_NOT_OK(AddColumn(array.child(k).Slice(child_offset, child_length), body));
  }
  return Status::OK();
}

Status AddColumn(const Array& array, BodyBuilder* body) {
  const ArrayData& d = *array.data();
  const int64_t offset = d.offset;
  const int64_t length = d.length;
  body->AddNode(length, d.null_count);
  if (d.null_count > 0) {
    ASSIGN_OR_RAISE(auto validity, BitmapForIpc(d.buffers[0], offset, length));
    RETURN_NOT_OK(body->AddBuffer(std::move(validity)));
  } else {
    RETURN_NOT_OK(body->AddBuffer(nullptr));
  }
  const DataType& type = d.type;
  if (type.is_nested()) return AddNestedChildren(array, body);
  if (type.id() == TypeId::kBool) {
    ASSIGN_OR_RAISE(auto values, BitmapForIpc(d.buffers[1], offset, length));
    return body->AddBuffer(std::move(values));
  }
  if (!type.is_variable_length()) {
    const int64_t width = type.bit_width() / 8;
    if (d.buffers[1] == nullptr || length == 0) return body->AddBuffer(nullptr);
    return body->AddBuffer(Buffer::Slice(d.buffers[1], offset * width, length * width));
  }
  // string / binary: offsets rebased to start at 0, data sliced to the used range.
  if (d.buffers[1] == nullptr) {
    RETURN_NOT_OK(body->AddBuffer(nullptr));
    return body->AddBuffer(nullptr);
  }
  const int32_t* offsets = array.raw_offsets();
  const int32_t first = offsets[0];
  const int32_t last = offsets[length];
  if (first == 0) {
    RETURN_NOT_OK(body->AddBuffer(Buffer::Slice(d.buffers[1], offset * 4, (length + 1) * 4)));
  } else {
    ASSIGN_OR_RAISE(auto rebased, MutableBuffer::Allocate((length + 1) * 4));
    auto* out = reinterpret_cast<int32_t*>(rebased->mutable_data());
    for (int64_t i = 0; i <= length; ++i) out[i] = offsets[i] - first;
    RETURN_NOT_OK(body->AddBuffer(std::move(rebased)));
  }
  if (d.buffers[2] == nullptr || last == first) return body->AddBuffer(nullptr);
  return body->AddBuffer(Buffer::Slice(d.buffers[2], first, last - first));
}

}  // namespace

Result<EncodedMessage> EncodeSchema(const Schema& schema) {
  flatbuffers::FlatBufferBuilder fbb(1024);
  auto fb_schema = internal::WriteSchema(&fbb, schema);
  EncodedMessage out;
  out.metadata = internal::FinishMessage(&fbb, fb::MessageHeader::Schema, fb_schema.Union(), 0);
  return out;
}

Result<EncodedMessage> EncodeRecordBatch(const RecordBatch& batch, const WriteOptions& options) {
  const Schema& schema = *batch.schema();
  if (batch.num_columns() != schema.num_fields()) {
    return Status::Invalid("record batch has " + std::to_string(batch.num_columns()) +
                           " columns but its schema has " + std::to_string(schema.num_fields()));
  }
  BodyBuilder body(options.codec, options.zstd_level, options.batch_metadata);
  for (int i = 0; i < batch.num_columns(); ++i) {
    const Array& column = batch.column(i);
    if (!column.data() || column.type() != schema.field(i).type ||
        column.length() != batch.num_rows() ||
        static_cast<int>(column.data()->buffers.size()) != column.type().num_buffers()) {
      return Status::Invalid("column " + Quote(schema.field(i).name) +
                             " does not match the batch's schema or row count");
    }
    RETURN_NOT_OK(AddColumn(column, &body));
  }
  return body.Finish(batch.num_rows());
}

// ---- StreamWriter ----

Result<std::unique_ptr<StreamWriter>> StreamWriter::Open(std::shared_ptr<OutputSink> sink,
                                                         SchemaPtr schema, WriteOptions options) {
  if (!sink) return Status::Invalid("StreamWriter needs a sink");
  if (!schema) return Status::Invalid("StreamWriter needs a schema");
  std::unique_ptr<StreamWriter> writer(new StreamWriter());
  writer->sink_ = std::move(sink);
  writer->schema_ = std::move(schema);
  writer->options_ = options;
  ASSIGN_OR_RAISE(EncodedMessage message, EncodeSchema(*writer->schema_));
  RETURN_NOT_OK(writer->WriteMessage(message));
  return writer;
}

Status StreamWriter::WriteMessage(const EncodedMessage& message) {
  if (closed_) return Status::Invalid("IPC writer is closed");
  const int32_t padded = message.PaddedMetadataLength();
  char prefix[8];
  const uint32_t continuation = internal::kContinuation;
  std::memcpy(prefix, &continuation, 4);
  std::memcpy(prefix + 4, &padded, 4);
  RETURN_NOT_OK(sink_->Write({prefix, 8}));
  RETURN_NOT_OK(sink_->Write(message.metadata->view()));
  const int64_t pad = padded - message.metadata->size();
  if (pad > 0) RETURN_NOT_OK(sink_->Write(internal::ZeroPadding(pad)->view()));
  for (const auto& piece : message.body) {
    if (piece->size() > 0) RETURN_NOT_OK(sink_->WriteBuffer(piece));
  }
  position_ += message.EncapsulatedSize();
  return Status::OK();
}

Status StreamWriter::WriteRecordBatch(const RecordBatch& batch) {
  if (batch.schema() != schema_ && !batch.schema()->Equals(*schema_)) {
    return Status::Invalid("record batch schema " + batch.schema()->ToString() +
                           " differs from the stream's " + schema_->ToString());
  }
  ASSIGN_OR_RAISE(EncodedMessage message, EncodeRecordBatch(batch, options_));
  return WriteEncodedRecordBatch(message);
}

Status StreamWriter::WriteEncodedRecordBatch(const EncodedMessage& message) {
  RETURN_NOT_OK(WriteMessage(message));
  ++num_batches_;
  return Status::OK();
}

Status StreamWriter::Close() {
  if (closed_) return Status::OK();
  RETURN_NOT_OK(sink_->Write(EndOfStreamMarker()));
  position_ += 8;
  closed_ = true;
  return sink_->Close();
}

// ---- FileWriter ----

Result<std::unique_ptr<FileWriter>> FileWriter::Open(std::shared_ptr<OutputSink> sink,
                                                     SchemaPtr schema, WriteOptions options) {
  if (!sink) return Status::Invalid("FileWriter needs a sink");
  if (!schema) return Status::Invalid("FileWriter needs a schema");
  std::unique_ptr<FileWriter> writer(new FileWriter());
  writer->sink_ = std::move(sink);
  writer->schema_ = std::move(schema);
  writer->options_ = options;
  static const char kHeader[internal::kFileHeaderSize] = {'A', 'R', 'R', 'O', 'W', '1', 0, 0};
  RETURN_NOT_OK(writer->Write({kHeader, sizeof(kHeader)}));
  ASSIGN_OR_RAISE(EncodedMessage message, EncodeSchema(*writer->schema_));
  Block ignored;
  RETURN_NOT_OK(writer->WriteMessage(message, &ignored));
  return writer;
}

Status FileWriter::Write(std::string_view bytes) {
  RETURN_NOT_OK(sink_->Write(bytes));
  position_ += static_cast<int64_t>(bytes.size());
  return Status::OK();
}

Status FileWriter::WriteMessage(const EncodedMessage& message, Block* block) {
  if (closed_) return Status::Invalid("IPC writer is closed");
  block->offset = position_;
  block->metadata_length = 8 + message.PaddedMetadataLength();
  block->body_length = message.body_length;
  const int32_t padded = message.PaddedMetadataLength();
  char prefix[8];
  const uint32_t continuation = internal::kContinuation;
  std::memcpy(prefix, &continuation, 4);
  std::memcpy(prefix + 4, &padded, 4);
  RETURN_NOT_OK(Write({prefix, 8}));
  RETURN_NOT_OK(Write(message.metadata->view()));
  const int64_t pad = padded - message.metadata->size();
  if (pad > 0) RETURN_NOT_OK(Write(internal::ZeroPadding(pad)->view()));
  for (const auto& piece : message.body) {
    if (piece->size() > 0) RETURN_NOT_OK(sink_->WriteBuffer(piece));
  }
  position_ += message.body_length;
  return Status::OK();
}

Status FileWriter::WriteRecordBatch(const RecordBatch& batch) {
  if (batch.schema() != schema_ && !batch.schema()->Equals(*schema_)) {
    return Status::Invalid("record batch schema " + batch.schema()->ToString() +
                           " differs from the file's " + schema_->ToString());
  }
  ASSIGN_OR_RAISE(EncodedMessage message, EncodeRecordBatch(batch, options_));
  return WriteEncodedRecordBatch(message);
}

Status FileWriter::WriteEncodedRecordBatch(const EncodedMessage& message) {
  Block block;
  RETURN_NOT_OK(WriteMessage(message, &block));
  record_batches_.push_back(block);
  return Status::OK();
}

Status FileWriter::Close() {
  if (closed_) return Status::OK();
  RETURN_NOT_OK(Write(EndOfStreamMarker()));
  flatbuffers::FlatBufferBuilder fbb(1024 + 24 * record_batches_.size());
  auto schema = internal::WriteSchema(&fbb, *schema_);
  std::vector<fb::Block> blocks;
  blocks.reserve(record_batches_.size());
  for (const Block& b : record_batches_)
    blocks.emplace_back(b.offset, b.metadata_length, b.body_length);
  auto dictionaries = fbb.CreateVectorOfStructs(std::vector<fb::Block>{});
  auto batches = fbb.CreateVectorOfStructs(blocks);
  fbb.Finish(fb::CreateFooter(fbb, fb::MetadataVersion::V5, schema, dictionaries, batches));
  RETURN_NOT_OK(Write({reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize()}));
  const int32_t footer_length = static_cast<int32_t>(fbb.GetSize());
  RETURN_NOT_OK(Write({reinterpret_cast<const char*>(&footer_length), 4}));
  RETURN_NOT_OK(Write({internal::kFileMagic, internal::kFileMagicSize}));
  closed_ = true;
  return sink_->Close();
}

Status WriteAll(std::shared_ptr<OutputSink> sink, const SchemaPtr& schema,
                const std::vector<RecordBatchPtr>& batches, bool file_format,
                const WriteOptions& options) {
  if (file_format) {
    ASSIGN_OR_RAISE(auto writer, FileWriter::Open(std::move(sink), schema, options));
    for (const auto& batch : batches) RETURN_NOT_OK(writer->WriteRecordBatch(*batch));
    return writer->Close();
  }
  ASSIGN_OR_RAISE(auto writer, StreamWriter::Open(std::move(sink), schema, options));
  for (const auto& batch : batches) RETURN_NOT_OK(writer->WriteRecordBatch(*batch));
  return writer->Close();
}

}  // namespace oxbow::arrow::ipc
