// The primitive types of the Kafka protocol (docs/kafka.md): big-endian integers, varints,
// strings, bytes, arrays and tagged fields, in their classic and flexible ("compact") forms.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "oxbow/common/status.h"

namespace oxbow::kafka {

using Uuid = std::array<uint8_t, 16>;

// Reads a message front to back. The first error sticks: later reads return zero values and
// status() names the first problem, so decoders check once at the end.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  int8_t Int8();
  int16_t Int16();
  int32_t Int32();
  int64_t Int64();
  uint32_t UInt32();
  bool Bool() { return Int8() != 0; }
  Uuid ReadUuid();
  uint32_t UnsignedVarint();
  int32_t Varint();   // zigzag
  int64_t Varlong();  // zigzag
  // A string: int16 length (classic) or unsigned varint length+1 (flexible); null is refused.
  std::string String(bool flexible);
  std::optional<std::string> NullableString(bool flexible);
  // Bytes: int32 length (classic) or unsigned varint length+1 (flexible); null is refused.
  std::string_view Bytes(bool flexible);
  std::optional<std::string_view> NullableBytes(bool flexible);
  // An array's element count (-1: null, refused unless `nullable`); bounded by the bytes left,
  // as every element takes at least one byte.
  int32_t ArrayLength(bool flexible, bool nullable = false);
  // Skips the tagged fields of a flexible structure (none in classic versions).
  void SkipTaggedFields(bool flexible);
  std::string_view Raw(size_t n);

  size_t remaining() const { return data_.size() - pos_; }
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // Records `problem` as the error unless one is already recorded.
  void Fail(std::string problem);

 private:
  bool Need(size_t n, const char* what);

  std::string_view data_;
  size_t pos_ = 0;
  Status status_;
};

// Appends a message; the counterpart of Reader.
class Writer {
 public:
  void Int8(int8_t v) { out_.push_back(static_cast<char>(v)); }
  void Int16(int16_t v);
  void Int32(int32_t v);
  void Int64(int64_t v);
  void UInt32(uint32_t v);
  void Bool(bool v) { Int8(v ? 1 : 0); }
  void WriteUuid(const Uuid& v);
  void UnsignedVarint(uint32_t v);
  void Varint(int32_t v);
  void Varlong(int64_t v);
  void String(std::string_view v, bool flexible);
  void NullableString(const std::optional<std::string>& v, bool flexible);
  void Bytes(std::string_view v, bool flexible);
  void NullableBytes(const std::optional<std::string_view>& v, bool flexible);
  void ArrayLength(int32_t n, bool flexible);
  // An empty tagged-field section (flexible versions only).
  void NoTaggedFields(bool flexible) {
    if (flexible) UnsignedVarint(0);
  }
  void Raw(std::string_view v) { out_.append(v); }
  // Overwrites 4 bytes at `pos` with `v` (a length or checksum known only afterwards).
  void PatchInt32(size_t pos, int32_t v);

  size_t size() const { return out_.size(); }
  std::string& buffer() { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads the tagged fields of a flexible structure: `read_field(tag, field)` reads a known tag
// from `field`, a reader of exactly that field's bytes, and returns false for a tag it does not
// know, which is skipped. A known field must use all of its bytes.
template <typename ReadField>
void ReadTaggedFields(Reader& r, ReadField read_field) {
  const uint32_t n = r.UnsignedVarint();
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    const uint32_t tag = r.UnsignedVarint();
    Reader field(r.Raw(r.UnsignedVarint()));
    if (!r.ok() || !read_field(tag, field)) continue;
    if (field.ok() && field.remaining() != 0) {
      field.Fail(std::to_string(field.remaining()) + " bytes after the field's end");
    }
    if (!field.ok())
      r.Fail("tagged field " + std::to_string(tag) + ": " + field.status().message());
  }
}

// The varint sizes the record format needs to compute lengths up front.
int VarintSize(int64_t zigzag_value);

}  // namespace oxbow::kafka
