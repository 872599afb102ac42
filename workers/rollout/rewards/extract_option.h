// The options of the rewards that compare a final answer (exact-match, digit-match):
// spec.reward.options = {"extract": bool}, the only key, default true.
//
// Thread safety: a pure function.
#pragma once

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace sluice::rollout {

// The value of "extract" (true when absent or when `options` is null). InvalidArgument naming
// "reward.options" when `options` is not an object, "reward.options.extract" for a value that is
// not a boolean, and "reward.options.KEY" for any other key (common/json/options_reader.h).
Result<bool> ParseExtractOption(const nlohmann::json& options);

}  // namespace sluice::rollout
