#include "workers/dataflow/algorithms/eval_trigger.h"

namespace sluice::dataflow {
namespace {

bool Crosses(int64_t every, int64_t from, int64_t to) {
  return every > 0 && to / every > from / every;
}

}  // namespace

std::optional<int64_t> EvalRoundToQueue(const EvalTriggerFacts& f) {
  const bool configured = f.every_versions > 0 || f.at_start;
  if (f.barrier && f.policies > 1) {
    const bool periodic = Crosses(f.every_versions, f.lowest_before, f.lowest_after);
    const bool requested = f.evaluate && configured && f.lowest_after == f.announced;
    if (periodic || requested) return f.lowest_after;
    return std::nullopt;
  }
  if (!f.primary) return std::nullopt;
  const bool periodic = Crosses(f.every_versions, f.previous, f.announced);
  const bool requested = f.evaluate && configured;
  if (periodic || requested) return f.announced;
  return std::nullopt;
}

}  // namespace sluice::dataflow
