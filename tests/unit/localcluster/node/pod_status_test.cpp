#include "localcluster/node/pod_status.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sluice::node {
namespace {

using nlohmann::json;
using State = ContainerStatus::State;

const std::string kNow = "2024-05-01T12:00:00Z";
const std::string kEarlier = "2024-05-01T11:00:00Z";

ContainerStatus Waiting(const std::string& name, const std::string& reason = "") {
  ContainerStatus c;
  c.name = name;
  c.image = "img/" + name;
  c.state = State::kWaiting;
  c.reason = reason;
  return c;
}

ContainerStatus Running(const std::string& name, bool ready = true) {
  ContainerStatus c;
  c.name = name;
  c.image = "img/" + name;
  c.state = State::kRunning;
  c.started_at = "2024-05-01T10:00:00Z";
  c.container_id = "sluice://100";
  c.ready = ready;
  c.started = true;
  return c;
}

ContainerStatus Terminated(const std::string& name, int exit_code) {
  ContainerStatus c;
  c.name = name;
  c.image = "img/" + name;
  c.state = State::kTerminated;
  c.exit_code = exit_code;
  c.started_at = "2024-05-01T10:00:00Z";
  c.finished_at = "2024-05-01T10:05:00Z";
  c.container_id = "sluice://200";
  return c;
}

// Waiting to restart after a previous run (CrashLoopBackOff).
ContainerStatus Restarting(const std::string& name, int last_exit_code) {
  ContainerStatus c = Waiting(name, "CrashLoopBackOff");
  c.restart_count = 1;
  c.last_state = {{"terminated", {{"exitCode", last_exit_code}}}};
  return c;
}

PodRuntimeStatus Pod(std::vector<ContainerStatus> containers, bool initialized = true) {
  PodRuntimeStatus r;
  r.containers = std::move(containers);
  r.initialized = initialized;
  return r;
}

const json& Cond(const json& status, const std::string& type) {
  static const json kMissing;
  for (const json& c : status["conditions"]) {
    if (c["type"] == type) return c;
  }
  ADD_FAILURE() << "no condition " << type;
  return kMissing;
}

// --- PodPhase ----------------------------------------------------------------------------------

TEST(PodStatusPhaseTest, InitNotDoneIsPending) {
  PodRuntimeStatus r = Pod({Waiting("main")}, /*initialized=*/false);
  r.init_containers = {Running("init")};
  for (const char* policy : {"Always", "OnFailure", "Never"}) {
    EXPECT_EQ(PodPhase(r, policy), "Pending") << policy;
  }
}

TEST(PodStatusPhaseTest, InitFailedWithNeverIsFailed) {
  PodRuntimeStatus r = Pod({Waiting("main")}, /*initialized=*/false);
  r.init_containers = {Terminated("init-ok", 0), Terminated("init-bad", 2)};
  EXPECT_EQ(PodPhase(r, "Never"), "Failed");
  // Retried under the other policies.
  EXPECT_EQ(PodPhase(r, "OnFailure"), "Pending");
  EXPECT_EQ(PodPhase(r, "Always"), "Pending");
}

TEST(PodStatusPhaseTest, InitSucceededButNotAllDoneIsPending) {
  PodRuntimeStatus r = Pod({Waiting("main")}, /*initialized=*/false);
  r.init_containers = {Terminated("init-1", 0), Waiting("init-2")};
  EXPECT_EQ(PodPhase(r, "Never"), "Pending");
}

TEST(PodStatusPhaseTest, WaitingNeverRanIsPending) {
  EXPECT_EQ(PodPhase(Pod({Waiting("main")}), "Always"), "Pending");
  EXPECT_EQ(PodPhase(Pod({Waiting("main", "ErrImagePull")}), "Never"), "Pending");
  // One running, one never started: still Pending.
  EXPECT_EQ(PodPhase(Pod({Running("a"), Waiting("b")}), "Always"), "Pending");
}

TEST(PodStatusPhaseTest, RunningIsRunning) {
  EXPECT_EQ(PodPhase(Pod({Running("main")}), "Always"), "Running");
  EXPECT_EQ(PodPhase(Pod({Running("main", false)}), "Never"), "Running");
  EXPECT_EQ(PodPhase(Pod({Running("a"), Terminated("b", 0)}), "Never"), "Running");
  EXPECT_EQ(PodPhase(Pod({Running("a"), Terminated("b", 1)}), "Never"), "Running");
}

TEST(PodStatusPhaseTest, AllTerminatedWithAlwaysIsRunning) {
  EXPECT_EQ(PodPhase(Pod({Terminated("a", 0), Terminated("b", 0)}), "Always"), "Running");
  EXPECT_EQ(PodPhase(Pod({Terminated("a", 1)}), "Always"), "Running");
}

TEST(PodStatusPhaseTest, OnFailure) {
  EXPECT_EQ(PodPhase(Pod({Terminated("a", 0), Terminated("b", 0)}), "OnFailure"), "Succeeded");
  EXPECT_EQ(PodPhase(Pod({Terminated("a", 0), Terminated("b", 3)}), "OnFailure"), "Running");
}

TEST(PodStatusPhaseTest, Never) {
  EXPECT_EQ(PodPhase(Pod({Terminated("a", 0), Terminated("b", 0)}), "Never"), "Succeeded");
  EXPECT_EQ(PodPhase(Pod({Terminated("a", 0), Terminated("b", 137)}), "Never"), "Failed");
  EXPECT_EQ(PodPhase(Pod({Terminated("a", 1)}), "Never"), "Failed");
}

TEST(PodStatusPhaseTest, WaitingToRestartIsRunning) {
  EXPECT_EQ(PodPhase(Pod({Restarting("a", 1)}), "Always"), "Running");
  EXPECT_EQ(PodPhase(Pod({Restarting("a", 1)}), "OnFailure"), "Running");
  EXPECT_EQ(PodPhase(Pod({Restarting("a", 1), Terminated("b", 0)}), "OnFailure"), "Running");
}

TEST(PodStatusPhaseTest, FailedReasonIsFailed) {
  PodRuntimeStatus r = Pod({Running("main")});
  r.failed_reason = "NodeLost";
  EXPECT_EQ(PodPhase(r, "Always"), "Failed");
  PodRuntimeStatus pending = Pod({Waiting("main")}, /*initialized=*/false);
  pending.failed_reason = "Evicted";
  EXPECT_EQ(PodPhase(pending, "OnFailure"), "Failed");
}

// --- ContainerStatusJson -----------------------------------------------------------------------

TEST(PodStatusContainerTest, WaitingDefaultReason) {
  ContainerStatus c = Waiting("main");
  EXPECT_EQ(ContainerStatusJson(c), json::parse(R"({
      "name": "main", "image": "img/main", "imageID": "", "ready": false, "started": false,
      "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}},
      "lastState": {}})"));
}

TEST(PodStatusContainerTest, WaitingWithReasonAndMessage) {
  ContainerStatus c = Restarting("main", 1);
  c.message = "back-off 10s restarting failed container";
  json j = ContainerStatusJson(c);
  EXPECT_EQ(j["state"], json::parse(R"({"waiting": {"reason": "CrashLoopBackOff",
      "message": "back-off 10s restarting failed container"}})"));
  EXPECT_EQ(j["lastState"], json::parse(R"({"terminated": {"exitCode": 1}})"));
  EXPECT_EQ(j["restartCount"], 1);
  EXPECT_FALSE(j.contains("containerID"));
}

TEST(PodStatusContainerTest, Running) {
  ContainerStatus c = Running("main");
  c.restart_count = 2;
  EXPECT_EQ(ContainerStatusJson(c), json::parse(R"({
      "name": "main", "image": "img/main", "imageID": "", "ready": true, "started": true,
      "restartCount": 2, "state": {"running": {"startedAt": "2024-05-01T10:00:00Z"}},
      "lastState": {}, "containerID": "sluice://100"})"));
}

TEST(PodStatusContainerTest, TerminatedCompleted) {
  EXPECT_EQ(ContainerStatusJson(Terminated("main", 0))["state"], json::parse(R"({"terminated": {
      "exitCode": 0, "reason": "Completed", "startedAt": "2024-05-01T10:00:00Z",
      "finishedAt": "2024-05-01T10:05:00Z", "containerID": "sluice://200"}})"));
}

TEST(PodStatusContainerTest, TerminatedErrorWithSignal) {
  ContainerStatus c = Terminated("main", 137);
  c.signal = 9;
  c.message = "killed";
  json j = ContainerStatusJson(c);
  EXPECT_EQ(j["state"], json::parse(R"({"terminated": {
      "exitCode": 137, "reason": "Error", "signal": 9, "message": "killed",
      "startedAt": "2024-05-01T10:00:00Z", "finishedAt": "2024-05-01T10:05:00Z",
      "containerID": "sluice://200"}})"));
  EXPECT_EQ(j["containerID"], "sluice://200");
}

TEST(PodStatusContainerTest, TerminatedExplicitReasonKept) {
  ContainerStatus c = Terminated("main", 137);
  c.reason = "OOMKilled";
  c.container_id = "";
  json t = ContainerStatusJson(c)["state"]["terminated"];
  EXPECT_EQ(t["reason"], "OOMKilled");
  EXPECT_FALSE(t.contains("signal"));
  EXPECT_FALSE(t.contains("message"));
  EXPECT_FALSE(t.contains("containerID"));
}

// --- PodStatusJson -----------------------------------------------------------------------------

TEST(PodStatusJsonTest, AllReadyRunning) {
  PodRuntimeStatus r = Pod({Running("a"), Running("b")});
  json s = PodStatusJson(r, "Always", json::object(), kNow, "Burstable");
  EXPECT_EQ(s["phase"], "Running");
  EXPECT_EQ(s["qosClass"], "Burstable");
  EXPECT_EQ(s["conditions"], json::parse(R"([
      {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": null,
       "lastTransitionTime": "2024-05-01T12:00:00Z"},
      {"type": "Initialized", "status": "True", "lastProbeTime": null,
       "lastTransitionTime": "2024-05-01T12:00:00Z"},
      {"type": "Ready", "status": "True", "lastProbeTime": null,
       "lastTransitionTime": "2024-05-01T12:00:00Z"},
      {"type": "ContainersReady", "status": "True", "lastProbeTime": null,
       "lastTransitionTime": "2024-05-01T12:00:00Z"},
      {"type": "PodScheduled", "status": "True", "lastProbeTime": null,
       "lastTransitionTime": "2024-05-01T12:00:00Z"}])"));
  EXPECT_EQ(s["containerStatuses"], json::array({ContainerStatusJson(r.containers[0]),
                                                 ContainerStatusJson(r.containers[1])}));
  EXPECT_FALSE(s.contains("initContainerStatuses"));
  EXPECT_FALSE(s.contains("reason"));
  EXPECT_FALSE(s.contains("message"));
}

TEST(PodStatusJsonTest, UnreadyMessageListsNames) {
  PodRuntimeStatus r = Pod({Running("a", false), Running("b"), Running("c", false)});
  json s = PodStatusJson(r, "Always", json::object(), kNow, "BestEffort");
  for (const char* type : {"Ready", "ContainersReady"}) {
    const json& c = Cond(s, type);
    EXPECT_EQ(c["status"], "False") << type;
    EXPECT_EQ(c["reason"], "ContainersNotReady") << type;
    EXPECT_EQ(c["message"], "containers with unready status: [a c]") << type;
  }
  EXPECT_EQ(Cond(s, "PodReadyToStartContainers")["status"], "True");
}

TEST(PodStatusJsonTest, NoContainersIsNotReady) {
  json s = PodStatusJson(Pod({}), "Always", json::object(), kNow, "BestEffort");
  EXPECT_EQ(Cond(s, "Ready")["status"], "False");
  EXPECT_EQ(s["containerStatuses"], json::array());
}

TEST(PodStatusJsonTest, NotInitialized) {
  PodRuntimeStatus r = Pod({Waiting("main")}, /*initialized=*/false);
  r.init_containers = {Running("init", false)};
  json s = PodStatusJson(r, "Always", json::object(), kNow, "BestEffort");
  EXPECT_EQ(s["phase"], "Pending");
  const json& init = Cond(s, "Initialized");
  EXPECT_EQ(init["status"], "False");
  EXPECT_EQ(init["reason"], "ContainersNotInitialized");
  EXPECT_EQ(Cond(s, "Ready")["message"], "containers with unready status: [main]");
  EXPECT_EQ(s["initContainerStatuses"], json::array({ContainerStatusJson(r.init_containers[0])}));
}

TEST(PodStatusJsonTest, InitContainerStatusesOnlyWithInitContainers) {
  PodRuntimeStatus r = Pod({Running("main")});
  EXPECT_FALSE(
      PodStatusJson(r, "Always", json::object(), kNow, "x").contains("initContainerStatuses"));
  r.init_containers = {Terminated("init", 0)};
  json s = PodStatusJson(r, "Always", json::object(), kNow, "x");
  ASSERT_TRUE(s.contains("initContainerStatuses"));
  ASSERT_EQ(s["initContainerStatuses"].size(), 1u);
  EXPECT_EQ(s["initContainerStatuses"][0]["name"], "init");
  EXPECT_EQ(s["initContainerStatuses"][0]["state"]["terminated"]["reason"], "Completed");
}

TEST(PodStatusJsonTest, TerminalPodCompleted) {
  PodRuntimeStatus r = Pod({Terminated("a", 0)});
  json s = PodStatusJson(r, "Never", json::object(), kNow, "BestEffort");
  EXPECT_EQ(s["phase"], "Succeeded");
  EXPECT_EQ(Cond(s, "PodReadyToStartContainers")["status"], "False");
  EXPECT_EQ(Cond(s, "Initialized")["status"], "True");
  for (const char* type : {"Ready", "ContainersReady"}) {
    const json& c = Cond(s, type);
    EXPECT_EQ(c["status"], "False") << type;
    EXPECT_EQ(c["reason"], "PodCompleted") << type;
    EXPECT_FALSE(c.contains("message")) << type;
  }
  EXPECT_EQ(Cond(s, "PodScheduled")["status"], "True");
}

TEST(PodStatusJsonTest, ReadyContainerOfTerminalPodIsNotReady) {
  // A failed pod (NodeLost) whose container still reports ready: not Ready.
  PodRuntimeStatus r = Pod({Running("a")});
  r.failed_reason = "NodeLost";
  r.failed_message = "node n1 is gone";
  json s = PodStatusJson(r, "Always", json::object(), kNow, "BestEffort");
  EXPECT_EQ(s["phase"], "Failed");
  EXPECT_EQ(s["reason"], "NodeLost");
  EXPECT_EQ(s["message"], "node n1 is gone");
  EXPECT_EQ(Cond(s, "Ready")["status"], "False");
  EXPECT_EQ(Cond(s, "Ready")["reason"], "PodCompleted");
  EXPECT_EQ(Cond(s, "ContainersReady")["status"], "False");
}

TEST(PodStatusJsonTest, FailedInitIsTerminalAndInitialized) {
  PodRuntimeStatus r = Pod({Waiting("main")}, /*initialized=*/false);
  r.init_containers = {Terminated("init", 1)};
  json s = PodStatusJson(r, "Never", json::object(), kNow, "BestEffort");
  EXPECT_EQ(s["phase"], "Failed");
  EXPECT_EQ(Cond(s, "Initialized")["status"], "True");
  EXPECT_FALSE(Cond(s, "Initialized").contains("reason"));
  EXPECT_EQ(Cond(s, "Ready")["reason"], "PodCompleted");
}

TEST(PodStatusJsonTest, TransitionTimePreservedWhenUnchanged) {
  PodRuntimeStatus r = Pod({Running("a", false)});
  json first = PodStatusJson(r, "Always", json::object(), kEarlier, "BestEffort");
  // Same state later: every condition keeps its time.
  json same = PodStatusJson(r, "Always", first, kNow, "BestEffort");
  for (const json& c : same["conditions"]) {
    EXPECT_EQ(c["lastTransitionTime"], kEarlier) << c["type"];
  }
  // The container becomes ready: Ready and ContainersReady move, the rest keep their time.
  r.containers[0].ready = true;
  json changed = PodStatusJson(r, "Always", first, kNow, "BestEffort");
  EXPECT_EQ(Cond(changed, "Ready")["lastTransitionTime"], kNow);
  EXPECT_EQ(Cond(changed, "ContainersReady")["lastTransitionTime"], kNow);
  EXPECT_EQ(Cond(changed, "Initialized")["lastTransitionTime"], kEarlier);
  EXPECT_EQ(Cond(changed, "PodScheduled")["lastTransitionTime"], kEarlier);
  EXPECT_EQ(Cond(changed, "PodReadyToStartContainers")["lastTransitionTime"], kEarlier);
}

TEST(PodStatusJsonTest, OldPodScheduledTimeKept) {
  json old = {{"phase", "Pending"},
              {"conditions", json::array({{{"type", "PodScheduled"},
                                           {"status", "True"},
                                           {"lastTransitionTime", "2024-01-01T00:00:00Z"}},
                                          {{"type", "Ready"},
                                           {"status", "True"},
                                           {"lastTransitionTime", "2024-01-01T00:00:01Z"}}})}};
  json s = PodStatusJson(Pod({Waiting("main")}), "Always", old, kNow, "BestEffort");
  EXPECT_EQ(Cond(s, "PodScheduled")["lastTransitionTime"], "2024-01-01T00:00:00Z");
  // Ready went True -> False: now.
  EXPECT_EQ(Cond(s, "Ready")["lastTransitionTime"], kNow);
  EXPECT_EQ(Cond(s, "Initialized")["lastTransitionTime"], kNow);
}

TEST(PodStatusJsonTest, AddressesAndStartTime) {
  PodRuntimeStatus r = Pod({Running("a")});
  r.pod_ip = "127.0.0.5";
  r.host_ip = "192.168.1.10";
  r.start_time = "2024-05-01T09:59:00Z";
  json s = PodStatusJson(r, "Always", json::object(), kNow, "Guaranteed");
  EXPECT_EQ(s["podIP"], "127.0.0.5");
  EXPECT_EQ(s["podIPs"], json::parse(R"([{"ip": "127.0.0.5"}])"));
  EXPECT_EQ(s["hostIP"], "192.168.1.10");
  EXPECT_EQ(s["hostIPs"], json::parse(R"([{"ip": "192.168.1.10"}])"));
  EXPECT_EQ(s["startTime"], "2024-05-01T09:59:00Z");
  EXPECT_EQ(s["qosClass"], "Guaranteed");
}

TEST(PodStatusJsonTest, NoAddressesWhenUnknown) {
  json s = PodStatusJson(Pod({Waiting("a")}), "Always", json::object(), kNow, "BestEffort");
  for (const char* key : {"podIP", "podIPs", "hostIP", "hostIPs", "startTime"}) {
    EXPECT_FALSE(s.contains(key)) << key;
  }
}

// --- QosClass ----------------------------------------------------------------------------------

json PodWith(const std::vector<json>& resources) {
  json containers = json::array();
  for (size_t i = 0; i < resources.size(); ++i) {
    json c = {{"name", "c" + std::to_string(i)}, {"image", "busybox"}};
    if (!resources[i].is_null()) c["resources"] = resources[i];
    containers.push_back(c);
  }
  return {{"spec", {{"containers", containers}}}};
}

TEST(PodStatusQosTest, BestEffort) {
  EXPECT_EQ(QosClass(PodWith({nullptr})), "BestEffort");
  EXPECT_EQ(QosClass(PodWith({nullptr, json::object()})), "BestEffort");
  EXPECT_EQ(QosClass(PodWith({json::parse(R"({"requests": {"ephemeral-storage": "1Gi"}})")})),
            "BestEffort");
  EXPECT_EQ(QosClass(json::object()), "BestEffort");
}

TEST(PodStatusQosTest, Guaranteed) {
  const json full = json::parse(R"({"requests": {"cpu": "1", "memory": "1Gi"},
                                    "limits": {"cpu": "1", "memory": "1Gi"}})");
  EXPECT_EQ(QosClass(PodWith({full})), "Guaranteed");
  EXPECT_EQ(QosClass(PodWith({full, full})), "Guaranteed");
  // Limits only: requests default to the limits.
  EXPECT_EQ(QosClass(PodWith({json::parse(R"({"limits": {"cpu": "2", "memory": "2Gi"}})")})),
            "Guaranteed");
}

TEST(PodStatusQosTest, Burstable) {
  // Requests only.
  EXPECT_EQ(QosClass(PodWith({json::parse(R"({"requests": {"cpu": "1"}})")})), "Burstable");
  // Requests below limits.
  EXPECT_EQ(QosClass(PodWith({json::parse(R"({"requests": {"cpu": "1", "memory": "1Gi"},
                                             "limits": {"cpu": "2", "memory": "1Gi"}})")})),
            "Burstable");
  // A cpu limit but no memory limit.
  EXPECT_EQ(QosClass(PodWith({json::parse(R"({"limits": {"cpu": "1"}})")})), "Burstable");
  // One Guaranteed container and one BestEffort container.
  EXPECT_EQ(
      QosClass(PodWith({json::parse(R"({"limits": {"cpu": "1", "memory": "1Gi"}})"), nullptr})),
      "Burstable");
}

}  // namespace
}  // namespace sluice::node
