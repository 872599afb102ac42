// Which version number a (re)starting trainer publishes its current weights as, so that a version
// number never names two weight images.
//
// A trainer that restarts resumes from its newest checkpoint (or from the initial weights), which
// may be older than what the dead run already announced: versions N+1..M of the dead run are in
// the dataflow and in the rollout workers' hands. Announcing the resumed weights as N again, or
// training on to announce N+1.. again, would give those numbers a second image. So the trainer
// continues above the dataflow's newest announcement instead, unless that announcement is its own
// current weights (same number and digest: a restart right after a checkpoint, or a run that
// stopped without training), which it re-announces at its new address.
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sluice::trainer {

// The dataflow's newest announcement of the trainer's policy.
struct AnnouncedImage {
  int64_t number = 0;  // >= 1.
  std::string digest;  // "sha256:<hex>"; empty when the announcement carried none.
};

// `held` is the version the trainer's current weights would be (version base + step), and
// `held_digest` their digest as version `held` (empty when not computed: then no match). Returns
// `held` when nothing is announced, the announcement is older, or it is exactly these weights;
// else announced->number + 1.
int64_t ContinuedVersion(int64_t held, const std::optional<AnnouncedImage>& announced,
                         const std::string& held_digest);

}  // namespace sluice::trainer
