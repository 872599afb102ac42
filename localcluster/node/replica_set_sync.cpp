#include "localcluster/node/replica_set_sync.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "common/time_format.h"
#include "localcluster/node/workload_objects.h"

namespace sluice::node {

using nlohmann::json;

namespace {

constexpr char kReplicaSetReplicaFailure[] = "ReplicaFailure";

Clock::WallTime ReplicaSetTimeAt(const json& object, const char* pointer) {
  return ParseTimeOrEpoch(StringAt(object, pointer));
}

// Pending (and a missing phase, as in kube's lookup) before Unknown before Running.
int PhaseOrdinal(const json& pod) {
  const std::string phase = StringAt(pod, "/status/phase");
  if (phase == "Unknown") return 1;
  if (phase == "Running") return 2;
  return 0;
}

Clock::WallTime ReadySince(const json& pod) {
  for (const json& c : pod.value("/status/conditions"_json_pointer, json::array())) {
    if (c.is_object() && c.value("type", "") == "Ready") {
      return ReplicaSetTimeAt(c, "/lastTransitionTime");
    }
  }
  return Clock::WallTime{};
}

int64_t MaxRestarts(const json& pod) {
  int64_t most = 0;
  for (const json& s : pod.value("/status/containerStatuses"_json_pointer, json::array())) {
    if (s.is_object()) most = std::max<int64_t>(most, s.value("restartCount", int64_t{0}));
  }
  return most;
}

// kube's afterOrZero: a zero time sorts first; otherwise the later time first. Returns
// -1 (a first), 1 (b first) or 0 (tie).
int LaterOrZeroFirst(Clock::WallTime a, Clock::WallTime b) {
  const Clock::WallTime zero{};
  if (a == b) return 0;
  if (a == zero || b == zero) return a == zero ? -1 : 1;
  return a > b ? -1 : 1;
}

struct Ranked {
  const json* pod;
  bool unassigned;
  int phase;
  bool ready;
  int64_t on_same_node;
  Clock::WallTime ready_since;
  int64_t restarts;
  Clock::WallTime created;
  std::string name;
};

bool DeleteFirst(const Ranked& a, const Ranked& b) {
  if (a.unassigned != b.unassigned) return a.unassigned;
  if (a.phase != b.phase) return a.phase < b.phase;
  if (a.ready != b.ready) return !a.ready;
  if (a.on_same_node != b.on_same_node) return a.on_same_node > b.on_same_node;
  if (a.ready && b.ready) {
    if (int c = LaterOrZeroFirst(a.ready_since, b.ready_since); c != 0) return c < 0;
  }
  if (a.restarts != b.restarts) return a.restarts > b.restarts;
  if (int c = LaterOrZeroFirst(a.created, b.created); c != 0) return c < 0;
  return a.name < b.name;
}

json ConditionsWithout(const json& conditions, const std::string& type) {
  json kept = json::array();
  if (!conditions.is_array()) return kept;
  for (const json& c : conditions) {
    if (!c.is_object() || c.value("type", "") != type) kept.push_back(c);
  }
  return kept;
}

}  // namespace

std::vector<json> PodsToDelete(const std::vector<json>& pods, size_t count) {
  std::map<std::string, int64_t> per_node;
  for (const json& p : pods) {
    const std::string node = StringAt(p, "/spec/nodeName");
    if (!node.empty()) ++per_node[node];
  }
  std::vector<Ranked> ranked;
  ranked.reserve(pods.size());
  for (const json& p : pods) {
    const std::string node = StringAt(p, "/spec/nodeName");
    ranked.push_back({&p, node.empty(), PhaseOrdinal(p), PodReadyCondition(p),
                      node.empty() ? 0 : per_node[node], ReadySince(p), MaxRestarts(p),
                      ReplicaSetTimeAt(p, "/metadata/creationTimestamp"),
                      StringAt(p, "/metadata/name")});
  }
  std::sort(ranked.begin(), ranked.end(), DeleteFirst);
  std::vector<json> out;
  for (size_t i = 0; i < ranked.size() && i < count; ++i) out.push_back(*ranked[i].pod);
  return out;
}

json PodFromTemplate(const json& replica_set) {
  const json tmpl = replica_set.value("/spec/template"_json_pointer, json::object());
  const json tmeta = tmpl.value("metadata", json::object());
  json meta = {{"generateName", StringAt(replica_set, "/metadata/name") + "-"},
               {"namespace", StringAt(replica_set, "/metadata/namespace")},
               {"ownerReferences",
                json::array({ControllerReference(replica_set, "apps/v1", "ReplicaSet")})}};
  for (const char* field : {"labels", "annotations", "finalizers"}) {
    if (tmeta.contains(field) && !tmeta[field].is_null() && !tmeta[field].empty()) {
      meta[field] = tmeta[field];
    }
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", meta},
          {"spec", tmpl.value("spec", json::object())}};
}

void SetReplicaFailure(json& status, const std::string& reason, const std::string& message,
                       Clock::WallTime now) {
  if (!status.is_object()) status = json::object();
  json conditions = status.value("conditions", json::array());
  if (!conditions.is_array()) conditions = json::array();
  std::string since = FormatTime(now);
  for (const json& c : conditions) {
    if (c.is_object() && c.value("type", "") == kReplicaSetReplicaFailure &&
        c.value("status", "") == "True" && c.contains("lastTransitionTime")) {
      since = c.value("lastTransitionTime", since);
    }
  }
  conditions = ConditionsWithout(conditions, kReplicaSetReplicaFailure);
  conditions.push_back({{"type", kReplicaSetReplicaFailure},
                        {"status", "True"},
                        {"lastTransitionTime", since},
                        {"reason", reason},
                        {"message", message}});
  status["conditions"] = conditions;
}

ReplicaSetPlan SyncReplicaSet(const json& rs, const std::vector<json>& pods, Clock::WallTime now,
                              const ReplicaSetSyncOptions& options) {
  ReplicaSetPlan plan;
  const std::string ns = StringAt(rs, "/metadata/namespace");
  const std::string uid = StringAt(rs, "/metadata/uid");
  const int64_t replicas = std::max<int64_t>(0, IntAt(rs, "/spec/replicas", 1));
  const int64_t min_ready = IntAt(rs, "/spec/minReadySeconds", 0);
  const json selector = rs.value("/spec/selector"_json_pointer, json());
  const json template_labels =
      rs.value("/spec/template/metadata/labels"_json_pointer, json::object());
  const bool deleting = IsBeingDeleted(rs);
  // An empty selector would claim every pod of the namespace: claim none.
  const bool can_claim = !deleting && LabelSelectorValid(selector) && !LabelSelectorEmpty(selector);
  const json reference = ControllerReference(rs, "apps/v1", "ReplicaSet");

  std::vector<json> active;
  std::vector<const json*> terminal;
  for (const json& pod : pods) {
    if (StringAt(pod, "/metadata/namespace") != ns) continue;
    const std::string controller = ControllerUid(pod);
    const json labels = pod.value("/metadata/labels"_json_pointer, json::object());
    const bool gone = IsTerminalPod(pod) || IsBeingDeleted(pod);
    if (controller == uid && !uid.empty()) {
      if (can_claim && !LabelSelectorMatches(selector, labels)) {
        plan.release.push_back(WithoutOwnerReference(pod, uid));
        continue;
      }
      if (IsBeingDeleted(pod)) continue;
      if (IsTerminalPod(pod)) {
        terminal.push_back(&pod);
        continue;
      }
      active.push_back(pod);
    } else if (controller.empty() && can_claim && !gone && LabelSelectorMatches(selector, labels)) {
      json adopted = WithOwnerReference(pod, reference);
      plan.adopt.push_back(adopted);
      active.push_back(std::move(adopted));
    }
  }

  if (options.manage && !deleting) {
    for (const json* p : terminal) plan.delete_terminal.push_back(*p);
    const int64_t have = static_cast<int64_t>(active.size());
    if (have < replicas) {
      plan.create = std::min<int64_t>(replicas - have, static_cast<int64_t>(options.burst));
      plan.pod = PodFromTemplate(rs);
    } else if (have > replicas) {
      plan.delete_pods = PodsToDelete(
          active, std::min<size_t>(static_cast<size_t>(have - replicas), options.burst));
    }
  }

  int64_t fully_labeled = 0, ready = 0, available = 0;
  for (const json& pod : active) {
    if (LabelSelectorMatches({{"matchLabels", template_labels}},
                             pod.value("/metadata/labels"_json_pointer, json::object()))) {
      ++fully_labeled;
    }
    if (PodReadyCondition(pod)) ++ready;
    if (PodAvailable(pod, min_ready, now)) ++available;
  }
  const json old_status = rs.value("status", json::object());
  json status = old_status.is_object() ? old_status : json::object();
  status["replicas"] = static_cast<int64_t>(active.size());
  status["fullyLabeledReplicas"] = fully_labeled;
  status["readyReplicas"] = ready;
  status["availableReplicas"] = available;
  status["observedGeneration"] = IntAt(rs, "/metadata/generation", 0);
  json conditions =
      ConditionsWithout(status.value("conditions", json::array()), kReplicaSetReplicaFailure);
  if (conditions.empty()) {
    status.erase("conditions");
  } else {
    status["conditions"] = conditions;
  }
  plan.status_changed = !SameWorkloadStatus(old_status, status);
  plan.status = std::move(status);
  return plan;
}

}  // namespace sluice::node
