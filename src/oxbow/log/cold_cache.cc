#include "oxbow/log/cold_cache.h"

#include <algorithm>
#include <cstring>

namespace oxbow::log {

namespace {

constexpr int64_t kMaxReadAhead = int64_t{8} << 20;
// Background fetches waiting beyond this many are not queued: the reader is ahead of the store.
constexpr size_t kMaxQueuedFetches = 8;
// Background fetches run this many at a time: object stores serve parallel GETs faster.
constexpr int kWorkers = 2;

std::string BlockKey(const std::string& path, int64_t block) {
  return path + '#' + std::to_string(block);
}

}  // namespace

struct ColdReadCache::Object {
  Object(std::shared_ptr<FileSystem> fs, std::string path, int64_t size)
      : fs(std::move(fs)), path(std::move(path)), size(size) {}

  Result<std::shared_ptr<Buffer>> Read(int64_t position, int64_t length) {
    std::shared_ptr<File> opened;
    {
      std::lock_guard lock(mu);
      if (!file) {
        ASSIGN_OR_RAISE(auto f, fs->OpenFile(path, FileMode::kRead));
        file = std::move(f);
      }
      opened = file;
    }
    auto bytes = opened->ReadAt(position, length);
    if (!bytes.ok()) {
      std::lock_guard lock(mu);
      if (file == opened) file.reset();  // reopen at the next read
    }
    return bytes;
  }

  const std::shared_ptr<FileSystem> fs;
  const std::string path;
  const int64_t size;
  std::mutex mu;
  std::shared_ptr<File> file;
};

// A cold object read block by block through the cache.
class CachedColdFile : public File {
 public:
  CachedColdFile(ColdReadCache* cache, std::shared_ptr<ColdReadCache::Object> object)
      : File(object->path), cache_(cache), object_(std::move(object)) {}

  Status WriteAt(int64_t, std::span<const ByteSpan>) override {
    return Status::NotImplemented(path() + ": cold segments are read-only");
  }
  Status Sync() override { return Status::OK(); }
  Status Truncate(int64_t) override {
    return Status::NotImplemented(path() + ": cold segments are read-only");
  }
  Result<int64_t> Size() override { return object_->size; }

  Result<std::shared_ptr<Buffer>> ReadAt(int64_t position, int64_t length) override {
    if (position < 0 || length < 0) return Status::Invalid(path() + ": negative read range");
    length = std::max<int64_t>(0, std::min(length, object_->size - position));
    if (length == 0) return Buffer::Empty();
    const int64_t block_bytes = cache_->block_bytes();
    const int64_t first = position / block_bytes;
    const int64_t last = (position + length - 1) / block_bytes;
    ASSIGN_OR_RAISE(auto blocks, cache_->Blocks(object_, first, last));
    cache_->ReadAhead(object_, last + 1);
    const int64_t in_first = position - first * block_bytes;
    if (first == last) return Buffer::Slice(blocks[0], in_first, length);
    // Blocks of one fetch lie side by side in its buffer: a view of them, no copy.
    bool adjacent = true;
    for (size_t i = 1; i < blocks.size() && adjacent; ++i) {
      adjacent = blocks[i - 1]->data() + blocks[i - 1]->size() == blocks[i]->data();
    }
    if (adjacent) {
      const uint8_t* data = blocks[0]->data() + in_first;
      return std::make_shared<Buffer>(
          data, length, std::make_shared<std::vector<std::shared_ptr<Buffer>>>(std::move(blocks)));
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

  const std::shared_ptr<ColdReadCache::Object>& object() const { return object_; }

 private:
  ColdReadCache* cache_;
  const std::shared_ptr<ColdReadCache::Object> object_;
};

ColdReadCache::ColdReadCache(int64_t capacity_bytes, int64_t block_bytes)
    : capacity_bytes_(std::max<int64_t>(0, capacity_bytes)),
      block_bytes_(std::max<int64_t>(1, block_bytes)),
      read_ahead_blocks_(
          std::max<int64_t>(1, std::min(kMaxReadAhead, capacity_bytes_ / 4) / block_bytes_)) {}

ColdReadCache::~ColdReadCache() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  queued_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

std::unique_ptr<File> ColdReadCache::Open(std::shared_ptr<FileSystem> fs, const std::string& path,
                                          int64_t size) {
  return std::make_unique<CachedColdFile>(this,
                                          std::make_shared<Object>(std::move(fs), path, size));
}

void ColdReadCache::Prefetch(File* file) {
  auto* cold = dynamic_cast<CachedColdFile*>(file);
  if (cold != nullptr) ReadAhead(cold->object(), 0);
}

int64_t ColdReadCache::ClaimLocked(const Object& object, int64_t block, int64_t max_blocks) {
  const int64_t end = std::min(block + max_blocks, (object.size + block_bytes_ - 1) / block_bytes_);
  int64_t b = block;
  for (; b < end; ++b) {
    std::string key = BlockKey(object.path, b);
    if (index_.count(key) || in_flight_.count(key)) break;
    in_flight_.insert(std::move(key));
  }
  return b - 1;
}

Result<std::vector<std::shared_ptr<Buffer>>> ColdReadCache::Blocks(
    const std::shared_ptr<Object>& object, int64_t first, int64_t last) {
  std::vector<std::shared_ptr<Buffer>> blocks(last - first + 1);
  std::vector<std::string> keys;
  for (int64_t b = first; b <= last; ++b) keys.push_back(BlockKey(object->path, b));
  bool counted = false;
  for (;;) {
    Fetch fetch{object, -1, -1};
    {
      std::unique_lock lock(mu_);
      auto lookup = [&] {
        for (size_t i = 0; i < blocks.size(); ++i) {
          if (!blocks[i]) blocks[i] = LookupLocked(keys[i]);
        }
      };
      lookup();
      if (!counted) {
        counted = true;
        for (const auto& block : blocks) ++(block ? figures_.hits : figures_.misses);
      }
      // Blocks another read (or the background) is fetching are waited for, not fetched twice.
      fetched_.wait(lock, [&] {
        for (size_t i = 0; i < blocks.size(); ++i) {
          if (!blocks[i] && in_flight_.count(keys[i])) return false;
        }
        return true;
      });
      lookup();
      const auto missing = std::find(blocks.begin(), blocks.end(), nullptr);
      if (missing == blocks.end()) return blocks;
      // One ranged read from the first missing block: the rest of the read's missing run, and
      // on to read_ahead_bytes() (a sequential reader comes back for them).
      fetch.first = first + (missing - blocks.begin());
      fetch.last =
          ClaimLocked(*object, fetch.first, std::max(read_ahead_blocks_, last - fetch.first + 1));
    }
    ASSIGN_OR_RAISE(auto run, Run(fetch));
    for (int64_t b = fetch.first; b <= std::min(fetch.last, last); ++b) {
      if (!blocks[b - first]) blocks[b - first] = run[b - fetch.first];
    }
  }
}

Result<std::vector<std::shared_ptr<Buffer>>> ColdReadCache::Run(const Fetch& fetch) {
  const Object& object = *fetch.object;
  const int64_t from = fetch.first * block_bytes_;
  const int64_t to = std::min(object.size, (fetch.last + 1) * block_bytes_);
  // The fetch's buffer and its blocks, views of it.
  using Blocks = std::pair<std::shared_ptr<Buffer>, std::vector<std::shared_ptr<Buffer>>>;
  auto read = [&]() -> Result<Blocks> {
    ASSIGN_OR_RAISE(auto bytes, fetch.object->Read(from, to - from));
    if (bytes->size() != to - from) {
      return Status::IOError("short read of cold segment " + object.path + ": " +
                             std::to_string(bytes->size()) + " of " + std::to_string(to - from) +
                             " bytes at " + std::to_string(from));
    }
    std::vector<std::shared_ptr<Buffer>> run;
    for (int64_t i = fetch.first; i <= fetch.last; ++i) {
      const int64_t at = i * block_bytes_ - from;
      run.push_back(fetch.last == fetch.first
                        ? bytes
                        : Buffer::Slice(bytes, at, std::min(block_bytes_, bytes->size() - at)));
    }
    return std::make_pair(std::move(bytes), std::move(run));
  };
  auto run = read();
  {
    std::lock_guard lock(mu_);
    for (int64_t i = fetch.first; i <= fetch.last; ++i) {
      std::string key = BlockKey(object.path, i);
      in_flight_.erase(key);
      if (run.ok()) InsertLocked(key, run->second[i - fetch.first], run->first);
    }
  }
  fetched_.notify_all();
  if (!run.ok()) return run.status();
  return std::move(run->second);
}

void ColdReadCache::ReadAhead(const std::shared_ptr<Object>& object, int64_t block) {
  const int64_t object_blocks = (object->size + block_bytes_ - 1) / block_bytes_;
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() >= kMaxQueuedFetches) return;
    // The first block within the window that is neither cached nor on the way.
    int64_t b = block;
    const int64_t window_end = std::min(object_blocks, block + read_ahead_blocks_);
    for (; b < window_end; ++b) {
      const std::string key = BlockKey(object->path, b);
      if (!index_.count(key) && !in_flight_.count(key)) break;
    }
    if (b >= window_end) return;
    Fetch fetch{object, b, ClaimLocked(*object, b, read_ahead_blocks_)};
    queue_.push_back(std::move(fetch));
    while (workers_.size() < kWorkers) workers_.emplace_back([this] { WorkerLoop(); });
  }
  queued_.notify_one();
}

void ColdReadCache::WorkerLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    queued_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) break;
    Fetch fetch = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    auto run = Run(fetch);  // a failure is the next read's to report: it fetches again
    lock.lock();
    if (run.ok()) figures_.prefetched += fetch.last - fetch.first + 1;
  }
  // Queued fetches never run: release their claims.
  for (const Fetch& fetch : queue_) {
    for (int64_t i = fetch.first; i <= fetch.last; ++i) {
      in_flight_.erase(BlockKey(fetch.object->path, i));
    }
  }
  queue_.clear();
  fetched_.notify_all();
}

std::shared_ptr<Buffer> ColdReadCache::LookupLocked(const std::string& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->block;
}

void ColdReadCache::InsertLocked(const std::string& key, std::shared_ptr<Buffer> block,
                                 std::shared_ptr<Buffer> run) {
  // A run's buffer stays allocated while any of its blocks is cached, so it is what counts.
  if (run->size() > capacity_bytes_ || index_.count(key)) return;
  if (run_blocks_[run.get()]++ == 0) figures_.bytes += run->size();
  lru_.push_front({key, std::move(block), std::move(run)});
  index_[key] = lru_.begin();
  while (figures_.bytes > capacity_bytes_) EraseLocked(std::prev(lru_.end()));
}

void ColdReadCache::EraseLocked(std::list<Entry>::iterator entry) {
  auto blocks = run_blocks_.find(entry->run.get());
  if (--blocks->second == 0) {
    figures_.bytes -= entry->run->size();
    run_blocks_.erase(blocks);
  }
  index_.erase(entry->key);
  lru_.erase(entry);
}

void ColdReadCache::Forget(const std::string& path) {
  std::lock_guard lock(mu_);
  const std::string prefix = path + '#';
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto next = std::next(it);
    if (it->key.compare(0, prefix.size(), prefix) == 0) EraseLocked(it);
    it = next;
  }
}

ColdReadCache::Figures ColdReadCache::figures() const {
  std::lock_guard lock(mu_);
  return figures_;
}

}  // namespace oxbow::log
