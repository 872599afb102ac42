#include "workers/rollout/workflows/solve_and_verify_workflow.h"

#include <cctype>
#include <utility>
#include <vector>

#include "common/check.h"
#include "workers/rollout/workflows/policy_turn.h"
#include "workers/rollout/workflows/timed_score.h"
#include "workers/rollout/workflows/transcript.h"

namespace sluice::rollout {
namespace {

constexpr char kVerifyFinishStop[] = "stop";
constexpr char kVerifyFinishAbort[] = "abort";

// The transcript is one token sequence read by both policies, so they must agree on what every
// id means. Vocabularies cannot be compared through the Tokenizer interface; the same object, or
// the same size, template and marker ids, is the check available.
Status CheckSharedVocabulary(const PolicyText& solver, const PolicyText& verifier) {
  if (solver.chat_template->name() != verifier.chat_template->name()) {
    return Status::InvalidArgument(
        "the solver's and the verifier's policies use different chat templates (\"" +
            std::string(solver.chat_template->name()) + "\", \"" +
            std::string(verifier.chat_template->name()) + "\"); they must share one",
        "workflow.roles");
  }
  if (solver.tokenizer == verifier.tokenizer) return Status::Ok();
  bool same = solver.tokenizer->vocab_size() == verifier.tokenizer->vocab_size();
  for (std::string_view marker : solver.chat_template->markers()) {
    same = same && solver.tokenizer->TokenId(marker) == verifier.tokenizer->TokenId(marker);
  }
  if (!same) {
    return Status::InvalidArgument(
        "the solver's and the verifier's policies have different tokenizer vocabularies; they "
        "must share one",
        "workflow.roles");
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<int32_t>> SolveAndVerifyWorkflow::EncodeVerifyRequest(
    const PolicyText& text, std::span<const int32_t> solver_turn) {
  return EncodeFollowUp(text, solver_turn, {"user", std::string(kVerifyInstruction)});
}

bool SolveAndVerifyWorkflow::IsYes(std::string_view verdict) {
  while (!verdict.empty() && std::isspace(static_cast<unsigned char>(verdict.front()))) {
    verdict.remove_prefix(1);
  }
  while (!verdict.empty() && std::isspace(static_cast<unsigned char>(verdict.back()))) {
    verdict.remove_suffix(1);
  }
  if (verdict.size() != 3) return false;
  std::string lower;
  for (char c : verdict) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower == "yes";
}

SolveAndVerifyWorkflow::SolveAndVerifyWorkflow(Options options) : options_(std::move(options)) {
  SLUICE_CHECK(options_.check != nullptr);
  SLUICE_CHECK(options_.max_attempts >= 1);
}

Result<EpisodeResult> SolveAndVerifyWorkflow::Run(const LeasedTask& task,
                                                  const EpisodeContext& context) const {
  SLUICE_ASSIGN_OR_RETURN(const PolicyText* solver, HostedPolicy(context, options_.solver_policy,
                                                                 "workflow.roles[solver].policy"));
  SLUICE_ASSIGN_OR_RETURN(
      const PolicyText* verifier,
      HostedPolicy(context, options_.verifier_policy, "workflow.roles[verifier].policy"));
  SLUICE_RETURN_IF_ERROR(CheckSharedVocabulary(*solver, *verifier));
  SLUICE_ASSIGN_OR_RETURN(const engine::SamplingParams sampling, TurnSampling(task, *solver, 1));
  return RunEpisodes(static_cast<size_t>(task.samples),
                     [&](size_t) { return RunEpisode(task, context, *solver, sampling); });
}

Result<SampleOutcome> SolveAndVerifyWorkflow::RunEpisode(
    const LeasedTask& task, const EpisodeContext& context, const PolicyText& text,
    const engine::SamplingParams& sampling) const {
  const bool single_policy = options_.solver_policy == options_.verifier_policy;
  const int32_t verifier_owner = single_policy ? 0 : 1;
  SampleOutcome out;
  dataflow::Sample& s = out.sample;
  EpisodeStats& stats = out.stats;
  s.task_id = task.task_id;
  s.prompt_id = task.prompt_id;
  Transcript transcript;
  bool cut = false;

  // One turn of `policy` on the transcript so far.
  auto take_turn = [&](const std::string& policy, int32_t owner) -> Result<Completion> {
    SLUICE_ASSIGN_OR_RETURN(std::vector<Completion> completions,
                            GenerateTurn(context, policy, transcript.tokens(), sampling));
    Completion c = std::move(completions.front());
    SLUICE_RETURN_IF_ERROR(transcript.AppendGenerated(c, owner));
    stats.generated_tokens += static_cast<int64_t>(c.tokens.size());
    s.generation_seconds += c.seconds;
    if (c.finish_reason == dataflow::kFinishLength) cut = true;
    return c;
  };
  // A user message after `turn`, then the next assistant opening.
  auto instruct = [&](const Completion& turn, std::string message) -> Status {
    SLUICE_ASSIGN_OR_RETURN(const std::vector<int32_t> ids,
                            EncodeFollowUp(text, turn.tokens, {"user", std::move(message)}));
    transcript.AppendContext(ids);
    return Status::Ok();
  };

  SLUICE_ASSIGN_OR_RETURN(
      const std::vector<int32_t> prompt,
      EncodeConversation(text, PromptMessages(options_.system_prompt, task.prompt), true));
  transcript.AppendContext(prompt);

  std::string answer;  // The solver's last final answer.
  bool verdict = false;
  bool aborted = false;
  for (int32_t attempt = 1;; ++attempt) {
    SLUICE_ASSIGN_OR_RETURN(const Completion solved, take_turn(options_.solver_policy, 0));
    answer = ExtractFinalAnswer(options_.format, TurnText(text, solved));
    if (solved.finish_reason == kVerifyFinishAbort) {
      aborted = true;
      break;
    }
    SLUICE_ASSIGN_OR_RETURN(const std::vector<int32_t> verify,
                            EncodeVerifyRequest(text, solved.tokens));
    transcript.AppendContext(verify);
    SLUICE_ASSIGN_OR_RETURN(const Completion judged,
                            take_turn(options_.verifier_policy, verifier_owner));
    if (judged.finish_reason == kVerifyFinishAbort) {
      aborted = true;
      break;
    }
    verdict = IsYes(ExtractFinalAnswer(options_.format, TurnText(text, judged)));
    if (verdict || attempt >= options_.max_attempts) break;
    SLUICE_RETURN_IF_ERROR(instruct(judged, std::string(kRetryInstruction)));
  }

  double solver_reward = 0;
  double verifier_reward = 0;
  if (!aborted) {
    const TimedScore scored = ScoreTimed(*options_.check, answer, task, *context.clock);
    s.reward_seconds += scored.seconds;
    if (scored.outcome.error) ++stats.reward_errors;
    const bool correct = scored.outcome.score >= 1.0;
    solver_reward = options_.reward_is_verdict ? (verdict ? 1.0 : 0.0) : scored.outcome.score;
    verifier_reward = verdict == correct ? 1.0 : 0.0;
  }
  s.finish_reason = aborted ? kVerifyFinishAbort
                    : cut   ? std::string(dataflow::kFinishLength)
                            : kVerifyFinishStop;
  s.reward = solver_reward;
  if (single_policy) {
    s.policy = options_.solver_policy;
    transcript.MoveInto(&s, false);
  } else {
    s.policies = {options_.solver_policy, options_.verifier_policy};
    s.policy_rewards = {solver_reward, verifier_reward};
    transcript.MoveInto(&s, true);
  }
  stats.generation_seconds = s.generation_seconds;
  stats.reward_seconds = s.reward_seconds;
  return out;
}

}  // namespace sluice::rollout
