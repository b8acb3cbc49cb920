// ColdReadCache: the bounded in-memory cache in front of the cold log's object store. Cold
// segments are read through it in fixed blocks: a read fetches the blocks it lacks with one
// ranged read per run of missing blocks, and the least recently used blocks are evicted once the
// cache holds more than its capacity. docs/storage.md#cold-log describes where it sits.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "oxbow/common/file_system.h"

namespace oxbow::log {

class ColdReadCache {
 public:
  struct Figures {
    int64_t bytes = 0;   // cached now
    int64_t hits = 0;    // blocks found
    int64_t misses = 0;  // blocks fetched
  };

  // Holds at most `capacity_bytes` (plus the blocks of reads in flight) in blocks of
  // `block_bytes` (> 0).
  ColdReadCache(int64_t capacity_bytes, int64_t block_bytes);

  // The object `path` of `size` bytes on `fs`, read through the cache. The object is opened on
  // the first miss (a failed open is retried by the next read), so this never touches `fs`.
  std::unique_ptr<File> Open(std::shared_ptr<FileSystem> fs, const std::string& path, int64_t size);
  // Forgets the blocks of `path` (its object was deleted).
  void Forget(const std::string& path);

  Figures figures() const;
  int64_t capacity_bytes() const { return capacity_bytes_; }
  int64_t block_bytes() const { return block_bytes_; }

 private:
  friend class CachedColdFile;
  struct Entry {
    std::string key;
    std::shared_ptr<Buffer> block;
  };
  std::shared_ptr<Buffer> Lookup(const std::string& key);
  void Insert(const std::string& key, std::shared_ptr<Buffer> block);

  const int64_t capacity_bytes_;
  const int64_t block_bytes_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  Figures figures_;
};

}  // namespace oxbow::log
