#include "oxbow/log/cold_cache.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace oxbow::log {

namespace {

std::string BlockKey(const std::string& path, int64_t block) {
  return path + '#' + std::to_string(block);
}

}  // namespace

// A cold object read block by block through the cache.
class CachedColdFile : public File {
 public:
  CachedColdFile(ColdReadCache* cache, std::shared_ptr<FileSystem> fs, std::string path,
                 int64_t size)
      : File(std::move(path)), cache_(cache), fs_(std::move(fs)), size_(size) {}

  Status WriteAt(int64_t, std::span<const ByteSpan>) override {
    return Status::NotImplemented(path() + ": cold segments are read-only");
  }
  Status Sync() override { return Status::OK(); }
  Status Truncate(int64_t) override {
    return Status::NotImplemented(path() + ": cold segments are read-only");
  }
  Result<int64_t> Size() override { return size_; }

  Result<std::shared_ptr<Buffer>> ReadAt(int64_t position, int64_t length) override {
    if (position < 0 || length < 0) return Status::Invalid(path() + ": negative read range");
    length = std::max<int64_t>(0, std::min(length, size_ - position));
    if (length == 0) return Buffer::Empty();
    const int64_t block_bytes = cache_->block_bytes();
    const int64_t first = position / block_bytes;
    const int64_t last = (position + length - 1) / block_bytes;
    std::vector<std::shared_ptr<Buffer>> blocks(last - first + 1);
    for (int64_t b = first; b <= last; ++b) blocks[b - first] = cache_->Lookup(BlockKey(path(), b));
    // One ranged read per run of missing blocks.
    for (int64_t b = first; b <= last;) {
      if (blocks[b - first]) {
        ++b;
        continue;
      }
      int64_t run_end = b;
      while (run_end + 1 <= last && !blocks[run_end + 1 - first]) ++run_end;
      const int64_t from = b * block_bytes;
      const int64_t to = std::min(size_, (run_end + 1) * block_bytes);
      ASSIGN_OR_RAISE(auto bytes, ReadObject(from, to - from));
      if (bytes->size() != to - from) {
        return Status::IOError("short read of cold segment " + path() + ": " +
                               std::to_string(bytes->size()) + " of " + std::to_string(to - from) +
                               " bytes at " + std::to_string(from));
      }
      for (int64_t i = b; i <= run_end; ++i) {
        const int64_t at = i * block_bytes - from;
        const int64_t n = std::min(block_bytes, bytes->size() - at);
        std::shared_ptr<Buffer> block = bytes;
        if (run_end > b) {
          // Its own copy, so the cache's byte count bounds the memory it holds.
          ASSIGN_OR_RAISE(auto copy, MutableBuffer::Allocate(n));
          std::memcpy(copy->mutable_data(), bytes->data() + at, n);
          block = std::move(copy);
        }
        cache_->Insert(BlockKey(path(), i), block);
        blocks[i - first] = std::move(block);
      }
      b = run_end + 1;
    }
    if (first == last) {
      return Buffer::Slice(blocks[0], position - first * block_bytes, length);
    }
    ASSIGN_OR_RAISE(auto out, MutableBuffer::Allocate(length));
    int64_t copied = 0;
    for (int64_t b = first; b <= last; ++b) {
      const Buffer& block = *blocks[b - first];
      const int64_t in_block = b == first ? position - first * block_bytes : 0;
      const int64_t n = std::min(block.size() - in_block, length - copied);
      std::memcpy(out->mutable_data() + copied, block.data() + in_block, n);
      copied += n;
    }
    return std::shared_ptr<Buffer>(std::move(out));
  }

 private:
  Result<std::shared_ptr<Buffer>> ReadObject(int64_t position, int64_t length) {
    std::shared_ptr<File> file;
    {
      std::lock_guard lock(mu_);
      if (!file_) {
        ASSIGN_OR_RAISE(auto opened, fs_->OpenFile(path(), FileMode::kRead));
        file_ = std::move(opened);
      }
      file = file_;
    }
    auto bytes = file->ReadAt(position, length);
    if (!bytes.ok()) {
      std::lock_guard lock(mu_);
      if (file_ == file) file_.reset();  // reopen at the next read
    }
    return bytes;
  }

  ColdReadCache* cache_;
  const std::shared_ptr<FileSystem> fs_;
  const int64_t size_;
  std::mutex mu_;
  std::shared_ptr<File> file_;
};

ColdReadCache::ColdReadCache(int64_t capacity_bytes, int64_t block_bytes)
    : capacity_bytes_(std::max<int64_t>(0, capacity_bytes)),
      block_bytes_(std::max<int64_t>(1, block_bytes)) {}

std::unique_ptr<File> ColdReadCache::Open(std::shared_ptr<FileSystem> fs, const std::string& path,
                                          int64_t size) {
  return std::make_unique<CachedColdFile>(this, std::move(fs), path, size);
}

std::shared_ptr<Buffer> ColdReadCache::Lookup(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    figures_.misses++;
    return nullptr;
  }
  figures_.hits++;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->block;
}

void ColdReadCache::Insert(const std::string& key, std::shared_ptr<Buffer> block) {
  std::lock_guard lock(mu_);
  if (block->size() > capacity_bytes_ || index_.count(key)) return;
  figures_.bytes += block->size();
  lru_.push_front({key, std::move(block)});
  index_[key] = lru_.begin();
  while (figures_.bytes > capacity_bytes_) {
    figures_.bytes -= lru_.back().block->size();
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

void ColdReadCache::Forget(const std::string& path) {
  std::lock_guard lock(mu_);
  const std::string prefix = path + '#';
  for (auto it = lru_.begin(); it != lru_.end();) {
    if (it->key.compare(0, prefix.size(), prefix) == 0) {
      figures_.bytes -= it->block->size();
      index_.erase(it->key);
      it = lru_.erase(it);
    } else {
      ++it;
    }
  }
}

ColdReadCache::Figures ColdReadCache::figures() const {
  std::lock_guard lock(mu_);
  return figures_;
}

}  // namespace oxbow::log
