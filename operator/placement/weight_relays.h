// Weight relays: which replica of each region of a RolloutPool fetches new weight versions from
// the trainer and serves them to the region's other replicas, so each version crosses a region
// boundary once (docs/rollout.md, "Weights").
//
// The relay of a region is its ready, non-draining replica with the lowest replica index; the
// other ready replicas of the region fetch from it (and fall back to the trainer on their own when
// it fails). Deterministic, so the choice only changes when readiness does. Pools without
// spec.placement have no regions and no relays (every replica fetches from the trainer).
//
// Thread safety: pure function.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace sluice::placement {

struct RelayCandidate {
  std::string name;    // Pod name.
  std::string region;  // Its placement region.
  int index = 0;       // Replica index.
  bool ready = false;
  bool draining = false;
  std::string url;  // The replica's base URL ("http://<pod IP>:8080").
};

// Pod name -> the relay URL it should use: "" for a relay itself. Only ready, non-draining
// replicas with a region and a URL appear.
std::map<std::string, std::string> AssignWeightRelays(const std::vector<RelayCandidate>& replicas);

}  // namespace sluice::placement
