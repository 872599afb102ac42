// Pod Security admission (pod_security.h) around the checks: namespace labels as kube reads and
// rejects them, workload templates, and the warnings of a namespace that tightens enforcement.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "localcluster/apiserver/pod_security.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;
using Strings = std::vector<std::string>;
constexpr PodSecurityLevel kPrivileged = PodSecurityLevel::kPrivileged;
constexpr PodSecurityLevel kBaseline = PodSecurityLevel::kBaseline;
constexpr PodSecurityLevel kRestricted = PodSecurityLevel::kRestricted;

json Namespace(const json& labels) {
  return {{"apiVersion", "v1"},
          {"kind", "Namespace"},
          {"metadata", {{"name", "ml"}, {"labels", labels}}}};
}

NamespacePodSecurity Policy(PodSecurityLevel enforce, const std::string& enforce_version,
                            PodSecurityLevel warn, const std::string& warn_version,
                            PodSecurityLevel audit = kPrivileged,
                            const std::string& audit_version = "latest") {
  NamespacePodSecurity p;
  p.enforce = enforce;
  p.enforce_version = enforce_version;
  p.warn = warn;
  p.warn_version = warn_version;
  p.audit = audit;
  p.audit_version = audit_version;
  return p;
}

const std::string kLevelError =
    "Invalid value: \"strict\": must be one of privileged, baseline, restricted";
const std::string kEnforceField = "metadata.labels[pod-security.kubernetes.io/enforce]";

// ---- Labels ----

TEST(PodSecurityNamespaceTest, LabelsAsKubeReadsThem) {
  struct Case {
    std::string name;
    json labels;
    NamespacePodSecurity want;
  };
  const std::vector<Case> cases = {
      {"no labels", json::object(), NamespacePodSecurity{}},
      {"null labels", nullptr, NamespacePodSecurity{}},
      {"other labels", {{"team", "ml"}}, NamespacePodSecurity{}},
      {"enforce sets warn too",
       {{"pod-security.kubernetes.io/enforce", "restricted"}},
       Policy(kRestricted, "latest", kRestricted, "latest")},
      {"and warn's version",
       {{"pod-security.kubernetes.io/enforce", "baseline"},
        {"pod-security.kubernetes.io/enforce-version", "v1.30"}},
       Policy(kBaseline, "v1.30", kBaseline, "v1.30")},
      {"but not over a warn-version label",
       {{"pod-security.kubernetes.io/enforce", "baseline"},
        {"pod-security.kubernetes.io/enforce-version", "v1.30"},
        {"pod-security.kubernetes.io/warn-version", "v1.29"}},
       Policy(kBaseline, "v1.30", kBaseline, "v1.29")},
      {"nor over a warn label",
       {{"pod-security.kubernetes.io/enforce", "restricted"},
        {"pod-security.kubernetes.io/warn", "baseline"}},
       Policy(kRestricted, "latest", kBaseline, "latest")},
      {"warn stricter than enforce",
       {{"pod-security.kubernetes.io/enforce", "baseline"},
        {"pod-security.kubernetes.io/warn", "restricted"},
        {"pod-security.kubernetes.io/warn-version", "v1.0"}},
       Policy(kBaseline, "latest", kRestricted, "v1.0")},
      {"audit",
       {{"pod-security.kubernetes.io/audit", "restricted"},
        {"pod-security.kubernetes.io/audit-version", "v1.100"}},
       Policy(kPrivileged, "latest", kPrivileged, "latest", kRestricted, "v1.100")},
      {"enforce privileged",
       {{"pod-security.kubernetes.io/enforce", "privileged"},
        {"pod-security.kubernetes.io/enforce-version", "latest"}},
       NamespacePodSecurity{}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const NamespacePodSecurityLabels read = ReadNamespacePodSecurity(Namespace(c.labels));
    EXPECT_TRUE(read.errors.empty());
    EXPECT_EQ(read.policy, c.want);
    const Result<NamespacePodSecurity> policy = PodSecurityOfNamespace(Namespace(c.labels));
    ASSERT_TRUE(policy.ok()) << policy.status().ToString();
    EXPECT_EQ(*policy, c.want);
  }
}

TEST(PodSecurityNamespaceTest, InvalidLabels) {
  struct Case {
    std::string name;
    json labels;
    std::string field;
    std::string message;
    NamespacePodSecurity fallback;  // What kube evaluates pods with.
  };
  const std::string version_error = "must be \"latest\" or \"v1.x\"";
  const std::vector<Case> cases = {
      {"enforce level fails closed",
       {{"pod-security.kubernetes.io/enforce", "strict"}},
       kEnforceField,
       kLevelError,
       Policy(kRestricted, "latest", kPrivileged, "latest")},
      {"empty level",
       {{"pod-security.kubernetes.io/enforce", ""}},
       kEnforceField,
       "Invalid value: \"\": must be one of privileged, baseline, restricted",
       Policy(kRestricted, "latest", kPrivileged, "latest")},
      {"warn level fails open",
       {{"pod-security.kubernetes.io/warn", "Restricted"}},
       "metadata.labels[pod-security.kubernetes.io/warn]",
       "Invalid value: \"Restricted\": must be one of privileged, baseline, restricted",
       NamespacePodSecurity{}},
      {"audit level fails open",
       {{"pod-security.kubernetes.io/audit", "all"}},
       "metadata.labels[pod-security.kubernetes.io/audit]",
       "Invalid value: \"all\": must be one of privileged, baseline, restricted",
       NamespacePodSecurity{}},
      {"version without v",
       {{"pod-security.kubernetes.io/enforce", "baseline"},
        {"pod-security.kubernetes.io/enforce-version", "1.30"}},
       "metadata.labels[pod-security.kubernetes.io/enforce-version]",
       "Invalid value: \"1.30\": " + version_error,
       Policy(kBaseline, "latest", kBaseline, "latest")},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const NamespacePodSecurityLabels read = ReadNamespacePodSecurity(Namespace(c.labels));
    ASSERT_EQ(read.errors.size(), 1u);
    EXPECT_EQ(read.errors[0].field, c.field);
    EXPECT_EQ(read.errors[0].message, c.message);
    EXPECT_EQ(read.policy, c.fallback);
    const Result<NamespacePodSecurity> policy = PodSecurityOfNamespace(Namespace(c.labels));
    ASSERT_FALSE(policy.ok());
    EXPECT_EQ(policy.status().code(), StatusCode::kUnprocessable);
    EXPECT_EQ(policy.status().message(),
              "Namespace \"ml\" is invalid: " + c.field + ": " + c.message);
    EXPECT_EQ(policy.status().field(), c.field);
  }
  for (const char* bad : {"v1.030", "v2.0", "v1.", "v1", "latest ", "Latest", "v1.x", "v1.-1",
                          "v1.99999999999999999999"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(
        ReadNamespacePodSecurity(Namespace({{"pod-security.kubernetes.io/warn-version", bad}}))
            .errors.size(),
        1u);
  }
  for (const char* good : {"v1.0", "v1.9", "v1.32", "v1.100", "latest"}) {
    SCOPED_TRACE(good);
    EXPECT_TRUE(
        ReadNamespacePodSecurity(Namespace({{"pod-security.kubernetes.io/warn-version", good}}))
            .errors.empty());
  }
}

TEST(PodSecurityNamespaceTest, SeveralInvalidLabelsAreListed) {
  const json ns = Namespace({{"pod-security.kubernetes.io/enforce", "strict"},
                             {"pod-security.kubernetes.io/warn-version", "next"}});
  const Result<NamespacePodSecurity> policy = PodSecurityOfNamespace(ns);
  ASSERT_FALSE(policy.ok());
  EXPECT_EQ(policy.status().message(),
            "Namespace \"ml\" is invalid: [" + kEnforceField + ": " + kLevelError +
                ", metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "
                "\"next\": must be \"latest\" or \"v1.x\"]");
}

TEST(PodSecurityNamespaceTest, UpdatesKeepingTheSameInvalidLabelsAreAccepted) {
  const json bad = Namespace({{"pod-security.kubernetes.io/enforce", "strict"}});
  const json worse = Namespace({{"pod-security.kubernetes.io/enforce", "stricter"}});
  const json good = Namespace({{"pod-security.kubernetes.io/enforce", "baseline"}});
  EXPECT_EQ(NamespacePodSecurityLabelErrors(bad, nullptr).size(), 1u);
  EXPECT_TRUE(NamespacePodSecurityLabelErrors(bad, &bad).empty());
  EXPECT_EQ(NamespacePodSecurityLabelErrors(worse, &bad).size(), 1u);
  EXPECT_EQ(NamespacePodSecurityLabelErrors(bad, &good).size(), 1u);
  EXPECT_TRUE(NamespacePodSecurityLabelErrors(good, &bad).empty());
  EXPECT_TRUE(NamespacePodSecurityLabelErrors(good, nullptr).empty());
}

// ---- Workloads ----

json BareTemplate() {
  return {{"metadata", {{"labels", {{"app", "web"}}}}},
          {"spec", {{"containers", {{{"name", "web"}, {"image", "nginx"}}}}}}};
}

TEST(PodSecurityNamespaceTest, PodTemplatesOfWorkloads) {
  const json with_template = {{"spec", {{"template", BareTemplate()}}}};
  for (const auto& [group, resource] :
       std::vector<std::pair<std::string, std::string>>{{"apps", "deployments"},
                                                        {"apps", "replicasets"},
                                                        {"apps", "statefulsets"},
                                                        {"apps", "daemonsets"},
                                                        {"batch", "jobs"},
                                                        {"", "replicationcontrollers"}}) {
    SCOPED_TRACE(group + "/" + resource);
    EXPECT_EQ(PodTemplateSpecOf(group, resource, with_template),
              &with_template["spec"]["template"]);
  }
  const json cronjob = {{"spec", {{"jobTemplate", {{"spec", {{"template", BareTemplate()}}}}}}}};
  EXPECT_EQ(PodTemplateSpecOf("batch", "cronjobs", cronjob),
            &cronjob["spec"]["jobTemplate"]["spec"]["template"]);
  const json pod_template = {{"template", BareTemplate()}};
  EXPECT_EQ(PodTemplateSpecOf("", "podtemplates", pod_template), &pod_template["template"]);

  EXPECT_EQ(PodTemplateSpecOf("", "pods", with_template), nullptr);
  EXPECT_EQ(PodTemplateSpecOf("", "configmaps", with_template), nullptr);
  EXPECT_EQ(PodTemplateSpecOf("extensions", "deployments", with_template), nullptr);
  EXPECT_EQ(PodTemplateSpecOf("apps", "deployments", json{{"spec", json::object()}}), nullptr);
  EXPECT_EQ(PodTemplateSpecOf("batch", "cronjobs", with_template), nullptr);
}

TEST(PodSecurityNamespaceTest, WorkloadsOnlyWarn) {
  const json deployment = {{"apiVersion", "apps/v1"},
                           {"kind", "Deployment"},
                           {"metadata", {{"name", "web"}}},
                           {"spec", {{"template", BareTemplate()}}}};
  // An enforcing namespace warns through warn's default.
  const Result<NamespacePodSecurity> enforcing =
      PodSecurityOfNamespace(Namespace({{"pod-security.kubernetes.io/enforce", "restricted"}}));
  ASSERT_TRUE(enforcing.ok());
  EXPECT_EQ(
      WorkloadPodSecurityWarnings(*enforcing, "apps", "deployments", deployment),
      Strings{
          R"(would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "web" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "web" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "web" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "web" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"))"});
  // Kube checks only the warn level for workloads: an explicit privileged warn silences them.
  EXPECT_TRUE(WorkloadPodSecurityWarnings(Policy(kRestricted, "latest", kPrivileged, "latest"),
                                          "apps", "deployments", deployment)
                  .empty());
  EXPECT_TRUE(WorkloadPodSecurityWarnings(*enforcing, "", "configmaps", deployment).empty());
  EXPECT_TRUE(WorkloadPodSecurityWarnings(Policy(kBaseline, "latest", kBaseline, "v1.30"), "apps",
                                          "deployments", deployment)
                  .empty());
}

// ---- Namespace updates ----

json Pod(const std::string& name, bool privileged, const std::string& controller = "") {
  json pod = {
      {"metadata", {{"name", name}}},
      {"spec",
       {{"containers", {{{"name", "main"}, {"securityContext", {{"privileged", privileged}}}}}}}}};
  if (!controller.empty()) {
    pod["metadata"]["ownerReferences"] = {
        {{"kind", "ReplicaSet"}, {"name", controller}, {"uid", controller}, {"controller", true}}};
  }
  return pod;
}

const std::string kBareReasons =
    "allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, "
    "seccompProfile";

TEST(PodSecurityNamespaceTest, TighteningEnforceWarnsAboutExistingPods) {
  const std::vector<json> pods = {Pod("web-b", false, "rs1"), Pod("web-a", false, "rs1"),
                                  Pod("solo", false), Pod("priv", true)};
  const NamespacePodSecurity open;
  const NamespacePodSecurity restricted = Policy(kRestricted, "latest", kRestricted, "latest");
  EXPECT_EQ(
      NamespaceEnforceWarnings("ml", open, restricted, pods),
      (Strings{
          R"(existing pods in namespace "ml" violate the new PodSecurity enforce level "restricted:latest")",
          "priv: privileged, " + kBareReasons,
          "solo (and 2 other pods): " + kBareReasons,
      }));
  const NamespacePodSecurity baseline = Policy(kBaseline, "v1.30", kBaseline, "v1.30");
  EXPECT_EQ(
      NamespaceEnforceWarnings("ml", open, baseline, pods),
      (Strings{
          R"(existing pods in namespace "ml" violate the new PodSecurity enforce level "baseline:v1.30")",
          "priv: privileged",
      }));
  // Another version counts as a change even at a looser level.
  EXPECT_EQ(NamespaceEnforceWarnings("ml", restricted, baseline, pods).size(), 2u);
  EXPECT_EQ(NamespaceEnforceWarnings("ml", open, restricted, {Pod("ok", false)}).size(), 2u);
  EXPECT_TRUE(NamespaceEnforceWarnings("ml", open, baseline, {Pod("ok", false)}).empty());
}

TEST(PodSecurityNamespaceTest, UnchangedOrLooserEnforceIsNotChecked) {
  const std::vector<json> pods = {Pod("priv", true)};
  const NamespacePodSecurity open;
  const NamespacePodSecurity baseline = Policy(kBaseline, "latest", kPrivileged, "latest");
  const NamespacePodSecurity restricted = Policy(kRestricted, "latest", kPrivileged, "latest");
  EXPECT_TRUE(NamespaceEnforceWarnings("ml", baseline, baseline, pods).empty());
  EXPECT_TRUE(NamespaceEnforceWarnings("ml", restricted, baseline, pods).empty());
  EXPECT_TRUE(NamespaceEnforceWarnings("ml", baseline, open, pods).empty());
  // Only enforce matters: warn changes alone check nothing.
  EXPECT_TRUE(NamespaceEnforceWarnings("ml", open,
                                       Policy(kPrivileged, "latest", kRestricted, "latest"), pods)
                  .empty());
}

TEST(PodSecurityNamespaceTest, AtMostThreeThousandPodsAreChecked) {
  std::vector<json> pods;
  // Replicas of one controller come last, so the unowned privileged pod is still checked.
  for (int i = 0; i < 3000; ++i) pods.push_back(Pod("r" + std::to_string(i), false, "rs1"));
  pods.push_back(Pod("priv", true));
  const Strings warnings = NamespaceEnforceWarnings(
      "ml", NamespacePodSecurity{}, Policy(kBaseline, "latest", kBaseline, "latest"), pods);
  EXPECT_EQ(
      warnings,
      (Strings{
          "new PodSecurity enforce level only checked against the first 3000 of 3001 "
          "existing pods",
          R"(existing pods in namespace "ml" violate the new PodSecurity enforce level "baseline:latest")",
          "priv: privileged"}));
}

}  // namespace
}  // namespace sluice::apiserver
