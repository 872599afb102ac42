// The dataflow routes a rollout replica's token admits (sluice-dataflow --rollout-token-file).
//
// Rollout replicas lease tasks, renew and release their leases, submit trajectory groups and
// read the announced versions. Taking and acknowledging batches, announcing versions, releasing
// or resuming held groups, reading the train split, uploading final weights and the status are
// the trainer's and the operator's, under the Dataflow's own token.
//
// Thread safety: a pure function.
#pragma once

#include <vector>

#include "common/http/scoped_token.h"

namespace sluice::dataflow {

// The routes above as DataflowService registers them (the final weights' read routes are added
// by the program, which serves them: weights::WeightReadScope).
std::vector<http::RouteScope> RolloutRouteScope();

}  // namespace sluice::dataflow
