#include "localcluster/node/pod_status.h"

namespace sluice::node {

using nlohmann::json;

std::string PodPhase(const PodRuntimeStatus& runtime, const std::string& restart_policy) {
  if (!runtime.failed_reason.empty()) return "Failed";
  if (!runtime.initialized) {
    for (const ContainerStatus& c : runtime.init_containers) {
      // An init container that failed and will not be retried fails the pod.
      if (c.state == ContainerStatus::State::kTerminated && c.exit_code != 0 &&
          restart_policy == "Never") {
        return "Failed";
      }
    }
    return "Pending";
  }
  int waiting_never_ran = 0, running = 0, terminated = 0, succeeded = 0, failed = 0;
  for (const ContainerStatus& c : runtime.containers) {
    switch (c.state) {
      case ContainerStatus::State::kRunning:
        ++running;
        break;
      case ContainerStatus::State::kTerminated:
        ++terminated;
        (c.exit_code == 0 ? succeeded : failed) += 1;
        break;
      case ContainerStatus::State::kWaiting:
        if (!c.last_state.contains("terminated")) {
          ++waiting_never_ran;
        }
        break;
    }
  }
  if (waiting_never_ran > 0) return "Pending";
  if (running > 0) return "Running";
  const int n = static_cast<int>(runtime.containers.size());
  if (terminated == n && n > 0) {
    if (restart_policy == "Always") return "Running";
    if (restart_policy == "OnFailure") return failed > 0 ? "Running" : "Succeeded";
    return failed > 0 ? "Failed" : "Succeeded";
  }
  // Some wait to restart (CrashLoopBackOff): the pod is still Running.
  return "Running";
}

json ContainerStatusJson(const ContainerStatus& c) {
  json state;
  switch (c.state) {
    case ContainerStatus::State::kWaiting: {
      json w = {{"reason", c.reason.empty() ? "ContainerCreating" : c.reason}};
      if (!c.message.empty()) w["message"] = c.message;
      state = {{"waiting", w}};
      break;
    }
    case ContainerStatus::State::kRunning:
      state = {{"running", {{"startedAt", c.started_at}}}};
      break;
    case ContainerStatus::State::kTerminated: {
      json t = {
          {"exitCode", c.exit_code},
          {"reason", c.reason.empty() ? (c.exit_code == 0 ? "Completed" : "Error") : c.reason},
          {"startedAt", c.started_at},
          {"finishedAt", c.finished_at}};
      if (c.signal != 0) t["signal"] = c.signal;
      if (!c.message.empty()) t["message"] = c.message;
      if (!c.container_id.empty()) t["containerID"] = c.container_id;
      state = {{"terminated", t}};
      break;
    }
  }
  json out = {{"name", c.name},   {"image", c.image},         {"imageID", ""},
              {"ready", c.ready}, {"started", c.started},     {"restartCount", c.restart_count},
              {"state", state},   {"lastState", c.last_state}};
  if (!c.container_id.empty()) out["containerID"] = c.container_id;
  return out;
}

namespace {

json Condition(const std::string& type, bool ok, const std::string& reason,
               const std::string& message, const json& old_status, const std::string& now) {
  const std::string status = ok ? "True" : "False";
  std::string transition = now;
  for (const json& c : old_status.value("conditions", json::array())) {
    if (c.value("type", "") == type && c.value("status", "") == status &&
        c.contains("lastTransitionTime") && c["lastTransitionTime"].is_string()) {
      transition = c["lastTransitionTime"].get<std::string>();
    }
  }
  json cond = {{"type", type},
               {"status", status},
               {"lastProbeTime", nullptr},
               {"lastTransitionTime", transition}};
  if (!reason.empty()) cond["reason"] = reason;
  if (!message.empty()) cond["message"] = message;
  return cond;
}

}  // namespace

json PodStatusJson(const PodRuntimeStatus& runtime, const std::string& restart_policy,
                   const json& old_status, const std::string& now, const std::string& qos) {
  const std::string phase = PodPhase(runtime, restart_policy);
  const bool terminal = phase == "Succeeded" || phase == "Failed";
  std::vector<std::string> unready;
  for (const ContainerStatus& c : runtime.containers) {
    if (!c.ready) unready.push_back(c.name);
  }
  std::string unready_message;
  if (!unready.empty()) {
    unready_message = "containers with unready status: [";
    for (size_t i = 0; i < unready.size(); ++i) unready_message += (i ? " " : "") + unready[i];
    unready_message += "]";
  }
  const bool ready = unready.empty() && !terminal && !runtime.containers.empty();
  const std::string not_ready_reason = terminal ? "PodCompleted" : "ContainersNotReady";
  json conditions = json::array();
  conditions.push_back(Condition("PodReadyToStartContainers", !terminal, "", "", old_status, now));
  conditions.push_back(Condition("Initialized", runtime.initialized || terminal,
                                 runtime.initialized || terminal ? "" : "ContainersNotInitialized",
                                 "", old_status, now));
  conditions.push_back(Condition("Ready", ready, ready ? "" : not_ready_reason,
                                 ready || terminal ? "" : unready_message, old_status, now));
  conditions.push_back(Condition("ContainersReady", ready, ready ? "" : not_ready_reason,
                                 ready || terminal ? "" : unready_message, old_status, now));
  conditions.push_back(Condition("PodScheduled", true, "", "", old_status, now));

  json status = {{"phase", phase}, {"conditions", conditions}, {"qosClass", qos}};
  if (!runtime.host_ip.empty()) {
    status["hostIP"] = runtime.host_ip;
    status["hostIPs"] = json::array({{{"ip", runtime.host_ip}}});
  }
  if (!runtime.pod_ip.empty()) {
    status["podIP"] = runtime.pod_ip;
    status["podIPs"] = json::array({{{"ip", runtime.pod_ip}}});
  }
  if (!runtime.start_time.empty()) status["startTime"] = runtime.start_time;
  if (!runtime.failed_reason.empty()) {
    status["reason"] = runtime.failed_reason;
    status["message"] = runtime.failed_message;
  }
  json statuses = json::array();
  for (const ContainerStatus& c : runtime.containers) statuses.push_back(ContainerStatusJson(c));
  status["containerStatuses"] = statuses;
  if (!runtime.init_containers.empty()) {
    json init = json::array();
    for (const ContainerStatus& c : runtime.init_containers) init.push_back(ContainerStatusJson(c));
    status["initContainerStatuses"] = init;
  }
  return status;
}

std::string QosClass(const json& pod) {
  bool any = false, guaranteed = true;
  const json containers = pod.value("/spec/containers"_json_pointer, json::array());
  for (const json& c : containers) {
    const json requests = c.value("/resources/requests"_json_pointer, json::object());
    const json limits = c.value("/resources/limits"_json_pointer, json::object());
    for (const char* r : {"cpu", "memory"}) {
      const bool has_limit = limits.contains(r);
      const bool has_request = requests.contains(r);
      if (has_limit || has_request) any = true;
      if (!has_limit || (has_request && requests[r] != limits[r])) guaranteed = false;
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

}  // namespace sluice::node
