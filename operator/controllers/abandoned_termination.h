// Replica Pods whose deletion their node abandoned.
//
// Deleting a Pod only marks it Terminating: the kubelet of its node stops the containers and then
// removes the object. A node that died (or lost its network) never does, so the Pod stays
// Terminating forever, and with it the pool's drain finalizer and the namespace. Like the Job
// and StatefulSet controllers with their force-delete policies, the RolloutPool controller treats
// such a Pod as gone once it is clearly abandoned and deletes it with a zero grace period (which
// removes the object at once). A rollout replica keeps no state of its own: if its worker still
// runs behind a partition, its leases expire and the dataflow hands the work to another replica.
//
// Abandoned: metadata.deletionTimestamp is set (the moment by which the kubelet should have
// finished: the deletion's start plus its grace period), at least `grace_seconds` have passed
// since then, and the Pod is not Ready (the node lifecycle controller marks the Pods of an
// unreachable node NotReady). The Pod's own status cannot tell a dead node from a live kubelet
// stuck tearing the Pod down (a volume that will not unmount): both are handled alike, which
// for a stateless replica only ends a teardown that was overdue anyway. The controller passes
// max(spec.drain.gracePeriodSeconds, kAbandonedTerminationFloorSeconds), so a pool whose drain
// grace is 0 still leaves a live kubelet a minute past the deadline. Times are Unix seconds.
// Pure function. Thread safety: values only.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

namespace sluice::controllers {

// The least time past its deletion deadline after which a Terminating replica counts as
// abandoned, whatever the pool's drain grace.
inline constexpr int64_t kAbandonedTerminationFloorSeconds = 60;

bool TerminationAbandoned(const nlohmann::json& pod, int64_t now_seconds, int64_t grace_seconds);

}  // namespace sluice::controllers
