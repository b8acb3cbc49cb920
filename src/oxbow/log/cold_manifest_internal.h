// The cold-segment manifest of a bucket log: which sealed segments live in the cold store, with
// what size and checksum. It is the local file <bucket dir>/cold-segments, replaced atomically;
// a segment is listed only once its upload was verified. The byte layout is documented in
// docs/log-format.md#cold-segment-manifest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "oxbow/common/buffer.h"
#include "oxbow/common/status.h"

namespace oxbow::log::internal {

inline constexpr char kColdManifestName[] = "cold-segments";

struct ColdSegment {
  int64_t base_offset = 0;
  int64_t next_offset = 0;      // offset after its last batch
  int64_t size = 0;             // bytes of the .log object
  int64_t index_size = 0;       // bytes of the .index object
  int64_t time_index_size = 0;  // bytes of the .timeindex object
  int64_t last_append_ms = 0;   // newest append time in it (retention by age)
  uint32_t crc32c = 0;          // CRC32C of the whole .log object

  bool operator==(const ColdSegment&) const = default;
};

// Segments oldest first, each starting where the previous one ended.
std::string EncodeColdManifest(const std::vector<ColdSegment>& segments);
// Corruption naming the problem for anything EncodeColdManifest did not write.
Result<std::vector<ColdSegment>> DecodeColdManifest(const Buffer& bytes);

}  // namespace oxbow::log::internal
