#include "operator/controllers/trainerjob/skipped_checkpoints.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::controllers {
namespace {

using nlohmann::json;

TEST(MergeSkippedCheckpointsTest, TellsEachSkippedCheckpointOnce) {
  const json first = json::parse(R"([{"step": 40, "reason": "weights.pt does not match"}])");
  SkippedCheckpointsMerge m = MergeSkippedCheckpoints(nullptr, first);
  EXPECT_EQ(m.status, first);
  ASSERT_EQ(m.fresh.size(), 1U);
  EXPECT_EQ(m.fresh[0]["step"], 40);

  // The same report on the next reconcile: nothing new.
  m = MergeSkippedCheckpoints(m.status, first);
  EXPECT_EQ(m.status, first);
  EXPECT_TRUE(m.fresh.empty());

  // A later restart skips another; the earlier one stays told.
  const json second = json::parse(R"([{"step": 60, "reason": "state.json is missing"}])");
  m = MergeSkippedCheckpoints(m.status, second);
  EXPECT_EQ(m.status.size(), 2U);
  ASSERT_EQ(m.fresh.size(), 1U);
  EXPECT_EQ(m.fresh[0]["step"], 60);
}

TEST(MergeSkippedCheckpointsTest, IgnoresMalformedEntriesAndBoundsTheStatus) {
  const json reported = json::parse(
      R"([{"reason": "no step"}, {"step": "40"}, 7, {"step": 50}, {"step": 51, "reason": 3}])");
  SkippedCheckpointsMerge m = MergeSkippedCheckpoints(json::object(), reported);
  EXPECT_EQ(m.status, json::parse(R"([{"step": 50, "reason": ""}, {"step": 51, "reason": ""}])"));
  EXPECT_EQ(m.fresh.size(), 2U);
  EXPECT_TRUE(MergeSkippedCheckpoints(m.status, "not a list").fresh.empty());

  json many = json::array();
  for (int i = 0; i < 40; ++i) many.push_back({{"step", i}, {"reason", std::string(2000, 'r')}});
  m = MergeSkippedCheckpoints(nullptr, many);
  ASSERT_EQ(m.status.size(), kMaxSkippedCheckpoints);
  EXPECT_EQ(m.status.front()["step"], 40 - static_cast<int>(kMaxSkippedCheckpoints));
  EXPECT_EQ(m.status.back()["reason"].get<std::string>().size(), kMaxSkippedReason);
  EXPECT_EQ(m.fresh.size(), 40U);
}

}  // namespace
}  // namespace sluice::controllers
