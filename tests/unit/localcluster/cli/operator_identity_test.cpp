// Tests of the operator's kubeconfig (operator_identity.h); EnsureOperatorIdentity itself runs in
// every end-to-end test, through `sluice up`.
#include "localcluster/cli/operator_identity.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/yaml/yaml_json.h"

namespace sluice::cli {
namespace {

using nlohmann::json;

TEST(OperatorIdentityTest, KubeconfigKeepsTheServerAndSwapsTheToken) {
  const std::string admin = R"(apiVersion: v1
kind: Config
clusters:
  - name: sluice-local
    cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: Q0E=}
users:
  - name: sluice-local
    user: {token: admin-secret}
contexts:
  - name: sluice-local
    context: {cluster: sluice-local, user: sluice-local}
current-context: sluice-local
)";
  Result<std::string> config = KubeconfigWithToken(admin, "robot-token");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->find("admin-secret"), std::string::npos) << *config;
  Result<std::vector<json>> parsed = yaml::ParseDocuments(*config);
  ASSERT_TRUE(parsed.ok());
  const json& doc = (*parsed)[0];
  EXPECT_EQ(doc["users"][0]["user"], json({{"token", "robot-token"}}));
  EXPECT_EQ(doc["clusters"][0]["cluster"]["server"], "https://127.0.0.1:6443");
  EXPECT_EQ(doc["current-context"], "sluice-local");

  EXPECT_FALSE(KubeconfigWithToken("apiVersion: v1\nkind: Config\n", "t").ok());
}

}  // namespace
}  // namespace sluice::cli
