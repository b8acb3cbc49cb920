// Arrow IPC: encapsulated messages, the streaming format and the file format.
//
// Writes and reads the format of apache/arrow format/IPC.md (metadata version V5) for the types
// in type.h. Decoding never copies uncompressed body buffers: arrays point into the input.
// Untrusted bytes are fully validated; errors name the problem. See docs/arrow-ipc.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/arrow/compression.h"
#include "oxbow/arrow/record_batch.h"
#include "oxbow/arrow/schema.h"
#include "oxbow/common/buffer.h"
#include "oxbow/common/file_system.h"
#include "oxbow/common/status.h"

namespace oxbow::arrow::ipc {

// Every body buffer starts at a multiple of this, and the metadata is padded to it.
inline constexpr int64_t kIpcAlignment = 8;

struct WriteOptions {
  // Body compression (BodyCompression in Message.fbs). Default: none.
  Codec codec = Codec::kNone;
  // zstd level when codec is kZstd. Default: 1 (fast; pyarrow's default is also 1).
  int zstd_level = 1;
  // The Message's custom_metadata of each RecordBatch message. Default: none.
  KeyValueMetadata batch_metadata;
};

struct ReadOptions {
  // Runs Array::Validate on every decoded column (offsets, bitmaps). Default: true.
  bool validate = true;
  // Upper bound on one buffer's decompressed size. Default: 2 GiB.
  int64_t max_decompressed_buffer_size = int64_t{1} << 31;
};

// The kinds of message (MessageHeader in Message.fbs).
enum class MessageType : uint8_t {
  kSchema,
  kDictionaryBatch,
  kRecordBatch,
  kTensor,
  kSparseTensor,
};

// One encoded message in pieces, ready to send without copying the body:
//  - Flight: FlightData.data_header = metadata, FlightData.data_body = concatenated body.
//  - Stream/file: 0xFFFFFFFF, int32 padded metadata length, metadata + zero padding to 8 bytes,
//    then the body (see WriteEncapsulated).
struct EncodedMessage {
  // The flatbuffer Message bytes (unpadded).
  std::shared_ptr<Buffer> metadata;
  // The body in order, alignment padding included as pieces; sizes add up to body_length.
  std::vector<std::shared_ptr<Buffer>> body;
  int64_t body_length = 0;

  // Bytes of the encapsulated form: 8 + padded metadata + body_length.
  int64_t EncapsulatedSize() const;
  // The metadata length as written in the prefix (metadata padded so the body is 8-aligned).
  int32_t PaddedMetadataLength() const;
  // Appends the encapsulated form to `out`.
  void AppendEncapsulatedTo(std::string* out) const;
  // The encapsulated form as one contiguous buffer (copies the body).
  Result<std::shared_ptr<Buffer>> ToEncapsulatedBuffer() const;
  // The body as one contiguous buffer (no copy when it is a single piece).
  Result<std::shared_ptr<Buffer>> BodyAsBuffer() const;
};

// The 8-byte end-of-stream marker: 0xFFFFFFFF then int32 0.
std::string_view EndOfStreamMarker();

// ---- Encoding ----

// A Schema message. Field and schema custom_metadata are written.
Result<EncodedMessage> EncodeSchema(const Schema& schema);
// A RecordBatch message. Body buffers are zero-copy slices of the batch's buffers when no
// compression is requested (bitmaps at unaligned offsets and rebased string offsets are the
// only copies). The batch's columns must match its schema.
Result<EncodedMessage> EncodeRecordBatch(const RecordBatch& batch,
                                         const WriteOptions& options = {});

// ---- Decoding ----

// One message as read from bytes; metadata and body are zero-copy slices of the input.
struct RawMessage {
  MessageType type = MessageType::kSchema;
  std::shared_ptr<Buffer> metadata;  // verified flatbuffer Message bytes
  std::shared_ptr<Buffer> body;      // exactly bodyLength bytes
};

// Verifies a flatbuffer Message (as in FlightData.data_header) and pairs it with its body.
Result<RawMessage> ParseMessage(std::shared_ptr<Buffer> metadata, std::shared_ptr<Buffer> body);

// Reads the encapsulated message at `*offset` of `data` and advances `*offset` past it.
// Returns std::nullopt at an end-of-stream marker or at the end of `data`. The pre-0.15 form
// (no 0xFFFFFFFF continuation marker) is accepted too.
Result<std::optional<RawMessage>> ReadMessage(const std::shared_ptr<Buffer>& data, int64_t* offset);

// Decodes a Schema message's metadata. Dictionary-encoded fields and types outside type.h are
// rejected with NotImplemented naming the field and the type.
Result<SchemaPtr> DecodeSchema(const Buffer& metadata);

// Decodes a RecordBatch message against `schema`. Uncompressed buffers are slices of `body`.
Result<RecordBatchPtr> DecodeRecordBatch(const SchemaPtr& schema, const Buffer& metadata,
                                         const std::shared_ptr<Buffer>& body,
                                         const ReadOptions& options = {});
Result<RecordBatchPtr> DecodeRecordBatch(const SchemaPtr& schema, const RawMessage& message,
                                         const ReadOptions& options = {});

// The custom_metadata of a message (Message.custom_metadata), without decoding its header.
Result<KeyValueMetadata> MessageCustomMetadata(const Buffer& metadata);

// Row count and body length of a RecordBatch message, without decoding it.
struct RecordBatchInfo {
  int64_t num_rows = 0;
  int64_t body_length = 0;
  Codec codec = Codec::kNone;
};
Result<RecordBatchInfo> InspectRecordBatch(const Buffer& metadata);

// ---- Projection (server-side column pruning) ----

// Rewrites RecordBatch messages of `schema` to carry only some top-level columns, without
// decompressing or decoding values: the new body is zero-copy slices of the selected buffers.
// Cost per message: O(selected buffers) plus building a small flatbuffer (docs/arrow-ipc.md).
class RecordBatchProjector {
 public:
  // `columns` are field indices of `schema`, in output order (repeats allowed).
  static Result<RecordBatchProjector> Make(SchemaPtr schema, std::vector<int> columns);

  const SchemaPtr& projected_schema() const { return projected_schema_; }
  const std::vector<int>& columns() const { return columns_; }

  // The projected RecordBatch message. `metadata` must be a verified Message (e.g. from
  // ReadMessage/ParseMessage) for a batch of the full schema; `body` its body.
  Result<EncodedMessage> Project(const Buffer& metadata, const std::shared_ptr<Buffer>& body) const;
  Result<EncodedMessage> Project(const RawMessage& message) const {
    return Project(*message.metadata, message.body);
  }

 private:
  RecordBatchProjector() = default;
  SchemaPtr schema_;
  SchemaPtr projected_schema_;
  std::vector<int> columns_;
  std::vector<int> first_node_;    // per schema field: index of its first FieldNode
  std::vector<int> first_buffer_;  // per schema field: index of its first Buffer
  int total_nodes_ = 0;
  int total_buffers_ = 0;
};

// ---- Sinks ----

// Where writers put bytes.
class OutputSink {
 public:
  virtual ~OutputSink() = default;
  // Appends bytes (consumed before returning).
  virtual Status Write(std::string_view bytes) = 0;
  // Appends a buffer. Sinks that can keep a reference (BufferListSink) do not copy it.
  virtual Status WriteBuffer(const std::shared_ptr<Buffer>& buffer) {
    return Write(buffer->view());
  }
  // Pushes buffered bytes out.
  virtual Status Flush() { return Status::OK(); }
  virtual Status Close() { return Flush(); }
};

// Writes to a file (through the FileSystem seam) or a file descriptor, buffering small writes.
class FileSink : public OutputSink {
 public:
  // Creates or truncates `path` on `fs`.
  static Result<std::shared_ptr<FileSink>> Open(FileSystem& fs, const std::string& path);
  // Writes to `fd` (e.g. standard output); closes it on Close()/destruction only when
  // `take_ownership`.
  static std::shared_ptr<FileSink> FromFd(int fd, bool take_ownership);
  ~FileSink() override;

  Status Write(std::string_view bytes) override;
  Status WriteBuffer(const std::shared_ptr<Buffer>& buffer) override;
  Status Flush() override;
  // Flushes, then makes the file durable (fsync).
  Status Sync();
  Status Close() override;

 private:
  FileSink(std::unique_ptr<File> file, int fd, bool owns, std::string path);
  Status WriteFully(const char* data, int64_t size);
  std::unique_ptr<File> file_;  // when opened on a FileSystem; else fd_ is the target
  int64_t position_ = 0;        // in file_
  int fd_;
  bool owns_;
  bool closed_ = false;
  std::string path_;
  std::string staging_;
};

// Accumulates everything in one contiguous block of memory. The block is an anonymous mapping
// that grows by mremap (no copy, pages stay mapped); a released block is kept for the next
// StringSink in the process (one block, marked MADV_FREE so the kernel may reclaim its pages),
// so repeated encodes into memory do not fault in fresh pages each time.
class StringSink : public OutputSink {
 public:
  StringSink() = default;
  ~StringSink() override;
  StringSink(const StringSink&) = delete;
  StringSink& operator=(const StringSink&) = delete;

  Status Write(std::string_view bytes) override;
  // Everything written so far; valid until the next Write, Take or Finish.
  std::string_view data() const {
    return {reinterpret_cast<const char*>(data_), static_cast<size_t>(size_)};
  }
  int64_t size() const { return size_; }
  // Copies the bytes out and empties the sink (Finish() hands them over without a copy).
  std::string Take();
  // Hands the bytes over as a Buffer that owns the block, without a copy; empties the sink.
  std::shared_ptr<Buffer> Finish();

 private:
  Status Grow(int64_t needed);
  uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  int64_t capacity_ = 0;
};

// Keeps body buffers by reference and copies only small pieces (prefixes, metadata, padding).
class BufferListSink : public OutputSink {
 public:
  Status Write(std::string_view bytes) override;
  Status WriteBuffer(const std::shared_ptr<Buffer>& buffer) override;
  Status Flush() override;
  // All pieces written so far, in order (after Flush()).
  const std::vector<std::shared_ptr<Buffer>>& buffers() const { return buffers_; }
  int64_t size() const { return size_ + static_cast<int64_t>(pending_.size()); }
  // Flushes and concatenates everything into one buffer.
  Result<std::shared_ptr<Buffer>> Concatenate();

 private:
  std::vector<std::shared_ptr<Buffer>> buffers_;
  std::string pending_;
  int64_t size_ = 0;
};

// ---- Writers ----

// Writes the streaming format: schema message, record batches, end-of-stream marker.
class StreamWriter {
 public:
  // Writes the schema message immediately.
  static Result<std::unique_ptr<StreamWriter>> Open(std::shared_ptr<OutputSink> sink,
                                                    SchemaPtr schema, WriteOptions options = {});
  // The batch's schema must equal the writer's (metadata aside).
  Status WriteRecordBatch(const RecordBatch& batch);
  // Writes an already encoded RecordBatch message (e.g. a projected one) as is.
  Status WriteEncodedRecordBatch(const EncodedMessage& message);
  // Writes the end-of-stream marker and closes the sink. Idempotent.
  Status Close();
  int64_t bytes_written() const { return position_; }
  int64_t num_record_batches() const { return num_batches_; }

 private:
  StreamWriter() = default;
  Status WriteMessage(const EncodedMessage& message);
  std::shared_ptr<OutputSink> sink_;
  SchemaPtr schema_;
  WriteOptions options_;
  int64_t position_ = 0;
  int64_t num_batches_ = 0;
  bool closed_ = false;
  friend class FileWriter;
};

// Writes the file format: "ARROW1\0\0", the stream, a footer with the blocks, footer length,
// "ARROW1".
class FileWriter {
 public:
  static Result<std::unique_ptr<FileWriter>> Open(std::shared_ptr<OutputSink> sink,
                                                  SchemaPtr schema, WriteOptions options = {});
  Status WriteRecordBatch(const RecordBatch& batch);
  Status WriteEncodedRecordBatch(const EncodedMessage& message);
  // Writes end-of-stream, footer and trailing magic, then closes the sink. Idempotent.
  Status Close();
  int64_t bytes_written() const { return position_; }

 private:
  struct Block {
    int64_t offset;
    int32_t metadata_length;
    int64_t body_length;
  };
  FileWriter() = default;
  Status Write(std::string_view bytes);
  Status WriteMessage(const EncodedMessage& message, Block* block);
  std::shared_ptr<OutputSink> sink_;
  SchemaPtr schema_;
  WriteOptions options_;
  int64_t position_ = 0;
  std::vector<Block> record_batches_;
  bool closed_ = false;
};

// ---- Readers (from memory; arrays are slices of the input buffer) ----

class StreamReader {
 public:
  // Reads the schema message at the start of `data`.
  static Result<std::unique_ptr<StreamReader>> Open(std::shared_ptr<Buffer> data,
                                                    ReadOptions options = {});
  const SchemaPtr& schema() const { return schema_; }
  // The next batch, or nullptr at the end of the stream.
  Result<RecordBatchPtr> Next();
  Result<std::vector<RecordBatchPtr>> ReadAll();
  // Byte offset of the next message in the input.
  int64_t position() const { return offset_; }

 private:
  StreamReader() = default;
  std::shared_ptr<Buffer> data_;
  ReadOptions options_;
  SchemaPtr schema_;
  int64_t offset_ = 0;
  bool done_ = false;
};

class FileReader {
 public:
  // Checks both magics and reads the footer and the schema.
  static Result<std::unique_ptr<FileReader>> Open(std::shared_ptr<Buffer> data,
                                                  ReadOptions options = {});
  const SchemaPtr& schema() const { return schema_; }
  int num_record_batches() const { return static_cast<int>(blocks_.size()); }
  Result<RecordBatchPtr> ReadRecordBatch(int i) const;
  Result<std::vector<RecordBatchPtr>> ReadAll() const;

 private:
  struct Block {
    int64_t offset;
    int32_t metadata_length;
    int64_t body_length;
  };
  FileReader() = default;
  std::shared_ptr<Buffer> data_;
  ReadOptions options_;
  SchemaPtr schema_;
  std::vector<Block> blocks_;
};

// True when `data` starts with the file format's magic "ARROW1".
bool IsFileFormat(std::string_view data);

// A schema and its batches.
struct Table {
  SchemaPtr schema;
  std::vector<RecordBatchPtr> batches;
};

// Reads a whole stream or file (sniffed by the magic) from memory.
Result<Table> ReadAll(std::shared_ptr<Buffer> data, const ReadOptions& options = {});

// ReadWholeFile (a mapping for large files) + ReadAll.
Result<Table> ReadPath(FileSystem& fs, const std::string& path, const ReadOptions& options = {});

// Writes a whole stream (or file when `file_format`) to `sink`.
Status WriteAll(std::shared_ptr<OutputSink> sink, const SchemaPtr& schema,
                const std::vector<RecordBatchPtr>& batches, bool file_format,
                const WriteOptions& options = {});

}  // namespace oxbow::arrow::ipc
