// A pod's status, computed from what the node agent knows of its containers, the way kubelet's
// status manager does: phase, conditions and containerStatuses.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sluice::node {

struct ContainerStatus {
  enum class State { kWaiting, kRunning, kTerminated };

  std::string name;
  std::string image;
  State state = State::kWaiting;
  std::string reason;  // Waiting: ContainerCreating, CrashLoopBackOff, ErrImagePull,
                       // CreateContainerConfigError; terminated: Completed, Error, OOMKilled.
  std::string message;
  int exit_code = 0;         // Terminated: the exit status, or 128 + signal.
  int signal = 0;            // Terminated by this signal; 0 otherwise.
  std::string started_at;    // RFC 3339; running and terminated.
  std::string finished_at;   // RFC 3339; terminated.
  std::string container_id;  // "sluice://<pid>" once started.
  int restart_count = 0;
  bool ready = false;
  bool started = false;  // Running and past its startup probe (none: running).
  nlohmann::json last_state = nlohmann::json::object();  // {"terminated": {...}} or {}.
};

struct PodRuntimeStatus {
  std::vector<ContainerStatus> init_containers;
  std::vector<ContainerStatus> containers;
  bool initialized = false;  // Every init container completed.
  std::string pod_ip;
  std::string host_ip;
  std::string start_time;  // RFC 3339: when the agent accepted the pod.
  // Set when the pod ended for a reason outside its containers (NodeLost, Evicted): the phase
  // is Failed with this reason and message.
  std::string failed_reason;
  std::string failed_message;
};

// kube's phase rule: Pending until every container has started once (and init containers
// completed); Succeeded/Failed when every container has terminated and restartPolicy will not
// restart them; Running otherwise.
std::string PodPhase(const PodRuntimeStatus& runtime, const std::string& restart_policy);

// The JSON of one containerStatuses entry.
nlohmann::json ContainerStatusJson(const ContainerStatus& status);

// The full `status` of the pod. `old_status` supplies lastTransitionTime of conditions whose
// status did not change and the PodScheduled condition; `now` is RFC 3339.
nlohmann::json PodStatusJson(const PodRuntimeStatus& runtime, const std::string& restart_policy,
                             const nlohmann::json& old_status, const std::string& now,
                             const std::string& qos_class);

// Guaranteed, Burstable or BestEffort, from the containers' requests and limits (kube's rule,
// simplified to cpu and memory).
std::string QosClass(const nlohmann::json& pod);

}  // namespace sluice::node
