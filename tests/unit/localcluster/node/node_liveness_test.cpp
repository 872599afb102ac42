// Tests of when a simulated node counts as lost.
#include "localcluster/node/node_liveness.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::node {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

TEST(NodeLivenessTest, LostOnlyWhenARoundSkippedTheNodeAndTheGraceHasPassed) {
  const Clock::time_point t0 = Clock::time_point() + std::chrono::hours(1);
  struct Case {
    std::string name;
    Clock::time_point now, last_heartbeat, last_round_start;
    bool lost;
  };
  const std::vector<Case> cases = {
      // A dead kubelet: rounds keep completing without it.
      {"skipped, grace passed", t0 + seconds(7), t0, t0 + seconds(6), true},
      {"skipped, within grace", t0 + seconds(5), t0, t0 + seconds(4), false},
      {"skipped, exactly the grace", t0 + seconds(6), t0, t0 + seconds(5), false},
      // A slow round: the node's heartbeat is old, but no round finished without renewing it.
      {"slow round, renewed by it", t0 + seconds(30), t0, t0 - seconds(1), false},
      {"round began at the heartbeat", t0 + seconds(30), t0, t0, false},
      // The agent stalled: no round has completed at all.
      {"no round yet", t0 + seconds(30), t0, Clock::time_point(), false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(NodeHeartbeatLost(c.now, c.last_heartbeat, c.last_round_start, seconds(6)), c.lost)
        << c.name;
  }
}

}  // namespace
}  // namespace sluice::node
