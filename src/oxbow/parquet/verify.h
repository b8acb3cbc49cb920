// Whole-file verification of a Parquet file for scrubbing: the footer, every page header and
// every page checksum, without decoding values (see docs/parquet.md, "Checksums").
#pragma once

#include <cstdint>
#include <string>

#include "oxbow/common/file_system.h"
#include "oxbow/common/status.h"

namespace oxbow::parquet {

struct FileVerifyReport {
  int64_t file_size = 0;
  int64_t row_groups = 0;         // in the footer
  int64_t column_chunks = 0;      // walked to their end
  int64_t pages = 0;              // page headers read
  int64_t pages_checked = 0;      // pages whose crc matched their bytes
  int64_t pages_without_crc = 0;  // pages that carry no crc: only their header was checked
  int64_t bytes_checked = 0;      // page bytes covered by a matching crc
  int64_t bytes_read = 0;         // everything read: file ends, footer, page headers and bodies
  // The first problem found, where the walk stopped: Corruption naming the file, and the row
  // group, column and page offset when it is in a page; NotImplemented for a file the reader
  // would refuse (encrypted footer, column data in another file). OK when none.
  Status problem;

  bool ok() const { return problem.ok(); }
};

// Verifies `file` in one pass with bounded memory: it reads the ends and the footer, then
// walks each column chunk from the footer's offsets, holding one page header and at most
// 1 MiB of page bytes at a time. It checks the footer with FileReader::Open's checks (all but
// the mapping to an Arrow schema); that each chunk's pages tile its byte range, with at most
// one dictionary page, first, and data pages whose value counts add up to the chunk's; and
// each page's crc. Values are not decompressed or decoded; the bytes of a page without a crc
// are skipped (read only when they share a read with a page header). An error Result means
// the file could not be read (I/O); whatever is wrong in its bytes is `problem`.
Result<FileVerifyReport> VerifyFile(File& file);

// Opens `path` read-only on `fs` and verifies it.
Result<FileVerifyReport> VerifyFile(FileSystem& fs, const std::string& path);

}  // namespace oxbow::parquet
