// The weight routes a reader's token may use: what a rollout replica's scoped token
// (common/http/scoped_token.h) admits on a server of weight versions (a trainer's rank 0, the
// dataflow's final weights).
//
// Thread safety: a pure function.
#pragma once

#include <string>
#include <vector>

#include "common/http/scoped_token.h"

namespace sluice::weights {

// GET of the version list, a full image and a delta under `prefix_pattern` (a path regular
// expression; "" for a trainer's /v1/weights, "/v1/final/[^/]+" for the dataflow's final
// weights), as WeightRoutes registers them. Nothing that publishes or exports.
std::vector<http::RouteScope> WeightReadScope(const std::string& prefix_pattern);

}  // namespace sluice::weights
