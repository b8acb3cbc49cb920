// Column projection of encoded RecordBatch messages without decoding (server-side pruning).
#include <string>
#include <utility>

#include "oxbow/arrow/ipc_internal.h"
#include "oxbow/common/bit_util.h"

namespace oxbow::arrow::ipc {

namespace fb = internal::fb;

Result<RecordBatchProjector> RecordBatchProjector::Make(SchemaPtr schema,
                                                        std::vector<int> columns) {
  if (!schema) return Status::Invalid("projection needs a schema");
  RecordBatchProjector p;
  for (int c : columns) {
    if (c < 0 || c >= schema->num_fields()) {
      return Status::OutOfRange("projected column " + std::to_string(c) + " is not a field of " +
                                schema->ToString());
    }
  }
  ASSIGN_OR_RAISE(p.projected_schema_, schema->Select(columns));
  p.first_node_.reserve(static_cast<size_t>(schema->num_fields()));
  p.first_buffer_.reserve(static_cast<size_t>(schema->num_fields()));
  for (int i = 0; i < schema->num_fields(); ++i) {
    p.first_node_.push_back(p.total_nodes_);
    p.first_buffer_.push_back(p.total_buffers_);
    p.total_nodes_ += schema->field(i).type.num_nodes_in_tree();
    p.total_buffers_ += schema->field(i).type.num_buffers_in_tree();
  }
  p.schema_ = std::move(schema);
  p.columns_ = std::move(columns);
  return p;
}

namespace {

// Lays out the new body: runs of original bytes copied by reference, 8-byte aligned.
class ProjectedBody {
 public:
  explicit ProjectedBody(const std::shared_ptr<Buffer>& body) : body_(body) {}

  // Adds the bytes [offset, offset + length) of the original body; returns their offset in the
  // new body. A buffer that follows the previous one (after its padding) extends the same slice.
  int64_t Add(int64_t offset, int64_t length) {
    if (length == 0) return size_;
    if (run_length_ > 0 && run_start_ % kIpcAlignment == 0 &&
        offset == run_start_ + bit_util::RoundUp(run_length_, kIpcAlignment)) {
      // Continues the current run: the padding between them comes along.
      const int64_t at = run_base_ + (offset - run_start_);
      run_length_ = offset + length - run_start_;
      size_ = run_base_ + run_length_;
      return at;
    }
    FlushRun();
    size_ = bit_util::RoundUp(size_, kIpcAlignment);
    run_start_ = offset;
    run_base_ = size_;
    run_length_ = length;
    size_ += length;
    return run_base_;
  }

  EncodedMessage Finish(std::shared_ptr<Buffer> metadata) {
    FlushRun();
    EncodedMessage out;
    out.metadata = std::move(metadata);
    out.body = std::move(pieces_);
    out.body_length = length_;
    return out;
  }

  int64_t length() const { return bit_util::RoundUp(size_, kIpcAlignment); }

 private:
  void FlushRun() {
    if (run_length_ == 0) return;
    if (run_base_ > length_) pieces_.push_back(internal::ZeroPadding(run_base_ - length_));
    pieces_.push_back(Buffer::Slice(body_, run_start_, run_length_));
    length_ = run_base_ + run_length_;
    const int64_t padded = bit_util::RoundUp(length_, kIpcAlignment);
    if (padded > length_) pieces_.push_back(internal::ZeroPadding(padded - length_));
    length_ = padded;
    run_length_ = 0;
  }

  const std::shared_ptr<Buffer>& body_;
  std::vector<std::shared_ptr<Buffer>> pieces_;
  int64_t run_start_ = 0;   // offset of the current run in the original body
  int64_t run_base_ = 0;    // offset of the current run in the new body
  int64_t run_length_ = 0;  // 0: no current run
  int64_t size_ = 0;        // bytes laid out so far (unpadded end)
  int64_t length_ = 0;      // bytes emitted as pieces so far
};

}  // namespace

Result<EncodedMessage> RecordBatchProjector::Project(const Buffer& metadata,
                                                     const std::shared_ptr<Buffer>& body) const {
  // Verifying is O(number of tables): vectors of structs are checked by size, not per element.
  std::shared_ptr<Buffer> aligned;
  ASSIGN_OR_RAISE(const fb::Message* message, internal::VerifyMessageAnywhere(metadata, &aligned));
  ASSIGN_OR_RAISE(const fb::RecordBatch* batch, internal::GetRecordBatchHeader(message));
  const std::shared_ptr<Buffer>& body_ref = body ? body : Buffer::Empty();
  const int64_t body_length = message->body_length();
  if (body_length > body_ref->size()) {
    return Status::Invalid("RecordBatch declares a body of " + std::to_string(body_length) +
                           " bytes but only " + std::to_string(body_ref->size()) + " are present");
  }
  const auto* nodes = batch->nodes();
  const auto* buffers = batch->buffers();
  const int64_t num_nodes = nodes ? nodes->size() : 0;
  const int64_t num_buffers = buffers ? buffers->size() : 0;
  if (num_nodes != total_nodes_ || num_buffers != total_buffers_) {
    return Status::Invalid("RecordBatch has " + std::to_string(num_nodes) + " field nodes and " +
                           std::to_string(num_buffers) + " buffers; the schema needs " +
                           std::to_string(total_nodes_) + " and " + std::to_string(total_buffers_));
  }
  if (batch->variadic_buffer_counts() != nullptr && batch->variadic_buffer_counts()->size() != 0) {
    return Status::Invalid("RecordBatch has variadic buffer counts but no field uses them");
  }
  ASSIGN_OR_RAISE(Codec codec, internal::CodecFromFlatbuffer(batch->compression()));

  size_t selected_nodes = 0;
  size_t total_selected = 0;
  for (int c : columns_) {
    selected_nodes += static_cast<size_t>(schema_->field(c).type.num_nodes_in_tree());
    total_selected += static_cast<size_t>(schema_->field(c).type.num_buffers_in_tree());
  }
  flatbuffers::FlatBufferBuilder fbb(256 + 16 * (selected_nodes + total_selected));
  fb::FieldNode* new_nodes = nullptr;
  auto nodes_offset = fbb.CreateUninitializedVectorOfStructs(selected_nodes, &new_nodes);
  std::vector<fb::Buffer> new_buffers;
  new_buffers.reserve(total_selected);
  ProjectedBody out_body(body_ref);
  size_t node_out = 0;
  for (size_t k = 0; k < columns_.size(); ++k) {
    const int c = columns_[k];
    const int tree_nodes = schema_->field(c).type.num_nodes_in_tree();
    for (int n = first_node_[c]; n < first_node_[c] + tree_nodes; ++n) {
      new_nodes[node_out++] = *nodes->Get(static_cast<flatbuffers::uoffset_t>(n));
    }
    const int first = first_buffer_[c];
    const int count = schema_->field(c).type.num_buffers_in_tree();
    for (int j = first; j < first + count; ++j) {
      const fb::Buffer* b = buffers->Get(static_cast<flatbuffers::uoffset_t>(j));
      const int64_t offset = b->offset();
      const int64_t length = b->length();
      if (offset < 0 || length < 0 || offset > body_length || length > body_length - offset) {
        return Status::Invalid("column " + Quote(schema_->field(c).name) + ": buffer " +
                               std::to_string(j) + " lies outside the body of " +
                               std::to_string(body_length) + " bytes");
      }
      new_buffers.emplace_back(out_body.Add(offset, length), length);
    }
  }
  auto buffers_offset = fbb.CreateVectorOfStructs(new_buffers);
  flatbuffers::Offset<fb::BodyCompression> compression = 0;
  if (codec != Codec::kNone) {
    compression = fb::CreateBodyCompression(fbb, batch->compression()->codec(),
                                            batch->compression()->method());
  }
  auto header =
      fb::CreateRecordBatch(fbb, batch->length(), nodes_offset, buffers_offset, compression);
  auto new_metadata = internal::FinishMessage(&fbb, fb::MessageHeader::RecordBatch, header.Union(),
                                              out_body.length());
  return out_body.Finish(std::move(new_metadata));
}

}  // namespace oxbow::arrow::ipc
