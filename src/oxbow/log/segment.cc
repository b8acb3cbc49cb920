#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "oxbow/common/crc32c.h"
#include "oxbow/log/byte_order_internal.h"
#include "oxbow/log/segment_internal.h"

namespace oxbow::log::internal {

namespace {

// Header fields after the CRC, covered by it.
constexpr int64_t kCrcCoveredStart = 8;
// Payloads are capped so that lengths and positions never overflow.
constexpr int64_t kMaxBodyLength = int64_t{1} << 48;

std::string At(int64_t position) { return " at position " + std::to_string(position); }

}  // namespace

std::string SegmentFileName(int64_t base_offset, const char* suffix) {
  char name[64];
  std::snprintf(name, sizeof(name), "%020" PRId64 "%s", base_offset, suffix);
  return name;
}

std::string EncodeChecksumTable(std::span<const ByteSpan> metadata, std::span<const ByteSpan> body,
                                int64_t payload_length) {
  constexpr size_t kBlock = size_t{1} << kChecksumBlockShift;
  FrameHeader shape;
  shape.body_length = payload_length;
  std::vector<uint32_t> crcs(static_cast<size_t>(shape.checksum_blocks()));
  size_t block = 0;
  size_t filled = 0;  // bytes of the current block seen so far
  uint32_t partial = 0;
  auto consume = [&](const uint8_t* p, size_t n) {
    if (filled > 0) {
      size_t take = std::min(n, kBlock - filled);
      partial = crc32c::Extend(partial, p, take);
      filled += take;
      p += take;
      n -= take;
      if (filled < kBlock) return;
      crcs[block++] = partial;
      filled = 0;
    }
    size_t whole = n / kBlock * kBlock;
    crc32c::BlockValues(p, whole, kBlock, crcs.data() + block);
    block += whole / kBlock;
    if (n > whole) {
      partial = crc32c::Value(p + whole, n - whole);
      filled = n - whole;
    }
  };
  for (const ByteSpan& piece : metadata) consume(piece.data(), piece.size());
  for (const ByteSpan& piece : body) consume(piece.data(), piece.size());
  if (filled > 0) crcs[block++] = partial;
  std::string table(static_cast<size_t>(shape.checksum_table_length()), '\0');
  auto* out = reinterpret_cast<uint8_t*>(table.data());
  for (size_t i = 0; i < crcs.size(); ++i) Put<uint32_t>(out, static_cast<int64_t>(4 * i), crcs[i]);
  return table;
}

namespace {

uint32_t HeaderCrc(const uint8_t* header, const uint8_t* table, int64_t blocks) {
  uint32_t crc = crc32c::Value(header + kCrcCoveredStart,
                               static_cast<size_t>(kFrameHeaderSize - kCrcCoveredStart));
  return crc32c::Extend(crc, table, static_cast<size_t>(4 * blocks));
}

}  // namespace

void EncodeFrameHeader(const FrameHeader& h, const std::string& checksum_table, uint8_t* out) {
  Put<uint32_t>(out, 0, kFrameMagic);
  Put<uint8_t>(out, 8, kFrameVersion2);
  Put<uint8_t>(out, 9, h.block_shift);
  Put<uint16_t>(out, 10, static_cast<uint16_t>(kFrameHeaderSize));
  Put<int32_t>(out, 12, h.schema_id);
  Put<int64_t>(out, 16, h.base_offset);
  Put<int32_t>(out, 24, h.row_count);
  Put<int32_t>(out, 28, h.metadata_length);
  Put<int64_t>(out, 32, h.body_length);
  Put<int64_t>(out, 40, h.min_timestamp_ms);
  Put<int64_t>(out, 48, h.max_timestamp_ms);
  Put<int64_t>(out, 56, h.append_time_ms);
  Put<uint32_t>(
      out, 4,
      HeaderCrc(out, reinterpret_cast<const uint8_t*>(checksum_table.data()), h.checksum_blocks()));
}

Result<FrameHeader> DecodeFrameHeader(const uint8_t* data, int64_t position) {
  if (Get<uint32_t>(data, 0) != kFrameMagic) {
    return Status::Corruption("bad frame magic" + At(position));
  }
  FrameHeader h;
  h.version = Get<uint8_t>(data, 8);
  h.block_shift = Get<uint8_t>(data, 9);
  if (h.version != kFrameVersion1 && h.version != kFrameVersion2) {
    return Status::Corruption("unsupported frame version " + std::to_string(h.version) +
                              At(position));
  }
  bool shift_ok =
      h.version == kFrameVersion1 ? h.block_shift == 0 : h.block_shift >= 10 && h.block_shift <= 24;
  if (!shift_ok || Get<uint16_t>(data, 10) != kFrameHeaderSize) {
    return Status::Corruption("bad frame attributes or header length" + At(position));
  }
  h.schema_id = Get<int32_t>(data, 12);
  h.base_offset = Get<int64_t>(data, 16);
  h.row_count = Get<int32_t>(data, 24);
  h.metadata_length = Get<int32_t>(data, 28);
  h.body_length = Get<int64_t>(data, 32);
  h.min_timestamp_ms = Get<int64_t>(data, 40);
  h.max_timestamp_ms = Get<int64_t>(data, 48);
  h.append_time_ms = Get<int64_t>(data, 56);
  if (h.base_offset < 0 || h.row_count <= 0 ||
      h.base_offset > std::numeric_limits<int64_t>::max() - h.row_count) {
    return Status::Corruption("bad frame offsets (base " + std::to_string(h.base_offset) +
                              ", rows " + std::to_string(h.row_count) + ")" + At(position));
  }
  if (h.metadata_length < 0 || h.body_length < 0 || h.body_length > kMaxBodyLength) {
    return Status::Corruption("bad frame payload lengths (metadata " +
                              std::to_string(h.metadata_length) + ", body " +
                              std::to_string(h.body_length) + ")" + At(position));
  }
  if (h.min_timestamp_ms > h.max_timestamp_ms) {
    return Status::Corruption("frame min timestamp exceeds max timestamp" + At(position));
  }
  return h;
}

Status VerifyFrameHeader(const uint8_t* frame, const FrameHeader& h) {
  if (h.version == kFrameVersion1) return Status::OK();
  if (HeaderCrc(frame, frame + kFrameHeaderSize, h.checksum_blocks()) != Get<uint32_t>(frame, 4)) {
    return Status::Corruption("frame header checksum mismatch");
  }
  return Status::OK();
}

Status VerifyFramePayload(const uint8_t* frame, const FrameHeader& h, int64_t from,
                          int64_t length) {
  const uint8_t* payload = frame + h.payload_position();
  if (h.version == kFrameVersion1) {
    uint32_t crc = crc32c::Value(payload, static_cast<size_t>(h.payload_length()));
    crc = crc32c::Extend(crc, frame + kCrcCoveredStart,
                         static_cast<size_t>(kFrameHeaderSize - kCrcCoveredStart));
    if (crc != Get<uint32_t>(frame, 4)) return Status::Corruption("frame checksum mismatch");
    return Status::OK();
  }
  if (length <= 0) return Status::OK();
  const int64_t block = int64_t{1} << h.block_shift;
  const int64_t first = from >> h.block_shift;
  const int64_t last = (from + length - 1) >> h.block_shift;
  constexpr int64_t kBatch = 64;  // blocks checked per BlockValues call
  uint32_t crcs[kBatch];
  for (int64_t b = first; b <= last; b += kBatch) {
    const int64_t count = std::min(kBatch, last + 1 - b);
    const int64_t start = b * block;
    const int64_t bytes = std::min(count * block, h.payload_length() - start);
    crc32c::BlockValues(payload + start, static_cast<size_t>(bytes), static_cast<size_t>(block),
                        crcs);
    for (int64_t i = 0; i < count; ++i) {
      if (crcs[i] != Get<uint32_t>(frame + kFrameHeaderSize, 4 * (b + i))) {
        const int64_t bad = (b + i) * block;
        return Status::Corruption("checksum mismatch in payload bytes [" + std::to_string(bad) +
                                  ", " + std::to_string(std::min(bad + block, h.payload_length())) +
                                  ")");
      }
    }
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------

FrameScanner::FrameScanner(File* file, int64_t position, int64_t end, int64_t expected_offset,
                           Mode mode, int64_t chunk_bytes)
    : file_(file),
      position_(position),
      end_(end),
      expected_offset_(expected_offset),
      mode_(mode),
      chunk_bytes_(chunk_bytes) {}

Status FrameScanner::Fill(int64_t length) {
  if (chunk_ && position_ >= chunk_start_ && position_ + length <= chunk_start_ + chunk_->size()) {
    return Status::OK();
  }
  int64_t want = std::min(std::max(length, chunk_bytes_), end_ - position_);
  ASSIGN_OR_RAISE(chunk_, file_->ReadAt(position_, want));
  chunk_start_ = position_;
  bytes_read_ += chunk_->size();
  if (chunk_->size() < length) {
    return Status::Corruption("segment " + file_->path() + " ends early: wanted " +
                              std::to_string(length) + " bytes" + At(position_));
  }
  return Status::OK();
}

Result<bool> FrameScanner::Next(ScannedFrame* frame) {
  if (position_ >= end_) return false;
  if (end_ - position_ < kFrameHeaderSize) {
    return Status::Corruption("torn frame header (" + std::to_string(end_ - position_) + " bytes)" +
                              At(position_));
  }
  RETURN_NOT_OK(Fill(kFrameHeaderSize));
  ASSIGN_OR_RAISE(FrameHeader header,
                  DecodeFrameHeader(chunk_->data() + (position_ - chunk_start_), position_));
  if (expected_offset_ >= 0 && header.base_offset != expected_offset_) {
    return Status::Corruption("frame base offset " + std::to_string(header.base_offset) +
                              ", expected " + std::to_string(expected_offset_) + At(position_));
  }
  int64_t length = header.frame_length();
  if (length > end_ - position_) {
    return Status::Corruption("torn frame of " + std::to_string(length) + " bytes, only " +
                              std::to_string(end_ - position_) + " present" + At(position_));
  }
  RETURN_NOT_OK(Fill(mode_ == Mode::kHeaders ? header.payload_position() : length));
  const int64_t offset = position_ - chunk_start_;
  const uint8_t* data = chunk_->data() + offset;
  Status verified = VerifyFrameHeader(data, header);
  if (verified.ok() && mode_ == Mode::kVerify) {
    verified = VerifyFramePayload(data, header, 0, header.payload_length());
  }
  if (!verified.ok()) return Status::Corruption(verified.message() + At(position_));
  frame->bytes = mode_ == Mode::kHeaders ? nullptr : Buffer::Slice(chunk_, offset, length);
  frame->header = header;
  frame->position = position_;
  position_ += length;
  expected_offset_ = header.next_offset();
  return true;
}

Result<std::optional<ScannedFrame>> FindIntactFrame(File* file, int64_t from, int64_t end,
                                                    int64_t min_offset) {
  constexpr int64_t kSearchChunk = int64_t{1} << 20;
  for (int64_t chunk_start = PadToFrameAlignment(from); chunk_start + kFrameHeaderSize <= end;
       chunk_start += kSearchChunk) {
    ASSIGN_OR_RAISE(auto chunk,
                    file->ReadAt(chunk_start, std::min(kSearchChunk, end - chunk_start)));
    for (int64_t i = 0; i + 4 <= chunk->size(); i += kFrameAlignment) {
      if (Get<uint32_t>(chunk->data(), i) != kFrameMagic) continue;
      FrameScanner probe(file, chunk_start + i, end, -1, FrameScanner::Mode::kVerify,
                         kFrameHeaderSize);
      ScannedFrame frame;
      auto found = probe.Next(&frame);
      if (!found.ok()) {
        if (found.status().code() != StatusCode::kCorruption) return found.status();
        continue;
      }
      if (*found && frame.header.base_offset >= min_offset) return std::optional(frame);
    }
  }
  return std::optional<ScannedFrame>();
}

// ---------------------------------------------------------------------------------------------

namespace {

constexpr int64_t kHeaderScanChunk = 16 * 1024;
constexpr int64_t kVerifyScanChunk = 1024 * 1024;

std::string EncodeOffsetEntries(const std::vector<OffsetIndexEntry>& entries, int64_t from,
                                int64_t to) {
  std::string out(static_cast<size_t>((to - from) * kOffsetIndexEntrySize), '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  for (int64_t i = from; i < to; ++i, p += kOffsetIndexEntrySize) {
    Put<uint32_t>(p, 0, entries[i].relative_offset);
    Put<uint32_t>(p, 4, entries[i].position);
  }
  return out;
}

std::string EncodeTimeEntries(const std::vector<TimeIndexEntry>& entries, int64_t from,
                              int64_t to) {
  std::string out(static_cast<size_t>((to - from) * kTimeIndexEntrySize), '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  for (int64_t i = from; i < to; ++i, p += kTimeIndexEntrySize) {
    Put<int64_t>(p, 0, entries[i].timestamp_ms);
    Put<uint32_t>(p, 8, entries[i].relative_offset);
  }
  return out;
}

// Reads a whole index file; a missing file reads as empty.
Result<std::shared_ptr<Buffer>> ReadWholeFile(FileSystem* fs, const std::string& path) {
  auto file = fs->OpenFile(path, FileMode::kRead);
  if (!file.ok()) {
    if (file.status().IsNotFound()) return Buffer::Empty();
    return file.status();
  }
  ASSIGN_OR_RAISE(int64_t size, (*file)->Size());
  return (*file)->ReadAt(0, size);
}

// Reads an index: a cold one through its File (the cold cache), a local one from `fs`; a
// missing one reads as empty.
Result<std::shared_ptr<Buffer>> ReadIndexFile(FileSystem* fs, File* cold, const std::string& path) {
  if (cold == nullptr) return ReadWholeFile(fs, path);
  ASSIGN_OR_RAISE(int64_t size, cold->Size());
  auto bytes = cold->ReadAt(0, size);
  if (bytes.status().IsNotFound()) return Buffer::Empty();
  return bytes;
}

// Parses up to `limit` entries (-1: all) of an offset index, checking they are usable.
Status ParseOffsetIndex(const Buffer& bytes, int64_t limit, int64_t segment_size,
                        std::vector<OffsetIndexEntry>* out) {
  if (bytes.size() % kOffsetIndexEntrySize != 0) return Status::Corruption("ragged offset index");
  int64_t n = bytes.size() / kOffsetIndexEntrySize;
  if (limit >= 0) {
    if (n < limit) return Status::Corruption("offset index shorter than the checkpoint");
    n = limit;
  }
  out->clear();
  for (int64_t i = 0; i < n; ++i) {
    OffsetIndexEntry e{Get<uint32_t>(bytes.data(), i * kOffsetIndexEntrySize),
                       Get<uint32_t>(bytes.data(), i * kOffsetIndexEntrySize + 4)};
    bool first_ok = i > 0 || (e.relative_offset == 0 && e.position == 0);
    bool ordered = i == 0 || (e.relative_offset > out->back().relative_offset &&
                              e.position > out->back().position);
    if (!first_ok || !ordered || e.position >= segment_size) {
      return Status::Corruption("offset index entry " + std::to_string(i) + " is out of order");
    }
    out->push_back(e);
  }
  return Status::OK();
}

Status ParseTimeIndex(const Buffer& bytes, int64_t limit, int64_t max_relative_offset,
                      std::vector<TimeIndexEntry>* out) {
  if (bytes.size() % kTimeIndexEntrySize != 0) return Status::Corruption("ragged time index");
  int64_t n = bytes.size() / kTimeIndexEntrySize;
  if (limit >= 0) {
    if (n < limit) return Status::Corruption("time index shorter than the checkpoint");
    n = limit;
  }
  out->clear();
  for (int64_t i = 0; i < n; ++i) {
    TimeIndexEntry e{Get<int64_t>(bytes.data(), i * kTimeIndexEntrySize),
                     Get<uint32_t>(bytes.data(), i * kTimeIndexEntrySize + 8)};
    bool ordered = i == 0 || (e.timestamp_ms > out->back().timestamp_ms &&
                              e.relative_offset >= out->back().relative_offset);
    if (!ordered || e.relative_offset > max_relative_offset) {
      return Status::Corruption("time index entry " + std::to_string(i) + " is out of order");
    }
    out->push_back(e);
  }
  return Status::OK();
}

}  // namespace

Segment::Segment(FileSystem* fs, const std::string& dir, int64_t base_offset,
                 std::unique_ptr<File> file, int64_t index_interval_bytes)
    : Segment(fs, dir, base_offset, std::move(file), index_interval_bytes, ColdIndexes{}) {}

Segment::Segment(FileSystem* fs, const std::string& dir, int64_t base_offset,
                 std::unique_ptr<File> file, int64_t index_interval_bytes, ColdIndexes cold)
    : fs_(fs),
      base_offset_(base_offset),
      log_path_(JoinPath(dir, SegmentFileName(base_offset, ".log"))),
      index_path_(JoinPath(dir, SegmentFileName(base_offset, ".index"))),
      time_index_path_(JoinPath(dir, SegmentFileName(base_offset, ".timeindex"))),
      file_(std::move(file)),
      index_interval_bytes_(index_interval_bytes),
      cold_(std::move(cold)) {
  state_.next_offset = base_offset;
}

void Segment::AddFrame(const FrameHeader& header) {
  std::lock_guard lock(mutex_);
  indexed_ = true;
  AddFrameLocked(header);
}

void Segment::AddFrameLocked(const FrameHeader& h) {
  int64_t position = state_.size;
  auto relative = static_cast<uint32_t>(h.base_offset - base_offset_);
  state_.max_timestamp_ms = std::max(state_.max_timestamp_ms, h.max_timestamp_ms);
  if (offset_index_.empty() || position - offset_index_.back().position >= index_interval_bytes_) {
    offset_index_.push_back({relative, static_cast<uint32_t>(position)});
    if (time_index_.empty() || state_.max_timestamp_ms > time_index_.back().timestamp_ms) {
      time_index_.push_back({state_.max_timestamp_ms, relative});
    }
  }
  state_.size += h.frame_length();
  state_.next_offset = h.next_offset();
  state_.last_base_offset = h.base_offset;
  if (state_.first_append_ms < 0) state_.first_append_ms = h.append_time_ms;
  state_.last_append_ms = std::max(state_.last_append_ms, h.append_time_ms);
  state_.offset_entries = static_cast<int64_t>(offset_index_.size());
  state_.time_entries = static_cast<int64_t>(time_index_.size());
}

SegmentState Segment::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

Status Segment::EnsureIndexed(int64_t size, int64_t next_offset) {
  std::lock_guard lock(mutex_);
  if (indexed_) return Status::OK();
  Status loaded = LoadIndexFiles(size, next_offset);
  if (!loaded.ok()) {
    if (is_cold() && loaded.code() != StatusCode::kCorruption) {
      offset_index_.clear();
      time_index_.clear();
      return loaded;
    }
    RETURN_NOT_OK(RebuildLocked(size, next_offset));
  }
  indexed_ = true;
  return Status::OK();
}

Status Segment::LoadIndexFiles(int64_t size, int64_t next_offset) {
  ASSIGN_OR_RAISE(auto offset_bytes, ReadIndexFile(fs_, cold_.index.get(), index_path_));
  ASSIGN_OR_RAISE(auto time_bytes, ReadIndexFile(fs_, cold_.time_index.get(), time_index_path_));
  RETURN_NOT_OK(ParseOffsetIndex(*offset_bytes, -1, size, &offset_index_));
  RETURN_NOT_OK(ParseTimeIndex(*time_bytes, -1, next_offset - base_offset_ - 1, &time_index_));
  if (size == 0) {
    state_ = {};
    state_.next_offset = base_offset_;
    return next_offset == base_offset_ ? Status::OK() : Status::Corruption("empty segment");
  }
  if (offset_index_.empty() || time_index_.empty()) return Status::Corruption("empty index");
  // Frames after the last index entry are read to learn the segment's tail.
  const OffsetIndexEntry& last = offset_index_.back();
  FrameScanner scanner(file_.get(), last.position, size, base_offset_ + last.relative_offset,
                       FrameScanner::Mode::kHeaders, kHeaderScanChunk);
  SegmentState state;
  state.size = last.position;
  state.max_timestamp_ms = time_index_.back().timestamp_ms;
  ScannedFrame frame;
  while (true) {
    ASSIGN_OR_RAISE(bool more, scanner.Next(&frame));
    if (!more) break;
    state.size += frame.header.frame_length();
    state.next_offset = frame.header.next_offset();
    state.last_base_offset = frame.header.base_offset;
    state.max_timestamp_ms = std::max(state.max_timestamp_ms, frame.header.max_timestamp_ms);
    state.last_append_ms = std::max(state.last_append_ms, frame.header.append_time_ms);
  }
  if (state.next_offset != next_offset) {
    return Status::Corruption("segment " + log_path_ + " ends at offset " +
                              std::to_string(state.next_offset) + ", expected " +
                              std::to_string(next_offset));
  }
  if (state.max_timestamp_ms != time_index_.back().timestamp_ms) {
    return Status::Corruption("time index lacks the segment's largest timestamp");
  }
  state.offset_entries = static_cast<int64_t>(offset_index_.size());
  state.time_entries = static_cast<int64_t>(time_index_.size());
  state_ = state;
  persisted_offset_entries_ = state.offset_entries;
  persisted_time_entries_ = state.time_entries;
  return Status::OK();
}

Status Segment::RebuildLocked(int64_t size, int64_t next_offset) {
  offset_index_.clear();
  time_index_.clear();
  state_ = {};
  state_.next_offset = base_offset_;
  int64_t position = 0;
  while (position < size) {
    FrameScanner scanner(file_.get(), position, size, state_.next_offset,
                         FrameScanner::Mode::kHeaders, kHeaderScanChunk);
    ScannedFrame frame;
    Result<bool> more = scanner.Next(&frame);
    for (; more.ok() && *more; more = scanner.Next(&frame)) AddFrameLocked(frame.header);
    if (more.ok()) break;
    if (more.status().code() != StatusCode::kCorruption) return more.status();
    // Step over the damage; the frames after it stay readable.
    ASSIGN_OR_RAISE(DamagedSpan span,
                    DescribeDamage(scanner.position(), size, scanner.expected_offset(), next_offset,
                                   more.status().message()));
    state_.size = position = span.end_position;
    state_.next_offset = span.end_offset;
  }
  if (state_.next_offset != next_offset) {
    return Status::Corruption("segment " + log_path_ + " ends at offset " +
                              std::to_string(state_.next_offset) + ", expected " +
                              std::to_string(next_offset));
  }
  if (state_.last_base_offset >= 0 && state_.max_timestamp_ms > time_index_.back().timestamp_ms) {
    time_index_.push_back(
        {state_.max_timestamp_ms, static_cast<uint32_t>(state_.last_base_offset - base_offset_)});
    state_.time_entries++;
  }
  if (is_cold()) return Status::OK();
  // Rewrite the index files so the next open finds them; a failure only costs a rebuild.
  std::string offsets = EncodeOffsetEntries(offset_index_, 0, state_.offset_entries);
  std::string times = EncodeTimeEntries(time_index_, 0, state_.time_entries);
  if (WriteIndexFile(index_path_, 0, offsets, true, true).ok() &&
      WriteIndexFile(time_index_path_, 0, times, true, true).ok()) {
    persisted_offset_entries_ = state_.offset_entries;
    persisted_time_entries_ = state_.time_entries;
  }
  return Status::OK();
}

Result<SegmentRecovery> Segment::Recover(const SegmentState& trusted) {
  std::lock_guard lock(mutex_);
  ASSIGN_OR_RAISE(int64_t file_size, file_->Size());
  state_ = trusted;
  bool trusted_ok = trusted.size <= file_size;
  if (trusted_ok && trusted.offset_entries > 0) {
    auto offset_bytes = ReadWholeFile(fs_, index_path_);
    auto time_bytes = ReadWholeFile(fs_, time_index_path_);
    trusted_ok =
        offset_bytes.ok() && time_bytes.ok() &&
        ParseOffsetIndex(**offset_bytes, trusted.offset_entries, trusted.size, &offset_index_)
            .ok() &&
        ParseTimeIndex(**time_bytes, trusted.time_entries, trusted.next_offset - base_offset_ - 1,
                       &time_index_)
            .ok();
  } else if (trusted.offset_entries > 0 || trusted.time_entries > 0 || trusted.size > 0) {
    trusted_ok = false;  // a non-empty prefix must have index entries
  }
  if (!trusted_ok) {
    offset_index_.clear();
    time_index_.clear();
    state_ = {};
    state_.next_offset = base_offset_;
  }
  persisted_offset_entries_ = state_.offset_entries;
  persisted_time_entries_ = state_.time_entries;

  SegmentRecovery recovery;
  while (true) {
    FrameScanner scanner(file_.get(), state_.size, file_size, state_.next_offset,
                         FrameScanner::Mode::kVerify, kVerifyScanChunk);
    ScannedFrame frame;
    Result<bool> more = scanner.Next(&frame);
    for (; more.ok() && *more; more = scanner.Next(&frame)) AddFrameLocked(frame.header);
    recovery.bytes_verified += scanner.bytes_read();
    if (more.ok()) break;
    if (more.status().code() != StatusCode::kCorruption) return more.status();
    ASSIGN_OR_RAISE(auto intact, FindIntactFrame(file_.get(), scanner.position() + kFrameAlignment,
                                                 file_size, state_.next_offset));
    if (!intact) {
      // Nothing intact follows: a torn tail, the last frames written and never made durable.
      recovery.truncated_position = state_.size;
      recovery.truncated_bytes = file_size - state_.size;
      recovery.truncated_from_offset = state_.next_offset;
      recovery.truncated_reason = more.status().message();
      break;
    }
    // Intact frames follow the damage: keep them, and refuse the damaged span on read.
    RecordDamage({state_.size, intact->position, state_.next_offset, intact->header.base_offset,
                  more.status().message()});
    state_.size = intact->position;
    state_.next_offset = intact->header.base_offset;
  }
  if (state_.size < file_size) RETURN_NOT_OK(file_->Truncate(state_.size));
  if (state_.size > trusted.size || state_.size < file_size) RETURN_NOT_OK(file_->Sync());
  // Index entries past the trusted prefix are rewritten at the next checkpoint.
  ASSIGN_OR_RAISE(auto index_file, fs_->OpenFile(index_path_, FileMode::kCreate));
  RETURN_NOT_OK(index_file->Truncate(persisted_offset_entries_ * kOffsetIndexEntrySize));
  ASSIGN_OR_RAISE(auto time_file, fs_->OpenFile(time_index_path_, FileMode::kCreate));
  RETURN_NOT_OK(time_file->Truncate(persisted_time_entries_ * kTimeIndexEntrySize));
  indexed_ = true;
  return recovery;
}

Status Segment::Seal() {
  int64_t offset_entries, time_entries;
  {
    std::lock_guard lock(mutex_);
    if (state_.last_base_offset >= 0 &&
        (time_index_.empty() || state_.max_timestamp_ms > time_index_.back().timestamp_ms)) {
      time_index_.push_back(
          {state_.max_timestamp_ms, static_cast<uint32_t>(state_.last_base_offset - base_offset_)});
      state_.time_entries++;
    }
    offset_entries = state_.offset_entries;
    time_entries = state_.time_entries;
  }
  RETURN_NOT_OK(file_->Sync());
  return PersistIndexes(offset_entries, time_entries, true);
}

Status Segment::PersistIndexes(int64_t offset_entries, int64_t time_entries, bool sync) {
  std::string offsets, times;
  int64_t offset_from, time_from;
  {
    std::lock_guard lock(mutex_);
    offset_from = std::min(persisted_offset_entries_, offset_entries);
    time_from = std::min(persisted_time_entries_, time_entries);
    offsets = EncodeOffsetEntries(offset_index_, offset_from, offset_entries);
    times = EncodeTimeEntries(time_index_, time_from, time_entries);
  }
  RETURN_NOT_OK(
      WriteIndexFile(index_path_, offset_from * kOffsetIndexEntrySize, offsets, false, sync));
  RETURN_NOT_OK(
      WriteIndexFile(time_index_path_, time_from * kTimeIndexEntrySize, times, false, sync));
  std::lock_guard lock(mutex_);
  persisted_offset_entries_ = std::max(persisted_offset_entries_, offset_entries);
  persisted_time_entries_ = std::max(persisted_time_entries_, time_entries);
  return Status::OK();
}

Status Segment::WriteIndexFile(const std::string& path, int64_t file_position,
                               const std::string& bytes, bool truncate, bool sync) {
  ASSIGN_OR_RAISE(auto file, fs_->OpenFile(path, FileMode::kCreate));
  if (truncate) RETURN_NOT_OK(file->Truncate(0));
  if (!bytes.empty()) {
    ByteSpan span{reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
    RETURN_NOT_OK(file->WriteAt(file_position, span));
  }
  if (sync) RETURN_NOT_OK(file->Sync());
  return Status::OK();
}

std::pair<int64_t, int64_t> Segment::FloorEntry(int64_t offset) const {
  std::lock_guard lock(mutex_);
  if (offset <= base_offset_ || offset_index_.empty()) return {0, base_offset_};
  int64_t relative = offset - base_offset_;
  auto it = std::upper_bound(
      offset_index_.begin(), offset_index_.end(), relative,
      [](int64_t r, const OffsetIndexEntry& e) { return r < int64_t{e.relative_offset}; });
  if (it == offset_index_.begin()) return {0, base_offset_};
  return {std::prev(it)->position, base_offset_ + std::prev(it)->relative_offset};
}

int64_t Segment::TimeFloorPosition(int64_t timestamp_ms) const {
  int64_t offset;
  {
    std::lock_guard lock(mutex_);
    auto it =
        std::lower_bound(time_index_.begin(), time_index_.end(), timestamp_ms,
                         [](const TimeIndexEntry& e, int64_t ts) { return e.timestamp_ms < ts; });
    if (it == time_index_.begin()) return 0;
    offset = base_offset_ + std::prev(it)->relative_offset;
  }
  return FloorEntry(offset).first;
}

std::vector<DamagedSpan> Segment::damage() const {
  std::lock_guard lock(damage_mutex_);
  return damage_;
}

std::optional<DamagedSpan> Segment::DamageAt(int64_t position) const {
  std::lock_guard lock(damage_mutex_);
  for (const DamagedSpan& span : damage_) {
    if (span.position == position) return span;
  }
  return std::nullopt;
}

void Segment::RecordDamage(const DamagedSpan& span) {
  std::lock_guard lock(damage_mutex_);
  auto at = std::lower_bound(
      damage_.begin(), damage_.end(), span.position,
      [](const DamagedSpan& known, int64_t position) { return known.position < position; });
  if (at == damage_.end() || at->position != span.position) damage_.insert(at, span);
}

Result<DamagedSpan> Segment::DescribeDamage(int64_t position, int64_t end, int64_t first_offset,
                                            int64_t end_offset, const std::string& reason) {
  if (auto known = DamageAt(position)) return *known;
  ASSIGN_OR_RAISE(auto intact, FindIntactFrame(file_.get(), position + kFrameAlignment, end,
                                               std::max(first_offset, base_offset_)));
  DamagedSpan span{position, intact ? intact->position : end, first_offset,
                   intact ? intact->header.base_offset : end_offset, reason};
  RecordDamage(span);
  return span;
}

}  // namespace oxbow::log::internal
