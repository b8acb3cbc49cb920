// Text forms of record batches: a human-readable table, JSON Lines and CSV (RFC 4180), and
// readers that parse JSON Lines and CSV into record batches, with optional schema inference.
// The value mappings are specified in docs/text-formats.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "oxbow/arrow/record_batch.h"
#include "oxbow/arrow/schema.h"
#include "oxbow/common/status.h"

namespace oxbow::text {

enum class TextFormat : uint8_t {
  kTable,      // aligned columns for people (write only)
  kJsonLines,  // one JSON object per row
  kCsv,        // RFC 4180 with a header row
};

// "table", "jsonl" (also "json", "ndjson"), "csv".
Result<TextFormat> ParseTextFormat(std::string_view name);
std::string_view TextFormatName(TextFormat format);

// The schema as pyarrow's str(schema) prints it: "name: type[ not null]" per field, then
// "  -- field metadata --" and "  key: 'value'" lines when a field has metadata, then
// "-- schema metadata --" and "key: 'value'" lines. Like pyarrow, a value longer than
// 70 - indent - key length bytes is cut there and followed by "' + <bytes left>".
std::string FormatSchema(const arrow::Schema& schema);

struct WriteOptions {
  // table: cells wider than this many characters are cut and end in "…"; 0 = no limit.
  // Default: 64.
  int max_cell_width = 64;
  // table: rows buffered to compute column widths; widths never shrink between pages.
  // Default: 1000.
  int64_t table_page_rows = 1000;
  // table and csv: write the header (column names). Default: true.
  bool header = true;
};

// Turns batches of one schema into text, appended to a caller's string.
class TextWriter {
 public:
  static Result<std::unique_ptr<TextWriter>> Make(TextFormat format, arrow::SchemaPtr schema,
                                                  WriteOptions options = {});
  virtual ~TextWriter() = default;

  // Appends the text of `batch` (whose columns must match the schema's types) to `out`.
  virtual Status Write(const arrow::RecordBatch& batch, std::string* out) = 0;
  // Appends whatever is still buffered (the table's last page, or its header when no rows
  // were written).
  virtual Status Finish(std::string* out) = 0;
};

// One batch as text: Make + Write + Finish.
Result<std::string> FormatBatch(TextFormat format, const arrow::RecordBatch& batch,
                                const WriteOptions& options = {});

struct ReadOptions {
  // Rows per record batch. Default: 65536.
  int64_t batch_rows = 65536;
  // Rows examined when inferring a schema; a later value that does not fit the inferred type
  // is a parse error naming its line. 0 = all rows. Default: 1000.
  int64_t infer_rows = 1000;
  // JSON keys / CSV header columns not in the schema are skipped instead of rejected.
  // Default: false.
  bool ignore_unknown_fields = false;
};

// Parses JSON Lines or CSV held in memory. `text` must outlive the reader.
class TextReader {
 public:
  // With `schema` null, the schema is inferred from the first `infer_rows` rows.
  static Result<std::unique_ptr<TextReader>> Make(TextFormat format, std::string_view text,
                                                  arrow::SchemaPtr schema,
                                                  ReadOptions options = {});
  virtual ~TextReader() = default;

  const arrow::SchemaPtr& schema() const { return schema_; }
  // The next batch of up to batch_rows rows, or nullptr at the end. Errors name the line and
  // the column.
  virtual Result<arrow::RecordBatchPtr> Next() = 0;
  Result<std::vector<arrow::RecordBatchPtr>> ReadAll();

 protected:
  arrow::SchemaPtr schema_;
};

// The schema TextReader would infer: int64, double, bool or string per column, all nullable;
// columns in order of first appearance (JSON) or header order (CSV).
Result<arrow::SchemaPtr> InferSchema(TextFormat format, std::string_view text,
                                     const ReadOptions& options = {});

}  // namespace oxbow::text
