// Tests of the CRD create-or-update decision and the Established check (crd_install.h).
#include "localcluster/cli/crd_install.h"

#include <gtest/gtest.h>

namespace sluice::cli {
namespace {

using nlohmann::json;

json Desired() {
  return json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.dev", "labels": {"a": "b"}},
    "spec": {"group": "example.dev", "scope": "Namespaced",
             "names": {"plural": "widgets", "kind": "Widget"},
             "versions": [{"name": "v1", "served": true, "storage": true,
                           "schema": {"openAPIV3Schema": {"type": "object"}}}]}})");
}

TEST(CrdInstallTest, CreateWhenAbsent) {
  EXPECT_EQ(DecideCrdAction(nullptr, Desired()), CrdAction::kCreate);
}

TEST(CrdInstallTest, UnchangedDespiteServerFields) {
  json stored = Desired();
  stored["metadata"]["resourceVersion"] = "17";
  stored["metadata"]["uid"] = "u";
  stored["metadata"]["labels"]["extra"] = "x";  // Metadata is not compared.
  stored["status"] = {{"conditions", json::array()}};
  stored["spec"]["conversion"] = {{"strategy", "None"}};  // kube's defaults.
  stored["spec"]["preserveUnknownFields"] = false;
  EXPECT_EQ(DecideCrdAction(&stored, Desired()), CrdAction::kUnchanged);
}

TEST(CrdInstallTest, UpdateWhenSpecDiffers) {
  json stored = Desired();
  stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"] = {
      {"old", {{"type", "string"}}}};
  EXPECT_EQ(DecideCrdAction(&stored, Desired()), CrdAction::kUpdate);
  stored = Desired();
  stored["spec"]["preserveUnknownFields"] = true;  // Not a default: a real difference.
  EXPECT_EQ(DecideCrdAction(&stored, Desired()), CrdAction::kUpdate);
  json desired = Desired();
  desired["spec"]["conversion"] = {{"strategy", "Webhook"}};
  stored = Desired();
  stored["spec"]["conversion"] = {{"strategy", "None"}};
  EXPECT_EQ(DecideCrdAction(&stored, desired), CrdAction::kUpdate);
}

TEST(CrdInstallTest, Established) {
  json crd = Desired();
  EXPECT_FALSE(IsEstablished(crd));
  crd["status"]["conditions"] = json::array({{{"type", "NamesAccepted"}, {"status", "True"}},
                                             {{"type", "Established"}, {"status", "False"}}});
  EXPECT_FALSE(IsEstablished(crd));
  crd["status"]["conditions"][1]["status"] = "True";
  EXPECT_TRUE(IsEstablished(crd));
}

TEST(CrdInstallTest, EmbeddedCrdsAreTheFourSluiceKinds) {
  std::vector<json> crds = EmbeddedCrds();
  std::vector<std::string> names;
  for (const json& crd : crds) names.push_back(crd["metadata"]["name"]);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"dataflows.sluice.dev", "policies.sluice.dev",
                                             "rolloutpools.sluice.dev", "trainerjobs.sluice.dev"}));
  EXPECT_EQ(CrdResource().ApiVersion(), "apiextensions.k8s.io/v1");
  EXPECT_FALSE(CrdResource().namespaced);
}

}  // namespace
}  // namespace sluice::cli
