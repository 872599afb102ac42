// PolicyTurn: the steps every workflow shares to let a role's policy take one turn: look the
// policy up among the hosted ones, sample with the task's settings and the chat template's
// end-of-turn marker as stop token, and call the backend with cancellation honoured.
//
// Thread safety: pure functions; GenerateTurn calls the backend, which may be shared.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "workers/rollout/engine/sampling_params.h"
#include "workers/rollout/generation_backend.h"
#include "workers/rollout/leased_task.h"
#include "workers/rollout/workflows/workflow.h"

namespace sluice::rollout {

// The hosted policy `policy`, or InvalidArgument naming `field` (the role's policy field, e.g.
// "workflow.roles[0].policy") when the worker does not host it.
Result<const PolicyText*> HostedPolicy(const EpisodeContext& context, const std::string& policy,
                                       std::string_view field);

// TaskSamplingParams(task.sampling, n) with the end-of-turn id of `text`'s template added to
// stop_token_ids, so a turn ends where the template closes it.
Result<engine::SamplingParams> TurnSampling(const LeasedTask& task, const PolicyText& text,
                                            int32_t n);

// Generates sampling.n completions of `prompt` for `policy`. Cancelled when context.cancel is
// (before the call, or after it: completions a cancellation aborted are not returned); the
// backend's error otherwise; Internal when the backend returns a number of completions other
// than sampling.n.
Result<std::vector<Completion>> GenerateTurn(const EpisodeContext& context,
                                             const std::string& policy,
                                             const std::vector<int32_t>& prompt,
                                             const engine::SamplingParams& sampling);

}  // namespace sluice::rollout
