#include "oxbow/common/crc32c.h"
#include "oxbow/log/byte_order_internal.h"
#include "oxbow/log/cold_manifest_internal.h"

namespace oxbow::log::internal {

namespace {

constexpr uint32_t kMagic = 0x4D43584F;  // bytes "OXCM"
constexpr uint32_t kVersion = 1;
constexpr int64_t kHeaderSize = 16;  // magic, version, count (int64)
constexpr int64_t kEntrySize = 56;
constexpr int64_t kTrailerSize = 4;  // CRC32C of everything before it

}  // namespace

std::string EncodeColdManifest(const std::vector<ColdSegment>& segments) {
  const int64_t count = static_cast<int64_t>(segments.size());
  std::string out(kHeaderSize + count * kEntrySize + kTrailerSize, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  Put<uint32_t>(p, 0, kMagic);
  Put<uint32_t>(p, 4, kVersion);
  Put<int64_t>(p, 8, count);
  for (int64_t i = 0; i < count; ++i) {
    const ColdSegment& s = segments[i];
    const int64_t at = kHeaderSize + i * kEntrySize;
    Put<int64_t>(p, at, s.base_offset);
    Put<int64_t>(p, at + 8, s.next_offset);
    Put<int64_t>(p, at + 16, s.size);
    Put<int64_t>(p, at + 24, s.index_size);
    Put<int64_t>(p, at + 32, s.time_index_size);
    Put<int64_t>(p, at + 40, s.last_append_ms);
    Put<uint32_t>(p, at + 48, s.crc32c);
    Put<uint32_t>(p, at + 52, 0);
  }
  const int64_t body = kHeaderSize + count * kEntrySize;
  Put<uint32_t>(p, body, crc32c::Value(p, body));
  return out;
}

Result<std::vector<ColdSegment>> DecodeColdManifest(const Buffer& bytes) {
  const uint8_t* p = bytes.data();
  const int64_t size = bytes.size();
  if (size < kHeaderSize + kTrailerSize || Get<uint32_t>(p, 0) != kMagic) {
    return Status::Corruption("cold-segment manifest: not a manifest (" + std::to_string(size) +
                              " bytes)");
  }
  if (Get<uint32_t>(p, 4) != kVersion) {
    return Status::Corruption("cold-segment manifest: unknown version " +
                              std::to_string(Get<uint32_t>(p, 4)));
  }
  const int64_t count = Get<int64_t>(p, 8);
  if (count < 0 || count > (size - kHeaderSize - kTrailerSize) / kEntrySize ||
      size != kHeaderSize + count * kEntrySize + kTrailerSize) {
    return Status::Corruption("cold-segment manifest: " + std::to_string(count) +
                              " entries do not fit its " + std::to_string(size) + " bytes");
  }
  const int64_t body = size - kTrailerSize;
  if (Get<uint32_t>(p, body) != crc32c::Value(p, body)) {
    return Status::Corruption("cold-segment manifest: checksum mismatch");
  }
  std::vector<ColdSegment> segments;
  segments.reserve(count);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t at = kHeaderSize + i * kEntrySize;
    ColdSegment s;
    s.base_offset = Get<int64_t>(p, at);
    s.next_offset = Get<int64_t>(p, at + 8);
    s.size = Get<int64_t>(p, at + 16);
    s.index_size = Get<int64_t>(p, at + 24);
    s.time_index_size = Get<int64_t>(p, at + 32);
    s.last_append_ms = Get<int64_t>(p, at + 40);
    s.crc32c = Get<uint32_t>(p, at + 48);
    const bool contiguous = segments.empty() || segments.back().next_offset == s.base_offset;
    if (s.base_offset < 0 || s.next_offset <= s.base_offset || s.size <= 0 || s.index_size < 0 ||
        s.time_index_size < 0 || !contiguous) {
      return Status::Corruption("cold-segment manifest: entry " + std::to_string(i) +
                                " (base offset " + std::to_string(s.base_offset) +
                                ") is inconsistent");
    }
    segments.push_back(s);
  }
  return segments;
}

}  // namespace oxbow::log::internal
