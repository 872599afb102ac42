// TrainerStatusBoard's metrics: the data-wait series RolloutPool autoscaling reads accumulate the
// waits, and every sluice_trainer_* name the example manifests' queries use is registered (the
// source scan of tests/unit/operator/autoscale/example_queries_test.cpp checks all names).
#include "workers/trainer/trainer_status.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/metrics/registry.h"
#include "tests/unit/common/example_queries.h"
#include "tests/unit/common/scraped_metric.h"

namespace sluice::trainer {
namespace {

using test_support::Scraped;

TEST(TrainerStatusBoardTest, ExportsTheDataWaitTheExamplesScaleOn) {
  metrics::Registry registry;
  TrainerStatusBoard board(&registry, "qwen3", 0);
  board.RecordDataWait(1.5);
  board.RecordDataWait(0.5);
  StepFigures f;
  f.step = 1;
  f.version = 1;
  f.data_wait_fraction = 0.25;
  board.RecordStep(f);
  EXPECT_EQ(Scraped(registry, "sluice_trainer_data_wait_seconds_total", {"qwen3"}), 2.0);
  EXPECT_EQ(Scraped(registry, "sluice_trainer_data_wait_fraction", {"qwen3"}), 0.25);

  std::map<std::string, std::string> registered;
  for (const metrics::FamilySnapshot& family : registry.Collect()) {
    registered[family.name] = "registry";
  }
  const test_support::ExampleQuerySet examples = test_support::ExampleQueries();
  EXPECT_TRUE(examples.errors.empty()) << testing::PrintToString(examples.errors);
  int checked = 0;
  for (const test_support::ExampleQuery& q : examples.queries) {
    for (const std::string& name : test_support::MetricNamesInQuery(q.query)) {
      if (name.rfind("sluice_trainer_", 0) != 0) continue;
      ++checked;
      EXPECT_TRUE(test_support::IsExportedName(name, registered))
          << q.file << " " << q.field << ": " << name << " is not registered by the trainer";
    }
  }
  EXPECT_GE(checked, 1) << "examples/gpu-cluster-qwen3.yaml scales on the trainer's data wait";
}

TEST(TrainerStatusBoardTest, ReportsTheCheckpointsAResumeSkipped) {
  TrainerStatusBoard board(nullptr, "qwen3", 0);
  EXPECT_FALSE(board.StatusJson().contains("skippedCheckpoints"));
  EXPECT_FALSE(board.StatusJson().contains("lastCheckpointStep"));
  board.RecordCheckpointFallback(40, "weights.pt does not match its checksum");
  board.RecordCheckpoint(30);
  const nlohmann::json s = board.StatusJson();
  EXPECT_EQ(s["lastCheckpointStep"], 30);
  ASSERT_EQ(s["skippedCheckpoints"].size(), 1U) << s.dump();
  EXPECT_EQ(s["skippedCheckpoints"][0]["step"], 40);
  EXPECT_EQ(s["skippedCheckpoints"][0]["reason"], "weights.pt does not match its checksum");
}

}  // namespace
}  // namespace sluice::trainer
