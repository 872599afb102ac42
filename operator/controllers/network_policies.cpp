#include "operator/controllers/network_policies.h"

#include "operator/controllers/dataflow/desired_objects.h"
#include "operator/controllers/labels.h"
#include "operator/controllers/object_meta.h"
#include "operator/controllers/rolloutpool/desired_pods.h"
#include "operator/controllers/trainerjob/desired_pods.h"

namespace sluice::controllers {

using nlohmann::json;

namespace {

// A label selector as the API server stores it (Go's omitempty): matchLabels and
// matchExpressions only when non-empty, an expression's values only when non-empty. Without this a
// user's `matchExpressions: []` would make the stored policy differ from the desired one forever.
json StoredSelector(const json& selector) {
  json out = json::object();
  if (!selector.is_object()) return out;
  const json labels = selector.value("matchLabels", json());
  if (labels.is_object() && !labels.empty()) out["matchLabels"] = labels;
  const json expressions = selector.value("matchExpressions", json());
  if (expressions.is_array() && !expressions.empty()) {
    json list = json::array();
    for (const json& e : expressions) {
      if (!e.is_object()) continue;
      json item = {{"key", e.value("key", "")}, {"operator", e.value("operator", "")}};
      const json values = e.value("values", json());
      if (values.is_array() && !values.empty()) item["values"] = values;
      list.push_back(std::move(item));
    }
    if (!list.empty()) out["matchExpressions"] = std::move(list);
  }
  return out;
}

json NameSelector(const char* name) { return {{"matchLabels", {{kNameLabel, name}}}}; }

// The operator's pods, in whichever namespace it runs.
json OperatorPeer() {
  return {{"namespaceSelector", json::object()},
          {"podSelector",
           {{"matchLabels",
             {{kNameLabel, kOperatorPodName}, {kComponentLabel, kOperatorPodComponent}}}}}};
}

// spec.networkPolicy.prometheus, with the CRD's defaults for what is absent.
json PrometheusPeer(const json& df) {
  const json prometheus = df.value("/spec/networkPolicy/prometheus"_json_pointer, json::object());
  json namespaces = json::object();
  json pods = NameSelector(kPrometheusPodName);
  if (prometheus.is_object()) {
    namespaces = prometheus.value("namespaceSelector", namespaces);
    pods = prometheus.value("podSelector", pods);
  }
  return {{"namespaceSelector", StoredSelector(namespaces)}, {"podSelector", StoredSelector(pods)}};
}

// A peer selecting the experiment's pods of one role (the policy's own namespace).
json RolePeer(const json& df, const std::string& component) {
  return {{"podSelector", ExperimentPodSelector(df, component)}};
}

json TcpPort(int port) { return {{"protocol", "TCP"}, {"port", port}}; }

// An ingress rule from `peers` to `port`; port 0: every port.
json Rule(json peers, int port) {
  json rule = {{"from", std::move(peers)}};
  if (port > 0) rule["ports"] = json::array({TcpPort(port)});
  return rule;
}

json PolicyObject(json meta, json pod_selector, json ingress) {
  json spec = {{"podSelector", std::move(pod_selector)},
               {"policyTypes", json::array({"Ingress"})},
               {"ingress", std::move(ingress)}};
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", std::move(meta)},
          {"spec", std::move(spec)}};
}

json Policy(const json& df, const std::string& name, const std::string& component, json ingress) {
  // Every worker's /metrics is on its HTTP port, and the operator calls that port too.
  const int http_port = component == "dataflow"  ? kDataflowPort
                        : component == "trainer" ? kTrainerPort
                                                 : kRolloutPort;
  ingress.push_back(Rule(json::array({OperatorPeer()}), http_port));
  ingress.push_back(Rule(json::array({PrometheusPeer(df)}), http_port));
  json meta = {{"name", name},
               {"namespace", Namespace(df)},
               {"labels", StandardLabels("sluice-dataflow", Name(df), kNetworkPolicyComponent,
                                         {{kDataflowLabel, Name(df)}})},
               {"ownerReferences", json::array({ControllerRef(df)})}};
  return PolicyObject(std::move(meta), ExperimentPodSelector(df, component), std::move(ingress));
}

}  // namespace

std::string DataflowNetworkPolicyName(const std::string& df) {
  return SubdomainName(df, "-dataflow-ingress");
}
std::string RolloutNetworkPolicyName(const std::string& df) {
  return SubdomainName(df, "-rollout-ingress");
}
std::string TrainerNetworkPolicyName(const std::string& df) {
  return SubdomainName(df, "-trainer-ingress");
}

std::vector<std::string> NetworkPolicyNames(const std::string& df) {
  return {DataflowNetworkPolicyName(df), RolloutNetworkPolicyName(df),
          TrainerNetworkPolicyName(df)};
}

bool NetworkPoliciesEnabled(const json& df) {
  const json enabled = df.value("/spec/networkPolicy/enabled"_json_pointer, json(true));
  return !enabled.is_boolean() || enabled.get<bool>();
}

json ExperimentPodSelector(const json& df, const std::string& component) {
  return {{"matchLabels", {{kComponentLabel, component}, {kDataflowLabel, LabelValue(Name(df))}}}};
}

std::vector<json> DesiredNetworkPolicies(const json& df) {
  if (!NetworkPoliciesEnabled(df)) return {};
  const std::string name = Name(df);
  const json rollouts = RolePeer(df, "rollout");
  const json trainers = RolePeer(df, "trainer");
  return {
      Policy(df, DataflowNetworkPolicyName(name), "dataflow",
             json::array({Rule(json::array({rollouts, trainers}), kDataflowPort)})),
      Policy(df, RolloutNetworkPolicyName(name), "rollout",
             json::array({Rule(json::array({rollouts}), kRolloutPort)})),
      // Rank to rank is each job's own gang policy.
      Policy(df, TrainerNetworkPolicyName(name), "trainer",
             json::array({Rule(json::array({rollouts}), kTrainerPort)})),
  };
}

std::string GangNetworkPolicyName(const std::string& job) {
  return SubdomainName(job, "-gang-ingress");
}

json GangPodSelector(const json& job) {
  return {{"matchLabels",
           {{kComponentLabel, "trainer"}, {kTrainerJobLabel, JobLabelValue(Name(job))}}}};
}

json DesiredGangNetworkPolicy(const json& job, const json& df) {
  if (!NetworkPoliciesEnabled(df)) return nullptr;
  json meta = {
      {"name", GangNetworkPolicyName(Name(job))},
      {"namespace", Namespace(job)},
      {"labels", StandardLabels("sluice-trainer", Name(job), kNetworkPolicyComponent,
                                {{kTrainerJobLabel, Name(job)}, {kDataflowLabel, Name(df)}})},
      {"ownerReferences", json::array({ControllerRef(job)})}};
  // Every port: the rendezvous store and Gloo's pairs, which listen on ports Gloo picks.
  json peers = json::array({{{"podSelector", GangPodSelector(job)}}});
  return PolicyObject(std::move(meta), GangPodSelector(job),
                      json::array({Rule(std::move(peers), 0)}));
}

}  // namespace sluice::controllers
