// Workflow: what one episode is. A workflow runs a leased task against a GenerationBackend and
// returns the finished group of trajectories (dataflow::Sample, before splitting) ready to submit.
//
// The workflows (spec.workflow.type; MakeWorkflow picks one):
//   single-turn       single_turn_workflow.h: render the prompt, sample task.samples
//                     completions, reward each.
//   multi-turn        multi_turn_workflow.h: per sample, model turns and environment steps
//                     up to maxTurns.
//   solve-and-verify  solve_and_verify_workflow.h: solver answers, verifier judges, both
//                     policies' tokens in one trajectory tagged with their owner.
// Adding a workflow means one new class and one line in MakeWorkflow; nothing else changes.
//
// Token layout of every sample: one flat sequence, the rendered prompt first. Per token:
// loss_mask 1 and the producing version for tokens a policy generated, mask 0 and version -1
// (dataflow::kNoVersion) for prompt, environment and instruction tokens; behaviour_logprobs 0
// where no policy generated the token. turn_starts holds the offset of every model turn.
//
// Thread safety: a Workflow is immutable after MakeWorkflow; Run may be called from many threads
// at once (each with its own task).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/process/cancellation.h"
#include "common/status.h"
#include "workers/dataflow/client/sample.h"
#include "workers/model/chat_template.h"
#include "workers/model/tokenizer.h"
#include "workers/rollout/generation_backend.h"
#include "workers/rollout/leased_task.h"

namespace sluice::rollout {

// How a hosted policy's text becomes tokens.
struct PolicyText {
  std::shared_ptr<const model::Tokenizer> tokenizer;         // Non-null.
  std::shared_ptr<const model::ChatTemplate> chat_template;  // Non-null.
};

// What a workflow runs with. Borrowed for the duration of Run.
struct EpisodeContext {
  GenerationBackend* backend = nullptr;        // Non-null.
  std::map<std::string, PolicyText> policies;  // Every hosted policy.
  std::string environment_token;               // Bearer token for HTTP environments (may be empty).
  CancellationToken cancel;  // Cancelled on shutdown: Run returns Cancelled promptly.
  // Times the environment and reward calls (EpisodeStats, Sample::*_seconds). Non-null.
  Clock* clock = &SystemClock::Instance();
};

// What happened in an episode besides the samples (for metrics).
struct EpisodeStats {
  int64_t generated_tokens = 0;
  int64_t environment_steps = 0;
  int64_t environment_errors = 0;  // Environment calls that failed (the sample then ends).
  int64_t reward_errors = 0;       // Rewards that threw or timed out (scored 0).
  double generation_seconds = 0;
  double environment_seconds = 0;
  double reward_seconds = 0;
};

struct EpisodeResult {
  std::vector<dataflow::Sample> samples;  // task.samples of them, in sample order.
  EpisodeStats stats;
};

class Workflow {
 public:
  virtual ~Workflow() = default;
  virtual std::string_view name() const = 0;
  // Errors: InvalidArgument when the task does not fit the workflow (a role's policy not hosted),
  // Cancelled, or the backend's error. A failing reward or environment is not an error.
  virtual Result<EpisodeResult> Run(const LeasedTask& task,
                                    const EpisodeContext& context) const = 0;
};

// The workflow a task's `workflow` object describes (spec.workflow plus "reward"). InvalidArgument
// naming the field ("workflow.type", "workflow.roles", "workflow.reward.type") otherwise.
Result<std::unique_ptr<Workflow>> MakeWorkflow(const nlohmann::json& workflow);

}  // namespace sluice::rollout
