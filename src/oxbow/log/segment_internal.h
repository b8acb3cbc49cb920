// Segment files of a bucket log: frame codec, frame scanner, and the per-segment sparse
// offset index and time index. The byte layout is documented in docs/log-format.md.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "oxbow/common/buffer.h"
#include "oxbow/common/file_system.h"
#include "oxbow/common/status.h"

namespace oxbow::log::internal {

inline constexpr uint32_t kFrameMagic = 0x424C584F;  // bytes "OXLB"
inline constexpr uint8_t kFrameVersion = 1;
inline constexpr int64_t kFrameHeaderSize = 64;
inline constexpr int64_t kFrameAlignment = 8;
inline constexpr int64_t kOffsetIndexEntrySize = 8;
inline constexpr int64_t kTimeIndexEntrySize = 12;
inline constexpr int64_t kNoTimestamp = std::numeric_limits<int64_t>::min();

struct FrameHeader {
  int32_t schema_id = 0;
  int64_t base_offset = 0;
  int32_t row_count = 0;
  int32_t metadata_length = 0;
  int64_t body_length = 0;
  int64_t min_timestamp_ms = 0;
  int64_t max_timestamp_ms = 0;
  int64_t append_time_ms = 0;

  int64_t payload_length() const { return metadata_length + body_length; }
  int64_t padding() const { return (kFrameAlignment - payload_length() % kFrameAlignment) % 8; }
  int64_t frame_length() const { return kFrameHeaderSize + payload_length() + padding(); }
  int64_t next_offset() const { return base_offset + row_count; }
};

// Writes the 64-byte header. `payload_crc` is CRC32C of the payload alone; the stored CRC
// extends it over header bytes 8..63.
void EncodeFrameHeader(const FrameHeader& header, uint32_t payload_crc, uint8_t* out);
// Parses and range-checks a header (not the CRC). `position` only names it in errors.
Result<FrameHeader> DecodeFrameHeader(const uint8_t* data, int64_t position);
// Checks the stored CRC of a complete frame starting at `frame`.
bool FrameCrcMatches(const uint8_t* frame, int64_t payload_length);

// A frame found by FrameScanner. `bytes` holds the whole frame unless scanning headers only.
struct ScannedFrame {
  FrameHeader header;
  int64_t position = 0;
  std::shared_ptr<Buffer> bytes;
};

// Walks the frames of a segment file between two positions, reading in large chunks.
class FrameScanner {
 public:
  enum class Mode { kHeaders, kPayloads, kVerify };

  // `expected_offset` (or -1) is the base offset the first frame must have; later frames
  // must continue without gaps.
  FrameScanner(File* file, int64_t position, int64_t end, int64_t expected_offset, Mode mode,
               int64_t chunk_bytes);

  // Sets *frame and returns true, or returns false at `end`. A malformed, torn or
  // mismatching frame gives Corruption; position() is then where it starts.
  Result<bool> Next(ScannedFrame* frame);
  int64_t position() const { return position_; }
  int64_t bytes_read() const { return bytes_read_; }

 private:
  // Makes [position_, position_ + length) available in chunk_.
  Status Fill(int64_t length);

  File* file_;
  int64_t position_;
  int64_t end_;
  int64_t expected_offset_;
  Mode mode_;
  int64_t chunk_bytes_;
  std::shared_ptr<Buffer> chunk_;
  int64_t chunk_start_ = 0;
  int64_t bytes_read_ = 0;
};

struct OffsetIndexEntry {
  uint32_t relative_offset;
  uint32_t position;
};
struct TimeIndexEntry {
  int64_t timestamp_ms;
  uint32_t relative_offset;
};

// What the indexer knows about a segment's frames up to `size`; enough to continue.
struct SegmentState {
  int64_t size = 0;
  int64_t next_offset = 0;
  int64_t last_base_offset = -1;
  int64_t max_timestamp_ms = kNoTimestamp;
  int64_t first_append_ms = -1;
  int64_t last_append_ms = -1;
  int64_t offset_entries = 0;
  int64_t time_entries = 0;
};

std::string SegmentFileName(int64_t base_offset, const char* suffix);

// One segment: its log file, and its indexes (in memory, persisted to .index/.timeindex).
// Index methods are thread-safe; the bucket log serializes appends.
class Segment {
 public:
  Segment(FileSystem* fs, const std::string& dir, int64_t base_offset, std::unique_ptr<File> file,
          int64_t index_interval_bytes);

  int64_t base_offset() const { return base_offset_; }
  File* file() const { return file_.get(); }
  const std::string& log_path() const { return log_path_; }
  const std::string& index_path() const { return index_path_; }
  const std::string& time_index_path() const { return time_index_path_; }

  // Records a frame written at state().size, adding index entries every index interval.
  void AddFrame(const FrameHeader& header);
  SegmentState state() const;

  // For a sealed segment of `size` bytes whose frames end at `next_offset`: loads the index
  // files on first use, or rebuilds them from the segment when missing or invalid.
  Status EnsureIndexed(int64_t size, int64_t next_offset);
  // For the last segment at open: trusts `trusted` (from the recovery checkpoint, or an
  // empty state) and the first trusted.*_entries index entries, then verifies frames from
  // trusted.size by CRC, and truncates the file at the first bad or torn frame.
  // Returns the segment bytes read while verifying.
  Result<int64_t> Recover(const SegmentState& trusted);
  // Adds the final time index entry and makes data and indexes durable.
  Status Seal();
  // Writes the first `offset_entries` / `time_entries` index entries (those not yet
  // written) to the index files, outside the index lock; syncs them when `sync`.
  Status PersistIndexes(int64_t offset_entries, int64_t time_entries, bool sync);

  // Position of the last indexed frame whose base offset is <= `offset` (0 if none).
  int64_t FloorPosition(int64_t offset) const;
  // Position from which to scan for the first frame whose max timestamp >= `timestamp_ms`.
  int64_t TimeFloorPosition(int64_t timestamp_ms) const;

 private:
  void AddFrameLocked(const FrameHeader& header);
  Status LoadIndexFiles(int64_t size, int64_t next_offset);
  Status RebuildLocked(int64_t size, int64_t next_offset);
  Status WriteIndexFile(const std::string& path, int64_t file_position, const std::string& bytes,
                        bool truncate, bool sync);

  FileSystem* fs_;
  const int64_t base_offset_;
  const std::string log_path_;
  const std::string index_path_;
  const std::string time_index_path_;
  std::unique_ptr<File> file_;
  const int64_t index_interval_bytes_;

  mutable std::mutex mutex_;
  bool indexed_ = false;
  SegmentState state_;
  std::vector<OffsetIndexEntry> offset_index_;
  std::vector<TimeIndexEntry> time_index_;
  int64_t persisted_offset_entries_ = 0;
  int64_t persisted_time_entries_ = 0;
};

}  // namespace oxbow::log::internal
