// End-to-end: sluice-apiserver + sluice-node driven by the real kubectl. Pods run
// sluice-testpod (image sluice/testpod) as local processes on simulated nodes.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/e2e/apiserver_process.h"
#include "tests/e2e/node_process.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;

class LocalClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HaveKubectl()) return;
    char tmpl[] = "/tmp/sluice-localcluster-XXXXXX";
    dir_ = mkdtemp(tmpl);
    apiserver_ = new ApiServerProcess(dir_ + "/apiserver");
    ASSERT_TRUE(apiserver_->Start()) << apiserver_->Log();
    node_ = new NodeProcess(dir_ + "/node", apiserver_->Kubeconfig());
    ASSERT_TRUE(node_->Start()) << node_->Log();
  }
  static void TearDownTestSuite() {
    delete node_;
    delete apiserver_;
    node_ = nullptr;
    apiserver_ = nullptr;
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  void SetUp() override {
    ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
    ASSERT_NE(node_, nullptr);
  }
  void TearDown() override {
    if (HasFailure() && node_ != nullptr) {
      std::cerr << "---- node log (last 6000 bytes) ----\n"
                << node_->Log().substr(node_->Log().size() > 6000 ? node_->Log().size() - 6000 : 0)
                << "\n";
    }
  }

  static CommandResult Kubectl(const std::string& args) { return apiserver_->Kubectl(args); }
  static CommandResult Apply(const std::string& yaml) {
    const std::string file = dir_ + "/manifest-" + std::to_string(counter_++) + ".yaml";
    std::ofstream(file) << yaml;
    return Kubectl("apply -f " + Quote(file));
  }
  static json Get(const std::string& what) {
    CommandResult r = Kubectl("get " + what + " -o json");
    if (r.exit_code != 0) return json();
    return json::parse(r.output, nullptr, false);
  }
  static std::string PodPhase(const std::string& name) {
    json pod = Get("pod " + name);
    return pod.is_object() ? pod.value("/status/phase"_json_pointer, "") : "";
  }
  static std::string PodField(const std::string& name, const std::string& jsonpath) {
    return Kubectl("get pod " + name + " -o jsonpath='" + jsonpath + "'").output;
  }

  static inline std::string dir_;
  static inline ApiServerProcess* apiserver_ = nullptr;
  static inline NodeProcess* node_ = nullptr;
  static inline int counter_ = 0;
};

std::string TestPod(const std::string& name, const std::string& args_yaml,
                    const std::string& extra_spec = "", const std::string& container_extra = "") {
  return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  labels:\n    app: " + name +
         "\nspec:\n" + extra_spec +
         "  containers:\n    - name: main\n      image: sluice/testpod:dev\n"
         "      args: " +
         args_yaml + "\n" + container_extra;
}

TEST_F(LocalClusterTest, NodesAreRegisteredWithLabelsCapacityAndLeases) {
  ASSERT_TRUE(WaitUntil(
      [] { return Kubectl("wait --for=condition=Ready node --all --timeout=1s").exit_code == 0; }));
  json nodes = Get("nodes");
  ASSERT_EQ(nodes["items"].size(), 4u) << nodes.dump();
  json east = Get("node east-gpu");
  EXPECT_EQ(east["metadata"]["labels"]["topology.kubernetes.io/region"], "local-us-east");
  EXPECT_EQ(east["metadata"]["labels"]["nvidia.com/gpu.product"], "H100");
  EXPECT_EQ(east["metadata"]["labels"]["kubernetes.io/hostname"], "east-gpu");
  EXPECT_EQ(east["status"]["allocatable"]["nvidia.com/gpu"], "2");
  EXPECT_EQ(east["status"]["capacity"]["cpu"], "8");
  CommandResult wide = Kubectl("get nodes -L topology.kubernetes.io/region");
  EXPECT_NE(wide.output.find("local-eu-west"), std::string::npos) << wide.output;
  EXPECT_EQ(Kubectl("get lease -n kube-node-lease west-cpu").exit_code, 0);

  // The agent's metrics, in a form Prometheus accepts.
  const std::string metrics_file = dir_ + "/node-metrics.txt";
  {
    http::ClientOptions options;
    options.base_url = "http://127.0.0.1:" + std::to_string(node_->port());
    auto client = http::Client::Create(options);
    ASSERT_TRUE(client.ok());
    auto r = (*client)->Get("/metrics");
    ASSERT_TRUE(r.ok());
    EXPECT_NE(r->body.find("sluice_node_pods{node=\"east-gpu\"}"), std::string::npos) << r->body;
    std::ofstream(metrics_file) << r->body;
  }
  if (RunShell("command -v promtool").exit_code == 0) {
    CommandResult check = RunShell("promtool check metrics < " + metrics_file);
    EXPECT_EQ(check.exit_code, 0) << check.output;
  }
}

TEST_F(LocalClusterTest, ServiceNameReachesAReadyPodAndReadinessGatesEndpoints) {
  const std::string probe =
      "      readinessProbe:\n        httpGet: {path: /readyz, port: 8080}\n"
      "        periodSeconds: 1\n";
  const std::string env =
      "      env:\n        - name: POD_IP\n          valueFrom: {fieldRef: {fieldPath: "
      "status.podIP}}\n";
  // Two servers on the same port, each on its own pod IP; the second never becomes ready.
  ASSERT_EQ(
      Apply(TestPod("web", "[serve, --address, $(POD_IP), --port, \"8080\"]", "", env + probe) +
            "---\n" +
            TestPod("cold",
                    "[serve, --address, $(POD_IP), --port, \"8080\", "
                    "--ready-after-ms, \"100000000\"]",
                    "", env + probe) +
            "---\napiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n"
            "  selector: {app: web}\n  ports: [{port: 8080}]\n"
            "---\napiVersion: v1\nkind: Service\nmetadata: {name: cold}\nspec:\n"
            "  selector: {app: cold}\n  ports: [{port: 8080}]\n")
          .exit_code,
      0);
  ASSERT_TRUE(WaitUntil([] {
    return Kubectl("wait --for=condition=Ready pod/web --timeout=1s").exit_code == 0;
  })) << Kubectl("describe pod web").output;
  ASSERT_TRUE(WaitUntil([] { return PodPhase("cold") == "Running"; }));
  const std::string web_ip = PodField("web", "{.status.podIP}");
  const std::string cold_ip = PodField("cold", "{.status.podIP}");
  EXPECT_EQ(web_ip.rfind(TestPodIpPrefix() + ".", 0), 0u) << web_ip;
  EXPECT_NE(web_ip, cold_ip);
  // Endpoints: web's pod is an address; cold's only a not-ready address.
  ASSERT_TRUE(WaitUntil([&] {
    json ep = Get("endpoints web");
    return ep.is_object() && ep.contains("/subsets/0/addresses/0/ip"_json_pointer) &&
           ep["subsets"][0]["addresses"][0]["ip"] == web_ip;
  }));
  json cold_ep = Get("endpoints cold");
  EXPECT_FALSE(cold_ep.contains("/subsets/0/addresses"_json_pointer)) << cold_ep.dump();
  EXPECT_EQ(cold_ep.value("/subsets/0/notReadyAddresses/0/ip"_json_pointer, ""), cold_ip);
  EXPECT_FALSE(Kubectl("get svc web -o jsonpath={.spec.clusterIP}").output.empty());
  EXPECT_EQ(PodField("cold", "{.status.conditions[?(@.type==\"Ready\")].status}"), "False");

  // A client pod reaches web by its Service name, and exits 0 (Succeeded).
  ASSERT_EQ(Apply(TestPod("client", "[fetch, --url, \"http://web.default.svc:8080/\"]",
                          "  restartPolicy: Never\n"))
                .exit_code,
            0);
  ASSERT_TRUE(WaitUntil([] { return PodPhase("client") == "Succeeded"; }))
      << Kubectl("describe pod client").output << Kubectl("logs client").output;
  CommandResult logs = Kubectl("logs client");
  EXPECT_NE(logs.output.find("hello from web"), std::string::npos) << logs.output;
  // The not-ready Service has no name to resolve: its client keeps failing.
  ASSERT_EQ(Apply(TestPod("cold-client",
                          "[fetch, --url, \"http://cold.default.svc:8080/\", --timeout-ms, "
                          "\"1500\"]",
                          "  restartPolicy: Never\n"))
                .exit_code,
            0);
  ASSERT_TRUE(WaitUntil([] { return PodPhase("cold-client") == "Failed"; }));
  EXPECT_EQ(Kubectl("delete pod web cold client cold-client --wait=true --timeout=60s").exit_code,
            0);
}

TEST_F(LocalClusterTest, CrashingContainerBacksOffWithGrowingRestartsAndKeepsLogs) {
  ASSERT_EQ(Apply(TestPod("crasher", "[crash, --code, \"3\"]")).exit_code, 0);
  bool saw_backoff = false;
  ASSERT_TRUE(WaitUntil(
      [&] {
        json pod = Get("pod crasher");
        if (!pod.is_object()) return false;
        const json s = pod.value("/status/containerStatuses/0"_json_pointer, json::object());
        if (s.value("/state/waiting/reason"_json_pointer, "") == "CrashLoopBackOff") {
          saw_backoff = true;
        }
        return saw_backoff && s.value("restartCount", 0) >= 3;
      },
      std::chrono::seconds(60)))
      << Kubectl("describe pod crasher").output;
  json pod = Get("pod crasher");
  EXPECT_EQ(pod.value("/status/containerStatuses/0/lastState/terminated/exitCode"_json_pointer, 0),
            3);
  EXPECT_EQ(pod.value("/status/phase"_json_pointer, ""), "Running");
  CommandResult logs = Kubectl("logs crasher");
  EXPECT_NE(logs.output.find("starting, will exit with 3"), std::string::npos) << logs.output;
  CommandResult previous = Kubectl("logs crasher --previous");
  EXPECT_EQ(previous.exit_code, 0) << previous.output;
  EXPECT_NE(previous.output.find("will exit with 3"), std::string::npos) << previous.output;
  EXPECT_NE(
      Kubectl("get events --field-selector involvedObject.name=crasher").output.find("BackOff"),
      std::string::npos);
  EXPECT_EQ(Kubectl("delete pod crasher --wait=true --timeout=60s").exit_code, 0);
}

TEST_F(LocalClusterTest, DeletionSendsSigtermAndHonoursTheGracePeriod) {
  const std::string host_dir = dir_ + "/grace";
  std::filesystem::create_directories(host_dir);
  const std::string volume =
      "  terminationGracePeriodSeconds: 10\n  volumes:\n    - name: out\n"
      "      hostPath: {path: " +
      host_dir + "}\n";
  const std::string mount = "      volumeMounts: [{name: out, mountPath: /out}]\n";
  ASSERT_EQ(Apply(TestPod("polite",
                          "[sleep, --term-delay-ms, \"1500\", --term-file, "
                          "/out/polite.txt]",
                          volume, mount))
                .exit_code,
            0);
  ASSERT_TRUE(WaitUntil([] { return PodPhase("polite") == "Running"; }));
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(host_dir + "/polite.txt"); }));
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(Kubectl("delete pod polite --wait=true --timeout=60s").exit_code, 0);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream in(host_dir + "/polite.txt");
  std::stringstream text;
  text << in.rdbuf();
  // It saw SIGTERM and finished its 1.5 s of cleanup: the grace period let it.
  EXPECT_NE(text.str().find("got SIGTERM\nexiting"), std::string::npos) << text.str();
  EXPECT_GE(took, 1.4);

  // One that ignores SIGTERM is killed when its 2 s grace period ends.
  const std::string short_grace =
      "  terminationGracePeriodSeconds: 2\n  volumes:\n    - name: out\n"
      "      hostPath: {path: " +
      host_dir + "}\n";
  ASSERT_EQ(Apply(TestPod("stubborn", "[sleep, --ignore-term, --term-file, /out/stubborn.txt]",
                          short_grace, mount))
                .exit_code,
            0);
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(host_dir + "/stubborn.txt"); }));
  const auto start2 = std::chrono::steady_clock::now();
  ASSERT_EQ(Kubectl("delete pod stubborn --wait=true --timeout=60s").exit_code, 0);
  const double took2 =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start2).count();
  EXPECT_GE(took2, 1.9);
  EXPECT_LT(took2, 20.0);
}

TEST_F(LocalClusterTest, GpuPodsGetDevicesAndAnOversizedOneStaysUnschedulable) {
  ASSERT_EQ(
      Apply(TestPod("too-big", "[sleep]", "", "      resources: {limits: {nvidia.com/gpu: 3}}\n"))
          .exit_code,
      0);
  std::string message;
  ASSERT_TRUE(WaitUntil([&] {
    message = PodField("too-big", "{.status.conditions[?(@.type==\"PodScheduled\")].message}");
    return !message.empty();
  })) << Kubectl("describe pod too-big").output;
  EXPECT_EQ(PodField("too-big", "{.status.conditions[?(@.type==\"PodScheduled\")].reason}"),
            "Unschedulable");
  EXPECT_NE(message.find("0/4 nodes are available"), std::string::npos) << message;
  EXPECT_NE(message.find("4 Insufficient nvidia.com/gpu"), std::string::npos) << message;
  EXPECT_EQ(PodPhase("too-big"), "Pending");
  EXPECT_TRUE(PodField("too-big", "{.spec.nodeName}").empty());

  ASSERT_EQ(
      Apply(TestPod("two-gpus", "[env]", "", "      resources: {limits: {nvidia.com/gpu: 2}}\n"))
          .exit_code,
      0);
  ASSERT_TRUE(WaitUntil([] { return PodPhase("two-gpus") == "Running"; }));
  EXPECT_EQ(PodField("two-gpus", "{.spec.nodeName}"), "east-gpu");
  ASSERT_TRUE(WaitUntil([] {
    return Kubectl("logs two-gpus").output.find("CUDA_VISIBLE_DEVICES=0,1") != std::string::npos;
  })) << Kubectl("logs two-gpus").output;
  EXPECT_NE(Kubectl("logs two-gpus").output.find("NVIDIA_VISIBLE_DEVICES=0,1"), std::string::npos);
  EXPECT_EQ(Kubectl("delete pod too-big two-gpus --wait=true --timeout=60s").exit_code, 0);
}

TEST_F(LocalClusterTest, EnvVolumesAndMountPathsReachTheProcessAndVolumesFollowTheirObjects) {
  ASSERT_EQ(Apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata:\n"
                  "  mode: fast\n  app.yaml: \"answer: 42\\n\"\n"
                  "---\napiVersion: v1\nkind: Secret\nmetadata: {name: creds}\n"
                  "stringData: {token: s3cret}\n" +
                  std::string("---\n") +
                  TestPod("envy", "[env, \"--config=/etc/app/app.yaml\"]",
                          "  volumes:\n    - name: cfg\n      configMap: {name: app}\n",
                          "      env:\n"
                          "        - {name: MODE, valueFrom: {configMapKeyRef: {name: app, key: "
                          "mode}}}\n"
                          "        - {name: TOKEN, valueFrom: {secretKeyRef: {name: creds, key: "
                          "token}}}\n"
                          "        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: "
                          "metadata.name}}}\n"
                          "        - {name: GREETING, value: \"hi $(POD_NAME)\"}\n"
                          "      volumeMounts: [{name: cfg, mountPath: /etc/app}]\n"))
                .exit_code,
            0);
  std::string logs;
  ASSERT_TRUE(WaitUntil([&] {
    logs = Kubectl("logs envy").output;
    return logs.find("argv=") != std::string::npos;
  })) << Kubectl("describe pod envy").output;
  EXPECT_NE(logs.find("MODE=fast"), std::string::npos) << logs;
  EXPECT_NE(logs.find("TOKEN=s3cret"), std::string::npos) << logs;
  EXPECT_NE(logs.find("GREETING=hi envy"), std::string::npos) << logs;
  EXPECT_NE(logs.find("SLUICE_HOSTS_FILE="), std::string::npos) << logs;
  // The mount path in the argument was rewritten to the materialised directory.
  const size_t at = logs.find("--config=");
  ASSERT_NE(at, std::string::npos);
  const std::string path = logs.substr(at + 9, logs.find('\n', at) - at - 9);
  EXPECT_EQ(path.find("/etc/app"), std::string::npos) << path;
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  EXPECT_EQ(content.str(), "answer: 42\n");
  // A changed ConfigMap reaches the mounted file of the running pod, as kubelet refreshes it
  // (a renewed certificate in a Secret gets there the same way); the environment keeps its value.
  ASSERT_EQ(Kubectl("patch configmap app --type=merge -p "
                    "'{\"data\":{\"app.yaml\":\"answer: 43\\n\"}}'")
                .exit_code,
            0);
  auto file_text = [&] {
    std::ifstream again(path);
    std::stringstream text;
    text << again.rdbuf();
    return text.str();
  };
  EXPECT_TRUE(WaitUntil([&] { return file_text() == "answer: 43\n"; }, std::chrono::seconds(30)))
      << file_text();
  EXPECT_EQ(Kubectl("delete pod envy --wait=true --timeout=60s").exit_code, 0);
}

TEST_F(LocalClusterTest, ClaimDirectoryOutlivesThePod) {
  ASSERT_EQ(Apply("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: results}\n"
                  "spec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: "
                  "1Gi}}\n")
                .exit_code,
            0);
  const std::string volume =
      "  volumes:\n    - name: data\n      persistentVolumeClaim: {claimName: results}\n";
  const std::string mount = "      volumeMounts: [{name: data, mountPath: /data}]\n";
  ASSERT_EQ(
      Apply(TestPod("writer-1", "[write, --file, /data/out.txt, --text, first]", volume, mount))
          .exit_code,
      0);
  ASSERT_TRUE(WaitUntil([] {
    return Kubectl("logs writer-1").output.find("first") != std::string::npos;
  })) << Kubectl("describe pod writer-1").output;
  ASSERT_EQ(Kubectl("delete pod writer-1 --wait=true --timeout=60s").exit_code, 0);
  ASSERT_EQ(
      Apply(TestPod("writer-2", "[write, --file, /data/out.txt, --text, second]", volume, mount))
          .exit_code,
      0);
  ASSERT_TRUE(WaitUntil([] {
    return Kubectl("logs writer-2").output.find("first\nsecond") != std::string::npos;
  })) << Kubectl("logs writer-2").output;
  EXPECT_EQ(Kubectl("delete pod writer-2 --wait=true --timeout=60s").exit_code, 0);
}

TEST_F(LocalClusterTest, FailedNodeFailsItsPodsAndFreesCapacity) {
  const std::string gpu = "      resources: {limits: {nvidia.com/gpu: 1}}\n";
  const std::string west = "  nodeSelector: {topology.kubernetes.io/region: local-eu-west}\n";
  ASSERT_EQ(Apply(TestPod("west-job", "[sleep]", west, gpu)).exit_code, 0);
  ASSERT_TRUE(WaitUntil([] { return PodPhase("west-job") == "Running"; }));
  ASSERT_EQ(PodField("west-job", "{.spec.nodeName}"), "west-gpu");
  // The node's only GPU is taken: a second GPU pod for the region waits.
  ASSERT_EQ(Apply(TestPod("west-job-2", "[sleep]", west, gpu)).exit_code, 0);
  ASSERT_TRUE(WaitUntil([] {
    return PodField("west-job-2", "{.status.conditions[?(@.type==\"PodScheduled\")].reason}") ==
           "Unschedulable";
  }));

  // What `sluice node fail` does.
  ASSERT_EQ(Kubectl("annotate node west-gpu sluice.dev/simulated-failure=true").exit_code, 0);
  ASSERT_TRUE(WaitUntil([] { return PodPhase("west-job") == "Failed"; }))
      << Kubectl("describe pod west-job").output;
  EXPECT_EQ(PodField("west-job", "{.status.reason}"), "NodeLost");
  EXPECT_EQ(Kubectl("get node west-gpu -o jsonpath='{.status.conditions[?(@.type==\"Ready\")]"
                    ".status}'")
                .output,
            "Unknown");

  // Recovered: the failed pod's GPU is free again, so the waiting pod runs there.
  ASSERT_EQ(Kubectl("annotate node west-gpu sluice.dev/simulated-failure-").exit_code, 0);
  ASSERT_TRUE(WaitUntil([] { return PodPhase("west-job-2") == "Running"; }))
      << Kubectl("describe pod west-job-2").output << Kubectl("describe node west-gpu").output;
  EXPECT_EQ(PodField("west-job-2", "{.spec.nodeName}"), "west-gpu");
  EXPECT_EQ(Kubectl("delete pod west-job west-job-2 --wait=true --timeout=60s").exit_code, 0);
}

TEST_F(LocalClusterTest, FailingLivenessProbeRestartsTheContainer) {
  ASSERT_EQ(Apply(TestPod("unhealthy", "[sleep]", "",
                          "      livenessProbe:\n        exec: {command: [/bin/false]}\n"
                          "        periodSeconds: 1\n        failureThreshold: 2\n"))
                .exit_code,
            0);
  ASSERT_TRUE(WaitUntil(
      [] {
        json pod = Get("pod unhealthy");
        return pod.is_object() &&
               pod.value("/status/containerStatuses/0/restartCount"_json_pointer, 0) >= 1;
      },
      std::chrono::seconds(40)))
      << Kubectl("describe pod unhealthy").output;
  CommandResult events = Kubectl("get events --field-selector involvedObject.name=unhealthy");
  EXPECT_NE(events.output.find("Liveness probe failed"), std::string::npos) << events.output;
  EXPECT_NE(events.output.find("failed liveness probe, will be restarted"), std::string::npos)
      << events.output;
  // The process honoured SIGTERM: its log says so.
  CommandResult previous = Kubectl("logs unhealthy --previous");
  EXPECT_NE(previous.output.find("got SIGTERM"), std::string::npos) << previous.output;
  EXPECT_EQ(Kubectl("delete pod unhealthy --wait=true --timeout=60s").exit_code, 0);
}

TEST_F(LocalClusterTest, FollowedLogsEndWhenTheContainerExits) {
  ASSERT_EQ(Apply(TestPod("short-lived", "[crash, --code, \"0\", --after-ms, \"1500\"]",
                          "  restartPolicy: Never\n"))
                .exit_code,
            0);
  ASSERT_TRUE(WaitUntil([] { return PodPhase("short-lived") == "Running"; }));
  // kubectl logs -f returns once the process has exited, with its whole output.
  CommandResult followed = Kubectl("logs -f short-lived --request-timeout=30s");
  EXPECT_EQ(followed.exit_code, 0) << followed.output;
  EXPECT_NE(followed.output.find("will exit with 0"), std::string::npos) << followed.output;
  ASSERT_TRUE(WaitUntil([] { return PodPhase("short-lived") == "Succeeded"; }));
  EXPECT_EQ(Kubectl("logs short-lived --timestamps").output.substr(0, 2), "20");
  EXPECT_EQ(Kubectl("delete pod short-lived --wait=true --timeout=60s").exit_code, 0);
}

}  // namespace
}  // namespace sluice::e2e
