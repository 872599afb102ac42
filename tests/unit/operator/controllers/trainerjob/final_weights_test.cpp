// Which pools keep a finished trainer serving its final weights, and for how long.
#include "operator/controllers/trainerjob/final_weights.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::controllers {
namespace {

using nlohmann::json;

json Pool(const std::string& name, std::vector<std::string> policies, int64_t replicas,
          int64_t ready, json versions) {
  json pool = {{"metadata", {{"name", name}}},
               {"spec", {{"policies", policies}}},
               {"status", {{"replicas", replicas}, {"readyReplicas", ready}}}};
  if (!versions.is_null()) pool["status"]["policies"] = versions;
  return pool;
}

TEST(FinalWeightsTest, PoolsWithoutFinalWeights) {
  const json at100 = json::array({{{"name", "rev"}, {"version", 100}, {"latestVersion", 100}}});
  const json at99 = json::array({{{"name", "rev"}, {"version", 99}, {"latestVersion", 100}}});
  struct Case {
    const char* name;
    std::vector<json> pools;
    std::vector<std::string> want;
  };
  json deleting = Pool("old", {"rev"}, 2, 2, at99);
  deleting["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z";
  const std::vector<Case> cases = {
      {"every replica holds it", {Pool("a", {"rev"}, 3, 3, at100)}, {}},
      {"a ready replica lags", {Pool("a", {"rev"}, 3, 3, at99)}, {"a (version 99 of 100)"}},
      {"a replica still joins",
       {Pool("a", {"rev"}, 3, 2, at100)},
       {"a (1 of 3 replicas not ready)"}},
      {"no version reported yet",
       {Pool("a", {"rev"}, 1, 1, nullptr)},
       {"a (version unknown of 100)"}},
      {"another policy's pool", {Pool("b", {"verifier"}, 2, 0, nullptr)}, {}},
      {"a pool scaled to zero", {Pool("a", {"rev"}, 0, 0, nullptr)}, {}},
      {"a pool being deleted", {deleting}, {}},
      {"two pools, one lagging",
       {Pool("a", {"rev", "verifier"}, 2, 2, at100), Pool("b", {"rev"}, 1, 1, at99)},
       {"b (version 99 of 100)"}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(PoolsWithoutFinalWeights(c.pools, "rev", 100), c.want) << c.name;
  }
}

TEST(FinalWeightsTest, KeepRanksWithinTheGraceWhilePoolsLag) {
  const std::vector<std::string> lagging = {"a (version 99 of 100)"};
  const int64_t done = 1000;
  EXPECT_TRUE(KeepRanksForFinalWeights(lagging, done, done));
  EXPECT_TRUE(KeepRanksForFinalWeights(lagging, done, done + kFinalWeightsGrace.count() - 1));
  EXPECT_FALSE(KeepRanksForFinalWeights(lagging, done, done + kFinalWeightsGrace.count()));
  EXPECT_FALSE(KeepRanksForFinalWeights({}, done, done));
  EXPECT_FALSE(KeepRanksForFinalWeights(lagging, 0, done));  // No completion time: do not wait.
}

}  // namespace
}  // namespace sluice::controllers
