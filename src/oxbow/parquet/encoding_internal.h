// RLE / bit-packed hybrid encoding (Encodings.md, "Run Length Encoding / Bit-Packing Hybrid"),
// page compression codecs and the page checksum. Internal to the parquet module.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "oxbow/common/status.h"
#include "oxbow/parquet/metadata.h"

namespace oxbow::parquet::internal {

// Number of bits needed to store values in [0, max_value].
inline int BitWidthFor(uint64_t max_value) {
  return max_value == 0 ? 0 : 64 - __builtin_clzll(max_value);
}

// Appends the hybrid encoding of `values` (each < 2^bit_width, bit_width in [0, 32]) to `out`.
// Runs of 8 or more equal values become RLE runs; the rest is bit-packed in groups of 8.
void RleEncode(const uint32_t* values, int64_t n, int bit_width, std::string* out);
// Appends one RLE run of `count` copies of `value`.
void RleEncodeRun(uint32_t value, int64_t count, int bit_width, std::string* out);

// Decodes the hybrid encoding from a bounded byte range.
class RleDecoder {
 public:
  RleDecoder() = default;
  RleDecoder(const uint8_t* data, int64_t size, int bit_width)
      : pos_(data), end_(data + size), bit_width_(bit_width) {}

  // Decodes exactly n values, or fails with Corruption when the data runs out.
  Status GetBatch(uint32_t* out, int64_t n);

 private:
  Status NextRun();

  const uint8_t* pos_ = nullptr;
  const uint8_t* end_ = nullptr;
  int bit_width_ = 0;
  int64_t repeat_left_ = 0;
  uint32_t repeat_value_ = 0;
  int64_t literal_left_ = 0;
  const uint8_t* literal_ = nullptr;  // start of the current bit-packed run
  const uint8_t* literal_end_ = nullptr;
  int64_t literal_bit_ = 0;  // bit position of the next literal value
};

// Decodes a DELTA_BINARY_PACKED stream (Encodings.md) holding exactly `count` values into `out`
// (64-bit wrapping arithmetic; INT32 columns truncate). *consumed is the stream's byte length.
Status DeltaBinaryPackedDecode(const uint8_t* data, int64_t size, int64_t count, int64_t* out,
                               int64_t* consumed);

// The most bytes CompressTo can write for `n` input bytes.
size_t CompressBound(Codec codec, size_t n);
// Compresses `n` bytes into `out` (`capacity` >= CompressBound(codec, n)); *written says how
// many bytes it wrote. `level` applies to ZSTD and GZIP (0 = default).
Status CompressTo(Codec codec, int level, const uint8_t* in, size_t n, uint8_t* out,
                  size_t capacity, size_t* written);
// The same, appending to `out`.
Status Compress(Codec codec, int level, const uint8_t* in, size_t n, std::string* out);
// Decompresses into exactly `out_size` bytes; any other outcome is Corruption.
Status Decompress(Codec codec, const uint8_t* in, size_t n, uint8_t* out, size_t out_size);
// Whether this build can read or write pages compressed with `codec`.
bool CodecSupported(Codec codec);

// PageHeader.crc as parquet.thrift defines it: the standard CRC-32 (polynomial 0x04C11DB7,
// reflected, as gzip and zlib's crc32()) of the page bytes that follow the header on disk.
// Extends `crc` (0 to start) over `n` bytes.
uint32_t PageCrc(uint32_t crc, const uint8_t* data, size_t n);

}  // namespace oxbow::parquet::internal
