#include "workers/trainer/batch_layout.h"

#include <algorithm>
#include <numeric>

namespace sluice::trainer {

std::vector<std::vector<size_t>> SplitBalanced(std::span<const size_t> indices,
                                               std::span<const int64_t> lengths, int parts) {
  std::vector<std::vector<size_t>> out(static_cast<size_t>(std::max(parts, 1)));
  std::vector<size_t> order(indices.begin(), indices.end());
  // Longest first; equal lengths in index order, so the result is deterministic.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lengths[a] > lengths[b]; });
  std::vector<int64_t> load(out.size(), 0);
  for (size_t i : order) {
    const size_t part = static_cast<size_t>(std::min_element(load.begin(), load.end()) -
                                            load.begin());  // First minimum.
    out[part].push_back(i);
    load[part] += lengths[i];
  }
  for (auto& p : out) std::sort(p.begin(), p.end());
  return out;
}

std::vector<std::vector<size_t>> PackMicroBatches(std::span<const size_t> indices,
                                                  std::span<const int64_t> lengths,
                                                  int64_t budget) {
  std::vector<std::vector<size_t>> out;
  int64_t tokens = 0;
  for (size_t i : indices) {
    if (out.empty() || (tokens + lengths[i] > budget && !out.back().empty())) {
      out.emplace_back();
      tokens = 0;
    }
    out.back().push_back(i);
    tokens += lengths[i];
  }
  return out;
}

bool ProximalLogProbsFromUpdatePass(size_t minibatch_parts, bool needed_before_update) {
  return minibatch_parts == 1 && !needed_before_update;
}

}  // namespace sluice::trainer
