// RecentIds: bounded memory, oldest forgotten first, duplicates ignored, JSON round trip.
#include "workers/dataflow/recent_ids.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::dataflow {
namespace {

TEST(RecentIdsTest, ForgetsTheOldestBeyondCapacity) {
  RecentIds ids(3);
  for (const char* id : {"a", "b", "c"}) ids.Insert(id);
  ids.Insert("b");  // Present: no effect on the order.
  EXPECT_EQ(ids.size(), 3u);
  ids.Insert("d");
  EXPECT_FALSE(ids.Contains("a"));
  EXPECT_TRUE(ids.Contains("b"));
  EXPECT_TRUE(ids.Contains("d"));
  EXPECT_EQ(ids.forgotten(), 1);
  for (int i = 0; i < 1000; ++i) ids.Insert("x" + std::to_string(i));
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids.ToJson(), (nlohmann::json{"x997", "x998", "x999"}));
}

TEST(RecentIdsTest, JsonRoundTripKeepsTheNewest) {
  RecentIds ids(4);
  for (const char* id : {"a", "b", "c", "d"}) ids.Insert(id);
  Result<RecentIds> same = RecentIds::FromJson(ids.ToJson(), 4);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->ToJson(), ids.ToJson());
  Result<RecentIds> smaller = RecentIds::FromJson(ids.ToJson(), 2);
  ASSERT_TRUE(smaller.ok());
  EXPECT_EQ(smaller->ToJson(), (nlohmann::json{"c", "d"}));
  RecentIds moved = std::move(smaller).value();
  EXPECT_TRUE(moved.Contains("d"));  // The index survives the move.
  moved.Insert("e");
  EXPECT_FALSE(moved.Contains("c"));
  EXPECT_EQ(RecentIds::FromJson(nlohmann::json{{"a", 1}}, 2).status().code(),
            StatusCode::kCorruption);
  EXPECT_EQ(RecentIds::FromJson(nlohmann::json{"a", 1}, 2).status().code(),
            StatusCode::kCorruption);
}

}  // namespace
}  // namespace sluice::dataflow
