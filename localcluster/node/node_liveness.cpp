#include "localcluster/node/node_liveness.h"

namespace sluice::node {

bool NodeHeartbeatLost(std::chrono::steady_clock::time_point now,
                       std::chrono::steady_clock::time_point last_heartbeat,
                       std::chrono::steady_clock::time_point last_round_start,
                       std::chrono::steady_clock::duration grace) {
  // A round that began at or before the last heartbeat may be the one that renewed it.
  const bool skipped_by_a_round = last_round_start > last_heartbeat;
  return skipped_by_a_round && now - last_heartbeat > grace;
}

}  // namespace sluice::node
