// Smoke test of `sluice-dataflow --dataflow-manifest`: the real binary configured from an
// example Dataflow serves /readyz and reports the manifest's policies and settings, explicit flags
// override the manifest, and an invalid manifest refuses to start (exit 2) listing every field
// error.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/http/client.h"
#include "tests/e2e/apiserver_process.h"
#include "tests/e2e/dataflow_process.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;

class DataflowManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice-dataflow-manifest-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

TEST_F(DataflowManifestTest, ServesFromTheSinglePolicyExample) {
  DataflowProcess p(dir_.string());
  ASSERT_TRUE(p.Start({"--dataflow-manifest=" + SourceDir() + "/examples/single-policy-grpo.yaml",
                       "--capacity=100"}))
      << p.Log();
  const json status = p.Status();
  ASSERT_TRUE(status.is_object()) << p.Log();
  const std::string text = status.dump();
  EXPECT_NE(text.find("\"tiny\""), std::string::npos) << text;  // spec.workflow.roles' policy.
  EXPECT_NE(p.Log().find("\"dataflow\":\"arithmetic\""), std::string::npos) << p.Log();
  // Manifest: 20000 rows with 2% held out for eval, by problem: only the surplus rows of the last
  // held-out problem are dropped from training (operands up to 50 repeat a problem a few times).
  EXPECT_EQ(status["prompts"]["total"].get<int64_t>() +
                status["prompts"]["dropped_duplicates"].get<int64_t>(),
            19600)
      << text;
  EXPECT_LT(status["prompts"]["dropped_duplicates"].get<int64_t>(), 10) << text;
  // An explicit flag overrides the manifest (whose 65536 trajectories would be 8192 groups).
  EXPECT_EQ(status["capacity_groups"], 100) << text;
  // Tasks carry the manifest's group size, sampling and workflow.
  Result<http::Response> lease = p.client().Post(
      "/v1/leases", json{{"worker_id", "w"}, {"capacity", 1}}.dump(), "application/json");
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  ASSERT_EQ(lease->status, 200) << lease->body;
  const json tasks = json::parse(lease->body)["tasks"];
  ASSERT_EQ(tasks.size(), 1u) << lease->body;
  EXPECT_EQ(tasks[0]["samples"], 8);
  EXPECT_EQ(tasks[0]["sampling"]["maxNewTokens"], 8);
  EXPECT_EQ(tasks[0]["workflow"]["reward"]["type"], "exact-match");
  EXPECT_EQ(p.Kill(SIGTERM), 0) << p.Log();
}

TEST_F(DataflowManifestTest, InvalidManifestRefusesToStartListingEveryError) {
  const std::string manifest = (dir_ / "bad.yaml").string();
  std::ofstream(manifest) << "apiVersion: sluice.dev/v1alpha1\nkind: Dataflow\n"
                             "metadata: {name: bad}\n"
                             "spec:\n  dataset: {builtin: {}}\n"
                             "  workflow: {roles: [{name: policy, policy: p}]}\n"
                             "  sampling: {groupSize: 0}\n  buffer: {order: lifo}\n";
  DataflowProcess p(dir_.string());
  EXPECT_FALSE(p.Start({"--dataflow-manifest=" + manifest}));
  ASSERT_TRUE(WIFEXITED(p.exit_status()));
  EXPECT_EQ(WEXITSTATUS(p.exit_status()), 2);
  const std::string log = p.Log();
  EXPECT_NE(log.find("spec.sampling.groupSize"), std::string::npos) << log;
  EXPECT_NE(log.find("spec.buffer.order"), std::string::npos) << log;
}

}  // namespace
}  // namespace sluice::e2e
