#include "operator/operator_flags.h"

#include <chrono>
#include <string>

namespace sluice::op {

config::Spec OperatorFlagSpec() {
  using config::Option;
  using std::chrono::seconds;
  config::Spec spec("SLUICE_OPERATOR");
  spec.Add(Option::String("kubeconfig", "",
                          "Kubeconfig to use; empty: in-cluster config when running in a Pod, "
                          "else $KUBECONFIG or ~/.kube/config."))
      .Add(Option::String("context", "", "Kubeconfig context; empty: the current one."))
      .Add(Option::String("namespace", "",
                          "Namespaces to watch, comma-separated (a,b,c); empty: all namespaces."))
      .Add(Option::Bool("leader-elect", true,
                        "Compete for a Lease so that only one replica reconciles."))
      .Add(Option::String("leader-election-id", "sluice-operator", "Name of the Lease."))
      .Add(Option::String("leader-election-namespace", "",
                          "Namespace of the Lease; empty: the operator's own (in a Pod), else "
                          "kube-system."))
      .Add(Option::Duration("leader-election-lease-duration", seconds(15),
                            "How long a lease is valid without renewal."))
      .Add(Option::Duration("leader-election-renew-deadline", seconds(10),
                            "How long the leader keeps trying to renew before giving up."))
      .Add(Option::Duration("leader-election-retry-period", seconds(2),
                            "How often candidates try to acquire and the leader renews."))
      .Add(Option::String("metrics-bind-address", ":8080",
                          "host:port of /metrics (\":8080\": every address)."))
      .Add(Option::String("health-probe-bind-address", ":8081",
                          "host:port of /healthz and /readyz."))
      .Add(Option::Int("dataflow-concurrency", 4, "Dataflows reconciled at once.").Min(1).Max(64))
      .Add(Option::Int("rolloutpool-concurrency", 4, "RolloutPools reconciled at once.")
               .Min(1)
               .Max(64))
      .Add(Option::Int("trainerjob-concurrency", 4, "TrainerJobs reconciled at once.")
               .Min(1)
               .Max(64))
      .Add(Option::Int("policy-concurrency", 2, "Policies reconciled at once.").Min(1).Max(64))
      .Add(Option::Double("kube-api-qps", 50,
                          "Requests per second to the API server, sustained (client-side "
                          "token bucket); 0: unlimited.")
               .Min(0))
      .Add(Option::Int("kube-api-burst", 100,
                       "Requests to the API server allowed at once above kube-api-qps.")
               .Min(1))
      .Add(Option::Duration("gang-scheduling-timeout", seconds(120),
                            "A TrainerJob rank unschedulable this long makes the job "
                            "Admitted=False/GangPending."))
      .Add(Option::Duration("resync-period", std::chrono::minutes(10),
                            "How often every cached object is reconciled again."))
      .Add(Option::Duration("status-period", seconds(5),
                            "How often a running Dataflow's status is refreshed from its worker."))
      .Add(Option::String("prometheus-url", "",
                          "Prometheus HTTP API for RolloutPool autoscaling (spec.autoscaling)."))
      .Add(Option::String("dataflow-image", "sluice/dataflow:0.1.0", "Image of sluice-dataflow."))
      .Add(Option::String("rollout-image", "sluice/rollout:0.1.0", "Image of sluice-rollout."))
      .Add(Option::String("trainer-image", "sluice/trainer:0.1.0", "Image of sluice-trainer."))
      .Add(Option::String("vllm-image", "vllm/vllm-openai:v0.11.0",
                          "Engine container of RolloutPools with spec.engine.type vllm and no "
                          "spec.engine.image."))
      .Add(Option::String("sglang-image", "lmsysorg/sglang:v0.5.4",
                          "Engine container of RolloutPools with spec.engine.type sglang and no "
                          "spec.engine.image."))
      .Add(Option::String("rollout-seccomp-profile", "",
                          "Localhost seccomp profile of RolloutPool replicas' worker container, "
                          "relative to the kubelet's seccomp directory (e.g. "
                          "sluice/rollout.json: the chart's files/rollout-seccomp.json); empty: "
                          "RuntimeDefault, which denies the sandbox's namespaces."))
      .Add(Option::Enum("image-pull-policy", {"Always", "IfNotPresent", "Never"}, "IfNotPresent",
                        "imagePullPolicy of the worker containers."))
      .Add(Option::Enum("log-level", {"debug", "info", "warn", "error"}, "info",
                        "Minimum level of the JSON log lines on stderr."));
  return spec;
}

Result<std::pair<std::string, int>> BindAddress(const std::string& text, const std::string& flag) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    return Status::InvalidArgument("must be host:port or :port, got \"" + text + "\"", flag);
  }
  const std::string host = colon == 0 ? "0.0.0.0" : text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos ||
      port.size() > 5 || std::stoi(port) > 65535) {
    return Status::InvalidArgument("port must be 0..65535, got \"" + port + "\"", flag);
  }
  return std::make_pair(host, std::stoi(port));
}

}  // namespace sluice::op
