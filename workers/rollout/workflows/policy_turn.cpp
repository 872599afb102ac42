#include "workers/rollout/workflows/policy_turn.h"

#include <algorithm>

#include "workers/rollout/workflows/transcript.h"

namespace sluice::rollout {

Result<const PolicyText*> HostedPolicy(const EpisodeContext& context, const std::string& policy,
                                       std::string_view field) {
  auto it = context.policies.find(policy);
  if (it == context.policies.end()) {
    return Status::InvalidArgument("policy \"" + policy + "\" is not hosted by this worker",
                                   std::string(field));
  }
  if (!it->second.tokenizer || !it->second.chat_template) {
    return Status::InvalidArgument("policy \"" + policy + "\" has no tokenizer or chat template",
                                   std::string(field));
  }
  return &it->second;
}

Result<engine::SamplingParams> TurnSampling(const LeasedTask& task, const PolicyText& text,
                                            int32_t n) {
  SLUICE_ASSIGN_OR_RETURN(engine::SamplingParams sampling, TaskSamplingParams(task.sampling, n));
  SLUICE_ASSIGN_OR_RETURN(const int32_t eot, EndOfTurnId(text));
  if (std::find(sampling.stop_token_ids.begin(), sampling.stop_token_ids.end(), eot) ==
      sampling.stop_token_ids.end()) {
    sampling.stop_token_ids.push_back(eot);
  }
  return sampling;
}

Result<std::vector<Completion>> GenerateTurn(const EpisodeContext& context,
                                             const std::string& policy,
                                             const std::vector<int32_t>& prompt,
                                             const engine::SamplingParams& sampling) {
  if (context.cancel.IsCancelled()) return Status::Cancelled("the episode was cancelled");
  GenerateRequest request;
  request.policy = policy;
  request.prompt = prompt;
  request.sampling = sampling;
  SLUICE_ASSIGN_OR_RETURN(std::vector<Completion> completions,
                          context.backend->Generate(request, context.cancel));
  if (context.cancel.IsCancelled()) return Status::Cancelled("the episode was cancelled");
  if (completions.size() != static_cast<size_t>(sampling.n)) {
    return Status::Internal("the backend returned " + std::to_string(completions.size()) +
                            " completions for policy \"" + policy + "\", expected " +
                            std::to_string(sampling.n));
  }
  return completions;
}

}  // namespace sluice::rollout
