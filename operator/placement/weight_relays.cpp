#include "operator/placement/weight_relays.h"

namespace sluice::placement {

std::map<std::string, std::string> AssignWeightRelays(const std::vector<RelayCandidate>& replicas,
                                                      bool regional) {
  // A regional pool groups its replicas by region; a pool without placement is one group.
  auto group = [&](const RelayCandidate& r) { return regional ? r.region : std::string(); };
  auto usable = [&](const RelayCandidate& r) {
    return !r.draining && !r.url.empty() && (!regional || !r.region.empty());
  };
  std::map<std::string, const RelayCandidate*> relay;  // Group -> its lowest ready replica.
  for (const RelayCandidate& r : replicas) {
    if (!usable(r) || !r.ready) continue;
    const RelayCandidate*& best = relay[group(r)];
    if (best == nullptr || r.index < best->index ||
        (r.index == best->index && r.name < best->name)) {
      best = &r;
    }
  }
  std::map<std::string, std::string> out;
  for (const RelayCandidate& r : replicas) {
    if (!usable(r)) continue;
    const auto it = relay.find(group(r));
    if (!r.ready) {
      if (it != relay.end()) out[r.name] = it->second->url;  // A joiner loads from a peer.
      continue;
    }
    out[r.name] = !regional || it->second == &r ? "" : it->second->url;
  }
  return out;
}

}  // namespace sluice::placement
