// The per-experiment NetworkPolicies (network_policies.h): names, ownership, the rules of each
// role, the Prometheus switch, and that the selectors select the pods the other builders make.
#include "operator/controllers/network_policies.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "operator/controllers/dataflow/desired_objects.h"
#include "operator/controllers/labels.h"
#include "operator/controllers/rolloutpool/desired_pods.h"
#include "operator/controllers/trainerjob/desired_pods.h"

namespace sluice::controllers {
namespace {

using nlohmann::json;

json Dataflow() {
  return json::parse(R"({
    "apiVersion": "sluice.dev/v1alpha1", "kind": "Dataflow",
    "metadata": {"name": "arith", "namespace": "rl", "uid": "u-df"},
    "spec": {"dataset": {"builtin": {"generator": "arithmetic"}}}
  })");
}

json Pool() {
  return json::parse(R"({
    "apiVersion": "sluice.dev/v1alpha1", "kind": "RolloutPool",
    "metadata": {"name": "gen", "namespace": "rl", "uid": "u-pool"},
    "spec": {"policies": ["actor"], "dataflowRef": {"name": "arith"}, "replicas": 2}
  })");
}

json Job() {
  return json::parse(R"({
    "apiVersion": "sluice.dev/v1alpha1", "kind": "TrainerJob",
    "metadata": {"name": "train", "namespace": "rl", "uid": "u-job"},
    "spec": {"policyRef": {"name": "actor"}, "dataflowRef": {"name": "arith"}, "steps": 10,
             "replicas": 2}
  })");
}

json ActorPolicy() {
  return json::parse(R"({
    "apiVersion": "sluice.dev/v1alpha1", "kind": "Policy",
    "metadata": {"name": "actor", "namespace": "rl", "uid": "u-pol"},
    "spec": {"model": {"source": {"path": "/models/qwen"}}}
  })");
}

// Whether a matchLabels-only selector selects `object` (its metadata.labels).
bool Selects(const json& selector, const json& object) {
  EXPECT_FALSE(selector.contains("matchExpressions")) << selector.dump();
  const json labels = object.value("/metadata/labels"_json_pointer, json::object());
  const json wanted = selector.value("matchLabels", json::object());
  for (const auto& [key, value] : wanted.items()) {
    if (!labels.contains(key) || labels[key] != value) return false;
  }
  return true;
}

const json kTcp8080 = json::array({{{"protocol", "TCP"}, {"port", 8080}}});

// The peers of ingress rule `i`.
json From(const json& policy, size_t i) { return policy["spec"]["ingress"][i]["from"]; }

TEST(NetworkPoliciesTest, ThreeOwnedPoliciesOneRoleEach) {
  const json df = Dataflow();
  const std::vector<json> policies = DesiredNetworkPolicies(df);
  ASSERT_EQ(policies.size(), 3u);
  EXPECT_EQ(NetworkPolicyNames("arith"),
            (std::vector<std::string>{"arith-dataflow-ingress", "arith-rollout-ingress",
                                      "arith-trainer-ingress"}));
  const char* roles[] = {"dataflow", "rollout", "trainer"};
  for (size_t i = 0; i < policies.size(); ++i) {
    const json& p = policies[i];
    SCOPED_TRACE(roles[i]);
    EXPECT_EQ(p["apiVersion"], "networking.k8s.io/v1");
    EXPECT_EQ(p["kind"], "NetworkPolicy");
    EXPECT_EQ(p["metadata"]["name"], NetworkPolicyNames("arith")[i]);
    EXPECT_EQ(p["metadata"]["namespace"], "rl");
    EXPECT_EQ(p["metadata"]["labels"][kManagedByLabel], "sluice-operator");
    EXPECT_EQ(p["metadata"]["labels"][kDataflowLabel], "arith");
    EXPECT_EQ(p["metadata"]["labels"][kComponentLabel], "network-policy");
    ASSERT_EQ(p["metadata"]["ownerReferences"].size(), 1u);
    EXPECT_EQ(p["metadata"]["ownerReferences"][0]["kind"], "Dataflow");
    EXPECT_EQ(p["metadata"]["ownerReferences"][0]["uid"], "u-df");
    EXPECT_EQ(p["metadata"]["ownerReferences"][0]["controller"], true);
    // Ingress only, written out as the API server would default it.
    EXPECT_EQ(p["spec"]["policyTypes"], json::array({"Ingress"}));
    EXPECT_FALSE(p["spec"].contains("egress"));
    EXPECT_EQ(p["spec"]["podSelector"], ExperimentPodSelector(df, roles[i]));
    EXPECT_EQ(p["spec"]["podSelector"]["matchLabels"][kComponentLabel], roles[i]);
    EXPECT_EQ(p["spec"]["podSelector"]["matchLabels"][kDataflowLabel], "arith");
    for (const json& rule : p["spec"]["ingress"]) {
      for (const json& port : rule.value("ports", json::array())) {
        EXPECT_EQ(port["protocol"], "TCP");
      }
    }
  }
}

TEST(NetworkPoliciesTest, EachRoleAdmitsOnlyItsCallers) {
  const std::vector<json> policies = DesiredNetworkPolicies(Dataflow());
  ASSERT_EQ(policies.size(), 3u);
  const json rollouts = {{"podSelector", ExperimentPodSelector(Dataflow(), "rollout")}};
  const json trainers = {{"podSelector", ExperimentPodSelector(Dataflow(), "trainer")}};
  const json operator_peer = json::parse(R"({"namespaceSelector": {}, "podSelector":
      {"matchLabels": {"app.kubernetes.io/name": "sluice",
                       "app.kubernetes.io/component": "operator"}}})");
  const json prometheus = json::parse(R"({"namespaceSelector": {}, "podSelector":
      {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}})");

  // The dataflow: rollouts and trainers of the experiment, then the operator and Prometheus,
  // each on the HTTP port.
  const json& dataflow = policies[0];
  ASSERT_EQ(dataflow["spec"]["ingress"].size(), 3u);
  EXPECT_EQ(From(dataflow, 0), json::array({rollouts, trainers}));
  EXPECT_EQ(From(dataflow, 1), json::array({operator_peer}));
  EXPECT_EQ(From(dataflow, 2), json::array({prometheus}));
  for (const json& rule : dataflow["spec"]["ingress"]) EXPECT_EQ(rule["ports"], kTcp8080);

  // Rollout replicas: their peers (weight relays), the operator, Prometheus.
  const json& rollout = policies[1];
  ASSERT_EQ(rollout["spec"]["ingress"].size(), 3u);
  EXPECT_EQ(From(rollout, 0), json::array({rollouts}));
  EXPECT_EQ(From(rollout, 1), json::array({operator_peer}));
  EXPECT_EQ(From(rollout, 2), json::array({prometheus}));
  for (const json& rule : rollout["spec"]["ingress"]) EXPECT_EQ(rule["ports"], kTcp8080);

  // Trainer ranks: rollouts on the weights port, the operator, Prometheus. Not each other: rank to
  // rank is each job's gang policy, so no rule admits every trainer of the experiment.
  const json& trainer = policies[2];
  ASSERT_EQ(trainer["spec"]["ingress"].size(), 3u);
  EXPECT_EQ(From(trainer, 0), json::array({rollouts}));
  EXPECT_EQ(From(trainer, 1), json::array({operator_peer}));
  EXPECT_EQ(From(trainer, 2), json::array({prometheus}));
  for (const json& rule : trainer["spec"]["ingress"]) EXPECT_EQ(rule["ports"], kTcp8080);
  EXPECT_EQ(trainer.dump().find(trainers.dump()), std::string::npos);
}

TEST(NetworkPoliciesTest, EachGangAdmitsOnlyItsOwnRanksOnEveryPort) {
  const json df = Dataflow();
  const json gang = DesiredGangNetworkPolicy(Job(), df);
  ASSERT_TRUE(gang.is_object());
  EXPECT_EQ(GangNetworkPolicyName("train"), "train-gang-ingress");
  EXPECT_EQ(gang["apiVersion"], "networking.k8s.io/v1");
  EXPECT_EQ(gang["kind"], "NetworkPolicy");
  EXPECT_EQ(gang["metadata"]["name"], "train-gang-ingress");
  EXPECT_EQ(gang["metadata"]["namespace"], "rl");
  EXPECT_EQ(gang["metadata"]["labels"][kManagedByLabel], "sluice-operator");
  EXPECT_EQ(gang["metadata"]["labels"][kComponentLabel], "network-policy");
  EXPECT_EQ(gang["metadata"]["labels"][kTrainerJobLabel], "train");
  EXPECT_EQ(gang["metadata"]["labels"][kDataflowLabel], "arith");
  ASSERT_EQ(gang["metadata"]["ownerReferences"].size(), 1u);
  EXPECT_EQ(gang["metadata"]["ownerReferences"][0]["kind"], "TrainerJob");
  EXPECT_EQ(gang["metadata"]["ownerReferences"][0]["uid"], "u-job");
  EXPECT_EQ(gang["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(gang["spec"]["policyTypes"], json::array({"Ingress"}));
  // One rule, from the gang itself, with no ports: every port (rendezvous, Gloo's pairs).
  const json selector = GangPodSelector(Job());
  EXPECT_EQ(gang["spec"]["podSelector"], selector);
  EXPECT_EQ(gang["spec"]["ingress"],
            json::array({{{"from", json::array({{{"podSelector", selector}}})}}}));

  // It selects the job's ranks, in every attempt, and no rank of another job of the experiment.
  const json rank0 = DesiredRankPod(Job(), ActorPolicy(), df, 0, 0, WorkerImages{});
  const json rank1 = DesiredRankPod(Job(), ActorPolicy(), df, 1, 3, WorkerImages{});
  json verifier = Job();
  verifier["metadata"]["name"] = "verify";
  verifier["metadata"]["uid"] = "u-verify";
  const json other_rank = DesiredRankPod(verifier, ActorPolicy(), df, 0, 0, WorkerImages{});
  EXPECT_TRUE(Selects(selector, rank0));
  EXPECT_TRUE(Selects(selector, rank1));
  EXPECT_FALSE(Selects(selector, other_rank));
  EXPECT_TRUE(Selects(GangPodSelector(verifier), other_rank));
  EXPECT_FALSE(Selects(selector, DesiredDataflowPod(df, WorkerImages{})));
  EXPECT_FALSE(Selects(selector,
                       DesiredReplicaPod(Pool(), {ActorPolicy()}, nullptr, 0, df, WorkerImages{})));

  // A job name over 63 characters: the pods' label and the selector hash it the same way.
  json long_job = Job();
  long_job["metadata"]["name"] = std::string(70, 'j');
  const json long_rank = DesiredRankPod(long_job, ActorPolicy(), df, 0, 0, WorkerImages{});
  const json long_gang = DesiredGangNetworkPolicy(long_job, df);
  EXPECT_TRUE(Selects(long_gang["spec"]["podSelector"], long_rank));
  EXPECT_EQ(long_gang["metadata"]["name"], std::string(70, 'j') + "-gang-ingress");

  // The Dataflow's switch covers the gangs too.
  json off = df;
  off["spec"]["networkPolicy"] = {{"enabled", false}};
  EXPECT_TRUE(DesiredGangNetworkPolicy(Job(), off).is_null());
}

TEST(NetworkPoliciesTest, SelectorsSelectTheExperimentsPods) {
  const json df = Dataflow();
  const json dataflow_pod = DesiredDataflowPod(df, WorkerImages{});
  const json replica = DesiredReplicaPod(Pool(), {ActorPolicy()}, nullptr, 0, df, WorkerImages{});
  const json rank = DesiredRankPod(Job(), ActorPolicy(), df, 1, 0, WorkerImages{});
  const json pods[] = {dataflow_pod, replica, rank};
  const std::vector<json> policies = DesiredNetworkPolicies(df);
  ASSERT_EQ(policies.size(), 3u);
  // Each policy selects its role's pod and no other.
  for (size_t p = 0; p < 3; ++p) {
    for (size_t q = 0; q < 3; ++q) {
      EXPECT_EQ(Selects(policies[p]["spec"]["podSelector"], pods[q]), p == q)
          << policies[p]["metadata"]["name"] << " vs " << pods[q]["metadata"]["name"];
    }
  }
  // The peers: the trainer policy's first rule names the replicas.
  EXPECT_TRUE(Selects(From(policies[2], 0)[0]["podSelector"], replica));
  EXPECT_FALSE(Selects(From(policies[2], 0)[0]["podSelector"], rank));

  // Pods of another experiment are not selected.
  json other = df;
  other["metadata"]["name"] = "other";
  EXPECT_FALSE(Selects(DesiredNetworkPolicies(other)[1]["spec"]["podSelector"], replica));

  // A name over 63 characters: the pods' label and the selector hash it the same way.
  json long_df = df;
  long_df["metadata"]["name"] = std::string(70, 'd');
  json long_pool = Pool();
  long_pool["spec"]["dataflowRef"]["name"] = std::string(70, 'd');
  const json long_replica =
      DesiredReplicaPod(long_pool, {ActorPolicy()}, nullptr, 0, long_df, WorkerImages{});
  const std::vector<json> long_policies = DesiredNetworkPolicies(long_df);
  ASSERT_EQ(long_policies.size(), 3u);
  EXPECT_TRUE(Selects(long_policies[1]["spec"]["podSelector"], long_replica));
  EXPECT_EQ(long_policies[1]["metadata"]["name"], std::string(70, 'd') + "-rollout-ingress");
}

TEST(NetworkPoliciesTest, PrometheusSelectorsAndTheSwitch) {
  json df = Dataflow();
  df["spec"]["networkPolicy"] = json::parse(R"({"enabled": true, "prometheus": {
      "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
      "podSelector": {"matchLabels": {}, "matchExpressions": [
          {"key": "app", "operator": "In", "values": ["prometheus", "vmagent"]},
          {"key": "scraper", "operator": "Exists", "values": []}]}}})");
  const std::vector<json> policies = DesiredNetworkPolicies(df);
  ASSERT_EQ(policies.size(), 3u);
  // Empty members are left out, as the API server stores selectors.
  const json want = json::parse(R"([{
      "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
      "podSelector": {"matchExpressions": [
          {"key": "app", "operator": "In", "values": ["prometheus", "vmagent"]},
          {"key": "scraper", "operator": "Exists"}]}}])");
  for (const json& p : policies) {
    const json& ingress = p["spec"]["ingress"];
    EXPECT_EQ(ingress[ingress.size() - 1]["from"], want) << p["metadata"]["name"];
  }

  // Only a podSelector given: every namespace, as the CRD defaults it.
  df["spec"]["networkPolicy"]["prometheus"].erase("namespaceSelector");
  const json last = DesiredNetworkPolicies(df)[0]["spec"]["ingress"][2]["from"][0];
  EXPECT_EQ(last["namespaceSelector"], json::object());

  // Switched off: nothing, and the config the dataflow pod reads is the same either way, so the
  // switch never replaces the pod.
  const json on = Dataflow();
  json off = Dataflow();
  off["spec"]["networkPolicy"] = {{"enabled", false}};
  EXPECT_TRUE(NetworkPoliciesEnabled(on));
  EXPECT_FALSE(NetworkPoliciesEnabled(off));
  EXPECT_TRUE(DesiredNetworkPolicies(off).empty());
  EXPECT_EQ(DesiredDataflowConfigMap(off)["data"], DesiredDataflowConfigMap(on)["data"]);
  EXPECT_EQ(DesiredDataflowPod(off, WorkerImages{})["metadata"]["annotations"],
            DesiredDataflowPod(on, WorkerImages{})["metadata"]["annotations"]);
}

}  // namespace
}  // namespace sluice::controllers
