// SolveAndVerifyWorkflow (workflow.type solve-and-verify): a solver answers, a verifier judges,
// and a rejected solver tries again, up to maxTurns attempts; both policies' turns live in one
// transcript per sample, so each policy trains on exactly the context it saw.
//
// One sample's transcript:
//   [system] user question, assistant opening                         context
//   solver's answer                                                    owner 0
//   user kVerifyInstruction, assistant opening                          context
//   verifier's verdict (ExtractFinalAnswer: "yes", any case; else no)  owner 1
//   on "no" with attempts left: user kRetryInstruction, assistant opening, then solver and
//   verifier again.
// Correctness of the solver's last answer: `check` (the configured reward, or for reward type
// "verifier" reward.options.check) on ExtractFinalAnswer of the solver's last turn; correct means
// a full score (1; code-exec gives fractions). Rewards: solver = that score, or with reward type
// "verifier" the verdict (1 yes, 0 no); verifier = 1 when its last verdict matches correctness,
// else 0. The sample lists policies [solver, verifier] with policy_rewards and token_owner, and
// reward = the solver's. When one policy plays both roles the sample is single-policy: `policy`
// set, no owners, every generated token trained with the solver's reward.
//
// Both roles' policies must share one vocabulary (the transcript is one token sequence); Run
// checks what it can: the same tokenizer object, or the same vocabulary size, chat template and
// marker ids. The verifier samples with the task's settings, as the solver does. finish_reason:
// "abort" when the backend aborted a turn (rewards 0), else "length" when any turn was cut by its
// token limit, else "stop".
//
// Thread safety: immutable; Run may be called from many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "workers/rollout/environments/tool_call_format.h"
#include "workers/rollout/rewards/reward.h"
#include "workers/rollout/workflows/episode_group.h"
#include "workers/rollout/workflows/workflow.h"

namespace sluice::rollout {

class SolveAndVerifyWorkflow final : public Workflow {
 public:
  // The user message asking for a verdict. Short on purpose: with a tiny model a long
  // instruction dilutes attention over the prompt and the answer it must compare (a 125-character
  // one delayed learning 2.5x in a replica, docs/examples.md); the verdict's format comes from the
  // verifier's warm start, which writes it after a comparison trace.
  static constexpr std::string_view kVerifyInstruction = "Check the answer.";
  static constexpr std::string_view kRetryInstruction =
      "The verifier rejected the answer. Try again.";

  // The pieces of the verifier's view, public so that a trainer's warm start (trainer/
  // verifier_warm_start.h) renders exactly what the verifier sees here.
  //
  // The tokens that follow the solver's turn `solver_turn` (its tokens as generated: ending with
  // the end-of-turn marker, or cut without it) to ask for a verdict: the user message
  // kVerifyInstruction and the next assistant opening (EncodeFollowUp's errors).
  static Result<std::vector<int32_t>> EncodeVerifyRequest(const PolicyText& text,
                                                          std::span<const int32_t> solver_turn);
  // Whether a verdict (ExtractFinalAnswer of the verifier's turn) accepts the answer: "yes" in any
  // case, surrounding whitespace ignored; anything else rejects it.
  static bool IsYes(std::string_view verdict);

  struct Options {
    std::string solver_policy;
    std::string verifier_policy;
    std::optional<std::string> system_prompt;  // spec.workflow.systemPrompt.
    int32_t max_attempts = 2;                  // spec.workflow.maxTurns, >= 1.
    ToolCallFormat format;                     // Its answer markers delimit answers and verdicts.
    std::shared_ptr<const Reward> check;       // Correctness of the solver's answer; non-null.
    bool reward_is_verdict = false;            // reward.type "verifier".
  };

  explicit SolveAndVerifyWorkflow(Options options);

  std::string_view name() const override { return "solve-and-verify"; }
  Result<EpisodeResult> Run(const LeasedTask& task, const EpisodeContext& context) const override;

 private:
  Result<SampleOutcome> RunEpisode(const LeasedTask& task, const EpisodeContext& context,
                                   const PolicyText& text,
                                   const engine::SamplingParams& sampling) const;

  Options options_;
};

}  // namespace sluice::rollout
