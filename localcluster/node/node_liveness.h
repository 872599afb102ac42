// When the local cluster's node lifecycle controller counts a node as lost. Pure.
//
// One sluice-node process heartbeats every simulated node in turn, so a busy machine slows every
// node's heartbeats alike: with a short grace (tests use seconds) a slow round made healthy nodes
// look lost. A node is lost only when the agent finished a heartbeat round that began after the
// node's last heartbeat without renewing it (its "kubelet" is gone: sluice.dev/simulated-failure)
// and more than `grace` has passed since that last heartbeat. A stalled agent (no round
// finishes) loses no node, as kube's node lifecycle controller evicts nothing in a full
// disruption.
#pragma once

#include <chrono>

namespace sluice::node {

// `last_heartbeat`: when the node's Lease was last renewed (its registration counts as one).
// `last_round_start`: when the newest completed heartbeat round began; the clock's epoch before
// the first round completes. All on the steady clock.
bool NodeHeartbeatLost(std::chrono::steady_clock::time_point now,
                       std::chrono::steady_clock::time_point last_heartbeat,
                       std::chrono::steady_clock::time_point last_round_start,
                       std::chrono::steady_clock::duration grace);

}  // namespace sluice::node
