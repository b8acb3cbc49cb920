// A read-only File over bytes in memory, for tests: it records its largest read and can be
// made to fail reads.
#pragma once

#include <algorithm>
#include <memory>
#include <span>
#include <string>

#include "oxbow/common/file_system.h"

namespace oxbow::testing {

class StringFile : public File {
 public:
  StringFile(std::string path, std::string bytes)
      : File(std::move(path)), bytes_(std::move(bytes)) {}

  using File::WriteAt;
  Status WriteAt(int64_t, std::span<const ByteSpan>) override {
    return Status::NotImplemented("StringFile is read-only");
  }
  Result<std::shared_ptr<Buffer>> ReadAt(int64_t position, int64_t length) override {
    if (!read_error.ok()) return read_error;
    const auto size = static_cast<int64_t>(bytes_.size());
    position = std::clamp<int64_t>(position, 0, size);
    length = std::clamp<int64_t>(length, 0, size - position);
    largest_read = std::max(largest_read, length);
    return Buffer::CopyFrom(std::string_view(bytes_).substr(static_cast<size_t>(position),
                                                            static_cast<size_t>(length)));
  }
  Status Sync() override { return Status::OK(); }
  Status Truncate(int64_t) override { return Status::NotImplemented("StringFile is read-only"); }
  Result<int64_t> Size() override { return static_cast<int64_t>(bytes_.size()); }

  int64_t largest_read = 0;
  Status read_error;  // returned by every ReadAt when set

 private:
  std::string bytes_;
};

}  // namespace oxbow::testing
