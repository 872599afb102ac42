// Tests of the restricted defaults on the operator's pods.
#include "operator/controllers/pod_hardening.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sluice::controllers {
namespace {

using nlohmann::json;

TEST(PodHardeningTest, AddsTheRestrictedProfilesFieldsAndKeepsWhatIsSet) {
  json spec = json::parse(R"({"containers": [{"name": "a"},
      {"name": "b", "securityContext": {"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}],
      "initContainers": [{"name": "init"}]})");
  HardenPodSpec(spec);
  EXPECT_EQ(spec["automountServiceAccountToken"], false);
  EXPECT_EQ(spec["securityContext"], json::parse(R"({"runAsNonRoot": true, "runAsUser": 65532,
      "runAsGroup": 65532, "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}})"));
  EXPECT_EQ(
      spec["containers"][0]["securityContext"],
      json::parse(R"({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}})"));
  // Set values win.
  EXPECT_EQ(spec["containers"][1]["securityContext"]["capabilities"]["add"],
            json::array({"NET_BIND_SERVICE"}));
  EXPECT_EQ(spec["initContainers"][0]["securityContext"]["allowPrivilegeEscalation"], false);

  json own = json::parse(R"({"automountServiceAccountToken": true,
      "securityContext": {"runAsUser": 1000}, "containers": []})");
  HardenPodSpec(own);
  EXPECT_EQ(own["automountServiceAccountToken"], true);
  EXPECT_EQ(own["securityContext"]["runAsUser"], 1000);
  EXPECT_EQ(own["securityContext"]["runAsNonRoot"], true);
}

}  // namespace
}  // namespace sluice::controllers
