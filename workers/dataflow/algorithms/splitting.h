// Splitting: a multi-policy trajectory becomes one sample per policy that generated tokens in it.
//
// From policy P's point of view, the tokens another policy generated are environment: in P's
// sample they keep their token ids but get loss mask 0, behaviour log-prob 0 and version
// kNoVersion, so MinVersion() and GeneratedTokens() of the split sample speak about P only.
// `token_owner` and `policies` are kept, so the trainer can still see who wrote what.
//
// Thread safety: pure functions.
#pragma once

#include <vector>

#include "common/status.h"
#include "workers/dataflow/client/sample.h"

namespace sluice::dataflow {

// Splits `trajectory` (validated with ValidateSample) into one sample per policy index that
// owns at least one token, in policy-index order; each has `policy` = policies[i], `reward` =
// policy_rewards[i], and its loss mask narrowed to mask[t] && owner[t] == i.
//
// A trajectory without `token_owner` is single-policy: it is returned unchanged except that
// `policy` and `reward` are filled from policies[0] / policy_rewards[0] when `policies` has
// exactly one entry (an already-set `policy` with empty `policies` is also accepted as is).
// InvalidArgument: inconsistent arrays, or no owner array with zero or several policies and no
// `policy`.
Result<std::vector<Sample>> SplitByPolicy(const Sample& trajectory);

}  // namespace sluice::dataflow
