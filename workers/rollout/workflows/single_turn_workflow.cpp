#include "workers/rollout/workflows/single_turn_workflow.h"

#include <utility>
#include <vector>

#include "common/check.h"
#include "workers/rollout/workflows/parallel_for.h"
#include "workers/rollout/workflows/policy_turn.h"
#include "workers/rollout/workflows/timed_score.h"
#include "workers/rollout/workflows/transcript.h"

namespace sluice::rollout {

SingleTurnWorkflow::SingleTurnWorkflow(Options options) : options_(std::move(options)) {
  SLUICE_CHECK(options_.reward != nullptr);
}

Result<EpisodeResult> SingleTurnWorkflow::Run(const LeasedTask& task,
                                              const EpisodeContext& context) const {
  SLUICE_ASSIGN_OR_RETURN(const PolicyText* text,
                          HostedPolicy(context, options_.policy, "workflow.roles[0].policy"));
  SLUICE_ASSIGN_OR_RETURN(
      const std::vector<int32_t> prompt,
      EncodeConversation(*text, PromptMessages(options_.system_prompt, task.prompt), true));
  SLUICE_ASSIGN_OR_RETURN(const engine::SamplingParams sampling,
                          TurnSampling(task, *text, static_cast<int32_t>(task.samples)));
  SLUICE_ASSIGN_OR_RETURN(std::vector<Completion> completions,
                          GenerateTurn(context, options_.policy, prompt, sampling));

  // Rewards may be slow (code-exec runs programs), so the group is scored concurrently.
  std::vector<TimedScore> scores(completions.size());
  ParallelFor(completions.size(), kMaxConcurrentEpisodes, [&](size_t i) {
    scores[i] = ScoreTimed(*options_.reward, TurnText(*text, completions[i]), task, *context.clock);
  });

  EpisodeResult result;
  result.samples.reserve(completions.size());
  for (size_t i = 0; i < completions.size(); ++i) {
    Completion& c = completions[i];
    dataflow::Sample s;
    s.task_id = task.task_id;
    s.prompt_id = task.prompt_id;
    s.policy = options_.policy;
    Transcript transcript;
    transcript.AppendContext(prompt);
    SLUICE_RETURN_IF_ERROR(transcript.AppendGenerated(c, 0));
    transcript.MoveInto(&s, false);
    s.reward = scores[i].outcome.score;
    s.finish_reason = std::move(c.finish_reason);
    s.generation_seconds = c.seconds;
    s.reward_seconds = scores[i].seconds;

    result.stats.generated_tokens += static_cast<int64_t>(c.tokens.size());
    result.stats.generation_seconds += s.generation_seconds;
    result.stats.reward_seconds += s.reward_seconds;
    if (scores[i].outcome.error) ++result.stats.reward_errors;
    result.samples.push_back(std::move(s));
  }
  return result;
}

}  // namespace sluice::rollout
