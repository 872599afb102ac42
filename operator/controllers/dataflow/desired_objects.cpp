#include "operator/controllers/dataflow/desired_objects.h"

#include <algorithm>

#include "operator/controllers/bearer_tokens.h"
#include "operator/controllers/dataflow/dataflow_tls.h"
#include "operator/controllers/labels.h"
#include "operator/controllers/namespace_certificates.h"
#include "operator/controllers/object_meta.h"
#include "operator/controllers/pod_hardening.h"
#include "operator/controllers/worker_container.h"
#include "operator/controllers/worker_scratch.h"

namespace sluice::controllers {

using nlohmann::json;

namespace {

json Labels(const json& df) {
  return StandardLabels("sluice-dataflow", Name(df), "dataflow", {{kDataflowLabel, Name(df)}});
}

json Meta(const json& df, const std::string& name, bool owned) {
  json meta = {{"name", name}, {"namespace", Namespace(df)}, {"labels", Labels(df)}};
  if (owned) meta["ownerReferences"] = json::array({ControllerRef(df)});
  return meta;
}

// The CRD's status.evaluation.policies holds at most this many entries (a Dataflow has at most
// eight policies, so at most seven besides the primary one).
constexpr size_t kMaxEvaluationPolicies = 8;

// The figures of eval_episodes.h a round has, in the CRD's names (status.evaluation): the share
// of episodes with a tool call, and per non-primary policy its mean reward, overall and split by
// whether the primary policy's answer earned the full reward (a split absent when no episode falls
// on that side). Keys the round lacks stay absent, so a single-turn Dataflow's status is unchanged.
void AddEpisodeFigures(const json& round, json* evaluation) {
  if (auto share = round.find("tool_call_share"); share != round.end() && share->is_number()) {
    (*evaluation)["toolCallShare"] = *share;
  }
  auto policies = round.find("policies");
  if (policies == round.end() || !policies->is_array()) return;
  json out = json::array();
  for (const json& p : *policies) {
    if (out.size() >= kMaxEvaluationPolicies) break;
    if (!p.is_object() || !p.contains("policy") || !p["policy"].is_string() ||
        !p.contains("mean_reward") || !p["mean_reward"].is_number()) {
      continue;
    }
    json entry = {{"name", p["policy"]}, {"meanReward", p["mean_reward"]}};
    if (p.contains("mean_reward_when_correct") && p["mean_reward_when_correct"].is_number()) {
      entry["meanRewardWhenCorrect"] = p["mean_reward_when_correct"];
    }
    if (p.contains("mean_reward_when_wrong") && p["mean_reward_when_wrong"].is_number()) {
      entry["meanRewardWhenWrong"] = p["mean_reward_when_wrong"];
    }
    out.push_back(std::move(entry));
  }
  if (!out.empty()) (*evaluation)["policies"] = std::move(out);
}

// Where the pod's volumes are mounted (the node agent remaps these paths on the local cluster).
constexpr char kConfigDir[] = "/etc/sluice/config";
constexpr char kTokenDir[] = "/var/run/sluice/token";
constexpr char kWalDir[] = "/var/lib/sluice/wal";
constexpr char kDatasetDir[] = "/var/run/sluice/dataset";
constexpr char kDatasetPvcDir[] = "/var/run/sluice/dataset-pvc";

json TokenSecret(const json& df, const std::string& name, const std::string& token) {
  return BearerTokenSecret(Meta(df, name, true), token);
}

}  // namespace

json ScrapeAnnotations(int port, bool https) {
  json annotations = {{"prometheus.io/scrape", "true"},
                      {"prometheus.io/port", std::to_string(port)},
                      {"prometheus.io/path", "/metrics"}};
  if (https) annotations["prometheus.io/scheme"] = "https";
  return annotations;
}

std::string DataflowConfigMapName(const std::string& df) { return SubdomainName(df, "-config"); }
std::string DataflowTokenSecretName(const std::string& df) { return SubdomainName(df, "-token"); }
std::string DataflowRolloutTokenSecretName(const std::string& df) {
  return SubdomainName(df, "-rollout-token");
}

json RolloutTokenVolume(const std::string& df) {
  return {{"name", "rollout-token"},
          {"secret", {{"secretName", DataflowRolloutTokenSecretName(df)}}}};
}

json RolloutTokenMount() {
  return {{"name", "rollout-token"}, {"mountPath", kRolloutTokenMountDir}, {"readOnly", true}};
}

std::string RolloutTokenFileArg() {
  return std::string("--rollout-token-file=") + kRolloutTokenMountDir + "/token";
}
std::string DataflowClaimName(const std::string& df) { return SubdomainName(df, "-wal"); }
std::string DataflowPodName(const std::string& df) { return SubdomainName(df, "-dataflow"); }
std::string DataflowServiceName(const std::string& df) { return DnsLabelName(df); }

std::string DataflowEndpoint(const json& df) {
  return "https://" + DataflowServiceName(Name(df)) + "." + Namespace(df) +
         ".svc:" + std::to_string(kDataflowPort);
}

json DesiredDataflowConfigMap(const json& df) {
  // Only what sluice-dataflow reads: identity and spec (status and bookkeeping would change the
  // hash, and so replace the pod, on every status write). spec.networkPolicy is the operator's
  // alone (network_policies.h): switching the policies must not replace the pod.
  json spec = df.value("spec", json::object());
  if (spec.is_object()) spec.erase("networkPolicy");
  const json manifest = {{"apiVersion", df.value("apiVersion", "sluice.dev/v1alpha1")},
                         {"kind", "Dataflow"},
                         {"metadata", {{"name", Name(df)}, {"namespace", Namespace(df)}}},
                         {"spec", spec}};
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", Meta(df, DataflowConfigMapName(Name(df)), true)},
          {"data", {{"dataflow.json", manifest.dump(2) + "\n"}}}};
}

json DesiredDataflowTokenSecret(const json& df, const std::string& token) {
  return TokenSecret(df, DataflowTokenSecretName(Name(df)), token);
}

json DesiredDataflowRolloutTokenSecret(const json& df, const std::string& token) {
  return TokenSecret(df, DataflowRolloutTokenSecretName(Name(df)), token);
}

json DesiredDataflowClaim(const json& df) {
  json spec = {
      {"accessModes", json::array({"ReadWriteOnce"})},
      {"resources",
       {{"requests", {{"storage", df.value("/spec/storage/size"_json_pointer, json("1Gi"))}}}}}};
  if (df.contains("/spec/storage/storageClassName"_json_pointer)) {
    spec["storageClassName"] = df.at("/spec/storage/storageClassName"_json_pointer);
  }
  return {{"apiVersion", "v1"},
          {"kind", "PersistentVolumeClaim"},
          {"metadata", Meta(df, DataflowClaimName(Name(df)), false)},
          {"spec", spec}};
}

json DesiredDataflowService(const json& df) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", Meta(df, DataflowServiceName(Name(df)), true)},
          {"spec",
           {{"selector", {{kDataflowLabel, LabelValue(Name(df))}, {kComponentLabel, "dataflow"}}},
            {"ports", json::array({{{"name", "http"},
                                    {"port", kDataflowPort},
                                    {"targetPort", "http"},
                                    {"protocol", "TCP"}}})}}}};
}

json DesiredDataflowPod(const json& df, const WorkerImages& images) {
  const std::string name = Name(df);
  json volumes = json::array({
      {{"name", "config"}, {"configMap", {{"name", DataflowConfigMapName(name)}}}},
      {{"name", "token"}, {"secret", {{"secretName", DataflowTokenSecretName(name)}}}},
      RolloutTokenVolume(name),
      DataflowTlsVolume(name),
      {{"name", "wal"}, {"persistentVolumeClaim", {{"claimName", DataflowClaimName(name)}}}},
  });
  json mounts = json::array({
      {{"name", "config"}, {"mountPath", kConfigDir}, {"readOnly", true}},
      {{"name", "token"}, {"mountPath", kTokenDir}, {"readOnly", true}},
      RolloutTokenMount(),
      ServingTlsMount(),
      {{"name", "wal"}, {"mountPath", kWalDir}},
  });
  if (df.contains("/spec/dataset/configMap/name"_json_pointer)) {
    volumes.push_back(
        {{"name", "dataset"},
         {"configMap", {{"name", df.at("/spec/dataset/configMap/name"_json_pointer)}}}});
    mounts.push_back({{"name", "dataset"}, {"mountPath", kDatasetDir}, {"readOnly", true}});
  }
  if (df.contains("/spec/dataset/pvc/claimName"_json_pointer)) {
    volumes.push_back(
        {{"name", "dataset-pvc"},
         {"persistentVolumeClaim",
          {{"claimName", df.at("/spec/dataset/pvc/claimName"_json_pointer)}, {"readOnly", true}}}});
    mounts.push_back({{"name", "dataset-pvc"}, {"mountPath", kDatasetPvcDir}, {"readOnly", true}});
  }
  // The root file system is read-only; the WAL has its claim, and /tmp is the only other place
  // the worker may write (worker_scratch.h).
  volumes.push_back(EmptyDirVolume(kScratchVolume));
  mounts.push_back(WritableMount(kScratchVolume, kScratchDir));
  json env = json::array(
      {{{"name", "POD_IP"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}}});
  for (const json& e : ScratchEnv(/*cuda=*/false)) env.push_back(e);
  json args = json::array({
      std::string("--dataflow-manifest=") + kConfigDir + "/dataflow.json",
      "--dataflow-name=" + name,
      std::string("--wal-dir=") + kWalDir,
      std::string("--token-file=") + kTokenDir + "/token",
      RolloutTokenFileArg(),
      std::string("--dataset-mount-dir=") + kDatasetDir,
      std::string("--dataset-pvc-mount-dir=") + kDatasetPvcDir,
      // Bind the pod's own address: on the local cluster pods share a network namespace.
      "--address=$(POD_IP)",
      "--port=" + std::to_string(kDataflowPort),
      kOpenMetricsArg,
  });
  for (const std::string& a : ServingTlsArgs()) args.push_back(a);
  WorkerContainerSpec c;
  c.name = "dataflow";
  c.https = true;
  c.image = images.dataflow;
  c.pull_policy = images.pull_policy;
  c.args = args;
  c.env = env;
  c.http_port = kDataflowPort;
  c.resources = {{"requests", {{"cpu", "500m"}, {"memory", "512Mi"}}},
                 {"limits", {{"memory", "4Gi"}}}};
  c.mounts = mounts;
  const json container = WorkerContainer(c);
  json meta = Meta(df, DataflowPodName(name), true);
  meta["annotations"] = ScrapeAnnotations(kDataflowPort, /*https=*/true);
  meta["annotations"][kConfigHashAnnotation] = JsonHash(DesiredDataflowConfigMap(df)["data"]);
  json spec = {{"containers", json::array({container})},
               {"volumes", volumes},
               {"restartPolicy", "Always"},
               // Service links would put SLUICE_DATAFLOW_PORT=tcp://... into the environment,
               // which the config loader reads as a flag value.
               {"enableServiceLinks", false},
               {"terminationGracePeriodSeconds", 30}};
  HardenPodSpec(spec);
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec}};
}

json DataflowStatusFromWorker(const json& df, const json& worker, const json& previous,
                              double seconds_since_previous) {
  json status = json::object();
  status["endpoint"] = DataflowEndpoint(df);
  int64_t buffered = 0, accepted = 0, stale = 0;
  json policies = json::array();
  const json worker_policies = worker.value("policies", json::object());
  for (const auto& [name, p] : worker_policies.items()) {
    const int64_t b = p.value("buffered_samples", int64_t{0});
    const int64_t a = p.value("accepted_samples", int64_t{0});
    const int64_t s = p.value("stale_dropped_samples", int64_t{0});
    buffered += b;
    accepted += a;
    stale += s;
    policies.push_back({{"name", name},
                        {"buffered", b},
                        {"accepted", a},
                        {"filtered", p.value("filtered_samples", int64_t{0})},
                        {"staleDropped", s},
                        // The CRD counts batches served and acknowledged.
                        {"servedBatches", p.value("acked_batches", int64_t{0})},
                        {"latestVersion", p.value("version", int64_t{0})}});
  }
  status["policies"] = policies;
  status["buffered"] = buffered;
  status["accepted"] = accepted;
  status["staleDropped"] = stale;
  status["promptsConsumed"] = worker.value("/prompts/consumed"_json_pointer, int64_t{0});
  status["promptsTotal"] = worker.value("/prompts/total"_json_pointer, int64_t{0});
  // The worker's cursor reports `epochs` once done; the CRD's epoch is the current one, from 0.
  int64_t epoch = worker.value("epoch", int64_t{0});
  if (const int64_t epochs = worker.value("epochs", int64_t{0}); epochs > 0) {
    epoch = std::min(epoch, epochs - 1);
  }
  status["epoch"] = epoch;
  double rate = previous.value("trajectoriesPerSecond", 0.0);
  if (seconds_since_previous > 0 && previous.contains("accepted")) {
    const int64_t before = previous.value("accepted", int64_t{0});
    rate =
        accepted >= before ? static_cast<double>(accepted - before) / seconds_since_previous : 0.0;
  }
  status["trajectoriesPerSecond"] = rate;
  const json last =
      worker.contains("/eval/last"_json_pointer) ? worker.at("/eval/last"_json_pointer) : json();
  // accuracy is the share of correct completions (avg@k; correct = the full reward), not the mean
  // reward, so partial-credit rewards do not inflate it. The CRD has no mean-reward field.
  if (last.is_object() && last.contains("version") && last.contains("overall_avg_at_k")) {
    status["evaluation"] = {{"version", last["version"]},
                            {"accuracy", last["overall_avg_at_k"]},
                            {"passAtK", last.value("overall_pass_at_k", 0.0)}};
    AddEpisodeFigures(last, &status["evaluation"]);
  } else if (previous.contains("evaluation")) {
    status["evaluation"] = previous["evaluation"];
  }
  return status;
}

}  // namespace sluice::controllers
