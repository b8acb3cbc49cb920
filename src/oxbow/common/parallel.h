// ParallelFor: runs independent pieces of one request on several cores, on the calling thread
// and the threads of a process-wide pool (Arrow's CPU thread pool, in small).
//
// Thread safety: ParallelFor may be called from any thread, also from a piece it runs.
#pragma once

#include <cstddef>
#include <functional>

namespace oxbow {

// Calls fn(0) ... fn(n - 1), each exactly once, and returns when every call has returned. The
// calls run on the calling thread and on idle threads of the pool ("oxbow-worker", one per core
// but one, started on first use), in no particular order. The caller takes pieces too, so the
// call never waits for a busy pool: with every pool thread busy it runs all n itself. n <= 1
// never touches the pool.
void ParallelFor(size_t n, const std::function<void(size_t)>& fn);

}  // namespace oxbow
