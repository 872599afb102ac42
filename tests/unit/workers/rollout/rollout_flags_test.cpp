// sluice-rollout's flags (rollout_flags.h).
#include "workers/rollout/rollout_flags.h"

#include <gtest/gtest.h>

#include "common/config/parse.h"

namespace sluice::rollout {
namespace rollout_flags_test {

TEST(SplitPolicyListTest, KeepsTheOrderAndDropsEmptyItems) {
  EXPECT_EQ(SplitPolicyList("actor,critic"), (std::vector<std::string>{"actor", "critic"}));
  EXPECT_EQ(SplitPolicyList(",a,,b,"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(SplitPolicyList("").empty());
}

TEST(RolloutFlagSpecTest, TheWorkerContractsFlagsParse) {
  // The arguments the operator gives a replica (desired_pods.h), less the ones with defaults.
  Result<config::Config> cfg =
      config::Parse(RolloutFlagSpec(),
                    std::vector<std::string>{"--dataflow-url=http://arith:8080", "--policies=tiny",
                                             "--policy-config=/etc/sluice/config/rollout.json",
                                             "--token-file=/var/run/sluice/token",
                                             "--address=10.0.0.7", "--port=8080"},
                    config::Environment{});
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->GetString("policies"), "tiny");
  EXPECT_EQ(cfg->GetString("dataflow-url"), "http://arith:8080");
  EXPECT_FALSE(config::Parse(RolloutFlagSpec(), std::vector<std::string>{"--no-such-flag=1"},
                             config::Environment{})
                   .ok());
}

}  // namespace rollout_flags_test
}  // namespace sluice::rollout
