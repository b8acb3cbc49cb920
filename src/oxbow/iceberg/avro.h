// Avro binary encoding and object container files (Avro 1.11 specification), just enough for
// Iceberg manifests and manifest lists: schemas keep their "field-id", "element-id",
// "key-id", "value-id" and "logicalType" attributes, which Iceberg readers resolve fields by.
// See docs/iceberg.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oxbow/common/status.h"

namespace oxbow::iceberg {

enum class AvroType : uint8_t {
  kNull,
  kBoolean,
  kInt,
  kLong,
  kFloat,
  kDouble,
  kBytes,
  kString,
  kRecord,
  kEnum,
  kArray,
  kMap,
  kUnion,
  kFixed,
};

struct AvroNode;
using AvroNodePtr = std::shared_ptr<const AvroNode>;

struct AvroField {
  std::string name;
  AvroNodePtr type;
  std::optional<int32_t> field_id;  // Iceberg's "field-id" attribute
};

// One node of a parsed Avro schema.
struct AvroNode {
  AvroType type = AvroType::kNull;
  std::string name;                   // full name of a record, enum or fixed
  std::string logical_type;           // "logicalType", e.g. "map", "date", "decimal"
  std::vector<AvroField> fields;      // record
  std::vector<std::string> symbols;   // enum
  AvroNodePtr items;                  // array
  AvroNodePtr values;                 // map
  std::vector<AvroNodePtr> branches;  // union
  int32_t size = 0;                   // fixed
  std::optional<int32_t> element_id;  // array "element-id"
  std::optional<int32_t> key_id;      // map "key-id"
  std::optional<int32_t> value_id;    // map "value-id"

  // Index of the record field with this Iceberg field id, or -1.
  int FieldIndexById(int32_t field_id) const;
  // For a union of null and one other type: that type; otherwise this node.
  const AvroNode& NonNull() const;
  bool IsNullable() const;
};

// Parses a schema in Avro's JSON form. Named types may be referenced by (full) name after
// their definition; recursive types are rejected.
Result<AvroNodePtr> ParseAvroSchema(std::string_view json);

// A decoded (or to-be-encoded) datum. Which members are used depends on `type`:
// kBoolean: b; kInt/kLong/kEnum: i; kFloat/kDouble: d; kBytes/kString/kFixed: bytes;
// kArray and kRecord (fields in schema order): items; kMap: entries. A union's value is the
// chosen branch's datum, with `branch` set by the decoder.
struct AvroValue {
  AvroType type = AvroType::kNull;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string bytes;
  std::vector<AvroValue> items;
  std::vector<std::pair<std::string, AvroValue>> entries;
  int32_t branch = -1;

  // Declared here, defined in avro.cc: `entries` holds pairs of this still-incomplete type, so
  // the special members may only be instantiated once the class is complete (clang insists).
  AvroValue();
  AvroValue(const AvroValue&);
  AvroValue(AvroValue&&) noexcept;
  AvroValue& operator=(const AvroValue&);
  AvroValue& operator=(AvroValue&&) noexcept;
  ~AvroValue();

  static AvroValue Null();
  static AvroValue Boolean(bool v);
  static AvroValue Int(int32_t v);
  static AvroValue Long(int64_t v);
  static AvroValue Float(float v);
  static AvroValue Double(double v);
  static AvroValue Bytes(std::string v);
  static AvroValue String(std::string v);
  static AvroValue Fixed(std::string v);
  static AvroValue Array(std::vector<AvroValue> items);
  static AvroValue Record(std::vector<AvroValue> fields);
  bool is_null() const { return type == AvroType::kNull; }
};

// --- Binary encoding primitives ---------------------------------------------------------
void AppendAvroLong(std::string* out, int64_t v);  // zigzag varint
inline void AppendAvroInt(std::string* out, int32_t v) { AppendAvroLong(out, v); }
void AppendAvroBytes(std::string* out, std::string_view bytes);  // long length + bytes
void AppendAvroFloat(std::string* out, float v);
void AppendAvroDouble(std::string* out, double v);

// Reads the binary encoding from a byte range; every read is bounds checked.
class AvroDecoder {
 public:
  explicit AvroDecoder(std::string_view data) : data_(data) {}
  Result<int64_t> ReadLong();
  Result<int32_t> ReadInt();
  Result<bool> ReadBoolean();
  Result<float> ReadFloat();
  Result<double> ReadDouble();
  Result<std::string_view> ReadBytes();
  Result<std::string_view> ReadFixed(int64_t size);
  size_t position() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// Encodes `value` as `schema` describes (Invalid when they do not match).
Status EncodeAvroValue(const AvroNode& schema, const AvroValue& value, std::string* out);
Result<AvroValue> DecodeAvroValue(const AvroNode& schema, AvroDecoder* decoder);

// --- Object container files ---------------------------------------------------------------
enum class AvroCodec : uint8_t { kNull, kDeflate };

struct AvroWriterOptions {
  // Block compression. Default: kDeflate (raw deflate, as Java Iceberg writes manifests).
  AvroCodec codec = AvroCodec::kDeflate;
  // zlib level for kDeflate. Default: 6 (-1 would also mean zlib's default).
  int deflate_level = 6;
  // A block is closed once its encoded records reach this many bytes. Default: 1 MiB.
  int64_t block_bytes = int64_t{1} << 20;
};

// Builds an object container file in memory: magic "Obj\x01", the metadata map (avro.schema
// exactly as given, avro.codec, then the extra keys), a random 16-byte sync marker, blocks.
class AvroFileWriter {
 public:
  static Result<std::unique_ptr<AvroFileWriter>> Make(
      std::string schema_json, std::vector<std::pair<std::string, std::string>> metadata,
      AvroWriterOptions options = {});

  const AvroNode& schema() const { return *schema_; }
  Status Append(const AvroValue& record);
  // Flushes the last block and returns the whole file. The writer is unusable afterwards.
  Result<std::string> Finish();

 private:
  AvroFileWriter() = default;
  Status FlushBlock();

  AvroNodePtr schema_;
  AvroWriterOptions options_;
  std::string out_;
  std::string block_;
  int64_t block_count_ = 0;
  char sync_[16] = {};
  bool finished_ = false;
};

// A whole object container file, decoded.
struct AvroFile {
  std::string schema_json;  // avro.schema as stored
  AvroNodePtr schema;
  std::vector<std::pair<std::string, std::string>> metadata;  // every header key, in order
  std::vector<AvroValue> records;

  std::optional<std::string> Metadata(std::string_view key) const;
};

// Reads a container file written with the null or deflate codec. Malformed input gives
// Corruption naming the byte offset; nothing is read out of bounds.
Result<AvroFile> ReadAvroFile(std::string_view bytes);

}  // namespace oxbow::iceberg
