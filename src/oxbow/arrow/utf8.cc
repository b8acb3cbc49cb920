#include "oxbow/arrow/utf8.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace oxbow::arrow {
namespace {

constexpr uint64_t kHighBits = 0x8080808080808080ULL;

uint64_t Load64(const uint8_t* p) {
  uint64_t word;
  std::memcpy(&word, p, sizeof(word));
  return word;
}

bool IsContinuation(uint8_t byte) { return (byte & 0xc0) == 0x80; }

}  // namespace

bool IsAscii(const uint8_t* data, size_t size) {
  size_t i = 0;
  // Blocks of 64 bytes OR-ed together (the compiler vectorizes this), one test per block.
  for (; i + 64 <= size; i += 64) {
    uint64_t any = 0;
    for (size_t k = 0; k < 64; k += 8) any |= Load64(data + i + k);
    if (any & kHighBits) return false;
  }
  for (; i + 16 <= size; i += 16) {
    if ((Load64(data + i) | Load64(data + i + 8)) & kHighBits) return false;
  }
  uint8_t any = 0;
  for (; i < size; ++i) any |= data[i];
  return any < 0x80;
}

size_t ValidUtf8Prefix(std::string_view text) {
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    if (i + 8 <= n && (Load64(p + i) & kHighBits) == 0) {
      i += 8;  // a run of ASCII
      continue;
    }
    const uint8_t lead = p[i];
    if (lead < 0x80) {
      ++i;
      continue;
    }
    // The sequence length and the range of its second byte (table 3-7); the range excludes
    // overlong forms (E0, F0), surrogates (ED) and code points above U+10FFFF (F4).
    size_t length;
    uint8_t low = 0x80;
    uint8_t high = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) {
      length = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3;
      if (lead == 0xe0) low = 0xa0;
      if (lead == 0xed) high = 0x9f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4;
      if (lead == 0xf0) low = 0x90;
      if (lead == 0xf4) high = 0x8f;
    } else {
      return i;  // a continuation byte, C0/C1 (always overlong) or F5..FF
    }
    if (n - i < length || p[i + 1] < low || p[i + 1] > high) return i;
    for (size_t k = 2; k < length; ++k) {
      if (!IsContinuation(p[i + k])) return i;
    }
    i += length;
  }
  return n;
}

Status ValidateUtf8(const Array& strings) {
  const int64_t rows = strings.length();
  if (rows == 0) return Status::OK();
  const int32_t* offsets = strings.raw_offsets();
  if (offsets[rows] == offsets[0]) return Status::OK();
  const uint8_t* data = strings.buffer(2)->data();
  const std::string_view all(reinterpret_cast<const char*>(data + offsets[0]),
                             static_cast<size_t>(offsets[rows] - offsets[0]));
  if (IsAscii(data + offsets[0], all.size())) return Status::OK();
  // All the values as one text: if it is valid and no value starts or ends inside a character,
  // every value is valid. Else (a bad value, or bad bytes under a null) look value by value.
  if (ValidUtf8Prefix(all) == all.size()) {
    const int32_t end = offsets[rows];
    int64_t row = 1;
    while (row < rows && (offsets[row] == end || !IsContinuation(data[offsets[row]]))) ++row;
    if (row == rows) return Status::OK();
  }
  for (int64_t row = 0; row < rows; ++row) {
    if (strings.IsNull(row)) continue;  // the bytes of a null slot mean nothing
    const std::string_view value(reinterpret_cast<const char*>(data + offsets[row]),
                                 static_cast<size_t>(offsets[row + 1] - offsets[row]));
    const size_t valid = ValidUtf8Prefix(value);
    if (valid == value.size()) continue;
    std::string bytes;  // the ill-formed sequence's first bytes, in hex
    for (size_t k = valid; k < value.size() && k < valid + 4; ++k) {
      char hex[4];
      std::snprintf(hex, sizeof(hex), " %02x", static_cast<uint8_t>(value[k]));
      bytes += hex;
    }
    return Status::Invalid("row " + std::to_string(row) +
                           " is not valid UTF-8 (ill-formed at byte " + std::to_string(valid) +
                           " of the value:" + bytes + ")");
  }
  return Status::OK();
}

Status ValidateUtf8Tree(const Array& array) {
  if (array.type().id() == TypeId::kString) return ValidateUtf8(array);
  for (int k = 0; k < array.num_children(); ++k) {
    Status st = ValidateUtf8Tree(array.child(k));
    if (!st.ok()) return st.WithContext("child " + Quote(array.type().child(k).name));
  }
  return Status::OK();
}

}  // namespace oxbow::arrow
