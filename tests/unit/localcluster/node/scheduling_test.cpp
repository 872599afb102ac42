#include "localcluster/node/scheduling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sluice::node {
namespace scheduling_test {

using nlohmann::json;

constexpr int64_t kGiMilli = int64_t{1024} * 1024 * 1024 * 1000;

// A Ready node with the given allocatable (and capacity) and labels.
json MakeNode(const std::string& name, const json& allocatable,
              const json& labels = json::object()) {
  json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", name}, {"labels", labels}}},
               {"spec", json::object()},
               {"status", {{"capacity", allocatable}, {"allocatable", allocatable}}}};
  node["metadata"]["labels"]["kubernetes.io/hostname"] = name;
  return node;
}

json CpuNode(const std::string& name, const json& labels = json::object()) {
  return MakeNode(name, {{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "110"}}, labels);
}

json GpuNode(const std::string& name, int gpus, const json& labels = json::object()) {
  return MakeNode(
      name, {{"cpu", "8"}, {"memory", "64Gi"}, {"pods", "110"}, {"nvidia.com/gpu", gpus}}, labels);
}

json Container(const std::string& name, const json& requests, const json& limits = nullptr) {
  json c = {{"name", name}, {"image", "busybox"}};
  if (!requests.is_null()) c["resources"]["requests"] = requests;
  if (!limits.is_null()) c["resources"]["limits"] = limits;
  return c;
}

// A pending pod with one container requesting `requests`.
json MakePod(const json& requests = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "p"}, {"namespace", "default"}}},
          {"spec", {{"containers", json::array({Container("main", requests)})}}},
          {"status", {{"phase", "Pending"}}}};
}

json Requirement(const std::string& key, const std::string& op,
                 const std::vector<std::string>& values = {}) {
  json r = {{"key", key}, {"operator", op}};
  if (!values.empty()) r["values"] = values;
  return r;
}

json ExpressionTerm(const std::vector<json>& expressions) {
  return {{"matchExpressions", expressions}};
}

void SetRequiredTerms(json& pod, const std::vector<json>& terms) {
  pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
      {"nodeSelectorTerms", terms}};
}

void AddPreferred(json& pod, int weight, const json& term) {
  pod["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
      .push_back({{"weight", weight}, {"preference", term}});
}

json Taint(const std::string& key, const std::string& value, const std::string& effect) {
  json t = {{"key", key}, {"effect", effect}};
  if (!value.empty()) t["value"] = value;
  return t;
}

ResourceList Requests(const json& pod) {
  Result<ResourceList> r = PodRequests(pod);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : ResourceList{};
}

// ---- PodRequests ----

TEST(NodeSchedulingTest, PodRequestsSumsContainersAndCountsThePod) {
  json pod = MakePod({{"cpu", "500m"}, {"memory", "1Gi"}});
  pod["spec"]["containers"].push_back(Container("side", {{"cpu", "250m"}, {"nvidia.com/gpu", 1}}));
  const ResourceList want = {
      {"cpu", 750}, {"memory", kGiMilli}, {"nvidia.com/gpu", 1000}, {"pods", 1000}};
  EXPECT_EQ(Requests(pod), want);
}

TEST(NodeSchedulingTest, PodRequestsWithoutResourcesIsJustThePod) {
  json pod = MakePod();
  pod["spec"]["containers"][0].erase("resources");
  EXPECT_EQ(Requests(pod), (ResourceList{{"pods", 1000}}));
  EXPECT_EQ(Requests(json::object()), (ResourceList{{"pods", 1000}}));
}

TEST(NodeSchedulingTest, PodRequestsFallsBackToLimits) {
  json pod = MakePod();
  pod["spec"]["containers"] = json::array(
      {Container("a", {{"cpu", "100m"}}, {{"cpu", "2"}, {"memory", "2Gi"}, {"nvidia.com/gpu", 2}}),
       Container("b", nullptr, {{"cpu", "1"}})});
  const ResourceList want = {
      {"cpu", 1100}, {"memory", 2 * kGiMilli}, {"nvidia.com/gpu", 2000}, {"pods", 1000}};
  EXPECT_EQ(Requests(pod), want);
}

TEST(NodeSchedulingTest, PodRequestsTakesMaxWithInitContainers) {
  json pod = MakePod({{"cpu", "1"}, {"memory", "1Gi"}});
  pod["spec"]["initContainers"] = json::array({
      Container("init-big-cpu", {{"cpu", "3"}}),
      Container("init-mem", {{"memory", "512Mi"}}),
      Container("init-gpu", nullptr, {{"nvidia.com/gpu", 1}}),
  });
  const ResourceList want = {
      {"cpu", 3000}, {"memory", kGiMilli}, {"nvidia.com/gpu", 1000}, {"pods", 1000}};
  EXPECT_EQ(Requests(pod), want);
}

TEST(NodeSchedulingTest, PodRequestsCountsSidecarsAndOverhead) {
  json pod = MakePod({{"cpu", "1"}});
  json sidecar = Container("proxy", {{"cpu", "500m"}});
  sidecar["restartPolicy"] = "Always";
  pod["spec"]["initContainers"] = json::array({sidecar, Container("migrate", {{"cpu", "1"}})});
  pod["spec"]["overhead"] = {{"cpu", "100m"}};
  // Sidecar runs alongside the app (1 + 0.5) and alongside the later init container
  // (1 + 0.5 = 1.5 as well), plus 0.1 overhead.
  EXPECT_EQ(Requests(pod), (ResourceList{{"cpu", 1600}, {"pods", 1000}}));
}

TEST(NodeSchedulingTest, PodRequestsRejectsBadQuantities) {
  json pod = MakePod({{"cpu", "lots"}});
  Result<ResourceList> r = PodRequests(pod);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("spec.containers[0] (main)"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("\"lots\""), std::string::npos) << r.status().message();

  json bad_init = MakePod();
  bad_init["spec"]["initContainers"] = json::array({Container("i", nullptr, {{"memory", "-1"}})});
  EXPECT_FALSE(PodRequests(bad_init).ok());

  json not_array = MakePod();
  not_array["spec"]["containers"] = "oops";
  EXPECT_FALSE(PodRequests(not_array).ok());
}

// ---- Tolerates ----

TEST(NodeSchedulingTest, TolerationEqualNeedsKeyValueAndEffect) {
  const json taint = Taint("dedicated", "gpu", "NoSchedule");
  EXPECT_TRUE(Tolerates(json::parse(R"([{"key":"dedicated","operator":"Equal","value":"gpu",
                                          "effect":"NoSchedule"}])"),
                        taint));
  // Operator defaults to Equal.
  EXPECT_TRUE(Tolerates(json::parse(R"([{"key":"dedicated","value":"gpu","effect":"NoSchedule"}])"),
                        taint));
  EXPECT_FALSE(Tolerates(
      json::parse(R"([{"key":"dedicated","value":"cpu","effect":"NoSchedule"}])"), taint));
  EXPECT_FALSE(Tolerates(json::parse(R"([{"key":"other","value":"gpu"}])"), taint));
  EXPECT_FALSE(
      Tolerates(json::parse(R"([{"key":"dedicated","value":"gpu","effect":"NoExecute"}])"), taint));
  // Empty effect matches every effect.
  EXPECT_TRUE(Tolerates(json::parse(R"([{"key":"dedicated","value":"gpu"}])"), taint));
  // A taint without a value is tolerated by Equal with no value.
  EXPECT_TRUE(Tolerates(json::parse(R"([{"key":"k","effect":"NoSchedule"}])"),
                        Taint("k", "", "NoSchedule")));
  EXPECT_FALSE(Tolerates(json::parse(R"([{"key":"k","operator":"Bogus"}])"), Taint("k", "", "")));
}

TEST(NodeSchedulingTest, TolerationExists) {
  const json taint = Taint("dedicated", "gpu", "NoExecute");
  EXPECT_TRUE(Tolerates(json::parse(R"([{"key":"dedicated","operator":"Exists"}])"), taint));
  EXPECT_TRUE(Tolerates(
      json::parse(R"([{"key":"dedicated","operator":"Exists","effect":"NoExecute"}])"), taint));
  EXPECT_FALSE(Tolerates(
      json::parse(R"([{"key":"dedicated","operator":"Exists","effect":"NoSchedule"}])"), taint));
  EXPECT_FALSE(Tolerates(json::parse(R"([{"key":"other","operator":"Exists"}])"), taint));
  // Empty key with Exists tolerates everything ...
  EXPECT_TRUE(Tolerates(json::parse(R"([{"operator":"Exists"}])"), taint));
  EXPECT_TRUE(Tolerates(json::parse(R"([{"operator":"Exists"}])"), Taint("x", "", "NoSchedule")));
  // ... restricted to one effect when it names one.
  EXPECT_TRUE(Tolerates(json::parse(R"([{"operator":"Exists","effect":"NoExecute"}])"), taint));
  EXPECT_FALSE(Tolerates(json::parse(R"([{"operator":"Exists","effect":"NoSchedule"}])"), taint));
}

TEST(NodeSchedulingTest, NoTolerationsToleratesNothing) {
  const json taint = Taint("a", "b", "NoSchedule");
  EXPECT_FALSE(Tolerates(json(), taint));
  EXPECT_FALSE(Tolerates(json::array(), taint));
  EXPECT_FALSE(Tolerates(json::object(), taint));
  // Any one matching toleration is enough.
  EXPECT_TRUE(Tolerates(json::parse(R"([{"key":"x","operator":"Exists"},{"key":"a","value":"b"}])"),
                        taint));
}

// ---- MatchesNodeSelectorTerm ----

TEST(NodeSchedulingTest, SelectorTermOperators) {
  const json node =
      CpuNode("n1", {{"zone", "a"}, {"gpu-count", "4"}, {"tier", "gold"}, {"bad-int", "x4"}});
  struct Case {
    json requirement;
    bool matches;
  };
  const std::vector<Case> cases = {
      {Requirement("zone", "In", {"a", "b"}), true},
      {Requirement("zone", "In", {"b"}), false},
      {Requirement("missing", "In", {"a"}), false},
      {Requirement("zone", "In"), false},  // In needs values.
      {Requirement("zone", "NotIn", {"b", "c"}), true},
      {Requirement("zone", "NotIn", {"a"}), false},
      {Requirement("missing", "NotIn", {"a"}), true},  // Absent label is not in any set.
      {Requirement("zone", "Exists"), true},
      {Requirement("missing", "Exists"), false},
      {Requirement("zone", "Exists", {"a"}), false},  // Exists takes no values.
      {Requirement("missing", "DoesNotExist"), true},
      {Requirement("zone", "DoesNotExist"), false},
      {Requirement("gpu-count", "Gt", {"3"}), true},
      {Requirement("gpu-count", "Gt", {"4"}), false},
      {Requirement("gpu-count", "Gt", {"-1"}), true},
      {Requirement("gpu-count", "Lt", {"5"}), true},
      {Requirement("gpu-count", "Lt", {"4"}), false},
      {Requirement("gpu-count", "Gt", {"three"}), false},   // Invalid bound.
      {Requirement("gpu-count", "Gt", {"1", "2"}), false},  // Exactly one value.
      {Requirement("gpu-count", "Gt"), false},
      {Requirement("bad-int", "Gt", {"1"}), false},  // Label is not an integer.
      {Requirement("bad-int", "Lt", {"100"}), false},
      {Requirement("missing", "Lt", {"100"}), false},
      {Requirement("zone", "Like", {"a"}), false},  // Unknown operator.
  };
  for (const Case& c : cases) {
    EXPECT_EQ(MatchesNodeSelectorTerm(ExpressionTerm({c.requirement}), node), c.matches)
        << c.requirement.dump();
  }
}

TEST(NodeSchedulingTest, SelectorTermRequirementsAreAnded) {
  const json node = CpuNode("n1", {{"zone", "a"}, {"tier", "gold"}});
  EXPECT_TRUE(MatchesNodeSelectorTerm(
      ExpressionTerm({Requirement("zone", "In", {"a"}), Requirement("tier", "Exists")}), node));
  EXPECT_FALSE(MatchesNodeSelectorTerm(
      ExpressionTerm({Requirement("zone", "In", {"a"}), Requirement("tier", "DoesNotExist")}),
      node));
  json mixed = ExpressionTerm({Requirement("zone", "In", {"a"})});
  mixed["matchFields"] = json::array({Requirement("metadata.name", "In", {"n2"})});
  EXPECT_FALSE(MatchesNodeSelectorTerm(mixed, node));
  mixed["matchFields"] = json::array({Requirement("metadata.name", "In", {"n1"})});
  EXPECT_TRUE(MatchesNodeSelectorTerm(mixed, node));
}

TEST(NodeSchedulingTest, SelectorTermMatchFields) {
  const json node = CpuNode("worker-1");
  auto fields = [](const json& requirement) {
    return json{{"matchFields", json::array({requirement})}};
  };
  EXPECT_TRUE(
      MatchesNodeSelectorTerm(fields(Requirement("metadata.name", "In", {"worker-1"})), node));
  EXPECT_FALSE(
      MatchesNodeSelectorTerm(fields(Requirement("metadata.name", "In", {"worker-2"})), node));
  EXPECT_TRUE(
      MatchesNodeSelectorTerm(fields(Requirement("metadata.name", "NotIn", {"worker-2"})), node));
  EXPECT_FALSE(
      MatchesNodeSelectorTerm(fields(Requirement("metadata.name", "NotIn", {"worker-1"})), node));
  EXPECT_FALSE(MatchesNodeSelectorTerm(fields(Requirement("metadata.name", "Exists")), node));
  EXPECT_FALSE(MatchesNodeSelectorTerm(fields(Requirement("metadata.uid", "In", {"x"})), node));
  EXPECT_FALSE(MatchesNodeSelectorTerm(fields(Requirement("metadata.name", "In")), node));
}

TEST(NodeSchedulingTest, EmptySelectorTermMatchesNothing) {
  const json node = CpuNode("n1");
  EXPECT_FALSE(MatchesNodeSelectorTerm(json::object(), node));
  EXPECT_FALSE(MatchesNodeSelectorTerm(
      {{"matchExpressions", json::array()}, {"matchFields", json::array()}}, node));
  EXPECT_FALSE(MatchesNodeSelectorTerm(json(), node));
}

// ---- FitFailures ----

TEST(NodeSchedulingTest, PodFitsNode) {
  const json pod = MakePod({{"cpu", "2"}, {"memory", "8Gi"}});
  EXPECT_TRUE(FitFailures(pod, CpuNode("n1"), {}).empty());
  // Exactly full still fits.
  const ResourceList used = {{"cpu", 2000}, {"memory", 8 * kGiMilli}, {"pods", 109000}};
  EXPECT_TRUE(FitFailures(pod, CpuNode("n1"), used).empty());
}

TEST(NodeSchedulingTest, InsufficientResources) {
  const json node = GpuNode("g1", 2);
  EXPECT_EQ(FitFailures(MakePod({{"cpu", "9"}}), node, {}),
            std::vector<std::string>{"Insufficient cpu"});
  EXPECT_EQ(FitFailures(MakePod({{"memory", "65Gi"}}), node, {}),
            std::vector<std::string>{"Insufficient memory"});
  EXPECT_EQ(FitFailures(MakePod({{"nvidia.com/gpu", 3}}), node, {}),
            std::vector<std::string>{"Insufficient nvidia.com/gpu"});
  // What is already requested on the node counts.
  const ResourceList used = {{"cpu", 7500}, {"nvidia.com/gpu", 2000}, {"pods", 2000}};
  EXPECT_EQ(
      FitFailures(MakePod({{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "1"}}), node, used),
      (std::vector<std::string>{"Insufficient cpu", "Insufficient nvidia.com/gpu"}));
  EXPECT_TRUE(FitFailures(MakePod({{"cpu", "500m"}}), node, used).empty());
}

TEST(NodeSchedulingTest, MissingAllocatableIsZero) {
  // A CPU node has no nvidia.com/gpu at all.
  EXPECT_EQ(FitFailures(MakePod({{"nvidia.com/gpu", 1}}), CpuNode("c1"), {}),
            std::vector<std::string>{"Insufficient nvidia.com/gpu"});
  // Zero requests need no allocatable.
  EXPECT_TRUE(FitFailures(MakePod({{"example.com/foo", 0}}), CpuNode("c1"), {}).empty());
  // A node with no pods allocatable takes no pods.
  const json no_pods = MakeNode("n", {{"cpu", "4"}});
  EXPECT_EQ(FitFailures(MakePod({{"cpu", "5"}}), no_pods, {}),
            (std::vector<std::string>{"Too many pods", "Insufficient cpu"}));
}

TEST(NodeSchedulingTest, TooManyPods) {
  const json node = MakeNode("n", {{"cpu", "4"}, {"pods", 2}});
  EXPECT_TRUE(FitFailures(MakePod(), node, {{"pods", 1000}}).empty());
  EXPECT_EQ(FitFailures(MakePod(), node, {{"pods", 2000}}),
            std::vector<std::string>{"Too many pods"});
}

TEST(NodeSchedulingTest, UnschedulableNode) {
  json node = CpuNode("n1");
  node["spec"]["unschedulable"] = true;
  json pod = MakePod({{"cpu", "100"}});  // Would not fit either; cordon is reported first.
  EXPECT_EQ(FitFailures(pod, node, {}), std::vector<std::string>{"node(s) were unschedulable"});
  pod["spec"]["tolerations"] = json::parse(
      R"([{"key":"node.kubernetes.io/unschedulable","operator":"Exists","effect":"NoSchedule"}])");
  EXPECT_EQ(FitFailures(pod, node, {}), std::vector<std::string>{"Insufficient cpu"});
  node["spec"]["unschedulable"] = false;
  EXPECT_TRUE(FitFailures(MakePod(), node, {}).empty());
}

TEST(NodeSchedulingTest, NodeSelectorExactLabelMatch) {
  const json node = CpuNode("n1", {{"disk", "ssd"}, {"zone", "a"}});
  json pod = MakePod();
  pod["spec"]["nodeSelector"] = {{"disk", "ssd"}};
  EXPECT_TRUE(FitFailures(pod, node, {}).empty());
  pod["spec"]["nodeSelector"] = {{"disk", "ssd"}, {"zone", "b"}};
  EXPECT_EQ(FitFailures(pod, node, {}),
            std::vector<std::string>{"node(s) didn't match Pod's node affinity/selector"});
  pod["spec"]["nodeSelector"] = {{"gpu", "true"}};
  EXPECT_EQ(FitFailures(pod, node, {}),
            std::vector<std::string>{"node(s) didn't match Pod's node affinity/selector"});
}

TEST(NodeSchedulingTest, RequiredNodeAffinityTermsAreOred) {
  const json node = CpuNode("n1", {{"zone", "b"}});
  json pod = MakePod();
  SetRequiredTerms(pod, {ExpressionTerm({Requirement("zone", "In", {"a"})}),
                         ExpressionTerm({Requirement("zone", "In", {"b"})})});
  EXPECT_TRUE(FitFailures(pod, node, {}).empty());
  SetRequiredTerms(pod, {ExpressionTerm({Requirement("zone", "In", {"a"})})});
  EXPECT_EQ(FitFailures(pod, node, {}),
            std::vector<std::string>{"node(s) didn't match Pod's node affinity/selector"});
  // No terms: matches nothing.
  SetRequiredTerms(pod, {});
  EXPECT_FALSE(FitFailures(pod, node, {}).empty());
  // nodeSelector and affinity must both hold.
  SetRequiredTerms(pod, {ExpressionTerm({Requirement("zone", "In", {"b"})})});
  pod["spec"]["nodeSelector"] = {{"zone", "c"}};
  EXPECT_FALSE(FitFailures(pod, node, {}).empty());
  // matchFields pins a pod to a node by name.
  json pinned = MakePod();
  SetRequiredTerms(
      pinned, {json{{"matchFields", json::array({Requirement("metadata.name", "In", {"n1"})})}}});
  EXPECT_TRUE(FitFailures(pinned, node, {}).empty());
  EXPECT_FALSE(FitFailures(pinned, CpuNode("n2", {{"zone", "b"}}), {}).empty());
}

TEST(NodeSchedulingTest, TaintsBlockUnlessTolerated) {
  json node = GpuNode("g1", 1);
  node["spec"]["taints"] = json::array({Taint("nvidia.com/gpu", "present", "NoSchedule")});
  json pod = MakePod();
  EXPECT_EQ(FitFailures(pod, node, {}),
            std::vector<std::string>{"node(s) had untolerated taint {nvidia.com/gpu: present}"});
  pod["spec"]["tolerations"] = json::parse(R"([{"key":"nvidia.com/gpu","operator":"Exists"}])");
  EXPECT_TRUE(FitFailures(pod, node, {}).empty());

  node["spec"]["taints"] = json::array({Taint("maintenance", "", "NoExecute")});
  EXPECT_EQ(FitFailures(pod, node, {}),
            std::vector<std::string>{"node(s) had untolerated taint {maintenance: }"});
  pod["spec"]["tolerations"].push_back({{"key", "maintenance"}, {"effect", "NoExecute"}});
  EXPECT_TRUE(FitFailures(pod, node, {}).empty());

  // PreferNoSchedule never blocks.
  node["spec"]["taints"] = json::array({Taint("soft", "x", "PreferNoSchedule")});
  EXPECT_TRUE(FitFailures(MakePod(), node, {}).empty());

  // Only the first untolerated taint is reported.
  node["spec"]["taints"] =
      json::array({Taint("soft", "x", "PreferNoSchedule"), Taint("a", "1", "NoSchedule"),
                   Taint("b", "2", "NoSchedule")});
  EXPECT_EQ(FitFailures(MakePod(), node, {}),
            std::vector<std::string>{"node(s) had untolerated taint {a: 1}"});

  // A toleration for everything lets the pod anywhere.
  json tolerant = MakePod();
  tolerant["spec"]["tolerations"] = json::parse(R"([{"operator":"Exists"}])");
  EXPECT_TRUE(FitFailures(tolerant, node, {}).empty());
}

TEST(NodeSchedulingTest, ChecksRunInKubeOrderAndStopAtTheFirstFailure) {
  json node = CpuNode("n1", {{"zone", "a"}});
  node["spec"]["taints"] = json::array({Taint("t", "v", "NoSchedule")});
  json pod = MakePod({{"cpu", "100"}, {"nvidia.com/gpu", 1}});
  pod["spec"]["nodeSelector"] = {{"zone", "b"}};
  EXPECT_EQ(FitFailures(pod, node, {}),
            std::vector<std::string>{"node(s) had untolerated taint {t: v}"});
  pod["spec"]["tolerations"] = json::parse(R"([{"key":"t","operator":"Exists"}])");
  EXPECT_EQ(FitFailures(pod, node, {}),
            std::vector<std::string>{"node(s) didn't match Pod's node affinity/selector"});
  pod["spec"].erase("nodeSelector");
  EXPECT_EQ(FitFailures(pod, node, {}),
            (std::vector<std::string>{"Insufficient cpu", "Insufficient nvidia.com/gpu"}));
}

TEST(NodeSchedulingTest, InvalidQuantitiesAreReported) {
  const std::vector<std::string> pod_failures =
      FitFailures(MakePod({{"cpu", "a lot"}}), CpuNode("n1"), {});
  ASSERT_EQ(pod_failures.size(), 1u);
  EXPECT_EQ(pod_failures[0].rfind("Pod has invalid resource requests: ", 0), 0u) << pod_failures[0];
  const std::vector<std::string> node_failures =
      FitFailures(MakePod(), MakeNode("n", {{"cpu", "four"}}), {});
  ASSERT_EQ(node_failures.size(), 1u);
  EXPECT_EQ(node_failures[0].rfind("node(s) had invalid allocatable resources: ", 0), 0u)
      << node_failures[0];
}

// ---- PreferredAffinityScore ----

TEST(NodeSchedulingTest, PreferredAffinityScoreSumsMatchingWeights) {
  json pod = MakePod();
  EXPECT_EQ(PreferredAffinityScore(pod, CpuNode("n1")), 0);
  AddPreferred(pod, 10, ExpressionTerm({Requirement("zone", "In", {"a"})}));
  AddPreferred(pod, 5, ExpressionTerm({Requirement("disk", "Exists")}));
  AddPreferred(pod, 50, ExpressionTerm({Requirement("zone", "In", {"z"})}));
  AddPreferred(pod, 7, json::object());  // Empty preference matches nothing.
  EXPECT_EQ(PreferredAffinityScore(pod, CpuNode("n1", {{"zone", "a"}, {"disk", "ssd"}})), 15);
  EXPECT_EQ(PreferredAffinityScore(pod, CpuNode("n1", {{"zone", "a"}})), 10);
  EXPECT_EQ(PreferredAffinityScore(pod, CpuNode("n1", {{"disk", "hdd"}})), 5);
  EXPECT_EQ(PreferredAffinityScore(pod, CpuNode("n1", {{"zone", "z"}, {"disk", "x"}})), 55);
}

// ---- SchedulePod ----

TEST(NodeSchedulingTest, SchedulesOntoTheOnlyFittingNode) {
  const json c1 = CpuNode("cpu-1");
  const json g1 = GpuNode("gpu-1", 1);
  const ScheduleDecision d = SchedulePod(MakePod({{"nvidia.com/gpu", 1}}), {{&c1, {}}, {&g1, {}}});
  EXPECT_EQ(d.node_name, "gpu-1");
  EXPECT_EQ(d.message, "");
}

TEST(NodeSchedulingTest, ThreeGpusDoNotFitNodesWithTwoAndOne) {
  const json g2 = GpuNode("gpu-2", 2);
  const json g1 = GpuNode("gpu-1", 1);
  const ScheduleDecision d = SchedulePod(MakePod({{"nvidia.com/gpu", 3}}), {{&g2, {}}, {&g1, {}}});
  EXPECT_EQ(d.node_name, "");
  EXPECT_EQ(d.message, "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.");
  // Two GPUs fit only on the two-GPU node.
  EXPECT_EQ(SchedulePod(MakePod({{"nvidia.com/gpu", 2}}), {{&g2, {}}, {&g1, {}}}).node_name,
            "gpu-2");
}

TEST(NodeSchedulingTest, ExactMessageForMixedReasons) {
  const json cpu = CpuNode("cpu-1", {{"pool", "cpu"}});
  const json g1 = GpuNode("gpu-1", 1, {{"pool", "gpu"}});
  const json g2 = GpuNode("gpu-2", 2, {{"pool", "gpu"}});
  json pod = MakePod({{"nvidia.com/gpu", 4}});
  pod["spec"]["nodeSelector"] = {{"pool", "gpu"}};
  const ScheduleDecision d = SchedulePod(pod, {{&cpu, {}}, {&g1, {}}, {&g2, {}}});
  EXPECT_EQ(d.node_name, "");
  EXPECT_EQ(d.message,
            "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
            "2 Insufficient nvidia.com/gpu.");
}

TEST(NodeSchedulingTest, MessageCountsEveryReasonOfANode) {
  json tainted = CpuNode("a");
  tainted["spec"]["taints"] = json::array({Taint("dedicated", "infra", "NoSchedule")});
  json cordoned = CpuNode("b");
  cordoned["spec"]["unschedulable"] = true;
  const json small1 = MakeNode("c", {{"cpu", "1"}, {"memory", "1Gi"}, {"pods", 10}});
  const json small2 = MakeNode("d", {{"cpu", "1"}, {"memory", "8Gi"}, {"pods", 10}});
  const ScheduleDecision d =
      SchedulePod(MakePod({{"cpu", "2"}, {"memory", "2Gi"}}),
                  {{&tainted, {}}, {&cordoned, {}}, {&small1, {}}, {&small2, {}}});
  EXPECT_EQ(d.node_name, "");
  EXPECT_EQ(d.message,
            "0/4 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint "
            "{dedicated: infra}, 1 node(s) were unschedulable, 2 Insufficient cpu.");
}

TEST(NodeSchedulingTest, NoNodes) {
  const ScheduleDecision d = SchedulePod(MakePod(), {});
  EXPECT_EQ(d.node_name, "");
  EXPECT_EQ(d.message, "0/0 nodes are available: no nodes registered.");
  // Null entries are skipped.
  EXPECT_EQ(SchedulePod(MakePod(), {{nullptr, {}}}).message,
            "0/0 nodes are available: no nodes registered.");
  const json n = CpuNode("n");
  EXPECT_EQ(SchedulePod(MakePod(), {{nullptr, {}}, {&n, {}}}).node_name, "n");
}

TEST(NodeSchedulingTest, PreferredAffinityWinsOverLoad) {
  const json busy = CpuNode("busy", {{"zone", "a"}});
  const json idle = CpuNode("idle", {{"zone", "b"}});
  json pod = MakePod({{"cpu", "1"}});
  AddPreferred(pod, 10, ExpressionTerm({Requirement("zone", "In", {"a"})}));
  const ResourceList busy_use = {{"cpu", 2500}, {"pods", 5000}};
  EXPECT_EQ(SchedulePod(pod, {{&idle, {}}, {&busy, busy_use}}).node_name, "busy");
  // Higher total weight wins.
  AddPreferred(pod, 20, ExpressionTerm({Requirement("zone", "In", {"b"})}));
  EXPECT_EQ(SchedulePod(pod, {{&idle, {}}, {&busy, busy_use}}).node_name, "idle");
  // A preferred node that does not fit is not chosen.
  json big = MakePod({{"cpu", "2"}});
  AddPreferred(big, 100, ExpressionTerm({Requirement("zone", "In", {"a"})}));
  EXPECT_EQ(SchedulePod(big, {{&busy, busy_use}, {&idle, {}}}).node_name, "idle");
}

TEST(NodeSchedulingTest, EqualPreferenceGoesToTheLeastAllocatedNode) {
  const json a = CpuNode("a");
  const json b = CpuNode("b");
  const json c = CpuNode("c");
  const json pod = MakePod({{"cpu", "500m"}, {"memory", "1Gi"}});
  // a: cpu 2.5/4 after placement; b: memory 13/16; c: cpu 1.5/4, memory 3/16 -> c.
  const std::vector<NodeState> nodes = {
      {&a, {{"cpu", 2000}, {"pods", 1000}}},
      {&b, {{"memory", 12 * kGiMilli}, {"pods", 1000}}},
      {&c, {{"cpu", 1000}, {"memory", 2 * kGiMilli}, {"pods", 2000}}},
  };
  EXPECT_EQ(SchedulePod(pod, nodes).node_name, "c");
  // Order of the candidates does not matter.
  std::vector<NodeState> reversed(nodes.rbegin(), nodes.rend());
  EXPECT_EQ(SchedulePod(pod, reversed).node_name, "c");
}

TEST(NodeSchedulingTest, GpuUsageSpreadsGpuPods) {
  const json g1 = GpuNode("g1", 4);
  const json g2 = GpuNode("g2", 4);
  const json pod = MakePod({{"nvidia.com/gpu", 1}});
  // g1 already has 2 of 4 GPUs in use; g2 has more CPU in use but fewer GPUs (peak 50% vs 75%).
  const std::vector<NodeState> nodes = {
      {&g1, {{"nvidia.com/gpu", 2000}, {"pods", 2000}}},
      {&g2, {{"cpu", 4000}, {"nvidia.com/gpu", 1000}, {"pods", 1000}}},
  };
  EXPECT_EQ(SchedulePod(pod, nodes).node_name, "g2");
}

TEST(NodeSchedulingTest, FullTiesGoToTheSmallestName) {
  const json z = CpuNode("zeta");
  const json a = CpuNode("alpha");
  const json m = CpuNode("mu");
  const json pod = MakePod({{"cpu", "1"}});
  EXPECT_EQ(SchedulePod(pod, {{&z, {}}, {&m, {}}, {&a, {}}}).node_name, "alpha");
  EXPECT_EQ(SchedulePod(pod, {{&a, {}}, {&m, {}}, {&z, {}}}).node_name, "alpha");
  // Equal usage fractions on differently sized nodes are a tie too.
  const json big = MakeNode("big", {{"cpu", "8"}, {"pods", 10}});
  const json small = MakeNode("small", {{"cpu", "4"}, {"pods", 10}});
  const std::vector<NodeState> nodes = {{&small, {{"cpu", 1000}}}, {&big, {{"cpu", 3000}}}};
  EXPECT_EQ(SchedulePod(pod, nodes).node_name, "big");
}

TEST(NodeSchedulingTest, FittingNodesIgnoreUnfitOnes) {
  json cordoned = CpuNode("a-cordoned");
  cordoned["spec"]["unschedulable"] = true;
  const json ok = CpuNode("z-ok");
  const ScheduleDecision d = SchedulePod(MakePod(), {{&cordoned, {}}, {&ok, {}}});
  EXPECT_EQ(d.node_name, "z-ok");
  EXPECT_EQ(d.message, "");
}

}  // namespace scheduling_test
}  // namespace sluice::node
