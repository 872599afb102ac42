// The objects the operator runs a Dataflow with, as pure functions of the Dataflow (validated and
// defaulted) and the operator's settings (docs/operator.md, "Dataflow"):
//
//   ConfigMap  <df>-config   dataflow.json: the Dataflow object, read by sluice-dataflow
//                            --dataflow-manifest
//   Secret     <df>-token    the experiment's bearer token, every route (made once, never
//                            rewritten): the dataflow's, the trainers', the operator's
//   Secret     <df>-rollout-token
//                            the rollout replicas' narrower token (made once, never rewritten)
//   PVC        <df>-wal      the write-ahead log; NOT owned, so deleting the Dataflow keeps it
//   Service    <df>          port 8080 "http" -> the dataflow pod (<df>.<ns>.svc:8080)
//   Secret     <df>-tls, ConfigMap <df>-ca, and the namespace's Secret sluice-ca: the
//                            dataflow's certificate and the CA that verifies it (dataflow_tls.h)
//   Pod        <df>-dataflow sluice-dataflow serving HTTPS, restartPolicy Always, readiness
//                            /readyz, liveness /healthz (scheme HTTPS); annotated with the config
//                            hash so a spec change replaces it, and for Prometheus
//                            (ScrapeAnnotations); hardened (pod_hardening.h, read-only root file
//                            system) with an emptyDir "tmp" at /tmp and TMPDIR=/tmp
//                            (worker_scratch.h)
//
// Every child carries StandardLabels plus sluice.dev/dataflow=<df>; all but the PVC are
// controlled by the Dataflow (ownerReferences), so kube's garbage collector deletes them with it.
// Label values go through LabelValue, names through SubdomainName and the Service's through
// DnsLabelName (labels.h): a Dataflow name over 63 characters, or holding '.', gives a truncated,
// hashed Service name (and endpoint); short names are used as they are.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace sluice::controllers {

struct WorkerImages {
  std::string dataflow = "sluice/dataflow:0.1.0";
  std::string rollout = "sluice/rollout:0.1.0";
  std::string trainer = "sluice/trainer:0.1.0";
  // The inference servers of RolloutPools with spec.engine.type vllm or sglang and no
  // spec.engine.image (external_engine.h): the releases whose HTTP APIs the adapter follows
  // (docs/rollout.md, "External engines").
  std::string vllm = "vllm/vllm-openai:v0.11.0";
  std::string sglang = "lmsysorg/sglang:v0.5.4";
  std::string pull_policy = "IfNotPresent";
  // Not an image but the operator's other setting for worker pods: the seccomp profile of the
  // rollout container, relative to the kubelet's seccomp directory (a `Localhost` profile such
  // as the chart's files/rollout-seccomp.json, which allows the namespaced sandbox's unshare and
  // mount that `RuntimeDefault` denies); empty: the pod's RuntimeDefault (pod_hardening.h).
  std::string rollout_seccomp_profile;
};

// Every worker pod (dataflow, rollout, trainer) passes this flag, so that Prometheus, which holds
// no Dataflow's token, can scrape /metrics; every other route still needs the token.
inline constexpr char kOpenMetricsArg[] = "--metrics-require-token=false";

// The conventional Prometheus annotations every worker pod carries: prometheus.io/scrape "true",
// prometheus.io/port `port` (the pod's HTTP port, which serves /metrics too) and
// prometheus.io/path "/metrics". A real cluster's kubernetes_sd_configs pod job with the usual
// relabelling scrapes the pod there, and so does `sluice up --prometheus` through the node
// agent's target list (docs/operator.md, "Scraping the workers"). With `https`, also
// prometheus.io/scheme "https".
nlohmann::json ScrapeAnnotations(int port, bool https = false);

inline constexpr int kDataflowPort = 8080;
// Annotation on the dataflow pod: JsonHash of its ConfigMap's data (a change replaces the pod).
inline constexpr char kConfigHashAnnotation[] = "sluice.dev/config-hash";

std::string DataflowConfigMapName(const std::string& dataflow);
std::string DataflowTokenSecretName(const std::string& dataflow);
// The rollout replicas' token (Secret <df>-rollout-token, key `token`). It admits only leasing,
// submitting and reading versions and weights (dataflow/rollout_route_scope.h,
// weights/weight_read_scope.h); the Dataflow's own token (<df>-token) admits everything. The
// rollout pods mount only this one; the dataflow and trainer pods mount it beside their own, to
// admit it (--rollout-token-file).
std::string DataflowRolloutTokenSecretName(const std::string& dataflow);
inline constexpr char kRolloutTokenMountDir[] = "/var/run/sluice/rollout-token";
// The dataflow or trainer pod's volume and mount of the rollout token, and its flag.
nlohmann::json RolloutTokenVolume(const std::string& dataflow);
nlohmann::json RolloutTokenMount();
std::string RolloutTokenFileArg();
std::string DataflowClaimName(const std::string& dataflow);
std::string DataflowPodName(const std::string& dataflow);
// "<df>", a DNS label: DnsLabelName(dataflow).
std::string DataflowServiceName(const std::string& dataflow);
// "https://<DataflowServiceName(df)>.<ns>.svc:8080": where workers and trainers reach the
// dataflow (its certificate: dataflow_tls.h).
std::string DataflowEndpoint(const nlohmann::json& dataflow);

nlohmann::json DesiredDataflowConfigMap(const nlohmann::json& dataflow);
// `token`: the random token (hex) the caller generated; used only when the Secret is created.
nlohmann::json DesiredDataflowTokenSecret(const nlohmann::json& dataflow, const std::string& token);
// Likewise for the rollout replicas' token.
nlohmann::json DesiredDataflowRolloutTokenSecret(const nlohmann::json& dataflow,
                                                 const std::string& token);
nlohmann::json DesiredDataflowClaim(const nlohmann::json& dataflow);
nlohmann::json DesiredDataflowService(const nlohmann::json& dataflow);
nlohmann::json DesiredDataflowPod(const nlohmann::json& dataflow, const WorkerImages& images);

// The Dataflow's status fields (besides conditions) from the worker's GET /v1/status reply:
// endpoint, per-policy buffered/accepted/filtered/staleDropped/servedBatches (acknowledged
// batches)/latestVersion, totals, prompts consumed/total, epoch (0-based: at most epochs - 1,
// also once the last epoch is done) and the newest evaluation round (accuracy = its
// overall_avg_at_k, the share of completions earning the full reward; passAtK; toolCallShare and
// policies[] {name, meanReward, meanRewardWhenCorrect, meanRewardWhenWrong} when the round has
// them: the tool-call share and the non-primary policies' rewards). `previous` supplies
// trajectoriesPerSecond's baseline: (accepted now - accepted then) / `seconds_since_previous`.
nlohmann::json DataflowStatusFromWorker(const nlohmann::json& dataflow,
                                        const nlohmann::json& worker_status,
                                        const nlohmann::json& previous_status,
                                        double seconds_since_previous);

// The shortest span, in seconds, over which trajectoriesPerSecond is measured: the controller
// keeps one baseline sample until this long has passed, and until then republishes the last rate.
// Reconciles come back to back (every status write is itself a watch event), so a rate over the
// milliseconds between two of them would read no trajectory at all and publish 0.
inline constexpr double kTrajectoryRateWindowSeconds = 5;

}  // namespace sluice::controllers
