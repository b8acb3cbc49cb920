// Buffer codecs used by Arrow IPC body compression: LZ4 frame format and zstd.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "oxbow/common/buffer.h"
#include "oxbow/common/status.h"

namespace oxbow::arrow {

enum class Codec : uint8_t {
  kNone,
  kLz4Frame,  // LZ4 frame format (lz4frame.h), CompressionType.LZ4_FRAME in Message.fbs
  kZstd,      // zstd frame, CompressionType.ZSTD in Message.fbs
};

// "none", "lz4", "zstd".
std::string_view CodecName(Codec codec);
// Parses "none"/"uncompressed", "lz4"/"lz4_frame", "zstd".
Result<Codec> ParseCodec(std::string_view name);

// Compresses `input`. `level` applies to zstd (ignored for lz4).
Result<std::shared_ptr<Buffer>> Compress(Codec codec, std::string_view input, int level = 1);

// Decompresses `input`, which must expand to exactly `uncompressed_size` bytes.
Result<std::shared_ptr<Buffer>> Decompress(Codec codec, std::string_view input,
                                           int64_t uncompressed_size);

// Worst-case compressed size of `input_size` bytes.
int64_t MaxCompressedLength(Codec codec, int64_t input_size);
// Compresses into `dst` (capacity >= MaxCompressedLength); returns the bytes written.
Result<int64_t> CompressInto(Codec codec, std::string_view input, int level, uint8_t* dst,
                             int64_t capacity);
// Decompresses into `dst`; `input` must expand to exactly `uncompressed_size` bytes.
Status DecompressInto(Codec codec, std::string_view input, uint8_t* dst, int64_t uncompressed_size);

// Decompresses only the first `prefix_size` bytes of `input` into `dst`; the rest of the
// input is not examined. Fails if `input` expands to fewer bytes.
Status DecompressPrefixInto(Codec codec, std::string_view input, uint8_t* dst, int64_t prefix_size);

}  // namespace oxbow::arrow
