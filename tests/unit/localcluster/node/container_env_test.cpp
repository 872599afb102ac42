// Tests of ResolveEnv, ExpandVariables, ContainerArgv and their helpers.
#include "localcluster/node/container_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace sluice::node {
namespace {

using nlohmann::json;

json TestPod() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web-0", "namespace": "default", "uid": "u-123",
                 "labels": {"app": "web", "tier": "front"},
                 "annotations": {"note": "say \"hi\"\n", "team": "a"}},
    "spec": {"nodeName": "spec-node", "serviceAccountName": "runner",
             "containers": [{"name": "app"}]},
    "status": {"podIP": "10.0.0.9", "hostIP": "192.168.1.1",
               "podIPs": [{"ip": "10.0.0.9"}, {"ip": "fd00::9"}]}
  })");
}

class EnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_maps_["cfg"] = json::parse(R"({
      "metadata": {"name": "cfg", "namespace": "default"},
      "data": {"url": "http://x", "LEVEL": "debug", "bad key": "skip", "1abc": "skip"},
      "binaryData": {"blob": "AAEC"}
    })");
    secrets_["tok"] = json::parse(R"({
      "metadata": {"name": "tok", "namespace": "default"},
      "data": {"token": "czNjcjN0", "USER": "YWRtaW4="}
    })");
    lookup_.config_map = [this](const std::string& name) -> std::optional<json> {
      auto it = config_maps_.find(name);
      if (it == config_maps_.end()) return std::nullopt;
      return it->second;
    };
    lookup_.secret = [this](const std::string& name) -> std::optional<json> {
      auto it = secrets_.find(name);
      if (it == secrets_.end()) return std::nullopt;
      return it->second;
    };
  }

  Result<EnvList> Resolve(const json& container, const PodFacts& facts = {}) {
    return ResolveEnv(pod_, container, facts, lookup_);
  }

  // The value of `name` in a successful resolution of a container with one env entry.
  std::string One(const json& env_entry, const PodFacts& facts = {}) {
    json container = {{"name", "app"}, {"env", json::array({env_entry})}};
    auto env = Resolve(container, facts);
    EXPECT_TRUE(env.ok()) << env.status().ToString();
    if (!env.ok() || env->size() != 1) return "<missing>";
    return (*env)[0].second;
  }

  Status Error(const json& container) {
    auto env = Resolve(container);
    EXPECT_FALSE(env.ok());
    return env.status();
  }

  json pod_ = TestPod();
  std::map<std::string, json> config_maps_;
  std::map<std::string, json> secrets_;
  ObjectLookup lookup_;
};

json FieldRef(const std::string& path) {
  return {{"name", "V"}, {"valueFrom", {{"fieldRef", {{"fieldPath", path}}}}}};
}

json ResourceRef(const std::string& resource, const json& divisor = nullptr) {
  json ref = {{"resource", resource}};
  if (!divisor.is_null()) ref["divisor"] = divisor;
  return {{"name", "V"}, {"valueFrom", {{"resourceFieldRef", ref}}}};
}

TEST_F(EnvTest, NoEnvIsEmpty) {
  auto env = Resolve(json{{"name", "app"}});
  ASSERT_TRUE(env.ok());
  EXPECT_TRUE(env->empty());
}

TEST_F(EnvTest, PlainValuesInOrder) {
  auto env = Resolve(json::parse(R"({"name": "app", "env": [
      {"name": "B", "value": "2"}, {"name": "A", "value": "1"}, {"name": "EMPTY"}]})"));
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(*env, (EnvList{{"B", "2"}, {"A", "1"}, {"EMPTY", ""}}));
}

TEST_F(EnvTest, EnvFromConfigMapSkipsInvalidKeys) {
  auto env =
      Resolve(json::parse(R"({"name": "app", "envFrom": [{"configMapRef": {"name": "cfg"}}]})"));
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  // data only (not binaryData), sorted by key, invalid names ("bad key", "1abc") skipped.
  EXPECT_EQ(*env, (EnvList{{"LEVEL", "debug"}, {"url", "http://x"}}));
}

TEST_F(EnvTest, EnvFromPrefixAndSecret) {
  auto env = Resolve(json::parse(R"({"name": "app", "envFrom": [
      {"configMapRef": {"name": "cfg"}, "prefix": "CFG_"},
      {"secretRef": {"name": "tok"}, "prefix": "S_"}]})"));
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  // "CFG_1abc" becomes a valid name with the prefix; "CFG_bad key" stays invalid.
  EXPECT_EQ(*env, (EnvList{{"CFG_1abc", "skip"},
                           {"CFG_LEVEL", "debug"},
                           {"CFG_url", "http://x"},
                           {"S_USER", "admin"},
                           {"S_token", "s3cr3t"}}));
}

TEST_F(EnvTest, EnvFromLaterSourceAndEnvOverrideInPlace) {
  config_maps_["other"] = json{{"data", {{"LEVEL", "info"}, {"EXTRA", "e"}}}};
  auto env = Resolve(json::parse(R"({"name": "app",
      "envFrom": [{"configMapRef": {"name": "cfg"}}, {"configMapRef": {"name": "other"}}],
      "env": [{"name": "url", "value": "override"}, {"name": "NEW", "value": "n"},
              {"name": "NEW", "value": "n2"}]})"));
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(*env, (EnvList{{"LEVEL", "info"}, {"url", "override"}, {"EXTRA", "e"}, {"NEW", "n2"}}));
}

TEST_F(EnvTest, EnvFromMissingSources) {
  EXPECT_EQ(Error(json::parse(R"({"envFrom": [{"configMapRef": {"name": "nope"}}]})")),
            Status::NotFound("configmap \"nope\" not found"));
  EXPECT_EQ(Error(json::parse(R"({"envFrom": [{"secretRef": {"name": "nope"}}]})")),
            Status::NotFound("secret \"nope\" not found"));
  auto env = Resolve(json::parse(R"({"envFrom": [
      {"configMapRef": {"name": "nope", "optional": true}},
      {"secretRef": {"name": "nope", "optional": true}}]})"));
  ASSERT_TRUE(env.ok());
  EXPECT_TRUE(env->empty());
  EXPECT_EQ(Error(json::parse(R"({"envFrom": [{"prefix": "X"}]})")).code(),
            StatusCode::kInvalidArgument);
}

TEST_F(EnvTest, ValueExpansion) {
  auto env = Resolve(json::parse(R"js({"name": "app",
      "envFrom": [{"configMapRef": {"name": "cfg"}}],
      "env": [
        {"name": "HOST", "value": "db"},
        {"name": "URL", "value": "$(url)/$(HOST):$(PORT)"},
        {"name": "PORT", "value": "5432"},
        {"name": "ESC", "value": "$$(HOST) $$ $x $"},
        {"name": "SELF", "value": "[$(SELF)]"}]})js"));
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  std::map<std::string, std::string> m(env->begin(), env->end());
  EXPECT_EQ(m["URL"], "http://x/db:$(PORT)");  // PORT is defined later: left as written.
  EXPECT_EQ(m["ESC"], "$(HOST) $ $x $");
  EXPECT_EQ(m["SELF"], "[$(SELF)]");
}

TEST(ExpandVariablesTest, KubeSemantics) {
  EnvList env = {{"A", "1"}, {"B", "two"}, {"A", "3"}};
  EXPECT_EQ(ExpandVariables("$(A)", env), "3");  // Last definition wins.
  EXPECT_EQ(ExpandVariables("x$(B)y$(A)", env), "xtwoy3");
  EXPECT_EQ(ExpandVariables("$(C)", env), "$(C)");
  EXPECT_EQ(ExpandVariables("$$(A)", env), "$(A)");
  EXPECT_EQ(ExpandVariables("$$$(A)", env), "$3");
  EXPECT_EQ(ExpandVariables("a$$b", env), "a$b");
  EXPECT_EQ(ExpandVariables("$A", env), "$A");
  EXPECT_EQ(ExpandVariables("$", env), "$");
  EXPECT_EQ(ExpandVariables("end$", env), "end$");
  EXPECT_EQ(ExpandVariables("$(A", env), "$(A");
  EXPECT_EQ(ExpandVariables("$(", env), "$(");
  EXPECT_EQ(ExpandVariables("$()", env), "$()");
  EXPECT_EQ(ExpandVariables("$(A)$(B)", env), "3two");
  EXPECT_EQ(ExpandVariables("", env), "");
  EXPECT_EQ(ExpandVariables("no refs", {}), "no refs");
}

TEST_F(EnvTest, FieldRefs) {
  EXPECT_EQ(One(FieldRef("metadata.name")), "web-0");
  EXPECT_EQ(One(FieldRef("metadata.namespace")), "default");
  EXPECT_EQ(One(FieldRef("metadata.uid")), "u-123");
  EXPECT_EQ(One(FieldRef("metadata.labels['app']")), "web");
  EXPECT_EQ(One(FieldRef("metadata.labels['missing']")), "");
  EXPECT_EQ(One(FieldRef("metadata.annotations['team']")), "a");
  EXPECT_EQ(One(FieldRef("metadata.labels")), "app=\"web\"\ntier=\"front\"");
  EXPECT_EQ(One(FieldRef("metadata.annotations")), "note=\"say \\\"hi\\\"\\n\"\nteam=\"a\"");
  EXPECT_EQ(One(FieldRef("spec.serviceAccountName")), "runner");
  // Without facts: the pod's own spec/status.
  EXPECT_EQ(One(FieldRef("spec.nodeName")), "spec-node");
  EXPECT_EQ(One(FieldRef("status.podIP")), "10.0.0.9");
  EXPECT_EQ(One(FieldRef("status.podIPs")), "10.0.0.9,fd00::9");
  EXPECT_EQ(One(FieldRef("status.hostIP")), "192.168.1.1");
  // Facts take precedence.
  PodFacts facts{"10.1.1.1", "node-a", "127.0.0.1"};
  EXPECT_EQ(One(FieldRef("spec.nodeName"), facts), "node-a");
  EXPECT_EQ(One(FieldRef("status.podIP"), facts), "10.1.1.1");
  EXPECT_EQ(One(FieldRef("status.hostIP"), facts), "127.0.0.1");
  EXPECT_EQ(One(FieldRef("status.hostIPs"), facts), "127.0.0.1");
}

TEST_F(EnvTest, FieldRefDefaultsAndErrors) {
  pod_["metadata"].erase("namespace");
  pod_["spec"].erase("serviceAccountName");
  EXPECT_EQ(One(FieldRef("metadata.namespace")), "default");
  EXPECT_EQ(One(FieldRef("spec.serviceAccountName")), "default");
  json container = {{"env", json::array({FieldRef("spec.restartPolicy")})}};
  EXPECT_EQ(Error(container), Status::InvalidArgument("unsupported fieldPath: spec.restartPolicy"));
  container = {{"env", json::array({FieldRef("metadata.generateName")})}};
  EXPECT_EQ(Error(container).message(), "unsupported fieldPath: metadata.generateName");
}

TEST_F(EnvTest, SecretKeyRef) {
  EXPECT_EQ(One(json::parse(R"({"name": "T", "valueFrom": {"secretKeyRef":
      {"name": "tok", "key": "token"}}})")),
            "s3cr3t");
  EXPECT_EQ(Error(json::parse(R"({"env": [{"name": "T", "valueFrom": {"secretKeyRef":
      {"name": "tok", "key": "nokey"}}}]})")),
            Status::NotFound("couldn't find key nokey in Secret default/tok"));
  EXPECT_EQ(Error(json::parse(R"({"env": [{"name": "T", "valueFrom": {"secretKeyRef":
      {"name": "gone", "key": "token"}}}]})")),
            Status::NotFound("secret \"gone\" not found"));
  secrets_["broken"] = json{{"data", {{"k", "!!notbase64"}}}};
  EXPECT_EQ(Error(json::parse(R"({"env": [{"name": "T", "valueFrom": {"secretKeyRef":
      {"name": "broken", "key": "k"}}}]})"))
                .code(),
            StatusCode::kInvalidArgument);
}

TEST_F(EnvTest, ConfigMapKeyRef) {
  EXPECT_EQ(One(json::parse(R"({"name": "U", "valueFrom": {"configMapKeyRef":
      {"name": "cfg", "key": "url"}}})")),
            "http://x");
  EXPECT_EQ(One(json::parse(R"({"name": "U", "valueFrom": {"configMapKeyRef":
      {"name": "cfg", "key": "blob"}}})")),
            std::string("\x00\x01\x02", 3));
  EXPECT_EQ(Error(json::parse(R"({"env": [{"name": "U", "valueFrom": {"configMapKeyRef":
      {"name": "cfg", "key": "nokey"}}}]})")),
            Status::NotFound("couldn't find key nokey in ConfigMap default/cfg"));
  EXPECT_EQ(Error(json::parse(R"({"env": [{"name": "U", "valueFrom": {"configMapKeyRef":
      {"name": "gone", "key": "url"}}}]})")),
            Status::NotFound("configmap \"gone\" not found"));
}

TEST_F(EnvTest, NamespaceInKeyErrors) {
  pod_["metadata"]["namespace"] = "prod";
  EXPECT_EQ(Error(json::parse(R"({"env": [{"name": "U", "valueFrom": {"configMapKeyRef":
      {"name": "cfg", "key": "k"}}}]})"))
                .message(),
            "couldn't find key k in ConfigMap prod/cfg");
}

TEST_F(EnvTest, OptionalKeyRefsLeaveVariableUntouched) {
  auto env = Resolve(json::parse(R"({"name": "app",
      "envFrom": [{"configMapRef": {"name": "cfg"}}],
      "env": [
        {"name": "url", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "nokey", "optional": true}}},
        {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "x", "optional": true}}},
        {"name": "B", "valueFrom": {"secretKeyRef": {"name": "tok", "key": "nokey", "optional": true}}},
        {"name": "C", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "x", "optional": true}}}]})"));
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(*env, (EnvList{{"LEVEL", "debug"}, {"url", "http://x"}}));
}

TEST_F(EnvTest, ValueFromWithoutSourceIsInvalid) {
  Status s = Error(json::parse(R"({"env": [{"name": "X", "valueFrom": {}}]})"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.field(), "env[0].valueFrom");
  EXPECT_EQ(Error(json::parse(R"({"env": [{"value": "x"}]})")).field(), "env[0].name");
}

TEST_F(EnvTest, ResourceFieldRefs) {
  json container = json::parse(R"({"name": "app", "resources": {
      "limits": {"cpu": "500m", "memory": "4Gi", "ephemeral-storage": "1G"},
      "requests": {"cpu": "250m"}}})");
  auto value = [&](const std::string& resource, const json& divisor = nullptr) {
    container["env"] = json::array({ResourceRef(resource, divisor)});
    auto env = Resolve(container);
    EXPECT_TRUE(env.ok()) << resource << ": " << env.status().ToString();
    return env.ok() ? (*env)[0].second : std::string("<error>");
  };
  EXPECT_EQ(value("limits.cpu"), "1");  // Rounded up to whole cores.
  EXPECT_EQ(value("limits.cpu", "1m"), "500");
  EXPECT_EQ(value("requests.cpu", "1m"), "250");
  EXPECT_EQ(value("requests.cpu", "100m"), "3");
  EXPECT_EQ(value("limits.memory"), "4294967296");
  EXPECT_EQ(value("limits.memory", "1Mi"), "4096");
  EXPECT_EQ(value("limits.memory", "1M"), "4295");
  EXPECT_EQ(value("limits.ephemeral-storage", "1k"), "1000000");
  // Unset request: the limit (API defaulting).
  EXPECT_EQ(value("requests.memory", "1Gi"), "4");
  container["resources"]["limits"].erase("ephemeral-storage");
  EXPECT_EQ(value("requests.ephemeral-storage"), "0");
  // Unset limit: the host's allocatable.
  container["resources"]["limits"].erase("cpu");
  unsigned cpus = std::thread::hardware_concurrency();
  EXPECT_EQ(value("limits.cpu"), std::to_string(cpus == 0 ? 1 : cpus));
}

TEST_F(EnvTest, ResourceQuantityForms) {
  json container = {{"name", "app"}};
  auto memory = [&](const json& q, const json& divisor = nullptr) {
    container["resources"] = {{"limits", {{"memory", q}}}};
    container["env"] = json::array({ResourceRef("limits.memory", divisor)});
    auto env = Resolve(container);
    EXPECT_TRUE(env.ok()) << q.dump() << ": " << env.status().ToString();
    return env.ok() ? (*env)[0].second : std::string("<error>");
  };
  EXPECT_EQ(memory("128974848"), "128974848");
  EXPECT_EQ(memory("129e6"), "129000000");
  EXPECT_EQ(memory("129E+6"), "129000000");
  EXPECT_EQ(memory("123Mi"), "128974848");
  EXPECT_EQ(memory("1.5Gi"), "1610612736");
  EXPECT_EQ(memory("0.5k"), "500");
  EXPECT_EQ(memory("1500m"), "2");  // Milli-bytes round up.
  EXPECT_EQ(memory("+1Ki"), "1024");
  EXPECT_EQ(memory(2048), "2048");
  EXPECT_EQ(memory("1500", "1k"), "2");
  EXPECT_EQ(memory("1T", "1G"), "1000");
  EXPECT_EQ(memory("1Pi", "1Ti"), "1024");
  EXPECT_EQ(memory("100n"), "1");
}

TEST_F(EnvTest, ResourceFieldRefErrors) {
  json container = json::parse(R"({"name": "app", "resources": {"limits": {"cpu": "lots"}}})");
  container["env"] = json::array({ResourceRef("limits.cpu")});
  EXPECT_EQ(Error(container).code(), StatusCode::kInvalidArgument);
  container["resources"]["limits"]["cpu"] = "-1";
  EXPECT_EQ(Error(container).code(), StatusCode::kInvalidArgument);
  container["resources"]["limits"]["cpu"] = "1";
  container["env"] = json::array({ResourceRef("limits.cpu", "0")});
  EXPECT_EQ(Error(container).code(), StatusCode::kInvalidArgument);
  container["env"] = json::array({ResourceRef("limits.nvidia.com/gpu")});
  EXPECT_EQ(Error(container),
            Status::InvalidArgument("unsupported container resource : limits.nvidia.com/gpu"));
  container["env"] = json::array({ResourceRef("limits.memory", "1Xi")});
  EXPECT_EQ(Error(container).code(), StatusCode::kInvalidArgument);
  container["resources"]["limits"]["memory"] = "99999999999999999999Ei";
  container["env"] = json::array({ResourceRef("limits.memory")});
  EXPECT_EQ(Error(container).code(), StatusCode::kInvalidArgument);
}

TEST(ContainerArgvTest, CommandAndArgs) {
  EnvList env = {{"PORT", "8080"}, {"DIR", "/data"}};
  json c = json::parse(R"js({"command": ["/bin/server", "--port=$(PORT)"],
                           "args": ["--dir", "$(DIR)", "$$(DIR)", "$(NOPE)"]})js");
  EXPECT_EQ(ContainerArgv(c, env), (std::vector<std::string>{"/bin/server", "--port=8080", "--dir",
                                                             "/data", "$(DIR)", "$(NOPE)"}));
  // No command: args only; the caller prepends the executable.
  c = json::parse(R"js({"args": ["serve", "$(PORT)"]})js");
  EXPECT_EQ(ContainerArgv(c, env), (std::vector<std::string>{"serve", "8080"}));
  c = json::parse(R"({"command": ["sleep", "1"]})");
  EXPECT_EQ(ContainerArgv(c, env), (std::vector<std::string>{"sleep", "1"}));
  EXPECT_TRUE(ContainerArgv(json::parse(R"({"name": "x"})"), env).empty());
  EXPECT_TRUE(ContainerArgv(json::parse(R"({"command": [], "args": []})"), env).empty());
}

TEST(DecodeBase64Test, Forms) {
  EXPECT_EQ(*DecodeBase64(""), "");
  EXPECT_EQ(*DecodeBase64("aGVsbG8="), "hello");
  EXPECT_EQ(*DecodeBase64("aGVsbG8"), "hello");
  EXPECT_EQ(*DecodeBase64("aGVs\nbG8h"), "hello!");
  EXPECT_EQ(*DecodeBase64("+/+/"), "\xfb\xff\xbf");
  EXPECT_FALSE(DecodeBase64("aGVsbG8*").ok());
  EXPECT_FALSE(DecodeBase64("a").ok());
  EXPECT_FALSE(DecodeBase64("aG=Vs").ok());
}

TEST(IsEnvVarNameTest, KubeRule) {
  EXPECT_TRUE(IsEnvVarName("PATH"));
  EXPECT_TRUE(IsEnvVarName("_a.b-c9"));
  EXPECT_TRUE(IsEnvVarName("-x"));
  EXPECT_FALSE(IsEnvVarName(""));
  EXPECT_FALSE(IsEnvVarName("9x"));
  EXPECT_FALSE(IsEnvVarName("a b"));
  EXPECT_FALSE(IsEnvVarName("a=b"));
}

TEST(PodFieldValueTest, PodIpsFallBackToPodIp) {
  json pod = json::parse(R"({"status": {"podIP": "10.0.0.1"}})");
  EXPECT_EQ(*PodFieldValue(pod, "status.podIPs", {}), "10.0.0.1");
  EXPECT_EQ(*PodFieldValue(pod, "metadata.labels", {}), "");
  EXPECT_EQ(PodNamespace(pod), "default");
}

}  // namespace
}  // namespace sluice::node
