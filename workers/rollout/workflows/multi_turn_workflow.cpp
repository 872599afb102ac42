#include "workers/rollout/workflows/multi_turn_workflow.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>
#include <vector>

#include "common/check.h"
#include "workers/rollout/workflows/policy_turn.h"
#include "workers/rollout/workflows/timed_score.h"
#include "workers/rollout/workflows/transcript.h"

namespace sluice::rollout {
namespace {

constexpr char kFinishStop[] = "stop";
constexpr char kFinishAbort[] = "abort";

double SecondsSince(const Clock& clock, Clock::MonoTime start) {
  return std::chrono::duration<double>(clock.Now() - start).count();
}

}  // namespace

MultiTurnWorkflow::MultiTurnWorkflow(Options options) : options_(std::move(options)) {
  SLUICE_CHECK(options_.reward != nullptr);
  SLUICE_CHECK(options_.max_turns >= 1);
}

std::string MultiTurnWorkflow::FirstUserMessage(const std::string& prompt,
                                                const std::string& initial_observation) {
  return initial_observation.empty() ? prompt : prompt + "\n\n" + initial_observation;
}

Result<std::vector<int32_t>> MultiTurnWorkflow::EncodeObservation(
    const PolicyText& text, std::span<const int32_t> turn_tokens, const std::string& observation) {
  return EncodeFollowUp(text, turn_tokens, {"tool", observation});
}

Result<EpisodeResult> MultiTurnWorkflow::Run(const LeasedTask& task,
                                             const EpisodeContext& context) const {
  SLUICE_ASSIGN_OR_RETURN(const PolicyText* text,
                          HostedPolicy(context, options_.policy, "workflow.roles[0].policy"));
  SLUICE_ASSIGN_OR_RETURN(const engine::SamplingParams sampling, TurnSampling(task, *text, 1));
  return RunEpisodes(static_cast<size_t>(task.samples),
                     [&](size_t) { return RunEpisode(task, context, *text, sampling); });
}

Result<SampleOutcome> MultiTurnWorkflow::RunEpisode(const LeasedTask& task,
                                                    const EpisodeContext& context,
                                                    const PolicyText& text,
                                                    const engine::SamplingParams& sampling) const {
  SampleOutcome out;
  dataflow::Sample& s = out.sample;
  EpisodeStats& stats = out.stats;
  s.task_id = task.task_id;
  s.prompt_id = task.prompt_id;
  s.policy = options_.policy;
  // Counted explicitly: turn_starts cannot tell, since a call can end the episode too (a failing
  // step, an environment's done, the turn limit).
  s.tool_calls = 0;
  Transcript transcript;

  // Ends the sample. `response`: the text the configured reward scores; nullopt: reward given.
  auto finish = [&](std::string reason, std::optional<std::string_view> response, double reward) {
    s.finish_reason = std::move(reason);
    if (response) {
      const TimedScore scored = ScoreTimed(*options_.reward, *response, task, *context.clock);
      reward = scored.outcome.score;
      s.reward_seconds += scored.seconds;
      if (scored.outcome.error) ++stats.reward_errors;
    }
    s.reward = reward;
    transcript.MoveInto(&s, false);
    stats.generation_seconds = s.generation_seconds;
    stats.environment_seconds = s.environment_seconds;
    stats.reward_seconds = s.reward_seconds;
    return std::move(out);
  };
  // An environment failure ends the sample unscored, unless it came from a cancellation. (The
  // sample's "abort" and the counter report it; the error itself has nowhere to go in a sample.)
  auto environment_failed = [&]() -> Result<SampleOutcome> {
    if (context.cancel.IsCancelled()) return Status::Cancelled("the episode was cancelled");
    ++stats.environment_errors;
    return finish(kFinishAbort, std::nullopt, 0.0);
  };
  auto encode_prompt = [&](const std::string& user) {
    return EncodeConversation(text, PromptMessages(options_.system_prompt, user), true);
  };

  // A sample whose environment fails before the first turn holds the bare prompt.
  auto environment = MakeEnvironment(options_.environment, context.environment_token);
  Result<std::string> initial = Status::Unavailable("the environment was not created");
  const Clock::MonoTime start_reset = context.clock->Now();
  if (environment.ok()) {
    EnvironmentTask env_task;
    env_task.task_id = task.task_id;
    env_task.prompt = task.prompt;
    env_task.answer = task.answer;
    env_task.row = task.row;
    initial = (*environment)->Reset(env_task, context.cancel);
    s.environment_seconds += SecondsSince(*context.clock, start_reset);
  }
  if (!initial.ok()) {
    SLUICE_ASSIGN_OR_RETURN(const std::vector<int32_t> bare, encode_prompt(task.prompt));
    transcript.AppendContext(bare);
    return environment_failed();
  }
  // The initial observation joins the user message.
  SLUICE_ASSIGN_OR_RETURN(const std::vector<int32_t> prompt,
                          encode_prompt(FirstUserMessage(task.prompt, *initial)));
  transcript.AppendContext(prompt);

  // The whole sequence stays within what maxTurns full turns after the prompt would take.
  const int64_t budget = static_cast<int64_t>(prompt.size()) +
                         static_cast<int64_t>(sampling.max_new_tokens) * options_.max_turns;
  std::string last_text;
  for (int32_t turn = 1;; ++turn) {
    const int64_t left = budget - static_cast<int64_t>(transcript.size());
    if (left <= 0) {
      return finish(std::string(dataflow::kFinishLength),
                    ExtractFinalAnswer(options_.tool_call, last_text), 0.0);
    }
    engine::SamplingParams turn_sampling = sampling;
    turn_sampling.max_new_tokens =
        static_cast<int32_t>(std::min<int64_t>(sampling.max_new_tokens, left));
    SLUICE_ASSIGN_OR_RETURN(
        std::vector<Completion> completions,
        GenerateTurn(context, options_.policy, transcript.tokens(), turn_sampling));
    Completion& c = completions.front();
    SLUICE_RETURN_IF_ERROR(transcript.AppendGenerated(c, 0));
    stats.generated_tokens += static_cast<int64_t>(c.tokens.size());
    s.generation_seconds += c.seconds;
    last_text = std::string(TurnText(text, c));

    if (c.finish_reason == kFinishAbort) return finish(kFinishAbort, std::nullopt, 0.0);
    const std::optional<ToolCall> call = FindToolCall(options_.tool_call, last_text);
    if (!call) {
      return finish(c.finish_reason, ExtractFinalAnswer(options_.tool_call, last_text), 0.0);
    }
    ++*s.tool_calls;

    const Clock::MonoTime start_step = context.clock->Now();
    Result<StepResult> step = (*environment)->Step(*call, last_text, context.cancel);
    s.environment_seconds += SecondsSince(*context.clock, start_step);
    if (!step.ok()) return environment_failed();
    ++stats.environment_steps;
    if (step->done) {
      if (step->reward) {
        if (!std::isfinite(*step->reward)) {
          return environment_failed();  // A reward that is not a number is a broken reply.
        }
        return finish(kFinishStop, std::nullopt, *step->reward);
      }
      return finish(kFinishStop, ExtractFinalAnswer(options_.tool_call, last_text), 0.0);
    }
    // The observation is only worth appending when a turn follows to read it.
    if (turn >= options_.max_turns) {
      return finish(std::string(dataflow::kFinishLength),
                    ExtractFinalAnswer(options_.tool_call, last_text), 0.0);
    }
    SLUICE_ASSIGN_OR_RETURN(const std::vector<int32_t> follow_up,
                            EncodeObservation(text, c.tokens, step->observation));
    transcript.AppendContext(follow_up);
  }
}

}  // namespace sluice::rollout
