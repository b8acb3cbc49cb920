// Internals shared by the IPC reader, writer and projector. Not part of the module's face.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <memory>
#include <string>

#include "oxbow/arrow/fbs/file_generated.h"
#include "oxbow/arrow/fbs/message_generated.h"
#include "oxbow/arrow/ipc.h"

namespace oxbow::arrow::ipc::internal {

namespace fb = ::oxbow::arrow::fb;

inline constexpr uint32_t kContinuation = 0xFFFFFFFFu;
inline constexpr char kFileMagic[] = "ARROW1";
inline constexpr int64_t kFileMagicSize = 6;
// Magic padded to 8 bytes at the start of a file.
inline constexpr int64_t kFileHeaderSize = 8;
// Largest flatbuffer we accept (metadata or footer). Real ones are kilobytes.
inline constexpr int64_t kMaxMetadataSize = int64_t{1} << 30;
// Smallest possible flatbuffer: root offset, vtable offset and a 4-byte vtable.
inline constexpr int64_t kMinFlatbufferSize = 12;
// Nesting and table limits for flatbuffers::Verifier.
inline constexpr flatbuffers::uoffset_t kMaxVerifierDepth = 64;
inline constexpr flatbuffers::uoffset_t kMaxVerifierTables = 1000000;

// True when the elements of a flatbuffer vector (null is fine) are 8-byte aligned.
template <typename Vector>
bool IsAligned(const Vector* v) {
  return v == nullptr || v->size() == 0 || reinterpret_cast<uintptr_t>(v->Data()) % 8 == 0;
}

// A buffer of `n` (< 64) zero bytes, shared.
std::shared_ptr<Buffer> ZeroPadding(int64_t n);

// Wraps a finished builder's bytes in a Buffer without copying.
std::shared_ptr<Buffer> ReleaseBuilder(flatbuffers::FlatBufferBuilder* fbb);

// Returns `buffer` if its data is 8-byte aligned, else an aligned copy.
Result<std::shared_ptr<Buffer>> EnsureAligned(std::shared_ptr<Buffer> buffer);

// Verifies a flatbuffer Message.
Result<const fb::Message*> VerifyMessage(const Buffer& metadata);

// Verifies the Message in `metadata` wherever it lies: misaligned bytes are first copied into
// `*aligned`, which then owns what the result points into and must outlive its use.
Result<const fb::Message*> VerifyMessageAnywhere(const Buffer& metadata,
                                                 std::shared_ptr<Buffer>* aligned);

// The Message's RecordBatch header, checked for version and type.
Result<const fb::RecordBatch*> GetRecordBatchHeader(const fb::Message* message);

// fb <-> our schema.
flatbuffers::Offset<fb::Schema> WriteSchema(flatbuffers::FlatBufferBuilder* fbb,
                                            const Schema& schema);
Result<SchemaPtr> ReadSchema(const fb::Schema* schema);

// Finishes a Message with the given header (and custom_metadata, when not empty).
std::shared_ptr<Buffer> FinishMessage(flatbuffers::FlatBufferBuilder* fbb,
                                      fb::MessageHeader header_type,
                                      flatbuffers::Offset<void> header, int64_t body_length,
                                      const KeyValueMetadata& custom_metadata = {});

Result<Codec> CodecFromFlatbuffer(const fb::BodyCompression* compression);

// Name of a MessageHeader for error messages.
std::string MessageTypeName(fb::MessageHeader type);

}  // namespace oxbow::arrow::ipc::internal
