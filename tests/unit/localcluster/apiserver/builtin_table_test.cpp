// Table output for built-in resources: kube-apiserver's columns and cell formats.
#include "localcluster/apiserver/builtin_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "localcluster/apiserver/resource_registry.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

// 2026-01-01T00:00:00Z.
const Clock::WallTime kNow = Clock::WallTime(std::chrono::seconds(1767225600));

const ResourceInfo& Info(const char* group, const char* plural) {
  static const ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  const ResourceInfo* info = registry.Find(group, "v1", plural);
  EXPECT_NE(info, nullptr) << group << "/" << plural;
  return *info;
}

json Table(const ResourceInfo& info, const std::vector<json>& objects,
           IncludeObject include = IncludeObject::kNone) {
  Result<json> table = BuildBuiltinTable(info, objects, kNow, "17", include);
  EXPECT_TRUE(table.ok()) << table.status().ToString();
  return table.ok() ? *table : json();
}

std::vector<std::string> Names(const json& table) {
  std::vector<std::string> names;
  for (const json& c : table["columnDefinitions"]) names.push_back(c["name"]);
  return names;
}

std::vector<int> Priorities(const json& table) {
  std::vector<int> priorities;
  for (const json& c : table["columnDefinitions"]) priorities.push_back(c["priority"]);
  return priorities;
}

// The cells of the first row for `object` of the resource.
json Row(const char* group, const char* plural, const json& object) {
  const json table = Table(Info(group, plural), {object});
  return table["rows"][0]["cells"];
}

json Pod(const char* yaml_like_json) { return json::parse(yaml_like_json); }

TEST(BuiltinTableTest, PodColumnsMatchKube) {
  const json table = Table(Info("", "pods"), {});
  EXPECT_EQ(Names(table),
            (std::vector<std::string>{"Name", "Ready", "Status", "Restarts", "Age", "IP", "Node",
                                      "Nominated Node", "Readiness Gates"}));
  EXPECT_EQ(Priorities(table), (std::vector<int>{0, 0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(table["columnDefinitions"][0]["format"], "name");
  EXPECT_EQ(table["columnDefinitions"][3]["type"], "string");
  EXPECT_EQ(table["kind"], "Table");
  EXPECT_EQ(table["apiVersion"], "meta.k8s.io/v1");
  EXPECT_EQ(table["metadata"]["resourceVersion"], "17");
  EXPECT_TRUE(table["rows"].empty());
}

TEST(BuiltinTableTest, RunningPodWithRestartsAndWideCells) {
  const json pod = Pod(R"({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": "web-0", "namespace": "ml", "creationTimestamp": "2025-12-30T00:00:00Z"},
      "spec": {"nodeName": "node-a", "containers": [{"name": "app"}, {"name": "log"}],
               "readinessGates": [{"conditionType": "example.com/ready"},
                                  {"conditionType": "example.com/other"}]},
      "status": {"phase": "Running", "podIP": "10.244.0.5",
                 "podIPs": [{"ip": "10.244.0.5"}, {"ip": "fd00::5"}],
                 "conditions": [{"type": "example.com/ready", "status": "True"},
                                {"type": "example.com/other", "status": "False"}],
                 "containerStatuses": [
                   {"name": "app", "ready": true, "restartCount": 3,
                    "state": {"running": {"startedAt": "2025-12-31T23:55:01Z"}},
                    "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                                                 "finishedAt": "2025-12-31T23:55:00Z"}}},
                   {"name": "log", "ready": false, "restartCount": 0,
                    "state": {"running": {"startedAt": "2025-12-30T00:00:05Z"}}}]}})");
  EXPECT_EQ(Row("", "pods", pod), json::array({"web-0", "1/2", "Running", "3 (5m ago)", "2d",
                                               "10.244.0.5", "node-a", "<none>", "1/2"}));
}

TEST(BuiltinTableTest, PodStatusReasons) {
  const json crash =
      Pod(R"({"metadata": {"name": "crash", "creationTimestamp": "2025-12-31T23:00:00Z"},
      "spec": {"containers": [{"name": "app"}]},
      "status": {"phase": "Running", "containerStatuses": [
        {"name": "app", "ready": false, "restartCount": 5,
         "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}},
         "lastState": {"terminated": {"exitCode": 2, "finishedAt": "2025-12-31T23:59:30Z"}}}]}})");
  EXPECT_EQ(Row("", "pods", crash), json::array({"crash", "0/1", "CrashLoopBackOff", "5 (30s ago)",
                                                 "60m", "<none>", "<none>", "<none>", "<none>"}));

  const json pending = Pod(R"({"metadata": {"name": "p"},
      "spec": {"containers": [{"name": "app"}]}, "status": {"phase": "Pending"}})");
  EXPECT_EQ(Row("", "pods", pending), json::array({"p", "0/1", "Pending", "0", "<unknown>",
                                                   "<none>", "<none>", "<none>", "<none>"}));

  const json no_last_time = Pod(R"({"metadata": {"name": "r"},
      "spec": {"containers": [{"name": "app"}]},
      "status": {"phase": "Running", "containerStatuses": [{"name": "app", "ready": true,
        "restartCount": 2, "state": {"running": {}}}]}})");
  EXPECT_EQ(Row("", "pods", no_last_time)[3], "2");
  EXPECT_EQ(Row("", "pods", no_last_time)[2], "Running");

  const json killed = Pod(R"({"metadata": {"name": "k"},
      "spec": {"containers": [{"name": "app"}]},
      "status": {"phase": "Failed", "containerStatuses": [{"name": "app",
        "state": {"terminated": {"exitCode": 137}}}]}})");
  EXPECT_EQ(Row("", "pods", killed)[2], "ExitCode:137");

  const json signalled = Pod(R"({"metadata": {"name": "s"},
      "spec": {"containers": [{"name": "app"}]},
      "status": {"phase": "Failed", "containerStatuses": [{"name": "app",
        "state": {"terminated": {"exitCode": 0, "signal": 9}}}]}})");
  EXPECT_EQ(Row("", "pods", signalled)[2], "Signal:9");

  const json evicted = Pod(R"({"metadata": {"name": "e"},
      "spec": {"containers": [{"name": "app"}]},
      "status": {"phase": "Failed", "reason": "Evicted"}})");
  EXPECT_EQ(Row("", "pods", evicted)[2], "Evicted");

  const json gated = Pod(R"({"metadata": {"name": "g"},
      "spec": {"containers": [{"name": "app"}]},
      "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
        "reason": "SchedulingGated"}]}})");
  EXPECT_EQ(Row("", "pods", gated)[2], "SchedulingGated");
}

TEST(BuiltinTableTest, TerminatingAndCompletedPods) {
  const json terminating = Pod(R"({"metadata": {"name": "t",
        "deletionTimestamp": "2026-01-01T00:00:30Z", "creationTimestamp": "2025-12-31T23:59:00Z"},
      "spec": {"containers": [{"name": "app"}]},
      "status": {"phase": "Running", "containerStatuses": [{"name": "app", "ready": true,
        "restartCount": 0, "state": {"running": {}}}]}})");
  EXPECT_EQ(Row("", "pods", terminating), json::array({"t", "1/1", "Terminating", "0", "60s",
                                                       "<none>", "<none>", "<none>", "<none>"}));

  const json lost = Pod(R"({"metadata": {"name": "l", "deletionTimestamp": "2026-01-01T00:00:00Z"},
      "spec": {"containers": [{"name": "app"}]},
      "status": {"phase": "Running", "reason": "NodeLost"}})");
  EXPECT_EQ(Row("", "pods", lost)[2], "Unknown");

  // A finished pod being deleted keeps its terminal status.
  const json done =
      Pod(R"({"metadata": {"name": "job-x", "deletionTimestamp": "2026-01-01T00:00:00Z"},
      "spec": {"containers": [{"name": "app"}]},
      "status": {"phase": "Succeeded", "containerStatuses": [{"name": "app", "ready": false,
        "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}})");
  const json table = Table(Info("", "pods"), {done});
  EXPECT_EQ(table["rows"][0]["cells"][1], "0/1");
  EXPECT_EQ(table["rows"][0]["cells"][2], "Completed");
  ASSERT_TRUE(table["rows"][0].contains("conditions"));
  EXPECT_EQ(table["rows"][0]["conditions"][0]["type"], "Completed");
  EXPECT_EQ(table["rows"][0]["conditions"][0]["reason"], "Succeeded");

  // One container completed while another still runs: Running (Ready) or NotReady.
  const json mixed = Pod(R"({"metadata": {"name": "m"},
      "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
      "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}],
        "containerStatuses": [
          {"name": "a", "ready": true, "state": {"running": {}}},
          {"name": "b", "ready": false, "state": {"terminated": {"exitCode": 0,
                                                                "reason": "Completed"}}}]}})");
  EXPECT_EQ(Row("", "pods", mixed)[2], "NotReady");
  EXPECT_FALSE(Table(Info("", "pods"), {mixed})["rows"][0].contains("conditions"));
}

TEST(BuiltinTableTest, PodInitContainersAndSidecars) {
  const json waiting = Pod(R"({"metadata": {"name": "i"},
      "spec": {"initContainers": [{"name": "migrate"}, {"name": "warm"}],
               "containers": [{"name": "app"}]},
      "status": {"phase": "Pending", "initContainerStatuses": [
        {"name": "migrate", "state": {"waiting": {"reason": "PodInitializing"}}},
        {"name": "warm", "state": {"waiting": {"reason": "PodInitializing"}}}],
        "containerStatuses": [{"name": "app",
                               "state": {"waiting": {"reason": "PodInitializing"}}}]}})");
  EXPECT_EQ(Row("", "pods", waiting)[2], "Init:0/2");

  const json failing = Pod(R"({"metadata": {"name": "f"},
      "spec": {"initContainers": [{"name": "migrate"}], "containers": [{"name": "app"}]},
      "status": {"phase": "Pending", "initContainerStatuses": [
        {"name": "migrate", "restartCount": 4,
         "state": {"waiting": {"reason": "CrashLoopBackOff"}},
         "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2025-12-31T23:58:00Z"}}}]}})");
  EXPECT_EQ(Row("", "pods", failing)[2], "Init:CrashLoopBackOff");
  EXPECT_EQ(Row("", "pods", failing)[3], "4 (2m ago)");

  const json errored = Pod(R"({"metadata": {"name": "f2"},
      "spec": {"initContainers": [{"name": "migrate"}], "containers": [{"name": "app"}]},
      "status": {"phase": "Pending", "initContainerStatuses": [
        {"name": "migrate", "state": {"terminated": {"exitCode": 3, "reason": "Error"}}}]}})");
  EXPECT_EQ(Row("", "pods", errored)[2], "Init:Error");

  // A restartable init container (sidecar) counts towards READY and RESTARTS.
  const json sidecar = Pod(R"({"metadata": {"name": "sc"},
      "spec": {"initContainers": [{"name": "proxy", "restartPolicy": "Always"}],
               "containers": [{"name": "app"}]},
      "status": {"phase": "Running", "conditions": [{"type": "Initialized", "status": "True"}],
        "initContainerStatuses": [{"name": "proxy", "started": true, "ready": true,
                                   "restartCount": 1, "state": {"running": {}}}],
        "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0,
                               "state": {"running": {}}}]}})");
  const json cells = Row("", "pods", sidecar);
  EXPECT_EQ(cells[1], "2/2");
  EXPECT_EQ(cells[2], "Running");
  EXPECT_EQ(cells[3], "1");
}

TEST(BuiltinTableTest, NodeStatusRolesAndWideColumns) {
  const json table = Table(Info("", "nodes"), {});
  EXPECT_EQ(Names(table), (std::vector<std::string>{"Name", "Status", "Roles", "Age", "Version",
                                                    "Internal-IP", "External-IP", "OS-Image",
                                                    "Kernel-Version", "Container-Runtime"}));
  EXPECT_EQ(Priorities(table), (std::vector<int>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1}));

  const json cordoned = json::parse(R"({"apiVersion": "v1", "kind": "Node",
      "metadata": {"name": "node-a", "creationTimestamp": "2025-12-01T00:00:00Z",
        "labels": {"node-role.kubernetes.io/worker": "",
                   "node-role.kubernetes.io/control-plane": "",
                   "kubernetes.io/role": "master", "kubernetes.io/hostname": "node-a"}},
      "spec": {"unschedulable": true},
      "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                {"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        "addresses": [{"type": "Hostname", "address": "node-a"},
                      {"type": "InternalIP", "address": "192.168.1.10"}],
        "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Ubuntu 24.04 LTS",
                     "kernelVersion": "6.8.0-45-generic",
                     "containerRuntimeVersion": "containerd://1.7.22"}}})");
  EXPECT_EQ(Row("", "nodes", cordoned),
            json::array({"node-a", "Ready,SchedulingDisabled", "control-plane,master,worker", "31d",
                         "v1.32.0", "192.168.1.10", "<none>", "Ubuntu 24.04 LTS",
                         "6.8.0-45-generic", "containerd://1.7.22"}));

  const json not_ready = json::parse(R"({"metadata": {"name": "node-b",
        "creationTimestamp": "2025-12-31T20:00:00Z"},
      "status": {"conditions": [{"type": "Ready", "status": "Unknown"}],
        "addresses": [{"type": "ExternalIP", "address": "203.0.113.9"}]}})");
  EXPECT_EQ(Row("", "nodes", not_ready),
            json::array({"node-b", "NotReady", "<none>", "4h", "", "<none>", "203.0.113.9",
                         "<unknown>", "<unknown>", "<unknown>"}));

  const json fresh = json::parse(R"({"metadata": {"name": "node-c"}})");
  EXPECT_EQ(Row("", "nodes", fresh)[1], "Unknown");
}

TEST(BuiltinTableTest, ServiceTypesPortsAndSelectors) {
  const json table = Table(Info("", "services"), {});
  EXPECT_EQ(Names(table), (std::vector<std::string>{"Name", "Type", "Cluster-IP", "External-IP",
                                                    "Port(s)", "Age", "Selector"}));
  EXPECT_EQ(Priorities(table), (std::vector<int>{0, 0, 0, 0, 0, 0, 1}));

  const json node_port = json::parse(R"({"metadata": {"name": "web",
        "creationTimestamp": "2025-12-31T23:50:00Z"},
      "spec": {"type": "NodePort", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
        "selector": {"tier": "fe", "app": "web"},
        "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080},
                  {"name": "https", "port": 443, "nodePort": 30443, "protocol": "TCP"}]}})");
  EXPECT_EQ(Row("", "services", node_port),
            json::array({"web", "NodePort", "10.96.0.10", "<none>", "80/TCP,443:30443/TCP", "10m",
                         "app=web,tier=fe"}));

  const json headless = json::parse(R"({"metadata": {"name": "dns"},
      "spec": {"clusterIP": "None", "ports": [{"port": 53, "protocol": "UDP"}, {"port": 9153}]}})");
  EXPECT_EQ(Row("", "services", headless), json::array({"dns", "ClusterIP", "None", "<none>",
                                                        "53/UDP,9153/TCP", "<unknown>", "<none>"}));

  const json pending_lb = json::parse(R"({"metadata": {"name": "lb"},
      "spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.1.1"],
               "ports": [{"port": 80, "nodePort": 31000, "protocol": "TCP"}]},
      "status": {"loadBalancer": {}}})");
  EXPECT_EQ(Row("", "services", pending_lb)[3], "<pending>");

  const json lb = json::parse(R"({"metadata": {"name": "lb2"},
      "spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.1.2"],
               "externalIPs": ["198.51.100.1"]},
      "status": {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"},
                                              {"ip": "203.0.113.7"}]}}})");
  EXPECT_EQ(Row("", "services", lb)[3], "203.0.113.7,lb.example.com,198.51.100.1");

  const json external = json::parse(R"({"metadata": {"name": "db"},
      "spec": {"type": "ExternalName", "externalName": "db.example.com"}})");
  EXPECT_EQ(Row("", "services", external),
            json::array({"db", "ExternalName", "<none>", "db.example.com", "<none>", "<unknown>",
                         "<none>"}));
}

TEST(BuiltinTableTest, EndpointsListAtMostThreeAddresses) {
  const json many = json::parse(R"({"metadata": {"name": "web"},
      "subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "10.0.0.3"},
                                 {"ip": "10.0.0.4"}, {"ip": "10.0.0.5"}],
                   "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]})");
  EXPECT_EQ(Row("", "endpoints", many)[1], "10.0.0.1:8080,10.0.0.2:8080,10.0.0.3:8080 + 2 more...");

  const json two_ports = json::parse(R"({"metadata": {"name": "x"},
      "subsets": [{"addresses": [{"ip": "10.0.0.1"}],
                   "ports": [{"port": 80}, {"port": 443}]},
                  {"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 80}]}]})");
  EXPECT_EQ(Row("", "endpoints", two_ports)[1], "10.0.0.1:80,10.0.0.1:443,[fd00::1]:80");

  const json headless = json::parse(R"({"metadata": {"name": "h"},
      "subsets": [{"addresses": [{"ip": "10.0.0.9"}]}]})");
  EXPECT_EQ(Row("", "endpoints", headless)[1], "10.0.0.9");

  const json empty = json::parse(R"({"metadata": {"name": "none",
      "creationTimestamp": "2025-12-31T23:59:15Z"}})");
  EXPECT_EQ(Row("", "endpoints", empty), json::array({"none", "<none>", "45s"}));
}

TEST(BuiltinTableTest, ConfigMapAndSecretDataCounts) {
  const json cm = json::parse(R"({"metadata": {"name": "cfg",
        "creationTimestamp": "2025-12-31T12:00:00Z"},
      "data": {"a.yaml": "x: 1", "b.yaml": "y: 2"}, "binaryData": {"logo.png": "iVBORw0KGgo="}})");
  EXPECT_EQ(Row("", "configmaps", cm), json::array({"cfg", 3, "12h"}));
  EXPECT_EQ(Row("", "configmaps", json::parse(R"({"metadata": {"name": "e"}})"))[1], 0);

  const json table = Table(Info("", "secrets"), {});
  EXPECT_EQ(Names(table), (std::vector<std::string>{"Name", "Type", "Data", "Age"}));
  const json tls = json::parse(R"({"metadata": {"name": "web-tls"},
      "type": "kubernetes.io/tls", "data": {"tls.crt": "Y3J0", "tls.key": "a2V5"}})");
  EXPECT_EQ(Row("", "secrets", tls), json::array({"web-tls", "kubernetes.io/tls", 2, "<unknown>"}));
  const json opaque = json::parse(R"({"metadata": {"name": "s"},
      "data": {"user": "dQ=="}, "stringData": {"user": "u", "password": "p"}})");
  EXPECT_EQ(Row("", "secrets", opaque), json::array({"s", "Opaque", 2, "<unknown>"}));
}

TEST(BuiltinTableTest, PersistentVolumeClaims) {
  const json table = Table(Info("", "persistentvolumeclaims"), {});
  EXPECT_EQ(Names(table), (std::vector<std::string>{"Name", "Status", "Volume", "Capacity",
                                                    "Access Modes", "StorageClass",
                                                    "VolumeAttributesClass", "Age", "VolumeMode"}));
  EXPECT_EQ(Priorities(table), (std::vector<int>{0, 0, 0, 0, 0, 0, 0, 0, 1}));

  const json bound = json::parse(R"({"metadata": {"name": "data-web-0",
        "creationTimestamp": "2025-12-25T00:00:00Z"},
      "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
               "volumeMode": "Filesystem", "volumeName": "pvc-1234",
               "resources": {"requests": {"storage": "8Gi"}}},
      "status": {"phase": "Bound", "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                 "capacity": {"storage": "10Gi"}}})");
  EXPECT_EQ(Row("", "persistentvolumeclaims", bound),
            json::array({"data-web-0", "Bound", "pvc-1234", "10Gi", "RWO,RWX", "standard",
                         "<unset>", "7d", "Filesystem"}));

  const json pending = json::parse(R"({"metadata": {"name": "scratch",
        "annotations": {"volume.beta.kubernetes.io/storage-class": "fast"}},
      "spec": {"storageClassName": "standard", "volumeAttributesClassName": "gold",
               "resources": {"requests": {"storage": "1Gi"}}},
      "status": {"phase": "Pending"}})");
  EXPECT_EQ(
      Row("", "persistentvolumeclaims", pending),
      json::array({"scratch", "Pending", "", "", "", "fast", "gold", "<unknown>", "<unset>"}));

  const json deleting = json::parse(R"({"metadata": {"name": "old",
        "deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": {"phase": "Bound"}})");
  EXPECT_EQ(Row("", "persistentvolumeclaims", deleting)[1], "Terminating");
}

TEST(BuiltinTableTest, EventColumnsAndCoreV1Events) {
  const json table = Table(Info("", "events"), {});
  EXPECT_EQ(Names(table),
            (std::vector<std::string>{"Last Seen", "Type", "Reason", "Object", "Subobject",
                                      "Source", "Message", "First Seen", "Count", "Name"}));
  EXPECT_EQ(Priorities(table), (std::vector<int>{0, 0, 0, 0, 1, 1, 0, 1, 1, 1}));
  EXPECT_EQ(table["columnDefinitions"][9]["format"], "name");
  EXPECT_EQ(Names(Table(Info("events.k8s.io", "events"), {})), Names(table));

  const json backoff = json::parse(R"({"apiVersion": "v1", "kind": "Event",
      "metadata": {"name": "web-0.181a2b", "namespace": "ml"},
      "involvedObject": {"kind": "Pod", "name": "web-0", "namespace": "ml",
                         "fieldPath": "spec.containers{app}"},
      "reason": "BackOff", "message": "Back-off restarting failed container\n",
      "source": {"component": "kubelet", "host": "node-a"},
      "firstTimestamp": "2025-12-31T23:00:00Z", "lastTimestamp": "2025-12-31T23:58:00Z",
      "count": 7, "type": "Warning", "eventTime": null})");
  EXPECT_EQ(Row("", "events", backoff),
            json::array({"2m", "Warning", "BackOff", "pod/web-0", "spec.containers{app}",
                         "kubelet, node-a", "Back-off restarting failed container", "60m", 7,
                         "web-0.181a2b"}));

  // Written by a new-style recorder: eventTime only, no count, reporting fields instead of source.
  const json recorded = json::parse(R"({"apiVersion": "v1", "kind": "Event",
      "metadata": {"name": "rp.1"},
      "involvedObject": {"apiVersion": "sluice.dev/v1alpha1", "kind": "RolloutPool", "name": "rp"},
      "reason": "ScaledUp", "message": "scaled to 3", "type": "Normal",
      "firstTimestamp": null, "lastTimestamp": null,
      "eventTime": "2025-12-31T23:59:50.123456Z",
      "reportingComponent": "sluice-operator", "reportingInstance": "sluice-operator-abc"})");
  EXPECT_EQ(Row("", "events", recorded),
            json::array({"9s", "Normal", "ScaledUp", "rolloutpool/rp", "",
                         "sluice-operator, sluice-operator-abc", "scaled to 3", "9s", 1, "rp.1"}));
}

TEST(BuiltinTableTest, EventsK8sIoV1Events) {
  const json series = json::parse(R"({"apiVersion": "events.k8s.io/v1", "kind": "Event",
      "metadata": {"name": "node-a.1"},
      "eventTime": "2025-12-31T23:50:00.000000Z",
      "series": {"count": 4, "lastObservedTime": "2025-12-31T23:59:00.000000Z"},
      "reportingController": "kubelet", "reportingInstance": "",
      "action": "NodeReady", "reason": "NodeReady", "type": "Normal",
      "regarding": {"kind": "Node", "name": "node-a"},
      "note": "Node node-a status is now: NodeReady"})");
  EXPECT_EQ(Row("events.k8s.io", "events", series),
            json::array({"60s", "Normal", "NodeReady", "node/node-a", "", "kubelet",
                         "Node node-a status is now: NodeReady", "10m", 4, "node-a.1"}));

  const json legacy = json::parse(R"({"apiVersion": "events.k8s.io/v1", "kind": "Event",
      "metadata": {"name": "ns.2"},
      "eventTime": null, "reportingController": "", "reason": "Deleting", "type": "Warning",
      "regarding": {"kind": "Namespace", "fieldPath": "spec"},
      "deprecatedSource": {"component": "namespace-controller"},
      "deprecatedFirstTimestamp": "2025-12-31T22:00:00Z",
      "deprecatedLastTimestamp": "2025-12-31T23:00:00Z", "deprecatedCount": 3,
      "note": "  waiting for finalizers  "})");
  EXPECT_EQ(Row("events.k8s.io", "events", legacy),
            json::array({"60m", "Warning", "Deleting", "namespace", "spec", "namespace-controller",
                         "waiting for finalizers", "120m", 3, "ns.2"}));

  const json timeless = json::parse(R"({"metadata": {"name": "t"}, "reason": "X"})");
  const json cells = Row("events.k8s.io", "events", timeless);
  EXPECT_EQ(cells[0], "<unknown>");
  EXPECT_EQ(cells[7], "<unknown>");
  EXPECT_EQ(cells[8], 1);
}

TEST(BuiltinTableTest, NamespacesLeasesCrdsAndOthers) {
  EXPECT_EQ(Row("", "namespaces", json::parse(R"({"metadata": {"name": "ml",
                  "creationTimestamp": "2025-12-29T00:00:00Z"}, "status": {"phase": "Active"}})")),
            json::array({"ml", "Active", "3d"}));
  EXPECT_EQ(Row("", "namespaces", json::parse(R"({"metadata": {"name": "old",
                  "deletionTimestamp": "2026-01-01T00:00:00Z"}})"))[1],
            "Terminating");

  const json lease_table = Table(Info("coordination.k8s.io", "leases"), {});
  EXPECT_EQ(Names(lease_table), (std::vector<std::string>{"Name", "Holder", "Age"}));
  EXPECT_EQ(
      Row("coordination.k8s.io", "leases", json::parse(R"({"metadata": {"name": "sluice-operator",
                  "creationTimestamp": "2025-12-31T23:59:58Z"},
                  "spec": {"holderIdentity": "sluice-operator-7d9f_1234",
                           "leaseDurationSeconds": 15}})")),
      json::array({"sluice-operator", "sluice-operator-7d9f_1234", "2s"}));
  EXPECT_EQ(Row("coordination.k8s.io", "leases", json::parse(R"({"metadata": {"name": "x"}})"))[1],
            "");

  const json crd_table = Table(Info("apiextensions.k8s.io", "customresourcedefinitions"), {});
  EXPECT_EQ(Names(crd_table), (std::vector<std::string>{"Name", "Created At"}));
  EXPECT_EQ(crd_table["columnDefinitions"][1]["type"], "date");
  EXPECT_EQ(Row("apiextensions.k8s.io", "customresourcedefinitions",
                json::parse(R"({"metadata": {"name": "rolloutpools.sluice.dev",
                  "creationTimestamp": "2025-12-31T19:00:00-05:00"}})")),
            json::array({"rolloutpools.sluice.dev", "2026-01-01T00:00:00Z"}));

  // ServiceAccounts: kube's Secrets column counts the legacy secrets list.
  const json table =
      Table(Info("", "serviceaccounts"), {json::parse(R"({"metadata": {"name": "default",
      "creationTimestamp": "2025-12-31T23:00:00Z"}})"),
                                          json::parse(R"({"metadata": {"name": "robot",
      "creationTimestamp": "2025-12-31T23:59:00Z"}, "secrets": [{"name": "a"}, {"name": "b"}]})")});
  EXPECT_EQ(Names(table), (std::vector<std::string>{"Name", "Secrets", "Age"}));
  EXPECT_EQ(table["rows"][0]["cells"], json::array({"default", 0, "60m"}));
  EXPECT_EQ(table["rows"][1]["cells"], json::array({"robot", 2, "60s"}));

  // A resource without a printer of its own gets Name and Age.
  ResourceInfo widgets;
  widgets.version = "v1";
  widgets.kind = "Widget";
  widgets.plural = "widgets";
  const json fallback = Table(widgets, {json::parse(R"({"metadata": {"name": "w",
      "creationTimestamp": "2025-12-31T23:00:00Z"}})")});
  EXPECT_EQ(Names(fallback), (std::vector<std::string>{"Name", "Age"}));
  EXPECT_EQ(fallback["rows"][0]["cells"], json::array({"w", "60m"}));
}

TEST(BuiltinTableTest, EveryBuiltinRowHasOneCellPerColumn) {
  const ResourceRegistry registry = ResourceRegistry::WithBuiltins();
  const json sparse = json::parse(R"({"metadata": {"name": "x"}, "spec": null, "status": 7,
      "subsets": "nope", "data": [1], "involvedObject": 3})");
  for (const ResourceInfo* info : registry.All()) {
    Result<json> table = BuildBuiltinTable(*info, {sparse}, kNow, "1", IncludeObject::kNone);
    ASSERT_TRUE(table.ok()) << info->StorageResource();
    EXPECT_EQ((*table)["rows"][0]["cells"].size(), (*table)["columnDefinitions"].size())
        << info->StorageResource();
  }
}

TEST(BuiltinTableTest, IncludeObjectModesAndErrors) {
  const json cm = json::parse(R"({"apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": "cfg", "namespace": "ml", "resourceVersion": "9"},
      "data": {"k": "v"}})");
  const ResourceInfo& info = Info("", "configmaps");
  EXPECT_FALSE(Table(info, {cm}, IncludeObject::kNone)["rows"][0].contains("object"));
  const json meta = Table(info, {cm}, IncludeObject::kMetadata)["rows"][0]["object"];
  EXPECT_EQ(meta["kind"], "PartialObjectMetadata");
  EXPECT_EQ(meta["apiVersion"], "meta.k8s.io/v1");
  EXPECT_EQ(meta["metadata"], cm["metadata"]);
  EXPECT_FALSE(meta.contains("data"));
  EXPECT_EQ(Table(info, {cm}, IncludeObject::kObject)["rows"][0]["object"], cm);

  Result<json> bad = BuildBuiltinTable(info, {cm, json::array()}, kNow, "1", IncludeObject::kNone);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("item 1"), std::string::npos);
}

}  // namespace
}  // namespace sluice::apiserver
