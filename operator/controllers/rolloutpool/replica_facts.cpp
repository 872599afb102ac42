#include "operator/controllers/rolloutpool/replica_facts.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "common/time_format.h"
#include "operator/controllers/abandoned_termination.h"
#include "operator/controllers/object_meta.h"
#include "operator/controllers/rolloutpool/desired_pods.h"

namespace sluice::controllers::rolloutpool {

using nlohmann::json;

namespace {

bool HasCondition(const json& pod, const std::string& type, const std::string& status,
                  const std::string& reason = "") {
  for (const json& c : pod.value("/status/conditions"_json_pointer, json::array())) {
    if (c.value("type", "") == type && c.value("status", "") == status &&
        (reason.empty() || c.value("reason", "") == reason)) {
      return true;
    }
  }
  return false;
}

}  // namespace

Replica ReplicaFromPod(const json& pod, const std::string& template_hash, int64_t now_seconds,
                       int64_t abandon_after_seconds) {
  Replica r;
  placement::ReplicaFacts& f = r.placement;
  f.name = StringAt(pod, "/metadata/name");
  f.region = StringAt(pod, "/metadata/labels/sluice.dev~1region");
  f.replica_index =
      std::atoi(StringAt(pod, "/metadata/labels/sluice.dev~1replica-index", "0").c_str());
  f.ready = HasCondition(pod, "Ready", "True");
  r.phase = StringAt(pod, "/status/phase", "Pending");
  f.pending_unschedulable =
      r.phase == "Pending" && HasCondition(pod, "PodScheduled", "False", "Unschedulable");
  f.unscheduled = r.phase == "Pending" && !HasCondition(pod, "PodScheduled", "True");
  if (f.pending_unschedulable) {
    for (const json& c : pod.value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == "PodScheduled") f.scheduler_message = c.value("message", "");
    }
  }
  if (r.phase == "Pending") {
    f.pending_since_seconds = UnixSecondsOrZero(StringAt(pod, "/metadata/creationTimestamp"));
  }
  r.terminating = pod.contains("/metadata/deletionTimestamp"_json_pointer);
  if (pod.contains("/metadata/annotations/sluice.dev~1draining-since"_json_pointer)) {
    r.draining_since =
        UnixSecondsOrZero(StringAt(pod, "/metadata/annotations/sluice.dev~1draining-since"));
  }
  f.draining = r.draining_since.has_value() || r.terminating;
  r.uid = StringAt(pod, "/metadata/uid");
  const std::string ip = StringAt(pod, "/status/podIP");
  r.url = ip.empty() ? "" : "https://" + ip + ":" + std::to_string(kRolloutPort);
  r.current = StringAt(pod, "/metadata/labels/sluice.dev~1template-hash") == template_hash;
  r.termination_abandoned = TerminationAbandoned(pod, now_seconds, abandon_after_seconds);
  return r;
}

int64_t MaxUnavailable(const json& pool) {
  const json v = pool.value("/spec/updateStrategy/maxUnavailable"_json_pointer, json(1));
  const json replicas_json = pool.value("/spec/replicas"_json_pointer, json(0));
  const int64_t replicas = replicas_json.is_number_integer() ? replicas_json.get<int64_t>() : 0;
  if (v.is_number_integer()) return std::max<int64_t>(1, v.get<int64_t>());
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (!s.empty() && s.back() == '%') {
      const double pct = std::atof(s.substr(0, s.size() - 1).c_str());
      return std::max<int64_t>(1, static_cast<int64_t>(std::floor(replicas * pct / 100.0)));
    }
    return std::max<int64_t>(1, std::atoll(s.c_str()));
  }
  return 1;
}

}  // namespace sluice::controllers::rolloutpool
