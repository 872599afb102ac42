// The Helm chart (helm/sluice) rendered by the real helm: `helm lint --strict`, the objects of
// the default values and of each value set (tests/helm/chart_value_sets.h), values the schema
// must refuse naming the field, and every operator flag the chart passes being one that
// sluice-operator has. Tests that need helm fail, never skip, when it is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/helm/chart_value_sets.h"
#include "tests/helm/helm_chart.h"

namespace sluice::helm_test {
namespace {

using nlohmann::json;

// Renders `values` (release "sluice" in sluice-system) and parses the objects; fails the test
// on a helm or parse error.
std::vector<json> Render(const std::string& values, const std::string& release = "sluice") {
  HelmResult r = RenderChart(values, release);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::string error;
  std::vector<json> objects = ParseObjects(r.out, &error);
  EXPECT_TRUE(error.empty()) << error << "\n" << r.out;
  return objects;
}

const std::string& ValuesOf(const std::string& set_name) {
  for (const ChartValueSet& set : ChartValueSets()) {
    if (set.name == set_name) return set.values;
  }
  ADD_FAILURE() << "no value set " << set_name;
  static const std::string kNone;
  return kNone;
}

// The operator's container (null when the Deployment has none). Tests index copies of
// objects with the non-const operator[], which yields null for a missing key instead of the
// const one's undefined behaviour.
json OperatorContainer(const json& deployment) {
  return deployment.value("/spec/template/spec/containers/0"_json_pointer, json());
}

std::vector<std::string> Args(const json& deployment) {
  const json container = OperatorContainer(deployment);
  if (!container.is_object()) return {};
  return container.value("args", std::vector<std::string>{});
}

bool HasArg(const json& deployment, const std::string& arg) {
  const std::vector<std::string> args = Args(deployment);
  return std::find(args.begin(), args.end(), arg) != args.end();
}

bool HasArgStartingWith(const json& deployment, const std::string& prefix) {
  for (const std::string& a : Args(deployment)) {
    if (a.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::set<std::string> Kinds(const std::vector<json>& objects) {
  std::set<std::string> kinds;
  for (const json& o : objects) kinds.insert(o.value("kind", ""));
  return kinds;
}

TEST(HelmChartTest, LintStrictPassesForEveryValueSet) {
  ASSERT_TRUE(HaveHelm()) << kHelmMissing;
  for (const ChartValueSet& set : ChartValueSets()) {
    HelmScratch scratch;
    const std::string values = scratch.Write("values.yaml", set.values);
    HelmResult r = scratch.Run("lint --strict " + ShellQuote(ChartDir().string()) + " -f " +
                               ShellQuote(values));
    EXPECT_EQ(r.exit_code, 0) << set.name << ":\n" << r.out << r.err;
  }
}

TEST(HelmChartTest, EveryValueSetRendersWellFormedObjects) {
  ASSERT_TRUE(HaveHelm()) << kHelmMissing;
  const std::set<std::string> cluster_scoped = {"ClusterRole", "ClusterRoleBinding"};
  for (const ChartValueSet& set : ChartValueSets()) {
    SCOPED_TRACE(set.name);
    const std::vector<json> objects = Render(set.values);
    ASSERT_FALSE(objects.empty());
    std::set<std::string> seen;
    for (const json& o : objects) {
      const std::string kind = o.value("kind", "");
      const std::string name = o.value("/metadata/name"_json_pointer, "");
      const std::string ns = o.value("/metadata/namespace"_json_pointer, "");
      EXPECT_FALSE(o.value("apiVersion", "").empty()) << o.dump();
      EXPECT_FALSE(name.empty()) << o.dump();
      EXPECT_EQ(!ns.empty(), cluster_scoped.count(kind) == 0) << kind << "/" << name;
      EXPECT_TRUE(seen.insert(kind + "/" + ns + "/" + name).second)
          << "twice: " << kind << "/" << name;
      EXPECT_EQ(o.value("/metadata/labels/app.kubernetes.io~1name"_json_pointer, ""), "sluice")
          << kind << "/" << name;
      EXPECT_EQ(o.value("/metadata/labels/app.kubernetes.io~1managed-by"_json_pointer, ""), "Helm")
          << kind << "/" << name;
    }
    EXPECT_EQ(FindObjects(objects, "Deployment").size(), 1u);
  }
}

TEST(HelmChartTest, DefaultValuesRunARestrictedLeaderElectedOperator) {
  ASSERT_TRUE(HaveHelm()) << kHelmMissing;
  const std::vector<json> objects = Render("");
  EXPECT_EQ(Kinds(objects),
            (std::set<std::string>{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                                   "RoleBinding", "Service", "Deployment"}));
  json deployment = FindObject(objects, "Deployment", "sluice-operator");
  ASSERT_TRUE(deployment.is_object());
  EXPECT_EQ(deployment["metadata"]["namespace"], "sluice-system");
  EXPECT_EQ(deployment["spec"]["replicas"], 1);
  json& pod = deployment["spec"]["template"]["spec"];
  EXPECT_EQ(pod["serviceAccountName"], "sluice-operator");
  EXPECT_EQ(pod["automountServiceAccountToken"], true);
  EXPECT_EQ(pod["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(pod["securityContext"]["runAsUser"], 65532);
  EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  EXPECT_FALSE(pod.contains("nodeSelector"));
  EXPECT_FALSE(pod.contains("priorityClassName"));

  json container = OperatorContainer(deployment);
  EXPECT_EQ(container["image"], "sluice/operator:0.1.0");
  EXPECT_EQ(container["imagePullPolicy"], "IfNotPresent");
  json& sc = container["securityContext"];
  EXPECT_EQ(sc["allowPrivilegeEscalation"], false);
  EXPECT_EQ(sc["readOnlyRootFilesystem"], true);
  EXPECT_EQ(sc["capabilities"]["drop"], json::array({"ALL"}));
  // The read-only root filesystem leaves /tmp writable through an emptyDir.
  EXPECT_EQ(container["volumeMounts"], json::parse(R"([{"name": "tmp", "mountPath": "/tmp"}])"));
  EXPECT_TRUE(pod["volumes"][0].contains("emptyDir"));
  EXPECT_EQ(container["ports"], json::parse(R"([
      {"name": "metrics", "containerPort": 8080, "protocol": "TCP"},
      {"name": "health", "containerPort": 8081, "protocol": "TCP"}])"));
  EXPECT_EQ(container["readinessProbe"]["httpGet"],
            json::parse(R"({"path": "/readyz", "port": "health"})"));
  EXPECT_EQ(container["livenessProbe"]["httpGet"],
            json::parse(R"({"path": "/healthz", "port": "health"})"));
  EXPECT_EQ(container["env"][0]["name"], "POD_NAME");
  EXPECT_TRUE(container["resources"]["requests"].contains("memory"));

  for (const char* arg :
       {"--leader-elect=true", "--leader-election-id=sluice-operator",
        "--leader-election-namespace=sluice-system", "--leader-election-lease-duration=15s",
        "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081",
        "--dataflow-image=sluice/dataflow:0.1.0", "--rollout-image=sluice/rollout:0.1.0",
        "--trainer-image=sluice/trainer:0.1.0", "--image-pull-policy=IfNotPresent",
        "--log-level=info"}) {
    EXPECT_TRUE(HasArg(deployment, arg)) << arg;
  }
  // Defaults that mean "none" pass no flag: every namespace, no Prometheus.
  EXPECT_FALSE(HasArgStartingWith(deployment, "--namespace="));
  EXPECT_FALSE(HasArgStartingWith(deployment, "--prometheus-url="));
  EXPECT_FALSE(HasArgStartingWith(deployment, "--rollout-seccomp-profile="));

  // The metrics Service selects exactly the operator's pods.
  json service = FindObject(objects, "Service", "sluice-operator-metrics");
  ASSERT_TRUE(service.is_object());
  EXPECT_EQ(service["spec"]["selector"], deployment["spec"]["selector"]["matchLabels"]);
  for (const auto& [key, value] : deployment["spec"]["selector"]["matchLabels"].items()) {
    EXPECT_EQ(deployment["spec"]["template"]["metadata"]["labels"][key], value) << key;
  }
  EXPECT_EQ(service["spec"]["ports"][0]["targetPort"], "metrics");
  EXPECT_EQ(FindObject(objects, "ServiceAccount", "sluice-operator")["metadata"]["namespace"],
            "sluice-system");
}

TEST(HelmChartTest, BindAddressIsTheHostOfBothListeners) {
  ASSERT_TRUE(HaveHelm()) << kHelmMissing;
  json deployment = FindObject(Render(ValuesOf("pod-ip")), "Deployment");
  EXPECT_TRUE(HasArg(deployment, "--metrics-bind-address=$(POD_IP):8080"));
  EXPECT_TRUE(HasArg(deployment, "--health-probe-bind-address=$(POD_IP):8081"));
  json container = OperatorContainer(deployment);
  EXPECT_EQ(container["env"][1],
            json::parse(
                R"({"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})"));
}

TEST(HelmChartTest, ReleaseNamesOtherThanSluiceGetTheirOwnObjects) {
  ASSERT_TRUE(HaveHelm()) << kHelmMissing;
  const std::vector<json> objects = Render("", "rl");
  EXPECT_TRUE(FindObject(objects, "Deployment", "rl-sluice-operator").is_object());
  EXPECT_TRUE(FindObject(objects, "ClusterRole", "rl-sluice-operator").is_object());
  json deployment = FindObject(objects, "Deployment");
  EXPECT_TRUE(HasArg(deployment, "--leader-election-id=rl-sluice-operator"));
  EXPECT_EQ(deployment["spec"]["template"]["spec"]["serviceAccountName"], "rl-sluice-operator");
}

TEST(HelmChartTest, WatchedNamespacesGetRolesInsteadOfAClusterRole) {
  ASSERT_TRUE(HaveHelm()) << kHelmMissing;
  const std::vector<json> objects = Render(ValuesOf("namespaced"));
  EXPECT_TRUE(FindObjects(objects, "ClusterRole").empty());
  EXPECT_TRUE(FindObjects(objects, "ClusterRoleBinding").empty());
  std::set<std::string> role_namespaces, binding_namespaces;
  for (json role : FindObjects(objects, "Role")) {
    if (role["metadata"]["name"] == "sluice-operator") {
      role_namespaces.insert(role["metadata"]["namespace"].get<std::string>());
    }
  }
  for (json binding : FindObjects(objects, "RoleBinding")) {
    if (binding["metadata"]["name"] != "sluice-operator") continue;
    binding_namespaces.insert(binding["metadata"]["namespace"].get<std::string>());
    EXPECT_EQ(binding["roleRef"]["kind"], "Role");
    EXPECT_EQ(binding["subjects"][0]["namespace"], "sluice-system");
  }
  EXPECT_EQ(role_namespaces, (std::set<std::string>{"team-a", "team-b"}));
  EXPECT_EQ(binding_namespaces, role_namespaces);
  EXPECT_TRUE(HasArg(FindObject(objects, "Deployment"), "--namespace=team-a,team-b"));
}

TEST(HelmChartTest, ServiceMonitorScrapesTheMetricsServiceAndTheDashboardShips) {
  ASSERT_TRUE(HaveHelm()) << kHelmMissing;
  const std::vector<json> objects = Render(ValuesOf("service-monitor"));
  json monitor = FindObject(objects, "ServiceMonitor");
  ASSERT_TRUE(monitor.is_object());
  EXPECT_EQ(monitor["apiVersion"], "monitoring.coreos.com/v1");
  EXPECT_EQ(monitor["metadata"]["labels"]["release"], "kube-prometheus-stack");
  json service = FindObject(objects, "Service", "sluice-operator-metrics");
  ASSERT_TRUE(service.is_object());
  for (const auto& [key, value] : monitor["spec"]["selector"]["matchLabels"].items()) {
    EXPECT_EQ(service["metadata"]["labels"][key], value) << key;
  }
  EXPECT_EQ(monitor["spec"]["namespaceSelector"]["matchNames"], json::array({"sluice-system"}));
  json& endpoint = monitor["spec"]["endpoints"][0];
  EXPECT_EQ(endpoint["port"], service["spec"]["ports"][0]["name"]);
  EXPECT_EQ(endpoint["interval"], "15s");
  EXPECT_EQ(endpoint["honorLabels"], true);

  json dashboard = FindObject(objects, "ConfigMap", "sluice-dashboard");
  ASSERT_TRUE(dashboard.is_object());
  EXPECT_EQ(dashboard["metadata"]["labels"]["grafana_dashboard"], "1");
  json board = json::parse(dashboard["data"].value("sluice.json", ""), nullptr, false);
  ASSERT_FALSE(board.is_discarded());
  EXPECT_EQ(board["uid"], "sluice-overview");
  EXPECT_EQ(board, json::parse(ReadText(ChartDir() / "dashboards" / "sluice.json")));

  EXPECT_TRUE(HasArg(FindObject(objects, "Deployment"),
                     "--prometheus-url=http://prometheus-operated.monitoring.svc:9090"));
  EXPECT_TRUE(
      HasArg(FindObject(objects, "Deployment"), "--rollout-seccomp-profile=sluice/rollout.json"));
}

TEST(HelmChartTest, NetworkPolicyOpensOnlyTheHealthAndMetricsPorts) {
  ASSERT_TRUE(HaveHelm()) << kHelmMissing;
  const std::vector<json> objects = Render(ValuesOf("network-policies"));
  json policy = FindObject(objects, "NetworkPolicy", "sluice-operator");
  ASSERT_TRUE(policy.is_object());
  json deployment = FindObject(objects, "Deployment");
  EXPECT_EQ(policy["spec"]["podSelector"]["matchLabels"],
            deployment["spec"]["selector"]["matchLabels"]);
  EXPECT_EQ(policy["spec"]["policyTypes"], json::array({"Ingress"}));
  json& ingress = policy["spec"]["ingress"];
  ASSERT_EQ(ingress.size(), 2u);
  EXPECT_EQ(ingress[0], json::parse(R"({"ports": [{"port": "health", "protocol": "TCP"}]})"));
  EXPECT_EQ(ingress[1]["ports"], json::parse(R"([{"port": "metrics", "protocol": "TCP"}])"));
  EXPECT_EQ(
      ingress[1]["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
      "monitoring");
  // Off by default.
  EXPECT_TRUE(FindObjects(Render(""), "NetworkPolicy").empty());
}

TEST(HelmChartTest, CustomImagesReachTheOperatorAndItsWorkerFlags) {
  ASSERT_TRUE(HaveHelm()) << kHelmMissing;
  const std::vector<json> objects = Render(ValuesOf("custom-images"));
  json deployment = FindObject(objects, "Deployment");
  json container = OperatorContainer(deployment);
  EXPECT_EQ(container["image"], "registry.example.com/rl/sluice/operator:1.2.3");
  EXPECT_EQ(container["imagePullPolicy"], "Always");
  EXPECT_EQ(deployment["spec"]["template"]["spec"]["imagePullSecrets"],
            json::parse(R"([{"name": "regcred"}])"));
  const std::string digest = kTestDigest;
  EXPECT_TRUE(HasArg(deployment, "--dataflow-image=mirror.example.com:5000/sluice/dataflow:1.2.3"));
  EXPECT_TRUE(HasArg(deployment,
                     "--rollout-image=registry.example.com/rl/team/rollout-cuda:"
                     "1.2.3-cu124@" +
                         digest));
  EXPECT_TRUE(
      HasArg(deployment, "--trainer-image=registry.example.com/rl/sluice/trainer:0.1.0@" + digest));
  EXPECT_TRUE(HasArg(deployment, "--image-pull-policy=Always"));
}

TEST(HelmChartTest, LeaderElectionOffDropsTheLeaseRoleAndNeverOverlapsPods) {
  ASSERT_TRUE(HaveHelm()) << kHelmMissing;
  const std::vector<json> objects = Render(ValuesOf("no-leader-election"));
  EXPECT_TRUE(FindObjects(objects, "Role").empty());
  EXPECT_TRUE(FindObjects(objects, "RoleBinding").empty());
  EXPECT_TRUE(FindObject(objects, "ClusterRole").is_object());
  json deployment = FindObject(objects, "Deployment");
  EXPECT_TRUE(HasArg(deployment, "--leader-elect=false"));
  EXPECT_FALSE(HasArgStartingWith(deployment, "--leader-election-"));
  EXPECT_EQ(deployment["spec"]["strategy"]["type"], "Recreate");
}

TEST(HelmChartTest, SchedulingValuesReachThePod) {
  ASSERT_TRUE(HaveHelm()) << kHelmMissing;
  const std::vector<json> objects = Render(ValuesOf("scheduling"));
  json deployment = FindObject(objects, "Deployment");
  EXPECT_EQ(deployment["spec"]["replicas"], 2);
  json& pod = deployment["spec"]["template"];
  EXPECT_EQ(pod["spec"]["nodeSelector"], json::parse(R"({"kubernetes.io/os": "linux"})"));
  EXPECT_EQ(pod["spec"]["tolerations"][0]["key"], "dedicated");
  EXPECT_EQ(pod["spec"]["affinity"]["podAntiAffinity"]
               ["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"],
            100);
  EXPECT_EQ(pod["spec"]["priorityClassName"], "sluice-control");
  EXPECT_EQ(pod["metadata"]["annotations"]["example.com/team"], "rl");
  EXPECT_EQ(OperatorContainer(deployment)["resources"]["limits"]["cpu"], "1");
  EXPECT_EQ(FindObject(objects,
                       "ServiceAccount")["metadata"]["annotations"]["eks.amazonaws.com/role-arn"],
            "arn:aws:iam::123456789012:role/sluice");
}

// A wrong type, a typo'd key, a malformed value and an impossible combination are refused, and
// the message names the field.
TEST(HelmChartTest, BadValuesAreRefusedNamingTheField) {
  ASSERT_TRUE(HaveHelm()) << kHelmMissing;
  const struct {
    const char* values;
    const char* expected;
  } kCases[] = {
      {"operator:\n  replicas: two\n", "/operator/replicas"},
      {"operator:\n  replica: 2\n", "additional properties 'replica' not allowed"},
      {"operatr:\n  replicas: 2\n", "additional properties 'operatr' not allowed"},
      {"images:\n  rollout: {digest: sha256:abc}\n", "/images/rollout/digest"},
      {"imagePullPolicy: Sometimes\n", "/imagePullPolicy"},
      {"operator:\n  watchNamespaces: [Team-A]\n", "/operator/watchNamespaces/0"},
      {"operator:\n  leaderElection: {leaseDuration: 15}\n",
       "/operator/leaderElection/leaseDuration"},
      {"operator:\n  replicas: 2\n  leaderElection: {enabled: false}\n", "operator.replicas"},
      {"metrics:\n  service: {enabled: false}\n  serviceMonitor: {enabled: true}\n",
       "metrics.serviceMonitor.enabled"},
      {"operator:\n  healthPort: 8080\n", "operator.metricsPort and operator.healthPort"},
      {"operator:\n  bindAddress: localhost\n", "/operator/bindAddress"},
  };
  for (const auto& c : kCases) {
    HelmResult r = RenderChart(c.values);
    EXPECT_NE(r.exit_code, 0) << c.values;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.values << "\n" << r.err;
  }
}

// The flags sluice-operator --help lists (`--name` or `--[no-]name`).
std::set<std::string> OperatorFlags() {
  HelmScratch scratch;  // Only for its directory.
  const std::string out_file = scratch.dir() + "/help";
  const std::string command =
      std::string(SLUICE_BIN_DIR) + "/sluice-operator --help > " + ShellQuote(out_file) + " 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << ReadText(out_file);
  std::set<std::string> flags;
  std::istringstream lines(ReadText(out_file));
  std::string line;
  while (std::getline(lines, line)) {
    const size_t start = line.find_first_not_of(' ');
    if (start == std::string::npos || line.compare(start, 2, "--") != 0) continue;
    std::string flag = line.substr(start + 2, line.find(' ', start) - start - 2);
    if (flag.rfind("[no-]", 0) == 0) flag = flag.substr(5);
    flags.insert(flag);
  }
  return flags;
}

TEST(HelmChartTest, EveryFlagTheChartPassesIsAnOperatorFlag) {
  ASSERT_TRUE(HaveHelm()) << kHelmMissing;
  const std::set<std::string> flags = OperatorFlags();
  ASSERT_TRUE(flags.count("leader-elect") && flags.count("prometheus-url")) << flags.size();
  for (const ChartValueSet& set : ChartValueSets()) {
    for (const std::string& arg : Args(FindObject(Render(set.values), "Deployment"))) {
      ASSERT_EQ(arg.rfind("--", 0), 0u) << arg;
      const std::string name = arg.substr(2, arg.find('=') - 2);
      EXPECT_TRUE(flags.count(name)) << set.name << ": " << arg << " is not a sluice-operator flag";
    }
  }
}

}  // namespace
}  // namespace sluice::helm_test
