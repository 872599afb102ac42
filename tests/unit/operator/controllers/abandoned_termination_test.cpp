#include "operator/controllers/abandoned_termination.h"

#include <gtest/gtest.h>

namespace sluice::controllers {
namespace {

using nlohmann::json;

// 2027-01-15T08:00:00Z in Unix seconds.
constexpr int64_t kDeadline = 1800000000;

json Pod(const char* deletion, const char* ready) {
  json pod = {{"metadata", {{"name", "pool-west-0"}}}, {"status", {{"phase", "Running"}}}};
  if (deletion != nullptr) pod["metadata"]["deletionTimestamp"] = deletion;
  if (ready != nullptr) {
    pod["status"]["conditions"] = json::array(
        {{{"type", "PodScheduled"}, {"status", "True"}}, {{"type", "Ready"}, {"status", ready}}});
  }
  return pod;
}

TEST(TerminationAbandonedTest, OnlyANotReadyPodPastItsDeadlineByTheGracePeriod) {
  struct Case {
    const char* name;
    json pod;
    int64_t now;
    bool abandoned;
  };
  const Case cases[] = {
      {"not terminating", Pod(nullptr, "False"), kDeadline + 1000, false},
      {"not ready, grace not over", Pod("2027-01-15T08:00:00Z", "False"), kDeadline + 119, false},
      {"not ready, grace over", Pod("2027-01-15T08:00:00Z", "False"), kDeadline + 120, true},
      {"no Ready condition at all", Pod("2027-01-15T08:00:00Z", nullptr), kDeadline + 500, true},
      {"ready: its kubelet still reports", Pod("2027-01-15T08:00:00Z", "True"), kDeadline + 500,
       false},
      {"before the deadline", Pod("2027-01-15T08:00:00Z", "False"), kDeadline - 10, false},
      {"unparsable timestamp", Pod("yesterday", "False"), kDeadline + 500, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(TerminationAbandoned(c.pod, c.now, 120), c.abandoned) << c.name;
  }
  EXPECT_TRUE(TerminationAbandoned(Pod("2027-01-15T08:00:00Z", "False"), kDeadline, 0));
}

}  // namespace
}  // namespace sluice::controllers
