// MultiTurnWorkflow (workflow.type multi-turn): an agent alternating with an environment.
//
// Each of the task.samples episodes (run concurrently, each with its own Environment):
//   1. Reset the environment with the task; a non-empty initial observation is appended to the
//      user message ("prompt\n\nobservation").
//   2. Up to maxTurns model turns (one completion each, at most the task's maxNewTokens, and no
//      more than the sequence budget leaves). After each turn:
//        a tool call (ToolCallFormat) -> the environment steps; if it says done, the episode ends
//          with the environment's reward (or, when it gives none, the configured reward of the
//          turn's final answer) and finish "stop"; otherwise the observation is appended as a
//          "tool" message plus the next assistant opening (mask 0);
//        no tool call -> the final answer: the configured reward of ExtractFinalAnswer(turn),
//          finish reason of that completion ("stop", or "length" when it was cut).
//   3. Out of turns or out of budget (prompt + maxNewTokens * maxTurns tokens) -> finish "length",
//      the configured reward of the last turn's final answer.
// An environment that fails (Reset or Step error) ends its sample with reward 0 and finish
// "abort", counted in stats.environment_errors; a turn the backend aborted does the same without
// the count. The other samples carry on.
//
// Every sample's tool_calls counts its turns that held a complete tool call (0 when none did, also
// when the environment failed before the first turn), including one whose step then failed or
// ended the episode; the dataflow's evaluation reports the share of episodes with at least one.
//
// Times: each sample's generation_seconds sums its turns' Completion::seconds, environment_seconds
// its Reset and Step calls, reward_seconds its scoring; the stats sum those over the samples.
//
// Thread safety: immutable; Run may be called from many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "workers/rollout/environments/environment.h"
#include "workers/rollout/environments/tool_call_format.h"
#include "workers/rollout/rewards/reward.h"
#include "workers/rollout/workflows/episode_group.h"
#include "workers/rollout/workflows/workflow.h"

namespace sluice::rollout {

class MultiTurnWorkflow final : public Workflow {
 public:
  struct Options {
    std::string policy;                        // The one role's policy.
    std::optional<std::string> system_prompt;  // spec.workflow.systemPrompt.
    int32_t max_turns = 8;                     // >= 1.
    EnvironmentSpec environment;
    ToolCallFormat tool_call;
    std::shared_ptr<const Reward> reward;  // Non-null.
  };

  explicit MultiTurnWorkflow(Options options);

  // The pieces of an episode's transcript, public so that a trainer's warm start (trainer/
  // calculator_warm_start.h) renders exactly what the agent sees here.
  //
  // The first user message: the task's prompt, with a non-empty initial observation of the
  // environment appended after a blank line.
  static std::string FirstUserMessage(const std::string& prompt,
                                      const std::string& initial_observation);
  // The tokens that follow the model turn `turn_tokens` (as generated: ending with the end-of-turn
  // marker, or cut without it) to show a tool's `observation`: a "tool" message and the next
  // assistant opening (EncodeFollowUp's errors).
  static Result<std::vector<int32_t>> EncodeObservation(const PolicyText& text,
                                                        std::span<const int32_t> turn_tokens,
                                                        const std::string& observation);

  std::string_view name() const override { return "multi-turn"; }
  Result<EpisodeResult> Run(const LeasedTask& task, const EpisodeContext& context) const override;

 private:
  Result<SampleOutcome> RunEpisode(const LeasedTask& task, const EpisodeContext& context,
                                   const PolicyText& text,
                                   const engine::SamplingParams& sampling) const;

  Options options_;
};

}  // namespace sluice::rollout
