// Weight relays: which replica of a RolloutPool a replica fetches new weight versions from instead
// of the trainer (docs/rollout.md, "Weights").
//
// In a pool with spec.placement (regional), the relay of a region is its ready, non-draining
// replica with the lowest replica index; it fetches from the trainer and the region's other ready
// replicas fetch from it (falling back to the trainer on their own when it fails), so each version
// crosses a region boundary once. Ready replicas of a pool without spec.placement fetch from the
// trainer.
//
// A joining replica (running, with an address, not ready, not draining) of any pool loads its
// first weights from a ready peer: its region's relay, or in a pool without placement the ready,
// non-draining replica with the lowest index. The peer holds every version the trainer still
// announces, and is the only source left once the trainer has finished: a replica re-created
// after the job ended (a failed node, a deleted pod) could not become ready otherwise.
//
// Deterministic, so the choice only changes when readiness does.
//
// Thread safety: pure function.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace sluice::placement {

struct RelayCandidate {
  std::string name;    // Pod name.
  std::string region;  // Its placement region ("" without spec.placement).
  int index = 0;       // Replica index.
  bool ready = false;
  bool draining = false;
  std::string url;  // The replica's base URL ("http://<pod IP>:8080"); "" before it has an IP.
};

// Pod name -> the relay URL it should use ("": fetch from the trainer; a regional relay gets ""
// too). `regional`: the pool has spec.placement. Listed: the ready, non-draining replicas with a
// URL (of a regional pool, those with a region) and the joining replicas with a ready peer to load
// from.
std::map<std::string, std::string> AssignWeightRelays(const std::vector<RelayCandidate>& replicas,
                                                      bool regional);

}  // namespace sluice::placement
