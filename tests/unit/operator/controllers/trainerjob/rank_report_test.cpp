// Folding rank 0's report into a TrainerJob's status (rank_report.h).
#include "operator/controllers/trainerjob/rank_report.h"

#include <gtest/gtest.h>

namespace sluice::controllers::trainerjob {
namespace trainerjob_rank_report_test {

using nlohmann::json;

TEST(ApplyRankZeroReportTest, SetsProgressCheckpointsAndKnownMetrics) {
  json status = {{"step", 3}, {"version", 3}};
  const json report = json::parse(R"({
    "phase": "Running", "step": 5, "version": 5, "lastCheckpointStep": 4,
    "skippedCheckpoints": [{"step": 2, "reason": "bad crc"}],
    "metrics": {"loss": 0.5, "kl": "n/a", "unknown": 1, "rewardMean": 0.25}})");
  const std::vector<json> fresh = ApplyRankZeroReport(report, status);
  EXPECT_EQ(status["step"], 5);
  EXPECT_EQ(status["version"], 5);
  EXPECT_EQ(status["lastCheckpointStep"], 4);
  EXPECT_EQ(status["lastMetrics"], json({{"loss", 0.5}, {"rewardMean", 0.25}}));
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh[0]["step"], 2);
  // Told once: the same report again brings nothing new.
  EXPECT_TRUE(ApplyRankZeroReport(report, status).empty());
  EXPECT_EQ(status["skippedCheckpoints"].size(), 1u);
}

TEST(ApplyRankZeroReportTest, ANonObjectOrOddTypesChangeNothingHarmful) {
  json status = {{"step", 3}, {"version", 2}};
  EXPECT_TRUE(ApplyRankZeroReport(json(), status).empty());
  EXPECT_EQ(status, json({{"step", 3}, {"version", 2}}));
  (void)ApplyRankZeroReport(json{{"step", "five"}, {"phase", 7}}, status);
  EXPECT_TRUE(status["step"].is_number_integer());
}

}  // namespace trainerjob_rank_report_test
}  // namespace sluice::controllers::trainerjob
