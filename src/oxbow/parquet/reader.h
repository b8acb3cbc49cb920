// Parquet reader: flat Parquet files in, Arrow record batches out (see docs/parquet.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "oxbow/arrow/record_batch.h"
#include "oxbow/common/buffer.h"
#include "oxbow/common/status.h"
#include "oxbow/parquet/metadata.h"

namespace oxbow::parquet {

struct ReaderOptions {
  // Columns to read, in this order. Default: all, in schema order.
  std::vector<std::string> columns;
  // Largest batch returned; a row group yields one or more batches. Default: 65536.
  int64_t batch_rows = 64 * 1024;
};

class FileReader {
 public:
  // Parses and checks the footer of the whole file held in `file`.
  static Result<std::unique_ptr<FileReader>> Open(std::shared_ptr<Buffer> file);
  // Reads the file at `path` into memory and opens it.
  static Result<std::unique_ptr<FileReader>> OpenPath(const std::string& path);

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
  FileReader() = default;

  std::shared_ptr<Buffer> file_;
  FileMetaData metadata_;
  arrow::SchemaPtr schema_;
};

}  // namespace oxbow::parquet
