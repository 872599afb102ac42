// sluice-rollout's flags (also SLUICE_ROLLOUT_* environment variables and a --config flags file:
// common/config), as the operator's worker contract gives them
// (operator/controllers/rolloutpool/desired_pods.h).
//
// Pure functions. Thread safety: values only.
#pragma once

#include <string>
#include <vector>

#include "common/config/spec.h"

namespace sluice::rollout {

// Every flag of sluice-rollout, with the serving flags of common/service.
config::Spec RolloutFlagSpec();

// The names in a comma-separated --policies value, in order; empty items are dropped.
std::vector<std::string> SplitPolicyList(const std::string& list);

}  // namespace sluice::rollout
