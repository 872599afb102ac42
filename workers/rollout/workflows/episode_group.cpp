#include "workers/rollout/workflows/episode_group.h"

#include <optional>
#include <utility>
#include <vector>

#include "workers/rollout/workflows/parallel_for.h"

namespace sluice::rollout {

void AddStats(const EpisodeStats& from, EpisodeStats* into) {
  into->generated_tokens += from.generated_tokens;
  into->environment_steps += from.environment_steps;
  into->environment_errors += from.environment_errors;
  into->reward_errors += from.reward_errors;
  into->generation_seconds += from.generation_seconds;
  into->environment_seconds += from.environment_seconds;
  into->reward_seconds += from.reward_seconds;
}

Result<EpisodeResult> RunEpisodes(size_t count,
                                  const std::function<Result<SampleOutcome>(size_t)>& episode) {
  std::vector<std::optional<Result<SampleOutcome>>> outcomes(count);
  ParallelFor(count, kMaxConcurrentEpisodes, [&](size_t i) { outcomes[i].emplace(episode(i)); });
  EpisodeResult result;
  result.samples.reserve(count);
  for (std::optional<Result<SampleOutcome>>& outcome : outcomes) {
    if (!outcome->ok()) return outcome->status();
    AddStats(outcome->value().stats, &result.stats);
    result.samples.push_back(std::move(outcome->value().sample));
  }
  return result;
}

}  // namespace sluice::rollout
