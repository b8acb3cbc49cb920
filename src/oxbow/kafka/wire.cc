#include "oxbow/kafka/wire.h"

#include <bit>
#include <cstring>

namespace oxbow::kafka {
namespace {

// std::byteswap is C++23.
template <typename T>
T ByteSwap(T v) {
  if constexpr (sizeof(T) == 2) {
    return static_cast<T>(__builtin_bswap16(static_cast<uint16_t>(v)));
  } else if constexpr (sizeof(T) == 4) {
    return static_cast<T>(__builtin_bswap32(static_cast<uint32_t>(v)));
  } else {
    return static_cast<T>(__builtin_bswap64(static_cast<uint64_t>(v)));
  }
}

template <typename T>
T LoadBigEndian(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  if constexpr (std::endian::native == std::endian::little) v = ByteSwap(v);
  return v;
}

template <typename T>
void StoreBigEndian(std::string& out, T v) {
  if constexpr (std::endian::native == std::endian::little) v = ByteSwap(v);
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

}  // namespace

void Reader::Fail(std::string problem) {
  if (status_.ok()) status_ = Status::Invalid(std::move(problem));
  pos_ = data_.size();
}

bool Reader::Need(size_t n, const char* what) {
  if (!status_.ok()) return false;
  if (remaining() < n) {
    Fail(std::string("truncated ") + what + ": needs " + std::to_string(n) + " bytes, " +
         std::to_string(remaining()) + " left");
    return false;
  }
  return true;
}

int8_t Reader::Int8() {
  if (!Need(1, "int8")) return 0;
  return static_cast<int8_t>(data_[pos_++]);
}

#define OXBOW_KAFKA_READ_BE(Name, T, what)       \
  T Reader::Name() {                             \
    if (!Need(sizeof(T), what)) return 0;        \
    T v = LoadBigEndian<T>(data_.data() + pos_); \
    pos_ += sizeof(T);                           \
    return v;                                    \
  }
OXBOW_KAFKA_READ_BE(Int16, int16_t, "int16")
OXBOW_KAFKA_READ_BE(Int32, int32_t, "int32")
OXBOW_KAFKA_READ_BE(Int64, int64_t, "int64")
OXBOW_KAFKA_READ_BE(UInt32, uint32_t, "uint32")
#undef OXBOW_KAFKA_READ_BE

Uuid Reader::ReadUuid() {
  Uuid v{};
  if (!Need(16, "uuid")) return v;
  std::memcpy(v.data(), data_.data() + pos_, 16);
  pos_ += 16;
  return v;
}

uint32_t Reader::UnsignedVarint() {
  uint32_t v = 0;
  for (int shift = 0; shift < 35; shift += 7) {
    if (!Need(1, "varint")) return 0;
    const auto b = static_cast<uint8_t>(data_[pos_++]);
    v |= static_cast<uint32_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return v;
  }
  Fail("varint longer than 5 bytes");
  return 0;
}

int32_t Reader::Varint() {
  const uint32_t u = UnsignedVarint();
  return static_cast<int32_t>((u >> 1) ^ (~(u & 1) + 1));
}

int64_t Reader::Varlong() {
  uint64_t u = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (!Need(1, "varlong")) return 0;
    const auto b = static_cast<uint8_t>(data_[pos_++]);
    u |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
  }
  Fail("varlong longer than 10 bytes");
  return 0;
}

std::string_view Reader::Raw(size_t n) {
  if (!Need(n, "bytes")) return {};
  std::string_view v = data_.substr(pos_, n);
  pos_ += n;
  return v;
}

std::optional<std::string> Reader::NullableString(bool flexible) {
  const int64_t n = flexible ? static_cast<int64_t>(UnsignedVarint()) - 1 : Int16();
  if (!ok() || n < 0) return std::nullopt;
  return std::string(Raw(static_cast<size_t>(n)));
}

std::string Reader::String(bool flexible) {
  auto v = NullableString(flexible);
  if (!v) {
    if (ok()) Fail("null string where the protocol requires one");
    return {};
  }
  return std::move(*v);
}

std::optional<std::string_view> Reader::NullableBytes(bool flexible) {
  const int64_t n = flexible ? static_cast<int64_t>(UnsignedVarint()) - 1 : Int32();
  if (!ok() || n < 0) return std::nullopt;
  return Raw(static_cast<size_t>(n));
}

std::string_view Reader::Bytes(bool flexible) {
  auto v = NullableBytes(flexible);
  if (!v) {
    if (ok()) Fail("null bytes where the protocol requires them");
    return {};
  }
  return *v;
}

int32_t Reader::ArrayLength(bool flexible, bool nullable) {
  const int64_t n = flexible ? static_cast<int64_t>(UnsignedVarint()) - 1 : Int32();
  if (!ok()) return 0;
  if (n < 0) {
    if (!nullable) Fail("null array where the protocol requires one");
    return -1;
  }
  if (static_cast<uint64_t>(n) > remaining()) {
    Fail("array of " + std::to_string(n) + " elements in " + std::to_string(remaining()) +
         " bytes");
    return 0;
  }
  return static_cast<int32_t>(n);
}

void Reader::SkipTaggedFields(bool flexible) {
  if (!flexible) return;
  const uint32_t n = UnsignedVarint();
  for (uint32_t i = 0; i < n && ok(); ++i) {
    (void)UnsignedVarint();  // tag: none is known to the requests we read
    (void)Raw(UnsignedVarint());
  }
}

void Writer::Int16(int16_t v) { StoreBigEndian(out_, v); }
void Writer::Int32(int32_t v) { StoreBigEndian(out_, v); }
void Writer::Int64(int64_t v) { StoreBigEndian(out_, v); }
void Writer::UInt32(uint32_t v) { StoreBigEndian(out_, v); }

void Writer::WriteUuid(const Uuid& v) {
  out_.append(reinterpret_cast<const char*>(v.data()), v.size());
}

void Writer::UnsignedVarint(uint32_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<char>(v));
}

void Writer::Varint(int32_t v) { Varlong(v); }

void Writer::Varlong(int64_t v) {
  uint64_t u = ZigZag(v);
  while (u >= 0x80) {
    out_.push_back(static_cast<char>((u & 0x7f) | 0x80));
    u >>= 7;
  }
  out_.push_back(static_cast<char>(u));
}

void Writer::String(std::string_view v, bool flexible) {
  if (flexible) {
    UnsignedVarint(static_cast<uint32_t>(v.size() + 1));
  } else {
    Int16(static_cast<int16_t>(v.size()));
  }
  out_.append(v);
}

void Writer::NullableString(const std::optional<std::string>& v, bool flexible) {
  if (v) return String(*v, flexible);
  if (flexible) {
    UnsignedVarint(0);
  } else {
    Int16(-1);
  }
}

void Writer::Bytes(std::string_view v, bool flexible) {
  if (flexible) {
    UnsignedVarint(static_cast<uint32_t>(v.size() + 1));
  } else {
    Int32(static_cast<int32_t>(v.size()));
  }
  out_.append(v);
}

void Writer::NullableBytes(const std::optional<std::string_view>& v, bool flexible) {
  if (v) return Bytes(*v, flexible);
  if (flexible) {
    UnsignedVarint(0);
  } else {
    Int32(-1);
  }
}

void Writer::ArrayLength(int32_t n, bool flexible) {
  if (flexible) {
    UnsignedVarint(static_cast<uint32_t>(n + 1));
  } else {
    Int32(n);
  }
}

void Writer::PatchInt32(size_t pos, int32_t v) {
  if constexpr (std::endian::native == std::endian::little) v = ByteSwap(v);
  std::memcpy(out_.data() + pos, &v, sizeof(v));
}

int VarintSize(int64_t value) {
  uint64_t u = ZigZag(value);
  int n = 1;
  while (u >= 0x80) {
    u >>= 7;
    ++n;
  }
  return n;
}

}  // namespace oxbow::kafka
