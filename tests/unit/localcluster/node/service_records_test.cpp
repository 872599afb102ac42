#include "localcluster/node/service_records.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sluice::node {
namespace {

using nlohmann::json;

// A Running, Ready pod in `ns` with the labels and IP given, scheduled to node-a.
json MakePod(const std::string& name, const std::string& ip, const json& labels = {{"app", "web"}},
             const std::string& ns = "default") {
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", ns}, {"uid", "uid-" + name}, {"labels", labels}}},
      {"spec",
       {{"nodeName", "node-a"},
        {"containers",
         json::array(
             {{{"name", "main"},
               {"image", "busybox"},
               {"ports", json::array({{{"name", "http"}, {"containerPort", 8080}},
                                      {{"name", "metrics"}, {"containerPort", 9090}}})}}})}}},
      {"status",
       {{"phase", "Running"},
        {"podIP", ip},
        {"conditions", json::array({{{"type", "Initialized"}, {"status", "True"}},
                                    {{"type", "Ready"}, {"status", "True"}}})}}}};
}

json NotReady(json pod) {
  for (json& c : pod["status"]["conditions"]) {
    if (c["type"] == "Ready") c["status"] = "False";
  }
  return pod;
}

json MakeService(const std::string& name, const json& selector = {{"app", "web"}},
                 const std::string& ns = "default") {
  json svc = {{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec",
               {{"clusterIP", "10.96.0.10"},
                {"ports", json::array({{{"name", "web"}, {"port", 80}, {"targetPort", 8080}}})}}}};
  if (!selector.is_null()) svc["spec"]["selector"] = selector;
  return svc;
}

json Headless(json svc) {
  svc["spec"]["clusterIP"] = "None";
  return svc;
}

json Address(const std::string& name, const std::string& ip, const std::string& ns = "default") {
  return {
      {"ip", ip},
      {"nodeName", "node-a"},
      {"targetRef", {{"kind", "Pod"}, {"namespace", ns}, {"name", name}, {"uid", "uid-" + name}}}};
}

const std::string kHeader =
    "# Written by sluice-node: Service and pod names of the local cluster.\n";

// --- SelectorMatches ---------------------------------------------------------------------------

TEST(ServiceRecordsSelectorTest, AllKeysMustMatch) {
  json pod = MakePod("p", "10.0.0.1", {{"app", "web"}, {"tier", "front"}});
  EXPECT_TRUE(SelectorMatches({{"app", "web"}}, pod));
  EXPECT_TRUE(SelectorMatches({{"app", "web"}, {"tier", "front"}}, pod));
  EXPECT_FALSE(SelectorMatches({{"app", "web"}, {"tier", "back"}}, pod));
  EXPECT_FALSE(SelectorMatches({{"app", "db"}}, pod));
  EXPECT_FALSE(SelectorMatches({{"missing", "x"}}, pod));
}

TEST(ServiceRecordsSelectorTest, EmptyOrInvalidSelectorMatchesNothing) {
  json pod = MakePod("p", "10.0.0.1");
  EXPECT_FALSE(SelectorMatches(json::object(), pod));
  EXPECT_FALSE(SelectorMatches(nullptr, pod));
  EXPECT_FALSE(SelectorMatches(json::array({"app"}), pod));
}

TEST(ServiceRecordsSelectorTest, PodWithoutLabels) {
  json pod = MakePod("p", "10.0.0.1");
  pod["metadata"].erase("labels");
  EXPECT_FALSE(SelectorMatches({{"app", "web"}}, pod));
}

// --- PodIsReady --------------------------------------------------------------------------------

TEST(ServiceRecordsPodReadyTest, RunningReadyWithIp) {
  EXPECT_TRUE(PodIsReady(MakePod("p", "10.0.0.1")));
}

TEST(ServiceRecordsPodReadyTest, PhaseMustBeRunning) {
  for (const char* phase : {"Pending", "Succeeded", "Failed", "Unknown"}) {
    json pod = MakePod("p", "10.0.0.1");
    pod["status"]["phase"] = phase;
    EXPECT_FALSE(PodIsReady(pod)) << phase;
  }
}

TEST(ServiceRecordsPodReadyTest, ReadyConditionMustBeTrue) {
  EXPECT_FALSE(PodIsReady(NotReady(MakePod("p", "10.0.0.1"))));
  json no_ready = MakePod("p", "10.0.0.1");
  no_ready["status"]["conditions"] = json::array({{{"type", "Initialized"}, {"status", "True"}}});
  EXPECT_FALSE(PodIsReady(no_ready));
  json no_conditions = MakePod("p", "10.0.0.1");
  no_conditions["status"].erase("conditions");
  EXPECT_FALSE(PodIsReady(no_conditions));
}

TEST(ServiceRecordsPodReadyTest, NeedsPodIp) {
  EXPECT_FALSE(PodIsReady(MakePod("p", "")));
  json pod = MakePod("p", "10.0.0.1");
  pod["status"].erase("podIP");
  EXPECT_FALSE(PodIsReady(pod));
}

TEST(ServiceRecordsPodReadyTest, DeletingPodIsNotReady) {
  json pod = MakePod("p", "10.0.0.1");
  pod["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z";
  EXPECT_FALSE(PodIsReady(pod));
}

// --- DesiredEndpoints --------------------------------------------------------------------------

TEST(ServiceRecordsEndpointsTest, NoSelectorIsNullopt) {
  EXPECT_FALSE(DesiredEndpoints(MakeService("web", nullptr), {MakePod("p", "10.0.0.1")}));
  EXPECT_FALSE(DesiredEndpoints(MakeService("web", json::object()), {MakePod("p", "10.0.0.1")}));
}

TEST(ServiceRecordsEndpointsTest, ReadyAndNotReadyAddresses) {
  std::optional<json> ep = DesiredEndpoints(
      MakeService("web"),
      {MakePod("b", "10.0.0.2"), NotReady(MakePod("c", "10.0.0.3")), MakePod("a", "10.0.0.1")});
  ASSERT_TRUE(ep.has_value());
  json expected = {
      {"apiVersion", "v1"},
      {"kind", "Endpoints"},
      {"metadata", {{"name", "web"}, {"namespace", "default"}}},
      {"subsets",
       json::array(
           {{{"addresses", json::array({Address("a", "10.0.0.1"), Address("b", "10.0.0.2")})},
             {"notReadyAddresses", json::array({Address("c", "10.0.0.3")})},
             {"ports", json::array({{{"port", 8080}, {"protocol", "TCP"}, {"name", "web"}}})}}})}};
  EXPECT_EQ(*ep, expected);
}

TEST(ServiceRecordsEndpointsTest, AddressesSortedByIp) {
  std::optional<json> ep = DesiredEndpoints(
      MakeService("web"),
      {MakePod("x", "10.0.0.9"), MakePod("y", "10.0.0.10"), MakePod("z", "10.0.0.1")});
  ASSERT_TRUE(ep.has_value());
  const json& addresses = (*ep)["subsets"][0]["addresses"];
  ASSERT_EQ(addresses.size(), 3u);
  // String order.
  EXPECT_EQ(addresses[0]["ip"], "10.0.0.1");
  EXPECT_EQ(addresses[1]["ip"], "10.0.0.10");
  EXPECT_EQ(addresses[2]["ip"], "10.0.0.9");
}

TEST(ServiceRecordsEndpointsTest, PublishNotReadyAddresses) {
  json svc = MakeService("web");
  svc["spec"]["publishNotReadyAddresses"] = true;
  std::optional<json> ep =
      DesiredEndpoints(svc, {MakePod("a", "10.0.0.1"), NotReady(MakePod("b", "10.0.0.2"))});
  ASSERT_TRUE(ep.has_value());
  const json& subset = (*ep)["subsets"][0];
  EXPECT_EQ(subset["addresses"], json::array({Address("a", "10.0.0.1"), Address("b", "10.0.0.2")}));
  EXPECT_FALSE(subset.contains("notReadyAddresses"));
}

TEST(ServiceRecordsEndpointsTest, NoMatchingPodsGivesEmptySubsets) {
  std::optional<json> ep =
      DesiredEndpoints(MakeService("web", {{"app", "none"}}), {MakePod("a", "10.0.0.1")});
  ASSERT_TRUE(ep.has_value());
  EXPECT_EQ((*ep)["subsets"], json::array());
  EXPECT_EQ((*ep)["metadata"]["name"], "web");
}

TEST(ServiceRecordsEndpointsTest, TerminalAndIplessPodsExcluded) {
  json succeeded = MakePod("s", "10.0.0.2");
  succeeded["status"]["phase"] = "Succeeded";
  json failed = MakePod("f", "10.0.0.3");
  failed["status"]["phase"] = "Failed";
  json pending = MakePod("p", "");
  pending["status"]["phase"] = "Pending";
  std::optional<json> ep =
      DesiredEndpoints(MakeService("web"), {succeeded, failed, pending, MakePod("a", "10.0.0.1")});
  ASSERT_TRUE(ep.has_value());
  ASSERT_EQ((*ep)["subsets"].size(), 1u);
  EXPECT_EQ((*ep)["subsets"][0]["addresses"], json::array({Address("a", "10.0.0.1")}));
  EXPECT_FALSE((*ep)["subsets"][0].contains("notReadyAddresses"));

  std::optional<json> none = DesiredEndpoints(MakeService("web"), {succeeded, failed, pending});
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ((*none)["subsets"], json::array());
}

TEST(ServiceRecordsEndpointsTest, PendingPodWithIpIsNotReady) {
  json pending = MakePod("p", "10.0.0.5");
  pending["status"]["phase"] = "Pending";
  std::optional<json> ep = DesiredEndpoints(MakeService("web"), {pending});
  ASSERT_TRUE(ep.has_value());
  EXPECT_FALSE((*ep)["subsets"][0].contains("addresses"));
  EXPECT_EQ((*ep)["subsets"][0]["notReadyAddresses"], json::array({Address("p", "10.0.0.5")}));
}

TEST(ServiceRecordsEndpointsTest, OtherNamespacesExcluded) {
  std::optional<json> ep = DesiredEndpoints(
      MakeService("web", {{"app", "web"}}, "team-a"),
      {MakePod("a", "10.0.0.1"), MakePod("b", "10.0.0.2", {{"app", "web"}}, "team-a")});
  ASSERT_TRUE(ep.has_value());
  EXPECT_EQ((*ep)["metadata"]["namespace"], "team-a");
  EXPECT_EQ((*ep)["subsets"][0]["addresses"], json::array({Address("b", "10.0.0.2", "team-a")}));
}

TEST(ServiceRecordsEndpointsTest, NamedTargetPortResolvedFromContainerPorts) {
  json svc = MakeService("web");
  svc["spec"]["ports"] = json::array({{{"name", "m"}, {"port", 9000}, {"targetPort", "metrics"}},
                                      {{"name", "h"}, {"port", 80}, {"targetPort", "http"}},
                                      {{"name", "x"}, {"port", 81}, {"targetPort", "nope"}}});
  std::optional<json> ep = DesiredEndpoints(svc, {MakePod("a", "10.0.0.1")});
  ASSERT_TRUE(ep.has_value());
  // An unresolvable name is dropped.
  EXPECT_EQ((*ep)["subsets"][0]["ports"],
            json::parse(R"([{"port": 9090, "protocol": "TCP", "name": "m"},
                            {"port": 8080, "protocol": "TCP", "name": "h"}])"));
}

TEST(ServiceRecordsEndpointsTest, NumericStringTargetPortAndDefaults) {
  json svc = MakeService("web");
  svc["spec"]["ports"] = json::array({{{"port", 80}, {"targetPort", "7000"}, {"protocol", "UDP"}},
                                      {{"name", "plain"}, {"port", 443}}});
  std::optional<json> ep = DesiredEndpoints(svc, {MakePod("a", "10.0.0.1")});
  ASSERT_TRUE(ep.has_value());
  // No targetPort: the port itself; no protocol: TCP; no name: none.
  EXPECT_EQ((*ep)["subsets"][0]["ports"], json::parse(R"([{"port": 7000, "protocol": "UDP"},
                            {"port": 443, "protocol": "TCP", "name": "plain"}])"));
}

TEST(ServiceRecordsEndpointsTest, NoResolvablePortsOmitsPorts) {
  json svc = MakeService("web");
  svc["spec"]["ports"] = json::array({{{"port", 80}, {"targetPort", "nope"}}});
  std::optional<json> ep = DesiredEndpoints(svc, {MakePod("a", "10.0.0.1")});
  ASSERT_TRUE(ep.has_value());
  EXPECT_FALSE((*ep)["subsets"][0].contains("ports"));
  EXPECT_TRUE((*ep)["subsets"][0].contains("addresses"));
}

TEST(ServiceRecordsEndpointsTest, TargetRefNodeNameAndHostname) {
  json pod = MakePod("a", "10.0.0.1");
  pod["spec"]["hostname"] = "worker-0";
  json unscheduled = MakePod("b", "10.0.0.2");
  unscheduled["spec"].erase("nodeName");
  std::optional<json> ep = DesiredEndpoints(MakeService("web"), {pod, unscheduled});
  ASSERT_TRUE(ep.has_value());
  json a = Address("a", "10.0.0.1");
  a["hostname"] = "worker-0";
  json b = Address("b", "10.0.0.2");
  b.erase("nodeName");
  EXPECT_EQ((*ep)["subsets"][0]["addresses"], json::array({a, b}));
}

// --- SameSubsets -------------------------------------------------------------------------------

TEST(ServiceRecordsSameSubsetsTest, IgnoresMetadata) {
  json a = {{"metadata", {{"name", "x"}, {"resourceVersion", "5"}}},
            {"subsets", json::array({{{"addresses", json::array({{{"ip", "10.0.0.1"}}})}}})}};
  json b = a;
  b["metadata"]["resourceVersion"] = "9";
  b["metadata"]["labels"] = {{"k", "v"}};
  EXPECT_TRUE(SameSubsets(a, b));
  b["subsets"][0]["addresses"][0]["ip"] = "10.0.0.2";
  EXPECT_FALSE(SameSubsets(a, b));
}

TEST(ServiceRecordsSameSubsetsTest, MissingNullAndEmptyAreEqual) {
  json missing = {{"metadata", {{"name", "x"}}}};
  json null_subsets = {{"subsets", nullptr}};
  json empty = {{"subsets", json::array()}};
  EXPECT_TRUE(SameSubsets(missing, empty));
  EXPECT_TRUE(SameSubsets(null_subsets, empty));
  EXPECT_TRUE(SameSubsets(missing, null_subsets));
  json some = {{"subsets", json::array({{{"addresses", json::array()}}})}};
  EXPECT_FALSE(SameSubsets(missing, some));
}

TEST(ServiceRecordsSameSubsetsTest, DesiredEndpointsStable) {
  std::vector<json> pods = {MakePod("a", "10.0.0.1"), MakePod("b", "10.0.0.2")};
  std::vector<json> reversed = {pods[1], pods[0]};
  EXPECT_TRUE(SameSubsets(*DesiredEndpoints(MakeService("web"), pods),
                          *DesiredEndpoints(MakeService("web"), reversed)));
}

// --- HostsFileText -----------------------------------------------------------------------------

TEST(ServiceRecordsHostsTest, EmptyIsHeaderOnly) { EXPECT_EQ(HostsFileText({}, {}), kHeader); }

TEST(ServiceRecordsHostsTest, ServiceNamesInThreeForms) {
  EXPECT_EQ(HostsFileText({MakeService("web")}, {MakePod("a", "10.0.0.1")}),
            kHeader +
                "10.0.0.1 web.default\n"
                "10.0.0.1 web.default.svc\n"
                "10.0.0.1 web.default.svc.cluster.local\n");
}

TEST(ServiceRecordsHostsTest, HeadlessServiceListsEveryReadyPod) {
  json svc = Headless(MakeService("db", {{"app", "db"}}, "data"));
  std::vector<json> pods = {MakePod("db-1", "10.0.0.2", {{"app", "db"}}, "data"),
                            MakePod("db-0", "10.0.0.1", {{"app", "db"}}, "data"),
                            NotReady(MakePod("db-2", "10.0.0.3", {{"app", "db"}}, "data"))};
  EXPECT_EQ(HostsFileText({svc}, pods), kHeader +
                                            "10.0.0.1 db.data\n"
                                            "10.0.0.2 db.data\n"
                                            "10.0.0.1 db.data.svc\n"
                                            "10.0.0.2 db.data.svc\n"
                                            "10.0.0.1 db.data.svc.cluster.local\n"
                                            "10.0.0.2 db.data.svc.cluster.local\n");
}

TEST(ServiceRecordsHostsTest, NotReadyPodsAbsent) {
  EXPECT_EQ(HostsFileText({MakeService("web")}, {NotReady(MakePod("a", "10.0.0.1"))}), kHeader);
}

TEST(ServiceRecordsHostsTest, PublishNotReadyServiceListsNotReadyPods) {
  json svc = MakeService("web");
  svc["spec"]["publishNotReadyAddresses"] = true;
  EXPECT_EQ(HostsFileText({svc}, {NotReady(MakePod("a", "10.0.0.1"))}),
            kHeader +
                "10.0.0.1 web.default\n"
                "10.0.0.1 web.default.svc\n"
                "10.0.0.1 web.default.svc.cluster.local\n");
}

TEST(ServiceRecordsHostsTest, ServiceWithoutSelectorHasNoRecords) {
  EXPECT_EQ(HostsFileText({MakeService("ext", nullptr)}, {MakePod("a", "10.0.0.1")}), kHeader);
}

TEST(ServiceRecordsHostsTest, PodHostnameUnderHeadlessSubdomain) {
  json svc = Headless(MakeService("workers", {{"app", "w"}}));
  json pod = MakePod("w-0", "10.0.0.7", {{"app", "w"}});
  pod["spec"]["hostname"] = "w-0";
  pod["spec"]["subdomain"] = "workers";
  EXPECT_EQ(HostsFileText({svc}, {pod}), kHeader +
                                             "10.0.0.7 w-0.workers.default.svc\n"
                                             "10.0.0.7 w-0.workers.default.svc.cluster.local\n"
                                             "10.0.0.7 workers.default\n"
                                             "10.0.0.7 workers.default.svc\n"
                                             "10.0.0.7 workers.default.svc.cluster.local\n");
}

TEST(ServiceRecordsHostsTest, PodHostnameNeedsHeadlessServiceOfThatName) {
  json pod = MakePod("w-0", "10.0.0.7", {{"app", "other"}});
  pod["spec"]["hostname"] = "w-0";
  pod["spec"]["subdomain"] = "workers";
  // No Service at all.
  EXPECT_EQ(HostsFileText({}, {pod}), kHeader);
  // A normal (not headless) Service of that name.
  EXPECT_EQ(HostsFileText({MakeService("workers", {{"app", "w"}})}, {pod}), kHeader);
  // A headless Service of another name.
  EXPECT_EQ(HostsFileText({Headless(MakeService("others", {{"app", "w"}}))}, {pod}), kHeader);
  // A headless Service of that name in another namespace.
  EXPECT_EQ(HostsFileText({Headless(MakeService("workers", {{"app", "w"}}, "elsewhere"))}, {pod}),
            kHeader);
  // The headless Service of that name: the pod's records, even though it does not select it.
  EXPECT_EQ(HostsFileText({Headless(MakeService("workers", {{"app", "w"}}))}, {pod}),
            kHeader +
                "10.0.0.7 w-0.workers.default.svc\n"
                "10.0.0.7 w-0.workers.default.svc.cluster.local\n");
}

TEST(ServiceRecordsHostsTest, PodHostnameNeedsHostnameSubdomainAndIp) {
  json svc = Headless(MakeService("workers", {{"app", "none"}}));
  json no_host = MakePod("a", "10.0.0.1");
  no_host["spec"]["subdomain"] = "workers";
  json no_sub = MakePod("b", "10.0.0.2");
  no_sub["spec"]["hostname"] = "b";
  json no_ip = MakePod("c", "");
  no_ip["spec"]["hostname"] = "c";
  no_ip["spec"]["subdomain"] = "workers";
  json done = MakePod("d", "10.0.0.4");
  done["spec"]["hostname"] = "d";
  done["spec"]["subdomain"] = "workers";
  done["status"]["phase"] = "Succeeded";
  EXPECT_EQ(HostsFileText({svc}, {no_host, no_sub, no_ip, done}), kHeader);
}

TEST(ServiceRecordsHostsTest, SortedAndDeterministic) {
  std::vector<json> services = {MakeService("zeta", {{"app", "z"}}),
                                MakeService("alpha", {{"app", "a"}}, "ns2")};
  std::vector<json> pods = {MakePod("z", "10.0.0.2", {{"app", "z"}}),
                            MakePod("a", "10.0.0.1", {{"app", "a"}}, "ns2")};
  const std::string expected = kHeader +
                               "10.0.0.1 alpha.ns2\n"
                               "10.0.0.1 alpha.ns2.svc\n"
                               "10.0.0.1 alpha.ns2.svc.cluster.local\n"
                               "10.0.0.2 zeta.default\n"
                               "10.0.0.2 zeta.default.svc\n"
                               "10.0.0.2 zeta.default.svc.cluster.local\n";
  EXPECT_EQ(HostsFileText(services, pods), expected);
  EXPECT_EQ(HostsFileText({services[1], services[0]}, {pods[1], pods[0]}), expected);
}

// --- AllocateClusterIp -------------------------------------------------------------------------

TEST(ServiceRecordsClusterIpTest, FirstFree) {
  EXPECT_EQ(AllocateClusterIp({}), "10.96.0.1");
  EXPECT_EQ(AllocateClusterIp({"10.96.0.1", "10.96.0.2"}), "10.96.0.3");
  EXPECT_EQ(AllocateClusterIp({"10.96.0.2"}), "10.96.0.1");
  EXPECT_EQ(AllocateClusterIp({"10.96.0.1", "10.96.0.3", "None"}), "10.96.0.2");
}

TEST(ServiceRecordsClusterIpTest, SkipsNetworkAndBroadcastOctets) {
  std::set<std::string> used;
  for (int i = 1; i <= 254; ++i) used.insert("10.96.0." + std::to_string(i));
  EXPECT_EQ(AllocateClusterIp(used), "10.96.1.1");
  for (int i = 1; i <= 254; ++i) used.insert("10.96.1." + std::to_string(i));
  EXPECT_EQ(AllocateClusterIp(used), "10.96.2.1");
}

TEST(ServiceRecordsClusterIpTest, ExhaustedIsEmpty) {
  std::set<std::string> used;
  for (int a = 0; a <= 255; ++a) {
    for (int b = 1; b <= 254; ++b)
      used.insert("10.96." + std::to_string(a) + "." + std::to_string(b));
  }
  EXPECT_EQ(AllocateClusterIp(used), "");
  used.erase("10.96.255.254");
  EXPECT_EQ(AllocateClusterIp(used), "10.96.255.254");
}

}  // namespace
}  // namespace sluice::node
