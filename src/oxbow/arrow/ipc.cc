// Message framing and schema metadata shared by the IPC reader and writer.
#include <cstring>
#include <string>
#include <utility>

#include "oxbow/arrow/ipc_internal.h"
#include "oxbow/common/bit_util.h"

namespace oxbow::arrow::ipc {

namespace internal {

std::shared_ptr<Buffer> ZeroPadding(int64_t n) {
  static const uint8_t kZeros[kBufferAlignment] = {};
  static const auto kPieces = [] {
    std::vector<std::shared_ptr<Buffer>> pieces;
    for (int64_t i = 0; i < kBufferAlignment; ++i) {
      pieces.push_back(std::make_shared<Buffer>(kZeros, i, nullptr));
    }
    return pieces;
  }();
  return kPieces[static_cast<size_t>(n)];
}

std::shared_ptr<Buffer> ReleaseBuilder(flatbuffers::FlatBufferBuilder* fbb) {
  auto owner = std::make_shared<flatbuffers::DetachedBuffer>(fbb->Release());
  return std::make_shared<Buffer>(owner->data(), static_cast<int64_t>(owner->size()), owner);
}

Result<std::shared_ptr<Buffer>> EnsureAligned(std::shared_ptr<Buffer> buffer) {
  if (reinterpret_cast<uintptr_t>(buffer->data()) % kIpcAlignment == 0) return buffer;
  return Buffer::CopyFrom(buffer->view());
}

Result<const fb::Message*> VerifyMessage(const Buffer& metadata) {
  if (metadata.size() > kMaxMetadataSize) {
    return Status::Invalid("IPC message metadata of " + std::to_string(metadata.size()) +
                           " bytes exceeds the limit of " + std::to_string(kMaxMetadataSize));
  }
  if (metadata.size() < kMinFlatbufferSize) {
    return Status::Invalid("IPC message metadata of " + std::to_string(metadata.size()) +
                           " bytes is too short to be a flatbuffer");
  }
  flatbuffers::Verifier verifier(metadata.data(), static_cast<size_t>(metadata.size()),
                                 kMaxVerifierDepth, kMaxVerifierTables);
  if (!fb::VerifyMessageBuffer(verifier)) {
    return Status::Invalid("IPC message metadata (" + std::to_string(metadata.size()) +
                           " bytes) is not a valid flatbuffer Message");
  }
  const fb::Message* message = fb::GetMessage(metadata.data());
  if (message->version() < fb::MetadataVersion::V4) {
    return Status::NotImplemented("IPC metadata version V" +
                                  std::to_string(static_cast<int>(message->version()) + 1) +
                                  " is too old (V4 and V5 are supported)");
  }
  if (message->body_length() < 0) {
    return Status::Invalid("IPC message has a negative body length " +
                           std::to_string(message->body_length()));
  }
  return message;
}

Result<const fb::Message*> VerifyMessageAnywhere(const Buffer& metadata,
                                                 std::shared_ptr<Buffer>* aligned) {
  if (reinterpret_cast<uintptr_t>(metadata.data()) % kIpcAlignment == 0) {
    return VerifyMessage(metadata);
  }
  ASSIGN_OR_RAISE(*aligned, Buffer::CopyFrom(metadata.view()));
  return VerifyMessage(**aligned);
}

Result<const fb::RecordBatch*> GetRecordBatchHeader(const fb::Message* message) {
  if (message->header_type() != fb::MessageHeader::RecordBatch) {
    return Status::Invalid("expected a RecordBatch message, got " +
                           MessageTypeName(message->header_type()));
  }
  const fb::RecordBatch* batch = message->header_as_RecordBatch();
  if (batch == nullptr) return Status::Invalid("RecordBatch message has no header");
  // The verifier checks a vector's 4-byte length prefix only; our structs need 8 bytes.
  if (!IsAligned(batch->nodes()) || !IsAligned(batch->buffers()) ||
      !IsAligned(batch->variadic_buffer_counts())) {
    return Status::Invalid("RecordBatch metadata has a misaligned vector of 8-byte structs");
  }
  if (batch->length() < 0) {
    return Status::Invalid("RecordBatch has a negative length " + std::to_string(batch->length()));
  }
  return batch;
}

std::string MessageTypeName(fb::MessageHeader type) {
  switch (type) {
    case fb::MessageHeader::NONE: return "a message without header";
    case fb::MessageHeader::Schema: return "Schema";
    case fb::MessageHeader::DictionaryBatch: return "DictionaryBatch";
    case fb::MessageHeader::RecordBatch: return "RecordBatch";
    case fb::MessageHeader::Tensor: return "Tensor";
    case fb::MessageHeader::SparseTensor: return "SparseTensor";
  }
  return "unknown message type " + std::to_string(static_cast<int>(type));
}

Result<Codec> CodecFromFlatbuffer(const fb::BodyCompression* compression) {
  if (compression == nullptr) return Codec::kNone;
  if (compression->method() != fb::BodyCompressionMethod::BUFFER) {
    return Status::NotImplemented("body compression method " +
                                  std::to_string(static_cast<int>(compression->method())) +
                                  " is not supported (only BUFFER)");
  }
  switch (compression->codec()) {
    case fb::CompressionType::LZ4_FRAME: return Codec::kLz4Frame;
    case fb::CompressionType::ZSTD: return Codec::kZstd;
  }
  return Status::NotImplemented("body compression codec " +
                                std::to_string(static_cast<int>(compression->codec())) +
                                " is not supported (LZ4_FRAME and ZSTD are)");
}

namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::KeyValue>>> WriteMetadata(
    FlatBufferBuilder* fbb, const KeyValueMetadata& metadata) {
  if (metadata.empty()) return 0;
  std::vector<Offset<fb::KeyValue>> entries;
  entries.reserve(metadata.size());
  for (const auto& [key, value] : metadata) {
    entries.push_back(fb::CreateKeyValue(*fbb, fbb->CreateString(key), fbb->CreateString(value)));
  }
  return fbb->CreateVector(entries);
}

KeyValueMetadata ReadMetadata(
    const flatbuffers::Vector<flatbuffers::Offset<fb::KeyValue>>* entries) {
  KeyValueMetadata metadata;
  if (entries == nullptr) return metadata;
  metadata.reserve(entries->size());
  for (const fb::KeyValue* kv : *entries) {
    if (kv == nullptr) continue;
    metadata.emplace_back(kv->key() ? kv->key()->str() : std::string(),
                          kv->value() ? kv->value()->str() : std::string());
  }
  return metadata;
}

fb::TimeUnit ToFlatbuffer(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::kSecond: return fb::TimeUnit::SECOND;
    case TimeUnit::kMilli: return fb::TimeUnit::MILLISECOND;
    case TimeUnit::kMicro: return fb::TimeUnit::MICROSECOND;
    case TimeUnit::kNano: return fb::TimeUnit::NANOSECOND;
  }
  return fb::TimeUnit::SECOND;
}

std::pair<fb::Type, Offset<void>> WriteType(FlatBufferBuilder* fbb, const DataType& type) {
  switch (type.id()) {
    case TypeId::kBool: return {fb::Type::Bool, fb::CreateBool(*fbb).Union()};
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kUInt8:
    case TypeId::kUInt16:
    case TypeId::kUInt32:
    case TypeId::kUInt64:
      return {fb::Type::Int,
              fb::CreateInt(*fbb, type.bit_width(), type.is_signed_integer()).Union()};
    case TypeId::kFloat32:
      return {fb::Type::FloatingPoint,
              fb::CreateFloatingPoint(*fbb, fb::Precision::SINGLE).Union()};
    case TypeId::kFloat64:
      return {fb::Type::FloatingPoint,
              fb::CreateFloatingPoint(*fbb, fb::Precision::DOUBLE).Union()};
    case TypeId::kString: return {fb::Type::Utf8, fb::CreateUtf8(*fbb).Union()};
    case TypeId::kBinary: return {fb::Type::Binary, fb::CreateBinary(*fbb).Union()};
    case TypeId::kDate32: return {fb::Type::Date, fb::CreateDate(*fbb, fb::DateUnit::DAY).Union()};
    case TypeId::kTimestamp: {
      auto tz = type.timezone().empty() ? 0 : fbb->CreateString(type.timezone());
      return {fb::Type::Timestamp,
              fb::CreateTimestamp(*fbb, ToFlatbuffer(type.unit()), tz).Union()};
    }
    case TypeId::kDecimal128:
      return {fb::Type::Decimal,
              fb::CreateDecimal(*fbb, type.precision(), type.scale(), 128).Union()};
    case TypeId::kFixedSizeBinary:
      return {fb::Type::FixedSizeBinary,
              fb::CreateFixedSizeBinary(*fbb, type.byte_width()).Union()};
    case TypeId::kList: return {fb::Type::List, fb::CreateList(*fbb).Union()};
    case TypeId::kStruct: return {fb::Type::Struct_, fb::CreateStruct_(*fbb).Union()};
    case TypeId::kMap: return {fb::Type::Map, fb::CreateMap(*fbb, false).Union()};
    case TypeId::kFixedSizeList:
      return {fb::Type::FixedSizeList, fb::CreateFixedSizeList(*fbb, type.list_size()).Union()};
  }
  return {fb::Type::NONE, 0};
}

std::string FlatbufferTypeName(fb::Type type) {
  const char* name = fb::EnumNameType(type);
  if (name != nullptr && *name != '\0') return name;
  return "type #" + std::to_string(static_cast<int>(type));
}

Status Unsupported(const std::string& field, const std::string& what) {
  return Status::NotImplemented("field " + Quote(field) + " has type " + what +
                                ", which Oxbow does not support");
}

// Nesting accepted in a schema message (DataType::Validate allows 32 levels below a column).
constexpr int kMaxFieldDepth = 33;

Result<Field> ReadField(const fb::Field* f, const std::string& path, int depth);

Result<std::vector<Field>> ReadChildren(const fb::Field* field, const std::string& name,
                                        int depth) {
  std::vector<Field> children;
  if (field->children() == nullptr) return children;
  for (const fb::Field* c : *field->children()) {
    if (c == nullptr) return Status::Invalid("field " + Quote(name) + " has a null child");
    ASSIGN_OR_RAISE(Field child, ReadField(c, name, depth + 1));
    children.push_back(std::move(child));
  }
  return children;
}

Result<DataType> ReadType(const fb::Field* field, const std::string& name, int depth) {
  const fb::Type type = field->type_type();
  if (type == fb::Type::NONE) return Status::Invalid("field " + Quote(name) + " has no type");
  if (field->type() == nullptr) {
    return Status::Invalid("field " + Quote(name) + " lacks its " + FlatbufferTypeName(type) +
                           " type table");
  }
  switch (type) {
    case fb::Type::Bool: return DataType::Bool();
    case fb::Type::Int: {
      const fb::Int* t = field->type_as_Int();
      const bool s = t->is_signed();
      switch (t->bit_width()) {
        case 8: return s ? DataType::Int8() : DataType::UInt8();
        case 16: return s ? DataType::Int16() : DataType::UInt16();
        case 32: return s ? DataType::Int32() : DataType::UInt32();
        case 64: return s ? DataType::Int64() : DataType::UInt64();
      }
      return Status::Invalid("field " + Quote(name) + " has an Int type of bit width " +
                             std::to_string(t->bit_width()));
    }
    case fb::Type::FloatingPoint:
      switch (field->type_as_FloatingPoint()->precision()) {
        case fb::Precision::SINGLE: return DataType::Float32();
        case fb::Precision::DOUBLE: return DataType::Float64();
        case fb::Precision::HALF: return Unsupported(name, "halffloat");
      }
      return Status::Invalid("field " + Quote(name) + " has an unknown floating point precision");
    case fb::Type::Utf8: return DataType::String();
    case fb::Type::Binary: return DataType::Binary();
    case fb::Type::Date:
      if (field->type_as_Date()->unit() == fb::DateUnit::DAY) return DataType::Date32();
      if (field->type_as_Date()->unit() == fb::DateUnit::MILLISECOND) {
        return Unsupported(name, "date64[ms]");
      }
      return Status::Invalid("field " + Quote(name) + " has an unknown date unit");
    case fb::Type::Timestamp: {
      const fb::Timestamp* t = field->type_as_Timestamp();
      TimeUnit unit;
      switch (t->unit()) {
        case fb::TimeUnit::SECOND: unit = TimeUnit::kSecond; break;
        case fb::TimeUnit::MILLISECOND: unit = TimeUnit::kMilli; break;
        case fb::TimeUnit::MICROSECOND: unit = TimeUnit::kMicro; break;
        case fb::TimeUnit::NANOSECOND: unit = TimeUnit::kNano; break;
        default:
          return Status::Invalid("field " + Quote(name) + " has an unknown timestamp unit " +
                                 std::to_string(static_cast<int>(t->unit())));
      }
      return DataType::Timestamp(unit, t->timezone() ? t->timezone()->str() : std::string());
    }
    case fb::Type::Decimal: {
      const fb::Decimal* t = field->type_as_Decimal();
      if (t->bit_width() == 256) {
        return Unsupported(name, "decimal256(" + std::to_string(t->precision()) + ", " +
                                     std::to_string(t->scale()) + ")");
      }
      if (t->bit_width() != 128) {
        return Status::Invalid("field " + Quote(name) + " has a decimal of bit width " +
                               std::to_string(t->bit_width()));
      }
      DataType d = DataType::Decimal128(t->precision(), t->scale());
      Status st = d.Validate();
      if (!st.ok()) return st.WithContext("field " + Quote(name));
      return d;
    }
    case fb::Type::FixedSizeBinary: {
      DataType d = DataType::FixedSizeBinary(field->type_as_FixedSizeBinary()->byte_width());
      Status st = d.Validate();
      if (!st.ok()) return st.WithContext("field " + Quote(name));
      return d;
    }
    case fb::Type::List:
    case fb::Type::Struct_:
    case fb::Type::Map:
    case fb::Type::FixedSizeList: {
      ASSIGN_OR_RAISE(auto children, ReadChildren(field, name, depth));
      const TypeId id = type == fb::Type::List      ? TypeId::kList
                        : type == fb::Type::Struct_ ? TypeId::kStruct
                        : type == fb::Type::Map     ? TypeId::kMap
                                                    : TypeId::kFixedSizeList;
      const int32_t size =
          id == TypeId::kFixedSizeList ? field->type_as_FixedSizeList()->list_size() : 0;
      DataType d = DataType::Nested(id, std::move(children), size);
      Status st = d.Validate();
      if (!st.ok()) return st.WithContext("field " + Quote(name));
      return d;
    }
    default: return Unsupported(name, FlatbufferTypeName(type));
  }
}

Offset<fb::Field> WriteField(FlatBufferBuilder* fbb, const Field& f) {
  std::vector<Offset<fb::Field>> children;
  for (const Field& c : f.type.children()) children.push_back(WriteField(fbb, c));
  auto child_vector = fbb->CreateVector(children);
  auto name = fbb->CreateString(f.name);
  auto [type_type, type] = WriteType(fbb, f.type);
  auto metadata = WriteMetadata(fbb, f.metadata);
  return fb::CreateField(*fbb, name, f.nullable, type_type, type, 0, child_vector, metadata);
}

Result<Field> ReadField(const fb::Field* f, const std::string& parent, int depth) {
  if (depth > kMaxFieldDepth) {
    return Status::Invalid("schema fields nest deeper than " + std::to_string(kMaxFieldDepth) +
                           " levels");
  }
  Field field;
  field.name = f->name() ? f->name()->str() : std::string();
  const std::string path = parent.empty() ? field.name : parent + "." + field.name;
  field.nullable = f->nullable();
  if (f->dictionary() != nullptr) {
    return Status::NotImplemented("field " + Quote(path) +
                                  " is dictionary-encoded, which Oxbow does not support");
  }
  ASSIGN_OR_RAISE(field.type, ReadType(f, path, depth));
  if (!field.type.is_nested() && f->children() != nullptr && f->children()->size() != 0) {
    return Status::Invalid("field " + Quote(path) + " of type " + field.type.ToString() + " has " +
                           std::to_string(f->children()->size()) + " children");
  }
  field.metadata = ReadMetadata(f->custom_metadata());
  return field;
}

}  // namespace

Offset<fb::Schema> WriteSchema(FlatBufferBuilder* fbb, const Schema& schema) {
  std::vector<Offset<fb::Field>> fields;
  fields.reserve(schema.fields().size());
  for (const Field& f : schema.fields()) fields.push_back(WriteField(fbb, f));
  auto field_vector = fbb->CreateVector(fields);
  auto metadata = WriteMetadata(fbb, schema.metadata());
  return fb::CreateSchema(*fbb, fb::Endianness::Little, field_vector, metadata);
}

Result<SchemaPtr> ReadSchema(const fb::Schema* schema) {
  if (schema == nullptr) return Status::Invalid("Schema message has no schema");
  if (schema->endianness() != fb::Endianness::Little) {
    return Status::NotImplemented("big-endian IPC data is not supported");
  }
  std::vector<Field> fields;
  if (schema->fields() != nullptr) {
    fields.reserve(schema->fields()->size());
    int index = 0;
    for (const fb::Field* f : *schema->fields()) {
      if (f == nullptr)
        return Status::Invalid("schema field " + std::to_string(index) + " is null");
      ASSIGN_OR_RAISE(Field field, ReadField(f, std::string(), 1));
      fields.push_back(std::move(field));
      ++index;
    }
  }
  return std::make_shared<const Schema>(std::move(fields), ReadMetadata(schema->custom_metadata()));
}

std::shared_ptr<Buffer> FinishMessage(FlatBufferBuilder* fbb, fb::MessageHeader header_type,
                                      Offset<void> header, int64_t body_length,
                                      const KeyValueMetadata& custom_metadata) {
  auto metadata = WriteMetadata(fbb, custom_metadata);
  auto message =
      fb::CreateMessage(*fbb, fb::MetadataVersion::V5, header_type, header, body_length, metadata);
  fbb->Finish(message);
  return ReleaseBuilder(fbb);
}

}  // namespace internal

namespace fb = internal::fb;

// ---- EncodedMessage ----

int32_t EncodedMessage::PaddedMetadataLength() const {
  // The 8-byte prefix plus the metadata end on a multiple of 8.
  return static_cast<int32_t>(bit_util::RoundUp(metadata->size(), kIpcAlignment));
}

int64_t EncodedMessage::EncapsulatedSize() const {
  return 8 + PaddedMetadataLength() + body_length;
}

void EncodedMessage::AppendEncapsulatedTo(std::string* out) const {
  const int32_t padded = PaddedMetadataLength();
  const uint32_t continuation = internal::kContinuation;
  out->reserve(out->size() + static_cast<size_t>(EncapsulatedSize()));
  out->append(reinterpret_cast<const char*>(&continuation), 4);
  out->append(reinterpret_cast<const char*>(&padded), 4);
  out->append(metadata->view());
  out->append(static_cast<size_t>(padded - metadata->size()), '\0');
  for (const auto& piece : body) out->append(piece->view());
}

Result<std::shared_ptr<Buffer>> EncodedMessage::ToEncapsulatedBuffer() const {
  std::string bytes;
  AppendEncapsulatedTo(&bytes);
  return Buffer::FromString(std::move(bytes));
}

Result<std::shared_ptr<Buffer>> EncodedMessage::BodyAsBuffer() const {
  if (body.size() == 1) return body[0];
  if (body.empty()) return Buffer::Empty();
  ASSIGN_OR_RAISE(auto out, MutableBuffer::Allocate(body_length));
  int64_t pos = 0;
  for (const auto& piece : body) {
    if (piece->size() > 0) std::memcpy(out->mutable_data() + pos, piece->data(), piece->size());
    pos += piece->size();
  }
  return std::shared_ptr<Buffer>(std::move(out));
}

std::string_view EndOfStreamMarker() {
  static const char kMarker[8] = {'\xff', '\xff', '\xff', '\xff', 0, 0, 0, 0};
  return {kMarker, 8};
}

bool IsFileFormat(std::string_view data) {
  return data.size() >= internal::kFileMagicSize &&
         data.substr(0, internal::kFileMagicSize) == internal::kFileMagic;
}

// ---- Message parsing ----

namespace {

MessageType ToMessageType(fb::MessageHeader header) {
  switch (header) {
    case fb::MessageHeader::Schema: return MessageType::kSchema;
    case fb::MessageHeader::DictionaryBatch: return MessageType::kDictionaryBatch;
    case fb::MessageHeader::RecordBatch: return MessageType::kRecordBatch;
    case fb::MessageHeader::Tensor: return MessageType::kTensor;
    case fb::MessageHeader::SparseTensor: return MessageType::kSparseTensor;
    default: return MessageType::kSchema;
  }
}

}  // namespace

Result<RawMessage> ParseMessage(std::shared_ptr<Buffer> metadata, std::shared_ptr<Buffer> body) {
  if (metadata == nullptr) return Status::Invalid("IPC message without metadata");
  if (body == nullptr) body = Buffer::Empty();
  ASSIGN_OR_RAISE(metadata, internal::EnsureAligned(std::move(metadata)));
  ASSIGN_OR_RAISE(const fb::Message* message, internal::VerifyMessage(*metadata));
  const auto header = message->header_type();
  if (header == fb::MessageHeader::NONE || message->header() == nullptr ||
      header > fb::MessageHeader::MAX) {
    return Status::Invalid("IPC message has " + internal::MessageTypeName(header));
  }
  if (message->body_length() > body->size()) {
    return Status::Invalid("IPC message declares a body of " +
                           std::to_string(message->body_length()) + " bytes but only " +
                           std::to_string(body->size()) + " are present");
  }
  if (message->body_length() < body->size()) {
    body = Buffer::Slice(body, 0, message->body_length());
  }
  return RawMessage{ToMessageType(header), std::move(metadata), std::move(body)};
}

Result<std::optional<RawMessage>> ReadMessage(const std::shared_ptr<Buffer>& data,
                                              int64_t* offset) {
  const int64_t size = data->size();
  int64_t pos = *offset;
  if (pos < 0 || pos > size) {
    return Status::OutOfRange("IPC read offset " + std::to_string(pos) + " outside " +
                              std::to_string(size) + " bytes");
  }
  if (pos == size) return std::optional<RawMessage>();
  if (size - pos < 4) {
    return Status::Invalid("truncated IPC message at offset " + std::to_string(pos) + ": " +
                           std::to_string(size - pos) + " bytes left");
  }
  uint32_t word;
  std::memcpy(&word, data->data() + pos, 4);
  pos += 4;
  if (word == internal::kContinuation) {
    if (size - pos < 4) {
      return Status::Invalid("truncated IPC message length at offset " + std::to_string(pos));
    }
    std::memcpy(&word, data->data() + pos, 4);
    pos += 4;
  }
  // Otherwise `word` is the length of a pre-0.15 message (no continuation marker).
  const int32_t metadata_length = static_cast<int32_t>(word);
  if (metadata_length == 0) {
    *offset = pos;
    return std::optional<RawMessage>();  // end-of-stream marker
  }
  if (metadata_length < 0 || metadata_length > size - pos) {
    return Status::Invalid("IPC message at offset " + std::to_string(*offset) + " declares " +
                           std::to_string(metadata_length) + " metadata bytes but " +
                           std::to_string(size - pos) + " remain");
  }
  auto metadata = Buffer::Slice(data, pos, metadata_length);
  pos += metadata_length;
  ASSIGN_OR_RAISE(metadata, internal::EnsureAligned(std::move(metadata)));
  auto verified = internal::VerifyMessage(*metadata);
  if (!verified.ok()) {
    return verified.status().WithContext("IPC message at offset " + std::to_string(*offset));
  }
  const int64_t body_length = (*verified)->body_length();
  if (body_length > size - pos) {
    return Status::Invalid("IPC message at offset " + std::to_string(*offset) +
                           " declares a body of " + std::to_string(body_length) + " bytes but " +
                           std::to_string(size - pos) + " remain");
  }
  auto body = Buffer::Slice(data, pos, body_length);
  pos += body_length;
  auto parsed = ParseMessage(std::move(metadata), std::move(body));
  if (!parsed.ok()) {
    return parsed.status().WithContext("IPC message at offset " + std::to_string(*offset));
  }
  *offset = pos;
  return std::optional<RawMessage>(std::move(parsed).ValueOrDie());
}

Result<SchemaPtr> DecodeSchema(const Buffer& metadata) {
  std::shared_ptr<Buffer> aligned;
  ASSIGN_OR_RAISE(const fb::Message* message, internal::VerifyMessageAnywhere(metadata, &aligned));
  if (message->header_type() != fb::MessageHeader::Schema) {
    return Status::Invalid("expected a Schema message, got " +
                           internal::MessageTypeName(message->header_type()));
  }
  return internal::ReadSchema(message->header_as_Schema());
}

Result<KeyValueMetadata> MessageCustomMetadata(const Buffer& metadata) {
  std::shared_ptr<Buffer> aligned;
  ASSIGN_OR_RAISE(const fb::Message* message, internal::VerifyMessageAnywhere(metadata, &aligned));
  return internal::ReadMetadata(message->custom_metadata());
}

Result<RecordBatchInfo> InspectRecordBatch(const Buffer& metadata) {
  std::shared_ptr<Buffer> aligned;
  ASSIGN_OR_RAISE(const fb::Message* message, internal::VerifyMessageAnywhere(metadata, &aligned));
  ASSIGN_OR_RAISE(const fb::RecordBatch* batch, internal::GetRecordBatchHeader(message));
  RecordBatchInfo info;
  info.num_rows = batch->length();
  info.body_length = message->body_length();
  ASSIGN_OR_RAISE(info.codec, internal::CodecFromFlatbuffer(batch->compression()));
  return info;
}

}  // namespace oxbow::arrow::ipc
