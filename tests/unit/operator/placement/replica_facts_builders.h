// ReplicaFacts for the placement tests: replica `index` of pool "pool" in `region`, named as the
// operator names it ("pool-<region>-<index>").
#pragma once

#include <cstdint>
#include <string>

#include "operator/placement/spillover.h"

namespace sluice::placement::test_facts {

// Scheduled, Ready and idle.
inline ReplicaFacts ReadyReplica(const std::string& region, int index) {
  ReplicaFacts r;
  r.name = "pool-" + region + "-" + std::to_string(index);
  r.region = region;
  r.replica_index = index;
  r.ready = true;
  r.in_flight = 0;
  return r;
}

// Pending, and refused by the scheduler since `since` (seconds) with `message`.
inline ReplicaFacts UnschedulableReplica(const std::string& region, int index, int64_t since,
                                         const std::string& message = "0/2 nodes are available") {
  ReplicaFacts r = ReadyReplica(region, index);
  r.ready = false;
  r.in_flight = -1;
  r.unscheduled = true;
  r.pending_unschedulable = true;
  r.pending_since_seconds = since;
  r.scheduler_message = message;
  return r;
}

}  // namespace sluice::placement::test_facts
