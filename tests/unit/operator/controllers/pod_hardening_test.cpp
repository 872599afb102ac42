// Tests of the restricted defaults on the operator's pods and of the templates that loosen them.
#include "operator/controllers/pod_hardening.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sluice::controllers {
namespace {

using nlohmann::json;

json RestrictedContainer() {
  return json::parse(R"({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]},
      "readOnlyRootFilesystem": true})");
}

json RestrictedPod() {
  return json::parse(R"({"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
      "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}})");
}

TEST(PodHardeningTest, AddsTheRestrictedProfilesFieldsAndKeepsWhatIsSet) {
  json spec = json::parse(R"({"containers": [{"name": "a"},
      {"name": "b", "securityContext": {"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}],
      "initContainers": [{"name": "init"}]})");
  HardenPodSpec(spec);
  EXPECT_EQ(spec["automountServiceAccountToken"], false);
  EXPECT_EQ(spec["securityContext"], RestrictedPod());
  EXPECT_EQ(spec["containers"][0]["securityContext"], RestrictedContainer());
  // Set values win.
  EXPECT_EQ(spec["containers"][1]["securityContext"]["capabilities"]["add"],
            json::array({"NET_BIND_SERVICE"}));
  EXPECT_EQ(spec["initContainers"][0]["securityContext"], RestrictedContainer());

  json own = json::parse(R"({"automountServiceAccountToken": true,
      "securityContext": {"runAsUser": 1000}, "containers": []})");
  HardenPodSpec(own);
  EXPECT_EQ(own["automountServiceAccountToken"], true);
  EXPECT_EQ(own["securityContext"]["runAsUser"], 1000);
  EXPECT_EQ(own["securityContext"]["runAsNonRoot"], true);
}

TEST(PodHardeningTest, EveryContainerGetsAReadOnlyRootUnlessItSaysOtherwise) {
  json spec = json::parse(R"({"containers": [{"name": "a"},
      {"name": "b", "securityContext": {"readOnlyRootFilesystem": false}}]})");
  HardenPodSpec(spec);
  EXPECT_EQ(spec["containers"][0]["securityContext"]["readOnlyRootFilesystem"], true);
  EXPECT_EQ(spec["containers"][1]["securityContext"]["readOnlyRootFilesystem"], false);
  // The rest of b's context is still restricted.
  EXPECT_EQ(spec["containers"][1]["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(spec["containers"][1]["securityContext"]["capabilities"],
            json::parse(R"({"drop": ["ALL"]})"));
}

TEST(PodHardeningTest, CapabilitiesAreDefaultedFieldByField) {
  json spec = json::parse(R"({"containers": [
      {"name": "adds", "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE"]}}},
      {"name": "keeps-all", "securityContext": {"capabilities": {"drop": []}}}]})");
  HardenPodSpec(spec);
  // Adding one capability still drops the others.
  EXPECT_EQ(spec["containers"][0]["securityContext"]["capabilities"],
            json::parse(R"({"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]})"));
  // An explicit empty drop list keeps the runtime's default set.
  EXPECT_EQ(spec["containers"][1]["securityContext"]["capabilities"],
            json::parse(R"({"drop": []})"));
}

TEST(PodHardeningTest, NoEscalationDefaultWhereKubernetesForbidsIt) {
  json spec = json::parse(R"({"containers": [
      {"name": "privileged", "securityContext": {"privileged": true}},
      {"name": "sys-admin", "securityContext": {"capabilities": {"add": ["CAP_SYS_ADMIN"]}}},
      {"name": "not-privileged", "securityContext": {"privileged": false}}]})");
  HardenPodSpec(spec);
  // allowPrivilegeEscalation: false next to either is refused by the API server.
  EXPECT_FALSE(spec["containers"][0]["securityContext"].contains("allowPrivilegeEscalation"));
  EXPECT_FALSE(spec["containers"][1]["securityContext"].contains("allowPrivilegeEscalation"));
  EXPECT_EQ(spec["containers"][2]["securityContext"]["allowPrivilegeEscalation"], false);
  // The other defaults still apply.
  EXPECT_EQ(spec["containers"][0]["securityContext"]["readOnlyRootFilesystem"], true);
  EXPECT_EQ(spec["containers"][1]["securityContext"]["capabilities"]["drop"], json::array({"ALL"}));
}

TEST(PodHardeningTest, TemplateSecurityContextsWinFieldByField) {
  const json tmpl = json::parse(R"({
      "securityContext": {"runAsUser": 1000, "supplementalGroups": [3000],
                          "seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}},
      "containerSecurityContext": {"readOnlyRootFilesystem": false, "runAsGroup": 7,
                                   "capabilities": {"add": ["NET_ADMIN"]}}})");
  json spec = json::parse(R"({"containers": [{"name": "worker"}],
      "initContainers": [{"name": "init"}]})");
  ApplyTemplateSecurityContexts(tmpl, spec);
  HardenPodSpec(spec);
  EXPECT_EQ(spec["securityContext"],
            json::parse(R"({"runAsUser": 1000, "supplementalGroups": [3000],
      "seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"},
      "runAsNonRoot": true, "runAsGroup": 65532, "fsGroup": 65532})"));
  EXPECT_EQ(spec["containers"][0]["securityContext"],
            json::parse(R"({"readOnlyRootFilesystem": false,
      "runAsGroup": 7, "capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]},
      "allowPrivilegeEscalation": false})"));
  // The container context is the worker container's: init containers keep the defaults.
  EXPECT_EQ(spec["initContainers"][0]["securityContext"], RestrictedContainer());
}

TEST(PodHardeningTest, TemplateWithoutSecurityContextsChangesNothing) {
  json spec = json::parse(R"({"containers": [{"name": "worker"}]})");
  const json plain = spec;
  ApplyTemplateSecurityContexts(json::parse(R"({"env": []})"), spec);
  ApplyTemplateSecurityContexts(json(), spec);
  EXPECT_EQ(spec, plain);
  HardenPodSpec(spec);
  EXPECT_EQ(spec["securityContext"], RestrictedPod());
  EXPECT_EQ(spec["containers"][0]["securityContext"], RestrictedContainer());
}

}  // namespace
}  // namespace sluice::controllers
