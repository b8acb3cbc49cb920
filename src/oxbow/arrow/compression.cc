#include "oxbow/arrow/compression.h"

#include <lz4frame.h>
#include <zstd.h>

#include <cstring>
#include <string>

namespace oxbow::arrow {

namespace {

// Per-thread codec contexts, so that compressing many small buffers does not allocate.
struct ZstdContexts {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  ~ZstdContexts() {
    ZSTD_freeCCtx(cctx);
    ZSTD_freeDCtx(dctx);
  }
};
ZstdContexts& Zstd() {
  thread_local ZstdContexts contexts;
  return contexts;
}

struct Lz4Context {
  LZ4F_dctx* dctx = nullptr;
  Lz4Context() {
    if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION))) dctx = nullptr;
  }
  ~Lz4Context() { LZ4F_freeDecompressionContext(dctx); }
};
Lz4Context& Lz4() {
  thread_local Lz4Context context;
  return context;
}

struct Lz4Decoded {
  int64_t produced = 0;      // bytes written to dst
  size_t unread = 0;         // input bytes not consumed
  bool frame_ended = false;  // the decoder saw the frame's end
};

// Decodes the lz4 frame at the start of `input` into dst[0, capacity) until the frame ends, the
// decoder stops making progress (truncated input, or a full dst), or, with `stop_when_full`, dst
// is full.
Result<Lz4Decoded> DecodeLz4Frame(std::string_view input, uint8_t* dst, int64_t capacity,
                                  bool stop_when_full) {
  LZ4F_dctx* dctx = Lz4().dctx;
  if (dctx == nullptr) return Status::ResourceExhausted("cannot create an lz4 context");
  LZ4F_resetDecompressionContext(dctx);
  const char* src = input.data();
  Lz4Decoded out;
  out.unread = input.size();
  while (!stop_when_full || out.produced < capacity) {
    size_t dst_size = static_cast<size_t>(capacity - out.produced);
    size_t src_size = out.unread;
    size_t hint = LZ4F_decompress(dctx, dst + out.produced, &dst_size, src, &src_size, nullptr);
    if (LZ4F_isError(hint)) {
      LZ4F_resetDecompressionContext(dctx);
      return Status::Invalid(std::string("lz4 frame is corrupt: ") + LZ4F_getErrorName(hint));
    }
    out.produced += static_cast<int64_t>(dst_size);
    src += src_size;
    out.unread -= src_size;
    if (hint == 0) {
      out.frame_ended = true;
      break;
    }
    if (src_size == 0 && dst_size == 0) break;
  }
  LZ4F_resetDecompressionContext(dctx);
  return out;
}

LZ4F_preferences_t Lz4Preferences(int64_t input_size) {
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.contentSize = static_cast<unsigned long long>(input_size);
  return prefs;
}

}  // namespace

std::string_view CodecName(Codec codec) {
  switch (codec) {
    case Codec::kNone: return "none";
    case Codec::kLz4Frame: return "lz4";
    case Codec::kZstd: return "zstd";
  }
  return "unknown";
}

Result<Codec> ParseCodec(std::string_view name) {
  if (name == "none" || name == "uncompressed") return Codec::kNone;
  if (name == "lz4" || name == "lz4_frame") return Codec::kLz4Frame;
  if (name == "zstd") return Codec::kZstd;
  return Status::Invalid("unknown compression codec '" + std::string(name) +
                         "' (expected none, lz4 or zstd)");
}

int64_t MaxCompressedLength(Codec codec, int64_t input_size) {
  switch (codec) {
    case Codec::kNone: return input_size;
    case Codec::kLz4Frame: {
      LZ4F_preferences_t prefs = Lz4Preferences(input_size);
      return static_cast<int64_t>(LZ4F_compressFrameBound(static_cast<size_t>(input_size), &prefs));
    }
    case Codec::kZstd:
      return static_cast<int64_t>(ZSTD_compressBound(static_cast<size_t>(input_size)));
  }
  return input_size;
}

Result<int64_t> CompressInto(Codec codec, std::string_view input, int level, uint8_t* dst,
                             int64_t capacity) {
  switch (codec) {
    case Codec::kNone:
      if (capacity < static_cast<int64_t>(input.size())) {
        return Status::Invalid("compression output buffer too small");
      }
      std::memcpy(dst, input.data(), input.size());
      return static_cast<int64_t>(input.size());
    case Codec::kLz4Frame: {
      LZ4F_preferences_t prefs = Lz4Preferences(static_cast<int64_t>(input.size()));
      size_t n = LZ4F_compressFrame(dst, static_cast<size_t>(capacity), input.data(), input.size(),
                                    &prefs);
      if (LZ4F_isError(n)) {
        return Status::Internal(std::string("lz4 compression failed: ") + LZ4F_getErrorName(n));
      }
      return static_cast<int64_t>(n);
    }
    case Codec::kZstd: {
      ZSTD_CCtx* cctx = Zstd().cctx;
      if (cctx == nullptr) return Status::ResourceExhausted("cannot create a zstd context");
      size_t n = ZSTD_compressCCtx(cctx, dst, static_cast<size_t>(capacity), input.data(),
                                   input.size(), level);
      if (ZSTD_isError(n)) {
        return Status::Internal(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
      }
      return static_cast<int64_t>(n);
    }
  }
  return Status::Invalid("unknown codec");
}

Status DecompressInto(Codec codec, std::string_view input, uint8_t* dst,
                      int64_t uncompressed_size) {
  const std::string expect = std::to_string(uncompressed_size);
  switch (codec) {
    case Codec::kNone:
      if (static_cast<int64_t>(input.size()) != uncompressed_size) {
        return Status::Invalid("uncompressed data has " + std::to_string(input.size()) +
                               " bytes, expected " + expect);
      }
      if (!input.empty()) std::memcpy(dst, input.data(), input.size());
      return Status::OK();
    case Codec::kLz4Frame: {
      // One frame; it must end exactly at the end of the input and the declared size.
      ASSIGN_OR_RAISE(Lz4Decoded out, DecodeLz4Frame(input, dst, uncompressed_size,
                                                     /*stop_when_full=*/false));
      if (!out.frame_ended) {
        if (out.produced == uncompressed_size && out.unread > 0) {
          return Status::Invalid("lz4 frame expands beyond the declared " + expect + " bytes");
        }
        return Status::Invalid("lz4 frame is truncated after " + std::to_string(out.produced) +
                               " of " + expect + " bytes");
      }
      if (out.unread != 0) {
        return Status::Invalid("lz4 data has " + std::to_string(out.unread) +
                               " trailing bytes after the frame");
      }
      if (out.produced != uncompressed_size) {
        return Status::Invalid("lz4 frame expands to " + std::to_string(out.produced) +
                               " bytes, expected " + expect);
      }
      return Status::OK();
    }
    case Codec::kZstd: {
      ZSTD_DCtx* dctx = Zstd().dctx;
      if (dctx == nullptr) return Status::ResourceExhausted("cannot create a zstd context");
      size_t n = ZSTD_decompressDCtx(dctx, dst, static_cast<size_t>(uncompressed_size),
                                     input.data(), input.size());
      if (ZSTD_isError(n)) {
        return Status::Invalid(std::string("zstd data is corrupt or larger than the declared ") +
                               expect + " bytes: " + ZSTD_getErrorName(n));
      }
      if (static_cast<int64_t>(n) != uncompressed_size) {
        return Status::Invalid("zstd data expands to " + std::to_string(n) + " bytes, expected " +
                               expect);
      }
      return Status::OK();
    }
  }
  return Status::Invalid("unknown codec");
}

Status DecompressPrefixInto(Codec codec, std::string_view input, uint8_t* dst,
                            int64_t prefix_size) {
  const std::string want = std::to_string(prefix_size);
  switch (codec) {
    case Codec::kNone:
      if (static_cast<int64_t>(input.size()) < prefix_size) {
        return Status::Invalid("data has " + std::to_string(input.size()) + " bytes, fewer than " +
                               want);
      }
      if (prefix_size > 0) std::memcpy(dst, input.data(), static_cast<size_t>(prefix_size));
      return Status::OK();
    case Codec::kLz4Frame: {
      ASSIGN_OR_RAISE(Lz4Decoded out,
                      DecodeLz4Frame(input, dst, prefix_size, /*stop_when_full=*/true));
      if (out.produced < prefix_size) {
        return Status::Invalid("lz4 frame ends after " + std::to_string(out.produced) +
                               " bytes, fewer than " + want);
      }
      return Status::OK();
    }
    case Codec::kZstd: {
      ZSTD_DCtx* dctx = Zstd().dctx;
      if (dctx == nullptr) return Status::ResourceExhausted("cannot create a zstd context");
      ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
      ZSTD_inBuffer in{input.data(), input.size(), 0};
      ZSTD_outBuffer out{dst, static_cast<size_t>(prefix_size), 0};
      while (out.pos < out.size) {
        const size_t before_in = in.pos;
        const size_t before_out = out.pos;
        size_t rc = ZSTD_decompressStream(dctx, &out, &in);
        if (ZSTD_isError(rc)) {
          ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
          return Status::Invalid(std::string("zstd data is corrupt: ") + ZSTD_getErrorName(rc));
        }
        if (out.pos < out.size && (rc == 0 || (in.pos == before_in && out.pos == before_out))) {
          ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
          return Status::Invalid("zstd data ends after " + std::to_string(out.pos) +
                                 " bytes, fewer than " + want);
        }
      }
      ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
      return Status::OK();
    }
  }
  return Status::Invalid("unknown codec");
}

Result<std::shared_ptr<Buffer>> Compress(Codec codec, std::string_view input, int level) {
  ASSIGN_OR_RAISE(auto out, MutableBuffer::Allocate(
                                MaxCompressedLength(codec, static_cast<int64_t>(input.size()))));
  ASSIGN_OR_RAISE(int64_t n, CompressInto(codec, input, level, out->mutable_data(), out->size()));
  out->Truncate(n);
  return std::shared_ptr<Buffer>(std::move(out));
}

Result<std::shared_ptr<Buffer>> Decompress(Codec codec, std::string_view input,
                                           int64_t uncompressed_size) {
  if (uncompressed_size < 0) {
    return Status::Invalid("negative uncompressed size " + std::to_string(uncompressed_size));
  }
  ASSIGN_OR_RAISE(auto out, MutableBuffer::Allocate(uncompressed_size));
  RETURN_NOT_OK(DecompressInto(codec, input, out->mutable_data(), uncompressed_size));
  return std::shared_ptr<Buffer>(std::move(out));
}

}  // namespace oxbow::arrow
