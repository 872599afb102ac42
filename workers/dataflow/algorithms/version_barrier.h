// Version barrier: may a policy's trainer be served the batch for its next optimizer step?
//
// Policy P whose latest announced version is v is about to train step v → v + 1.
//   barrier off (CRD versionBarrier: false): always yes; policies run free.
//   barrier on  (versionBarrier: true): yes iff every policy Q has latest(Q) >= v, i.e. no
//                policy is still behind P's current version; P waits for the slowest.
// With the barrier, the policies' versions never differ by more than one, so a multi-policy
// trajectory always mixes weights of (nearly) the same generation and each policy trains on data
// produced against a known version of the others: co-adaptation stays in lock-step and results
// are reproducible. The price is throughput: every step runs at the pace of the slowest trainer,
// and a stalled trainer stalls them all. Without the barrier each trainer uses its GPUs fully,
// but a fast policy may learn against an opponent/partner several versions old (the per-policy
// staleness bound still limits its own samples' age, not the partner's).
//
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::dataflow {

struct BarrierDecision {
  bool may_serve = true;
  std::string reason;  // Who is being waited for; empty when may_serve.
};

// `latest_versions`: every policy of the experiment with its latest announced version.
// InvalidArgument (field "policy") when `policy` is not among them.
Result<BarrierDecision> MayServeNextBatch(
    std::string_view policy, const std::map<std::string, int64_t, std::less<>>& latest_versions,
    bool barrier);

}  // namespace sluice::dataflow
