// SingleTurnWorkflow (workflow.type single-turn): render the task's prompt, sample task.samples
// completions of it in one request (they share its prefill), and score each with the configured
// reward on the whole completion text.
//
// Each sample: the rendered prompt (mask 0) then the completion (mask 1, owner the one role's
// policy), one turn start, reward and finish reason of its completion.
//
// Thread safety: immutable; Run may be called from many threads at once.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "workers/rollout/rewards/reward.h"
#include "workers/rollout/workflows/workflow.h"

namespace sluice::rollout {

class SingleTurnWorkflow final : public Workflow {
 public:
  struct Options {
    std::string policy;                        // The one role's policy.
    std::optional<std::string> system_prompt;  // spec.workflow.systemPrompt.
    std::shared_ptr<const Reward> reward;      // Non-null.
  };

  explicit SingleTurnWorkflow(Options options);

  std::string_view name() const override { return "single-turn"; }
  Result<EpisodeResult> Run(const LeasedTask& task, const EpisodeContext& context) const override;

 private:
  Options options_;
};

}  // namespace sluice::rollout
