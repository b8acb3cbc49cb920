// The checks the reader and the whole-file verifier share: file ends, footer, chunk ranges, page
// sizes and page checksums. Internal to the parquet module.
#pragma once

#include <cstdint>
#include <string>

#include "oxbow/common/status.h"
#include "oxbow/parquet/metadata.h"
#include "oxbow/parquet/nested_internal.h"

namespace oxbow::parquet::internal {

inline constexpr int64_t kMagicSize = 4;       // "PAR1" at both ends
inline constexpr int64_t kFooterTailSize = 8;  // footer length (4 bytes LE) + trailing magic
inline constexpr int64_t kMaxPageSize = int64_t{1} << 30;

// Checks a file of `file_size` bytes by its first 4 bytes (`head`) and last 8 bytes (`tail`);
// returns the footer length, which is known to fit between the two magics.
Result<int64_t> FooterLength(const uint8_t* head, const uint8_t* tail, int64_t file_size);

// Parses the footer and checks what reading relies on: a schema tree it can read (stored in
// `*tree` when given), row counts that add up, and in every row group one chunk per leaf column
// with metadata, of the column's type, one value per row (at least one for a repeated leaf),
// its bytes (ChunkRange) within the column data that ends at `data_end`.
Result<FileMetaData> ParseFooter(const uint8_t* data, int64_t size, int64_t data_end,
                                 SchemaTree* tree = nullptr);

// Bytes [start, end) of a column chunk: from its first page (dictionary or data) for
// total_compressed_size bytes, checked to lie within [4, data_end).
struct ByteRange {
  int64_t start = 0;
  int64_t end = 0;
};
Result<ByteRange> ChunkRange(const ColumnMetaData& meta, int64_t data_end);

// Checks a page header's sizes, `left` being the bytes of the chunk after the header and
// `page_offset` where the header starts.
Status CheckPageSizes(const PageHeader& header, int64_t left, int64_t page_offset);

// Corruption unless `computed`, the CRC-32 of the page's bytes after its header, equals the
// header's crc (which must be set). `page_offset` is where the page header starts.
Status CheckPageCrc(const PageHeader& header, uint32_t computed, int64_t page_offset);

// The context of errors in row group `row_group`: "<path>: row group 2", or "parquet: row
// group 2" when the path is not known.
std::string RowGroupContext(const std::string& path, int row_group);

}  // namespace oxbow::parquet::internal
