#include <libdeflate.h>
#include <lz4.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <memory>

#include "oxbow/parquet/encoding_internal.h"

namespace oxbow::parquet::internal {

namespace {

uint8_t* PutVarint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// Bit-packs values[0, n) (n rounded up to a multiple of 8 with zeros) LSB first.
uint8_t* BitPack(const uint32_t* values, int64_t n, int bit_width, uint8_t* p) {
  uint64_t acc = 0;
  int bits = 0;
  const int64_t padded = (n + 7) / 8 * 8;
  for (int64_t i = 0; i < padded; ++i) {
    const uint64_t v = i < n ? values[i] : 0;
    acc |= v << bits;
    bits += bit_width;
    while (bits >= 8) {
      *p++ = static_cast<uint8_t>(acc);
      acc >>= 8;
      bits -= 8;
    }
  }
  return p;
}

void AppendLiteral(const uint32_t* values, int64_t n, int bit_width, std::string* out) {
  if (n == 0) return;
  const int64_t groups = (n + 7) / 8;
  const size_t old = out->size();
  out->resize(old + 10 + static_cast<size_t>(groups * bit_width));
  auto* start = reinterpret_cast<uint8_t*>(out->data()) + old;
  uint8_t* p = PutVarint(start, static_cast<uint64_t>(groups) << 1 | 1);
  p = BitPack(values, n, bit_width, p);
  out->resize(old + static_cast<size_t>(p - start));
}

}  // namespace

void RleEncodeRun(uint32_t value, int64_t count, int bit_width, std::string* out) {
  if (count == 0) return;
  uint8_t buf[16];
  uint8_t* p = PutVarint(buf, static_cast<uint64_t>(count) << 1);
  const int value_bytes = (bit_width + 7) / 8;
  for (int i = 0; i < value_bytes; ++i) *p++ = static_cast<uint8_t>(value >> (8 * i));
  out->append(reinterpret_cast<const char*>(buf), static_cast<size_t>(p - buf));
}

void RleEncode(const uint32_t* values, int64_t n, int bit_width, std::string* out) {
  int64_t literal_start = 0;
  int64_t i = 0;
  while (i < n) {
    const uint32_t v = values[i];
    int64_t j = i + 1;
    while (j < n && values[j] == v) ++j;
    const int64_t run = j - i;
    if (run >= 8) {
      // Literal groups must be full, so lend the run enough values to fill the last group.
      const int64_t pending = i - literal_start;
      const int64_t pad = (8 - pending % 8) % 8;
      if (run - pad >= 8) {
        AppendLiteral(values + literal_start, pending + pad, bit_width, out);
        RleEncodeRun(v, run - pad, bit_width, out);
        literal_start = j;
      }
    }
    i = j;
  }
  AppendLiteral(values + literal_start, n - literal_start, bit_width, out);
}

Status RleDecoder::NextRun() {
  uint64_t header = 0;
  for (int shift = 0;; shift += 7) {
    if (pos_ >= end_) return Status::Corruption("RLE data ends inside a run header");
    if (shift > 63) return Status::Corruption("RLE run header varint too long");
    const uint8_t b = *pos_++;
    header |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  if (header & 1) {
    const uint64_t groups = header >> 1;
    if (groups == 0 || groups > (uint64_t{1} << 40)) {
      return Status::Corruption("RLE bit-packed run with " + std::to_string(groups) + " groups");
    }
    const uint64_t bytes = groups * static_cast<uint64_t>(bit_width_);
    const auto avail = static_cast<uint64_t>(end_ - pos_);
    literal_ = pos_;
    if (bytes <= avail) {
      literal_end_ = pos_ + bytes;
      literal_left_ = static_cast<int64_t>(groups * 8);
    } else {
      // A truncated last run: keep the values that are present.
      literal_end_ = end_;
      literal_left_ = bit_width_ == 0 ? static_cast<int64_t>(groups * 8)
                                      : static_cast<int64_t>(avail * 8 / bit_width_);
    }
    literal_bit_ = 0;
    pos_ = literal_end_;
  } else {
    const uint64_t count = header >> 1;
    if (count == 0) return Status::Corruption("RLE run of length zero");
    if (count > (uint64_t{1} << 40)) return Status::Corruption("RLE run length too large");
    const int value_bytes = (bit_width_ + 7) / 8;
    if (end_ - pos_ < value_bytes) return Status::Corruption("RLE data ends inside a run value");
    uint32_t value = 0;
    for (int i = 0; i < value_bytes; ++i) value |= static_cast<uint32_t>(pos_[i]) << (8 * i);
    pos_ += value_bytes;
    if (bit_width_ < 32 && (value >> bit_width_) != 0) {
      return Status::Corruption("RLE run value wider than " + std::to_string(bit_width_) + " bits");
    }
    repeat_value_ = value;
    repeat_left_ = static_cast<int64_t>(count);
  }
  return Status::OK();
}

Status RleDecoder::GetBatch(uint32_t* out, int64_t n) {
  const uint64_t mask = bit_width_ == 0 ? 0 : (uint64_t{1} << bit_width_) - 1;
  while (n > 0) {
    if (repeat_left_ > 0) {
      const int64_t k = std::min(n, repeat_left_);
      std::fill(out, out + k, repeat_value_);
      out += k;
      n -= k;
      repeat_left_ -= k;
    } else if (literal_left_ > 0) {
      const int64_t k = std::min(n, literal_left_);
      const auto total_bytes = static_cast<int64_t>(literal_end_ - literal_);
      // Bytes past the run up to the end of the data may be loaded too (the mask drops them):
      // short runs, such as those of definition levels, then take the fast path as well.
      const auto loadable = static_cast<int64_t>(end_ - literal_);
      int64_t bit = literal_bit_;
      int64_t i = 0;
      // Fast path: an unaligned 8-byte load covers any value up to 32 bits wide.
      for (; i < k && (bit >> 3) + 8 <= loadable; ++i, bit += bit_width_) {
        uint64_t word;
        std::memcpy(&word, literal_ + (bit >> 3), 8);
        out[i] = static_cast<uint32_t>((word >> (bit & 7)) & mask);
      }
      for (; i < k; ++i, bit += bit_width_) {
        uint64_t word = 0;
        const int64_t byte = bit >> 3;
        for (int64_t b = 0; b < 8 && byte + b < total_bytes; ++b) {
          word |= static_cast<uint64_t>(literal_[byte + b]) << (8 * b);
        }
        out[i] = static_cast<uint32_t>((word >> (bit & 7)) & mask);
      }
      literal_bit_ = bit;
      out += k;
      n -= k;
      literal_left_ -= k;
    } else {
      RETURN_NOT_OK(NextRun());
    }
  }
  return Status::OK();
}

namespace {

Status ReadUleb(const uint8_t*& p, const uint8_t* end, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p >= end) return Status::Corruption("DELTA_BINARY_PACKED: truncated varint");
    const uint8_t b = *p++;
    result |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = result;
      return Status::OK();
    }
  }
  return Status::Corruption("DELTA_BINARY_PACKED: varint too long");
}

Status ReadZigZag64(const uint8_t*& p, const uint8_t* end, int64_t* v) {
  uint64_t u;
  RETURN_NOT_OK(ReadUleb(p, end, &u));
  *v = static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1);
  return Status::OK();
}

// The `index`-th `width`-bit value (width <= 64) of a little-endian bit-packed run.
uint64_t Unpack(const uint8_t* p, int64_t index, int width) {
  if (width == 0) return 0;
  const int64_t bit = index * width;
  const uint8_t* b = p + (bit >> 3);
  const int shift = static_cast<int>(bit & 7);
  const int bytes = (shift + width + 7) / 8;
  unsigned __int128 acc = 0;
  for (int i = 0; i < bytes; ++i) acc |= static_cast<unsigned __int128>(b[i]) << (8 * i);
  acc >>= shift;
  return width == 64 ? static_cast<uint64_t>(acc)
                     : static_cast<uint64_t>(acc) & ((uint64_t{1} << width) - 1);
}

}  // namespace

Status DeltaBinaryPackedDecode(const uint8_t* data, int64_t size, int64_t count, int64_t* out,
                               int64_t* consumed) {
  const uint8_t* p = data;
  const uint8_t* end = data + size;
  uint64_t block_size, miniblocks, total;
  int64_t first;
  RETURN_NOT_OK(ReadUleb(p, end, &block_size));
  RETURN_NOT_OK(ReadUleb(p, end, &miniblocks));
  RETURN_NOT_OK(ReadUleb(p, end, &total));
  RETURN_NOT_OK(ReadZigZag64(p, end, &first));
  if (block_size == 0 || block_size > (1u << 20) || miniblocks == 0 || miniblocks > block_size ||
      block_size % miniblocks != 0 || (block_size / miniblocks) % 8 != 0) {
    return Status::Corruption("DELTA_BINARY_PACKED: bad block size " + std::to_string(block_size) +
                              " / miniblocks " + std::to_string(miniblocks));
  }
  if (total != static_cast<uint64_t>(count)) {
    return Status::Corruption("DELTA_BINARY_PACKED: stream holds " + std::to_string(total) +
                              " values, page needs " + std::to_string(count));
  }
  const int64_t per_miniblock = static_cast<int64_t>(block_size / miniblocks);
  int64_t produced = 0;
  uint64_t prev = static_cast<uint64_t>(first);
  if (count > 0) out[produced++] = first;
  while (produced < count) {
    int64_t min_delta;
    RETURN_NOT_OK(ReadZigZag64(p, end, &min_delta));
    if (static_cast<uint64_t>(end - p) < miniblocks) {
      return Status::Corruption("DELTA_BINARY_PACKED: truncated bit widths");
    }
    const uint8_t* widths = p;
    p += miniblocks;
    for (uint64_t m = 0; m < miniblocks && produced < count; ++m) {
      const int w = widths[m];
      if (w > 64) return Status::Corruption("DELTA_BINARY_PACKED: bit width " + std::to_string(w));
      const int64_t bytes = per_miniblock * w / 8;
      if (bytes > end - p) return Status::Corruption("DELTA_BINARY_PACKED: truncated miniblock");
      for (int64_t k = 0; k < per_miniblock && produced < count; ++k) {
        prev += static_cast<uint64_t>(min_delta) + Unpack(p, k, w);
        out[produced++] = static_cast<int64_t>(prev);
      }
      p += bytes;
    }
  }
  *consumed = p - data;
  return Status::OK();
}

bool CodecSupported(Codec codec) {
  switch (codec) {
    case Codec::kUncompressed:
    case Codec::kSnappy:
    case Codec::kGzip:
    case Codec::kZstd:
    case Codec::kLz4Raw: return true;
    default: return false;
  }
}

namespace {

// One zstd context per thread for every page it compresses or decompresses: ZSTD_compress and
// ZSTD_decompress allocate and set up a fresh context per call, per page (the same bytes out).
ZSTD_CCtx* ThreadCompressionContext() {
  thread_local std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> context(ZSTD_createCCtx(),
                                                                          ZSTD_freeCCtx);
  return context.get();
}

ZSTD_DCtx* ThreadDecompressionContext() {
  thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> context(ZSTD_createDCtx(),
                                                                          ZSTD_freeDCtx);
  return context.get();
}

}  // namespace

size_t CompressBound(Codec codec, size_t n) {
  switch (codec) {
    case Codec::kSnappy: return snappy::MaxCompressedLength(n);
    case Codec::kZstd: return ZSTD_compressBound(n);
    case Codec::kLz4Raw:
      return n > static_cast<size_t>(LZ4_MAX_INPUT_SIZE)
                 ? n
                 : static_cast<size_t>(LZ4_compressBound(static_cast<int>(n)));
    case Codec::kGzip: return compressBound(static_cast<uLong>(n)) + 32;  // + the gzip wrapper
    default: return n;
  }
}

Status CompressTo(Codec codec, int level, const uint8_t* in, size_t n, uint8_t* out,
                  size_t capacity, size_t* written) {
  switch (codec) {
    case Codec::kUncompressed:
      if (capacity < n) return Status::Internal("no room for an uncompressed page");
      if (n > 0) std::memcpy(out, in, n);
      *written = n;
      return Status::OK();
    case Codec::kSnappy:
      if (capacity < snappy::MaxCompressedLength(n)) {
        return Status::Internal("no room for a snappy page");
      }
      snappy::RawCompress(reinterpret_cast<const char*>(in), n, reinterpret_cast<char*>(out),
                          written);
      return Status::OK();
    case Codec::kZstd: {
      ZSTD_CCtx* context = ThreadCompressionContext();
      if (context == nullptr) return Status::ResourceExhausted("cannot allocate a zstd context");
      const size_t r = ZSTD_compressCCtx(context, out, capacity, in, n, level == 0 ? 1 : level);
      if (ZSTD_isError(r)) {
        return Status::Internal(std::string("zstd compression failed: ") + ZSTD_getErrorName(r));
      }
      *written = r;
      return Status::OK();
    }
    case Codec::kLz4Raw: {
      if (n > static_cast<size_t>(LZ4_MAX_INPUT_SIZE)) {
        return Status::Invalid("page too large for LZ4: " + std::to_string(n) + " bytes");
      }
      const int r = LZ4_compress_default(reinterpret_cast<const char*>(in),
                                         reinterpret_cast<char*>(out), static_cast<int>(n),
                                         static_cast<int>(std::min<size_t>(capacity, INT32_MAX)));
      if (r <= 0 && n > 0) return Status::Internal("lz4 compression failed");
      *written = static_cast<size_t>(r);
      return Status::OK();
    }
    case Codec::kGzip: {
      z_stream z{};
      if (deflateInit2(&z, level == 0 ? Z_DEFAULT_COMPRESSION : level, Z_DEFLATED, 15 + 16, 8,
                       Z_DEFAULT_STRATEGY) != Z_OK) {
        return Status::Internal("zlib deflateInit2 failed");
      }
      z.next_in = const_cast<Bytef*>(in);
      z.avail_in = static_cast<uInt>(n);
      z.next_out = out;
      z.avail_out = static_cast<uInt>(capacity);
      const int r = deflate(&z, Z_FINISH);
      *written = z.total_out;
      deflateEnd(&z);
      if (r != Z_STREAM_END) return Status::Internal("zlib deflate failed");
      return Status::OK();
    }
    default:
      return Status::NotImplemented("compression codec " + std::string(CodecName(codec)) +
                                    " is not supported");
  }
}

Status Compress(Codec codec, int level, const uint8_t* in, size_t n, std::string* out) {
  const size_t old = out->size();
  out->resize(old + CompressBound(codec, n));
  size_t written = 0;
  Status st = CompressTo(codec, level, in, n, reinterpret_cast<uint8_t*>(out->data()) + old,
                         out->size() - old, &written);
  out->resize(st.ok() ? old + written : old);
  return st;
}

Status Decompress(Codec codec, const uint8_t* in, size_t n, uint8_t* out, size_t out_size) {
  const auto mismatch = [&](size_t got) {
    return Status::Corruption(std::string(CodecName(codec)) + " page decompressed to " +
                              std::to_string(got) + " bytes, header says " +
                              std::to_string(out_size));
  };
  switch (codec) {
    case Codec::kUncompressed:
      if (n != out_size) return mismatch(n);
      if (n > 0) std::memcpy(out, in, n);
      return Status::OK();
    case Codec::kSnappy: {
      size_t len = 0;
      if (!snappy::GetUncompressedLength(reinterpret_cast<const char*>(in), n, &len)) {
        return Status::Corruption("SNAPPY page has a bad length header");
      }
      if (len != out_size) return mismatch(len);
      if (!snappy::RawUncompress(reinterpret_cast<const char*>(in), n,
                                 reinterpret_cast<char*>(out))) {
        return Status::Corruption("SNAPPY page is corrupt");
      }
      return Status::OK();
    }
    case Codec::kZstd: {
      ZSTD_DCtx* context = ThreadDecompressionContext();
      if (context == nullptr) return Status::ResourceExhausted("cannot allocate a zstd context");
      const size_t r = ZSTD_decompressDCtx(context, out, out_size, in, n);
      if (ZSTD_isError(r)) {
        return Status::Corruption(std::string("ZSTD page is corrupt: ") + ZSTD_getErrorName(r));
      }
      if (r != out_size) return mismatch(r);
      return Status::OK();
    }
    case Codec::kLz4Raw: {
      if (n > static_cast<size_t>(INT32_MAX) || out_size > static_cast<size_t>(INT32_MAX)) {
        return Status::Corruption("LZ4_RAW page too large");
      }
      const int r =
          LZ4_decompress_safe(reinterpret_cast<const char*>(in), reinterpret_cast<char*>(out),
                              static_cast<int>(n), static_cast<int>(out_size));
      if (r < 0) return Status::Corruption("LZ4_RAW page is corrupt");
      if (static_cast<size_t>(r) != out_size) return mismatch(static_cast<size_t>(r));
      return Status::OK();
    }
    case Codec::kGzip: {
      z_stream z{};
      if (inflateInit2(&z, 15 + 32) != Z_OK) return Status::Internal("zlib inflateInit2 failed");
      z.next_in = const_cast<Bytef*>(in);
      z.avail_in = static_cast<uInt>(n);
      z.next_out = out;
      z.avail_out = static_cast<uInt>(out_size);
      const int r = inflate(&z, Z_FINISH);
      const size_t got = z.total_out;
      inflateEnd(&z);
      if (r != Z_STREAM_END) {
        return got == out_size ? Status::Corruption("GZIP page is corrupt or has trailing data")
                               : mismatch(got);
      }
      if (got != out_size) return mismatch(got);
      return Status::OK();
    }
    default:
      return Status::NotImplemented("compression codec " + std::string(CodecName(codec)) +
                                    " is not supported");
  }
}

// libdeflate's CRC-32 folds with PCLMULQDQ/AVX where the CPU has them (zlib 1.2.13's is
// table-driven: 4 instructions a byte, a fifth of a snappy read's instructions).
uint32_t PageCrc(uint32_t crc, const uint8_t* data, size_t n) {
  return libdeflate_crc32(crc, data, n);
}

}  // namespace oxbow::parquet::internal
