// LoadHostedPolicies: a rollout replica's policies made ready to generate with, in --policies
// order: a uri model downloaded into its cache entry (or found there complete;
// model::FetchModelSource), its tokenizer read and chat template picked (policy_text_loader.h),
// and, for the built-in engine, its weights loaded and added to the engine at version 0. An
// external engine (vLLM, SGLang) loads the weights itself: only the text is loaded here.
//
// Ownership: `engine` (null for an external engine) and `logger` are borrowed for the call.
// Thread safety: call from one thread; the engine may be stepping meanwhile.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/http/hosts_file.h"
#include "common/logging/logger.h"
#include "common/process/cancellation.h"
#include "common/status.h"
#include "workers/rollout/backend/engine_backend.h"
#include "workers/rollout/rollout_settings.h"
#include "workers/rollout/workflows/policy_text_loader.h"

namespace sluice::rollout {

// Why a policy could not be made ready: `what` names the stage for the log ("cannot download a
// policy's model", "cannot load a policy", "cannot add a policy").
struct HostedPolicyFailure {
  std::string what;
  std::string policy;
  Status status;  // Cancelled when `cancel` fired during a download.
};

struct HostedPolicyLoad {
  std::map<std::string, PolicyText> texts;  // By policy name.
  std::optional<HostedPolicyFailure> failure;
};

HostedPolicyLoad LoadHostedPolicies(const std::vector<HostedPolicy>& policies,
                                    EngineBackend* engine,
                                    std::shared_ptr<http::HostsFileResolver> resolver,
                                    const CancellationToken& cancel, log::Logger& logger);

}  // namespace sluice::rollout
