#include "oxbow/parquet/writer.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <span>
#include <type_traits>

#include "oxbow/arrow/compute.h"
#include "oxbow/parquet/encoding_internal.h"
#include "oxbow/parquet/nested_internal.h"
#include "oxbow/parquet/schema_internal.h"

namespace oxbow::parquet {

using arrow::Array;
using arrow::TimeUnit;
using arrow::TypeId;

Result<Codec> ParseCodec(std::string_view name) {
  if (name == "none" || name == "uncompressed") return Codec::kUncompressed;
  if (name == "snappy") return Codec::kSnappy;
  if (name == "gzip") return Codec::kGzip;
  if (name == "zstd") return Codec::kZstd;
  if (name == "lz4" || name == "lz4_raw") return Codec::kLz4Raw;
  return Status::Invalid("unknown compression '" + std::string(name) +
                         "' (expected none, snappy, gzip, zstd or lz4)");
}

namespace {

// Writes through the FileSystem seam, one positional write per piece.
class FileOutputStream : public OutputStream {
 public:
  explicit FileOutputStream(std::unique_ptr<File> file) : file_(std::move(file)) {}
  Status Write(const void* data, int64_t size) override {
    const ByteSpan piece(static_cast<const uint8_t*>(data), static_cast<size_t>(size));
    return Write(std::span<const ByteSpan>(&piece, 1));
  }
  Status Write(std::span<const ByteSpan> pieces) override {
    RETURN_NOT_OK(file_->WriteAt(position_, pieces));
    for (const ByteSpan& piece : pieces) position_ += static_cast<int64_t>(piece.size());
    return Status::OK();
  }
  Status Close() override { return file_->Sync(); }

 private:
  std::unique_ptr<File> file_;
  int64_t position_ = 0;
};

}  // namespace

Result<std::unique_ptr<OutputStream>> OpenFileOutput(FileSystem& fs, const std::string& path) {
  ASSIGN_OR_RAISE(auto file, fs.OpenFile(path, FileMode::kCreateSequential));
  return std::unique_ptr<OutputStream>(new FileOutputStream(std::move(file)));
}

// ------------------------------------------------------------------------------------------------
// Column writers

class ColumnWriter {
 public:
  virtual ~ColumnWriter() = default;
  // Appends rows [offset, offset + length) of `array`.
  virtual Status Write(const Array& array, int64_t offset, int64_t length) = 0;
  // Appends the levels of a nested leaf and its values (`leaf` rows `rows`, one per entry whose
  // definition level is the maximum).
  virtual Status WriteLevels(const internal::ShreddedLeaf& leaf) = 0;
  // Bytes buffered for the current row group (encoded pages plus the open page).
  virtual int64_t BufferedBytes() const = 0;
  // Closes the column chunk, handing its bytes to `write`. `meta` offsets are relative to the
  // chunk's start.
  using ChunkSink = std::function<Status(std::span<const ByteSpan> pieces)>;
  virtual Status FinishChunk(ColumnMetaData* meta, const ChunkSink& write) = 0;
  ColumnMetrics metrics;
};

namespace {

// A column chunk's pages as they go to disk, each page's header apart from its body, so a body
// is compressed straight into place and no page is copied into a chunk-sized buffer. Bodies live
// in slabs that stay allocated from row group to row group (and are not zero-filled first, as a
// std::string's resize would).
class PageStore {
 public:
  // Room for the next page body, at least `n` bytes; AddPage says how much of it was used.
  uint8_t* Reserve(size_t n) {
    while (slab_ < slabs_.size() && slabs_[slab_].size - used_ < n) {
      ++slab_;
      used_ = 0;
    }
    if (slab_ == slabs_.size()) {
      // Doubling from 64 KiB up to 4 MiB: a narrow column's chunk stays small.
      const size_t grown = slabs_.empty() ? kFirstSlabBytes : 2 * slabs_.back().size;
      const size_t size = std::max(n, std::min(grown, kSlabBytes));
      slabs_.push_back({std::unique_ptr<uint8_t[]>(new uint8_t[size]), size});
      used_ = 0;
    }
    return slabs_[slab_].data.get() + used_;
  }
  // Adds a page: `header`, then the first `body_size` bytes at the last Reserve. The dictionary
  // page goes `first`. Returns the header's size.
  size_t AddPage(const PageHeader& header, size_t body_size, bool first) {
    const size_t offset = headers_.size();
    SerializePageHeader(header, &headers_);
    Page page{offset, headers_.size() - offset, slabs_[slab_].data.get() + used_, body_size};
    used_ += body_size;
    bytes_ += page.header_size + body_size;
    pages_.insert(first ? pages_.begin() : pages_.end(), page);
    return page.header_size;
  }
  // Bytes of headers and bodies.
  int64_t bytes() const { return static_cast<int64_t>(bytes_); }
  void AppendPieces(std::vector<ByteSpan>* out) const {
    const auto* headers = reinterpret_cast<const uint8_t*>(headers_.data());
    for (const Page& p : pages_) {
      out->emplace_back(headers + p.header_offset, p.header_size);
      out->emplace_back(p.body, p.body_size);
    }
  }
  void Clear() {
    headers_.clear();
    pages_.clear();
    slab_ = used_ = bytes_ = 0;
  }

 private:
  static constexpr size_t kFirstSlabBytes = size_t{64} << 10;
  static constexpr size_t kSlabBytes = size_t{4} << 20;
  struct Slab {
    std::unique_ptr<uint8_t[]> data;
    size_t size;
  };
  struct Page {
    size_t header_offset, header_size;
    const uint8_t* body;
    size_t body_size;
  };
  std::vector<Slab> slabs_;
  size_t slab_ = 0, used_ = 0;  // the slab being filled, and its bytes taken
  std::string headers_;
  std::vector<Page> pages_;
  size_t bytes_ = 0;
};

// Bytes grown without zero-filling, written through pointers.
class ByteBuffer {
 public:
  uint8_t* data() { return data_.get(); }
  size_t size() const { return size_; }
  // `n` more bytes, uninitialized; returns where they start.
  uint8_t* Extend(size_t n) {
    if (n > capacity_ - size_) Grow(size_ + n);
    uint8_t* p = data_.get() + size_;
    size_ += n;
    return p;
  }
  void Append(const void* p, size_t n) {
    if (n > 0) std::memcpy(Extend(n), p, n);
  }
  void Resize(size_t n) {
    if (n > size_) Extend(n - size_);
    size_ = n;
  }

 private:
  void Grow(size_t needed) {
    const size_t capacity = std::max({needed, capacity_ * 2, size_t{4096}});
    std::unique_ptr<uint8_t[]> bigger(new uint8_t[capacity]);
    if (size_ > 0) std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    capacity_ = capacity;
  }
  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0, capacity_ = 0;
};

// Min/max ordering of a column (ColumnOrder TYPE_ORDER as parquet.thrift defines it).
enum class Order { kSigned, kUnsigned, kFloat, kBool, kBytes, kDecimalBytes };

template <typename T, Order O>
bool Less(const T& a, const T& b) {
  if constexpr (O == Order::kUnsigned) {
    using U = std::make_unsigned_t<T>;
    return static_cast<U>(a) < static_cast<U>(b);
  } else if constexpr (O == Order::kDecimalBytes) {
    // Big-endian two's complement of equal width: flip the sign bit, then compare bytes.
    const auto a0 = static_cast<uint8_t>(a[0]) ^ 0x80, b0 = static_cast<uint8_t>(b[0]) ^ 0x80;
    if (a0 != b0) return a0 < b0;
    return a.substr(1) < b.substr(1);
  } else if constexpr (O == Order::kBytes) {
    // Most values differ in their first byte: decided there without a call to memcmp.
    if (!a.empty() && !b.empty() && a[0] != b[0]) {
      return static_cast<uint8_t>(a[0]) < static_cast<uint8_t>(b[0]);
    }
    return a < b;  // string_view compares bytes as unsigned char
  } else {
    return a < b;
  }
}

// Owned storage for a statistic (views would dangle once the batch is gone).
template <typename T>
struct StatSlot {
  T value{};
  void Set(const T& v) { value = v; }
  const T& get() const { return value; }
};
template <>
struct StatSlot<std::string_view> {
  std::string value;
  void Set(std::string_view v) { value.assign(v.data(), v.size()); }
  std::string_view get() const { return value; }
};

inline uint64_t HashBits(uint64_t x) { return x * 0x9E3779B97F4A7C15ull; }

// Open-addressing hash dictionary for fixed-width physical values.
template <typename T>
class NumericDictionary {
 public:
  NumericDictionary() { Rehash(1024); }
  int64_t size() const { return static_cast<int64_t>(values_.size()); }
  int64_t PlainSize() const { return size() * static_cast<int64_t>(sizeof(T)); }
  void Clear() {
    values_.clear();
    Rehash(1024);
  }
  // The index of `v`, inserting it when new (*inserted says which).
  uint32_t GetOrInsert(T v, bool* inserted) {
    const uint64_t bits = Bits(v);
    size_t slot = HashBits(bits) >> shift_;
    while (true) {
      const uint32_t s = slots_[slot];
      if (s == 0) break;
      if (Bits(values_[s - 1]) == bits) {
        *inserted = false;
        return s - 1;
      }
      slot = (slot + 1) & mask_;
    }
    values_.push_back(v);
    slots_[slot] = static_cast<uint32_t>(values_.size());
    *inserted = true;
    if (values_.size() * 2 > slots_.size()) Rehash(slots_.size() * 2);
    return static_cast<uint32_t>(values_.size() - 1);
  }
  T Value(uint32_t index) const { return values_[index]; }
  void AppendPlain(std::string* out) const {
    out->append(reinterpret_cast<const char*>(values_.data()), values_.size() * sizeof(T));
  }

 private:
  static uint64_t Bits(T v) {
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof(T));
    return b;
  }
  void Rehash(size_t capacity) {
    slots_.assign(capacity, 0);
    mask_ = capacity - 1;
    shift_ = 64 - __builtin_ctzll(capacity);
    for (size_t i = 0; i < values_.size(); ++i) {
      size_t slot = HashBits(Bits(values_[i])) >> shift_;
      while (slots_[slot] != 0) slot = (slot + 1) & mask_;
      slots_[slot] = static_cast<uint32_t>(i + 1);
    }
  }
  std::vector<T> values_;
  std::vector<uint32_t> slots_;  // index + 1; 0 = empty
  size_t mask_ = 0;
  int shift_ = 0;
};

// Hash dictionary for BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY values; bytes live in one arena.
class BytesDictionary {
 public:
  explicit BytesDictionary(bool fixed = false) : fixed_(fixed) { Rehash(1024); }
  void set_fixed(bool fixed) { fixed_ = fixed; }
  int64_t size() const { return static_cast<int64_t>(entries_.size()); }
  int64_t PlainSize() const {
    return static_cast<int64_t>(arena_.size()) + (fixed_ ? 0 : 4 * size());
  }
  void Clear() {
    entries_.clear();
    arena_.clear();
    slots_.clear();
    Rehash(1024);
  }
  uint32_t GetOrInsert(std::string_view v, bool* inserted) {
    const uint64_t h = XXH3_64bits(v.data(), v.size());
    size_t slot = h >> shift_;
    while (true) {
      const Slot& s = slots_[slot];
      if (s.index == 0) break;
      if (s.hash == h) {
        const Entry& e = entries_[s.index - 1];
        if (e.length == v.size() &&
            std::memcmp(arena_.data() + e.offset, v.data(), v.size()) == 0) {
          *inserted = false;
          return s.index - 1;
        }
      }
      slot = (slot + 1) & mask_;
    }
    entries_.push_back({arena_.size(), static_cast<uint32_t>(v.size())});
    arena_.append(v.data(), v.size());
    slots_[slot] = {h, static_cast<uint32_t>(entries_.size())};
    *inserted = true;
    if (entries_.size() * 2 > slots_.size()) Rehash(slots_.size() * 2);
    return static_cast<uint32_t>(entries_.size() - 1);
  }
  std::string_view Value(uint32_t index) const {
    const Entry& e = entries_[index];
    return std::string_view(arena_.data() + e.offset, e.length);
  }
  void AppendPlain(std::string* out) const {
    out->reserve(out->size() + static_cast<size_t>(PlainSize()));
    for (const Entry& e : entries_) {
      if (!fixed_) {
        const uint32_t len = e.length;
        out->append(reinterpret_cast<const char*>(&len), 4);
      }
      out->append(arena_.data() + e.offset, e.length);
    }
  }

 private:
  struct Entry {
    size_t offset;
    uint32_t length;
  };
  struct Slot {
    uint64_t hash = 0;
    uint32_t index = 0;  // entry + 1; 0 = empty
  };
  void Rehash(size_t capacity) {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    shift_ = 64 - __builtin_ctzll(capacity);
    for (const Slot& s : old) {
      if (s.index == 0) continue;
      size_t slot = s.hash >> shift_;
      while (slots_[slot].index != 0) slot = (slot + 1) & mask_;
      slots_[slot] = s;
    }
  }
  bool fixed_;
  std::vector<Entry> entries_;
  std::string arena_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 0;
};

// Turns rows [start, start + n) of an Arrow array into physical values (garbage at nulls).
// Returns a pointer into the array when no conversion is needed, else into `scratch`.
template <typename T>
using ConvertFn = const T* (*)(const Array& a, int64_t start, int64_t n, std::vector<T>* scratch,
                               std::string* bytes, int32_t width);

template <typename Src, typename Dst, int64_t kScale = 1>
const Dst* CastValues(const Array& a, int64_t start, int64_t n, std::vector<Dst>* scratch,
                      std::string*, int32_t) {
  const Src* src = a.values<Src>() + start;
  if constexpr (std::is_same_v<Src, Dst> && kScale == 1) {
    return src;
  } else {
    scratch->resize(static_cast<size_t>(n));
    Dst* out = scratch->data();
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Dst>(src[i]) * static_cast<Dst>(kScale);
    return out;
  }
}

const uint8_t* BoolValues(const Array& a, int64_t start, int64_t n, std::vector<uint8_t>* scratch,
                          std::string*, int32_t) {
  scratch->resize(static_cast<size_t>(n));
  const uint8_t* bits = a.buffer(1)->data();
  const int64_t base = a.offset() + start;
  for (int64_t i = 0; i < n; ++i) (*scratch)[i] = bit_util::GetBit(bits, base + i);
  return scratch->data();
}

template <typename Dst>
const Dst* DecimalToInt(const Array& a, int64_t start, int64_t n, std::vector<Dst>* scratch,
                        std::string*, int32_t) {
  scratch->resize(static_cast<size_t>(n));
  const uint8_t* src = a.buffer(1)->data() + (a.offset() + start) * 16;
  for (int64_t i = 0; i < n; ++i) std::memcpy(&(*scratch)[i], src + i * 16, sizeof(Dst));
  return scratch->data();
}

const std::string_view* Views(const Array& a, int64_t start, int64_t n,
                              std::vector<std::string_view>* scratch, std::string*, int32_t) {
  scratch->resize(static_cast<size_t>(n));
  std::string_view* out = scratch->data();
  if (a.type().is_variable_length()) {
    // From the offsets directly: GetView is a call and a type test per value.
    const int32_t* offsets = a.raw_offsets() + start;
    const auto* bytes = reinterpret_cast<const char*>(a.buffer(2)->data());
    for (int64_t i = 0; i < n; ++i) {
      out[i] =
          std::string_view(bytes + offsets[i], static_cast<size_t>(offsets[i + 1] - offsets[i]));
    }
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = a.GetView(start + i);
  }
  return out;
}

// decimal128 (16 bytes little-endian) -> `width` bytes big-endian two's complement.
const std::string_view* DecimalToFixed(const Array& a, int64_t start, int64_t n,
                                       std::vector<std::string_view>* scratch, std::string* bytes,
                                       int32_t width) {
  scratch->resize(static_cast<size_t>(n));
  bytes->resize(static_cast<size_t>(n * width));
  const uint8_t* src = a.buffer(1)->data() + (a.offset() + start) * 16;
  char* dst = bytes->data();
  for (int64_t i = 0; i < n; ++i) {
    for (int32_t b = 0; b < width; ++b)
      dst[i * width + b] = static_cast<char>(src[i * 16 + width - 1 - b]);
    (*scratch)[i] = std::string_view(dst + i * width, static_cast<size_t>(width));
  }
  return scratch->data();
}

struct ColumnConfig {
  PhysicalType physical_type;
  int16_t max_def;
  int16_t max_rep;
  bool dictionary;
  int32_t width = 0;  // FIXED_LEN_BYTE_ARRAY length
  const WriterOptions* options;
  std::vector<std::string> path;
};

template <typename T, Order O>
class TypedColumnWriter final : public ColumnWriter {
  static constexpr bool kBytes = std::is_same_v<T, std::string_view>;
  static constexpr bool kFloat = std::is_floating_point_v<T>;
  using Dictionary = std::conditional_t<kBytes, BytesDictionary, NumericDictionary<T>>;

 public:
  TypedColumnWriter(ColumnConfig config, ConvertFn<T> convert)
      : config_(std::move(config)), convert_(convert) {
    if constexpr (kBytes)
      dict_.set_fixed(config_.physical_type == PhysicalType::kFixedLenByteArray);
    use_dict_ = config_.dictionary;
    plain_.Resize(kLevelsRoom);
  }

  Status Write(const Array& array, int64_t offset, int64_t length) override {
    constexpr int64_t kMiniBatch = 1024;
    const uint8_t* validity = array.null_count() > 0 ? array.validity() : nullptr;
    const int64_t end = offset + length;
    for (int64_t start = offset, n = 0; start < end; start += n) {
      n = std::min({kMiniBatch, end - start, config_.options->data_page_rows - page_values_});
      const T* values = convert_(array, start, n, &scratch_values_, &scratch_bytes_, config_.width);
      const int64_t bit_base = array.offset() + start;
      int64_t nulls = 0;
      if (validity) nulls = n - bit_util::CountSetBits(validity, bit_base, n);
      if (config_.max_def > 0) {
        if (nulls > 0) {
          if (static_cast<int64_t>(levels_.size()) < page_values_) levels_.assign(page_values_, 1);
          const size_t base = levels_.size();
          levels_.resize(base + static_cast<size_t>(n));
          for (int64_t i = 0; i < n; ++i) {
            levels_[base + static_cast<size_t>(i)] = bit_util::GetBit(validity, bit_base + i);
          }
        } else if (!levels_.empty()) {
          levels_.insert(levels_.end(), static_cast<size_t>(n), 1u);
        }
      }
      if (nulls == 0 && O != Order::kBool && !dict_mode()) {
        AppendPlainValues(values, n);
      } else if (nulls == 0) {
        for (int64_t i = 0; i < n; ++i) Put(values[i]);
      } else {
        for (int64_t i = 0; i < n; ++i) {
          if (bit_util::GetBit(validity, bit_base + i)) Put(values[i]);
        }
      }
      page_values_ += n;
      page_nulls_ += nulls;
      page_rows_ += n;
      RETURN_NOT_OK(AfterValues());
    }
    return Status::OK();
  }

  Status WriteLevels(const internal::ShreddedLeaf& leaf) override {
    constexpr int64_t kMiniBatch = 1024;
    Array values;
    if (!leaf.rows.empty()) {
      ASSIGN_OR_RAISE(values, arrow::TakeRows(leaf.values, leaf.rows));
    }
    const auto n = static_cast<int64_t>(leaf.def.size());
    const uint32_t max_def = static_cast<uint32_t>(config_.max_def);
    int64_t next_value = 0;
    for (int64_t start = 0, end = 0; start < n; start = end) {
      // A page ends at a row boundary (an entry of repetition level 0).
      end = std::min(n, start + std::min(kMiniBatch, config_.options->data_page_rows));
      while (end < n && leaf.rep[end] != 0) ++end;
      int64_t count = 0, rows = 0;
      for (int64_t i = start; i < end; ++i) {
        count += leaf.def[i] == max_def;
        rows += leaf.rep[i] == 0;
      }
      if (count > 0) {
        const T* v =
            convert_(values, next_value, count, &scratch_values_, &scratch_bytes_, config_.width);
        for (int64_t i = 0; i < count; ++i) Put(v[i]);
        next_value += count;
      }
      if (static_cast<int64_t>(levels_.size()) < page_values_) {
        levels_.resize(static_cast<size_t>(page_values_), max_def);
      }
      levels_.insert(levels_.end(), leaf.def.begin() + start, leaf.def.begin() + end);
      rep_levels_.insert(rep_levels_.end(), leaf.rep.begin() + start, leaf.rep.begin() + end);
      page_values_ += end - start;
      page_nulls_ += end - start - count;
      page_rows_ += rows;
      RETURN_NOT_OK(AfterValues());
    }
    return Status::OK();
  }

  int64_t BufferedBytes() const override {
    return pages_.bytes() + PageBytes() + (dict_mode() ? dict_.PlainSize() : 0);
  }

  Status FinishChunk(ColumnMetaData* meta, const ChunkSink& write) override {
    RETURN_NOT_OK(FlushPage());
    int64_t dict_uncompressed = 0, dict_bytes = 0;
    const bool wrote_dict = use_dict_ && !abandoned_ && dict_pages_ > 0;
    if (wrote_dict) {
      page_body_.clear();
      dict_.AppendPlain(&page_body_);
      const uint8_t* body = nullptr;
      size_t body_size = 0;
      RETURN_NOT_OK(CompressPage(reinterpret_cast<const uint8_t*>(page_body_.data()),
                                 page_body_.size(), nullptr, 0, &body, &body_size));
      PageHeader h;
      h.type = PageType::kDictionaryPage;
      h.uncompressed_page_size = static_cast<int32_t>(page_body_.size());
      h.compressed_page_size = static_cast<int32_t>(body_size);
      h.dictionary_page_header =
          DictionaryPageHeader{static_cast<int32_t>(dict_.size()), Encoding::kPlain, std::nullopt};
      const size_t header_size = AddPage(&h, body, body_size, /*first=*/true);
      dict_uncompressed = static_cast<int64_t>(header_size + page_body_.size());
      dict_bytes = static_cast<int64_t>(header_size + body_size);
    }

    *meta = ColumnMetaData{};
    meta->type = config_.physical_type;
    meta->path_in_schema = config_.path;
    meta->codec = config_.options->compression;
    meta->num_values = chunk_values_;
    meta->total_uncompressed_size = dict_uncompressed + chunk_uncompressed_;
    meta->total_compressed_size = pages_.bytes();
    meta->data_page_offset = dict_bytes;
    if (wrote_dict) {
      meta->dictionary_page_offset = 0;
      meta->encodings = {Encoding::kPlain, Encoding::kRle, Encoding::kRleDictionary};
      meta->encoding_stats.push_back({PageType::kDictionaryPage, Encoding::kPlain, 1});
    } else {
      meta->encodings = {Encoding::kPlain, Encoding::kRle};
    }
    const PageType data_type =
        config_.options->data_page_version == 2 ? PageType::kDataPageV2 : PageType::kDataPage;
    if (dict_pages_ > 0)
      meta->encoding_stats.push_back({data_type, Encoding::kRleDictionary, dict_pages_});
    if (plain_pages_ > 0)
      meta->encoding_stats.push_back({data_type, Encoding::kPlain, plain_pages_});

    if (config_.options->write_statistics) {
      Statistics s;
      s.null_count = chunk_nulls_;
      if constexpr (kFloat) s.nan_count = chunk_nans_;
      if (has_minmax_) {
        s.min_value = EncodeStat(min_.get(), /*is_min=*/true);
        s.max_value = EncodeStat(max_.get(), /*is_min=*/false);
        s.is_min_value_exact = true;
        s.is_max_value_exact = true;
      }
      meta->statistics = std::move(s);
    }

    // File-wide metrics.
    metrics.compressed_size += meta->total_compressed_size;
    metrics.uncompressed_size += meta->total_uncompressed_size;
    metrics.value_count += chunk_values_;
    metrics.null_count += chunk_nulls_;
    if constexpr (kFloat) metrics.nan_count = metrics.nan_count.value_or(0) + chunk_nans_;
    if (has_minmax_) {
      if (!file_has_minmax_ || Less<T, O>(min_.get(), file_min_.get())) file_min_.Set(min_.get());
      if (!file_has_minmax_ || Less<T, O>(file_max_.get(), max_.get())) file_max_.Set(max_.get());
      file_has_minmax_ = true;
      metrics.lower_bound = EncodeStat(file_min_.get(), true);
      metrics.upper_bound = EncodeStat(file_max_.get(), false);
    }

    pieces_.clear();
    pages_.AppendPieces(&pieces_);
    RETURN_NOT_OK(write(pieces_));
    ResetChunk();
    return Status::OK();
  }

 private:
  // A chunk whose first values are this many or more and at least 3/4 distinct is written PLAIN
  // from its start: a dictionary of mostly unique values (ids, offsets, timestamps, random
  // strings) costs hashing and adds a dictionary page for no gain.
  static constexpr int64_t kDictionaryProbeValues = 4096;
  // Room before a page's PLAIN values for its levels (a page without nulls needs about 10
  // bytes): a larger level section means copying the values after it.
  static constexpr size_t kLevelsRoom = 64;

  bool dict_mode() const { return use_dict_ && !fallen_back_ && !abandoned_; }

  // After values were added to the open page: gives up or falls back from the dictionary, and
  // closes the page once it is full.
  Status AfterValues() {
    if (dict_mode() && chunk_values_ == 0 && page_values_ >= kDictionaryProbeValues &&
        dict_.size() * 4 > page_values_ * 3) {
      AbandonDictionary();
    }
    if (dict_mode() && dict_.PlainSize() > config_.options->dictionary_page_size_limit) {
      RETURN_NOT_OK(FlushPage());
      fallen_back_ = true;
    }
    if (PageBytes() >= config_.options->data_page_size ||
        page_values_ >= config_.options->data_page_rows) {
      RETURN_NOT_OK(FlushPage());
    }
    return Status::OK();
  }

  // Re-encodes the open page, the chunk's first, PLAIN and drops the dictionary for the chunk.
  void AbandonDictionary() {
    abandoned_ = true;
    for (const uint32_t index : indices_) AppendPlain(dict_.Value(index));
    indices_.clear();
    dict_.Clear();
  }

  void AppendPlain(const T& v) {
    if constexpr (kBytes) {
      if (config_.physical_type == PhysicalType::kByteArray) {
        const auto len = static_cast<uint32_t>(v.size());
        plain_.Append(&len, 4);
      }
      plain_.Append(v.data(), v.size());
    } else {
      plain_.Append(&v, sizeof(T));
    }
  }

  // Put() of n non-null values in PLAIN mode: one copy sized up front, statistics in the same
  // loop (or, for integers, a min/max loop over the values in place).
  void AppendPlainValues(const T* values, int64_t n) {
    if (n == 0) return;
    if constexpr (kBytes) {
      const bool prefixed = config_.physical_type == PhysicalType::kByteArray;
      size_t total = prefixed ? 4 * static_cast<size_t>(n) : 0;
      for (int64_t i = 0; i < n; ++i) total += values[i].size();
      uint8_t* p = plain_.Extend(total);
      for (int64_t i = 0; i < n; ++i) {
        const std::string_view v = values[i];
        if (prefixed) {
          const auto len = static_cast<uint32_t>(v.size());
          std::memcpy(p, &len, 4);
          p += 4;
        }
        if (!v.empty()) std::memcpy(p, v.data(), v.size());
        p += v.size();
        UpdateStats(v);
      }
    } else {
      std::memcpy(plain_.Extend(static_cast<size_t>(n) * sizeof(T)), values,
                  static_cast<size_t>(n) * sizeof(T));
      if constexpr (kFloat) {
        for (int64_t i = 0; i < n; ++i) {
          chunk_nans_ += std::isnan(values[i]);
          UpdateStats(values[i]);
        }
      } else {
        T lo = values[0], hi = values[0];
        for (int64_t i = 1; i < n; ++i) {
          lo = Less<T, O>(values[i], lo) ? values[i] : lo;
          hi = Less<T, O>(hi, values[i]) ? values[i] : hi;
        }
        UpdateStats(lo);
        UpdateStats(hi);
      }
    }
  }

  // Writes a page body into pages_' next room: `raw_size` bytes at `raw` as they are (a v2
  // page's levels), then `n` bytes at `in` compressed; *body and *body_size say where it is.
  Status CompressPage(const uint8_t* in, size_t n, const uint8_t* raw, size_t raw_size,
                      const uint8_t** body, size_t* body_size) {
    const Codec codec = config_.options->compression;
    const size_t bound = internal::CompressBound(codec, n);
    uint8_t* out = pages_.Reserve(raw_size + bound);
    if (raw_size > 0) std::memcpy(out, raw, raw_size);
    size_t written = 0;
    RETURN_NOT_OK(internal::CompressTo(codec, config_.options->compression_level, in, n,
                                       out + raw_size, bound, &written));
    *body = out;
    *body_size = raw_size + written;
    return Status::OK();
  }

  // Adds the page whose body CompressPage just wrote, under `h` (checksummed when the options
  // say so). Returns the header's size.
  size_t AddPage(PageHeader* h, const uint8_t* body, size_t body_size, bool first = false) {
    if (config_.options->page_checksums) {
      // The i32 field holds the CRC's 32 bits.
      h->crc = static_cast<int32_t>(internal::PageCrc(0, body, body_size));
    }
    return pages_.AddPage(*h, body_size, first);
  }

  void ResetChunk() {
    pages_.Clear();
    dict_.Clear();
    fallen_back_ = false;
    abandoned_ = false;
    has_minmax_ = false;
    chunk_values_ = chunk_nulls_ = chunk_nans_ = chunk_uncompressed_ = 0;
    dict_pages_ = plain_pages_ = 0;
  }

  void UpdateStats(const T& v) {
    if constexpr (kFloat) {
      if (std::isnan(v)) return;
    }
    if (!has_minmax_) {
      min_.Set(v);
      max_.Set(v);
      has_minmax_ = true;
    } else if (Less<T, O>(v, min_.get())) {
      min_.Set(v);
    } else if (Less<T, O>(max_.get(), v)) {
      max_.Set(v);
    }
  }

  void Put(const T& v) {
    if constexpr (kFloat) chunk_nans_ += std::isnan(v);
    if constexpr (O == Order::kBool) {
      if ((bool_bits_ & 7) == 0) *plain_.Extend(1) = 0;
      if (v) plain_.data()[plain_.size() - 1] |= static_cast<uint8_t>(1 << (bool_bits_ & 7));
      ++bool_bits_;
      UpdateStats(v);
    } else {
      if (dict_mode()) {
        bool inserted;
        indices_.push_back(dict_.GetOrInsert(v, &inserted));
        if (inserted) UpdateStats(v);
        return;
      }
      AppendPlain(v);
      UpdateStats(v);
    }
  }

  int64_t PageBytes() const {
    if (dict_mode()) {
      return static_cast<int64_t>(indices_.size()) * (internal::BitWidthFor(dict_.size()) + 1) / 8;
    }
    return static_cast<int64_t>(plain_.size() - kLevelsRoom);
  }

  std::string EncodeStat(const T& v, bool is_min) const {
    if constexpr (kBytes) {
      return std::string(v);
    } else if constexpr (kFloat) {
      // Zeros: min is written as -0.0 and max as +0.0 (parquet.thrift ColumnOrder).
      T x = v;
      if (x == 0) x = is_min ? -T(0) : T(0);
      return std::string(reinterpret_cast<const char*>(&x), sizeof(T));
    } else {
      return std::string(reinterpret_cast<const char*>(&v), sizeof(T));
    }
  }

  Status FlushPage() {
    if (page_values_ == 0) return Status::OK();
    const WriterOptions& opts = *config_.options;
    const bool v2 = opts.data_page_version == 2;
    page_body_.clear();
    // Repetition, then definition levels, RLE hybrid; v1 prefixes each with its byte length.
    auto append_levels = [&](const std::vector<uint32_t>& levels, int16_t max_level) {
      const size_t start = page_body_.size();
      if (!v2) page_body_.append(4, '\0');
      const int bit_width = internal::BitWidthFor(static_cast<uint64_t>(max_level));
      if (levels.empty()) {
        internal::RleEncodeRun(static_cast<uint32_t>(max_level), page_values_, bit_width,
                               &page_body_);
      } else {
        internal::RleEncode(levels.data(), page_values_, bit_width, &page_body_);
      }
      if (!v2) {
        const auto len = static_cast<uint32_t>(page_body_.size() - start - 4);
        std::memcpy(page_body_.data() + start, &len, 4);
      }
    };
    if (config_.max_rep > 0) append_levels(rep_levels_, config_.max_rep);
    const size_t rep_levels_size = page_body_.size();
    if (config_.max_def > 0) append_levels(levels_, config_.max_def);
    const size_t levels_size = page_body_.size();
    const bool dict_page = dict_mode();
    // v2 pages keep their levels uncompressed, ahead of the compressed values; v1 pages compress
    // levels and values together: [in, in + in_size).
    const auto* levels = reinterpret_cast<const uint8_t*>(page_body_.data());
    const size_t raw = v2 ? levels_size : 0;
    const uint8_t* in = nullptr;
    size_t in_size = 0;
    if (dict_page) {
      // An all-null chunk has an empty dictionary: its pages hold no indices at all.
      const uint64_t max_index = dict_.size() == 0 ? 0 : static_cast<uint64_t>(dict_.size() - 1);
      const int bw = std::max(1, internal::BitWidthFor(max_index));
      page_body_.push_back(static_cast<char>(bw));
      internal::RleEncode(indices_.data(), static_cast<int64_t>(indices_.size()), bw, &page_body_);
      levels = reinterpret_cast<const uint8_t*>(page_body_.data());
      in = levels + raw;
      in_size = page_body_.size() - raw;
    } else if (v2 || levels_size <= kLevelsRoom) {
      // The levels go into the room left before the values, so the body is not copied.
      uint8_t* start = plain_.data() + kLevelsRoom - (v2 ? 0 : levels_size);
      if (!v2 && levels_size > 0) std::memcpy(start, levels, levels_size);
      in = start;
      in_size = plain_.size() - static_cast<size_t>(start - plain_.data());
    } else {
      page_body_.append(reinterpret_cast<const char*>(plain_.data()) + kLevelsRoom,
                        static_cast<size_t>(PageBytes()));
      levels = reinterpret_cast<const uint8_t*>(page_body_.data());
      in = levels;
      in_size = page_body_.size();
    }
    const size_t uncompressed =
        dict_page ? page_body_.size() : levels_size + static_cast<size_t>(PageBytes());
    const uint8_t* body = nullptr;
    size_t body_size = 0;
    RETURN_NOT_OK(CompressPage(in, in_size, levels, raw, &body, &body_size));
    PageHeader h;
    h.uncompressed_page_size = static_cast<int32_t>(uncompressed);
    h.compressed_page_size = static_cast<int32_t>(body_size);
    const Encoding encoding = dict_page ? Encoding::kRleDictionary : Encoding::kPlain;
    if (v2) {
      h.type = PageType::kDataPageV2;
      DataPageHeaderV2 d;
      d.num_values = static_cast<int32_t>(page_values_);
      d.num_nulls = static_cast<int32_t>(page_nulls_);
      d.num_rows = static_cast<int32_t>(page_rows_);
      d.encoding = encoding;
      d.definition_levels_byte_length = static_cast<int32_t>(levels_size - rep_levels_size);
      d.repetition_levels_byte_length = static_cast<int32_t>(rep_levels_size);
      d.is_compressed = opts.compression != Codec::kUncompressed;
      h.data_page_header_v2 = d;
    } else {
      h.type = PageType::kDataPage;
      h.data_page_header = DataPageHeader{static_cast<int32_t>(page_values_), encoding,
                                          Encoding::kRle, Encoding::kRle, std::nullopt};
    }
    chunk_uncompressed_ += static_cast<int64_t>(AddPage(&h, body, body_size) + uncompressed);
    (dict_page ? dict_pages_ : plain_pages_) += 1;
    chunk_values_ += page_values_;
    chunk_nulls_ += page_nulls_;
    page_values_ = page_nulls_ = page_rows_ = 0;
    levels_.clear();
    rep_levels_.clear();
    plain_.Resize(kLevelsRoom);
    indices_.clear();
    bool_bits_ = 0;
    return Status::OK();
  }

  ColumnConfig config_;
  ConvertFn<T> convert_;
  std::vector<T> scratch_values_;
  std::string scratch_bytes_;

  // The open page.
  int64_t page_values_ = 0;  // including nulls
  int64_t page_nulls_ = 0;
  int64_t page_rows_ = 0;
  std::vector<uint32_t> levels_;      // definition levels, materialized once the page holds a null
  std::vector<uint32_t> rep_levels_;  // repetition levels (nested leaves only)
  ByteBuffer plain_;  // kLevelsRoom bytes of room for the page's levels, then PLAIN values
  int64_t bool_bits_ = 0;
  std::vector<uint32_t> indices_;

  // The open column chunk.
  bool use_dict_ = false;
  bool fallen_back_ = false;
  bool abandoned_ = false;  // the chunk is PLAIN from its start
  Dictionary dict_;
  PageStore pages_;
  std::vector<ByteSpan> pieces_;  // the chunk's, as FinishChunk hands them over
  std::string page_body_;
  int64_t chunk_values_ = 0, chunk_nulls_ = 0, chunk_nans_ = 0, chunk_uncompressed_ = 0;
  int32_t dict_pages_ = 0, plain_pages_ = 0;
  bool has_minmax_ = false;
  StatSlot<T> min_, max_;

  bool file_has_minmax_ = false;
  StatSlot<T> file_min_, file_max_;
};

template <typename T, Order O>
std::unique_ptr<ColumnWriter> MakeTyped(ColumnConfig config, ConvertFn<T> convert) {
  return std::make_unique<TypedColumnWriter<T, O>>(std::move(config), convert);
}

std::unique_ptr<ColumnWriter> MakeColumnWriter(const internal::LeafColumn& leaf,
                                               const SchemaElement& element,
                                               const WriterOptions& options) {
  ColumnConfig c{*element.type,
                 leaf.max_def,
                 leaf.max_rep,
                 options.dictionary,
                 element.type_length.value_or(0),
                 &options,
                 leaf.path};
  const auto& t = leaf.field.type;
  using SV = std::string_view;
  switch (t.id()) {
    case TypeId::kBool:
      c.dictionary = false;
      return MakeTyped<uint8_t, Order::kBool>(c, BoolValues);
    case TypeId::kInt8: return MakeTyped<int32_t, Order::kSigned>(c, CastValues<int8_t, int32_t>);
    case TypeId::kInt16: return MakeTyped<int32_t, Order::kSigned>(c, CastValues<int16_t, int32_t>);
    case TypeId::kInt32:
    case TypeId::kDate32:
      return MakeTyped<int32_t, Order::kSigned>(c, CastValues<int32_t, int32_t>);
    case TypeId::kUInt8:
      return MakeTyped<int32_t, Order::kUnsigned>(c, CastValues<uint8_t, int32_t>);
    case TypeId::kUInt16:
      return MakeTyped<int32_t, Order::kUnsigned>(c, CastValues<uint16_t, int32_t>);
    case TypeId::kUInt32:
      return MakeTyped<int32_t, Order::kUnsigned>(c, CastValues<uint32_t, int32_t>);
    case TypeId::kInt64: return MakeTyped<int64_t, Order::kSigned>(c, CastValues<int64_t, int64_t>);
    case TypeId::kUInt64:
      return MakeTyped<int64_t, Order::kUnsigned>(c, CastValues<uint64_t, int64_t>);
    case TypeId::kTimestamp:
      if (t.unit() == TimeUnit::kSecond) {
        return MakeTyped<int64_t, Order::kSigned>(c, CastValues<int64_t, int64_t, 1000>);
      }
      return MakeTyped<int64_t, Order::kSigned>(c, CastValues<int64_t, int64_t>);
    case TypeId::kFloat32: return MakeTyped<float, Order::kFloat>(c, CastValues<float, float>);
    case TypeId::kFloat64: return MakeTyped<double, Order::kFloat>(c, CastValues<double, double>);
    case TypeId::kString:
    case TypeId::kBinary:
    case TypeId::kFixedSizeBinary: return MakeTyped<SV, Order::kBytes>(c, Views);
    case TypeId::kDecimal128:
      if (c.physical_type == PhysicalType::kInt32) {
        return MakeTyped<int32_t, Order::kSigned>(c, DecimalToInt<int32_t>);
      }
      if (c.physical_type == PhysicalType::kInt64) {
        return MakeTyped<int64_t, Order::kSigned>(c, DecimalToInt<int64_t>);
      }
      return MakeTyped<SV, Order::kDecimalBytes>(c, DecimalToFixed);
    case TypeId::kList:
    case TypeId::kStruct:
    case TypeId::kMap:
    case TypeId::kFixedSizeList: break;  // FieldToSchemaElement refuses them first
  }
  return nullptr;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// FileWriter

FileWriter::FileWriter(arrow::SchemaPtr schema, std::unique_ptr<OutputStream> out,
                       WriterOptions options)
    : schema_(std::move(schema)), out_(std::move(out)), options_(std::move(options)) {}

FileWriter::~FileWriter() = default;

Result<std::unique_ptr<FileWriter>> FileWriter::Open(arrow::SchemaPtr schema,
                                                     std::unique_ptr<OutputStream> out,
                                                     WriterOptions options) {
  if (!schema) return Status::Invalid("parquet writer: no schema");
  RETURN_NOT_OK(schema->Validate());
  if (!internal::CodecSupported(options.compression)) {
    return Status::NotImplemented("parquet writer: compression " +
                                  std::string(CodecName(options.compression)) +
                                  " is not supported");
  }
  if (options.data_page_version != 1 && options.data_page_version != 2) {
    return Status::Invalid("parquet writer: data_page_version must be 1 or 2");
  }
  if (options.row_group_rows < 1 || options.data_page_size < 1 || options.row_group_bytes < 1 ||
      options.data_page_rows < 1) {
    return Status::Invalid("parquet writer: row group and page sizes must be positive");
  }
  std::unique_ptr<FileWriter> w(new FileWriter(schema, std::move(out), std::move(options)));
  SchemaElement root;
  root.name = "schema";
  root.num_children = schema->num_fields();
  w->metadata_.schema.push_back(root);
  w->tree_ = std::make_unique<internal::SchemaTree>();
  for (const auto& field : schema->fields()) {
    RETURN_NOT_OK(internal::AppendField(field, &w->metadata_.schema, w->tree_.get()));
  }
  w->tree_->first_leaf.push_back(static_cast<int>(w->tree_->leaves.size()));
  w->metadata_.schema[0].num_children = schema->num_fields();
  for (const auto& leaf : w->tree_->leaves) {
    const SchemaElement& e = w->metadata_.schema[static_cast<size_t>(leaf.element)];
    auto column = MakeColumnWriter(leaf, e, w->options_);
    std::string name;
    for (const auto& part : leaf.path) name += (name.empty() ? "" : ".") + part;
    column->metrics.name = std::move(name);
    column->metrics.field_id = e.field_id;
    column->metrics.physical_type = *e.type;
    w->columns_.push_back(std::move(column));
    w->metadata_.column_orders.push_back(1);  // TYPE_ORDER
  }
  w->metadata_.created_by = std::string(kCreatedBy);
  for (const auto& [k, v] : schema->metadata()) w->metadata_.key_value_metadata.push_back({k, v});
  for (const auto& [k, v] : w->options_.key_value_metadata) {
    w->metadata_.key_value_metadata.push_back({k, v});
  }
  RETURN_NOT_OK(w->WriteBytes("PAR1"));
  return w;
}

Result<std::unique_ptr<FileWriter>> FileWriter::Open(arrow::SchemaPtr schema, FileSystem& fs,
                                                     const std::string& path,
                                                     WriterOptions options) {
  ASSIGN_OR_RAISE(auto out, OpenFileOutput(fs, path));
  return Open(std::move(schema), std::move(out), std::move(options));
}

Status FileWriter::WriteBytes(std::span<const ByteSpan> pieces) {
  RETURN_NOT_OK(out_->Write(pieces));
  for (const ByteSpan& piece : pieces) position_ += static_cast<int64_t>(piece.size());
  return Status::OK();
}

Status FileWriter::WriteBytes(std::string_view bytes) {
  const ByteSpan piece(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return WriteBytes(std::span<const ByteSpan>(&piece, 1));
}

Status FileWriter::Write(const arrow::RecordBatch& batch) {
  if (closed_) return Status::Invalid("parquet writer: Write after Close");
  if (batch.num_columns() != schema_->num_fields()) {
    return Status::Invalid("parquet writer: batch has " + std::to_string(batch.num_columns()) +
                           " columns, schema has " + std::to_string(schema_->num_fields()));
  }
  for (int i = 0; i < batch.num_columns(); ++i) {
    const auto& field = schema_->field(i);
    const Array& col = batch.column(i);
    if (col.type() != field.type) {
      return Status::Invalid("parquet writer: column '" + field.name + "' is " +
                             col.type().ToString() + ", schema says " + field.type.ToString());
    }
    if (col.length() < batch.num_rows()) {
      return Status::Invalid("parquet writer: column '" + field.name +
                             "' is shorter than the batch");
    }
    if (!field.nullable && col.null_count() > 0) {
      return Status::Invalid("parquet writer: column '" + field.name +
                             "' is not nullable but has " + std::to_string(col.null_count()) +
                             " nulls");
    }
  }
  constexpr int64_t kSlice = 64 * 1024;
  internal::ShreddedLeaf shredded;
  int64_t offset = 0;
  while (offset < batch.num_rows()) {
    const int64_t take =
        std::min({batch.num_rows() - offset, options_.row_group_rows - row_group_rows_, kSlice});
    for (int i = 0; i < batch.num_columns(); ++i) {
      for (int l = tree_->first_leaf[i]; l < tree_->first_leaf[i + 1]; ++l) {
        const internal::LeafColumn& leaf = tree_->leaves[static_cast<size_t>(l)];
        if (leaf.child_path.empty() && !leaf.field.type.is_nested() &&
            !schema_->field(i).type.is_nested()) {
          RETURN_NOT_OK(columns_[l]->Write(batch.column(i), offset, take));
          continue;
        }
        RETURN_NOT_OK(
            internal::ShredLeaf(schema_->field(i), batch.column(i), offset, take, leaf, &shredded));
        RETURN_NOT_OK(columns_[l]->WriteLevels(shredded));
      }
    }
    offset += take;
    row_group_rows_ += take;
    int64_t bytes = 0;
    for (const auto& c : columns_) bytes += c->BufferedBytes();
    if (row_group_rows_ >= options_.row_group_rows || bytes >= options_.row_group_bytes) {
      RETURN_NOT_OK(FlushRowGroup());
    }
  }
  return Status::OK();
}

Status FileWriter::FlushRowGroup() {
  if (row_group_rows_ == 0) return Status::OK();
  RowGroup group;
  group.num_rows = row_group_rows_;
  group.file_offset = position_;
  group.ordinal = static_cast<int16_t>(std::min<size_t>(metadata_.row_groups.size(), INT16_MAX));
  metrics_.row_group_offsets.push_back(position_);
  int64_t compressed = 0;
  const auto write = [this](std::span<const ByteSpan> pieces) { return WriteBytes(pieces); };
  for (auto& column : columns_) {
    ColumnChunk chunk;
    chunk.meta_data.emplace();
    ColumnMetaData& meta = *chunk.meta_data;
    const int64_t start = position_;
    RETURN_NOT_OK(column->FinishChunk(&meta, write));
    chunk.file_offset = start;
    meta.data_page_offset += start;
    if (meta.dictionary_page_offset) *meta.dictionary_page_offset += start;
    group.total_byte_size += meta.total_uncompressed_size;
    compressed += meta.total_compressed_size;
    group.columns.push_back(std::move(chunk));
  }
  group.total_compressed_size = compressed;
  metadata_.num_rows += row_group_rows_;
  metadata_.row_groups.push_back(std::move(group));
  row_group_rows_ = 0;
  return Status::OK();
}

Result<FileMetrics> FileWriter::Close() {
  if (closed_) return Status::Invalid("parquet writer: closed twice");
  RETURN_NOT_OK(FlushRowGroup());
  closed_ = true;
  std::string footer;
  SerializeFileMetaData(metadata_, &footer);
  const auto len = static_cast<uint32_t>(footer.size());
  footer.append(reinterpret_cast<const char*>(&len), 4);
  footer.append("PAR1", 4);
  RETURN_NOT_OK(WriteBytes(footer));
  RETURN_NOT_OK(out_->Close());
  metrics_.row_count = metadata_.num_rows;
  metrics_.file_size = position_;
  metrics_.columns.clear();
  for (const auto& c : columns_) metrics_.columns.push_back(c->metrics);
  return metrics_;
}

Result<std::string> WriteToString(const arrow::SchemaPtr& schema,
                                  const std::vector<arrow::RecordBatchPtr>& batches,
                                  const WriterOptions& options, FileMetrics* metrics) {
  auto sink = std::make_unique<StringOutputStream>();
  StringOutputStream* raw = sink.get();
  ASSIGN_OR_RAISE(auto writer, FileWriter::Open(schema, std::move(sink), options));
  for (const auto& b : batches) RETURN_NOT_OK(writer->Write(*b));
  ASSIGN_OR_RAISE(FileMetrics m, writer->Close());
  if (metrics) *metrics = std::move(m);
  return std::move(raw->bytes());
}

}  // namespace oxbow::parquet
