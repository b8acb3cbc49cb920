#include "oxbow/parquet/verify.h"

#include <algorithm>
#include <memory>

#include "oxbow/parquet/encoding_internal.h"
#include "oxbow/parquet/metadata.h"
#include "oxbow/parquet/reader_internal.h"

namespace oxbow::parquet {

namespace {

constexpr int64_t kReadSize = int64_t{1} << 20;  // page bytes read and checksummed at a time
constexpr int64_t kFirstHeaderRead = 4096;       // enough for nearly every page header
constexpr int64_t kMaxPageHeaderSize = int64_t{16} << 20;

Status ShortRead(const File& file, int64_t position, int64_t wanted, int64_t got) {
  return Status::IOError("read " + file.path() + ": " + std::to_string(got) + " of " +
                         std::to_string(wanted) + " bytes at offset " + std::to_string(position) +
                         " (the file shrank while it was verified)");
}

// Reads a column chunk front to back through a single window of the file, so that a page
// header and the page bytes after it usually come from one read. Only the current window is
// held: reading the next one releases it. It remembers a failed read, so that callers can
// tell an I/O failure from a problem in the bytes.
class ChunkReader {
 public:
  ChunkReader(File& file, int64_t* bytes_read) : file_(file), bytes_read_(bytes_read) {}

  // Starts a chunk whose bytes end at `end`.
  void Start(int64_t end) {
    end_ = end;
    window_.reset();
  }

  // The bytes from `position` to the end of the window, which reaches at least
  // min(length, end - position) bytes past `position`.
  Result<ByteSpan> Bytes(int64_t position, int64_t length) {
    length = std::min(length, end_ - position);
    if (!window_ || position < window_start_ ||
        position + length > window_start_ + window_->size()) {
      const int64_t read = std::min(std::max(length, kReadSize), end_ - position);
      window_.reset();
      auto bytes = file_.ReadAt(position, read);
      if (!bytes.ok()) return io_status_ = bytes.status();
      *bytes_read_ += (*bytes)->size();
      if ((*bytes)->size() < read) {
        return io_status_ = ShortRead(file_, position, read, (*bytes)->size());
      }
      window_ = std::move(*bytes);
      window_start_ = position;
    }
    const int64_t skip = position - window_start_;
    return ByteSpan(window_->data() + skip, static_cast<size_t>(window_->size() - skip));
  }

  // The first failed read, or OK.
  const Status& io_status() const { return io_status_; }

 private:
  File& file_;
  int64_t* bytes_read_;
  int64_t end_ = 0;
  std::shared_ptr<Buffer> window_;
  int64_t window_start_ = 0;
  Status io_status_;
};

// Walks the pages of one column chunk, counting into `report`. Returns the first problem in
// the chunk's bytes, or a failed read (which `reader` remembers).
Status VerifyChunk(ChunkReader& reader, const ColumnMetaData& meta, int64_t data_end,
                   FileVerifyReport* report) {
  ASSIGN_OR_RAISE(const internal::ByteRange range, internal::ChunkRange(meta, data_end));
  reader.Start(range.end);
  int64_t values = 0;
  bool seen_data_page = false, seen_dictionary = false;
  for (int64_t pos = range.start; pos < range.end;) {
    const int64_t page_offset = pos;
    PageHeader h;
    size_t consumed = 0;
    Status parsed;
    for (int64_t want = kFirstHeaderRead;;) {
      ASSIGN_OR_RAISE(const ByteSpan bytes, reader.Bytes(pos, want));
      h = PageHeader{};
      parsed = ParsePageHeader(bytes.data(), bytes.size(), &h, &consumed);
      const auto got = static_cast<int64_t>(bytes.size());
      if (parsed.ok() || got >= range.end - pos || got >= kMaxPageHeaderSize) break;
      want = got * 2;  // the header may run past what was read
    }
    if (!parsed.ok()) {
      return parsed.WithContext("page header at offset " + std::to_string(page_offset));
    }
    ++report->pages;
    pos += static_cast<int64_t>(consumed);
    RETURN_NOT_OK(internal::CheckPageSizes(h, range.end - pos, page_offset));
    const int64_t size = h.compressed_page_size;
    if (h.crc) {
      uint32_t crc = 0;
      for (int64_t done = 0; done < size;) {
        ASSIGN_OR_RAISE(const ByteSpan bytes,
                        reader.Bytes(pos + done, std::min(size - done, kReadSize)));
        const int64_t take = std::min(static_cast<int64_t>(bytes.size()), size - done);
        crc = internal::PageCrc(crc, bytes.data(), static_cast<size_t>(take));
        done += take;
      }
      RETURN_NOT_OK(internal::CheckPageCrc(h, crc, page_offset));
      ++report->pages_checked;
      report->bytes_checked += size;
    } else {
      ++report->pages_without_crc;
    }
    pos += size;

    const auto page_error = [&](const std::string& what) {
      return Status::Corruption("page at offset " + std::to_string(page_offset) + ": " + what);
    };
    int32_t page_values = 0;
    switch (h.type) {
      case PageType::kDictionaryPage:
        if (!h.dictionary_page_header) return page_error("dictionary page without its header");
        if (seen_dictionary) return page_error("second dictionary page");
        if (seen_data_page) return page_error("dictionary page after data pages");
        seen_dictionary = true;
        break;
      case PageType::kDataPage:
        if (!h.data_page_header) return page_error("data page without its header");
        page_values = h.data_page_header->num_values;
        seen_data_page = true;
        break;
      case PageType::kDataPageV2:
        if (!h.data_page_header_v2) return page_error("data page v2 without its header");
        page_values = h.data_page_header_v2->num_values;
        seen_data_page = true;
        break;
      default: break;  // index pages and unknown page types hold no values
    }
    if (page_values < 0) return page_error("negative value count");
    values += page_values;
  }
  if (values != meta.num_values) {
    return Status::Corruption("data pages hold " + std::to_string(values) +
                              " values, the chunk's metadata says " +
                              std::to_string(meta.num_values));
  }
  ++report->column_chunks;
  return Status::OK();
}

// Reads exactly `length` bytes at `position`.
Result<std::shared_ptr<Buffer>> ReadExactly(File& file, int64_t position, int64_t length,
                                            int64_t* bytes_read) {
  ASSIGN_OR_RAISE(auto bytes, file.ReadAt(position, length));
  *bytes_read += bytes->size();
  if (bytes->size() < length) return ShortRead(file, position, length, bytes->size());
  return bytes;
}

}  // namespace

Result<FileVerifyReport> VerifyFile(File& file) {
  FileVerifyReport report;
  ASSIGN_OR_RAISE(report.file_size, file.Size());
  const int64_t size = report.file_size;
  const std::string& path = file.path();
  std::shared_ptr<Buffer> head = Buffer::Empty(), tail = Buffer::Empty();
  if (size >= internal::kMagicSize + internal::kFooterTailSize) {
    ASSIGN_OR_RAISE(head, ReadExactly(file, 0, internal::kMagicSize, &report.bytes_read));
    ASSIGN_OR_RAISE(tail, ReadExactly(file, size - internal::kFooterTailSize,
                                      internal::kFooterTailSize, &report.bytes_read));
  }
  // FooterLength rejects a file too short for both ends before it reads them.
  const auto footer_len = internal::FooterLength(head->data(), tail->data(), size);
  if (!footer_len.ok()) {
    report.problem = footer_len.status().WithContext(path);
    return report;
  }
  const int64_t data_end = size - internal::kFooterTailSize - *footer_len;
  ASSIGN_OR_RAISE(auto footer, ReadExactly(file, data_end, *footer_len, &report.bytes_read));
  internal::SchemaTree tree;
  auto metadata = internal::ParseFooter(footer->data(), footer->size(), data_end, &tree);
  footer.reset();
  if (!metadata.ok()) {
    report.problem = metadata.status().WithContext(path);
    return report;
  }
  report.row_groups = static_cast<int64_t>(metadata->row_groups.size());
  ChunkReader reader(file, &report.bytes_read);
  for (size_t g = 0; g < metadata->row_groups.size(); ++g) {
    const RowGroup& group = metadata->row_groups[g];
    for (size_t c = 0; c < group.columns.size(); ++c) {
      const Status problem = VerifyChunk(reader, *group.columns[c].meta_data, data_end, &report);
      if (!reader.io_status().ok()) return reader.io_status();
      if (!problem.ok()) {
        report.problem = problem.WithContext("column '" + tree.leaves[c].field.name + "'")
                             .WithContext(internal::RowGroupContext(path, static_cast<int>(g)));
        return report;
      }
    }
  }
  return report;
}

Result<FileVerifyReport> VerifyFile(FileSystem& fs, const std::string& path) {
  ASSIGN_OR_RAISE(auto file, fs.OpenFile(path, FileMode::kRead));
  return VerifyFile(*file);
}

}  // namespace oxbow::parquet
