#include <lz4frame.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <memory>

#include "oxbow/kafka/compression_internal.h"
#include "oxbow/kafka/wire.h"

namespace oxbow::kafka::internal {
namespace {

// xerial snappy-java's stream header: magic, then version 1 and compatible version 1.
constexpr char kXerialMagic[] = "\x82SNAPPY\0";
constexpr size_t kXerialMagicSize = 8;
constexpr size_t kXerialHeaderSize = 16;
constexpr size_t kXerialBlockSize = 32 * 1024;

Status TooLarge(const char* codec) {
  return Status::Invalid(std::string(codec) + " data expands beyond " +
                         std::to_string(kMaxDecompressedBytes) + " bytes");
}

Result<std::string> Gunzip(std::string_view input) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return Status::Internal("zlib inflateInit2 failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&z, inflateEnd);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  z.avail_in = static_cast<uInt>(input.size());
  std::string out;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (out.size() >= kMaxDecompressedBytes) return TooLarge("gzip");
    const size_t old = out.size();
    out.resize(old + std::max<size_t>(64 * 1024, input.size() * 2));
    z.next_out = reinterpret_cast<Bytef*>(out.data() + old);
    z.avail_out = static_cast<uInt>(out.size() - old);
    rc = inflate(&z, Z_NO_FLUSH);
    out.resize(out.size() - z.avail_out);
    if (rc == Z_BUF_ERROR && z.avail_in == 0) return Status::Invalid("gzip data is truncated");
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
      return Status::Invalid(std::string("gzip data is corrupt: ") + (z.msg ? z.msg : "inflate"));
    }
  }
  return out;
}

Status SnappyBlock(std::string_view block, std::string* out) {
  size_t n = 0;
  if (!snappy::GetUncompressedLength(block.data(), block.size(), &n)) {
    return Status::Invalid("snappy block has a corrupt length");
  }
  if (out->size() + n > kMaxDecompressedBytes) return TooLarge("snappy");
  const size_t old = out->size();
  out->resize(old + n);
  if (!snappy::RawUncompress(block.data(), block.size(), out->data() + old)) {
    return Status::Invalid("snappy block is corrupt");
  }
  return Status::OK();
}

Result<std::string> Unsnappy(std::string_view input) {
  std::string out;
  if (input.size() < kXerialHeaderSize ||
      std::memcmp(input.data(), kXerialMagic, kXerialMagicSize) != 0) {
    RETURN_NOT_OK(SnappyBlock(input, &out));
    return out;
  }
  Reader reader(input.substr(kXerialHeaderSize));
  while (reader.ok() && reader.remaining() > 0) {
    const int32_t n = reader.Int32();
    if (n < 0) return Status::Invalid("xerial snappy block has negative length");
    std::string_view block = reader.Raw(static_cast<size_t>(n));
    if (!reader.ok()) break;
    RETURN_NOT_OK(SnappyBlock(block, &out));
  }
  if (!reader.ok()) return reader.status().WithContext("xerial snappy");
  return out;
}

Result<std::string> Unlz4(std::string_view input) {
  LZ4F_dctx* ctx = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&ctx, LZ4F_VERSION))) {
    return Status::Internal("LZ4F_createDecompressionContext failed");
  }
  std::unique_ptr<LZ4F_dctx, size_t (*)(LZ4F_dctx*)> guard(ctx, LZ4F_freeDecompressionContext);
  std::string out;
  const char* src = input.data();
  size_t left = input.size();
  size_t hint = 1;
  while (left > 0 && hint != 0) {
    if (out.size() >= kMaxDecompressedBytes) return TooLarge("lz4");
    const size_t old = out.size();
    out.resize(old + 64 * 1024);
    size_t dst_size = out.size() - old;
    size_t src_size = left;
    hint = LZ4F_decompress(ctx, out.data() + old, &dst_size, src, &src_size, nullptr);
    if (LZ4F_isError(hint)) {
      return Status::Invalid(std::string("lz4 data is corrupt: ") + LZ4F_getErrorName(hint));
    }
    out.resize(old + dst_size);
    src += src_size;
    left -= src_size;
    if (src_size == 0 && dst_size == 0) break;
  }
  if (hint != 0) return Status::Invalid("lz4 frame is truncated");
  return out;
}

Result<std::string> Unzstd(std::string_view input) {
  ZSTD_DStream* ds = ZSTD_createDStream();
  if (ds == nullptr) return Status::Internal("ZSTD_createDStream failed");
  std::unique_ptr<ZSTD_DStream, size_t (*)(ZSTD_DStream*)> guard(ds, ZSTD_freeDStream);
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  std::string out;
  size_t rc = 1;
  while (in.pos < in.size || rc != 0) {
    if (out.size() >= kMaxDecompressedBytes) return TooLarge("zstd");
    const size_t old = out.size();
    out.resize(old + ZSTD_DStreamOutSize());
    ZSTD_outBuffer o{out.data() + old, out.size() - old, 0};
    const size_t before = in.pos;
    rc = ZSTD_decompressStream(ds, &o, &in);
    if (ZSTD_isError(rc)) {
      return Status::Invalid(std::string("zstd data is corrupt: ") + ZSTD_getErrorName(rc));
    }
    out.resize(old + o.pos);
    if (in.pos == before && o.pos == 0) break;
  }
  if (rc != 0) return Status::Invalid("zstd frame is truncated");
  return out;
}

Result<std::string> Gzip(std::string_view input) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return Status::Internal("zlib deflateInit2 failed");
  }
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&z, deflateEnd);
  std::string out(deflateBound(&z, static_cast<uLong>(input.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  z.avail_in = static_cast<uInt>(input.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) return Status::Internal("zlib deflate failed");
  out.resize(z.total_out);
  return out;
}

std::string Snappy(std::string_view input) {
  Writer w;
  w.Raw(std::string_view(kXerialMagic, kXerialMagicSize));
  w.Int32(1);
  w.Int32(1);
  for (size_t pos = 0; pos < input.size(); pos += kXerialBlockSize) {
    std::string block;
    snappy::Compress(input.data() + pos, std::min(kXerialBlockSize, input.size() - pos), &block);
    w.Int32(static_cast<int32_t>(block.size()));
    w.Raw(block);
  }
  return w.Take();
}

Result<std::string> Lz4(std::string_view input) {
  std::string out(LZ4F_compressFrameBound(input.size(), nullptr), '\0');
  const size_t n = LZ4F_compressFrame(out.data(), out.size(), input.data(), input.size(), nullptr);
  if (LZ4F_isError(n)) return Status::Internal(std::string("lz4: ") + LZ4F_getErrorName(n));
  out.resize(n);
  return out;
}

Result<std::string> Zstd(std::string_view input) {
  std::string out(ZSTD_compressBound(input.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), input.data(), input.size(), 1);
  if (ZSTD_isError(n)) return Status::Internal(std::string("zstd: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

}  // namespace

Result<std::string> Decompress(Compression codec, std::string_view input) {
  switch (codec) {
    case Compression::kNone: return std::string(input);
    case Compression::kGzip: return Gunzip(input);
    case Compression::kSnappy: return Unsnappy(input);
    case Compression::kLz4: return Unlz4(input);
    case Compression::kZstd: return Unzstd(input);
  }
  return Status::Invalid("unknown compression codec " + std::to_string(static_cast<int>(codec)));
}

Result<std::string> Compress(Compression codec, std::string_view input) {
  switch (codec) {
    case Compression::kNone: return std::string(input);
    case Compression::kGzip: return Gzip(input);
    case Compression::kSnappy: return Snappy(input);
    case Compression::kLz4: return Lz4(input);
    case Compression::kZstd: return Zstd(input);
  }
  return Status::Invalid("unknown compression codec " + std::to_string(static_cast<int>(codec)));
}

}  // namespace oxbow::kafka::internal
