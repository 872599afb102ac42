// The NetworkPolicies of one experiment (a Dataflow and the RolloutPools and TrainerJobs whose
// spec.dataflowRef names it), as a pure function of the Dataflow (docs/operator.md,
// "NetworkPolicies"). Three policies, each selecting one role's pods of the experiment and
// admitting only what that role is called by; ingress only (policyTypes [Ingress]), so the
// workers' own connections out (model downloads, HTTP environments, DNS) are not restricted:
//
//   NetworkPolicy <df>-dataflow-ingress   the dataflow pod:
//       from the experiment's rollout and trainer pods, TCP 8080 (leases, trajectories, batches,
//       version announcements)
//   NetworkPolicy <df>-trainer-ingress    the experiment's trainer rank pods:
//       from the experiment's rollout pods, TCP 8080 (GET /v1/weights/<v> on rank 0)
//   NetworkPolicy <df>-rollout-ingress    the experiment's rollout replica pods:
//       from the experiment's rollout pods, TCP 8080 (weight relays: a region's relay replica
//       serves /v1/relay/<policy>/v1/weights/... to its peers)
//   and, in all three:
//       from the operator's pods (any namespace, app.kubernetes.io/name=sluice and
//       app.kubernetes.io/component=operator, as the Helm chart labels them), TCP 8080
//       (GET /v1/status, POST /v1/drain and /v1/relay, all at the pod IP)
//       from Prometheus, TCP 8080 (/metrics shares the HTTP port; every /v1 route still needs
//       the experiment's token): spec.networkPolicy.prometheus's namespaceSelector and
//       podSelector, by default every namespace and app.kubernetes.io/name=prometheus
//
// A role's pods are selected by app.kubernetes.io/component (dataflow, rollout, trainer) and
// sluice.dev/dataflow = LabelValue(<df>), which the dataflow pod, every rollout replica and every
// trainer rank of the experiment carry (dataflow/desired_objects.h, rolloutpool/desired_pods.h,
// trainerjob/desired_pods.h); pools and jobs reference a Dataflow of their own namespace, so peer
// pod selectors need no namespace selector. These rules are experiment-wide: rollout pods of two
// pools of one experiment may reach each other's 8080. The kubelet's probes come from the pod's
// node, which NetworkPolicies always admit.
//
// One more policy per TrainerJob, made by the TrainerJob controller and owned by the job:
//
//   NetworkPolicy <job>-gang-ingress      the job's rank pods (sluice.dev/trainer-job):
//       from the job's own rank pods, every port: rank 0's rendezvous store (TCPStore, 29500)
//       and Gloo's pairwise connections on ports it picks, both unauthenticated
//       (docs/security.md), so no other pod reaches them, not even a rank of another TrainerJob
//       of the experiment (solve-and-verify trains two policies side by side).
//
// NetworkPolicies add up: a rank pod admits what either of its two policies admits.
//
// spec.networkPolicy.enabled false (default true) gives no policies, the gangs' included: the
// controllers delete the ones they made. Every policy carries StandardLabels("sluice-dataflow",
// <df>, "network-policy") plus sluice.dev/dataflow, and an ownerReference to the Dataflow
// (controller), so the garbage collector deletes it with the Dataflow. Every field the API server
// defaults is written out (policyTypes, each port's protocol, selectors without empty members), so
// a stored policy equals the desired one and the controller can compare specs.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sluice::controllers {

// app.kubernetes.io/name and app.kubernetes.io/component of the operator's own Pods: the Helm
// chart's selector labels (helm/sluice/templates/_helpers.tpl, "sluice.selectorLabels", without
// the release's instance). The policies admit pods with both labels, in any namespace, to the
// workers' HTTP port; keep them in step with the chart. An operator running outside the cluster
// (`sluice-operator --kubeconfig`) cannot reach the workers once a CNI enforces these policies:
// switch them off with spec.networkPolicy.enabled: false.
inline constexpr char kOperatorPodName[] = "sluice";
inline constexpr char kOperatorPodComponent[] = "operator";
// app.kubernetes.io/name of Prometheus's Pods, the default spec.networkPolicy.prometheus
// .podSelector: the label the prometheus-operator and the community charts give them.
inline constexpr char kPrometheusPodName[] = "prometheus";
// app.kubernetes.io/component of the policies themselves.
inline constexpr char kNetworkPolicyComponent[] = "network-policy";

// "<df>-dataflow-ingress", "<df>-rollout-ingress", "<df>-trainer-ingress" (SubdomainName).
std::string DataflowNetworkPolicyName(const std::string& dataflow);
std::string RolloutNetworkPolicyName(const std::string& dataflow);
std::string TrainerNetworkPolicyName(const std::string& dataflow);
// The three names, in the order above: what a Dataflow may own.
std::vector<std::string> NetworkPolicyNames(const std::string& dataflow);

// spec.networkPolicy.enabled; true when absent (the CRD's default).
bool NetworkPoliciesEnabled(const nlohmann::json& dataflow);

// The pod selector {"matchLabels": {app.kubernetes.io/component: `component`,
// sluice.dev/dataflow: LabelValue(<df>)}} of the experiment's pods of one role ("dataflow",
// "rollout", "trainer").
nlohmann::json ExperimentPodSelector(const nlohmann::json& dataflow, const std::string& component);

// The desired policies, in NetworkPolicyNames order (networking.k8s.io/v1 JSON with apiVersion,
// kind, metadata {name, namespace, labels, ownerReferences} and spec); empty when switched off.
// `dataflow` is validated and defaulted; absent spec.networkPolicy fields take the CRD's
// defaults.
std::vector<nlohmann::json> DesiredNetworkPolicies(const nlohmann::json& dataflow);

// "<job>-gang-ingress" (SubdomainName).
std::string GangNetworkPolicyName(const std::string& job);

// The pod selector {"matchLabels": {app.kubernetes.io/component: trainer, sluice.dev/trainer-job:
// JobLabelValue(<job>)}} of one TrainerJob's rank pods.
nlohmann::json GangPodSelector(const nlohmann::json& job);

// The job's gang policy, or null when its Dataflow's policies are switched off. It carries
// StandardLabels("sluice-trainer", <job>, "network-policy") plus sluice.dev/trainer-job and
// sluice.dev/dataflow, and an ownerReference to the TrainerJob (controller). `job` and `dataflow`
// (the one its spec.dataflowRef names) are validated and defaulted.
nlohmann::json DesiredGangNetworkPolicy(const nlohmann::json& job, const nlohmann::json& dataflow);

}  // namespace sluice::controllers
