#include <chrono>
#include <cstdio>
#include <random>

#include "oxbow/iceberg/io_internal.h"

namespace oxbow::iceberg {

Result<std::string> ReadWholeFile(FileSystem* fs, const std::string& path) {
  ASSIGN_OR_RAISE(auto buffer, oxbow::ReadWholeFile(*fs, path));
  return std::string(buffer->view());
}

Status WriteWholeFile(FileSystem* fs, const std::string& path, std::string_view bytes, bool sync) {
  ASSIGN_OR_RAISE(auto file, fs->OpenFile(path, FileMode::kCreate));
  RETURN_NOT_OK(file->Truncate(0));
  ByteSpan span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  RETURN_NOT_OK(file->WriteAt(0, span));
  if (sync) RETURN_NOT_OK(file->Sync());
  return Status::OK();
}

namespace {
std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }());
  return rng;
}
}  // namespace

std::string RandomUuid() {
  uint64_t hi = Rng()(), lo = Rng()();
  hi = (hi & ~uint64_t{0xf000}) | 0x4000;                      // version 4
  lo = (lo & ~(uint64_t{0xc} << 60)) | (uint64_t{0x8} << 60);  // variant 10
  char out[37];
  std::snprintf(out, sizeof(out), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xffff), static_cast<unsigned>(hi & 0xffff),
                static_cast<unsigned>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return out;
}

int64_t RandomId() {
  for (;;) {
    int64_t id = static_cast<int64_t>(Rng()() >> 1);
    if (id != 0) return id;
  }
}

int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace oxbow::iceberg
