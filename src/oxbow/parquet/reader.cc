#include "oxbow/parquet/reader.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "oxbow/parquet/encoding_internal.h"
#include "oxbow/parquet/nested_internal.h"
#include "oxbow/parquet/reader_internal.h"
#include "oxbow/parquet/schema_internal.h"

namespace oxbow::parquet {

using arrow::Array;
using arrow::DataType;
using arrow::TypeId;
using internal::kMaxPageSize;

namespace {

int PhysicalSize(PhysicalType t, int32_t type_length) {
  switch (t) {
    case PhysicalType::kInt32:
    case PhysicalType::kFloat: return 4;
    case PhysicalType::kInt64:
    case PhysicalType::kDouble: return 8;
    case PhysicalType::kInt96: return 12;
    case PhysicalType::kFixedLenByteArray: return type_length;
    default: return 0;  // BOOLEAN (bits) and BYTE_ARRAY (variable)
  }
}

// Sign-extends a big-endian two's complement integer of 1..16 bytes.
__int128 BigEndianToInt128(const uint8_t* p, size_t n) {
  unsigned __int128 v = (n > 0 && (p[0] & 0x80)) ? ~static_cast<unsigned __int128>(0) : 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | p[i];
  return static_cast<__int128>(v);
}

// Room for decompressed pages, grown but never zero-filled (each page's bytes are written
// before they are read); one serves every chunk of a row group.
class PageScratch {
 public:
  uint8_t* Get(size_t n) {
    if (n > capacity_) {
      data_.reset(new uint8_t[n]);
      capacity_ = n;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t capacity_ = 0;
};

// Decodes the pages of one column chunk straight into Arrow buffers.
class ChunkDecoder {
 public:
  // A chunk of `num_rows` values (level entries, for a nested leaf); `keep_levels` keeps every
  // page's levels for levels().
  ChunkDecoder(const internal::LeafColumn& leaf, const SchemaElement& element, int64_t num_rows,
               bool keep_levels, bool verify_page_checksums, PageScratch* page_scratch)
      : page_scratch_(page_scratch),
        field_(leaf.field),
        physical_(*element.type),
        width_(PhysicalSize(*element.type, element.type_length.value_or(0))),
        num_rows_(num_rows),
        max_def_(leaf.max_def),
        max_rep_(leaf.max_rep),
        keep_levels_(keep_levels),
        verify_page_checksums_(verify_page_checksums) {}

  // Decodes the chunk's pages from `bytes`, the file's bytes in `range` (ChunkRange's).
  Result<Array> Decode(const uint8_t* bytes, internal::ByteRange range, const ColumnChunk& chunk);
  // The definition and repetition levels of every value, when kept.
  std::vector<uint32_t>& def_levels() { return all_def_; }
  std::vector<uint32_t>& rep_levels() { return all_rep_; }

 private:
  Status Error(const std::string& what) const {
    return Status::Corruption("column '" + field_.name + "': " + what);
  }
  Status Unsupported(const std::string& what) const {
    return Status::NotImplemented("column '" + field_.name + "': " + what + " is not supported");
  }
  Status AllocateOutput();
  Status ReadDictionary(const PageHeader& h, const uint8_t* data, int64_t size);
  struct Span {
    const uint8_t* data = nullptr;
    int64_t size = 0;
  };
  // Splits a v1 page's length-prefixed level runs off the front of `*body`.
  Status TakeLevels(Span* body, Span* levels, const char* what) const;
  Status DecodeLevels(Span span, int16_t max_level, std::vector<uint32_t>* out, int64_t n,
                      const char* what);
  Status ReadDataPage(int32_t num_values, Encoding encoding, Span rep, Span def, Span values);
  Status DecodeDense(Encoding encoding, const uint8_t* data, int64_t size, int64_t count);
  Status DecodePlain(const uint8_t* data, int64_t size, int64_t count);
  Status DecodeDictionaryIndices(Encoding encoding, const uint8_t* data, int64_t size,
                                 int64_t count);
  Status DecodeDeltaBytes(Encoding encoding, const uint8_t* data, int64_t size, int64_t count);
  Status Emit(int64_t n, int64_t count);
  // Emit's string and binary case: appends the `count` dense values of `n` slots to data_.
  Status EmitStrings(int64_t n, int64_t count, bool all_valid, int32_t* offsets);
  Result<const uint8_t*> Decompress(Codec codec, const uint8_t* data, int64_t size,
                                    int64_t uncompressed, PageScratch* buffer);

  PageScratch* page_scratch_;  // data pages; the dictionary page keeps dict_scratch_

  const arrow::Field& field_;
  PhysicalType physical_;
  int width_;  // bytes per physical value (0 for BOOLEAN and BYTE_ARRAY)
  int64_t num_rows_;
  int16_t max_def_;
  int16_t max_rep_;
  bool keep_levels_;
  bool verify_page_checksums_;
  std::vector<uint32_t> all_def_, all_rep_;

  // Output.
  std::shared_ptr<MutableBuffer> validity_;
  std::shared_ptr<MutableBuffer> values_;  // values, bits or int32 offsets
  BufferBuilder data_;                     // string / binary bytes
  int64_t chunk_uncompressed_bytes_ = 0;   // the chunk's total_uncompressed_size
  int64_t row_ = 0;
  int64_t null_count_ = 0;

  // The current page.
  std::vector<uint32_t> levels_;    // definition levels
  std::vector<uint32_t> rep_page_;  // repetition levels
  std::vector<uint8_t> valid_;      // 0/1 per value of the page
  const uint8_t* dense_ = nullptr;  // fixed-width physical values, non-null only
  std::vector<uint8_t> dense_buffer_;
  uint8_t* dict_target_ = nullptr;  // where a dictionary page's values go, when not dense_buffer_
  std::vector<std::string_view> dense_views_;  // BYTE_ARRAY values, non-null only
  std::vector<uint32_t> indices_;
  std::vector<int64_t> delta_values_;
  std::string delta_arena_;
  PageScratch dict_scratch_;

  // The dictionary.
  bool has_dictionary_ = false;
  int64_t dict_size_ = 0;
  const uint8_t* dict_fixed_ = nullptr;
  std::vector<std::string_view> dict_views_;
  std::vector<uint8_t> dict_bools_;
};

// Sets bits [start, start + n) of `bits`.
void SetBits(uint8_t* bits, int64_t start, int64_t n) {
  int64_t i = start;
  const int64_t end = start + n;
  for (; i < end && (i & 7) != 0; ++i) bit_util::SetBit(bits, i);
  const int64_t whole = (end - i) / 8;
  if (whole > 0) {
    std::memset(bits + i / 8, 0xff, static_cast<size_t>(whole));
    i += whole * 8;
  }
  for (; i < end; ++i) bit_util::SetBit(bits, i);
}

// ORs `n` flags (bytes of 0 or 1) into bits [start, start + n) of `bits`, without a branch per
// flag (nulls are irregular), eight at a time where the bits are byte-aligned.
void PackBits(const uint8_t* flags, int64_t n, uint8_t* bits, int64_t start) {
  int64_t i = 0;
  auto one = [&] {
    const int64_t bit = start + i;
    bits[bit >> 3] |= static_cast<uint8_t>(flags[i] << (bit & 7));
    ++i;
  };
  while (i < n && ((start + i) & 7) != 0) one();
  for (; i + 8 <= n; i += 8) {
    uint64_t eight;
    std::memcpy(&eight, flags + i, 8);
    // Byte k (0 or 1) lands on bit 56 + k of the product.
    bits[(start + i) >> 3] = static_cast<uint8_t>((eight * 0x0102040810204080ull) >> 56);
  }
  while (i < n) one();
}

Status ChunkDecoder::AllocateOutput() {
  const DataType& t = field_.type;
  if (max_def_ > 0) {
    ASSIGN_OR_RAISE(validity_, MutableBuffer::Allocate(bit_util::BytesForBits(num_rows_)));
    std::memset(validity_->mutable_data(), 0, static_cast<size_t>(validity_->size()));
  }
  int64_t bytes;
  if (t.id() == TypeId::kBool) {
    bytes = bit_util::BytesForBits(num_rows_);
  } else if (t.is_variable_length()) {
    bytes = (num_rows_ + 1) * 4;
  } else {
    bytes = num_rows_ * (t.bit_width() / 8);
  }
  ASSIGN_OR_RAISE(values_, MutableBuffer::Allocate(bytes));
  // Emit writes every slot, zeros in null slots, so only bits (which it only sets) and
  // offsets[0] start as zeros here.
  if (t.id() == TypeId::kBool) {
    std::memset(values_->mutable_data(), 0, static_cast<size_t>(bytes));
  } else if (t.is_variable_length()) {
    std::memset(values_->mutable_data(), 0, 4);
  }
  return Status::OK();
}

Result<const uint8_t*> ChunkDecoder::Decompress(Codec codec, const uint8_t* data, int64_t size,
                                                int64_t uncompressed, PageScratch* buffer) {
  if (codec == Codec::kUncompressed) {
    if (size != uncompressed) {
      return Error("uncompressed page of " + std::to_string(size) + " bytes, header says " +
                   std::to_string(uncompressed));
    }
    return data;
  }
  uint8_t* out = buffer->Get(static_cast<size_t>(std::max<int64_t>(uncompressed, 1)));
  RETURN_NOT_OK(internal::Decompress(codec, data, static_cast<size_t>(size), out,
                                     static_cast<size_t>(uncompressed))
                    .WithContext("column '" + field_.name + "'"));
  return out;
}

Status ChunkDecoder::ReadDictionary(const PageHeader& h, const uint8_t* data, int64_t size) {
  const auto& d = *h.dictionary_page_header;
  if (has_dictionary_) return Error("second dictionary page");
  if (d.encoding != Encoding::kPlain && d.encoding != Encoding::kPlainDictionary) {
    return Unsupported("dictionary page encoding " + std::string(EncodingName(d.encoding)));
  }
  if (d.num_values < 0) return Error("negative dictionary size");
  dict_size_ = d.num_values;
  has_dictionary_ = true;
  if (physical_ == PhysicalType::kByteArray) {
    dict_views_.clear();
    dict_views_.reserve(static_cast<size_t>(std::min<int64_t>(dict_size_, size / 4 + 1)));
    int64_t pos = 0;
    for (int64_t i = 0; i < dict_size_; ++i) {
      if (size - pos < 4) return Error("dictionary page truncated at entry " + std::to_string(i));
      uint32_t len;
      std::memcpy(&len, data + pos, 4);
      pos += 4;
      if (len > static_cast<uint64_t>(size - pos)) {
        return Error("dictionary entry " + std::to_string(i) + " of " + std::to_string(len) +
                     " bytes runs past the page");
      }
      dict_views_.emplace_back(reinterpret_cast<const char*>(data + pos), len);
      pos += len;
    }
  } else if (physical_ == PhysicalType::kBoolean) {
    if (bit_util::BytesForBits(dict_size_) > size) return Error("dictionary page truncated");
    dict_bools_.resize(static_cast<size_t>(dict_size_));
    for (int64_t i = 0; i < dict_size_; ++i) dict_bools_[i] = bit_util::GetBit(data, i);
  } else {
    if (width_ <= 0) return Error("bad FIXED_LEN_BYTE_ARRAY width");
    if (dict_size_ > size / width_) {
      return Error("dictionary of " + std::to_string(dict_size_) + " values needs more than " +
                   std::to_string(size) + " bytes");
    }
    dict_fixed_ = data;
  }
  return Status::OK();
}

Status ChunkDecoder::DecodePlain(const uint8_t* data, int64_t size, int64_t count) {
  if (physical_ == PhysicalType::kByteArray) {
    dense_views_.resize(static_cast<size_t>(count));
    int64_t pos = 0;
    for (int64_t i = 0; i < count; ++i) {
      if (size - pos < 4) return Error("PLAIN page truncated at value " + std::to_string(i));
      uint32_t len;
      std::memcpy(&len, data + pos, 4);
      pos += 4;
      if (len > static_cast<uint64_t>(size - pos)) {
        return Error("value " + std::to_string(i) + " of " + std::to_string(len) +
                     " bytes runs past the page");
      }
      dense_views_[i] = std::string_view(reinterpret_cast<const char*>(data + pos), len);
      pos += len;
    }
  } else if (physical_ == PhysicalType::kBoolean) {
    if (bit_util::BytesForBits(count) > size) return Error("PLAIN boolean page truncated");
    dense_buffer_.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) dense_buffer_[i] = bit_util::GetBit(data, i);
    dense_ = dense_buffer_.data();
  } else {
    if (width_ <= 0) return Error("bad FIXED_LEN_BYTE_ARRAY width");
    if (count > size / width_) {
      return Error("PLAIN page holds " + std::to_string(size) + " bytes, " + std::to_string(count) +
                   " values need more");
    }
    dense_ = data;
  }
  return Status::OK();
}

Status ChunkDecoder::DecodeDictionaryIndices(Encoding encoding, const uint8_t* data, int64_t size,
                                             int64_t count) {
  if (!has_dictionary_) {
    return Error(std::string(EncodingName(encoding)) + " page without a dictionary page");
  }
  if (size < 1) return Error("dictionary-encoded page without a bit width");
  const int bw = data[0];
  if (bw > 32) return Error("dictionary index bit width " + std::to_string(bw));
  indices_.resize(static_cast<size_t>(count));
  internal::RleDecoder dec(data + 1, size - 1, bw);
  RETURN_NOT_OK(dec.GetBatch(indices_.data(), count).WithContext("column '" + field_.name + "'"));
  uint32_t max_index = 0;
  for (int64_t i = 0; i < count; ++i) max_index = std::max(max_index, indices_[i]);
  if (count > 0 && max_index >= dict_size_) {
    return Error("dictionary index " + std::to_string(max_index) + " >= dictionary size " +
                 std::to_string(dict_size_));
  }
  if (physical_ == PhysicalType::kByteArray) {
    dense_views_.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) dense_views_[i] = dict_views_[indices_[i]];
  } else if (physical_ == PhysicalType::kBoolean) {
    dense_buffer_.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) dense_buffer_[i] = dict_bools_[indices_[i]];
    dense_ = dense_buffer_.data();
  } else {
    uint8_t* out = dict_target_;
    if (out == nullptr) {
      dense_buffer_.resize(static_cast<size_t>(count * width_));
      out = dense_buffer_.data();
    }
    switch (width_) {
      case 4:
        for (int64_t i = 0; i < count; ++i)
          std::memcpy(out + i * 4, dict_fixed_ + indices_[i] * 4, 4);
        break;
      case 8:
        for (int64_t i = 0; i < count; ++i)
          std::memcpy(out + i * 8, dict_fixed_ + indices_[i] * 8, 8);
        break;
      default:
        for (int64_t i = 0; i < count; ++i) {
          std::memcpy(out + i * width_, dict_fixed_ + static_cast<int64_t>(indices_[i]) * width_,
                      width_);
        }
    }
    dense_ = out;
  }
  return Status::OK();
}

Status ChunkDecoder::DecodeDense(Encoding encoding, const uint8_t* data, int64_t size,
                                 int64_t count) {
  const std::string enc_name(EncodingName(encoding));
  switch (encoding) {
    case Encoding::kPlain: return DecodePlain(data, size, count);
    case Encoding::kPlainDictionary:
    case Encoding::kRleDictionary: return DecodeDictionaryIndices(encoding, data, size, count);
    case Encoding::kRle: {
      if (physical_ != PhysicalType::kBoolean) return Unsupported("RLE encoding for non-booleans");
      if (size < 4) return Error("RLE boolean page without a length");
      uint32_t len;
      std::memcpy(&len, data, 4);
      if (len > static_cast<uint64_t>(size - 4))
        return Error("RLE boolean run length past the page");
      indices_.resize(static_cast<size_t>(count));
      internal::RleDecoder dec(data + 4, len, 1);
      RETURN_NOT_OK(
          dec.GetBatch(indices_.data(), count).WithContext("column '" + field_.name + "'"));
      dense_buffer_.assign(indices_.begin(), indices_.end());
      dense_ = dense_buffer_.data();
      return Status::OK();
    }
    case Encoding::kByteStreamSplit: {
      if (width_ <= 0 || physical_ == PhysicalType::kInt96) {
        return Unsupported("BYTE_STREAM_SPLIT for " + std::string(PhysicalTypeName(physical_)));
      }
      if (count > size / width_) return Error("BYTE_STREAM_SPLIT page too short");
      dense_buffer_.resize(static_cast<size_t>(count * width_));
      for (int b = 0; b < width_; ++b) {
        const uint8_t* stream = data + b * count;
        for (int64_t i = 0; i < count; ++i) dense_buffer_[i * width_ + b] = stream[i];
      }
      dense_ = dense_buffer_.data();
      return Status::OK();
    }
    case Encoding::kDeltaBinaryPacked: {
      if (physical_ != PhysicalType::kInt32 && physical_ != PhysicalType::kInt64) {
        return Unsupported("DELTA_BINARY_PACKED for " + std::string(PhysicalTypeName(physical_)));
      }
      delta_values_.resize(static_cast<size_t>(count));
      int64_t used = 0;
      RETURN_NOT_OK(
          internal::DeltaBinaryPackedDecode(data, size, count, delta_values_.data(), &used)
              .WithContext("column '" + field_.name + "'"));
      dense_buffer_.resize(static_cast<size_t>(count * width_));
      for (int64_t i = 0; i < count; ++i) {
        if (width_ == 4) {
          const auto v = static_cast<int32_t>(delta_values_[i]);
          std::memcpy(dense_buffer_.data() + i * 4, &v, 4);
        } else {
          std::memcpy(dense_buffer_.data() + i * 8, &delta_values_[i], 8);
        }
      }
      dense_ = dense_buffer_.data();
      return Status::OK();
    }
    case Encoding::kDeltaLengthByteArray:
    case Encoding::kDeltaByteArray: return DecodeDeltaBytes(encoding, data, size, count);
    default: return Unsupported("encoding " + enc_name);
  }
}

Status ChunkDecoder::DecodeDeltaBytes(Encoding encoding, const uint8_t* data, int64_t size,
                                      int64_t count) {
  if (physical_ != PhysicalType::kByteArray && physical_ != PhysicalType::kFixedLenByteArray) {
    return Unsupported(std::string(EncodingName(encoding)) + " for " +
                       std::string(PhysicalTypeName(physical_)));
  }
  const std::string ctx = "column '" + field_.name + "'";
  std::vector<int64_t> prefixes;
  int64_t pos = 0;
  if (encoding == Encoding::kDeltaByteArray) {
    prefixes.resize(static_cast<size_t>(count));
    int64_t used = 0;
    RETURN_NOT_OK(internal::DeltaBinaryPackedDecode(data, size, count, prefixes.data(), &used)
                      .WithContext(ctx + " prefix lengths"));
    pos = used;
  }
  delta_values_.resize(static_cast<size_t>(count));
  int64_t used = 0;
  RETURN_NOT_OK(
      internal::DeltaBinaryPackedDecode(data + pos, size - pos, count, delta_values_.data(), &used)
          .WithContext(ctx + " lengths"));
  pos += used;
  dense_views_.resize(static_cast<size_t>(count));
  if (encoding == Encoding::kDeltaLengthByteArray) {
    for (int64_t i = 0; i < count; ++i) {
      const int64_t len = delta_values_[i];
      if (len < 0 || len > size - pos) {
        return Error("DELTA_LENGTH_BYTE_ARRAY value runs past the page");
      }
      dense_views_[i] =
          std::string_view(reinterpret_cast<const char*>(data + pos), static_cast<size_t>(len));
      pos += len;
    }
  } else {
    // Each value is the previous value's first prefixes[i] bytes plus a suffix.
    int64_t total = 0, prev_len = 0;
    const int64_t suffix_start = pos;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t suffix = delta_values_[i];
      if (prefixes[i] < 0 || prefixes[i] > prev_len || suffix < 0 || suffix > size - pos) {
        return Error("DELTA_BYTE_ARRAY prefix or suffix length out of range at value " +
                     std::to_string(i));
      }
      prev_len = prefixes[i] + suffix;
      total += prev_len;
      pos += suffix;
      if (total > kMaxPageSize) return Error("DELTA_BYTE_ARRAY values exceed 1 GiB");
    }
    delta_arena_.resize(static_cast<size_t>(total));
    const uint8_t* suffixes = data + suffix_start;
    char* out = delta_arena_.data();
    const char* prev = out;
    for (int64_t i = 0; i < count; ++i) {
      std::memmove(out, prev, static_cast<size_t>(prefixes[i]));
      std::memcpy(out + prefixes[i], suffixes, static_cast<size_t>(delta_values_[i]));
      suffixes += delta_values_[i];
      const auto len = static_cast<size_t>(prefixes[i] + delta_values_[i]);
      dense_views_[i] = std::string_view(out, len);
      prev = out;
      out += len;
    }
  }
  if (physical_ == PhysicalType::kFixedLenByteArray) {
    dense_buffer_.resize(static_cast<size_t>(count * width_));
    for (int64_t i = 0; i < count; ++i) {
      if (static_cast<int64_t>(dense_views_[i].size()) != width_) {
        return Error("FIXED_LEN_BYTE_ARRAY value of " + std::to_string(dense_views_[i].size()) +
                     " bytes");
      }
      std::memcpy(dense_buffer_.data() + i * width_, dense_views_[i].data(),
                  static_cast<size_t>(width_));
    }
    dense_ = dense_buffer_.data();
  }
  return Status::OK();
}

// Moves `count` dense values into rows [row_, row_ + n), placing nulls where valid_ says.
Status ChunkDecoder::Emit(int64_t n, int64_t count) {
  const DataType& t = field_.type;
  const bool all_valid = count == n;
  uint8_t* validity = validity_ ? validity_->mutable_data() : nullptr;
  if (validity) {
    if (all_valid) {
      SetBits(validity, row_, n);
    } else {
      PackBits(valid_.data(), n, validity, row_);
    }
  }
  null_count_ += n - count;
  uint8_t* out = values_->mutable_data();
  // For every non-null slot: f(slot, dense index); null slots of fixed-width values are zeroed.
  const int slot_bytes = t.id() == TypeId::kBool ? 0 : t.bit_width() / 8;
  auto each = [&](auto&& f) {
    if (all_valid) {
      for (int64_t i = 0; i < n; ++i) f(row_ + i, i);
    } else {
      for (int64_t i = 0, j = 0; i < n; ++i) {
        if (valid_[i]) {
          f(row_ + i, j++);
        } else {
          std::memset(out + (row_ + i) * slot_bytes, 0, static_cast<size_t>(slot_bytes));
        }
      }
    }
  };
  switch (t.id()) {
    case TypeId::kBool:
      each([&](int64_t slot, int64_t j) {
        if (dense_[j]) bit_util::SetBit(out, slot);
      });
      return Status::OK();
    case TypeId::kString:
    case TypeId::kBinary: return EmitStrings(n, count, all_valid, reinterpret_cast<int32_t*>(out));
    case TypeId::kDecimal128: {
      auto* dst = reinterpret_cast<__int128*>(out);
      if (physical_ == PhysicalType::kInt32) {
        each([&](int64_t slot, int64_t j) {
          int32_t v;
          std::memcpy(&v, dense_ + j * 4, 4);
          dst[slot] = v;
        });
      } else if (physical_ == PhysicalType::kInt64) {
        each([&](int64_t slot, int64_t j) {
          int64_t v;
          std::memcpy(&v, dense_ + j * 8, 8);
          dst[slot] = v;
        });
      } else if (physical_ == PhysicalType::kFixedLenByteArray) {
        each([&](int64_t slot, int64_t j) {
          dst[slot] = BigEndianToInt128(dense_ + j * width_, static_cast<size_t>(width_));
        });
      } else {
        for (int64_t j = 0; j < count; ++j) {
          if (dense_views_[j].size() > 16) return Error("decimal BYTE_ARRAY wider than 16 bytes");
        }
        each([&](int64_t slot, int64_t j) {
          const auto v = dense_views_[j];
          dst[slot] = BigEndianToInt128(reinterpret_cast<const uint8_t*>(v.data()), v.size());
        });
      }
      return Status::OK();
    }
    case TypeId::kFixedSizeBinary: {
      const int w = t.byte_width();
      each([&](int64_t slot, int64_t j) { std::memcpy(out + slot * w, dense_ + j * w, w); });
      return Status::OK();
    }
    case TypeId::kTimestamp:
      if (physical_ == PhysicalType::kInt96) {
        auto* dst = reinterpret_cast<int64_t*>(out);
        each([&](int64_t slot, int64_t j) {
          int64_t nanos;
          int32_t julian;
          std::memcpy(&nanos, dense_ + j * 12, 8);
          std::memcpy(&julian, dense_ + j * 12 + 8, 4);
          dst[slot] = (static_cast<int64_t>(julian) - 2440588) * 86400000000000LL + nanos;
        });
        return Status::OK();
      }
      break;
    default: break;
  }
  // Fixed-width integers and floats: same width copies, or INT32 narrowed to 8/16 bits.
  const int out_width = t.bit_width() / 8;
  if (out_width == width_) {
    if (all_valid) {
      if (n > 0 && dense_ != out + row_ * width_) {  // else decoded in place
        std::memcpy(out + row_ * width_, dense_, static_cast<size_t>(n * width_));
      }
    } else {
      each([&](int64_t slot, int64_t j) {
        std::memcpy(out + slot * width_, dense_ + j * width_, static_cast<size_t>(width_));
      });
    }
    return Status::OK();
  }
  if (physical_ == PhysicalType::kInt32 && (out_width == 1 || out_width == 2)) {
    each([&](int64_t slot, int64_t j) {
      int32_t v;
      std::memcpy(&v, dense_ + j * 4, 4);
      if (out_width == 1) {
        out[slot] = static_cast<uint8_t>(v);
      } else {
        const auto v16 = static_cast<uint16_t>(v);
        std::memcpy(out + slot * 2, &v16, 2);
      }
    });
    return Status::OK();
  }
  return Error("cannot convert " + std::string(PhysicalTypeName(physical_)) + " to " +
               t.ToString());
}

Status ChunkDecoder::EmitStrings(int64_t n, int64_t count, bool all_valid, int32_t* offsets) {
  int64_t bytes = 0;
  for (int64_t j = 0; j < count; ++j) bytes += static_cast<int64_t>(dense_views_[j].size());
  if (data_.length() + bytes > INT32_MAX) {
    return Status::NotImplemented("column '" + field_.name +
                                  "': more than 2 GiB of string data in one row group");
  }
  // The first page sizes the whole chunk's data (growing by doubling costs copies and
  // fresh pages), within 8 times the chunk's uncompressed bytes and 256 MiB, so a lying
  // footer cannot make it huge; later pages top it up.
  constexpr int64_t kMaxFirstReserve = int64_t{256} << 20;
  int64_t reserve = bytes;
  if (row_ == 0 && n > 0 && n < num_rows_) {
    const int64_t estimate = bytes / n * num_rows_ + bytes;
    const int64_t bound = std::min(chunk_uncompressed_bytes_, kMaxFirstReserve / 8) * 8;
    reserve = std::max(bytes, std::min(estimate, bound));
  }
  RETURN_NOT_OK(data_.Reserve(reserve));
  int64_t end = data_.length();
  int64_t j = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (all_valid || valid_[i]) {
      const std::string_view v = dense_views_[j++];
      data_.UnsafeAppend(v.data(), static_cast<int64_t>(v.size()));
      end += static_cast<int64_t>(v.size());
    }
    offsets[row_ + i + 1] = static_cast<int32_t>(end);
  }
  return Status::OK();
}

Status ChunkDecoder::TakeLevels(Span* body, Span* levels, const char* what) const {
  if (body->size < 4) return Error(std::string("data page too short for its ") + what + " levels");
  uint32_t l;
  std::memcpy(&l, body->data, 4);
  if (l > static_cast<uint64_t>(body->size - 4)) {
    return Error(std::string(what) + " levels of " + std::to_string(l) +
                 " bytes run past the page");
  }
  *levels = Span{body->data + 4, l};
  *body = Span{body->data + 4 + l, body->size - 4 - l};
  return Status::OK();
}

Status ChunkDecoder::DecodeLevels(Span span, int16_t max_level, std::vector<uint32_t>* out,
                                  int64_t n, const char* what) {
  out->resize(static_cast<size_t>(n));
  internal::RleDecoder dec(span.data, span.size,
                           internal::BitWidthFor(static_cast<uint64_t>(max_level)));
  RETURN_NOT_OK(
      dec.GetBatch(out->data(), n).WithContext("column '" + field_.name + "' " + what + " levels"));
  for (int64_t i = 0; i < n; ++i) {
    if ((*out)[i] > static_cast<uint32_t>(max_level)) {
      return Error(std::string(what) + " level " + std::to_string((*out)[i]) + " > " +
                   std::to_string(max_level));
    }
  }
  return Status::OK();
}

Status ChunkDecoder::ReadDataPage(int32_t num_values, Encoding encoding, Span rep, Span def,
                                  Span values) {
  if (num_values < 0) return Error("negative value count in a data page");
  if (num_values > num_rows_ - row_) {
    return Error("data pages hold more than the row group's " + std::to_string(num_rows_) +
                 " values");
  }
  const int64_t n = num_values;
  int64_t count = n;
  valid_.clear();
  if (max_rep_ > 0) {
    RETURN_NOT_OK(DecodeLevels(rep, max_rep_, &rep_page_, n, "repetition"));
    if (row_ == 0 && n > 0 && rep_page_[0] != 0) {
      return Error("the first value continues a row (repetition level > 0)");
    }
  }
  if (max_def_ > 0) {
    RETURN_NOT_OK(DecodeLevels(def, max_def_, &levels_, n, "definition"));
    valid_.resize(static_cast<size_t>(n));
    count = 0;
    const auto max_def = static_cast<uint32_t>(max_def_);
    for (int64_t i = 0; i < n; ++i) {
      valid_[i] = static_cast<uint8_t>(levels_[i] == max_def);
      count += valid_[i];
    }
  }
  if (keep_levels_) {
    if (max_def_ > 0) {
      all_def_.insert(all_def_.end(), levels_.begin(), levels_.begin() + n);
    } else {
      all_def_.resize(all_def_.size() + static_cast<size_t>(n), 0);
    }
    if (max_rep_ > 0) {
      all_rep_.insert(all_rep_.end(), rep_page_.begin(), rep_page_.begin() + n);
    } else {
      all_rep_.resize(all_rep_.size() + static_cast<size_t>(n), 0);
    }
  }
  // A page without nulls whose dictionary values are the output's: gather straight into it.
  const arrow::TypeId id = field_.type.id();
  const bool dictionary =
      encoding == Encoding::kRleDictionary || encoding == Encoding::kPlainDictionary;
  const bool same_values = id != TypeId::kBool && id != TypeId::kString && id != TypeId::kBinary &&
                           id != TypeId::kDecimal128 && id != TypeId::kFixedSizeBinary &&
                           physical_ != PhysicalType::kInt96 &&
                           field_.type.bit_width() / 8 == width_;
  dict_target_ = dictionary && count == n && same_values && (width_ == 4 || width_ == 8)
                     ? values_->mutable_data() + row_ * width_
                     : nullptr;
  Status decoded = DecodeDense(encoding, values.data, values.size, count);
  dict_target_ = nullptr;
  RETURN_NOT_OK(decoded);
  RETURN_NOT_OK(Emit(n, count));
  row_ += n;
  return Status::OK();
}

Result<Array> ChunkDecoder::Decode(const uint8_t* bytes, internal::ByteRange range,
                                   const ColumnChunk& chunk) {
  const ColumnMetaData& meta = *chunk.meta_data;  // ParseFooter checked the chunk's metadata
  if (!internal::CodecSupported(meta.codec)) {
    return Unsupported("compression codec " + std::string(CodecName(meta.codec)) + " (" +
                       std::to_string(static_cast<int>(meta.codec)) + ")");
  }
  const std::string context = "column '" + field_.name + "'";
  chunk_uncompressed_bytes_ = std::max<int64_t>(0, meta.total_uncompressed_size);
  RETURN_NOT_OK(AllocateOutput());
  int64_t pos = range.start;  // a file offset, as messages give it; bytes[0] is at range.start
  const int64_t end = range.end;
  while (row_ < num_rows_) {
    if (pos >= end) {
      return Error("pages end after " + std::to_string(row_) + " of " + std::to_string(num_rows_) +
                   " values");
    }
    const int64_t page_offset = pos;
    PageHeader h;
    size_t consumed = 0;
    RETURN_NOT_OK(
        ParsePageHeader(bytes + (pos - range.start), static_cast<size_t>(end - pos), &h, &consumed)
            .WithContext(context + " page header at offset " + std::to_string(pos)));
    pos += static_cast<int64_t>(consumed);
    RETURN_NOT_OK(internal::CheckPageSizes(h, end - pos, page_offset).WithContext(context));
    const uint8_t* page = bytes + (pos - range.start);
    const int64_t size = h.compressed_page_size;
    pos += size;
    if (verify_page_checksums_ && h.crc) {
      const uint32_t crc = internal::PageCrc(0, page, static_cast<size_t>(size));
      RETURN_NOT_OK(internal::CheckPageCrc(h, crc, page_offset).WithContext(context));
    }
    switch (h.type) {
      case PageType::kDictionaryPage: {
        if (!h.dictionary_page_header) return Error("dictionary page without its header");
        ASSIGN_OR_RAISE(const uint8_t* body, Decompress(meta.codec, page, size,
                                                        h.uncompressed_page_size, &dict_scratch_));
        RETURN_NOT_OK(ReadDictionary(h, body, h.uncompressed_page_size));
        break;
      }
      case PageType::kDataPage: {
        if (!h.data_page_header) return Error("data page without its header");
        const auto& d = *h.data_page_header;
        if (max_def_ > 0 && d.definition_level_encoding != Encoding::kRle) {
          return Unsupported("definition level encoding " +
                             std::string(EncodingName(d.definition_level_encoding)));
        }
        if (max_rep_ > 0 && d.repetition_level_encoding != Encoding::kRle) {
          return Unsupported("repetition level encoding " +
                             std::string(EncodingName(d.repetition_level_encoding)));
        }
        ASSIGN_OR_RAISE(const uint8_t* body, Decompress(meta.codec, page, size,
                                                        h.uncompressed_page_size, page_scratch_));
        Span rest{body, h.uncompressed_page_size}, rep, def;
        if (max_rep_ > 0) RETURN_NOT_OK(TakeLevels(&rest, &rep, "repetition"));
        if (max_def_ > 0) RETURN_NOT_OK(TakeLevels(&rest, &def, "definition"));
        RETURN_NOT_OK(ReadDataPage(d.num_values, d.encoding, rep, def, rest));
        break;
      }
      case PageType::kDataPageV2: {
        if (!h.data_page_header_v2) return Error("data page v2 without its header");
        const auto& d = *h.data_page_header_v2;
        const int64_t levels =
            static_cast<int64_t>(d.definition_levels_byte_length) + d.repetition_levels_byte_length;
        if (d.definition_levels_byte_length < 0 || d.repetition_levels_byte_length < 0 ||
            levels > size || levels > h.uncompressed_page_size) {
          return Error("data page v2 level lengths exceed the page");
        }
        const uint8_t* body = page + levels;
        const int64_t body_size = size - levels;
        const int64_t body_uncompressed = h.uncompressed_page_size - levels;
        const uint8_t* values = body;
        if (d.is_compressed) {
          ASSIGN_OR_RAISE(
              values, Decompress(meta.codec, body, body_size, body_uncompressed, page_scratch_));
        } else if (body_size != body_uncompressed) {
          return Error("uncompressed v2 page sizes disagree");
        }
        RETURN_NOT_OK(ReadDataPage(
            d.num_values, d.encoding, Span{page, d.repetition_levels_byte_length},
            Span{page + d.repetition_levels_byte_length, d.definition_levels_byte_length},
            Span{values, body_uncompressed}));
        break;
      }
      default: break;  // index pages and unknown page types are skipped
    }
  }
  std::vector<std::shared_ptr<Buffer>> buffers;
  buffers.push_back(null_count_ > 0 ? std::shared_ptr<Buffer>(validity_) : nullptr);
  buffers.push_back(values_);
  if (field_.type.is_variable_length()) {
    ASSIGN_OR_RAISE(auto data, data_.Finish());
    buffers.push_back(std::move(data));
  }
  return Array::Make(field_.type, num_rows_, std::move(buffers), null_count_);
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Checks shared with the verifier

namespace internal {

Result<int64_t> FooterLength(const uint8_t* head, const uint8_t* tail, int64_t file_size) {
  if (file_size < kMagicSize + kFooterTailSize) {
    return Status::Corruption("parquet: file of " + std::to_string(file_size) +
                              " bytes is too short (at least 12 needed)");
  }
  if (std::memcmp(head, "PAR1", 4) != 0) {
    return Status::Corruption("parquet: bad leading magic (not a Parquet file)");
  }
  if (std::memcmp(tail + 4, "PARE", 4) == 0) {
    return Status::NotImplemented("parquet: encrypted footers are not supported");
  }
  if (std::memcmp(tail + 4, "PAR1", 4) != 0) {
    return Status::Corruption("parquet: bad trailing magic (truncated or not a Parquet file)");
  }
  uint32_t footer_len;
  std::memcpy(&footer_len, tail, 4);
  if (footer_len > static_cast<uint64_t>(file_size - kMagicSize - kFooterTailSize)) {
    return Status::Corruption("parquet: footer length " + std::to_string(footer_len) +
                              " exceeds the file of " + std::to_string(file_size) + " bytes");
  }
  return static_cast<int64_t>(footer_len);
}

Result<ByteRange> ChunkRange(const ColumnMetaData& meta, int64_t data_end) {
  int64_t start = meta.data_page_offset;
  if (meta.dictionary_page_offset && *meta.dictionary_page_offset > 0 &&
      *meta.dictionary_page_offset < start) {
    start = *meta.dictionary_page_offset;
  }
  if (start < kMagicSize || start > data_end || meta.total_compressed_size < 0 ||
      meta.total_compressed_size > data_end - start) {
    return Status::Corruption("chunk range [" + std::to_string(start) + ", +" +
                              std::to_string(meta.total_compressed_size) +
                              ") lies outside the column data [4, " + std::to_string(data_end) +
                              ")");
  }
  return ByteRange{start, start + meta.total_compressed_size};
}

namespace {

// Checks what reading a column chunk relies on: its metadata, in this file, of the column's
// type, one value per row, within the column data.
Status CheckChunk(const ColumnChunk& chunk, const SchemaElement& column, const LeafColumn& leaf,
                  int64_t num_rows, int64_t data_end) {
  if (!chunk.meta_data) return Status::Corruption("column chunk without meta_data");
  if (chunk.file_path) return Status::NotImplemented("column data in another file");
  const ColumnMetaData& meta = *chunk.meta_data;
  if (meta.type != *column.type) {
    return Status::Corruption("chunk type " + std::string(PhysicalTypeName(meta.type)) +
                              " differs from the schema's " +
                              std::string(PhysicalTypeName(*column.type)));
  }
  // A repeated leaf holds one value (level entry) or more per row, any other leaf one per row.
  if (leaf.max_rep > 0 ? meta.num_values < num_rows || meta.num_values > INT32_MAX
                       : meta.num_values != num_rows) {
    return Status::Corruption("chunk has " + std::to_string(meta.num_values) +
                              " values, row group has " + std::to_string(num_rows) + " rows");
  }
  return ChunkRange(meta, data_end).status();
}

}  // namespace

Result<FileMetaData> ParseFooter(const uint8_t* data, int64_t size, int64_t data_end,
                                 SchemaTree* tree_out) {
  FileMetaData metadata;
  RETURN_NOT_OK(
      ParseFileMetaData(data, static_cast<size_t>(size), &metadata).WithContext("parquet footer"));
  const auto& schema = metadata.schema;
  ASSIGN_OR_RAISE(SchemaTree tree, ParseSchema(schema));
  const size_t num_columns = tree.leaves.size();
  int64_t total_rows = 0;
  for (size_t g = 0; g < metadata.row_groups.size(); ++g) {
    const auto& group = metadata.row_groups[g];
    if (group.columns.size() != num_columns) {
      return Status::Corruption("parquet footer: row group " + std::to_string(g) + " has " +
                                std::to_string(group.columns.size()) + " columns, schema has " +
                                std::to_string(num_columns));
    }
    if (group.num_rows < 0 || group.num_rows > INT32_MAX) {
      return Status::Corruption("parquet footer: row group " + std::to_string(g) +
                                " has a bad row count " + std::to_string(group.num_rows));
    }
    total_rows += group.num_rows;
    for (size_t c = 0; c < num_columns; ++c) {
      const LeafColumn& leaf = tree.leaves[c];
      RETURN_NOT_OK(CheckChunk(group.columns[c], schema[static_cast<size_t>(leaf.element)], leaf,
                               group.num_rows, data_end)
                        .WithContext("parquet footer: row group " + std::to_string(g) +
                                     ": column '" + leaf.field.name + "'"));
    }
  }
  if (total_rows != metadata.num_rows) {
    return Status::Corruption("parquet footer: num_rows " + std::to_string(metadata.num_rows) +
                              " but row groups hold " + std::to_string(total_rows));
  }
  if (tree_out) *tree_out = std::move(tree);
  return metadata;
}

Status CheckPageSizes(const PageHeader& h, int64_t left, int64_t page_offset) {
  if (h.compressed_page_size < 0 || h.compressed_page_size > left) {
    return Status::Corruption("page at offset " + std::to_string(page_offset) + " of " +
                              std::to_string(h.compressed_page_size) +
                              " bytes runs past the chunk (" + std::to_string(left) +
                              " bytes left)");
  }
  if (h.uncompressed_page_size < 0 || h.uncompressed_page_size > kMaxPageSize) {
    return Status::Corruption("page at offset " + std::to_string(page_offset) +
                              " has a bad uncompressed size " +
                              std::to_string(h.uncompressed_page_size));
  }
  return Status::OK();
}

Status CheckPageCrc(const PageHeader& h, uint32_t computed, int64_t page_offset) {
  const auto stored = static_cast<uint32_t>(*h.crc);
  if (stored == computed) return Status::OK();
  char text[64];
  std::snprintf(text, sizeof(text), "crc 0x%08x in the header, 0x%08x computed", stored, computed);
  return Status::Corruption("page at offset " + std::to_string(page_offset) +
                            " fails its checksum (" + text + " over its " +
                            std::to_string(h.compressed_page_size) + " bytes)");
}

std::string RowGroupContext(const std::string& path, int row_group) {
  return (path.empty() ? std::string("parquet") : path) + ": row group " +
         std::to_string(row_group);
}

}  // namespace internal

// ------------------------------------------------------------------------------------------------
// FileReader

Result<std::unique_ptr<FileReader>> FileReader::Open(std::shared_ptr<Buffer> file,
                                                     OpenOptions options) {
  if (!file) return Status::Invalid("parquet: no file buffer");
  std::unique_ptr<FileReader> r(new FileReader(std::move(options)));
  r->whole_file_ = std::move(file);
  RETURN_NOT_OK(r->ReadFooter(r->whole_file_->size()));
  return r;
}

Result<std::unique_ptr<FileReader>> FileReader::Open(std::unique_ptr<File> file,
                                                     OpenOptions options) {
  if (!file) return Status::Invalid("parquet: no file");
  std::unique_ptr<FileReader> r(new FileReader(std::move(options)));
  auto size = file->Size();
  if (!size.ok()) return r->WithPath(size.status());
  r->file_ = std::move(file);
  RETURN_NOT_OK(r->ReadFooter(*size));
  return r;
}

Result<std::unique_ptr<FileReader>> FileReader::Open(FileSystem& fs, const std::string& path,
                                                     OpenOptions options) {
  ASSIGN_OR_RAISE(auto file, fs.OpenFile(path, FileMode::kRead));
  if (options.path.empty()) options.path = path;
  return Open(std::move(file), std::move(options));
}

Result<std::shared_ptr<Buffer>> FileReader::ReadRange(int64_t position, int64_t length) const {
  if (whole_file_) return Buffer::Slice(whole_file_, position, length);
  ASSIGN_OR_RAISE(auto bytes, file_->ReadAt(position, length));
  if (bytes->size() < length) {
    return Status::IOError("short read: " + std::to_string(bytes->size()) + " of " +
                           std::to_string(length) + " bytes at offset " + std::to_string(position));
  }
  return bytes;
}

Status FileReader::WithPath(const Status& st) const {
  return options_.path.empty() ? st : st.WithContext(options_.path);
}

Status FileReader::ReadFooter(int64_t size) {
  Status st = ParseFooterAndSchema(size);
  return st.ok() ? st : WithPath(st);
}

Status FileReader::ParseFooterAndSchema(int64_t size) {
  std::shared_ptr<Buffer> head = Buffer::Empty(), tail = Buffer::Empty();
  if (size >= internal::kMagicSize + internal::kFooterTailSize) {
    ASSIGN_OR_RAISE(head, ReadRange(0, internal::kMagicSize));
    ASSIGN_OR_RAISE(tail, ReadRange(size - internal::kFooterTailSize, internal::kFooterTailSize));
  }
  // FooterLength rejects a file too short for both ends before it reads them.
  ASSIGN_OR_RAISE(const int64_t footer_len,
                  internal::FooterLength(head->data(), tail->data(), size));
  data_end_ = size - internal::kFooterTailSize - footer_len;
  ASSIGN_OR_RAISE(auto footer, ReadRange(data_end_, footer_len));
  auto tree = std::make_shared<internal::SchemaTree>();
  ASSIGN_OR_RAISE(metadata_,
                  internal::ParseFooter(footer->data(), footer_len, data_end_, tree.get()));
  RETURN_NOT_OK(tree->unreadable);
  std::vector<arrow::Field> fields = tree->fields;
  tree_ = std::move(tree);
  arrow::KeyValueMetadata kv;
  for (const auto& e : metadata_.key_value_metadata) {
    if (e.key == "ARROW:schema") continue;
    kv.emplace_back(e.key, e.value.value_or(""));
  }
  auto arrow_schema = std::make_shared<arrow::Schema>(std::move(fields), std::move(kv));
  RETURN_NOT_OK(arrow_schema->Validate().WithContext("parquet schema"));
  schema_ = std::move(arrow_schema);
  return Status::OK();
}

Result<arrow::RecordBatchPtr> FileReader::ReadRowGroup(
    int i, const std::vector<int>& column_indices) const {
  if (i < 0 || i >= num_row_groups()) return Status::OutOfRange("row group " + std::to_string(i));
  const RowGroup& group = metadata_.row_groups[i];
  PageScratch page_scratch;
  std::vector<arrow::Array> columns;
  std::vector<arrow::Field> fields;
  for (int c : column_indices) {
    if (c < 0 || c >= schema_->num_fields()) {
      return Status::OutOfRange("column index " + std::to_string(c));
    }
    // Only the chunks' bytes are read (or, for a file in memory, sliced).
    auto read_chunk = [&](int l, internal::DecodedLeaf* levels) -> Result<Array> {
      const ColumnChunk& chunk = group.columns[static_cast<size_t>(l)];
      const internal::LeafColumn& leaf = tree_->leaves[static_cast<size_t>(l)];
      ASSIGN_OR_RAISE(const internal::ByteRange range,
                      internal::ChunkRange(*chunk.meta_data, data_end_));
      ASSIGN_OR_RAISE(auto bytes, ReadRange(range.start, range.end - range.start));
      const int64_t values = leaf.max_rep > 0 ? chunk.meta_data->num_values : group.num_rows;
      ChunkDecoder decoder(leaf, metadata_.schema[static_cast<size_t>(leaf.element)], values,
                           levels != nullptr, options_.verify_page_checksums, &page_scratch);
      ASSIGN_OR_RAISE(Array array, decoder.Decode(bytes->data(), range, chunk));
      if (levels) {
        levels->column = &leaf;
        levels->def = std::move(decoder.def_levels());
        levels->rep = std::move(decoder.rep_levels());
        levels->values = array;
      }
      return array;
    };
    auto read_column = [&]() -> Result<Array> {
      const int first = tree_->first_leaf[static_cast<size_t>(c)];
      const int last = tree_->first_leaf[static_cast<size_t>(c) + 1];
      if (!schema_->field(c).type.is_nested()) return read_chunk(first, nullptr);
      std::vector<internal::DecodedLeaf> leaves(static_cast<size_t>(last - first));
      for (int l = first; l < last; ++l) {
        RETURN_NOT_OK(read_chunk(l, &leaves[static_cast<size_t>(l - first)]).status());
      }
      return internal::Assemble(schema_->field(c), leaves, group.num_rows);
    };
    auto array = read_column();
    if (!array.ok()) return array.status().WithContext(internal::RowGroupContext(options_.path, i));
    columns.push_back(std::move(*array));
    fields.push_back(schema_->field(c));
  }
  auto schema = std::make_shared<arrow::Schema>(std::move(fields), schema_->metadata());
  return arrow::RecordBatch::Make(std::move(schema), group.num_rows, std::move(columns));
}

Result<std::vector<arrow::RecordBatchPtr>> FileReader::Read(const ReaderOptions& options) const {
  std::vector<int> indices;
  if (options.columns.empty()) {
    for (int c = 0; c < schema_->num_fields(); ++c) indices.push_back(c);
  } else {
    for (const auto& name : options.columns) {
      const int c = schema_->GetFieldIndex(name);
      if (c < 0) return Status::Invalid("parquet: no column named '" + name + "'");
      indices.push_back(c);
    }
  }
  const int64_t batch_rows = std::max<int64_t>(1, options.batch_rows);
  std::vector<arrow::RecordBatchPtr> out;
  for (int g = 0; g < num_row_groups(); ++g) {
    ASSIGN_OR_RAISE(auto batch, ReadRowGroup(g, indices));
    if (batch->num_rows() <= batch_rows) {
      out.push_back(std::move(batch));
      continue;
    }
    for (int64_t off = 0; off < batch->num_rows(); off += batch_rows) {
      out.push_back(batch->Slice(off, batch_rows));
    }
  }
  return out;
}

}  // namespace oxbow::parquet
