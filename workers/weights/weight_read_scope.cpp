#include "workers/weights/weight_read_scope.h"

namespace sluice::weights {

std::vector<http::RouteScope> WeightReadScope(const std::string& prefix_pattern) {
  return {{"GET", prefix_pattern + "/v1/weights"},
          {"GET", prefix_pattern + "/v1/weights/[^/]+"},
          {"GET", prefix_pattern + "/v1/weights/[^/]+/delta"}};
}

}  // namespace sluice::weights
