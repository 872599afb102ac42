#include "localcluster/apiserver/workload_admission.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sluice::apiserver {
namespace {

using nlohmann::json;

json Deployment() {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", "web"}, {"namespace", "default"}}},
          {"spec",
           {{"selector", {{"matchLabels", {{"app", "web"}}}}},
            {"template",
             {{"metadata", {{"labels", {{"app", "web"}, {"tier", "front"}}}}},
              {"spec", {{"containers", json::array({{{"name", "web"}, {"image", "nginx"}}})}}}}}}}};
}

json ReplicaSet() {
  json rs = Deployment();
  rs["kind"] = "ReplicaSet";
  return rs;
}

TEST(WorkloadAdmissionTest, DeploymentDefaults) {
  json d = Deployment();
  DefaultDeployment(d);
  EXPECT_EQ(d["spec"]["replicas"], 1);
  EXPECT_EQ(d["spec"]["strategy"],
            json({{"type", "RollingUpdate"},
                  {"rollingUpdate", {{"maxUnavailable", "25%"}, {"maxSurge", "25%"}}}}));
  EXPECT_EQ(d["spec"]["revisionHistoryLimit"], 10);
  EXPECT_EQ(d["spec"]["progressDeadlineSeconds"], 600);
  EXPECT_TRUE(ValidateDeployment(d).empty());
}

TEST(WorkloadAdmissionTest, DefaultsKeepWhatIsSet) {
  json d = Deployment();
  d["spec"]["replicas"] = 0;
  d["spec"]["strategy"] = {{"rollingUpdate", {{"maxSurge", 0}}}};
  d["spec"]["revisionHistoryLimit"] = 2;
  DefaultDeployment(d);
  EXPECT_EQ(d["spec"]["replicas"], 0);
  EXPECT_EQ(d["spec"]["strategy"]["type"], "RollingUpdate");
  EXPECT_EQ(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 0);
  EXPECT_EQ(d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], "25%");
  EXPECT_EQ(d["spec"]["revisionHistoryLimit"], 2);

  json recreate = Deployment();
  recreate["spec"]["strategy"] = {{"type", "Recreate"}};
  DefaultDeployment(recreate);
  EXPECT_FALSE(recreate["spec"]["strategy"].contains("rollingUpdate"));

  json rs = ReplicaSet();
  DefaultReplicaSet(rs);
  EXPECT_EQ(rs["spec"]["replicas"], 1);
}

struct ValidationCase {
  const char* name;
  json spec_patch;  // Merged into the defaulted Deployment's spec.
  std::vector<openapi::FieldError> errors;
};

class DeploymentValidationTest : public ::testing::TestWithParam<ValidationCase> {};

TEST_P(DeploymentValidationTest, ReportsKubesErrors) {
  const ValidationCase& c = GetParam();
  json d = Deployment();
  DefaultDeployment(d);
  d["spec"].merge_patch(c.spec_patch);
  EXPECT_EQ(ValidateDeployment(d), c.errors);
}

INSTANTIATE_TEST_SUITE_P(
    Deployments, DeploymentValidationTest,
    ::testing::Values(
        ValidationCase{"Valid", json::object(), {}},
        ValidationCase{"SelectorDoesNotMatchTemplate",
                       {{"selector", {{"matchLabels", {{"app", "api"}}}}}},
                       {{"spec.template.metadata.labels",
                         "Invalid value: map[string]string{\"app\":\"web\", \"tier\":\"front\"}: "
                         "`selector` does not match template `labels`"}}},
        ValidationCase{"MatchExpressionsAreChecked",
                       {{"selector",
                         {{"matchExpressions",
                           {{{"key", "tier"}, {"operator", "In"}, {"values", {"back"}}}}}}}},
                       {{"spec.template.metadata.labels",
                         "Invalid value: map[string]string{\"app\":\"web\", \"tier\":\"front\"}: "
                         "`selector` does not match template `labels`"}}},
        ValidationCase{"NoTemplateLabels",
                       {{"template", {{"metadata", {{"labels", nullptr}}}}}},
                       {{"spec.template.metadata.labels",
                         "Invalid value: map[string]string(nil): `selector` does not match "
                         "template `labels`"}}},
        ValidationCase{
            "SelectorRequired", {{"selector", nullptr}}, {{"spec.selector", "Required value"}}},
        ValidationCase{"EmptySelector",
                       {{"selector", {{"matchLabels", nullptr}}}},  // selector: {}
                       {{"spec.selector",
                         "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
                         "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector "
                         "is invalid for deployment"}}},
        ValidationCase{
            "NegativeReplicas",
            {{"replicas", -1}},
            {{"spec.replicas", "Invalid value: -1: must be greater than or equal to 0"}}},
        ValidationCase{
            "BothZero",
            {{"strategy", {{"rollingUpdate", {{"maxSurge", 0}, {"maxUnavailable", 0}}}}}},
            {{"spec.strategy.rollingUpdate.maxUnavailable",
              "Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: may "
              "not be 0 when `maxSurge` is 0"}}},
        ValidationCase{
            "BothZeroPercent",
            {{"strategy", {{"rollingUpdate", {{"maxSurge", "0%"}, {"maxUnavailable", "0%"}}}}}},
            {{"spec.strategy.rollingUpdate.maxUnavailable",
              "Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"0%\"}: "
              "may not be 0 when `maxSurge` is 0"}}},
        ValidationCase{"NotAPercent",
                       {{"strategy", {{"rollingUpdate", {{"maxSurge", "1"}}}}}},
                       {{"spec.strategy.rollingUpdate.maxSurge",
                         "Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"1\"}: a "
                         "valid percent string must be a numeric string followed by an ending "
                         "'%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"}}},
        ValidationCase{"UnavailableOver100Percent",
                       {{"strategy", {{"rollingUpdate", {{"maxUnavailable", "120%"}}}}}},
                       {{"spec.strategy.rollingUpdate.maxUnavailable",
                         "Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"120%\"}: "
                         "must not be greater than 100%"}}},
        ValidationCase{"RecreateWithRollingUpdate",
                       {{"strategy", {{"type", "Recreate"}}}},
                       {{"spec.strategy.rollingUpdate",
                         "Forbidden: may not be specified when strategy `type` is 'Recreate'"}}},
        ValidationCase{"UnknownStrategy",
                       {{"strategy", {{"type", "BlueGreen"}}}},
                       {{"spec.strategy.type",
                         "Unsupported value: \"BlueGreen\": supported values: \"Recreate\", "
                         "\"RollingUpdate\""}}},
        ValidationCase{"RestartPolicyMustBeAlways",
                       {{"template", {{"spec", {{"restartPolicy", "OnFailure"}}}}}},
                       {{"spec.template.spec.restartPolicy",
                         "Unsupported value: \"OnFailure\": supported values: \"Always\""}}},
        ValidationCase{"DeadlineNotAboveMinReady",
                       {{"minReadySeconds", 30}, {"progressDeadlineSeconds", 30}},
                       {{"spec.progressDeadlineSeconds",
                         "Invalid value: 30: must be greater than minReadySeconds"}}},
        ValidationCase{"NegativeHistory",
                       {{"revisionHistoryLimit", -1}},
                       {{"spec.revisionHistoryLimit",
                         "Invalid value: -1: must be greater than or equal to 0"}}}),
    [](const ::testing::TestParamInfo<ValidationCase>& info) { return info.param.name; });

TEST(WorkloadAdmissionTest, ReplicaSetValidation) {
  json rs = ReplicaSet();
  DefaultReplicaSet(rs);
  EXPECT_TRUE(ValidateReplicaSet(rs).empty());
  rs["spec"]["selector"] = {{"matchLabels", {{"app", "api"}}}};
  rs["spec"]["strategy"] = {{"type", "Bogus"}};  // Not a ReplicaSet field: not looked at.
  const openapi::FieldErrors errors = ValidateReplicaSet(rs);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].field, "spec.template.metadata.labels");
}

TEST(WorkloadAdmissionTest, SelectorIsImmutable) {
  json before = Deployment();
  DefaultDeployment(before);
  json after = before;
  after["spec"]["selector"]["matchLabels"]["tier"] = "front";
  EXPECT_EQ(ValidateDeploymentUpdate(before, after),
            (openapi::FieldErrors{
                {"spec.selector",
                 "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web\", "
                 "\"tier\":\"front\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: "
                 "field is immutable"}}));
  json scaled = before;
  scaled["spec"]["replicas"] = 5;
  EXPECT_TRUE(ValidateDeploymentUpdate(before, scaled).empty());
  EXPECT_TRUE(ValidateReplicaSetUpdate(ReplicaSet(), ReplicaSet()).empty());
}

}  // namespace
}  // namespace sluice::apiserver
