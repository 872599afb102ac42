// Tests of which evaluation rounds `sluice run` still waits for after every TrainerJob succeeded
// (eval_wait.h), as table cases over TrainerJob and Dataflow objects.
#include "localcluster/cli/eval_wait.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::cli {
namespace {

using nlohmann::json;

json Job(const std::string& name, const std::string& dataflow, const json& version) {
  json j = {{"metadata", {{"name", name}}},
            {"spec", {{"dataflowRef", {{"name", dataflow}}}}},
            {"status", {{"phase", "Succeeded"}}}};
  if (!version.is_null()) j["status"]["version"] = version;
  return j;
}

// `evaluation`: spec.evaluation (null: absent); `evaluated`: status.evaluation.version (null:
// absent).
json Dataflow(const std::string& name, const json& evaluation, const json& evaluated) {
  json j = {{"metadata", {{"name", name}}}, {"spec", json::object()}};
  if (!evaluation.is_null()) j["spec"]["evaluation"] = evaluation;
  if (!evaluated.is_null()) {
    j["status"]["evaluation"] = {{"version", evaluated}, {"accuracy", 0.5}};
  }
  return j;
}

json Every(int64_t n) { return {{"everyVersions", n}, {"split", "eval"}}; }

TEST(EvalWaitTest, PendingEvaluations) {
  struct Case {
    std::string name;
    std::vector<json> jobs;
    std::vector<json> dataflows;
    std::vector<PendingEvaluation> want;
  };
  const std::vector<Case> cases = {
      {"no evaluation configured", {Job("t", "d", 200)}, {Dataflow("d", nullptr, nullptr)}, {}},
      {"final version a multiple, nothing evaluated yet",
       {Job("t", "d", 200)},
       {Dataflow("d", Every(50), nullptr)},
       {{"d", "t", 200, std::nullopt}}},
      {"final version a multiple, an older round evaluated",
       {Job("t", "d", 200)},
       {Dataflow("d", Every(50), 150)},
       {{"d", "t", 200, 150}}},
      {"the final round is in", {Job("t", "d", 200)}, {Dataflow("d", Every(50), 200)}, {}},
      {"a newer round than the final version also ends the wait",
       {Job("t", "d", 200)},
       {Dataflow("d", Every(50), 250)},
       {}},
      {"final version not a multiple: no round will come",
       {Job("t", "d", 205)},
       {Dataflow("d", Every(50), 200)},
       {}},
      {"everyVersions absent: the CRD default 10",
       {Job("t", "d", 30)},
       {Dataflow("d", json::object(), 20)},
       {{"d", "t", 30, 20}}},
      {"everyVersions absent, version not a multiple of 10",
       {Job("t", "d", 35)},
       {Dataflow("d", json::object(), 30)},
       {}},
      {"everyVersions 0 or negative: no evaluation",
       {Job("t", "d", 200)},
       {Dataflow("d", Every(0), nullptr), Dataflow("d", Every(-5), nullptr)},
       {}},
      {"version unknown, zero or mistyped: nothing to wait for",
       {Job("a", "d", nullptr), Job("b", "d", 0), Job("c", "d", "200")},
       {Dataflow("d", Every(10), nullptr)},
       {}},
      {"a TrainerJob of another Dataflow does not count",
       {Job("t", "other", 200)},
       {Dataflow("d", Every(50), nullptr)},
       {}},
      {"spec.evaluation not an object", {Job("t", "d", 200)}, {Dataflow("d", 3, nullptr)}, {}},
      {"several Dataflows and TrainerJobs, in Dataflow then TrainerJob order",
       {Job("t1", "d2", 100), Job("t2", "d1", 40), Job("t3", "d2", 50), Job("t4", "d1", 30)},
       {Dataflow("d1", Every(20), 20), Dataflow("d2", Every(50), 50)},
       {{"d1", "t2", 40, 20}, {"d2", "t1", 100, 50}}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(PendingEvaluations(c.jobs, c.dataflows), c.want) << c.name;
  }
}

TEST(EvalWaitTest, DescribePending) {
  EXPECT_EQ(DescribePending({}), "");
  EXPECT_EQ(DescribePending({{"arith", "t", 200, std::nullopt}}),
            "version 200 of dataflow arith (none evaluated yet)");
  EXPECT_EQ(DescribePending({{"arith", "t", 200, 150}, {"b", "u", 40, 20}}),
            "version 200 of dataflow arith (newest evaluated: 150), version 40 of dataflow b "
            "(newest evaluated: 20)");
  // Two TrainerJobs (solver and verifier) owing one Dataflow's round: named once.
  EXPECT_EQ(DescribePending({{"mas", "solver", 300, 250}, {"mas", "verifier", 300, 250}}),
            "version 300 of dataflow mas (newest evaluated: 250)");
}

}  // namespace
}  // namespace sluice::cli
