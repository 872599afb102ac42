#include "operator/placement/weight_relays.h"

namespace sluice::placement {

std::map<std::string, std::string> AssignWeightRelays(const std::vector<RelayCandidate>& replicas) {
  std::map<std::string, const RelayCandidate*> relay;  // Region -> its relay.
  auto eligible = [](const RelayCandidate& r) {
    return r.ready && !r.draining && !r.region.empty() && !r.url.empty();
  };
  for (const RelayCandidate& r : replicas) {
    if (!eligible(r)) continue;
    const RelayCandidate*& best = relay[r.region];
    if (best == nullptr || r.index < best->index ||
        (r.index == best->index && r.name < best->name)) {
      best = &r;
    }
  }
  std::map<std::string, std::string> out;
  for (const RelayCandidate& r : replicas) {
    if (!eligible(r)) continue;
    const RelayCandidate* best = relay.at(r.region);
    out[r.name] = best == &r ? "" : best->url;
  }
  return out;
}

}  // namespace sluice::placement
