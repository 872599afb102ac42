// The operator's view of the end of the data: the Dataflow's Exhausted condition and the
// TrainerJob's Starved report (pure functions).
#include "operator/controllers/data_exhaustion.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::controllers {
namespace {

using nlohmann::json;

TEST(DataExhaustionTest, ExhaustedConditionFromTheWorkersReport) {
  struct Case {
    const char* what;
    const char* worker;
    bool exhausted;
    std::vector<std::string> drained;
    const char* message;
  };
  const Case cases[] = {
      {"still feeding",
       R"({"exhausted": false, "epochs": 3, "dataset_done": true})",
       false,
       {},
       ""},
      {"an old worker without the field", R"({"epoch": 1})", false, {}, ""},
      {"not an object", R"([])", false, {}, ""},
      {"exhausted, batches still to serve",
       R"({"exhausted": true, "epochs": 3, "prompts": {"total": 600},
           "policies": {"actor": {"drained": false, "drain_reason": ""}}})",
       true,
       {},
       "the dataset is exhausted: all 600 prompts of its 3 epochs were handed out and no train "
       "task is in flight; the buffered groups are still being served"},
      {"one policy drained",
       R"({"exhausted": true, "epochs": 1, "prompts": {"total": 50},
           "policies": {
             "actor": {"drained": true, "drain_reason": "actor has 1 group of 2"},
             "critic": {"drained": false}}})",
       true,
       {"actor"},
       "the dataset is exhausted: all 50 prompts of its 1 epoch were handed out and no train task "
       "is in flight; drained: actor has 1 group of 2"},
      {"every policy drained, no counts reported",
       R"({"exhausted": true, "policies": {"a": {"drained": true}, "b": {"drained": true}}})",
       true,
       {"a", "b"},
       "the dataset is exhausted: every prompt was handed out and no train task is in flight; "
       "drained: policy a; policy b"},
  };
  for (const Case& c : cases) {
    const DataflowExhaustion e = ExhaustionFromWorker(json::parse(c.worker));
    EXPECT_EQ(e.exhausted, c.exhausted) << c.what;
    EXPECT_EQ(e.drained, c.drained) << c.what;
    EXPECT_EQ(e.message, c.message) << c.what;
  }
}

TEST(DataExhaustionTest, MessageChangesOnlyWhenAnotherPolicyIsDrained) {
  // The controller records DataflowDrained whenever the message changes: the counters that move
  // while batches are still served must not be in it.
  json worker = json::parse(R"({"exhausted": true, "epochs": 2, "prompts": {"total": 10},
      "policies": {"actor": {"drained": false, "buffered_groups": 9, "served_batches": 1}}})");
  const std::string before = ExhaustionFromWorker(worker).message;
  worker["policies"]["actor"]["buffered_groups"] = 1;
  worker["policies"]["actor"]["served_batches"] = 5;
  EXPECT_EQ(ExhaustionFromWorker(worker).message, before);
  worker["policies"]["actor"]["drained"] = true;
  EXPECT_NE(ExhaustionFromWorker(worker).message, before);
}

TEST(DataExhaustionTest, StarvedOnlyForAStarvedRankZero) {
  EXPECT_EQ(StarvedMessage(json::parse(R"({"phase": "Starved", "step": 7,
                "message": "the dataflow can no longer feed policy actor after step 7 of 10: x"})"),
                           "arith"),
            "Dataflow arith: the dataflow can no longer feed policy actor after step 7 of 10: x");
  EXPECT_EQ(StarvedMessage(json::parse(R"({"phase": "Starved", "step": 7})"), "arith"),
            "Dataflow arith: it can no longer feed the trainer (rank 0 is Starved at step 7)");
  EXPECT_FALSE(
      StarvedMessage(json::parse(R"({"phase": "Running", "step": 7})"), "arith").has_value());
  EXPECT_FALSE(StarvedMessage(json::parse(R"({"phase": "Succeeded"})"), "arith").has_value());
  EXPECT_FALSE(StarvedMessage(json(), "arith").has_value());
}

}  // namespace
}  // namespace sluice::controllers
