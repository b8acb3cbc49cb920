// Parquet reader: Parquet files (flat or nested columns) in, Arrow record batches out (see
// docs/parquet.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "oxbow/arrow/record_batch.h"
#include "oxbow/common/buffer.h"
#include "oxbow/common/file_system.h"
#include "oxbow/common/status.h"
#include "oxbow/parquet/metadata.h"

namespace oxbow::parquet {

namespace internal {
struct SchemaTree;
}

struct ReaderOptions {
  // Columns to read, in this order. Default: all, in schema order.
  std::vector<std::string> columns;
  // Largest batch returned; a row group yields one or more batches. Default: 65536.
  int64_t batch_rows = 64 * 1024;
};

// How a FileReader treats its file.
struct OpenOptions {
  // Before decoding a page that has a crc (PageHeader field 4), check it against the page's
  // bytes; a mismatch is Corruption naming the file, row group, column and page offset. Pages
  // without a crc are read as they are. Default: true.
  bool verify_page_checksums = true;
  // The file's name in error messages; Open(fs, path) fills it in. Default: empty (unnamed).
  std::string path;
};

class FileReader {
 public:
  // Parses and checks the footer of the whole file held in `file`.
  static Result<std::unique_ptr<FileReader>> Open(std::shared_ptr<Buffer> file,
                                                  OpenOptions options = {});
  // Reads and checks only the footer of `file`; each ReadRowGroup then reads just its column
  // chunks, so memory holds about one row group (plus the footer), not the file.
  static Result<std::unique_ptr<FileReader>> Open(std::unique_ptr<File> file,
                                                  OpenOptions options = {});
  // Opens `path` on `fs` as above; errors name the path.
  static Result<std::unique_ptr<FileReader>> Open(FileSystem& fs, const std::string& path,
                                                  OpenOptions options = {});

  const FileMetaData& metadata() const { return metadata_; }
  // The Arrow schema: field ids in field metadata "PARQUET:field_id", footer key/values in the
  // schema metadata (ARROW:schema left out).
  const arrow::SchemaPtr& schema() const { return schema_; }
  int num_row_groups() const { return static_cast<int>(metadata_.row_groups.size()); }
  int64_t num_rows() const { return metadata_.num_rows; }

  // Reads the columns at `column_indices` (schema positions) of row group `i`.
  Result<arrow::RecordBatchPtr> ReadRowGroup(int i, const std::vector<int>& column_indices) const;
  // Reads the whole file (projected as `options` say).
  Result<std::vector<arrow::RecordBatchPtr>> Read(const ReaderOptions& options = {}) const;

 private:
  explicit FileReader(OpenOptions options) : options_(std::move(options)) {}
  // Reads the footer of a file of `size` bytes; errors name the path.
  Status ReadFooter(int64_t size);
  Status ParseFooterAndSchema(int64_t size);
  Status WithPath(const Status& st) const;
  // `length` bytes at `position`, from whichever of the two sources is set.
  Result<std::shared_ptr<Buffer>> ReadRange(int64_t position, int64_t length) const;

  std::shared_ptr<Buffer> whole_file_;  // the file, when opened from memory
  std::unique_ptr<File> file_;          // otherwise, read a range at a time
  OpenOptions options_;
  int64_t data_end_ = 0;  // where the column data ends and the footer begins
  FileMetaData metadata_;
  arrow::SchemaPtr schema_;
  std::shared_ptr<const internal::SchemaTree> tree_;  // the leaf columns of each field
};

}  // namespace oxbow::parquet
