#include "operator/controllers/trainerjob/job_facts.h"

#include <cstdlib>

#include "common/json/fields.h"
#include "common/time_format.h"
#include "operator/controllers/object_meta.h"
#include "operator/controllers/trainerjob/desired_pods.h"

namespace sluice::controllers::trainerjob {

using nlohmann::json;

RankPod RankPodFrom(const json& pod, int attempt, const std::string& template_hash) {
  RankPod p;
  p.name = StringAt(pod, "/metadata/name");
  p.rank = std::atoi(StringAt(pod, "/metadata/labels/sluice.dev~1rank", "0").c_str());
  p.current = RankPodCurrent(pod, attempt, template_hash);
  p.phase = StringAt(pod, "/status/phase");
  p.reason = StringAt(pod, "/status/reason");
  p.terminating = pod.contains("/metadata/deletionTimestamp"_json_pointer);
  for (const json& c : pod.value("/status/conditions"_json_pointer, json::array())) {
    if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False" &&
        c.value("reason", "") == "Unschedulable") {
      p.unschedulable = true;
    }
  }
  p.created_seconds = UnixSecondsOrZero(StringAt(pod, "/metadata/creationTimestamp"));
  return p;
}

JobFacts JobFactsOf(const json& job, const std::vector<json>& pods,
                    const std::string& template_hash) {
  JobFacts f;
  const json status = job.value("status", json::object());
  f.phase = StringAt(job, "/status/phase", "Pending");
  f.replicas = IntAt(job, "/spec/replicas", 1);
  f.steps = IntAt(job, "/spec/steps", 0);
  f.restarts = IntAt(job, "/status/restarts", 0);
  f.backoff_limit = IntAt(job, "/spec/runPolicy/backoffLimit", 3);
  const json suspend = job.value("/spec/runPolicy/suspend"_json_pointer, json(false));
  f.suspend = suspend.is_boolean() && suspend.get<bool>();
  f.ttl_seconds = OptionalIntAt(job, "/spec/runPolicy/ttlSecondsAfterFinished");
  f.active_deadline_seconds = OptionalIntAt(job, "/spec/runPolicy/activeDeadlineSeconds");
  f.completion_seconds = UnixSecondsOrZero(StringAt(job, "/status/completionTime"));
  if (status.contains("startTime"))
    f.start_seconds = UnixSecondsOrZero(StringAt(job, "/status/startTime"));
  f.final_version = IntAt(job, "/status/version", 0);
  const int attempt = static_cast<int>(f.restarts);
  for (const json& pod : pods) f.ranks.push_back(RankPodFrom(pod, attempt, template_hash));
  return f;
}

}  // namespace sluice::controllers::trainerjob
