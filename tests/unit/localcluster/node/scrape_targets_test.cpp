// PodScrapeTargets: which pods become Prometheus file_sd targets, at which address and path,
// under which labels.
#include "localcluster/node/scrape_targets.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sluice::node {
namespace {

using nlohmann::json;

// A Running pod at `ip` annotated for scraping on port 8080, as the operator makes a dataflow pod.
json ScrapedPod(const std::string& name, const std::string& ip, const std::string& ns = "default") {
  return {{"metadata",
           {{"name", name},
            {"namespace", ns},
            {"labels",
             {{"app.kubernetes.io/name", "sluice-dataflow"},
              {"app.kubernetes.io/instance", "arith"},
              {"app.kubernetes.io/component", "dataflow"},
              {"app.kubernetes.io/managed-by", "sluice-operator"},
              {"sluice.dev/dataflow", "arith"}}},
            {"annotations",
             {{"prometheus.io/scrape", "true"},
              {"prometheus.io/port", "8080"},
              {"prometheus.io/path", "/metrics"},
              {"sluice.dev/config-hash", "abc"}}}}},
          {"spec",
           {{"nodeName", "east-cpu"},
            {"containers", json::array({{{"name", "dataflow"},
                                         {"ports", json::array({{{"name", "http"},
                                                                 {"containerPort", 8080},
                                                                 {"protocol", "TCP"}}})}}})}}},
          {"status", {{"phase", "Running"}, {"podIP", ip}}}};
}

TEST(ScrapeTargetsTest, AnnotatedRunningPodIsATargetWithItsLabels) {
  EXPECT_EQ(PodScrapeTargets({ScrapedPod("arith-dataflow", "127.1.0.5")}), json::parse(R"([
    {"targets": ["127.1.0.5:8080"],
     "labels": {"__metrics_path__": "/metrics", "namespace": "default", "pod": "arith-dataflow",
                "component": "dataflow", "dataflow": "arith"}}])"));
}

TEST(ScrapeTargetsTest, WhichPodsAreTargets) {
  struct Case {
    const char* name;
    std::function<void(json&)> change;
    bool target;
  };
  const std::vector<Case> cases = {
      {"as made", [](json&) {}, true},
      {"Pending", [](json& p) { p["status"]["phase"] = "Pending"; }, false},
      {"Succeeded", [](json& p) { p["status"]["phase"] = "Succeeded"; }, false},
      {"Failed", [](json& p) { p["status"]["phase"] = "Failed"; }, false},
      {"no pod IP yet", [](json& p) { p["status"].erase("podIP"); }, false},
      {"no status", [](json& p) { p.erase("status"); }, false},
      // Still running its grace period: still serving metrics, as kubernetes_sd lists it.
      {"being deleted",
       [](json& p) { p["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"; }, true},
      {"scrape false",
       [](json& p) { p["metadata"]["annotations"]["prometheus.io/scrape"] = "false"; }, false},
      {"scrape True (not the convention)",
       [](json& p) { p["metadata"]["annotations"]["prometheus.io/scrape"] = "True"; }, false},
      {"no scrape annotation",
       [](json& p) { p["metadata"]["annotations"].erase("prometheus.io/scrape"); }, false},
      {"no annotations", [](json& p) { p["metadata"].erase("annotations"); }, false},
      {"annotations not an object", [](json& p) { p["metadata"]["annotations"] = "x"; }, false},
      {"port not a number",
       [](json& p) { p["metadata"]["annotations"]["prometheus.io/port"] = "http"; }, false},
      {"port 0", [](json& p) { p["metadata"]["annotations"]["prometheus.io/port"] = "0"; }, false},
      {"port 65536", [](json& p) { p["metadata"]["annotations"]["prometheus.io/port"] = "65536"; },
       false},
      {"port -1", [](json& p) { p["metadata"]["annotations"]["prometheus.io/port"] = "-1"; },
       false},
      {"no port annotation, no container ports",
       [](json& p) {
         p["metadata"]["annotations"].erase("prometheus.io/port");
         p["spec"]["containers"][0].erase("ports");
       },
       false},
  };
  for (const Case& c : cases) {
    json pod = ScrapedPod("p", "127.1.0.9");
    c.change(pod);
    EXPECT_EQ(PodScrapeTargets({pod}).size(), c.target ? 1u : 0u) << c.name;
  }
}

TEST(ScrapeTargetsTest, PortComesFromTheAnnotationElseEveryTcpContainerPort) {
  struct Case {
    const char* name;
    std::function<void(json&)> change;
    json targets;
  };
  auto no_annotation = [](json& p) { p["metadata"]["annotations"].erase("prometheus.io/port"); };
  const std::vector<Case> cases = {
      {"annotated", [](json&) {}, {"127.1.0.9:8080"}},
      {"annotated elsewhere",
       [](json& p) { p["metadata"]["annotations"]["prometheus.io/port"] = "9100"; },
       {"127.1.0.9:9100"}},
      {"annotated 65535",
       [](json& p) { p["metadata"]["annotations"]["prometheus.io/port"] = "65535"; },
       {"127.1.0.9:65535"}},
      {"container port", no_annotation, {"127.1.0.9:8080"}},
      {"every container's TCP ports, each once, in order",
       [&](json& p) {
         no_annotation(p);
         p["spec"]["containers"][0]["ports"].push_back(
             {{"name", "rendezvous"}, {"containerPort", 29500}});  // Protocol defaults to TCP.
         p["spec"]["containers"][0]["ports"].push_back(
             {{"name", "dns"}, {"containerPort", 53}, {"protocol", "UDP"}});
         p["spec"]["containers"].push_back(
             {{"name", "sidecar"},
              {"ports", json::array({{{"containerPort", 8080}}, {{"containerPort", "9"}}})}});
       },
       {"127.1.0.9:8080", "127.1.0.9:29500"}},
  };
  for (const Case& c : cases) {
    json pod = ScrapedPod("p", "127.1.0.9");
    c.change(pod);
    const json groups = PodScrapeTargets({pod});
    ASSERT_EQ(groups.size(), 1u) << c.name;
    EXPECT_EQ(groups[0]["targets"], c.targets) << c.name;
  }
}

TEST(ScrapeTargetsTest, PathSchemeAndLabelMapping) {
  json pod = ScrapedPod("job-0", "127.1.0.3", "team-a");
  pod["metadata"]["annotations"]["prometheus.io/path"] = "/v1/metrics";
  pod["metadata"]["annotations"]["prometheus.io/scheme"] = "https";
  pod["metadata"]["labels"] = {{"app.kubernetes.io/component", "trainer"},
                               {"sluice.dev/trainer-job", "job"},
                               {"sluice.dev/rank", "0"},
                               {"sluice.dev/dataflow", "arith"},
                               {"sluice.dev/policy", "actor"},  // Would rename the series' own.
                               {"sluice.dev/template-hash", "0123456789"},
                               {"sluice.dev/attempt", "1"},
                               {"app.kubernetes.io/instance", "job"}};
  EXPECT_EQ(PodScrapeTargets({pod})[0]["labels"], json::parse(R"({
    "__metrics_path__": "/v1/metrics", "__scheme__": "https", "namespace": "team-a",
    "pod": "job-0", "component": "trainer", "trainer_job": "job", "rank": "0",
    "dataflow": "arith"})"));

  json rollout = ScrapedPod("elastic-local-us-east-0", "127.1.0.4");
  rollout["metadata"]["annotations"].erase("prometheus.io/path");         // Defaults to /metrics.
  rollout["metadata"]["annotations"]["prometheus.io/scheme"] = "gopher";  // Ignored.
  rollout["metadata"]["labels"] = {{"app.kubernetes.io/component", "rollout"},
                                   {"sluice.dev/pool", "elastic"},
                                   {"sluice.dev/region", "local-us-east"},
                                   {"sluice.dev/dataflow", "arith"},
                                   {"sluice.dev/replica-index", "0"}};
  EXPECT_EQ(PodScrapeTargets({rollout})[0]["labels"], json::parse(R"({
    "__metrics_path__": "/metrics", "namespace": "default", "pod": "elastic-local-us-east-0",
    "component": "rollout", "pool": "elastic", "region": "local-us-east", "dataflow": "arith"})"));
}

TEST(ScrapeTargetsTest, GroupsAreSortedByNamespaceThenNameSoTheTextIsStable) {
  const std::vector<json> pods = {ScrapedPod("b", "127.1.0.2", "team-a"),
                                  ScrapedPod("a", "127.1.0.3", "team-b"),
                                  ScrapedPod("a", "127.1.0.4", "team-a")};
  const json groups = PodScrapeTargets(pods);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0]["targets"][0], "127.1.0.4:8080");
  EXPECT_EQ(groups[1]["targets"][0], "127.1.0.2:8080");
  EXPECT_EQ(groups[2]["targets"][0], "127.1.0.3:8080");
  const std::vector<json> reversed(pods.rbegin(), pods.rend());
  EXPECT_EQ(PodScrapeTargets(reversed).dump(), groups.dump());
  EXPECT_EQ(PodScrapeTargets({}), json::array());
}

TEST(ScrapeTargetsTest, MalformedPodsAreSkippedNotThrown) {
  json no_metadata = ScrapedPod("x", "127.1.0.2");
  no_metadata.erase("metadata");
  json containers_not_list = ScrapedPod("y", "127.1.0.3");
  containers_not_list["metadata"]["annotations"].erase("prometheus.io/port");
  containers_not_list["spec"]["containers"] = "nope";
  json odd_ports = ScrapedPod("z", "127.1.0.4");
  odd_ports["metadata"]["annotations"].erase("prometheus.io/port");
  odd_ports["spec"]["containers"] = json::array({"c", {{"ports", 5}}, {{"ports", {1, "x"}}}});
  json label_not_string = ScrapedPod("w", "127.1.0.5");
  label_not_string["metadata"]["labels"]["sluice.dev/dataflow"] = 7;
  json groups;
  ASSERT_NO_THROW(groups = PodScrapeTargets({json(), json::array(), no_metadata,
                                             containers_not_list, odd_ports, label_not_string}));
  ASSERT_EQ(groups.size(), 1u) << groups.dump();
  EXPECT_EQ(groups[0]["labels"]["pod"], "w");
  EXPECT_FALSE(groups[0]["labels"].contains("dataflow"));
}

}  // namespace
}  // namespace sluice::node
