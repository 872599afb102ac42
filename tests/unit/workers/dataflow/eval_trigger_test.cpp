#include "workers/dataflow/algorithms/eval_trigger.h"

#include <gtest/gtest.h>

#include <optional>

namespace sluice::dataflow {
namespace {

TEST(DataflowEvalTriggerTest, Decisions) {
  struct Case {
    const char* name;
    EvalTriggerFacts facts;
    std::optional<int64_t> round;
  };
  // Fields: every, at_start, barrier, policies, primary, evaluate, previous, announced,
  // lowest_before, lowest_after.
  const Case cases[] = {
      {"single policy crosses 50", {50, false, false, 1, true, false, 49, 50, 49, 50}, 50},
      {"single policy inside a period", {50, false, false, 1, true, false, 50, 51, 50, 51}, {}},
      {"a jump over a multiple", {50, false, false, 1, true, false, 48, 53, 48, 53}, 53},
      {"evaluation off", {0, false, false, 1, true, false, 49, 50, 49, 50}, {}},
      {"requested (warm start)", {50, false, false, 1, true, true, 0, 60, 0, 60}, 60},
      {"requested with at_start only", {0, true, false, 1, true, true, 0, 60, 0, 60}, 60},
      {"requested, evaluation off", {0, false, false, 1, true, true, 0, 60, 0, 60}, {}},
      {"requested and periodic: one round", {50, false, false, 1, true, true, 0, 100, 0, 100}, 100},
      {"free-running, second policy", {50, false, false, 2, false, false, 49, 50, 49, 49}, {}},
      {"free-running, primary ahead", {50, false, false, 2, true, false, 49, 50, 10, 10}, 50},
      // The barrier: rounds wait for the slowest policy.
      {"barrier, primary first to 50", {50, false, true, 2, true, false, 49, 50, 49, 49}, {}},
      {"barrier, last policy to 50", {50, false, true, 2, false, false, 49, 50, 49, 50}, 50},
      {"barrier, warm start ends first", {50, false, true, 2, true, true, 0, 60, 0, 0}, {}},
      {"barrier, second warm start ends", {50, false, true, 2, false, true, 0, 60, 0, 60}, 60},
      {"barrier, request behind the others", {50, false, true, 2, false, true, 58, 59, 58, 59}, 59},
      {"barrier, request while others lag", {50, false, true, 3, true, true, 0, 60, 0, 30}, {}},
      {"barrier, one policy acts alone", {50, false, true, 1, true, false, 49, 50, 49, 50}, 50},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(EvalRoundToQueue(c.facts), c.round) << c.name;
  }
}

}  // namespace
}  // namespace sluice::dataflow
