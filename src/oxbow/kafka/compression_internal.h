// The codecs of Kafka record batches, each in the framing Kafka's clients use: gzip (RFC 1952),
// snappy (xerial's block framing, or one raw block), lz4 (frame format) and zstd (frames).
// Decompressed sizes are unknown up front; they are bounded by kMaxDecompressedBytes.
#pragma once

#include <string>
#include <string_view>

#include "oxbow/kafka/records.h"

namespace oxbow::kafka::internal {

Result<std::string> Decompress(Compression codec, std::string_view input);
Result<std::string> Compress(Compression codec, std::string_view input);

}  // namespace oxbow::kafka::internal
