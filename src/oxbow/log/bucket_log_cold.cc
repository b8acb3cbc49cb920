// The cold log of a BucketLog: moving sealed segments to the object store and reading them
// back. docs/storage.md#cold-log gives the layout and the order of the steps.
#include <algorithm>
#include <set>

#include "oxbow/common/crc32c.h"
#include "oxbow/log/bucket_log.h"
#include "oxbow/log/cold_manifest_internal.h"
#include "oxbow/log/segment_internal.h"

namespace oxbow::log {

using internal::ColdSegment;
using internal::Segment;
using internal::SegmentFileName;

namespace {

constexpr int64_t kCopyChunk = int64_t{8} << 20;
constexpr const char* kColdSuffixes[] = {".log", ".index", ".timeindex"};

Status IgnoreNotFound(Status st) { return st.IsNotFound() ? Status::OK() : st; }

}  // namespace

Status BucketLog::LoadColdManifest(std::vector<int64_t>* local_bases) {
  auto bytes = ReadWholeFile(*fs_, JoinPath(dir_, internal::kColdManifestName));
  if (bytes.status().IsNotFound()) return Status::OK();
  RETURN_NOT_OK(bytes.status());
  ASSIGN_OR_RAISE(cold_manifest_, internal::DecodeColdManifest(**bytes));
  if (cold_manifest_.empty()) return Status::OK();
  if (!options_.cold.fs || !options_.cold.cache) {
    return Status::Invalid("the log has " + std::to_string(cold_manifest_.size()) +
                           " segments in the cold store but no cold store is configured");
  }
  // A local copy of a cold segment is a crash between recording the upload and deleting the
  // local files: the cold copy was verified, the local one goes.
  const int64_t cold_end = cold_manifest_.back().next_offset;
  std::vector<int64_t> kept;
  for (int64_t base : *local_bases) {
    if (base >= cold_end) {
      kept.push_back(base);
      continue;
    }
    for (const char* suffix : kColdSuffixes) {
      RETURN_NOT_OK(IgnoreNotFound(fs_->Remove(JoinPath(dir_, SegmentFileName(base, suffix)))));
    }
  }
  RETURN_NOT_OK(fs_->SyncDir(dir_));
  *local_bases = std::move(kept);
  if (!local_bases->empty() && local_bases->front() != cold_end) {
    return Status::Corruption("the cold segments end at offset " + std::to_string(cold_end) +
                              " but the first local segment starts at " +
                              std::to_string(local_bases->front()));
  }
  for (const ColdSegment& entry : cold_manifest_) {
    segments_[entry.base_offset] = {OpenColdSegment(entry), entry.size, true, entry.last_append_ms};
    cold_bytes_ += entry.size;
    cold_count_++;
  }
  return Status::OK();
}

BucketLog::SegmentPtr BucketLog::OpenColdSegment(const ColdSegment& entry) const {
  const ColdLogOptions& cold = options_.cold;
  auto open = [&](const char* suffix, int64_t size) {
    return cold.cache->Open(cold.fs, JoinPath(cold.dir, SegmentFileName(entry.base_offset, suffix)),
                            size);
  };
  return std::make_shared<Segment>(cold.fs.get(), cold.dir, entry.base_offset,
                                   open(".log", entry.size), options_.index_interval_bytes,
                                   Segment::ColdIndexes{open(".index", entry.index_size),
                                                        open(".timeindex", entry.time_index_size)});
}

Status BucketLog::WriteColdManifest(const std::vector<ColdSegment>& segments) {
  const std::string encoded = internal::EncodeColdManifest(segments);
  // The copy beside the segments goes first: it never lists a segment whose upload was not
  // verified, and a lost data dir is rebuilt from it (docs/storage.md#cold-log).
  const ColdLogOptions& cold = options_.cold;
  RETURN_NOT_OK(cold.fs->CreateDirs(cold.dir));
  RETURN_NOT_OK(WriteWholeFile(*cold.fs, JoinPath(cold.dir, internal::kColdManifestName), encoded)
                    .WithContext("writing the copy of the cold-segment manifest"));
  RETURN_NOT_OK(WriteFileAtomically(*fs_, dir_, internal::kColdManifestName, encoded));
  cold_manifest_ = segments;
  return Status::OK();
}

Result<std::optional<ColdManifestCopy>> BucketLog::ReadColdManifestCopy(
    FileSystem& cold_fs, const std::string& cold_dir) {
  const std::string path = JoinPath(cold_dir, internal::kColdManifestName);
  auto bytes = ReadWholeFile(cold_fs, path);
  if (bytes.status().IsNotFound()) return std::optional<ColdManifestCopy>();
  RETURN_NOT_OK(bytes.status());
  auto segments = internal::DecodeColdManifest(**bytes);
  if (!segments.ok()) return segments.status().WithContext(path);
  if (segments->empty()) return std::optional<ColdManifestCopy>();
  return std::optional<ColdManifestCopy>(ColdManifestCopy{
      segments->front().base_offset, segments->back().next_offset, std::string((*bytes)->view())});
}

Status BucketLog::AdoptColdManifest(FileSystem& fs, const std::string& dir,
                                    const ColdManifestCopy& copy) {
  RETURN_NOT_OK(fs.CreateDirs(dir));
  return WriteFileAtomically(fs, dir, internal::kColdManifestName, copy.encoded);
}

Result<int> BucketLog::OffloadColdSegments() {
  if (!options_.cold.fs || options_.cold.local_retention_ms < 0) return 0;
  std::lock_guard offload_lock(offload_mutex_);
  if (closing()) return 0;
  int moved = 0;
  Status st = OffloadLocked(&moved);
  if (!st.ok()) sweep_needed_ = true;
  {
    std::lock_guard lock(mutex_);
    cold_error_ = st.ok() ? "" : st.message();
  }
  RETURN_NOT_OK(st);
  return moved;
}

Status BucketLog::OffloadLocked(int* moved) {
  if (sweep_needed_.exchange(false)) {
    Status swept = SweepColdOrphans();
    if (!swept.ok()) {
      sweep_needed_ = true;
      return swept.WithContext("deleting unreferenced cold objects of " + dir_);
    }
  }
  std::vector<ReadableSegment> local;
  {
    std::lock_guard lock(mutex_);
    for (const ReadableSegment& r : ReadableSegments(segments_.begin()->first)) {
      if (r.sealed && !r.cold) local.push_back(r);
    }
  }
  const int64_t now = Now();
  for (const ReadableSegment& r : local) {
    if (closing()) break;
    RETURN_NOT_OK(r.segment->EnsureIndexed(r.size, r.next_offset));
    if (now - r.segment->state().last_append_ms <= options_.cold.local_retention_ms) break;
    const int64_t base = r.segment->base_offset();
    ASSIGN_OR_RAISE(ColdSegment entry, UploadSegment(r));
    // Record the verified upload, then switch readers to the cold copy.
    {
      std::lock_guard retention_lock(retention_mutex_);
      bool present;
      {
        std::lock_guard lock(mutex_);
        auto it = segments_.find(base);
        present = it != segments_.end() && it->second.segment == r.segment;
      }
      if (!present) {  // retention deleted it meanwhile
        sweep_needed_ = true;
        break;
      }
      std::vector<ColdSegment> segments = cold_manifest_;
      segments.push_back(entry);
      RETURN_NOT_OK(WriteColdManifest(segments));
      std::lock_guard lock(mutex_);
      segments_[base] = {OpenColdSegment(entry), entry.size, true, entry.last_append_ms};
      sealed_bytes_ -= entry.size;
      cold_bytes_ += entry.size;
      cold_count_++;
    }
    // Only now the local files go (readers still holding the segment keep their open file).
    for (const std::string& path :
         {r.segment->log_path(), r.segment->index_path(), r.segment->time_index_path()}) {
      RETURN_NOT_OK(IgnoreNotFound(fs_->Remove(path)));
    }
    RETURN_NOT_OK(fs_->SyncDir(dir_));
    ++*moved;
  }
  return Status::OK();
}

namespace {

// Copies `size` bytes of `source` to the new object `path`, returning their CRC32C.
Result<uint32_t> CopyToCold(File& source, int64_t size, FileSystem& fs, const std::string& path) {
  RETURN_NOT_OK(IgnoreNotFound(fs.Remove(path)));  // a leftover of a failed attempt
  ASSIGN_OR_RAISE(auto out, fs.OpenFile(path, FileMode::kCreate));
  uint32_t crc = 0;
  for (int64_t position = 0; position < size; position += kCopyChunk) {
    const int64_t n = std::min(kCopyChunk, size - position);
    ASSIGN_OR_RAISE(auto bytes, source.ReadAt(position, n));
    if (bytes->size() != n) {
      return Status::IOError("short read of " + source.path() + " at " + std::to_string(position));
    }
    crc = crc32c::Extend(crc, bytes->data(), n);
    RETURN_NOT_OK(out->WriteAt(position, ByteSpan(bytes->data(), n)));
  }
  RETURN_NOT_OK(out->Sync());
  return crc;
}

// Reads the object back: it must hold `size` bytes whose CRC32C is `crc`.
Status VerifyColdObject(FileSystem& fs, const std::string& path, int64_t size, uint32_t crc) {
  ASSIGN_OR_RAISE(int64_t stored_size, fs.FileSize(path));
  if (stored_size != size) {
    return Status::IOError("upload of " + path + " did not verify: " + std::to_string(stored_size) +
                           " bytes stored, " + std::to_string(size) + " sent");
  }
  ASSIGN_OR_RAISE(auto file, fs.OpenFile(path, FileMode::kRead));
  uint32_t stored_crc = 0;
  for (int64_t position = 0; position < size; position += kCopyChunk) {
    ASSIGN_OR_RAISE(auto bytes, file->ReadAt(position, std::min(kCopyChunk, size - position)));
    stored_crc = crc32c::Extend(stored_crc, bytes->data(), bytes->size());
  }
  if (stored_crc != crc) {
    return Status::IOError("upload of " + path + " did not verify: its bytes differ from the " +
                           "local segment's (CRC32C mismatch)");
  }
  return Status::OK();
}

}  // namespace

Result<ColdSegment> BucketLog::UploadSegment(const ReadableSegment& r) {
  const ColdLogOptions& cold = options_.cold;
  const int64_t base = r.segment->base_offset();
  RETURN_NOT_OK(cold.fs->CreateDirs(cold.dir));
  ColdSegment entry;
  entry.base_offset = base;
  entry.next_offset = r.next_offset;
  entry.size = r.size;
  entry.last_append_ms = r.segment->state().last_append_ms;
  const std::string log_path = JoinPath(cold.dir, SegmentFileName(base, ".log"));
  ASSIGN_OR_RAISE(entry.crc32c, CopyToCold(*r.segment->file(), r.size, *cold.fs, log_path));
  RETURN_NOT_OK(VerifyColdObject(*cold.fs, log_path, r.size, entry.crc32c));
  // The indexes spare a cold reader a scan; one missing locally is uploaded empty, and a cold
  // reader then rebuilds it in memory.
  const std::pair<const char*, int64_t*> indexes[] = {{".index", &entry.index_size},
                                                      {".timeindex", &entry.time_index_size}};
  for (const auto& [suffix, stored_size] : indexes) {
    const std::string local_path = JoinPath(dir_, SegmentFileName(base, suffix));
    auto bytes = ReadWholeFile(*fs_, local_path);
    if (!bytes.ok() && !bytes.status().IsNotFound()) return bytes.status();
    std::shared_ptr<Buffer> content = bytes.ok() ? *bytes : Buffer::Empty();
    const std::string path = JoinPath(cold.dir, SegmentFileName(base, suffix));
    RETURN_NOT_OK(WriteWholeFile(*cold.fs, path, content->view()));
    RETURN_NOT_OK(VerifyColdObject(*cold.fs, path, content->size(),
                                   crc32c::Value(content->data(), content->size())));
    *stored_size = content->size();
  }
  return entry;
}

Status BucketLog::SweepColdOrphans() {
  const ColdLogOptions& cold = options_.cold;
  auto names = cold.fs->ListDir(cold.dir);
  if (names.status().IsNotFound()) return Status::OK();
  RETURN_NOT_OK(names.status());
  std::set<std::string> referenced;
  {
    std::lock_guard retention_lock(retention_mutex_);
    // A failed step may have left the copy of the manifest listing what goes now.
    RETURN_NOT_OK(WriteWholeFile(*cold.fs, JoinPath(cold.dir, internal::kColdManifestName),
                                 internal::EncodeColdManifest(cold_manifest_)));
    for (const ColdSegment& entry : cold_manifest_) {
      for (const char* suffix : kColdSuffixes) {
        referenced.insert(SegmentFileName(entry.base_offset, suffix));
      }
    }
  }
  referenced.insert(internal::kColdManifestName);  // its copy
  for (const std::string& name : *names) {
    if (referenced.count(name)) continue;
    const std::string path = JoinPath(cold.dir, name);
    RETURN_NOT_OK(IgnoreNotFound(cold.fs->Remove(path)));
    cold.cache->Forget(path);
  }
  return Status::OK();
}

Status BucketLog::RemoveColdObjects(int64_t base_offset) {
  const ColdLogOptions& cold = options_.cold;
  Status first;
  for (const char* suffix : kColdSuffixes) {
    const std::string path = JoinPath(cold.dir, SegmentFileName(base_offset, suffix));
    cold.cache->Forget(path);
    Status st = IgnoreNotFound(cold.fs->Remove(path));
    if (!st.ok() && first.ok()) first = st;
  }
  if (!first.ok()) sweep_needed_ = true;  // the next offload deletes what is left
  return first;
}

}  // namespace oxbow::log
