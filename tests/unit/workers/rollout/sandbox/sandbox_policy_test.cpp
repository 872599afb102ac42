#include "workers/rollout/sandbox/sandbox_policy.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace sluice::rollout {
namespace {

TEST(SandboxPolicyTest, IsolationNamesRoundTrip) {
  for (SandboxIsolation isolation : {SandboxIsolation::kNamespaces, SandboxIsolation::kBestEffort,
                                     SandboxIsolation::kLimitsOnly}) {
    EXPECT_EQ(ParseSandboxIsolation(SandboxIsolationName(isolation)), isolation);
  }
  EXPECT_EQ(ParseSandboxIsolation("none"), std::nullopt);
  EXPECT_EQ(ParseSandboxIsolation(""), std::nullopt);
}

TEST(SandboxPolicyTest, TheDefaultHidesTokensConfigurationAndWeights) {
  const SandboxPolicy policy;
  EXPECT_EQ(policy.isolation, SandboxIsolation::kNamespaces);
  for (const char* dir : {"/run", "/var/run", "/etc/sluice", "/var/lib/sluice", "/dev/shm"}) {
    EXPECT_NE(std::find(policy.hidden_directories.begin(), policy.hidden_directories.end(), dir),
              policy.hidden_directories.end())
        << dir;
  }
  EXPECT_TRUE(ValidateSandboxPolicy(policy).ok());
}

TEST(SandboxPolicyTest, ValidationNamesTheBadDirectory) {
  SandboxPolicy policy;
  policy.hidden_directories = {"/run", "relative/dir"};
  Status status = ValidateSandboxPolicy(policy);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.field(), "hidden_directories[1]");
  policy.hidden_directories = {"//"};
  status = ValidateSandboxPolicy(policy);
  EXPECT_EQ(status.field(), "hidden_directories[0]");
  EXPECT_NE(status.message().find("root"), std::string::npos) << status.message();
  policy.hidden_directories = {""};
  EXPECT_FALSE(ValidateSandboxPolicy(policy).ok());
}

TEST(SandboxPolicyTest, AWorkerHidesItsOwnDirectoriesAndTokenFileDirectories) {
  std::vector<std::string> expected = SandboxPolicy::DefaultHiddenDirectories();
  expected.push_back("/var/lib/models");
  expected.push_back("/secrets/env");
  const std::vector<std::string> hidden = WorkerHiddenDirectories(
      {"/var/lib/models/", "", "relative", "/", "/run"},
      {"/var/run/sluice/token/token", "/secrets/env/token", "token", "/token"});
  // /var/run/sluice/token is under the default /var/run but listed too: /var/run may be a
  // real directory or a link to /run.
  expected.insert(expected.end() - 1, "/var/run/sluice/token");
  EXPECT_EQ(hidden, expected);
}

TEST(SandboxPolicyTest, TheProcessWidePolicyIsWhatWasSet) {
  const SandboxPolicy before = CurrentSandboxPolicy();
  SandboxPolicy policy;
  policy.isolation = SandboxIsolation::kBestEffort;
  policy.hidden_directories = {"/srv/tokens"};
  SetSandboxPolicy(policy);
  EXPECT_EQ(CurrentSandboxPolicy().isolation, SandboxIsolation::kBestEffort);
  EXPECT_EQ(CurrentSandboxPolicy().hidden_directories, std::vector<std::string>{"/srv/tokens"});
  SetSandboxPolicy(before);
  EXPECT_EQ(CurrentSandboxPolicy().isolation, before.isolation);
}

}  // namespace
}  // namespace sluice::rollout
