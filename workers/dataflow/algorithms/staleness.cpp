#include "workers/dataflow/algorithms/staleness.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

namespace sluice::dataflow {

Result<StaleAction> ParseStaleAction(std::string_view name) {
  if (name == "drop") return StaleAction::kDrop;
  if (name == "down-weight") return StaleAction::kDownWeight;
  return Status::InvalidArgument(
      "unknown staleAction '" + std::string(name) + "' (want drop or down-weight)", "staleAction");
}

Result<QueueOrder> ParseQueueOrder(std::string_view name) {
  if (name == "fifo") return QueueOrder::kFifo;
  if (name == "edf") return QueueOrder::kEdf;
  return Status::InvalidArgument("unknown order '" + std::string(name) + "' (want fifo or edf)",
                                 "order");
}

Status ValidateStalenessOptions(const StalenessOptions& options) {
  if (options.max_staleness < 0 || options.max_staleness > 100000) {
    return Status::InvalidArgument("must be in [0, 100000]", "maxStaleness");
  }
  if (!(options.down_weight_decay > 0.0 && options.down_weight_decay <= 1.0)) {
    return Status::InvalidArgument("must be in (0, 1]", "downWeightDecay");
  }
  return Status::Ok();
}

namespace {

bool IsStale(int64_t min_version, int64_t current_version, int64_t max_staleness) {
  return min_version != kNoVersion && current_version - min_version > max_staleness;
}

}  // namespace

StalenessVerdict JudgeStaleness(const Sample& sample, int64_t current_version,
                                const StalenessOptions& options) {
  StalenessVerdict verdict;
  const int64_t min_version = sample.MinVersion();
  if (min_version == kNoVersion) return verdict;
  verdict.age = current_version - min_version;
  verdict.stale = verdict.age > options.max_staleness;
  if (!verdict.stale) return verdict;
  if (options.stale_action == StaleAction::kDrop) {
    verdict.keep = false;
    verdict.weight = 0.0;
    verdict.dropped_tokens = sample.GeneratedTokens();
    return verdict;
  }
  verdict.weight =
      std::pow(options.down_weight_decay, static_cast<double>(verdict.age - options.max_staleness));
  // Keep the weight strictly positive even for absurd ages (underflow).
  verdict.weight = std::max(verdict.weight, std::numeric_limits<double>::min());
  return verdict;
}

std::vector<size_t> ServingOrder(std::span<const QueuedGroup> buffer, QueueOrder order,
                                 int64_t max_staleness) {
  std::vector<size_t> indices(buffer.size());
  std::iota(indices.begin(), indices.end(), size_t{0});
  auto deadline = [&](size_t i) {
    const int64_t v = buffer[i].min_version;
    return v == kNoVersion ? std::numeric_limits<int64_t>::min() : v + max_staleness;
  };
  std::sort(indices.begin(), indices.end(), [&](size_t a, size_t b) {
    if (order == QueueOrder::kEdf && deadline(a) != deadline(b)) return deadline(a) < deadline(b);
    if (buffer[a].arrival != buffer[b].arrival) return buffer[a].arrival < buffer[b].arrival;
    return a < b;
  });
  return indices;
}

PickResult PickGroups(std::span<const QueuedGroup> buffer, size_t n, int64_t current_version,
                      const StalenessOptions& options) {
  PickResult result;
  if (n == 0) return result;
  for (size_t i : ServingOrder(buffer, options.order, options.max_staleness)) {
    const bool stale = IsStale(buffer[i].min_version, current_version, options.max_staleness);
    if (stale && options.stale_action == StaleAction::kDrop) {
      result.stale.push_back(i);
      result.stale_tokens += buffer[i].generated_tokens;
      continue;
    }
    result.picked.push_back(i);
    if (result.picked.size() == n) break;
  }
  return result;
}

std::vector<size_t> EvictForCapacity(std::span<const QueuedGroup> buffer, size_t capacity,
                                     QueueOrder order, int64_t max_staleness) {
  if (buffer.size() <= capacity) return {};
  std::vector<size_t> evict = ServingOrder(buffer, order, max_staleness);
  evict.resize(buffer.size() - capacity);
  return evict;
}

int64_t BufferLag(std::span<const QueuedGroup> buffer, int64_t current_version) {
  int64_t lag = 0;
  for (const QueuedGroup& g : buffer) {
    if (g.min_version >= 0) lag = std::max(lag, current_version - g.min_version);
  }
  return lag;
}

}  // namespace sluice::dataflow
