// Eval trigger: does a version announcement queue an evaluation round, and at which version?
//
// An eval round runs every policy of the experiment with the weights the rollout workers hold
// when they lease its tasks, so a round means something only once every policy it measures has
// the weights it is labelled with.
//   barrier off, or one policy: the primary policy (the first in `policies`) drives evaluation:
//     its announcement of version v queues a round at v when v crosses a multiple of
//     `every_versions`, or when the announcement asks for one (`evaluate`, e.g. the weights a
//     warm start produced) and evaluation is configured. Other policies' announcements never do.
//   barrier on, several policies: the experiment's version is the lowest of its policies'
//     versions (they move in lock step); any policy's announcement queues a round at that
//     version when the lowest crosses a multiple of `every_versions`, or when the announcement
//     asks for one and brings the lowest up to its own version (the last policy to arrive at v
//     queues v's round). A round is thus never queued while a policy still holds older weights,
//     e.g. while one TrainerJob's warm start has finished and the other's has not.
// At most one round per announcement either way.
//
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <optional>

namespace sluice::dataflow {

struct EvalTriggerFacts {
  int64_t every_versions = 0;  // 0: no periodic rounds.
  bool at_start = false;       // Evaluation configured for the initial weights only.
  bool barrier = false;        // The Dataflow's versionBarrier.
  int64_t policies = 1;        // How many policies the experiment trains (>= 1).
  bool primary = true;         // The announcing policy is the first in `policies`.
  bool evaluate = false;       // The announcement asks for a round.
  int64_t previous = 0;        // The announcing policy's version before the announcement.
  int64_t announced = 0;       // The version announced (> previous).
  int64_t lowest_before = 0;   // Lowest version over all policies before the announcement.
  int64_t lowest_after = 0;    // ... and after it.
};

// The version to queue a round at, or nullopt for none.
std::optional<int64_t> EvalRoundToQueue(const EvalTriggerFacts& facts);

}  // namespace sluice::dataflow
