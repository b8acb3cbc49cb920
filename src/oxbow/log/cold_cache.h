// ColdReadCache: the bounded in-memory cache in front of the cold log's object store. Cold
// segments are read through it in fixed blocks: a read fetches the blocks it lacks with one
// ranged read per run of missing blocks, whose blocks are views of that read's buffer (no copy),
// and the least recently used blocks are evicted once the buffers they keep hold more than the
// capacity. Reads ahead: a read that misses fetches up to
// read_ahead_bytes() from there, and every read starts a background fetch of the
// read_ahead_bytes() after it, so a sequential reader finds its next bytes fetched (or on the
// way) while it uses the last ones. docs/storage.md#cold-log describes where it sits.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "oxbow/common/file_system.h"

namespace oxbow::log {

class ColdReadCache {
 public:
  struct Figures {
    int64_t bytes = 0;       // held now: the buffers of the cached blocks
    int64_t hits = 0;        // blocks found by reads
    int64_t misses = 0;      // blocks reads did not find (fetched, or waited for)
    int64_t prefetched = 0;  // blocks fetched in the background
  };

  // Holds at most `capacity_bytes` (plus the blocks of fetches in flight) in blocks of
  // `block_bytes` (> 0).
  ColdReadCache(int64_t capacity_bytes, int64_t block_bytes);
  // Waits for the background fetch in progress; queued ones are dropped.
  ~ColdReadCache();

  // The object `path` of `size` bytes on `fs`, read through the cache. The object is opened on
  // the first miss (a failed open is retried by the next read), so this never touches `fs`.
  std::unique_ptr<File> Open(std::shared_ptr<FileSystem> fs, const std::string& path, int64_t size);
  // Starts fetching the first read_ahead_bytes() of `file` (one Open returned) in the
  // background, unless they are cached or on the way: e.g. the next cold segment of a
  // sequential reader. Does nothing for other files.
  void Prefetch(File* file);
  // Forgets the blocks of `path` (its object was deleted).
  void Forget(const std::string& path);

  Figures figures() const;
  int64_t capacity_bytes() const { return capacity_bytes_; }
  int64_t block_bytes() const { return block_bytes_; }
  // min(8 MiB, capacity / 4), whole blocks, at least one.
  int64_t read_ahead_bytes() const { return read_ahead_blocks_ * block_bytes_; }

 private:
  friend class CachedColdFile;
  struct Object;  // an object read through the cache, shared with its background fetches
  struct Entry {
    std::string key;
    std::shared_ptr<Buffer> block;  // a view of `run`
    std::shared_ptr<Buffer> run;    // the buffer of the read that fetched the block
  };
  struct Fetch {  // blocks [first, last] of `object`, claimed in in_flight_
    std::shared_ptr<Object> object;
    int64_t first = 0;
    int64_t last = 0;
  };

  // Blocks [first, last] of `object`: cached, fetched by another read, or fetched now.
  Result<std::vector<std::shared_ptr<Buffer>>> Blocks(const std::shared_ptr<Object>& object,
                                                      int64_t first, int64_t last);
  // Queues a background fetch of the first missing run within read_ahead_bytes() from `block`.
  void ReadAhead(const std::shared_ptr<Object>& object, int64_t block);
  // Claims (under mu_) the run of blocks from `block` that are neither cached nor in flight,
  // at most `max_blocks` and not past the object's end; the last claimed block, or block - 1.
  int64_t ClaimLocked(const Object& object, int64_t block, int64_t max_blocks);
  // Reads a claimed run, caches its blocks and releases the claim.
  Result<std::vector<std::shared_ptr<Buffer>>> Run(const Fetch& fetch);
  void WorkerLoop();
  std::shared_ptr<Buffer> LookupLocked(const std::string& key);
  // Caches `block`, a view of `run`; `run` counts in figures_.bytes while any of its blocks is
  // cached.
  void InsertLocked(const std::string& key, std::shared_ptr<Buffer> block,
                    std::shared_ptr<Buffer> run);
  // Uncaches `entry`; its run stops counting with its last block.
  void EraseLocked(std::list<Entry>::iterator entry);

  const int64_t capacity_bytes_;
  const int64_t block_bytes_;
  const int64_t read_ahead_blocks_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  std::unordered_map<const Buffer*, int64_t> run_blocks_;  // cached blocks of each run
  std::unordered_set<std::string> in_flight_;              // keys of blocks being fetched
  std::condition_variable fetched_;                        // a fetch ended
  std::deque<Fetch> queue_;                                // background fetches not started yet
  std::condition_variable queued_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;  // started by the first background fetch
  Figures figures_;
};

}  // namespace oxbow::log
