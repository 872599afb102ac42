// ParallelFor: runs fn(0) .. fn(count - 1) on up to `max_workers` threads and waits for all.
//
// Workflows run a task's samples as concurrent episodes so the backend can batch their
// generation requests; the bound keeps a large group (up to 4096 samples) from starting a thread
// per sample. Indices are handed out in increasing order; fn must not throw.
//
// Thread safety: fn is called from several threads at once; it must synchronise what it shares.
#pragma once

#include <cstddef>
#include <functional>

namespace sluice::rollout {

// Episodes of one task run at once, at most.
inline constexpr size_t kMaxConcurrentEpisodes = 64;

// With count <= 1 or max_workers <= 1, runs on the calling thread.
void ParallelFor(size_t count, size_t max_workers, const std::function<void(size_t)>& fn);

}  // namespace sluice::rollout
