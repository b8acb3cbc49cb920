// Thrift compact protocol: a small encoder and a hardened decoder (internal to the parquet module).
// Spec: apache/thrift doc/specs/thrift-compact-protocol.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/common/status.h"

namespace oxbow::parquet::thrift {

// Compact type codes as they appear in field and list headers.
enum class CType : uint8_t {
  kStop = 0,
  kTrue = 1,  // a bool field whose value is true; also "bool" as a list element type
  kFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
};

// Appends compact-protocol bytes to a string. Struct nesting tracks the last field id so field
// headers use the short delta form.
class CompactWriter {
 public:
  explicit CompactWriter(std::string* out) : out_(out) {}

  // Top-level or list-element struct: call BeginStruct() ... EndStruct().
  void BeginStruct();
  void EndStruct();  // writes the stop byte

  void FieldBool(int16_t id, bool v);
  void FieldI8(int16_t id, int8_t v);
  void FieldI16(int16_t id, int16_t v);
  void FieldI32(int16_t id, int32_t v);
  void FieldI64(int16_t id, int64_t v);
  void FieldDouble(int16_t id, double v);
  void FieldBinary(int16_t id, std::string_view v);
  // Writes the header of a struct field and enters it; finish with EndStruct().
  void FieldStruct(int16_t id);
  // Writes the header of a list field; then write `size` elements with the Element* calls.
  void FieldList(int16_t id, CType element, int64_t size);

  void ElementI32(int32_t v) { Varint(ZigZag(v)); }
  void ElementI64(int64_t v) { Varint(ZigZag(v)); }
  void ElementBinary(std::string_view v);

 private:
  static uint64_t ZigZag(int64_t v) {
    return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  }
  void FieldHeader(int16_t id, CType type);
  void Varint(uint64_t v);

  std::string* out_;
  std::vector<int16_t> stack_;
  int16_t last_id_ = 0;
};

// Reads compact-protocol bytes without ever reading past the end. Every container length is
// checked against the remaining bytes, and nesting is limited to kMaxDepth.
class CompactReader {
 public:
  static constexpr int kMaxDepth = 32;

  CompactReader(const uint8_t* data, size_t size) : pos_(data), end_(data + size), begin_(data) {}

  size_t position() const { return static_cast<size_t>(pos_ - begin_); }

  Status BeginStruct();
  Status EndStruct();
  // Reads the next field header. At the struct's end *type is kStop. A bool field's value is
  // carried in the header: read it with FieldBoolValue().
  Status ReadFieldHeader(int16_t* id, CType* type);
  bool FieldBoolValue(CType type) const { return type == CType::kTrue; }

  Status ReadI8(int8_t* v);
  Status ReadI16(int16_t* v);
  Status ReadI32(int32_t* v);
  Status ReadI64(int64_t* v);
  Status ReadDouble(double* v);
  Status ReadBinary(std::string_view* v);
  Status ReadString(std::string* v);
  Status ReadListHeader(CType* element, int32_t* size);
  Status ReadListBool(bool* v);

  // Skips one value of `type` (recursively for containers).
  Status Skip(CType type);

 private:
  Status Error(std::string_view what) const;
  Status ReadVarint(uint64_t* v);
  Status ReadZigZag(int64_t* v);
  Status SkipDepth(CType type, int depth);

  const uint8_t* pos_;
  const uint8_t* end_;
  const uint8_t* begin_;
  std::vector<int16_t> stack_;
  int16_t last_id_ = 0;
};

// Whether a header type code is one a field of the expected kind may carry.
inline bool IsBool(CType t) { return t == CType::kTrue || t == CType::kFalse; }

}  // namespace oxbow::parquet::thrift
