// sluice-dataflow's flags (dataflow_flags.h): the lease long polls' cap and its default.
#include "workers/dataflow/settings/dataflow_flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/config/parse.h"

namespace sluice::dataflow {
namespace dataflow_flags_test {

TEST(DefaultMaxWaitingLeasesTest, KeepsAQuarterOfTheThreadsAndAtLeastFour) {
  struct Case {
    size_t threads;
    size_t waiting;
  };
  for (const Case& c :
       std::vector<Case>{{1, 1}, {4, 1}, {5, 1}, {8, 4}, {16, 12}, {64, 48}, {256, 192}}) {
    EXPECT_EQ(DefaultMaxWaitingLeases(c.threads), c.waiting) << c.threads << " threads";
  }
}

Result<DataflowFlagSettings> Resolve(std::vector<std::string> args) {
  args.push_back("--wal-dir=/tmp/sluice-flags-test-wal");
  Result<config::Config> cfg = config::Parse(DataflowFlagSpec(), args, config::Environment{});
  if (!cfg.ok()) return cfg.status();
  return ResolveDataflowFlags(*cfg, nullptr);
}

TEST(DataflowFlagsTest, MaxWaitingLeasesComesFromTheFlagOrTheWorkerThreads) {
  Result<DataflowFlagSettings> by_default = Resolve({});
  ASSERT_TRUE(by_default.ok()) << by_default.status().ToString();
  EXPECT_EQ(by_default->service.max_waiting_leases, 12u);  // 16 worker threads by default.
  Result<DataflowFlagSettings> threads = Resolve({"--worker-threads=64"});
  ASSERT_TRUE(threads.ok()) << threads.status().ToString();
  EXPECT_EQ(threads->service.max_waiting_leases, 48u);
  Result<DataflowFlagSettings> set = Resolve({"--worker-threads=64", "--max-waiting-leases=7"});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->service.max_waiting_leases, 7u);
  for (const char* bad : {"--max-waiting-leases=-1", "--max-waiting-leases=16"}) {
    Result<DataflowFlagSettings> refused = Resolve({bad});
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().field(), "--max-waiting-leases");
    EXPECT_NE(refused.status().message().find("below --worker-threads (16)"), std::string::npos)
        << refused.status().message();
  }
}

}  // namespace dataflow_flags_test
}  // namespace sluice::dataflow
