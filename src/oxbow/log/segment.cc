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

void EncodeFrameHeader(const FrameHeader& h, uint32_t payload_crc, uint8_t* out) {
  Put<uint32_t>(out, 0, kFrameMagic);
  Put<uint8_t>(out, 8, kFrameVersion);
  Put<uint8_t>(out, 9, 0);  // attributes
  Put<uint16_t>(out, 10, static_cast<uint16_t>(kFrameHeaderSize));
  Put<int32_t>(out, 12, h.schema_id);
  Put<int64_t>(out, 16, h.base_offset);
  Put<int32_t>(out, 24, h.row_count);
  Put<int32_t>(out, 28, h.metadata_length);
  Put<int64_t>(out, 32, h.body_length);
  Put<int64_t>(out, 40, h.min_timestamp_ms);
  Put<int64_t>(out, 48, h.max_timestamp_ms);
  Put<int64_t>(out, 56, h.append_time_ms);
  uint32_t crc = crc32c::Extend(payload_crc, out + kCrcCoveredStart,
                                static_cast<size_t>(kFrameHeaderSize - kCrcCoveredStart));
  Put<uint32_t>(out, 4, crc);
}

Result<FrameHeader> DecodeFrameHeader(const uint8_t* data, int64_t position) {
  if (Get<uint32_t>(data, 0) != kFrameMagic) {
    return Status::Corruption("bad frame magic" + At(position));
  }
  if (Get<uint8_t>(data, 8) != kFrameVersion) {
    return Status::Corruption("unsupported frame version " + std::to_string(Get<uint8_t>(data, 8)) +
                              At(position));
  }
  if (Get<uint8_t>(data, 9) != 0 || Get<uint16_t>(data, 10) != kFrameHeaderSize) {
    return Status::Corruption("bad frame attributes or header length" + At(position));
  }
  FrameHeader h;
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

bool FrameCrcMatches(const uint8_t* frame, int64_t payload_length) {
  uint32_t crc = crc32c::Value(frame + kFrameHeaderSize, static_cast<size_t>(payload_length));
  crc = crc32c::Extend(crc, frame + kCrcCoveredStart,
                       static_cast<size_t>(kFrameHeaderSize - kCrcCoveredStart));
  return crc == Get<uint32_t>(frame, 4);
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
  const uint8_t* data = chunk_->data() + (position_ - chunk_start_);
  ASSIGN_OR_RAISE(FrameHeader header, DecodeFrameHeader(data, position_));
  if (expected_offset_ >= 0 && header.base_offset != expected_offset_) {
    return Status::Corruption("frame base offset " + std::to_string(header.base_offset) +
                              ", expected " + std::to_string(expected_offset_) + At(position_));
  }
  int64_t length = header.frame_length();
  if (length > end_ - position_) {
    return Status::Corruption("torn frame of " + std::to_string(length) + " bytes, only " +
                              std::to_string(end_ - position_) + " present" + At(position_));
  }
  frame->bytes = nullptr;
  if (mode_ != Mode::kHeaders) {
    RETURN_NOT_OK(Fill(length));
    int64_t offset = position_ - chunk_start_;
    if (mode_ == Mode::kVerify &&
        !FrameCrcMatches(chunk_->data() + offset, header.payload_length())) {
      return Status::Corruption("CRC mismatch in frame with base offset " +
                                std::to_string(header.base_offset) + At(position_));
    }
    frame->bytes = Buffer::Slice(chunk_, offset, length);
  }
  frame->header = header;
  frame->position = position_;
  position_ += length;
  expected_offset_ = header.next_offset();
  return true;
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
    : fs_(fs),
      base_offset_(base_offset),
      log_path_(JoinPath(dir, SegmentFileName(base_offset, ".log"))),
      index_path_(JoinPath(dir, SegmentFileName(base_offset, ".index"))),
      time_index_path_(JoinPath(dir, SegmentFileName(base_offset, ".timeindex"))),
      file_(std::move(file)),
      index_interval_bytes_(index_interval_bytes) {
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
  if (!LoadIndexFiles(size, next_offset).ok()) RETURN_NOT_OK(RebuildLocked(size, next_offset));
  indexed_ = true;
  return Status::OK();
}

Status Segment::LoadIndexFiles(int64_t size, int64_t next_offset) {
  ASSIGN_OR_RAISE(auto offset_bytes, ReadWholeFile(fs_, index_path_));
  ASSIGN_OR_RAISE(auto time_bytes, ReadWholeFile(fs_, time_index_path_));
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
  FrameScanner scanner(file_.get(), 0, size, base_offset_, FrameScanner::Mode::kHeaders,
                       kHeaderScanChunk);
  ScannedFrame frame;
  while (true) {
    ASSIGN_OR_RAISE(bool more, scanner.Next(&frame));
    if (!more) break;
    AddFrameLocked(frame.header);
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

Result<int64_t> Segment::Recover(const SegmentState& trusted) {
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

  FrameScanner scanner(file_.get(), state_.size, file_size, state_.next_offset,
                       FrameScanner::Mode::kVerify, kVerifyScanChunk);
  ScannedFrame frame;
  while (true) {
    auto more = scanner.Next(&frame);
    if (!more.ok()) {
      if (more.status().code() != StatusCode::kCorruption) return more.status();
      break;  // the tail from here is torn or corrupt
    }
    if (!*more) break;
    AddFrameLocked(frame.header);
  }
  int64_t bytes_verified = scanner.bytes_read();
  if (state_.size < file_size) RETURN_NOT_OK(file_->Truncate(state_.size));
  if (state_.size > trusted.size || state_.size < file_size) RETURN_NOT_OK(file_->Sync());
  // Index entries past the trusted prefix are rewritten at the next checkpoint.
  ASSIGN_OR_RAISE(auto index_file, fs_->OpenFile(index_path_, FileMode::kCreate));
  RETURN_NOT_OK(index_file->Truncate(persisted_offset_entries_ * kOffsetIndexEntrySize));
  ASSIGN_OR_RAISE(auto time_file, fs_->OpenFile(time_index_path_, FileMode::kCreate));
  RETURN_NOT_OK(time_file->Truncate(persisted_time_entries_ * kTimeIndexEntrySize));
  indexed_ = true;
  return bytes_verified;
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

int64_t Segment::FloorPosition(int64_t offset) const {
  std::lock_guard lock(mutex_);
  if (offset <= base_offset_ || offset_index_.empty()) return 0;
  int64_t relative = offset - base_offset_;
  auto it = std::upper_bound(
      offset_index_.begin(), offset_index_.end(), relative,
      [](int64_t r, const OffsetIndexEntry& e) { return r < int64_t{e.relative_offset}; });
  return it == offset_index_.begin() ? 0 : std::prev(it)->position;
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
  return FloorPosition(offset);
}

}  // namespace oxbow::log::internal
