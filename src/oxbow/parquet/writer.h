// Parquet writer: Arrow record batches in, a Parquet file out (see docs/parquet.md).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/arrow/record_batch.h"
#include "oxbow/common/buffer.h"
#include "oxbow/common/file_system.h"
#include "oxbow/common/status.h"
#include "oxbow/parquet/metadata.h"

namespace oxbow::parquet {

// The FileMetaData.created_by this writer stores.
inline constexpr std::string_view kCreatedBy = "oxbow version 0.1.0 (build oxbow)";

// Parses "none"/"uncompressed", "snappy", "gzip", "zstd", "lz4"/"lz4_raw".
Result<Codec> ParseCodec(std::string_view name);

struct WriterOptions {
  // Page compression: kUncompressed, kSnappy, kGzip, kZstd or kLz4Raw. Default: kZstd.
  Codec compression = Codec::kZstd;
  // Codec level for ZSTD and GZIP; 0 picks the codec default (ZSTD 1, as pyarrow). Default: 0.
  int compression_level = 0;
  // Dictionary-encode every column but booleans. Default: true.
  bool dictionary = true;
  // Once a column chunk's dictionary holds more PLAIN bytes than this, the rest of the chunk is
  // written PLAIN. Default: 1 MiB (pyarrow's default).
  int64_t dictionary_page_size_limit = int64_t{1} << 20;
  // Target uncompressed size of one data page. Default: 1 MiB.
  int64_t data_page_size = int64_t{1} << 20;
  // ... or once it holds this many values (pyarrow's max_rows_per_page; smaller pages also
  // compress better with ZSTD level 1). Default: 20000.
  int64_t data_page_rows = 20000;
  // A row group closes at this many rows. Default: 1Mi rows (pyarrow's default).
  int64_t row_group_rows = int64_t{1} << 20;
  // ... or once its encoded, uncompressed pages reach this many bytes. Default: 128 MiB.
  int64_t row_group_bytes = int64_t{128} << 20;
  // 1 writes DataPageHeader pages, 2 writes DataPageHeaderV2 pages. Default: 1.
  int data_page_version = 1;
  // Column chunk statistics (min/max/null count/NaN count). Default: true.
  bool write_statistics = true;
  // Store each page's CRC-32 in PageHeader.crc, so readers and scrubbers can detect corrupted
  // pages (docs/parquet.md, "Checksums"). Default: true.
  bool page_checksums = true;
  // Extra footer key/value metadata. Default: none (the schema's own metadata is also written).
  arrow::KeyValueMetadata key_value_metadata;
};

// What an Iceberg data-file entry needs to know about one column of a written file.
struct ColumnMetrics {
  std::string name;  // the leaf's path in the schema, dotted ("a", "s.b", "l.list.element")
  std::optional<int32_t> field_id;  // from field metadata "PARQUET:field_id"
  PhysicalType physical_type = PhysicalType::kInt32;
  int64_t compressed_size = 0;    // bytes on disk over all row groups, page headers included
  int64_t uncompressed_size = 0;  // same, before compression
  int64_t value_count = 0;        // values including nulls
  int64_t null_count = 0;
  std::optional<int64_t> nan_count;  // float and double columns only
  // File-wide bounds as Parquet statistics bytes: the PLAIN encoding of the physical value
  // (little-endian INT32/INT64/FLOAT/DOUBLE, one byte for BOOLEAN, raw bytes without a length
  // prefix for BYTE_ARRAY, big-endian two's complement for FIXED_LEN_BYTE_ARRAY decimals).
  // Unset when the column has no non-null, non-NaN value.
  std::optional<std::string> lower_bound;
  std::optional<std::string> upper_bound;
};

struct FileMetrics {
  int64_t row_count = 0;
  int64_t file_size = 0;
  std::vector<int64_t> row_group_offsets;  // file offset of each row group (Iceberg split_offsets)
  std::vector<ColumnMetrics> columns;      // one per leaf column, in schema order
};

// Where the bytes go. Writes arrive in large pieces (whole column chunks, as their pages).
class OutputStream {
 public:
  virtual ~OutputStream() = default;
  virtual Status Write(const void* data, int64_t size) = 0;
  // Writes the pieces back to back.
  virtual Status Write(std::span<const ByteSpan> pieces) {
    for (const ByteSpan& piece : pieces) {
      RETURN_NOT_OK(Write(piece.data(), static_cast<int64_t>(piece.size())));
    }
    return Status::OK();
  }
  virtual Status Close() = 0;
};

// Creates (truncates) the file at `path` on `fs`; Close() makes it durable (fsync).
Result<std::unique_ptr<OutputStream>> OpenFileOutput(FileSystem& fs, const std::string& path);

// Collects the file in memory.
class StringOutputStream : public OutputStream {
 public:
  using OutputStream::Write;
  Status Write(const void* data, int64_t size) override {
    bytes_.append(static_cast<const char*>(data), static_cast<size_t>(size));
    return Status::OK();
  }
  Status Close() override { return Status::OK(); }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
};

class ColumnWriter;  // internal
namespace internal {
struct SchemaTree;
}

class FileWriter {
 public:
  ~FileWriter();

  // Maps the schema to Parquet (Invalid for a field it cannot write) and writes the magic.
  static Result<std::unique_ptr<FileWriter>> Open(arrow::SchemaPtr schema,
                                                  std::unique_ptr<OutputStream> out,
                                                  WriterOptions options = {});
  // Writes a new file at `path` on `fs` (OpenFileOutput).
  static Result<std::unique_ptr<FileWriter>> Open(arrow::SchemaPtr schema, FileSystem& fs,
                                                  const std::string& path,
                                                  WriterOptions options = {});

  // Appends a batch of the writer's schema; row groups close as the options say.
  Status Write(const arrow::RecordBatch& batch);
  // Closes the current row group now (no-op when it is empty).
  Status FlushRowGroup();
  // Writes the footer and closes the stream. The writer is unusable afterwards.
  Result<FileMetrics> Close();

  const FileMetaData& metadata() const { return metadata_; }
  const arrow::SchemaPtr& schema() const { return schema_; }

 private:
  FileWriter(arrow::SchemaPtr schema, std::unique_ptr<OutputStream> out, WriterOptions options);
  // Appends to the file and advances position_.
  Status WriteBytes(std::span<const ByteSpan> pieces);
  Status WriteBytes(std::string_view bytes);

  arrow::SchemaPtr schema_;
  std::unique_ptr<OutputStream> out_;
  WriterOptions options_;
  std::unique_ptr<internal::SchemaTree> tree_;          // the leaf columns of each field
  std::vector<std::unique_ptr<ColumnWriter>> columns_;  // one per leaf column
  FileMetaData metadata_;
  FileMetrics metrics_;
  int64_t position_ = 0;
  int64_t row_group_rows_ = 0;
  bool closed_ = false;
};

// Writes `batches` (all of `schema`) to one in-memory Parquet file.
Result<std::string> WriteToString(const arrow::SchemaPtr& schema,
                                  const std::vector<arrow::RecordBatchPtr>& batches,
                                  const WriterOptions& options = {},
                                  FileMetrics* metrics = nullptr);

}  // namespace oxbow::parquet
