// DecodeKubeProtobuf: bodies captured from kubectl v1.32 against the JSON kubectl prints for the
// same objects (tests/data/protobuf/README.md tells how they were made), hand-encoded messages
// for the kinds no kubectl command sends, and malformed input that must fail cleanly.
#include "localcluster/apiserver/protobuf_objects.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "tests/support/read_file.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

std::filesystem::path DataDir() {
  const char* dir = std::getenv("SLUICE_SOURCE_DIR");
  return (dir ? std::filesystem::path(dir) : std::filesystem::current_path()) / "tests" / "data" /
         "protobuf";
}

// A small protobuf writer for hand-made messages.
std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string Num(uint32_t field, uint64_t v) { return Varint(field << 3) + Varint(v); }
std::string Bytes(uint32_t field, std::string_view bytes) {
  return Varint((field << 3) | 2) + Varint(bytes.size()) + std::string(bytes);
}
std::string Timestamp(int64_t seconds, int32_t nanos = 0) {
  return Num(1, static_cast<uint64_t>(seconds)) +
         (nanos != 0 ? Num(2, static_cast<uint64_t>(static_cast<int64_t>(nanos))) : "");
}
std::string Entry(std::string_view key, std::string_view value) {
  return Bytes(1, key) + Bytes(2, value);
}
std::string Envelope(std::string_view api_version, std::string_view kind, std::string_view raw) {
  return std::string(kKubeProtobufMagic) + Bytes(1, Bytes(1, api_version) + Bytes(2, kind)) +
         Bytes(2, raw) + Bytes(3, "") + Bytes(4, "");
}

json Decode(const std::string& body) {
  Result<json> result = DecodeKubeProtobuf(body);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  return result.ok() ? *result : json();
}

Status DecodeError(const std::string& body) {
  Result<json> result = DecodeKubeProtobuf(body);
  EXPECT_FALSE(result.ok()) << result->dump();
  return result.status();
}

// ---------------------------------------------------------------------------------------------
// Real kubectl bodies.

TEST(ProtobufObjectsTest, KubectlBodiesDecodeToTheJsonKubectlPrints) {
  for (const char* name :
       {"namespace", "configmap", "configmap_binary", "secret", "secret_dockerconfig",
        "service_clusterip", "service_nodeport", "service_externalname", "service_headless",
        "pod_debug_node", "pod_debug_copy", "pod_debug_copy_sidecar"}) {
    SCOPED_TRACE(name);
    const std::string body = test_support::ReadFileOrEmpty(DataDir() / (std::string(name) + ".pb"));
    ASSERT_FALSE(body.empty());
    const json expected =
        json::parse(test_support::ReadFileOrEmpty(DataDir() / (std::string(name) + ".json")));
    const json decoded = Decode(body);
    EXPECT_EQ(decoded, expected) << "decoded: " << decoded.dump(2);
  }
}

TEST(ProtobufObjectsTest, SpotChecksOnTheRichPod) {
  const json pod = Decode(test_support::ReadFileOrEmpty(DataDir() / "pod_debug_copy.pb"));
  const json& spec = pod.at("spec");
  const json& web = spec.at("containers").at(0);
  EXPECT_EQ(web.at("resources").at("limits").at("nvidia.com/gpu"), "1");
  EXPECT_EQ(web.at("livenessProbe").at("httpGet").at("port"), "http");   // int-or-string
  EXPECT_EQ(web.at("readinessProbe").at("tcpSocket").at("port"), 8080);  // int-or-string
  EXPECT_EQ(web.at("env").at(1), json({{"name", "EMPTY"}}));
  EXPECT_EQ(web.at("env").at(5).at("valueFrom").at("resourceFieldRef").at("divisor"), "0");
  EXPECT_EQ(spec.at("containers").at(1).at("readinessProbe").at("grpc").at("service"), nullptr);
  EXPECT_EQ(spec.at("volumes").at(3), json::parse(R"({"name":"cache","emptyDir":{}})"));
  EXPECT_EQ(spec.at("securityContext").at("supplementalGroups"), json::array({4000, 5000}));
  EXPECT_EQ(pod.at("metadata").at("annotations").at("sluice.dev/note"), "h\u00e9llo \u2713");
  EXPECT_EQ(pod.at("metadata").at("creationTimestamp"), nullptr);
  EXPECT_EQ(pod.at("status"), json::object());
  const json sidecar =
      Decode(test_support::ReadFileOrEmpty(DataDir() / "pod_debug_copy_sidecar.pb"));
  EXPECT_EQ(sidecar.at("spec").at("priority"), -5);  // A negative int32: a 10-byte varint.
}

// ---------------------------------------------------------------------------------------------
// Kinds no kubectl command sends as protobuf, written by hand.

std::string Meta(std::string_view name, std::string_view ns) {
  return Bytes(1, name) + Bytes(3, ns) + Bytes(8, "");
}

TEST(ProtobufObjectsTest, LeaseWithMicroTimes) {
  const std::string spec = Bytes(1, "op-1") + Num(2, 15) +
                           Bytes(3, Timestamp(1700000000, 123456789)) +
                           Bytes(4, Timestamp(1700000010)) + Num(5, 0);
  const json lease =
      Decode(Envelope("coordination.k8s.io/v1", "Lease",
                      Bytes(1, Meta("sluice-operator", "sluice-system")) + Bytes(2, spec)));
  EXPECT_EQ(lease, json::parse(R"({
    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
    "metadata": {"name": "sluice-operator", "namespace": "sluice-system",
                 "creationTimestamp": null},
    "spec": {"holderIdentity": "op-1", "leaseDurationSeconds": 15,
             "acquireTime": "2023-11-14T22:13:20.123456Z",
             "renewTime": "2023-11-14T22:13:30.000000Z", "leaseTransitions": 0}})"));
}

TEST(ProtobufObjectsTest, CoreEventPrintsItsNonOmitemptyFields) {
  const std::string involved = Bytes(1, "Pod") + Bytes(2, "default") + Bytes(3, "web") +
                               Bytes(4, "uid-1") + Bytes(5, "v1") + Bytes(6, "") + Bytes(7, "");
  const std::string raw =
      Bytes(1, Meta("web.1", "default")) + Bytes(2, involved) + Bytes(3, "Started") +
      Bytes(4, "Started container") + Bytes(5, Bytes(1, "kubelet") + Bytes(2, "")) +
      Bytes(6, Timestamp(86400 * 365)) + Bytes(7, "") + Num(8, 1) + Bytes(9, "Normal") +
      Bytes(10, "") + Bytes(12, "") + Bytes(14, "") + Bytes(15, "");
  EXPECT_EQ(Decode(Envelope("v1", "Event", raw)), json::parse(R"({
    "apiVersion": "v1", "kind": "Event",
    "metadata": {"name": "web.1", "namespace": "default", "creationTimestamp": null},
    "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "uid-1",
                       "apiVersion": "v1"},
    "reason": "Started", "message": "Started container", "source": {"component": "kubelet"},
    "firstTimestamp": "1971-01-01T00:00:00Z", "lastTimestamp": null, "count": 1,
    "type": "Normal", "eventTime": null, "reportingComponent": "", "reportingInstance": ""})"));
}

TEST(ProtobufObjectsTest, EventsV1Event) {
  const std::string raw =
      Bytes(1, Meta("pool.1", "default")) + Bytes(2, Timestamp(1700000000, 5000)) +
      Bytes(3, Num(1, 2) + Bytes(2, Timestamp(1700000060))) + Bytes(4, "sluice.dev/operator") +
      Bytes(5, "op-1") + Bytes(6, "Scale") + Bytes(7, "Scaled") +
      Bytes(8, Bytes(1, "RolloutPool") + Bytes(3, "pool") + Bytes(5, "sluice.dev/v1alpha1")) +
      Bytes(10, "scaled to 3") + Bytes(11, "Normal") + Bytes(12, "") + Bytes(13, "") +
      Bytes(14, "") + Num(15, 0);
  EXPECT_EQ(Decode(Envelope("events.k8s.io/v1", "Event", raw)), json::parse(R"({
    "apiVersion": "events.k8s.io/v1", "kind": "Event",
    "metadata": {"name": "pool.1", "namespace": "default", "creationTimestamp": null},
    "eventTime": "2023-11-14T22:13:20.000005Z",
    "series": {"count": 2, "lastObservedTime": "2023-11-14T22:14:20.000000Z"},
    "reportingController": "sluice.dev/operator", "reportingInstance": "op-1",
    "action": "Scale", "reason": "Scaled",
    "regarding": {"kind": "RolloutPool", "name": "pool", "apiVersion": "sluice.dev/v1alpha1"},
    "note": "scaled to 3", "type": "Normal", "deprecatedSource": {},
    "deprecatedFirstTimestamp": null, "deprecatedLastTimestamp": null})"));
}

TEST(ProtobufObjectsTest, DeleteOptionsAndEviction) {
  const std::string options =
      Num(1, 0) + Bytes(2, Bytes(1, "uid-1")) + Bytes(4, "Foreground") + Bytes(5, "All");
  const json expected_options = json::parse(R"({"gracePeriodSeconds": 0,
      "preconditions": {"uid": "uid-1"}, "propagationPolicy": "Foreground", "dryRun": ["All"]})");
  json with_type = expected_options;
  with_type["apiVersion"] = "v1";
  with_type["kind"] = "DeleteOptions";
  EXPECT_EQ(Decode(Envelope("v1", "DeleteOptions", options)), with_type);
  with_type["apiVersion"] = "meta.k8s.io/v1";
  EXPECT_EQ(Decode(Envelope("meta.k8s.io/v1", "DeleteOptions", options)), with_type);

  const json eviction = Decode(
      Envelope("policy/v1", "Eviction", Bytes(1, Meta("web", "default")) + Bytes(2, options)));
  EXPECT_EQ(eviction.at("deleteOptions"), expected_options);
  EXPECT_EQ(eviction.at("metadata").at("name"), "web");
}

// `kubectl create serviceaccount` and `kubectl create token` (typed clients) send these.
TEST(ProtobufObjectsTest, ServiceAccountAndTokenRequest) {
  const json account =
      Decode(Envelope("v1", "ServiceAccount",
                      Bytes(1, Meta("robot", "ml")) + Bytes(3, Bytes(1, "regcred")) + Num(4, 0)));
  EXPECT_EQ(account, json::parse(R"({
    "apiVersion": "v1", "kind": "ServiceAccount",
    "metadata": {"name": "robot", "namespace": "ml", "creationTimestamp": null},
    "imagePullSecrets": [{"name": "regcred"}], "automountServiceAccountToken": false})"));

  // kubectl create token robot --duration 20m --audience vault --bound-object-kind Pod
  // --bound-object-name web-0
  const std::string bound = Bytes(1, "Pod") + Bytes(2, "v1") + Bytes(3, "web-0");
  const std::string spec = Bytes(1, "vault") + Num(4, 1200) + Bytes(3, bound);
  const json request = Decode(Envelope("authentication.k8s.io/v1", "TokenRequest",
                                       Bytes(1, "") + Bytes(2, spec) + Bytes(3, "")));
  EXPECT_EQ(request.at("apiVersion"), "authentication.k8s.io/v1");
  EXPECT_EQ(request.at("kind"), "TokenRequest");
  EXPECT_EQ(request.at("spec"), json::parse(R"({"audiences": ["vault"], "expirationSeconds": 1200,
      "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web-0"}})"));
  EXPECT_EQ(request.at("status"), json::parse(R"({"token": "", "expirationTimestamp": null})"));

  // Plain `kubectl create token robot`: Go's nil slice and nil pointers print as null.
  const json plain = Decode(Envelope("authentication.k8s.io/v1", "TokenRequest",
                                     Bytes(1, "") + Bytes(2, "") + Bytes(3, "")));
  EXPECT_EQ(plain.at("spec"), json::parse(R"({"audiences": null, "expirationSeconds": null,
      "boundObjectRef": null})"));
}

// `kubectl create role|clusterrole` (typed clients) send these.
TEST(ProtobufObjectsTest, RoleAndClusterRole) {
  // kubectl create role pod-reader -n ml --verb=get,list --resource=pods --resource-name=web-0,
  // plus a second rule for deployments in apps.
  const std::string pods =
      Bytes(1, "get") + Bytes(1, "list") + Bytes(2, "") + Bytes(3, "pods") + Bytes(4, "web-0");
  const std::string deployments =
      Bytes(1, "get") + Bytes(2, "apps") + Bytes(3, "deployments") + Bytes(3, "deployments/scale");
  EXPECT_EQ(
      Decode(Envelope("rbac.authorization.k8s.io/v1", "Role",
                      Bytes(1, Meta("pod-reader", "ml")) + Bytes(2, pods) + Bytes(2, deployments))),
      json::parse(R"({
    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
    "metadata": {"name": "pod-reader", "namespace": "ml", "creationTimestamp": null},
    "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"],
               "resourceNames": ["web-0"]},
              {"verbs": ["get"], "apiGroups": ["apps"],
               "resources": ["deployments", "deployments/scale"]}]})"));

  // kubectl create clusterrole metrics-reader --verb=get --non-resource-url=/metrics
  // --non-resource-url=/healthz/*
  const std::string urls = Bytes(1, "get") + Bytes(5, "/metrics") + Bytes(5, "/healthz/*");
  EXPECT_EQ(Decode(Envelope("rbac.authorization.k8s.io/v1", "ClusterRole",
                            Bytes(1, Meta("metrics-reader", "")) + Bytes(2, urls))),
            json::parse(R"({
    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
    "metadata": {"name": "metrics-reader", "creationTimestamp": null},
    "rules": [{"verbs": ["get"], "nonResourceURLs": ["/metrics", "/healthz/*"]}]})"));

  // kubectl create clusterrole view-all --aggregation-rule=sluice.dev/aggregate-to-view=true:
  // no rules, which Go prints as null (rules has no omitempty).
  const std::string selector = Bytes(1, Entry("sluice.dev/aggregate-to-view", "true"));
  EXPECT_EQ(Decode(Envelope("rbac.authorization.k8s.io/v1", "ClusterRole",
                            Bytes(1, Meta("view-all", "")) + Bytes(3, Bytes(1, selector)))),
            json::parse(R"({
    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
    "metadata": {"name": "view-all", "creationTimestamp": null}, "rules": null,
    "aggregationRule": {"clusterRoleSelectors": [
        {"matchLabels": {"sluice.dev/aggregate-to-view": "true"}}]}})"));
}

// `kubectl create rolebinding|clusterrolebinding`.
TEST(ProtobufObjectsTest, RoleBindingAndClusterRoleBinding) {
  // kubectl create rolebinding robot-reads -n ml --role=pod-reader --serviceaccount=ml:robot
  // --user=alice
  const std::string robot =
      Bytes(1, "ServiceAccount") + Bytes(2, "") + Bytes(3, "robot") + Bytes(4, "ml");
  const std::string alice =
      Bytes(1, "User") + Bytes(2, "rbac.authorization.k8s.io") + Bytes(3, "alice") + Bytes(4, "");
  const std::string role_ref =
      Bytes(1, "rbac.authorization.k8s.io") + Bytes(2, "Role") + Bytes(3, "pod-reader");
  EXPECT_EQ(Decode(Envelope("rbac.authorization.k8s.io/v1", "RoleBinding",
                            Bytes(1, Meta("robot-reads", "ml")) + Bytes(2, robot) +
                                Bytes(2, alice) + Bytes(3, role_ref))),
            json::parse(R"({
    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
    "metadata": {"name": "robot-reads", "namespace": "ml", "creationTimestamp": null},
    "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "ml"},
                 {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}],
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                "name": "pod-reader"}})"));

  // No subjects (omitempty) and no roleRef (a struct, printed with its zero fields).
  EXPECT_EQ(Decode(Envelope("rbac.authorization.k8s.io/v1", "ClusterRoleBinding",
                            Bytes(1, Meta("empty", "")))),
            json::parse(R"({
    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
    "metadata": {"name": "empty", "creationTimestamp": null},
    "roleRef": {"apiGroup": "", "kind": "", "name": ""}})"));
}

// `kubectl auth can-i`.
TEST(ProtobufObjectsTest, SelfSubjectAccessReview) {
  // kubectl auth can-i create deployments.apps --subresource=scale -n ml; kubectl's writer sends
  // every string and the zero status.
  const std::string attributes = Bytes(1, "ml") + Bytes(2, "create") + Bytes(3, "apps") +
                                 Bytes(4, "") + Bytes(5, "deployments") + Bytes(6, "scale") +
                                 Bytes(7, "");
  const std::string status = Num(1, 0) + Bytes(2, "") + Bytes(3, "") + Num(4, 0);
  EXPECT_EQ(
      Decode(Envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview",
                      Bytes(1, Bytes(8, "")) + Bytes(2, Bytes(1, attributes)) + Bytes(3, status))),
      json::parse(R"({
    "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
    "metadata": {"creationTimestamp": null},
    "spec": {"resourceAttributes": {"namespace": "ml", "verb": "create", "group": "apps",
                                    "resource": "deployments", "subresource": "scale"}},
    "status": {"allowed": false}})"));

  // kubectl auth can-i get /logs; no status sent: allowed (no omitempty) is still printed.
  EXPECT_EQ(
      Decode(Envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview",
                      Bytes(1, "") + Bytes(2, Bytes(2, Bytes(1, "/logs") + Bytes(2, "get"))))),
      json::parse(R"({
    "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
    "metadata": {"creationTimestamp": null},
    "spec": {"nonResourceAttributes": {"path": "/logs", "verb": "get"}},
    "status": {"allowed": false}})"));
}

TEST(ProtobufObjectsTest, SubjectAccessReviewsAndRulesReview) {
  // Extra values are lists; one sent without items is [] (Go's ExtraValue{}), not null.
  const std::string selector =
      Bytes(1, "app=web") + Bytes(2, Bytes(1, "tier") + Bytes(2, "In") + Bytes(3, "a"));
  const std::string spec = Bytes(1, Bytes(2, "list") + Bytes(5, "pods") + Bytes(9, selector)) +
                           Bytes(3, "alice") + Bytes(4, "dev") + Bytes(4, "system:authenticated") +
                           Bytes(5, Entry("scopes", Bytes(1, "a") + Bytes(1, "b"))) +
                           Bytes(5, Bytes(1, "none")) + Bytes(6, "uid-7");
  const std::string status = Num(1, 1) + Bytes(2, "bound by a role");
  EXPECT_EQ(Decode(Envelope("authorization.k8s.io/v1", "SubjectAccessReview",
                            Bytes(1, "") + Bytes(2, spec) + Bytes(3, status))),
            json::parse(R"({
    "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
    "metadata": {"creationTimestamp": null},
    "spec": {"resourceAttributes": {"verb": "list", "resource": "pods",
                                    "labelSelector": {"rawSelector": "app=web",
                                        "requirements": [{"key": "tier", "operator": "In",
                                                          "values": ["a"]}]}},
             "user": "alice", "groups": ["dev", "system:authenticated"],
             "extra": {"scopes": ["a", "b"], "none": []}, "uid": "uid-7"},
    "status": {"allowed": true, "reason": "bound by a role"}})"));

  EXPECT_EQ(Decode(Envelope("authorization.k8s.io/v1", "LocalSubjectAccessReview",
                            Bytes(1, Meta("", "ml")) + Bytes(2, Bytes(3, "bob")))),
            json::parse(R"({
    "apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
    "metadata": {"namespace": "ml", "creationTimestamp": null}, "spec": {"user": "bob"},
    "status": {"allowed": false}})"));

  // kubectl auth can-i --list -n ml
  EXPECT_EQ(Decode(Envelope("authorization.k8s.io/v1", "SelfSubjectRulesReview",
                            Bytes(1, "") + Bytes(2, Bytes(1, "ml")) + Bytes(3, ""))),
            json::parse(R"({
    "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
    "metadata": {"creationTimestamp": null}, "spec": {"namespace": "ml"},
    "status": {"resourceRules": null, "nonResourceRules": null, "incomplete": false}})"));
}

// ObjectMeta as Go's generated marshaller writes it: every string and the generation even when
// empty, the zero creationTimestamp as an empty message.
std::string FullMeta(std::string_view name, std::string_view ns, std::string_view labels) {
  return Bytes(1, name) + Bytes(2, "") + Bytes(3, ns) + Bytes(4, "") + Bytes(5, "") + Bytes(6, "") +
         Num(7, 0) + Bytes(8, "") + std::string(labels);
}

// A PodTemplateSpec with one container, zero fields written as Go's marshaller writes them.
std::string NginxTemplate(std::string_view labels) {
  const std::string container = Bytes(1, "nginx") + Bytes(2, "nginx") + Bytes(5, "") +
                                Bytes(8, "") + Bytes(13, "") + Bytes(14, "") + Num(16, 0) +
                                Num(17, 0) + Num(18, 0) + Bytes(20, "");
  const std::string pod_spec = Bytes(2, container) + Bytes(3, "") + Bytes(6, "") + Bytes(8, "") +
                               Bytes(9, "") + Bytes(10, "") + Num(11, 0) + Num(12, 0) + Num(13, 0) +
                               Bytes(16, "") + Bytes(17, "") + Bytes(19, "") + Bytes(24, "");
  return Bytes(1, FullMeta("", "", labels)) + Bytes(2, pod_spec);
}

// `kubectl create deployment web --image=nginx --replicas=3` (typed client), written by hand as
// Go's marshaller encodes it.
TEST(ProtobufObjectsTest, DeploymentFromKubectlCreateDeployment) {
  const std::string labels = Bytes(11, Entry("app", "web"));
  const std::string spec = Num(1, 3) + Bytes(2, Bytes(1, Entry("app", "web"))) +
                           Bytes(3, NginxTemplate(labels)) + Bytes(4, Bytes(1, "")) + Num(5, 0) +
                           Num(7, 0);
  const std::string status = Num(1, 0) + Num(2, 0) + Num(3, 0) + Num(4, 0) + Num(5, 0) + Num(7, 0);
  EXPECT_EQ(
      Decode(Envelope("apps/v1", "Deployment",
                      Bytes(1, FullMeta("web", "", labels)) + Bytes(2, spec) + Bytes(3, status))),
      json::parse(R"({
    "kind": "Deployment", "apiVersion": "apps/v1",
    "metadata": {"name": "web", "creationTimestamp": null, "labels": {"app": "web"}},
    "spec": {
      "replicas": 3,
      "selector": {"matchLabels": {"app": "web"}},
      "template": {
        "metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}},
      "strategy": {}},
    "status": {}})"));

  // Nothing but a name: the nil selector is null (no omitempty), template and strategy are
  // structs, printed with their zero fields.
  EXPECT_EQ(Decode(Envelope("apps/v1", "Deployment", Bytes(1, Meta("bare", "ml")))),
            json::parse(R"({
    "kind": "Deployment", "apiVersion": "apps/v1",
    "metadata": {"name": "bare", "namespace": "ml", "creationTimestamp": null},
    "spec": {"selector": null,
             "template": {"metadata": {"creationTimestamp": null},
                          "spec": {"containers": null}},
             "strategy": {}},
    "status": {}})"));
}

TEST(ProtobufObjectsTest, DeploymentStrategyPointersAndStatus) {
  // Pointers sent as zero are printed; int-or-string is a number or a string.
  const std::string rolling =
      Bytes(1, Num(1, 0) + Num(2, 0)) + Bytes(2, Num(1, 1) + Bytes(3, "25%"));
  const std::string spec = Num(1, 0) + Bytes(2, Bytes(1, Entry("app", "web"))) +
                           Bytes(3, NginxTemplate(Bytes(11, Entry("app", "web")))) +
                           Bytes(4, Bytes(1, "RollingUpdate") + Bytes(2, rolling)) + Num(5, 5) +
                           Num(6, 0) + Num(7, 1) + Num(9, 600);
  const std::string condition = Bytes(1, "Available") + Bytes(2, "True") +
                                Bytes(6, Timestamp(1700000000)) + Bytes(7, "") +
                                Bytes(4, "MinimumReplicasAvailable") + Bytes(5, "");
  const std::string status = Num(1, 2) + Num(2, 3) + Num(3, 3) + Num(7, 3) + Num(4, 3) + Num(5, 0) +
                             Bytes(6, condition) + Num(8, 0);
  const json deployment =
      Decode(Envelope("apps/v1", "Deployment",
                      Bytes(1, Meta("web", "default")) + Bytes(2, spec) + Bytes(3, status)));
  const json expected_spec = json::parse(R"({
    "replicas": 0, "selector": {"matchLabels": {"app": "web"}},
    "strategy": {"type": "RollingUpdate",
                 "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}},
    "minReadySeconds": 5, "revisionHistoryLimit": 0, "paused": true,
    "progressDeadlineSeconds": 600})");
  json spec_without_template = deployment.at("spec");
  spec_without_template.erase("template");
  EXPECT_EQ(spec_without_template, expected_spec);
  EXPECT_EQ(deployment.at("status"), json::parse(R"({
    "observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
    "availableReplicas": 3,
    "conditions": [{"type": "Available", "status": "True",
                    "lastUpdateTime": "2023-11-14T22:13:20Z", "lastTransitionTime": null,
                    "reason": "MinimumReplicasAvailable"}],
    "collisionCount": 0})"));
}

// A ReplicaSet as the deployment controller creates it.
TEST(ProtobufObjectsTest, ReplicaSet) {
  const std::string labels =
      Bytes(11, Entry("app", "web")) + Bytes(11, Entry("pod-template-hash", "5d4f8"));
  const std::string owner = Bytes(1, "Deployment") + Bytes(3, "web") + Bytes(4, "uid-1") +
                            Bytes(5, "apps/v1") + Num(6, 1) + Num(7, 1);
  const std::string selector =
      Bytes(1, Entry("app", "web")) + Bytes(1, Entry("pod-template-hash", "5d4f8"));
  const std::string spec =
      Num(1, 3) + Bytes(2, selector) + Bytes(3, NginxTemplate(labels)) + Num(4, 0);
  const std::string status = Num(1, 0) + Num(2, 0) + Num(3, 0) + Num(4, 0) + Num(5, 0);
  EXPECT_EQ(Decode(Envelope("apps/v1", "ReplicaSet",
                            Bytes(1, FullMeta("web-5d4f8", "default", labels + Bytes(13, owner))) +
                                Bytes(2, spec) + Bytes(3, status))),
            json::parse(R"({
    "kind": "ReplicaSet", "apiVersion": "apps/v1",
    "metadata": {"name": "web-5d4f8", "namespace": "default", "creationTimestamp": null,
                 "labels": {"app": "web", "pod-template-hash": "5d4f8"},
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                      "name": "web", "uid": "uid-1", "controller": true,
                                      "blockOwnerDeletion": true}]},
    "spec": {
      "replicas": 3,
      "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d4f8"}},
      "template": {
        "metadata": {"creationTimestamp": null,
                     "labels": {"app": "web", "pod-template-hash": "5d4f8"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}}},
    "status": {"replicas": 0}})"));

  // status.replicas has no omitempty; the conditions' times are structs (null when zero).
  const std::string condition = Bytes(1, "ReplicaFailure") + Bytes(2, "True") + Bytes(3, "") +
                                Bytes(4, "FailedCreate") + Bytes(5, "quota");
  EXPECT_EQ(Decode(Envelope("apps/v1", "ReplicaSet",
                            Bytes(1, Meta("rs", "default")) +
                                Bytes(3, Num(2, 1) + Num(3, 4) + Bytes(6, condition)))),
            json::parse(R"({
    "kind": "ReplicaSet", "apiVersion": "apps/v1",
    "metadata": {"name": "rs", "namespace": "default", "creationTimestamp": null},
    "spec": {"selector": null,
             "template": {"metadata": {"creationTimestamp": null},
                          "spec": {"containers": null}}},
    "status": {"replicas": 0, "fullyLabeledReplicas": 1, "observedGeneration": 4,
               "conditions": [{"type": "ReplicaFailure", "status": "True",
                               "lastTransitionTime": null, "reason": "FailedCreate",
                               "message": "quota"}]}})"));
}

TEST(ProtobufObjectsTest, FullObjectMetaAndUnknownFieldsOfEveryWireType) {
  const std::string unknown = Num(99, 7) + Varint((98 << 3) | 1) + std::string(8, 'x') +
                              Varint((97 << 3) | 5) + std::string(4, 'y') +
                              Bytes(96, Bytes(1, "nested"));
  const std::string owner = Bytes(1, "RolloutPool") + Bytes(3, "pool") + Bytes(4, "uid-9") +
                            Bytes(5, "sluice.dev/v1alpha1") + Num(6, 1) + Num(7, 0);
  const std::string managed = Bytes(1, "kubectl") + Bytes(2, "Update") + Bytes(3, "v1") +
                              Bytes(4, Timestamp(1700000000)) + Bytes(6, "FieldsV1") +
                              Bytes(7, Bytes(1, R"({"f:data":{".":{},"f:a":{}}})")) + Bytes(8, "");
  const std::string meta = Bytes(1, "") + Bytes(2, "cm-") + Bytes(3, "default") + Bytes(4, "") +
                           Bytes(5, "") + Bytes(6, "") + Num(7, 0) + Bytes(8, "") +
                           Bytes(9, Timestamp(1700000000)) + Num(10, 30) +
                           Bytes(11, Entry("app", "web")) + Bytes(11, Entry("tier", "")) +
                           Bytes(12, Entry("note", "x")) + Bytes(13, owner) +
                           Bytes(14, "sluice.dev/cleanup") + Bytes(17, managed) + unknown;
  const std::string raw = Bytes(1, meta) + Num(4, 0) + Bytes(2, Entry("a", "1")) + unknown;
  EXPECT_EQ(Decode(Envelope("v1", "ConfigMap", raw)), json::parse(R"({
    "apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {
      "generateName": "cm-", "namespace": "default", "creationTimestamp": null,
      "deletionTimestamp": "2023-11-14T22:13:20Z", "deletionGracePeriodSeconds": 30,
      "labels": {"app": "web", "tier": ""}, "annotations": {"note": "x"},
      "ownerReferences": [{"apiVersion": "sluice.dev/v1alpha1", "kind": "RolloutPool",
                           "name": "pool", "uid": "uid-9", "controller": true,
                           "blockOwnerDeletion": false}],
      "finalizers": ["sluice.dev/cleanup"],
      "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                         "time": "2023-11-14T22:13:20Z", "fieldsType": "FieldsV1",
                         "fieldsV1": {"f:data": {".": {}, "f:a": {}}}}]},
    "immutable": false, "data": {"a": "1"}})"));
}

TEST(ProtobufObjectsTest, SecretBytesPackedIntsAndInvalidUtf8) {
  // Secret data is base64; a map entry without a value is the zero value.
  const std::string secret = Bytes(1, Meta("s", "default")) + Bytes(2, Entry("k", "\x01\xff")) +
                             Bytes(2, Bytes(1, "empty")) + Bytes(4, Entry("bad\xff", "a\xc3")) +
                             Bytes(3, "Opaque");
  EXPECT_EQ(Decode(Envelope("v1", "Secret", secret)), json::parse(R"({
    "apiVersion": "v1", "kind": "Secret",
    "metadata": {"name": "s", "namespace": "default", "creationTimestamp": null},
    "data": {"k": "Af8=", "empty": ""}, "stringData": {"bad\ufffd": "a\ufffd"},
    "type": "Opaque"})"));

  // supplementalGroups packed, as a proto3 writer would send it; resources as quantities.
  const std::string container = Bytes(1, "c") + Bytes(8, Bytes(1, Entry("cpu", Bytes(1, "250m"))));
  const std::string security = Bytes(4, Varint(1) + Varint(300));
  const std::string pod = Bytes(1, Meta("p", "default")) +
                          Bytes(2, Bytes(2, container) + Bytes(14, security)) + Bytes(3, "");
  const json decoded = Decode(Envelope("v1", "Pod", pod));
  EXPECT_EQ(decoded.at("spec").at("securityContext").at("supplementalGroups"),
            json::array({1, 300}));
  EXPECT_EQ(decoded.at("spec").at("containers"), json::parse(R"([{"name": "c",
      "resources": {"limits": {"cpu": "250m"}}}])"));
  EXPECT_NO_THROW((void)decoded.dump());
}

// ---------------------------------------------------------------------------------------------
// Refusals and malformed input.

TEST(ProtobufObjectsTest, UnsupportedKindsAreNamed) {
  const Status status = DecodeError(Envelope("batch/v1", "Job", Bytes(1, Meta("j", ""))));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("batch/v1, Kind=Job"), std::string::npos) << status.message();
  EXPECT_NE(DecodeError(std::string(kKubeProtobufMagic)).message().find("no kind"),
            std::string::npos);
  std::string encoded = std::string(kKubeProtobufMagic) +
                        Bytes(1, Bytes(1, "v1") + Bytes(2, "Pod")) + Bytes(2, "") +
                        Bytes(3, "gzip");
  EXPECT_NE(DecodeError(encoded).message().find("gzip"), std::string::npos);
}

TEST(ProtobufObjectsTest, MalformedInputFailsCleanly) {
  const std::string good = test_support::ReadFileOrEmpty(DataDir() / "service_nodeport.pb");
  ASSERT_TRUE(DecodeKubeProtobuf(good).ok());

  EXPECT_FALSE(DecodeKubeProtobuf("").ok());
  EXPECT_FALSE(DecodeKubeProtobuf("k8s").ok());
  EXPECT_FALSE(DecodeKubeProtobuf(R"({"kind":"Pod"})").ok());
  std::string bad_magic = good;
  bad_magic[0] = 'K';
  EXPECT_FALSE(DecodeKubeProtobuf(bad_magic).ok());

  // Every truncation; any cut inside the object (a length-delimited field) fails. The envelope is
  // magic, typeMeta (tag, one-byte length, bytes), the object (tag, one-byte length, bytes), ...
  const size_t raw_start = 6 + static_cast<uint8_t>(good[5]);
  ASSERT_EQ(good[raw_start], '\x12');
  ASSERT_LT(static_cast<uint8_t>(good[raw_start + 1]), 0x80);
  const size_t raw_end = raw_start + 2 + static_cast<uint8_t>(good[raw_start + 1]);
  for (size_t n = 0; n < good.size(); ++n) {
    Result<json> result = DecodeKubeProtobuf(good.substr(0, n));
    if (n > raw_start && n < raw_end) {
      EXPECT_FALSE(result.ok()) << n;
      EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
    }
  }

  const std::string type_meta = Bytes(1, Bytes(1, "v1") + Bytes(2, "Pod"));
  const std::string magic(kKubeProtobufMagic);
  // A length far past the end, and one that overflows size_t arithmetic.
  EXPECT_FALSE(
      DecodeKubeProtobuf(magic + type_meta + Varint((2 << 3) | 2) + Varint(1u << 30)).ok());
  EXPECT_FALSE(
      DecodeKubeProtobuf(magic + type_meta + Varint((2 << 3) | 2) + Varint(UINT64_MAX) + "x").ok());
  // Varints: unterminated, 11 bytes long, overflowing the tenth byte.
  EXPECT_FALSE(DecodeKubeProtobuf(magic + "\x80\x80").ok());
  EXPECT_FALSE(DecodeKubeProtobuf(magic + std::string(10, '\xff') + "\x01").ok());
  EXPECT_FALSE(DecodeKubeProtobuf(magic + std::string(9, '\xff') + "\x7f").ok());
  // Field number 0, groups, invalid wire types.
  EXPECT_FALSE(DecodeKubeProtobuf(magic + type_meta + Bytes(2, Num(0, 1))).ok());
  EXPECT_FALSE(DecodeKubeProtobuf(magic + type_meta + Bytes(2, Varint((9 << 3) | 3))).ok());
  EXPECT_FALSE(DecodeKubeProtobuf(magic + type_meta + Bytes(2, Varint((9 << 3) | 7))).ok());
  // A known field with the wrong wire type; a truncated fixed64.
  EXPECT_FALSE(DecodeKubeProtobuf(magic + type_meta + Bytes(2, Num(1, 5))).ok());
  EXPECT_FALSE(
      DecodeKubeProtobuf(magic + type_meta + Bytes(2, Varint((9 << 3) | 1) + "1234")).ok());

  // Values that do not decode: int-or-string type 2, a bad quantity, a year past 9999, bad JSON
  // in fieldsV1. The error names the field.
  const std::string port = Num(3, 80) + Bytes(4, Num(1, 2));
  const Status bad_port = DecodeError(Envelope("v1", "Service", Bytes(2, Bytes(1, port))));
  EXPECT_EQ(bad_port.field(), "spec.ports[0].targetPort") << bad_port.ToString();
  const std::string cpu = Bytes(2, Bytes(2, Bytes(8, Bytes(2, Entry("cpu", Bytes(1, "lots"))))));
  EXPECT_EQ(DecodeError(Envelope("v1", "Pod", cpu)).field(),
            "spec.containers[0].resources.requests[\"cpu\"]");
  EXPECT_FALSE(
      DecodeKubeProtobuf(Envelope("v1", "Pod", Bytes(1, Bytes(9, Timestamp(300000000000))))).ok());
  const std::string fields = Bytes(17, Bytes(7, Bytes(1, "{not json")));
  EXPECT_FALSE(DecodeKubeProtobuf(Envelope("v1", "Pod", Bytes(1, fields))).ok());
}

TEST(ProtobufObjectsTest, DeepNesting) {
  // Unknown fields are skipped without being parsed, however deeply they nest.
  std::string deep = "x";
  for (int i = 0; i < 5000; ++i) deep = Bytes(50, deep);
  const json pod = Decode(Envelope("v1", "Pod", Bytes(1, Bytes(1, "p") + deep) + deep));
  EXPECT_EQ(pod.at("metadata").at("name"), "p");

  // JSON inside fieldsV1 is bounded.
  const std::string nested = std::string(200, '[') + std::string(200, ']');
  const Status status =
      DecodeError(Envelope("v1", "Pod", Bytes(1, Bytes(17, Bytes(7, Bytes(1, nested))))));
  EXPECT_NE(status.message().find("deeper"), std::string::npos) << status.ToString();
}

TEST(ProtobufObjectsTest, RandomCorruptionNeverCrashes) {
  std::mt19937 rng(1234);
  for (const char* name : {"pod_debug_copy", "secret_dockerconfig", "service_clusterip"}) {
    const std::string good = test_support::ReadFileOrEmpty(DataDir() / (std::string(name) + ".pb"));
    ASSERT_FALSE(good.empty());
    for (int round = 0; round < 1000; ++round) {
      std::string body = good;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        const size_t at = 4 + rng() % (body.size() - 4);
        body[at] = static_cast<char>(rng() & 0xFF);
      }
      Result<json> result = DecodeKubeProtobuf(body);
      if (result.ok()) {
        EXPECT_TRUE(result->is_object());
        EXPECT_NO_THROW((void)result->dump());
      } else {
        EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
      }
    }
  }
}

}  // namespace
}  // namespace sluice::apiserver
