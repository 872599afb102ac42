#include "workers/rollout/workflows/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace sluice::rollout {

void ParallelFor(size_t count, size_t max_workers, const std::function<void(size_t)>& fn) {
  const size_t workers = std::min(count, std::max<size_t>(max_workers, 1));
  if (workers <= 1) {
    for (size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) fn(i);
  };
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();  // The calling thread is one of the workers.
  for (std::thread& t : threads) t.join();
}

}  // namespace sluice::rollout
