#include "workers/dataflow/algorithms/admission.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::dataflow {
namespace {

TEST(FreshGroupsPerBatchTest, ReplayedShareIsFlooredAndAtLeastOneFreshRemains) {
  EXPECT_EQ(FreshGroupsPerBatch(16, 0.0), 16);
  EXPECT_EQ(FreshGroupsPerBatch(16, 0.25), 12);
  EXPECT_EQ(FreshGroupsPerBatch(10, 0.25), 8);  // floor(2.5) = 2 replayed.
  EXPECT_EQ(FreshGroupsPerBatch(1, 0.95), 1);
  EXPECT_EQ(FreshGroupsPerBatch(4, 0.95), 1);
}

struct AdmissionCase {
  std::string name;
  std::vector<PolicyLoad> policies;
  int64_t train_leases;
  int64_t capacity_groups;
  int64_t max_staleness;
  AdmissionDecision want;
};

TEST(DecideAdmissionTest, Table) {
  const std::vector<AdmissionCase> cases = {
      // maxStaleness 2, 16 groups a batch: 48 groups may be ahead of the trainer.
      {"idle pool, staleness binds", {{"p", 0, 0, 16}}, 0, 8192, 2, {48, "staleness", "p"}},
      {"leases count", {{"p", 0, 0, 16}}, 40, 8192, 2, {8, "staleness", "p"}},
      {"buffer and the batch in training count",
       {{"p", 20, 16, 16}},
       10,
       8192,
       2,
       {2, "staleness", "p"}},
      {"full: never negative", {{"p", 40, 16, 16}}, 10, 8192, 2, {0, "staleness", "p"}},
      {"maxStaleness 0 still feeds one batch",
       {{"p", 0, 0, 16}},
       0,
       8192,
       0,
       {16, "staleness", "p"}},
      {"capacity tighter than the budget", {{"p", 5, 0, 16}}, 0, 20, 2, {15, "capacity", "p"}},
      {"the tightest policy binds",
       {{"solver", 0, 0, 16}, {"verifier", 30, 0, 16}},
       4,
       8192,
       2,
       {14, "staleness", "verifier"}},
      {"replay leaves fewer fresh groups a batch",
       {{"p", 0, 0, 12}},
       0,
       8192,
       2,
       {36, "staleness", "p"}},
      {"a worker one version behind gets one batch less",
       {{"p", 0, 0, 16, 1}},
       0,
       8192,
       2,
       {32, "staleness", "p"}},
      {"a worker past maxStaleness gets nothing until it loads newer weights",
       {{"p", 0, 0, 16, 3}},
       0,
       8192,
       2,
       {0, "staleness", "p"}},
      {"no policies: nothing", {}, 0, 8192, 2, {0, "", ""}},
  };
  for (const AdmissionCase& c : cases) {
    const AdmissionDecision got =
        DecideAdmission(c.policies, c.train_leases, c.capacity_groups, c.max_staleness);
    EXPECT_EQ(got.room, c.want.room) << c.name;
    EXPECT_EQ(got.limit, c.want.limit) << c.name;
    EXPECT_EQ(got.policy, c.want.policy) << c.name;
  }
}

TEST(RolloutDemandTest, LeasesPlusWhatAWorkerCouldLeaseNow) {
  struct Case {
    std::string name;
    RolloutDemandInput in;
    int64_t want;
  };
  // Fields: leases in flight, pending eval, pending train, unleased prompts, admission room.
  const std::vector<Case> cases = {
      {"idle: the whole room", {0, 0, 0, 1000, 48}, 48},
      {"leases and room add up to the limit", {40, 0, 0, 1000, 8}, 48},
      {"trainer behind: the buffer fills the limit", {10, 0, 0, 1000, 0}, 10},
      {"re-queued tasks are train work", {2, 0, 5, 0, 10}, 7},
      {"the end of the data: only what remains", {3, 0, 1, 2, 40}, 6},
      {"eval tasks are not limited by admission", {1, 4, 0, 1000, 0}, 5},
      {"nothing at all", {}, 0},
  };
  for (const Case& c : cases) EXPECT_EQ(RolloutDemand(c.in), c.want) << c.name;
}

}  // namespace
}  // namespace sluice::dataflow
