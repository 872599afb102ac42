#include "workers/dataflow/rollout_route_scope.h"

namespace sluice::dataflow {

std::vector<http::RouteScope> RolloutRouteScope() {
  return {{"POST", "/v1/leases"},
          {"POST", "/v1/leases/[^/]+/renew"},
          {"POST", "/v1/leases/[^/]+/release"},
          {"POST", "/v1/trajectories"},
          {"GET", "/v1/versions"}};
}

}  // namespace sluice::dataflow
