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
// finished, creation of the deletion plus its grace period), at least `grace_seconds` (the pool's
// spec.drain.gracePeriodSeconds) have passed since then, and the Pod is not Ready (the node
// lifecycle controller marks the Pods of an unreachable node NotReady; a kubelet that is alive
// but slow keeps reporting). Times are Unix seconds. Pure function. Thread safety: values only.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

namespace sluice::controllers {

bool TerminationAbandoned(const nlohmann::json& pod, int64_t now_seconds, int64_t grace_seconds);

}  // namespace sluice::controllers
