// Fuzzes recovery and every read path over damaged segments: the input becomes the active
// segment file of a bucket log (optionally with a recovery checkpoint cut from its tail, and
// optionally split into a sealed segment and the active one), which is then opened, scrubbed,
// read (whole and piecewise verified), looked up and appended.
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "oxbow/log/bucket_log.h"

namespace {

const std::string& FuzzDir() {
  static const std::string dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "oxbow_log_fuzz_XXXXXX").string();
    return std::string(mkdtemp(tmpl.data()));
  }();
  return dir;
}

void WriteFile(const std::string& path, const uint8_t* data, size_t size) {
  auto file =
      oxbow::PosixFileSystem::Default()->OpenFile(path, oxbow::FileMode::kCreate).ValueOrDie();
  (void)file->Truncate(0);
  (void)file->WriteAt(0, oxbow::ByteSpan(data, size));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oxbow;
  const std::string dir = FuzzDir() + "/bucket";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // The last 88 bytes become a checkpoint when the first byte is odd.
  constexpr size_t kCheckpointSize = 88;
  if (size > kCheckpointSize && (data[0] & 1)) {
    WriteFile(dir + "/recovery-checkpoint", data + size - kCheckpointSize, kCheckpointSize);
    size -= kCheckpointSize;
  }
  // When the last byte is odd, it is dropped, and the bytes up to a split point it chooses
  // become a sealed segment with base 0, the rest the active segment with base 1000.
  if (size > 1 && (data[size - 1] & 1)) {
    const size_t split = (size - 1) * data[size - 1] / 256;
    --size;
    WriteFile(dir + "/00000000000000000000.log", data, split);
    WriteFile(dir + "/00000000000000001000.log", data + split, size - split);
  } else {
    WriteFile(dir + "/00000000000000000000.log", data, size);
  }

  log::LogOptions options;
  options.index_interval_bytes = 64;
  options.segment_bytes = 1 << 16;
  auto opened = log::BucketLog::Open(PosixFileSystem::Default(), dir, options);
  if (!opened.ok()) return 0;
  auto& bucket_log = *opened;
  for (int64_t base : bucket_log->SealedSegments()) (void)bucket_log->ScrubSealedSegment(base);
  for (bool verify_body : {true, false}) {
    int64_t offset = bucket_log->earliest_offset();
    while (offset < bucket_log->durable_offset()) {
      auto batches = bucket_log->Read(offset, 4096, {.verify_body = verify_body});
      if (!batches.ok() || batches->empty()) break;
      for (const auto& batch : *batches) {
        const int64_t half = batch.body->size() / 2;
        (void)batch.VerifyBodyPiece(*Buffer::Slice(batch.body, 0, half));
        (void)batch.VerifyBodyPiece(*Buffer::Slice(batch.body, half, batch.body->size() - half));
      }
      offset = batches->back().next_offset();
    }
  }
  (void)bucket_log->damaged_ranges();
  (void)bucket_log->LookupOffsetByTime(0);
  uint8_t payload[16] = {};
  ByteSpan body[] = {ByteSpan(payload, sizeof(payload))};
  (void)bucket_log->Append({1, 0, 0, 0}, {}, body);
  (void)bucket_log->Close();
  return 0;
}
