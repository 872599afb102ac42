// RunEpisodes: a task's samples run as concurrent episodes (at most kMaxConcurrentEpisodes at a
// time, so the backend can batch their turns), gathered into one EpisodeResult: samples in sample
// order, stats summed.
//
// Thread safety: `episode` is called from several threads at once, each with its own index.
#pragma once

#include <cstddef>
#include <functional>

#include "common/status.h"
#include "workers/dataflow/client/sample.h"
#include "workers/rollout/workflows/workflow.h"

namespace sluice::rollout {

// One finished episode.
struct SampleOutcome {
  dataflow::Sample sample;
  EpisodeStats stats;
};

// Adds every field of `from` to `into`.
void AddStats(const EpisodeStats& from, EpisodeStats* into);

// Runs episode(0) .. episode(count - 1). When any fails, all still finish (they share the
// cancellation of their context, not this function's) and the error of the lowest index is
// returned.
Result<EpisodeResult> RunEpisodes(size_t count,
                                  const std::function<Result<SampleOutcome>(size_t)>& episode);

}  // namespace sluice::rollout
