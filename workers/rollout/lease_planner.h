// Decisions of the rollout worker's loop, as pure functions (the loop in rollout_worker.h does the
// I/O): how many tasks to lease, which weights a joining replica still has to load before it is
// Ready, which replica of a region relays weights, and how a version's URL splits into a server
// and a version.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::rollout {

struct CapacityInputs {
  bool draining = false;
  int64_t max_episodes = 1;        // Concurrent tasks at most (--max-episodes).
  int64_t episodes_in_flight = 0;  // Tasks leased and not yet submitted or released.
  // Sequences the engine can run at once (--max-concurrent-sequences) and the sequences the
  // running tasks will generate (sum of their samples).
  int64_t max_sequences = 256;
  int64_t sequences_in_flight = 0;
  int64_t samples_per_task = 1;     // Expected completions per task (the last lease's, or 1).
  double kv_usage = 0;              // Fraction of the engine's KV blocks in use, [0, 1].
  double kv_high_watermark = 0.95;  // No new work while the KV cache is this full.
};

// Tasks to ask for now: 0 while draining or above the KV watermark; otherwise as many as both the
// episode slots and the free sequence slots allow (a task needs samples_per_task of them), but at
// least 1 when nothing is in flight (a group larger than the engine's limit still runs, queued in
// the engine) and episode slots are free.
int64_t TasksToLease(const CapacityInputs& in);

// The hosted policies a joining replica (scale-up, restart, spill-over) must still load before it
// is Ready and leases its first task: those whose newest announced version is newer than the one
// held. `announced`: policy -> newest announced version (policies not hosted are ignored);
// `held`: every hosted policy -> its loaded version. Version 0, the initial weights, is never
// announced, so with no announcement nothing is behind and the replica is Ready at once.
// Sorted by policy name.
std::vector<std::string> PoliciesBehind(const std::map<std::string, int64_t>& announced,
                                        const std::map<std::string, int64_t>& held);

// The replica that relays weights for a region: the lowest replica index that is ready, or
// `self` when no lower-indexed replica is. `ready_lower` lists the indexes below self that are
// ready. Deterministic, so every replica of the region agrees without coordination.
int ChooseRelay(int self, const std::vector<int>& ready_lower);

// The replica index at the end of a Pod name "<pool>-<region>-<index>" or "<pool>-<index>";
// nullopt when the name does not end in "-<digits>".
std::optional<int> ReplicaIndex(std::string_view pod_name);
// The Pod name of replica `index` in the same pool and region as `pod_name` (its name with the
// index replaced).
std::string PeerPodName(std::string_view pod_name, int index);

// "http://host:port/v1/weights/7" -> {"http://host:port", 7}. InvalidArgument (field `field`)
// when the URL does not end in "/v1/weights/<version>".
struct WeightUrl {
  std::string base;
  int64_t version = 0;
};
Result<WeightUrl> SplitWeightUrl(std::string_view url, std::string_view field = "url");

}  // namespace sluice::rollout
