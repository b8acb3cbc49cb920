// Segment files of a bucket log: frame codec, frame scanner, and the per-segment sparse
// offset index and time index. The byte layout is documented in docs/log-format.md.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "oxbow/common/buffer.h"
#include "oxbow/common/file_system.h"
#include "oxbow/common/status.h"

namespace oxbow::log::internal {

inline constexpr uint32_t kFrameMagic = 0x424C584F;  // bytes "OXLB"
// Version 1: one CRC over payload and header. Version 2 (written today): a CRC32C per
// checksum block of the payload, so a reader can verify just the bytes it serves.
inline constexpr uint8_t kFrameVersion1 = 1;
inline constexpr uint8_t kFrameVersion2 = 2;
inline constexpr int kChecksumBlockShift = 12;  // 4 KiB checksum blocks
inline constexpr int64_t kFrameHeaderSize = 64;
inline constexpr int64_t kFrameAlignment = 8;
inline constexpr int64_t kOffsetIndexEntrySize = 8;
inline constexpr int64_t kTimeIndexEntrySize = 12;
inline constexpr int64_t kNoTimestamp = std::numeric_limits<int64_t>::min();

inline int64_t PadToFrameAlignment(int64_t n) {
  return (n + kFrameAlignment - 1) & ~(kFrameAlignment - 1);
}

struct FrameHeader {
  uint8_t version = kFrameVersion2;
  uint8_t block_shift = kChecksumBlockShift;  // version 2: log2 of the checksum block size
  int32_t schema_id = 0;
  int64_t base_offset = 0;
  int32_t row_count = 0;
  int32_t metadata_length = 0;
  int64_t body_length = 0;
  int64_t min_timestamp_ms = 0;
  int64_t max_timestamp_ms = 0;
  int64_t append_time_ms = 0;

  int64_t payload_length() const { return metadata_length + body_length; }
  int64_t checksum_blocks() const {
    if (version == kFrameVersion1) return 0;
    return (payload_length() + (int64_t{1} << block_shift) - 1) >> block_shift;
  }
  // The checksum table (4 bytes a block) follows the header, padded to 8 bytes.
  int64_t checksum_table_length() const { return PadToFrameAlignment(4 * checksum_blocks()); }
  int64_t payload_position() const { return kFrameHeaderSize + checksum_table_length(); }
  int64_t padding() const { return PadToFrameAlignment(payload_length()) - payload_length(); }
  int64_t frame_length() const { return payload_position() + payload_length() + padding(); }
  int64_t next_offset() const { return base_offset + row_count; }
};

// The checksum table of a version 2 frame: CRC32C of each checksum block of the payload,
// computed from the payload pieces in order (they need not be block-aligned).
std::string EncodeChecksumTable(std::span<const ByteSpan> metadata, std::span<const ByteSpan> body,
                                int64_t payload_length);
// Writes the 64-byte header of a version 2 frame. The stored CRC covers header bytes 8..63
// followed by the checksum table.
void EncodeFrameHeader(const FrameHeader& header, const std::string& checksum_table, uint8_t* out);
// Parses and range-checks a header (not its CRC). `position` only names it in errors.
Result<FrameHeader> DecodeFrameHeader(const uint8_t* data, int64_t position);
// Version 2: checks the header CRC over header and checksum table; `frame` holds at least
// header.payload_position() bytes. Version 1 headers have no CRC of their own: OK.
Status VerifyFrameHeader(const uint8_t* frame, const FrameHeader& header);
// Checks the stored checksums of payload bytes [from, from + length) (version 2: the blocks
// they touch; version 1: the whole frame). `frame` holds the whole frame.
Status VerifyFramePayload(const uint8_t* frame, const FrameHeader& header, int64_t from,
                          int64_t length);

// A frame found by FrameScanner. `bytes` holds the whole frame unless scanning headers only.
struct ScannedFrame {
  FrameHeader header;
  int64_t position = 0;
  std::shared_ptr<Buffer> bytes;
};

// Walks the frames of a segment file between two positions, reading in large chunks. Every
// mode checks each header (its CRC in version 2, ranges, continuity, that the frame fits).
class FrameScanner {
 public:
  // kHeaders: headers only; kPayloads: also the frame bytes, unverified; kVerify: the frame
  // bytes, every checksum verified.
  enum class Mode { kHeaders, kPayloads, kVerify };

  // `expected_offset` (or -1) is the base offset the first frame must have; later frames
  // must continue without gaps.
  FrameScanner(File* file, int64_t position, int64_t end, int64_t expected_offset, Mode mode,
               int64_t chunk_bytes);

  // Sets *frame and returns true, or returns false at `end`. A malformed, torn or
  // mismatching frame gives Corruption; position() is then where it starts.
  Result<bool> Next(ScannedFrame* frame);
  int64_t position() const { return position_; }
  // The base offset the next frame must have (-1: not known yet).
  int64_t expected_offset() const { return expected_offset_; }
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

// The first intact frame (every checksum verified) that starts at a frame-aligned position in
// [from, end) with base offset >= min_offset; std::nullopt when there is none. Used to step
// over damage: what lies before it is the damaged stretch.
Result<std::optional<ScannedFrame>> FindIntactFrame(File* file, int64_t from, int64_t end,
                                                    int64_t min_offset);

// A damaged stretch of a segment: bytes [position, end_position) hold no intact frame, so
// the offsets [first_offset, end_offset) stored there cannot be served. end_position is
// where the next intact frame starts (or the end of the segment's frames).
struct DamagedSpan {
  int64_t position = 0;
  int64_t end_position = 0;
  int64_t first_offset = -1;  // -1: not known (the damage starts a scan with no known offset)
  int64_t end_offset = 0;
  std::string reason;
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

class Segment;

// A frame handed to a reader, kept so parts of its body can be verified later.
struct StoredFrame {
  std::shared_ptr<Segment> segment;
  FrameHeader header;
  int64_t position = 0;
  std::shared_ptr<Buffer> bytes;  // the whole frame
};

// What Segment::Recover found: the bytes it verified, and the torn tail it cut, if any.
struct SegmentRecovery {
  int64_t bytes_verified = 0;
  int64_t truncated_position = -1;  // where the cut tail began (-1: nothing cut)
  int64_t truncated_bytes = 0;
  int64_t truncated_from_offset = 0;  // the first offset the cut tail would have held
  std::string truncated_reason;
};

// One segment: its log file, its indexes (in memory, persisted to .index/.timeindex), and the
// damage found in it. Index methods are thread-safe; the bucket log serializes appends.
class Segment {
 public:
  Segment(FileSystem* fs, const std::string& dir, int64_t base_offset, std::unique_ptr<File> file,
          int64_t index_interval_bytes);
  // A cold segment lives in the cold store, its indexes read from `index` and `time_index`: it
  // is never written, an index it cannot read for a reason other than corruption is an error
  // (retried at the next use), and an index it rebuilds stays in memory.
  struct ColdIndexes {
    std::unique_ptr<File> index;
    std::unique_ptr<File> time_index;
  };
  Segment(FileSystem* fs, const std::string& dir, int64_t base_offset, std::unique_ptr<File> file,
          int64_t index_interval_bytes, ColdIndexes cold);

  int64_t base_offset() const { return base_offset_; }
  File* file() const { return file_.get(); }
  // A cold segment's index files (null for a local one).
  File* cold_index() const { return cold_.index.get(); }
  File* cold_time_index() const { return cold_.time_index.get(); }
  const std::string& log_path() const { return log_path_; }
  const std::string& index_path() const { return index_path_; }
  const std::string& time_index_path() const { return time_index_path_; }

  // Records a frame written at state().size, adding index entries every index interval.
  void AddFrame(const FrameHeader& header);
  SegmentState state() const;

  // For a sealed segment of `size` bytes whose frames end at `next_offset`: loads the index
  // files on first use, or rebuilds them from the segment when missing or invalid. Damaged
  // frames are stepped over and recorded (see damage()), not an error.
  Status EnsureIndexed(int64_t size, int64_t next_offset);
  // For the last segment at open: trusts `trusted` (from the recovery checkpoint, or an
  // empty state) and the first trusted.*_entries index entries, then verifies every frame from
  // trusted.size. A damaged frame followed by intact ones is kept as a damaged span; damage
  // with no intact frame after it is a torn tail, and the file is truncated there.
  Result<SegmentRecovery> Recover(const SegmentState& trusted);
  // Adds the final time index entry and makes data and indexes durable.
  Status Seal();
  // Writes the first `offset_entries` / `time_entries` index entries (those not yet
  // written) to the index files, outside the index lock; syncs them when `sync`.
  Status PersistIndexes(int64_t offset_entries, int64_t time_entries, bool sync);

  // Position and base offset of the last indexed frame whose base offset is <= `offset`
  // ({0, -1}: none, scan from the start).
  std::pair<int64_t, int64_t> FloorEntry(int64_t offset) const;
  // Position from which to scan for the first frame whose max timestamp >= `timestamp_ms`.
  int64_t TimeFloorPosition(int64_t timestamp_ms) const;

  // Damage found so far, by position.
  std::vector<DamagedSpan> damage() const;
  // The known damaged span starting at `position`, if any.
  std::optional<DamagedSpan> DamageAt(int64_t position) const;
  // Records `span` unless a span at its position is known already.
  void RecordDamage(const DamagedSpan& span);
  // The damaged span starting at `position` of a frame that failed (a known one, or found
  // now by looking for the next intact frame before `end`, whose offsets end at
  // `end_offset` when no intact frame follows). `first_offset` is the offset expected there.
  Result<DamagedSpan> DescribeDamage(int64_t position, int64_t end, int64_t first_offset,
                                     int64_t end_offset, const std::string& reason);

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
  const ColdIndexes cold_;
  bool is_cold() const { return cold_.index != nullptr; }

  mutable std::mutex mutex_;
  bool indexed_ = false;
  SegmentState state_;
  std::vector<OffsetIndexEntry> offset_index_;
  std::vector<TimeIndexEntry> time_index_;
  int64_t persisted_offset_entries_ = 0;
  int64_t persisted_time_entries_ = 0;

  mutable std::mutex damage_mutex_;
  std::vector<DamagedSpan> damage_;  // by position
};

}  // namespace oxbow::log::internal
