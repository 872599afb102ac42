// The Dataflow controller's desired children and status mapping (pure functions).
#include "operator/controllers/dataflow/desired_objects.h"

#include <gtest/gtest.h>

#include "operator/controllers/labels.h"

namespace sluice::controllers {
namespace {

using nlohmann::json;

json Dataflow() {
  return json::parse(R"({
    "apiVersion": "sluice.dev/v1alpha1", "kind": "Dataflow",
    "metadata": {"name": "arith", "namespace": "rl", "uid": "u-1", "resourceVersion": "7",
                 "generation": 2},
    "spec": {"storage": {"size": "2Gi", "storageClassName": "fast"},
             "dataset": {"configMap": {"name": "rows", "key": "train.jsonl"}}},
    "status": {"buffered": 5}
  })");
}

TEST(DataflowChildrenTest, ChildrenAreNamedLabelledAndOwned) {
  const json df = Dataflow();
  const json cm = DesiredDataflowConfigMap(df);
  EXPECT_EQ(cm["metadata"]["name"], "arith-config");
  EXPECT_EQ(cm["metadata"]["namespace"], "rl");
  EXPECT_EQ(cm["metadata"]["labels"][kManagedByLabel], "sluice-operator");
  EXPECT_EQ(cm["metadata"]["labels"][kPartOfLabel], "sluice");
  EXPECT_EQ(cm["metadata"]["labels"][kInstanceLabel], "arith");
  EXPECT_EQ(cm["metadata"]["labels"][kDataflowLabel], "arith");
  const json owner = cm["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["kind"], "Dataflow");
  EXPECT_EQ(owner["uid"], "u-1");
  EXPECT_EQ(owner["controller"], true);
  // The config is the object's identity and spec, not its status or bookkeeping.
  const json manifest = json::parse(cm["data"]["dataflow.json"].get<std::string>());
  EXPECT_EQ(manifest["spec"], df["spec"]);
  EXPECT_FALSE(manifest.contains("status"));
  EXPECT_FALSE(manifest["metadata"].contains("resourceVersion"));

  const json claim = DesiredDataflowClaim(df);
  EXPECT_EQ(claim["metadata"]["name"], "arith-wal");
  EXPECT_FALSE(claim["metadata"].contains("ownerReferences"));  // Survives the Dataflow.
  EXPECT_EQ(claim["spec"]["resources"]["requests"]["storage"], "2Gi");
  EXPECT_EQ(claim["spec"]["storageClassName"], "fast");

  const json secret = DesiredDataflowTokenSecret(df, "abc123");
  EXPECT_EQ(secret["metadata"]["name"], "arith-token");
  EXPECT_EQ(secret["stringData"]["token"], "abc123");
  const json rollout_secret = DesiredDataflowRolloutTokenSecret(df, "def456");
  EXPECT_EQ(rollout_secret["metadata"]["name"], "arith-rollout-token");
  EXPECT_EQ(rollout_secret["stringData"]["token"], "def456");
  EXPECT_EQ(rollout_secret["metadata"]["ownerReferences"], secret["metadata"]["ownerReferences"]);

  const json svc = DesiredDataflowService(df);
  EXPECT_EQ(svc["metadata"]["name"], "arith");
  EXPECT_EQ(svc["spec"]["selector"][kDataflowLabel], "arith");
  EXPECT_EQ(svc["spec"]["ports"][0]["port"], kDataflowPort);
  EXPECT_EQ(DataflowEndpoint(df), "https://arith.rl.svc:8080");
}

TEST(DataflowChildrenTest, PodRunsTheDataflowWithItsVolumesAndProbes) {
  const json pod = DesiredDataflowPod(Dataflow(), WorkerImages{});
  EXPECT_EQ(pod["metadata"]["name"], "arith-dataflow");
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Always");
  EXPECT_EQ(pod["spec"]["enableServiceLinks"], false);
  const json c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["image"], "sluice/dataflow:0.1.0");
  const std::vector<std::string> args = c["args"].get<std::vector<std::string>>();
  auto has = [&](const std::string& a) {
    return std::find(args.begin(), args.end(), a) != args.end();
  };
  EXPECT_TRUE(has("--dataflow-manifest=/etc/sluice/config/dataflow.json"));
  EXPECT_TRUE(has("--dataflow-name=arith"));
  EXPECT_TRUE(has("--wal-dir=/var/lib/sluice/wal"));
  EXPECT_TRUE(has("--token-file=/var/run/sluice/token/token"));
  // The rollout replicas' token, admitted for leasing and submitting only.
  EXPECT_TRUE(has("--rollout-token-file=/var/run/sluice/rollout-token/token"));
  // The pod's volume of that name; null when it has none.
  auto volume = [&](const std::string& name) {
    for (const json& v : pod["spec"]["volumes"]) {
      if (v["name"] == name) return v;
    }
    return json();
  };
  EXPECT_EQ(volume("rollout-token")["secret"]["secretName"], "arith-rollout-token");
  EXPECT_TRUE(has("--address=$(POD_IP)"));
  // Prometheus scrapes the pod's HTTP port without the Dataflow's token.
  EXPECT_TRUE(has("--metrics-require-token=false"));
  EXPECT_EQ(pod["metadata"]["annotations"]["prometheus.io/scrape"], "true");
  EXPECT_EQ(pod["metadata"]["annotations"]["prometheus.io/port"], "8080");
  EXPECT_EQ(pod["metadata"]["annotations"]["prometheus.io/path"], "/metrics");
  EXPECT_EQ(pod["metadata"]["annotations"]["prometheus.io/scheme"], "https");
  EXPECT_EQ(pod["metadata"]["annotations"].size(), 5u);  // And the config hash.
  EXPECT_EQ(c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"], "status.podIP");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"], "/readyz");
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"], "/healthz");
  // It serves HTTPS with its Secret <df>-tls (dataflow_tls.h), and is probed so.
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["scheme"], "HTTPS");
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["scheme"], "HTTPS");
  EXPECT_TRUE(has("--tls-cert-file=/var/run/sluice/tls/tls.crt"));
  EXPECT_TRUE(has("--tls-key-file=/var/run/sluice/tls/tls.key"));
  EXPECT_EQ(volume("tls")["secret"]["secretName"], "arith-tls");
  // The dataset ConfigMap is mounted where --dataset-mount-dir points.
  EXPECT_EQ(volume("dataset")["configMap"]["name"], "rows");
  // The config hash follows the spec, not the status.
  json changed_status = Dataflow();
  changed_status["status"]["buffered"] = 99;
  EXPECT_EQ(
      DesiredDataflowPod(changed_status, {})["metadata"]["annotations"][kConfigHashAnnotation],
      pod["metadata"]["annotations"][kConfigHashAnnotation]);
  json changed_spec = Dataflow();
  changed_spec["spec"]["storage"]["size"] = "3Gi";
  EXPECT_NE(DesiredDataflowPod(changed_spec, {})["metadata"]["annotations"][kConfigHashAnnotation],
            pod["metadata"]["annotations"][kConfigHashAnnotation]);
}

TEST(DataflowChildrenTest, PodIsHardenedWithAReadOnlyRootAndAScratchDir) {
  const json pod = DesiredDataflowPod(Dataflow(), WorkerImages{});
  const json& spec = pod["spec"];
  EXPECT_EQ(spec["securityContext"], json::parse(R"({"runAsNonRoot": true, "runAsUser": 65532,
      "runAsGroup": 65532, "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}})"));
  const json& c = spec["containers"][0];
  EXPECT_EQ(c["securityContext"], json::parse(R"({"allowPrivilegeEscalation": false,
      "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": true})"));
  // The WAL is its claim; /tmp is an emptyDir, and TMPDIR points there.
  EXPECT_EQ(spec["volumes"].back(), json::parse(R"({"name": "tmp", "emptyDir": {}})"));
  EXPECT_EQ(c["volumeMounts"].back(), json::parse(R"({"name": "tmp", "mountPath": "/tmp"})"));
  EXPECT_EQ(c["env"], json::parse(R"([
    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    {"name": "TMPDIR", "value": "/tmp"}])"));
  bool wal = false;
  for (const json& m : c["volumeMounts"]) {
    if (m["name"] == "wal") {
      wal = true;
      EXPECT_EQ(m["mountPath"], "/var/lib/sluice/wal");
      EXPECT_FALSE(m.contains("readOnly"));
    }
  }
  EXPECT_TRUE(wal);
  // The dataflow's resources are its own (no template): unchanged.
  EXPECT_EQ(c["resources"], json::parse(R"({"requests": {"cpu": "500m", "memory": "512Mi"},
      "limits": {"memory": "4Gi"}})"));
}

TEST(DataflowChildrenTest, StatusComesFromTheWorkersReport) {
  const json worker = json::parse(R"({
    "policies": {
      "actor": {"version": 4, "buffered_samples": 32, "accepted_samples": 200,
                "filtered_samples": 8, "stale_dropped_samples": 3, "served_batches": 5,
                "acked_batches": 4},
      "critic": {"version": 2, "buffered_samples": 8, "accepted_samples": 100,
                 "filtered_samples": 0, "stale_dropped_samples": 1, "served_batches": 2}},
    "prompts": {"consumed": 40, "total": 1000}, "epoch": 1,
    "eval": {"last": {"version": 4, "overall_avg_at_k": 0.5, "overall_mean_reward": 0.625,
                      "overall_pass_at_k": 0.75}}
  })");
  const json previous = {{"accepted", 240}};
  const json status = DataflowStatusFromWorker(Dataflow(), worker, previous, 2.0);
  EXPECT_EQ(status["buffered"], 40);
  EXPECT_EQ(status["accepted"], 300);
  EXPECT_EQ(status["staleDropped"], 4);
  EXPECT_EQ(status["promptsConsumed"], 40);
  EXPECT_EQ(status["promptsTotal"], 1000);
  EXPECT_EQ(status["epoch"], 1);
  EXPECT_DOUBLE_EQ(status["trajectoriesPerSecond"].get<double>(), 30.0);
  EXPECT_EQ(status["endpoint"], "https://arith.rl.svc:8080");
  ASSERT_EQ(status["policies"].size(), 2u);
  EXPECT_EQ(status["policies"][0]["name"], "actor");
  EXPECT_EQ(status["policies"][0]["latestVersion"], 4);
  EXPECT_EQ(status["policies"][0]["filtered"], 8);
  // servedBatches counts acknowledged batches, as the CRD says (not first serves).
  EXPECT_EQ(status["policies"][0]["servedBatches"], 4);
  EXPECT_EQ(status["policies"][1]["servedBatches"], 0);
  EXPECT_EQ(status["evaluation"]["version"], 4);
  // accuracy is the share of correct completions (avg@k), not the mean (partial) reward.
  EXPECT_DOUBLE_EQ(status["evaluation"]["accuracy"].get<double>(), 0.5);
  EXPECT_FALSE(status["evaluation"].contains("meanReward"));
  EXPECT_DOUBLE_EQ(status["evaluation"]["passAtK"].get<double>(), 0.75);
  // A single-policy round without tools has neither of the episode figures.
  EXPECT_FALSE(status["evaluation"].contains("toolCallShare"));
  EXPECT_FALSE(status["evaluation"].contains("policies"));

  // No evaluation yet in this report: the previous one is kept.
  json quiet = worker;
  quiet.erase("eval");
  const json kept = DataflowStatusFromWorker(Dataflow(), quiet, status, 1.0);
  EXPECT_EQ(kept["evaluation"], status["evaluation"]);
  EXPECT_DOUBLE_EQ(kept["trajectoriesPerSecond"].get<double>(), 0.0);
}

// The round's episode figures (eval_episodes.h) in the CRD's names: the tool-call share, and per
// non-primary policy its mean reward overall and when the primary's answer was correct / wrong
// (absent when no episode falls on that side). Malformed entries are skipped.
TEST(DataflowChildrenTest, EvaluationCarriesOtherPoliciesAndTheToolCallShare) {
  const json worker = json::parse(R"({
    "eval": {"last": {"version": 20, "overall_avg_at_k": 0.5, "overall_pass_at_k": 0.75,
                      "tool_call_share": 0.375, "tool_call_episodes": 8,
                      "episodes_calling_tools": 3,
                      "policies": [
                        {"policy": "verifier", "episodes": 8, "correct_episodes": 0,
                         "mean_reward": 0.625, "mean_reward_when_wrong": 0.625},
                        {"episodes": 3},
                        {"policy": "critic", "episodes": 8, "correct_episodes": 4,
                         "mean_reward": 0.5, "mean_reward_when_correct": 0.25,
                         "mean_reward_when_wrong": 0.75}]}}
  })");
  const json status = DataflowStatusFromWorker(Dataflow(), worker, json::object(), 0);
  const json& evaluation = status["evaluation"];
  EXPECT_EQ(evaluation["version"], 20);
  EXPECT_DOUBLE_EQ(evaluation["accuracy"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(evaluation["toolCallShare"].get<double>(), 0.375);
  EXPECT_EQ(evaluation["policies"], json::parse(R"([
    {"name": "verifier", "meanReward": 0.625, "meanRewardWhenWrong": 0.625},
    {"name": "critic", "meanReward": 0.5, "meanRewardWhenCorrect": 0.25,
     "meanRewardWhenWrong": 0.75}])"));
  // Counts stay in the worker's report; the CRD carries the shares.
  EXPECT_FALSE(evaluation.contains("toolCallEpisodes"));
  EXPECT_FALSE(evaluation["policies"][0].contains("episodes"));

  // Kept with the rest of the evaluation while a later report has none.
  json quiet = worker;
  quiet.erase("eval");
  EXPECT_EQ(DataflowStatusFromWorker(Dataflow(), quiet, status, 1.0)["evaluation"], evaluation);
}

TEST(DataflowChildrenTest, EpochIsZeroBasedAlsoAfterTheLastOne) {
  struct Case {
    json worker;
    int64_t epoch;
  };
  const Case cases[] = {
      {{{"epoch", 0}, {"epochs", 3}}, 0},
      {{{"epoch", 2}, {"epochs", 3}}, 2},
      {{{"epoch", 3}, {"epochs", 3}, {"dataset_done", true}}, 2},  // Done: the last one.
      {{{"epoch", 1}, {"epochs", 1}}, 0},
      {{{"epoch", 4}}, 4},  // No epochs reported: as it is.
  };
  for (const Case& c : cases) {
    EXPECT_EQ(DataflowStatusFromWorker(Dataflow(), c.worker, json::object(), 0)["epoch"], c.epoch)
        << c.worker.dump();
  }
}

TEST(DataflowChildrenTest, LongNameGivesValidChildNamesAndLabels) {
  json df = Dataflow();
  const std::string long_name = std::string(80, 'd') + ".exp";
  df["metadata"]["name"] = long_name;
  // The Service is a DNS label; the endpoint names it; its selector matches the pod's labels.
  const json svc = DesiredDataflowService(df);
  const std::string svc_name = svc["metadata"]["name"];
  EXPECT_LE(svc_name.size(), 63u);
  EXPECT_EQ(svc_name.find('.'), std::string::npos);
  EXPECT_EQ(svc_name, DataflowServiceName(long_name));
  EXPECT_EQ(DataflowEndpoint(df), "https://" + svc_name + ".rl.svc:8080");
  const json pod = DesiredDataflowPod(df, WorkerImages{});
  for (const auto& [key, value] : svc["spec"]["selector"].items()) {
    EXPECT_EQ(pod["metadata"]["labels"][key], value) << key;
  }
  EXPECT_EQ(pod["metadata"]["labels"][kDataflowLabel], LabelValue(long_name));
  for (const auto& [key, value] : pod["metadata"]["labels"].items()) {
    EXPECT_LE(value.get<std::string>().size(), 63u) << key;
  }
  // Subdomain names keep the whole name while it fits 253 characters, then hash.
  EXPECT_EQ(pod["metadata"]["name"], long_name + "-dataflow");
  const std::string longest(253, 'd');
  for (const std::string& name : {DataflowConfigMapName(longest), DataflowTokenSecretName(longest),
                                  DataflowRolloutTokenSecretName(longest),
                                  DataflowClaimName(longest), DataflowPodName(longest)}) {
    EXPECT_LE(name.size(), 253u) << name;
  }
  EXPECT_EQ(DataflowPodName(longest).substr(DataflowPodName(longest).size() - 9), "-dataflow");
}

TEST(LabelsTest, JsonHashIsStableAndSensitive) {
  const json a = {{"x", 1}, {"y", "z"}};
  const json b = json::parse(R"({"y": "z", "x": 1})");
  EXPECT_EQ(JsonHash(a), JsonHash(b));
  EXPECT_EQ(JsonHash(a).size(), 10u);
  EXPECT_NE(JsonHash(a), JsonHash(json{{"x", 2}, {"y", "z"}}));
}

}  // namespace
}  // namespace sluice::controllers
