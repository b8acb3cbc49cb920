// Decoding record batches (zero-copy for uncompressed bodies) and the stream and file readers.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "oxbow/arrow/ipc_internal.h"
#include "oxbow/common/bit_util.h"

namespace oxbow::arrow::ipc {

namespace fb = internal::fb;

namespace {

std::string Num(int64_t v) { return std::to_string(v); }

// Bytes needed for `count` elements of `width` bytes, or -1 on overflow.
int64_t CheckedBytes(int64_t count, int64_t width) {
  int64_t out;
  if (__builtin_mul_overflow(count, width, &out)) return -1;
  return out;
}

class BatchDecoder {
 public:
  BatchDecoder(const fb::RecordBatch* batch, const std::shared_ptr<Buffer>& body,
               int64_t body_length, Codec codec, const ReadOptions& options)
      : buffers_(batch->buffers()),
        body_(body),
        body_length_(body_length),
        codec_(codec),
        options_(options) {}

  // Logical buffer `index` of the body: a slice, or a decompressed copy. `needed` is how many
  // bytes the column can use (-1 when unknown); it caps decompression.
  Result<std::shared_ptr<Buffer>> GetBuffer(int index, int64_t needed, const std::string& where) {
    RETURN_NOT_OK(CheckRange(index, where));
    const fb::Buffer* b = buffers_->Get(static_cast<flatbuffers::uoffset_t>(index));
    const int64_t offset = b->offset();
    const int64_t length = b->length();
    if (length == 0) return Buffer::Empty();
    if (codec_ == Codec::kNone)
      return internal::EnsureAligned(Buffer::Slice(body_, offset, length));
    if (length < 8) {
      return Status::Invalid(where + ": compressed buffer " + Num(index) + " has " + Num(length) +
                             " bytes, fewer than its 8-byte length prefix");
    }
    int64_t uncompressed;
    std::memcpy(&uncompressed, body_->data() + offset, 8);
    if (uncompressed == -1) {
      return internal::EnsureAligned(Buffer::Slice(body_, offset + 8, length - 8));
    }
    if (uncompressed < 0) {
      return Status::Invalid(where + ": buffer " + Num(index) + " declares " + Num(uncompressed) +
                             " uncompressed bytes");
    }
    // Only what the column can use is decompressed (rounded up to 64 bytes for padding):
    // writers may declare whole parent buffers, and a bomb gains nothing.
    const int64_t limit = options_.max_decompressed_buffer_size;
    const int64_t usable = needed < 0       ? limit
                           : needed > limit ? needed
                                            : bit_util::RoundUp(needed, 64);
    if (uncompressed > limit && usable > limit) {
      return Status::Invalid(where + ": buffer " + Num(index) + " declares " + Num(uncompressed) +
                             " uncompressed bytes, more than the limit of " + Num(limit));
    }
    const std::string_view input(reinterpret_cast<const char*>(body_->data()) + offset + 8,
                                 static_cast<size_t>(length - 8));
    Result<std::shared_ptr<Buffer>> out = std::shared_ptr<Buffer>();
    if (uncompressed <= usable) {
      out = Decompress(codec_, input, uncompressed);
    } else {
      auto prefix = MutableBuffer::Allocate(usable);
      if (!prefix.ok()) return prefix.status();
      Status st = DecompressPrefixInto(codec_, input, (*prefix)->mutable_data(), usable);
      if (st.ok()) {
        out = std::shared_ptr<Buffer>(std::move(prefix).ValueOrDie());
      } else {
        out = st;
      }
    }
    if (!out.ok()) return out.status().WithContext(where + ": buffer " + Num(index));
    return out;
  }

  // Checks that buffer `index` lies inside the body.
  Status CheckRange(int index, const std::string& where) const {
    const fb::Buffer* b = buffers_->Get(static_cast<flatbuffers::uoffset_t>(index));
    const int64_t offset = b->offset();
    const int64_t length = b->length();
    if (offset < 0 || length < 0 || offset > body_length_ || length > body_length_ - offset) {
      return Status::Invalid(where + ": buffer " + Num(index) + " [" + Num(offset) + ", +" +
                             Num(length) + ") lies outside the body of " + Num(body_length_) +
                             " bytes");
    }
    return Status::OK();
  }

 private:
  const flatbuffers::Vector<const fb::Buffer*>* buffers_;
  const std::shared_ptr<Buffer>& body_;
  int64_t body_length_;
  Codec codec_;
  const ReadOptions& options_;
};

// O(1) size checks that make the array safe to index; Validate() adds the O(n) ones.
Status CheckBufferSizes(const ArrayData& d, const std::string& where) {
  const int64_t n = d.length;
  if (d.null_count > 0 && d.buffers[0]->size() < bit_util::BytesForBits(n)) {
    return Status::Invalid(where + ": validity bitmap has " + Num(d.buffers[0]->size()) +
                           " bytes, needs " + Num(bit_util::BytesForBits(n)));
  }
  if (d.type.id() == TypeId::kStruct || d.type.id() == TypeId::kFixedSizeList) {
    return Status::OK();
  }
  if (d.type.id() == TypeId::kList || d.type.id() == TypeId::kMap) {
    const int64_t needed = CheckedBytes(n + 1, 4);
    if (needed < 0 || d.buffers[1]->size() < needed) {
      return Status::Invalid(where + ": offsets buffer has " + Num(d.buffers[1]->size()) +
                             " bytes, needs " + Num(needed));
    }
    const auto* offsets = reinterpret_cast<const int32_t*>(d.buffers[1]->data());
    if (offsets[0] < 0 || offsets[n] < offsets[0]) {
      return Status::Invalid(where + ": offsets run from " + Num(offsets[0]) + " to " +
                             Num(offsets[n]));
    }
    return Status::OK();
  }
  if (d.type.is_variable_length()) {
    const int64_t needed = CheckedBytes(n + 1, 4);
    if (needed < 0 || d.buffers[1]->size() < needed) {
      return Status::Invalid(where + ": offsets buffer has " + Num(d.buffers[1]->size()) +
                             " bytes, needs " + Num(needed));
    }
    const auto* offsets = reinterpret_cast<const int32_t*>(d.buffers[1]->data());
    if (offsets[0] < 0 || offsets[n] < offsets[0] || offsets[n] > d.buffers[2]->size()) {
      return Status::Invalid(where + ": offsets [" + Num(offsets[0]) + ", " + Num(offsets[n]) +
                             "] do not fit the data buffer of " + Num(d.buffers[2]->size()) +
                             " bytes");
    }
    return Status::OK();
  }
  const int bits = d.type.bit_width();
  const int64_t needed = bits == 1 ? bit_util::BytesForBits(n) : CheckedBytes(n, bits / 8);
  if (needed < 0 || d.buffers[1]->size() < needed) {
    return Status::Invalid(where + ": values buffer has " + Num(d.buffers[1]->size()) +
                           " bytes, needs " + Num(needed));
  }
  return Status::OK();
}

// Bounds a node's declared length so the byte counts derived from it cannot overflow.
constexpr int64_t kMaxNodeLength = std::numeric_limits<int64_t>::max() / 8;

// Walks the field nodes and buffers in depth-first order, building one column at a time.
class NodeDecoder {
 public:
  NodeDecoder(const flatbuffers::Vector<const fb::FieldNode*>* nodes, BatchDecoder* buffers)
      : nodes_(nodes), buffers_(buffers) {}

  // The array of `field` from the next node. Its length must equal `length` when `exact`, else
  // be at least `length` (a child must hold every value its parent reaches).
  Result<std::shared_ptr<ArrayData>> Decode(const Field& field, int64_t length, bool exact,
                                            const std::string& where) {
    const fb::FieldNode* node = nodes_->Get(static_cast<flatbuffers::uoffset_t>(node_index_++));
    const int64_t node_length = node->length();
    const int64_t null_count = node->null_count();
    if (node_length > kMaxNodeLength) {
      return Status::Invalid(where + " declares " + Num(node_length) +
                             " values, more than any body can hold");
    }
    if (exact ? node_length != length : node_length < length) {
      return Status::Invalid(where + " has " + Num(node_length) + " values but " +
                             (exact ? "the batch has " : "its parent needs ") + Num(length));
    }
    if (null_count < 0 || null_count > node_length) {
      return Status::Invalid(where + " has a bad null count " + Num(null_count) + " for " +
                             Num(node_length) + " values");
    }
    const DataType& type = field.type;
    auto data = std::make_shared<ArrayData>();
    data->type = type;
    data->length = node_length;
    data->null_count = null_count;
    data->buffers.resize(static_cast<size_t>(type.num_buffers()));
    const int64_t bitmap_bytes = bit_util::BytesForBits(node_length);
    if (null_count > 0) {
      ASSIGN_OR_RAISE(data->buffers[0], buffers_->GetBuffer(buffer_index_, bitmap_bytes, where));
      if (data->buffers[0]->size() == 0) {
        return Status::Invalid(where + " has " + Num(null_count) + " nulls but no validity bitmap");
      }
    } else {
      RETURN_NOT_OK(buffers_->CheckRange(buffer_index_, where));  // present but never read
    }
    ++buffer_index_;
    if (type.is_nested()) {
      int64_t child_length = node_length;
      if (type.id() == TypeId::kList || type.id() == TypeId::kMap) {
        ASSIGN_OR_RAISE(child_length, ReadOffsets(data.get(), where));
      } else if (type.id() == TypeId::kFixedSizeList) {
        child_length = CheckedBytes(node_length, type.list_size());
        if (child_length < 0) return Status::Invalid(where + ": length overflows");
      }
      RETURN_NOT_OK(CheckBufferSizes(*data, where));
      for (const Field& child : type.children()) {
        const std::string child_where = where + " child " + Quote(child.name);
        ASSIGN_OR_RAISE(auto child_data, Decode(child, child_length, false, child_where));
        data->children.push_back(std::move(child_data));
      }
      return data;
    }
    if (type.is_variable_length()) {
      ASSIGN_OR_RAISE(int64_t data_needed, ReadOffsets(data.get(), where));
      ASSIGN_OR_RAISE(data->buffers[2], buffers_->GetBuffer(buffer_index_++, data_needed, where));
    } else {
      const int bits = type.bit_width();
      const int64_t needed = bits == 1 ? bitmap_bytes : CheckedBytes(node_length, bits / 8);
      ASSIGN_OR_RAISE(data->buffers[1], buffers_->GetBuffer(buffer_index_++, needed, where));
    }
    RETURN_NOT_OK(CheckBufferSizes(*data, where));
    return data;
  }

 private:
  // Reads the offsets buffer into buffers[1]; returns the last offset (-1 when too short, which
  // CheckBufferSizes then reports).
  Result<int64_t> ReadOffsets(ArrayData* data, const std::string& where) {
    const int64_t length = data->length;
    ASSIGN_OR_RAISE(auto offsets,
                    buffers_->GetBuffer(buffer_index_++, CheckedBytes(length + 1, 4), where));
    if (offsets->size() == 0 && length == 0) offsets = internal::ZeroPadding(4);
    int64_t last = -1;
    if (offsets->size() >= CheckedBytes(length + 1, 4) && CheckedBytes(length + 1, 4) > 0) {
      last = std::max(0, reinterpret_cast<const int32_t*>(offsets->data())[length]);
    }
    data->buffers[1] = std::move(offsets);
    return last;
  }

  const flatbuffers::Vector<const fb::FieldNode*>* nodes_;
  BatchDecoder* buffers_;
  int node_index_ = 0;
  int buffer_index_ = 0;
};

}  // namespace

Result<RecordBatchPtr> DecodeRecordBatch(const SchemaPtr& schema, const Buffer& metadata,
                                         const std::shared_ptr<Buffer>& body,
                                         const ReadOptions& options) {
  if (!schema) return Status::Invalid("decoding a record batch needs a schema");
  std::shared_ptr<Buffer> aligned;
  ASSIGN_OR_RAISE(const fb::Message* message, internal::VerifyMessageAnywhere(metadata, &aligned));
  ASSIGN_OR_RAISE(const fb::RecordBatch* batch, internal::GetRecordBatchHeader(message));
  const std::shared_ptr<Buffer>& body_ref = body ? body : Buffer::Empty();
  const int64_t body_length = message->body_length();
  if (body_length > body_ref->size()) {
    return Status::Invalid("RecordBatch declares a body of " + Num(body_length) +
                           " bytes but only " + Num(body_ref->size()) + " are present");
  }
  ASSIGN_OR_RAISE(Codec codec, internal::CodecFromFlatbuffer(batch->compression()));
  const int num_fields = schema->num_fields();
  const int64_t num_rows = batch->length();
  const auto* nodes = batch->nodes();
  const int64_t num_nodes = nodes ? nodes->size() : 0;
  int64_t expected_nodes = 0;
  int64_t expected_buffers = 0;
  for (const Field& f : schema->fields()) {
    expected_nodes += f.type.num_nodes_in_tree();
    expected_buffers += f.type.num_buffers_in_tree();
  }
  if (num_nodes != expected_nodes) {
    return Status::Invalid("RecordBatch has " + Num(num_nodes) +
                           " field nodes but the schema needs " + Num(expected_nodes));
  }
  const int64_t num_buffers = batch->buffers() ? batch->buffers()->size() : 0;
  if (num_buffers != expected_buffers) {
    return Status::Invalid("RecordBatch has " + Num(num_buffers) +
                           " buffers but the schema needs " + Num(expected_buffers));
  }
  if (batch->variadic_buffer_counts() != nullptr && batch->variadic_buffer_counts()->size() != 0) {
    return Status::Invalid("RecordBatch has variadic buffer counts but no field uses them");
  }
  BatchDecoder decoder(batch, body_ref, body_length, codec, options);
  NodeDecoder node_decoder(nodes, &decoder);
  std::vector<Array> columns;
  columns.reserve(static_cast<size_t>(num_fields));
  for (int i = 0; i < num_fields; ++i) {
    const Field& field = schema->field(i);
    const std::string where = "column " + Quote(field.name) + " (" + field.type.ToString() + ")";
    ASSIGN_OR_RAISE(auto data, node_decoder.Decode(field, num_rows, /*exact=*/true, where));
    Array array(std::move(data));
    if (options.validate) {
      Status st = array.Validate();
      if (!st.ok()) return st.WithContext(where);
    }
    columns.push_back(std::move(array));
  }
  return RecordBatch::Make(schema, num_rows, std::move(columns));
}

Result<RecordBatchPtr> DecodeRecordBatch(const SchemaPtr& schema, const RawMessage& message,
                                         const ReadOptions& options) {
  if (message.type != MessageType::kRecordBatch) {
    return Status::Invalid("expected a RecordBatch message");
  }
  return DecodeRecordBatch(schema, *message.metadata, message.body, options);
}

// ---- StreamReader ----

namespace {

Status UnexpectedMessage(MessageType type) {
  switch (type) {
    case MessageType::kDictionaryBatch:
      return Status::NotImplemented("dictionary batches are not supported");
    case MessageType::kSchema: return Status::Invalid("a second Schema message in the stream");
    case MessageType::kTensor:
    case MessageType::kSparseTensor:
      return Status::NotImplemented("tensor messages are not supported");
    case MessageType::kRecordBatch: break;
  }
  return Status::Invalid("unexpected message");
}

}  // namespace

Result<std::unique_ptr<StreamReader>> StreamReader::Open(std::shared_ptr<Buffer> data,
                                                         ReadOptions options) {
  if (!data) return Status::Invalid("StreamReader needs data");
  std::unique_ptr<StreamReader> reader(new StreamReader());
  reader->data_ = std::move(data);
  reader->options_ = options;
  ASSIGN_OR_RAISE(auto first, ReadMessage(reader->data_, &reader->offset_));
  if (!first.has_value()) return Status::Invalid("IPC stream ends before its Schema message");
  if (first->type != MessageType::kSchema) {
    return Status::Invalid("IPC stream starts with a message other than Schema");
  }
  ASSIGN_OR_RAISE(reader->schema_, DecodeSchema(*first->metadata));
  return reader;
}

Result<RecordBatchPtr> StreamReader::Next() {
  if (done_) return RecordBatchPtr();
  const int64_t at = offset_;
  ASSIGN_OR_RAISE(auto message, ReadMessage(data_, &offset_));
  if (!message.has_value()) {
    done_ = true;
    return RecordBatchPtr();
  }
  if (message->type != MessageType::kRecordBatch) {
    return UnexpectedMessage(message->type).WithContext("IPC message at offset " + Num(at));
  }
  auto batch = DecodeRecordBatch(schema_, *message, options_);
  if (!batch.ok()) return batch.status().WithContext("record batch at offset " + Num(at));
  return batch;
}

Result<std::vector<RecordBatchPtr>> StreamReader::ReadAll() {
  std::vector<RecordBatchPtr> batches;
  while (true) {
    ASSIGN_OR_RAISE(RecordBatchPtr batch, Next());
    if (!batch) return batches;
    batches.push_back(std::move(batch));
  }
}

// ---- FileReader ----

Result<std::unique_ptr<FileReader>> FileReader::Open(std::shared_ptr<Buffer> data,
                                                     ReadOptions options) {
  if (!data) return Status::Invalid("FileReader needs data");
  const int64_t size = data->size();
  constexpr int64_t kTrailer = 4 + internal::kFileMagicSize;
  if (size < internal::kFileHeaderSize + kTrailer) {
    return Status::Invalid("Arrow file of " + Num(size) + " bytes is too short");
  }
  const std::string_view bytes = data->view();
  if (!IsFileFormat(bytes)) return Status::Invalid("Arrow file does not start with ARROW1");
  if (bytes.substr(static_cast<size_t>(size - internal::kFileMagicSize)) != internal::kFileMagic) {
    return Status::Invalid("Arrow file does not end with ARROW1 (truncated?)");
  }
  int32_t footer_length;
  std::memcpy(&footer_length, data->data() + size - kTrailer, 4);
  if (footer_length <= 0 || footer_length > size - internal::kFileHeaderSize - kTrailer) {
    return Status::Invalid("Arrow file footer length " + Num(footer_length) +
                           " does not fit a file of " + Num(size) + " bytes");
  }
  ASSIGN_OR_RAISE(auto footer_buffer, internal::EnsureAligned(Buffer::Slice(
                                          data, size - kTrailer - footer_length, footer_length)));
  flatbuffers::Verifier verifier(footer_buffer->data(), static_cast<size_t>(footer_length),
                                 internal::kMaxVerifierDepth, internal::kMaxVerifierTables);
  if (!fb::VerifyFooterBuffer(verifier)) {
    return Status::Invalid("Arrow file footer (" + Num(footer_length) +
                           " bytes) is not a valid flatbuffer Footer");
  }
  const fb::Footer* footer = fb::GetFooter(footer_buffer->data());
  if (!internal::IsAligned(footer->record_batches()) ||
      !internal::IsAligned(footer->dictionaries())) {
    return Status::Invalid("Arrow file footer has a misaligned Block vector");
  }
  std::unique_ptr<FileReader> reader(new FileReader());
  reader->data_ = std::move(data);
  reader->options_ = options;
  auto schema = internal::ReadSchema(footer->schema());
  if (!schema.ok()) return schema.status().WithContext("Arrow file footer");
  reader->schema_ = std::move(schema).ValueOrDie();
  if (footer->dictionaries() != nullptr && footer->dictionaries()->size() != 0) {
    return Status::NotImplemented("Arrow file has dictionary batches, which are not supported");
  }
  if (footer->record_batches() != nullptr) {
    reader->blocks_.reserve(footer->record_batches()->size());
    for (const fb::Block* b : *footer->record_batches()) {
      reader->blocks_.push_back({b->offset(), b->metadata_length(), b->body_length()});
    }
  }
  return reader;
}

Result<RecordBatchPtr> FileReader::ReadRecordBatch(int i) const {
  if (i < 0 || i >= num_record_batches()) {
    return Status::OutOfRange("record batch " + Num(i) + " of " + Num(num_record_batches()));
  }
  const Block& block = blocks_[static_cast<size_t>(i)];
  const int64_t size = data_->size();
  const std::string where =
      "record batch " + Num(i) + " (block at offset " + Num(block.offset) + ")";
  if (block.offset < 0 || block.metadata_length <= 0 || block.body_length < 0 ||
      block.offset > size || block.metadata_length > size - block.offset ||
      block.body_length > size - block.offset - block.metadata_length) {
    return Status::Invalid(where + ": metadata " + Num(block.metadata_length) + " and body " +
                           Num(block.body_length) + " bytes do not fit the file of " + Num(size) +
                           " bytes");
  }
  auto region = Buffer::Slice(data_, block.offset, block.metadata_length + block.body_length);
  int64_t offset = 0;
  auto message = ReadMessage(region, &offset);
  if (!message.ok()) return message.status().WithContext(where);
  if (!message->has_value())
    return Status::Invalid(where + ": end-of-stream marker instead of a batch");
  if ((*message)->type != MessageType::kRecordBatch) {
    return UnexpectedMessage((*message)->type).WithContext(where);
  }
  auto batch = DecodeRecordBatch(schema_, **message, options_);
  if (!batch.ok()) return batch.status().WithContext(where);
  return batch;
}

Result<std::vector<RecordBatchPtr>> FileReader::ReadAll() const {
  std::vector<RecordBatchPtr> batches;
  batches.reserve(blocks_.size());
  for (int i = 0; i < num_record_batches(); ++i) {
    ASSIGN_OR_RAISE(RecordBatchPtr batch, ReadRecordBatch(i));
    batches.push_back(std::move(batch));
  }
  return batches;
}

Result<Table> ReadAll(std::shared_ptr<Buffer> data, const ReadOptions& options) {
  if (!data) return Status::Invalid("no data to read");
  Table table;
  if (IsFileFormat(data->view())) {
    ASSIGN_OR_RAISE(auto reader, FileReader::Open(std::move(data), options));
    table.schema = reader->schema();
    ASSIGN_OR_RAISE(table.batches, reader->ReadAll());
    return table;
  }
  ASSIGN_OR_RAISE(auto reader, StreamReader::Open(std::move(data), options));
  table.schema = reader->schema();
  ASSIGN_OR_RAISE(table.batches, reader->ReadAll());
  return table;
}

Result<Table> ReadPath(FileSystem& fs, const std::string& path, const ReadOptions& options) {
  ASSIGN_OR_RAISE(auto data, ReadWholeFile(fs, path));
  auto table = ReadAll(std::move(data), options);
  if (!table.ok()) return table.status().WithContext(path);
  return table;
}

}  // namespace oxbow::arrow::ipc
