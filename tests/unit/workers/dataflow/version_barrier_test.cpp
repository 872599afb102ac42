#include "workers/dataflow/algorithms/version_barrier.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace sluice::dataflow {
namespace {

TEST(DataflowVersionBarrierTest, Decisions) {
  using Versions = std::map<std::string, int64_t, std::less<>>;
  struct Case {
    Versions versions;
    const char* policy;
    bool barrier;
    bool may_serve;
  };
  const Case cases[] = {
      {{{"a", 3}, {"b", 3}}, "a", true, true},   // Level: both may step.
      {{{"a", 4}, {"b", 3}}, "a", true, false},  // a at 4 waits for b to reach 4.
      {{{"a", 4}, {"b", 3}}, "b", true, true},   // b (behind) may catch up.
      {{{"a", 4}, {"b", 3}}, "a", false, true},  // Free-running.
      {{{"a", 9}, {"b", 0}}, "a", false, true},
      {{{"a", 0}}, "a", true, true},  // Single policy: nothing to wait for.
      {{{"a", 5}, {"b", 5}, {"c", 4}}, "b", true, false},
      {{{"a", 5}, {"b", 6}, {"c", 5}}, "a", true, true},  // Ahead of P is fine.
  };
  for (const Case& c : cases) {
    auto d = MayServeNextBatch(c.policy, c.versions, c.barrier);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->may_serve, c.may_serve) << c.policy;
    EXPECT_EQ(d->reason.empty(), c.may_serve);
  }
  auto waiting = MayServeNextBatch("b", Versions{{"a", 5}, {"b", 5}, {"c", 4}}, true);
  EXPECT_EQ(waiting->reason, "version barrier: waiting for c at 4 to reach 5");
  auto unknown = MayServeNextBatch("z", Versions{{"a", 1}}, true);
  EXPECT_EQ(unknown.status().field(), "policy");
}

}  // namespace
}  // namespace sluice::dataflow
