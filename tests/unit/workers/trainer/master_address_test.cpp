// Rank 0's address for the rendezvous: passed through where DNS decides, looked up in the local
// cluster's hosts file until its entry appears, and an error naming the flag when it does not.
#include "workers/trainer/master_address.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace sluice::trainer {
namespace {

using std::chrono::milliseconds;

constexpr char kMaster[] = "job-0.job.default.svc";

class MasterAddressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/master_address_" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    hosts_ = dir_ + "/hosts";
    std::ofstream(hosts_) << "# Written by sluice-node\n127.0.5.1 df.default.svc\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_, hosts_;
  SystemClock& clock_ = SystemClock::Instance();
};

TEST_F(MasterAddressTest, AnAddressOrANameWithoutAHostsFileIsPassedOn) {
  EXPECT_EQ(*ResolveMasterAddress("10.0.0.7", hosts_, milliseconds(0), {}, clock_), "10.0.0.7");
  EXPECT_EQ(*ResolveMasterAddress("::1", hosts_, milliseconds(0), {}, clock_), "::1");
  EXPECT_EQ(*ResolveMasterAddress(kMaster, "", milliseconds(0), {}, clock_), kMaster);
}

// The gang's ranks start together: rank 0's entry may appear after rank 1 first looks.
TEST_F(MasterAddressTest, TheLookupIsRepeatedUntilTheEntryAppears) {
  std::thread node_agent([&] {
    std::this_thread::sleep_for(milliseconds(300));
    std::ofstream(hosts_, std::ios::app) << "127.0.5.2 " << kMaster << "\n";
  });
  const Result<std::string> ip =
      ResolveMasterAddress(kMaster, hosts_, milliseconds(10000), {}, clock_, milliseconds(20));
  node_agent.join();
  ASSERT_TRUE(ip.ok()) << ip.status().ToString();
  EXPECT_EQ(*ip, "127.0.5.2");
}

TEST_F(MasterAddressTest, AnEntryThatNeverAppearsIsAnErrorNamingTheFlag) {
  const auto start = std::chrono::steady_clock::now();
  const Result<std::string> ip =
      ResolveMasterAddress(kMaster, hosts_, milliseconds(200), {}, clock_, milliseconds(20));
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(200));
  ASSERT_FALSE(ip.ok());
  EXPECT_EQ(ip.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(ip.status().field(), "master-addr");
  EXPECT_EQ(
      ip.status().message().rfind(
          std::string("flag --master-addr: ") + kMaster + " is not in the hosts file " + hosts_, 0),
      0u)
      << ip.status().message();
}

TEST_F(MasterAddressTest, StoppingEndsTheWait) {
  CancellationSource stop;
  stop.Cancel();
  const Result<std::string> ip =
      ResolveMasterAddress(kMaster, hosts_, milliseconds(10000), stop.Token(), clock_);
  EXPECT_EQ(ip.status().code(), StatusCode::kCancelled);
}

}  // namespace
}  // namespace sluice::trainer
