// Drain: can the dataflow still feed a policy's trainer? When the data runs out (every epoch of
// spec.dataset consumed) the dataflow says so, so that a trainer stops instead of polling for
// batches forever (docs/dataflow.md, "The end of the data").
//
//   exhausted  the dataset cursor is done (every prompt of every epoch handed out) and no train
//              task is pending (re-queued) or under lease, so no new train group can arrive. Eval
//              tasks do not count: they feed no trainer.
//   drained    per policy: exhausted, no unacknowledged batch of the policy (one could be served
//              again), and no batch can ever be served to it again, because
//                - count: it has fewer usable buffered groups than the fresh groups one batch
//                  needs (the batch's size less its replayed share, which replay memory can no
//                  longer change once no batch is outstanding). Usable: what a take would serve
//                  now, so not the stale groups under staleAction drop; staleness only grows, so
//                  usable groups never increase again; or
//                - barrier: with versionBarrier, its version v waits for a policy Q that is
//                  drained and whose final version stays below v. Q's final version is its
//                  current one, plus one when a batch of Q was acknowledged after Q's newest
//                  announcement (the trainer acknowledges a batch, then announces the version it
//                  trained). (Waiting for a policy drained at the barrier means waiting for
//                  the policy that one waits for too, so one pass decides.)
// Only a late submit of a task set aside after max_attempts failures (which the core accepts)
// can add groups after exhaustion; it is not waited for.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::dataflow {

// One policy as the drain decision sees it.
struct DrainPolicyInput {
  std::string policy;
  int64_t version = 0;        // Newest announced version (0 before the first).
  bool announce_due = false;  // A batch was acknowledged after the newest announcement.
  int64_t unacked_batches = 0;
  int64_t buffered_groups = 0;  // In its buffer.
  int64_t usable_groups = 0;    // Of those, the ones a take would serve now.
  int64_t batch_groups = 1;     // Groups per batch: the request's, or the configured size.
  int64_t fresh_needed = 1;     // Fresh groups one batch needs (batch_groups less replayed).
};

struct DrainInput {
  bool dataset_done = false;  // DatasetCursor::done().
  int64_t pending_train_tasks = 0;
  int64_t leased_train_tasks = 0;
  int64_t epochs = 1;  // spec.dataset.epochs, for the reasons.
  bool version_barrier = false;
  std::vector<DrainPolicyInput> policies;  // Unique names.
};

struct PolicyDrain {
  std::string policy;
  bool drained = false;
  // Why, without the exhaustion prefix (DrainedMessage adds it), e.g. "the 3 buffered groups of
  // policy actor cannot fill a batch of 8"; empty when not drained.
  std::string reason;
};

struct DrainState {
  bool exhausted = false;
  std::vector<PolicyDrain> policies;  // Input order.
};

DrainState DecideDrain(const DrainInput& input);

// "the dataset is exhausted (epoch <epochs> of <epochs>) and <reason>": the message of the 410
// reply and of the trainer's Starved phase.
std::string DrainedMessage(int64_t epochs, const std::string& reason);

}  // namespace sluice::dataflow
