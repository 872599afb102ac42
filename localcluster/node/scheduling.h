// The scheduler's decisions for sluice-node (the local cluster's scheduler plus kubelet): which
// node a pending pod may run on, and why none can. A small, deterministic subset of
// kube-scheduler: NodeUnschedulable, TaintToleration, NodeAffinity (nodeSelector and required
// node affinity) and NodeResourcesFit as filters; preferred node affinity, then least-allocated
// as scores; failure messages worded as kube's so `kubectl describe pod` reads the same.
//
// Objects are Kubernetes JSON (Pod, Node, toleration, taint, NodeSelectorTerm) exactly as the
// API server returns them; absent fields take their Kubernetes defaults. All resource amounts are
// in milli-units (see resource_quantity.h): 1 CPU = 1000, 1 byte = 1000, 1 GPU = 1000, and one
// pod counts as `pods: 1000`.
//
// Thread safety: every function here is pure (no state, no I/O, no clock): its result depends
// only on its arguments, so it is safe to call from any thread and trivially testable.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "localcluster/node/resource_quantity.h"

namespace sluice::node {

// Failure reasons, worded exactly as kube-scheduler's.
inline constexpr char kReasonUnschedulable[] = "node(s) were unschedulable";
inline constexpr char kReasonNodeAffinity[] = "node(s) didn't match Pod's node affinity/selector";
inline constexpr char kReasonTooManyPods[] = "Too many pods";
// The taint kube puts on cordoned nodes; tolerating it lets a pod onto an unschedulable node.
inline constexpr char kUnschedulableTaintKey[] = "node.kubernetes.io/unschedulable";

// What the pod asks of a node, as kube's scheduler computes it:
//   - per container, `resources.requests`, plus `resources.limits` for any resource that has a
//     limit but no request (the API server's defaulting, applied here in case it was skipped);
//   - summed over `spec.containers`;
//   - then, per resource, the max of that sum and each `spec.initContainers` entry (init
//     containers run one at a time before the app containers). Sidecars (init containers with
//     `restartPolicy: Always`) keep running, so like kube they are added to the sum and to every
//     later init container's need;
//   - plus `spec.overhead` when set (RuntimeClass pod overhead, as kube adds it);
//   - plus `pods: 1000` (the pod itself occupies one of the node's pod slots).
// Errors: InvalidArgument when a container's resources or a quantity do not parse.
Result<ResourceList> PodRequests(const nlohmann::json& pod);

// Whether any toleration in `tolerations` (a JSON array of core/v1 Toleration; null = none)
// tolerates `taint` (a core/v1 Taint), by kube's rules: a toleration with an effect must have the
// taint's effect (empty effect matches all effects); one with a key must have the taint's key;
// operator "Exists" then matches any value, operator "Equal" (the default) needs equal values.
// An empty key with "Exists" therefore tolerates every taint. tolerationSeconds is ignored (it
// only matters for eviction).
bool Tolerates(const nlohmann::json& tolerations, const nlohmann::json& taint);

// Whether `node` satisfies one NodeSelectorTerm: every requirement in `matchExpressions` (on the
// node's labels) and `matchFields` (on the node's fields) holds. Expressions:
//   In / NotIn: the label's value is / is not among `values` (NotIn also holds when the label is
//     absent); `values` must be non-empty.
//   Exists / DoesNotExist: the label is / is not present; `values` must be empty.
//   Gt / Lt: the label's value and the single entry of `values` both parse as base-10 int64 and
//     compare greater / less; an absent label or an invalid integer does not match.
// Fields: only `metadata.name`, with In / NotIn against `values` (kube allows exactly one value;
// several are accepted here as "any of" / "none of").
// A term with no requirements, or with an invalid requirement (unknown operator or key, wrong
// number of values), matches no node, as in kube.
bool MatchesNodeSelectorTerm(const nlohmann::json& term, const nlohmann::json& node);

// The reasons `pod` may NOT run on `node`; empty means it fits. `requested_on_node` is the sum of
// PodRequests of the non-terminal pods already bound to the node (the caller computes it).
// Checks, in kube-scheduler's default filter order; like kube's scheduling framework, the first
// failing check ends the evaluation, so the result holds the reasons of one check only:
//   1. spec.unschedulable (cordoned), unless the pod tolerates the NoSchedule taint
//      node.kubernetes.io/unschedulable: "node(s) were unschedulable".
//   2. the first NoSchedule or NoExecute taint in spec.taints the pod does not tolerate
//      (PreferNoSchedule taints never block): "node(s) had untolerated taint {KEY: VALUE}".
//   3. spec.nodeSelector (every entry must equal the node's label) and
//      spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution's
//      nodeSelectorTerms (ORed; an empty list matches nothing):
//      "node(s) didn't match Pod's node affinity/selector".
//   4. resources, against status.allocatable (a resource missing there is 0): "Too many pods"
//      when requested_on_node["pods"] + 1000 > allocatable pods, then one
//      "Insufficient RESOURCE" per other resource, by name, that the pod requests (> 0) where
//      requested_on_node[r] + request[r] > allocatable[r].
// If the pod's requests do not parse, the one reason is "Pod has invalid resource requests: " +
// the parse error; if the node's allocatable does not parse, step 4's one reason is
// "node(s) had invalid allocatable resources: " + the parse error.
std::vector<std::string> FitFailures(const nlohmann::json& pod, const nlohmann::json& node,
                                     const ResourceList& requested_on_node);

// The preferred node affinity score of `node` for `pod`: the sum of `weight` over the pod's
// spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution entries whose
// `preference` (a NodeSelectorTerm) the node matches. 0 when there are none.
int PreferredAffinityScore(const nlohmann::json& pod, const nlohmann::json& node);

// A candidate node: the Node object and the sum of PodRequests of the non-terminal pods already
// bound to it. `node` must outlive the call; null entries are skipped (and not counted).
struct NodeState {
  const nlohmann::json* node;
  ResourceList requested;
};

struct ScheduleDecision {
  std::string node_name;  // metadata.name of the chosen node; empty if none fits.
  std::string message;    // kube's FitError text when none fits; empty otherwise.
};

// Chooses a node for `pod`. Among the nodes where FitFailures is empty, picks the highest
// PreferredAffinityScore; ties go to the node whose most-used resource among cpu, memory and
// nvidia.com/gpu would be the smallest fraction of its allocatable after placing the pod (this
// spreads load; a resource with 0 allocatable and nothing requested counts as unused), then to
// the smallest node name. The result depends only on the arguments, not on their order.
// When no node fits, `message` is kube's FitError text:
//   "0/N nodes are available: " + "COUNT REASON" for each distinct reason (COUNT = the number of
//   nodes reporting it), sorted as plain strings and joined by ", ", + "."
// e.g. "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector,
// 2 Insufficient nvidia.com/gpu." With no nodes at all (kube says "no nodes available to schedule
// pods" there) the message is "0/0 nodes are available: no nodes registered."
ScheduleDecision SchedulePod(const nlohmann::json& pod, const std::vector<NodeState>& nodes);

}  // namespace sluice::node
