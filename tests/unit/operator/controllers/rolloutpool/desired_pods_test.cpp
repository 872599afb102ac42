// The RolloutPool controller's replica Pods (pure functions).
#include "operator/controllers/rolloutpool/desired_pods.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/tls/certificates.h"
#include "operator/controllers/labels.h"

namespace sluice::controllers {
namespace rolloutpool_desired_pods_test {

using nlohmann::json;

json Pool() {
  return json::parse(R"({
    "apiVersion": "sluice.dev/v1alpha1", "kind": "RolloutPool",
    "metadata": {"name": "gen", "namespace": "rl", "uid": "u-pool", "generation": 3},
    "spec": {
      "policies": ["actor"],
      "dataflowRef": {"name": "arith"},
      "engine": {"type": "builtin", "tensorParallelSize": 2, "maxBatchTokens": 16384,
                 "maxConcurrentSequences": 128, "kvCacheFraction": 0.9,
                 "args": ["--enforce-eager", "--seed=7"]},
      "template": {
        "resources": {"gpus": 2, "gpuResourceName": "amd.com/gpu", "cpu": 8, "memory": "64Gi"},
        "nodeSelector": {"pool": "inference", "topology.kubernetes.io/region": "any"},
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "t"}}},
                {"name": "LOG_LEVEL", "value": "debug"}],
        "serviceAccountName": "rollout-sa"
      },
      "replicas": 4,
      "placement": {"strategy": "Spread", "regions": [
        {"name": "us-east", "weight": 1,
         "nodeSelector": {"topology.kubernetes.io/region": "us-east-1",
                          "nvidia.com/gpu.product": "H100"}},
        {"name": "eu-west", "weight": 1}]},
      "drain": {"gracePeriodSeconds": 90}
    },
    "status": {"replicas": 2}
  })");
}

json Dataflow() {
  return json::parse(R"({
    "apiVersion": "sluice.dev/v1alpha1", "kind": "Dataflow",
    "metadata": {"name": "arith", "namespace": "rl", "uid": "u-df"}
  })");
}

std::vector<std::string> Strings(const json& array) {
  return array.get<std::vector<std::string>>();
}

TEST(RolloutPoolChildrenTest, ReplicaPodNameJoinsPoolRegionAndIndex) {
  EXPECT_EQ(ReplicaPodName("gen", "us-east", 0), "gen-us-east-0");
  EXPECT_EQ(ReplicaPodName("gen", "us-east", 12), "gen-us-east-12");
  EXPECT_EQ(ReplicaPodName("gen", "", 3), "gen-3");
}

TEST(RolloutPoolChildrenTest, ReplicaPodNameStaysAValidDnsLabel) {
  const std::string pool(60, 'p');
  const std::string a = ReplicaPodName(pool, "us-east", 7);
  const std::string b = ReplicaPodName(pool, "us-west", 7);
  EXPECT_EQ(a.size(), 63u);
  EXPECT_EQ(a.substr(a.size() - 2), "-7");
  EXPECT_EQ(a.substr(0, 50), std::string(50, 'p'));
  EXPECT_NE(a, b);  // The hash keeps regions apart after truncation.
  EXPECT_EQ(a, ReplicaPodName(pool, "us-east", 7));  // Stable.
  const std::string hash = JsonHash(json(pool + "-us-east"));
  EXPECT_EQ(a, std::string(50, 'p') + "-" + hash + "-7");
  // A longer index is kept whole; the prefix gives way.
  const std::string big = ReplicaPodName(pool, "us-east", 123456);
  EXPECT_EQ(big.size(), 63u);
  EXPECT_EQ(big.substr(big.size() - 7), "-123456");
  // Exactly 63 characters needs no hash.
  const std::string fits(61, 'f');
  EXPECT_EQ(ReplicaPodName(fits, "", 1), fits + "-1");
  EXPECT_EQ(ReplicaPodName(fits + "f", "", 1).size(), 63u);
  EXPECT_NE(ReplicaPodName(fits + "f", "", 1), fits + "f-1");
  // Upper case and dots are not allowed in a DNS label.
  const std::string odd = ReplicaPodName("My.Pool", "us", 0);
  EXPECT_EQ(odd, "my-pool-us-" + JsonHash(json("My.Pool-us")) + "-0");
  // Truncation never leaves a dash before the hash.
  const std::string dashed = std::string(49, 'd') + "-" + std::string(20, 'x');
  const std::string dashy = ReplicaPodName(dashed, "r", 0);
  EXPECT_EQ(dashy, std::string(49, 'd') + "-" + JsonHash(json(dashed + "-r")) + "-0");
  for (const std::string& n : {a, b, big, odd, dashy}) {
    EXPECT_LE(n.size(), 63u) << n;
    EXPECT_EQ(n.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-"), std::string::npos) << n;
    EXPECT_NE(n.front(), '-') << n;
    EXPECT_NE(n.back(), '-') << n;
  }
}

TEST(RolloutPoolChildrenTest, TemplateHashIgnoresScalingPlacementAndDrain) {
  const json pool = Pool();
  const std::string hash = PoolTemplateHash(pool, {});
  EXPECT_EQ(hash.size(), 10u);
  EXPECT_EQ(hash, JsonHash({{"engine", pool["spec"]["engine"]},
                            {"template", pool["spec"]["template"]},
                            {"policies", {"actor"}},
                            {"dataflowRef", {{"name", "arith"}}},
                            {"workerContract", kRolloutWorkerContract}}));
  json other = pool;
  other["spec"]["replicas"] = 9;
  other["spec"]["placement"]["regions"][0]["weight"] = 5;
  other["spec"]["drain"]["gracePeriodSeconds"] = 10;
  other["spec"]["autoscaling"] = {{"maxReplicas", 10}};
  other["spec"]["updateStrategy"] = {{"maxUnavailable", 2}};
  other["metadata"]["generation"] = 8;
  other["status"]["replicas"] = 9;
  EXPECT_EQ(PoolTemplateHash(other, {}), hash);
  // Policies are a set: order does not roll replicas.
  json two = pool;
  two["spec"]["policies"] = {"actor", "critic"};
  json swapped = pool;
  swapped["spec"]["policies"] = {"critic", "actor"};
  EXPECT_EQ(PoolTemplateHash(two, {}), PoolTemplateHash(swapped, {}));
  EXPECT_NE(PoolTemplateHash(two, {}), hash);
}

TEST(RolloutPoolChildrenTest, TemplateHashFollowsWhatAReplicaIsMadeFrom) {
  const std::string hash = PoolTemplateHash(Pool(), {});
  json engine = Pool();
  engine["spec"]["engine"]["maxBatchTokens"] = 4096;
  EXPECT_NE(PoolTemplateHash(engine, {}), hash);
  json image = Pool();
  image["spec"]["engine"]["image"] = "vllm/vllm-openai:v0.6";
  EXPECT_NE(PoolTemplateHash(image, {}), hash);
  json tmpl = Pool();
  tmpl["spec"]["template"]["env"][1]["value"] = "info";
  EXPECT_NE(PoolTemplateHash(tmpl, {}), hash);
  json df = Pool();
  df["spec"]["dataflowRef"]["name"] = "other";
  EXPECT_NE(PoolTemplateHash(df, {}), hash);
}

TEST(RolloutPoolChildrenTest, PodIsNamedLabelledAndOwned) {
  const json pool = Pool();
  const json& region = pool["spec"]["placement"]["regions"][0];
  const json pod = DesiredReplicaPod(pool, {}, &region, 2, Dataflow(), WorkerImages{});
  EXPECT_EQ(pod["apiVersion"], "v1");
  EXPECT_EQ(pod["kind"], "Pod");
  EXPECT_EQ(pod["metadata"]["name"], "gen-us-east-2");
  EXPECT_EQ(pod["metadata"]["namespace"], "rl");
  const json want_labels = {{"app.kubernetes.io/name", "sluice-rollout"},
                            {"app.kubernetes.io/instance", "gen"},
                            {"app.kubernetes.io/component", "rollout"},
                            {"app.kubernetes.io/part-of", "sluice"},
                            {"app.kubernetes.io/managed-by", "sluice-operator"},
                            {"sluice.dev/pool", "gen"},
                            {"sluice.dev/region", "us-east"},
                            {"sluice.dev/replica-index", "2"},
                            {"sluice.dev/template-hash", PoolTemplateHash(pool, {})},
                            {"sluice.dev/dataflow", "arith"},
                            {"sluice.dev/policy", "actor"}};
  EXPECT_EQ(pod["metadata"]["labels"], want_labels);
  ASSERT_EQ(pod["metadata"]["ownerReferences"].size(), 1u);
  const json owner = pod["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["apiVersion"], "sluice.dev/v1alpha1");
  EXPECT_EQ(owner["kind"], "RolloutPool");
  EXPECT_EQ(owner["name"], "gen");
  EXPECT_EQ(owner["uid"], "u-pool");
  EXPECT_EQ(owner["controller"], true);
  // Prometheus scrapes the replica's HTTP port (the worker serves /metrics there, without the
  // token: the args turn that off).
  EXPECT_EQ(pod["metadata"]["annotations"], json({{"prometheus.io/scrape", "true"},
                                                  {"prometheus.io/port", "8080"},
                                                  {"prometheus.io/path", "/metrics"},
                                                  {"prometheus.io/scheme", "https"}}));
}

// The replicas are called at their pod IP (by the operator, by the peers of a relay), so their
// certificate names the pool's role, which every caller verifies.
TEST(RolloutPoolChildrenTest, TheReplicasCertificateNamesThePoolsRole) {
  EXPECT_EQ(RolloutServerName(Pool()), "gen.rl.rollout.sluice.internal");
  EXPECT_EQ(RolloutTlsSecretName("gen"), "gen-rollout-tls");
  const json meta = RolloutTlsSecretMeta(Pool());
  EXPECT_EQ(meta["name"], "gen-rollout-tls");
  EXPECT_EQ(meta["namespace"], "rl");
  EXPECT_EQ(meta["ownerReferences"][0]["kind"], "RolloutPool");
  EXPECT_EQ(meta["labels"]["sluice.dev/pool"], "gen");
  // A long or dotted pool name still gives a name a certificate can hold.
  json dotted = Pool();
  dotted["metadata"]["name"] = "gen.v2." + std::string(80, 'x');
  EXPECT_TRUE(tls::ValidateHosts({RolloutServerName(dotted)}).ok()) << RolloutServerName(dotted);
}

// The operator's token for the replicas' control routes is the pool's own.
TEST(RolloutPoolChildrenTest, TheControlTokenSecretIsThePools) {
  EXPECT_EQ(RolloutControlTokenSecretName("gen"), "gen-control-token");
  const json secret = DesiredRolloutControlTokenSecret(Pool(), "abc123");
  EXPECT_EQ(secret["kind"], "Secret");
  EXPECT_EQ(secret["type"], "Opaque");
  EXPECT_EQ(secret["stringData"], json({{"token", "abc123"}}));
  EXPECT_EQ(secret["metadata"]["name"], "gen-control-token");
  EXPECT_EQ(secret["metadata"]["namespace"], "rl");
  EXPECT_EQ(secret["metadata"]["ownerReferences"][0]["kind"], "RolloutPool");
  EXPECT_EQ(secret["metadata"]["labels"]["sluice.dev/pool"], "gen");
}

TEST(RolloutPoolChildrenTest, PodWithoutPlacementOrWithManyPolicies) {
  json pool = Pool();
  pool["spec"].erase("placement");
  pool["spec"]["policies"] = {"critic", "actor"};
  const json pod = DesiredReplicaPod(pool, {}, nullptr, 0, Dataflow(), WorkerImages{});
  EXPECT_EQ(pod["metadata"]["name"], "gen-0");
  const json& labels = pod["metadata"]["labels"];
  EXPECT_FALSE(labels.contains(kRegionLabel));
  EXPECT_FALSE(labels.contains(kPolicyLabel));
  EXPECT_EQ(labels[kReplicaIndexLabel], "0");
  const json c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["args"][3], "--policies=actor,critic");
  EXPECT_EQ(c["env"][2], json({{"name", "SLUICE_REGION"}, {"value", ""}}));
  // Only the template's nodeSelector applies.
  EXPECT_EQ(pod["spec"]["nodeSelector"],
            json({{"pool", "inference"}, {"topology.kubernetes.io/region", "any"}}));
}

TEST(RolloutPoolChildrenTest, ArgsFollowTheWorkerContract) {
  const json pool = Pool();
  const json& region = pool["spec"]["placement"]["regions"][1];
  const json pod = DesiredReplicaPod(pool, {}, &region, 0, Dataflow(), WorkerImages{});
  const json c = pod["spec"]["containers"][0];
  const std::vector<std::string> want = {
      "--dataflow-url=https://arith.rl.svc:8080",
      "--token-file=/var/run/sluice/token/token",
      "--control-token-file=/var/run/sluice/control-token/token",
      "--policies=actor",
      "--engine=builtin",
      "--tensor-parallel-size=2",
      "--max-batch-tokens=16384",
      "--max-concurrent-sequences=128",
      "--kv-cache-fraction=0.9",
      "--address=$(POD_IP)",
      "--port=8080",
      "--metrics-require-token=false",
      "--region=$(SLUICE_REGION)",
      "--replica=$(POD_NAME)",
      "--policy-config=/etc/sluice/config/rollout.json",
      "--sandbox-isolation=namespaces",
      "--tls-ca-file=/var/run/sluice/dataflow-ca/ca.crt",
      "--tls-cert-file=/var/run/sluice/tls/tls.crt",
      "--tls-key-file=/var/run/sluice/tls/tls.key",
      "--relay-server-name=gen.rl.rollout.sluice.internal",
      "--enforce-eager",
      "--seed=7",
  };
  EXPECT_EQ(Strings(c["args"]), want);
  EXPECT_EQ(c["name"], "rollout");
  EXPECT_EQ(c["image"], "sluice/rollout:0.1.0");
  EXPECT_EQ(c["imagePullPolicy"], "IfNotPresent");
}

// An HTTP environment's own credential: only the Secret key the Dataflow names is mounted and
// passed; without tokenSecretRef the worker gets no environment token at all (it never sends the
// experiment's). Changing the reference rolls the replicas (template hash).
TEST(RolloutPoolChildrenTest, TheEnvironmentTokenComesOnlyFromItsOwnSecret) {
  const json pool = Pool();
  json df = Dataflow();
  df["spec"]["workflow"]["environment"] = {{"url", "http://env.rl:8080"}};
  auto env_token_args = [](const json& pod) {
    std::vector<std::string> out;
    for (const std::string& a : Strings(pod["spec"]["containers"][0]["args"])) {
      if (a.rfind("--environment-token", 0) == 0) out.push_back(a);
    }
    return out;
  };
  const json plain = DesiredReplicaPod(pool, {}, nullptr, 0, df, WorkerImages{});
  EXPECT_TRUE(env_token_args(plain).empty());
  for (const json& v : plain["spec"]["volumes"]) EXPECT_NE(v["name"], "environment-token");

  const std::vector<std::pair<json, std::string>> refs = {
      {{{"name", "env-creds"}}, "token"}, {{{"name", "env-creds"}, {"key", "api"}}, "api"}};
  for (const auto& [ref, key] : refs) {
    json with = df;
    with["spec"]["workflow"]["environment"]["tokenSecretRef"] = ref;
    const json pod = DesiredReplicaPod(pool, {}, nullptr, 0, with, WorkerImages{});
    EXPECT_EQ(env_token_args(pod),
              std::vector<std::string>{
                  "--environment-token-file=/var/run/sluice/environment-token/token"});
    json volume;
    for (const json& v : pod["spec"]["volumes"]) {
      if (v["name"] == "environment-token") volume = v;
    }
    EXPECT_EQ(
        volume,
        json({{"name", "environment-token"},
              {"secret",
               {{"secretName", "env-creds"}, {"items", {{{"key", key}, {"path", "token"}}}}}}}))
        << pod["spec"]["volumes"].dump();
    json mount;
    for (const json& m : pod["spec"]["containers"][0]["volumeMounts"]) {
      if (m["name"] == "environment-token") mount = m;
    }
    EXPECT_EQ(mount, json({{"name", "environment-token"},
                           {"mountPath", "/var/run/sluice/environment-token"},
                           {"readOnly", true}}));
    EXPECT_NE(PoolTemplateHash(pool, {}, &with), PoolTemplateHash(pool, {}, &df));
    EXPECT_EQ(pod["metadata"]["labels"]["sluice.dev/template-hash"],
              PoolTemplateHash(pool, {}, &with));
  }
  EXPECT_EQ(PoolTemplateHash(pool, {}, &df), PoolTemplateHash(pool, {}));
}

// spec.sandbox.isolation reaches the worker's flag, and changing it rolls the replicas.
TEST(RolloutPoolChildrenTest, TheSandboxIsolationIsTheWorkersFlag) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"Namespaces", "namespaces"}, {"BestEffort", "best-effort"}, {"LimitsOnly", "limits-only"}};
  const json plain = Pool();
  for (const auto& [isolation, flag] : cases) {
    json pool = Pool();
    pool["spec"]["sandbox"]["isolation"] = isolation;
    const json pod = DesiredReplicaPod(pool, {}, nullptr, 0, Dataflow(), WorkerImages{});
    const std::vector<std::string> args = Strings(pod["spec"]["containers"][0]["args"]);
    EXPECT_NE(std::find(args.begin(), args.end(), "--sandbox-isolation=" + flag), args.end())
        << isolation;
    // The default keeps the hash of pods made before the field existed.
    EXPECT_EQ(PoolTemplateHash(pool, {}) == PoolTemplateHash(plain, {}), flag == "namespaces")
        << isolation;
  }
}

TEST(RolloutPoolChildrenTest, ArgsUseEngineDefaults) {
  json pool = Pool();
  pool["spec"]["engine"] = json::object();
  pool["spec"]["policies"] = {"b", "a", "b"};
  const json pod = DesiredReplicaPod(pool, {}, nullptr, 1, Dataflow(), WorkerImages{});
  const std::vector<std::string> args = Strings(pod["spec"]["containers"][0]["args"]);
  ASSERT_EQ(args.size(), 20u);
  EXPECT_EQ(args[3], "--policies=a,b");
  EXPECT_EQ(args[4], "--engine=builtin");
  EXPECT_EQ(args[5], "--tensor-parallel-size=1");
  EXPECT_EQ(args[6], "--max-batch-tokens=8192");
  EXPECT_EQ(args[7], "--max-concurrent-sequences=64");
  EXPECT_EQ(args[8], "--kv-cache-fraction=0.85");
}

TEST(RolloutPoolChildrenTest, ImageComesFromTheEngineOrTheOperator) {
  WorkerImages images;
  images.rollout = "registry.local/rollout:9";
  images.pull_policy = "Always";
  json pool = Pool();
  EXPECT_EQ(
      DesiredReplicaPod(pool, {}, nullptr, 0, Dataflow(), images)["spec"]["containers"][0]["image"],
      "registry.local/rollout:9");
  pool["spec"]["engine"]["image"] = "vllm/vllm-openai:v0.6";
  const json c =
      DesiredReplicaPod(pool, {}, nullptr, 0, Dataflow(), images)["spec"]["containers"][0];
  EXPECT_EQ(c["image"], "vllm/vllm-openai:v0.6");
  EXPECT_EQ(c["imagePullPolicy"], "Always");
}

TEST(RolloutPoolChildrenTest, EnvComesInContractOrderThenTheTemplates) {
  const json pool = Pool();
  const json& region = pool["spec"]["placement"]["regions"][0];
  const json env = DesiredReplicaPod(pool, {}, &region, 0, Dataflow(),
                                     WorkerImages{})["spec"]["containers"][0]["env"];
  const json want = json::parse(R"([
    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    {"name": "SLUICE_REGION", "value": "us-east"},
    {"name": "TMPDIR", "value": "/tmp"},
    {"name": "CUDA_CACHE_PATH", "value": "/tmp/cuda-cache"},
    {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "t"}}},
    {"name": "LOG_LEVEL", "value": "debug"}
  ])");
  EXPECT_EQ(env, want);
}

TEST(RolloutPoolChildrenTest, ResourcesRequestEqualsLimitWithTheGpuResourceName) {
  const json pod = DesiredReplicaPod(Pool(), {}, nullptr, 0, Dataflow(), WorkerImages{});
  const json want = {{"cpu", "8"}, {"memory", "64Gi"}, {"amd.com/gpu", "2"}};
  const json res = pod["spec"]["containers"][0]["resources"];
  EXPECT_EQ(res["requests"], want);
  EXPECT_EQ(res["limits"], want);

  json cpu_only = Pool();
  cpu_only["spec"]["template"]["resources"] = {{"gpus", 0}, {"cpu", "500m"}};
  const json cpu_res = DesiredReplicaPod(cpu_only, {}, nullptr, 0, Dataflow(),
                                         WorkerImages{})["spec"]["containers"][0]["resources"];
  // The unset memory is requested at the rollout default, without a limit.
  EXPECT_EQ(cpu_res["requests"], json({{"cpu", "500m"}, {"memory", "2Gi"}}));
  EXPECT_EQ(cpu_res["limits"], json({{"cpu", "500m"}}));

  json default_name = Pool();
  default_name["spec"]["template"]["resources"] = {{"gpus", 1}};
  EXPECT_EQ(DesiredReplicaPod(default_name, {}, nullptr, 0, Dataflow(),
                              WorkerImages{})["spec"]["containers"][0]["resources"]["limits"],
            json({{"nvidia.com/gpu", "1"}}));

  // No resources: the rollout defaults (1 CPU, 2Gi) are requested, nothing is limited.
  json none = Pool();
  none["spec"]["template"].erase("resources");
  EXPECT_EQ(DesiredReplicaPod(none, {}, nullptr, 0, Dataflow(),
                              WorkerImages{})["spec"]["containers"][0]["resources"],
            json({{"requests", {{"cpu", "1"}, {"memory", "2Gi"}}}}));
  json empty = Pool();
  empty["spec"]["template"]["resources"] = {{"gpus", 0}, {"gpuResourceName", "nvidia.com/gpu"}};
  EXPECT_EQ(DesiredReplicaPod(empty, {}, nullptr, 0, Dataflow(),
                              WorkerImages{})["spec"]["containers"][0]["resources"],
            json({{"requests", {{"cpu", "1"}, {"memory", "2Gi"}}}}));
}

TEST(RolloutPoolChildrenTest, NodeSelectorMergesTemplateAndRegionRegionWins) {
  const json pool = Pool();
  const json& us = pool["spec"]["placement"]["regions"][0];
  EXPECT_EQ(DesiredReplicaPod(pool, {}, &us, 0, Dataflow(), WorkerImages{})["spec"]["nodeSelector"],
            json({{"pool", "inference"},
                  {"topology.kubernetes.io/region", "us-east-1"},
                  {"nvidia.com/gpu.product", "H100"}}));
  // A region without a nodeSelector adds nothing.
  const json& eu = pool["spec"]["placement"]["regions"][1];
  EXPECT_EQ(DesiredReplicaPod(pool, {}, &eu, 0, Dataflow(), WorkerImages{})["spec"]["nodeSelector"],
            json({{"pool", "inference"}, {"topology.kubernetes.io/region", "any"}}));
  // Neither: no nodeSelector at all.
  json bare = Pool();
  bare["spec"]["template"].erase("nodeSelector");
  EXPECT_FALSE(DesiredReplicaPod(bare, {}, &eu, 0, Dataflow(), WorkerImages{})["spec"].contains(
      "nodeSelector"));
}

TEST(RolloutPoolChildrenTest, PodSpecProbesVolumesAndTolerations) {
  const json pool = Pool();
  const json& region = pool["spec"]["placement"]["regions"][0];
  const json spec = DesiredReplicaPod(pool, {}, &region, 0, Dataflow(), WorkerImages{})["spec"];
  EXPECT_EQ(spec["restartPolicy"], "Always");
  EXPECT_EQ(spec["enableServiceLinks"], false);
  EXPECT_EQ(spec["terminationGracePeriodSeconds"], 120);  // 90 + 30.
  EXPECT_EQ(spec["serviceAccountName"], "rollout-sa");
  EXPECT_EQ(spec["tolerations"],
            json::parse(R"([{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}])"));
  EXPECT_EQ(spec["volumes"],
            json::parse(R"([{"name": "token", "secret": {"secretName": "arith-rollout-token"}},
                            {"name": "config", "configMap": {"name": "gen-rollout-config"}},
                            {"name": "dataflow-ca", "configMap": {"name": "arith-ca"}},
                            {"name": "tls", "secret": {"secretName": "gen-rollout-tls"}},
                            {"name": "control-token",
                             "secret": {"secretName": "gen-control-token"}},
                            {"name": "tmp", "emptyDir": {}}])"));
  ASSERT_EQ(spec["containers"].size(), 1u);
  const json c = spec["containers"][0];
  EXPECT_EQ(c["volumeMounts"],
            json::parse(
                R"([{"name": "token", "mountPath": "/var/run/sluice/token", "readOnly": true},
                    {"name": "config", "mountPath": "/etc/sluice/config", "readOnly": true},
                    {"name": "dataflow-ca", "mountPath": "/var/run/sluice/dataflow-ca",
                     "readOnly": true},
                    {"name": "tls", "mountPath": "/var/run/sluice/tls", "readOnly": true},
                    {"name": "control-token", "mountPath": "/var/run/sluice/control-token",
                     "readOnly": true},
                    {"name": "tmp", "mountPath": "/tmp"}])"));
  EXPECT_EQ(c["ports"],
            json::parse(R"([{"name": "http", "containerPort": 8080, "protocol": "TCP"}])"));
  // The replica serves HTTPS (the pool's certificate from the namespace's CA).
  EXPECT_EQ(c["readinessProbe"],
            json::parse(R"({"httpGet": {"path": "/readyz", "port": "http", "scheme": "HTTPS"},
                            "periodSeconds": 2, "failureThreshold": 3})"));
  EXPECT_EQ(c["livenessProbe"],
            json::parse(R"({"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTPS"},
                            "periodSeconds": 10, "failureThreshold": 6})"));

  json defaults = Pool();
  defaults["spec"].erase("drain");
  defaults["spec"]["template"].erase("tolerations");
  defaults["spec"]["template"].erase("serviceAccountName");
  const json dspec =
      DesiredReplicaPod(defaults, {}, nullptr, 0, Dataflow(), WorkerImages{})["spec"];
  EXPECT_EQ(dspec["terminationGracePeriodSeconds"], 150);  // Default 120 + 30.
  EXPECT_FALSE(dspec.contains("tolerations"));
  EXPECT_FALSE(dspec.contains("serviceAccountName"));
}

TEST(RolloutPoolChildrenTest, MatchesComparesTheTemplateHash) {
  const json pool = Pool();
  const json& region = pool["spec"]["placement"]["regions"][0];
  const json desired = DesiredReplicaPod(pool, {}, &region, 0, Dataflow(), WorkerImages{});
  json existing = desired;
  existing["metadata"]["resourceVersion"] = "42";
  existing["status"] = {{"phase", "Running"}};
  existing["spec"]["nodeName"] = "node-1";
  EXPECT_TRUE(ReplicaPodMatches(desired, existing));

  // Scaling builds the same pods.
  json scaled = pool;
  scaled["spec"]["replicas"] = 10;
  EXPECT_TRUE(ReplicaPodMatches(
      DesiredReplicaPod(scaled, {}, &region, 0, Dataflow(), WorkerImages{}), existing));
  // An engine change does not.
  json changed = pool;
  changed["spec"]["engine"]["kvCacheFraction"] = 0.5;
  EXPECT_FALSE(ReplicaPodMatches(
      DesiredReplicaPod(changed, {}, &region, 0, Dataflow(), WorkerImages{}), existing));
  // A pod without the label never matches.
  json unlabelled = existing;
  unlabelled["metadata"]["labels"].erase(kTemplateHashLabel);
  EXPECT_FALSE(ReplicaPodMatches(desired, unlabelled));
  EXPECT_FALSE(ReplicaPodMatches(unlabelled, unlabelled));
}

json PvcPolicy(const std::string& name, const std::string& claim, const std::string& path) {
  return {{"apiVersion", "sluice.dev/v1alpha1"},
          {"kind", "Policy"},
          {"metadata", {{"name", name}, {"namespace", "rl"}}},
          {"spec", {{"model", {{"source", {{"pvc", {{"claimName", claim}, {"path", path}}}}}}}}}};
}

TEST(RolloutPoolChildrenTest, PodMountsEachHostedPolicysClaimReadOnlyAtItsOwnDirectory) {
  json pool = Pool();
  pool["spec"]["policies"] = {"actor", "judge", "critic"};
  const std::vector<json> policies = {
      PvcPolicy("judge", "judge-weights", "/qwen3"), PvcPolicy("actor", "actor-weights", "/"),
      json::parse(R"({"metadata": {"name": "critic", "namespace": "rl"},
                      "spec": {"model": {"source": {"path": "/models/critic"}}}})"),
      // Not hosted by the pool: ignored.
      PvcPolicy("other", "other-weights", "/")};
  const json pod = DesiredReplicaPod(pool, policies, nullptr, 0, Dataflow(), WorkerImages{});
  const json& volumes = pod["spec"]["volumes"];
  const json& mounts = pod["spec"]["containers"][0]["volumeMounts"];
  const std::string actor_volume = "model-" + JsonHash(json("actor-weights"));
  const std::string judge_volume = "model-" + JsonHash(json("judge-weights"));
  // token, config, the two claims, the dataflow's CA, the serving certificate, the control
  // token, then the writable emptyDir tmp.
  ASSERT_EQ(volumes.size(), 8u) << volumes.dump();
  ASSERT_EQ(mounts.size(), 8u) << mounts.dump();
  EXPECT_EQ(volumes[4]["name"], "dataflow-ca");
  EXPECT_EQ(volumes[5]["name"], "tls");
  EXPECT_EQ(volumes[6]["name"], "control-token");
  EXPECT_EQ(volumes[7]["name"], "tmp");
  EXPECT_EQ(volumes[0]["name"], "token");
  EXPECT_EQ(volumes[1]["name"], "config");
  EXPECT_EQ(mounts[0]["name"], "token");
  EXPECT_EQ(mounts[1]["name"], "config");
  // Volumes sorted by name, mounts by path: the order of `policies` does not matter.
  const json want_volumes = {
      {{"name", actor_volume},
       {"persistentVolumeClaim", {{"claimName", "actor-weights"}, {"readOnly", true}}}},
      {{"name", judge_volume},
       {"persistentVolumeClaim", {{"claimName", "judge-weights"}, {"readOnly", true}}}}};
  const json sorted_volumes =
      actor_volume < judge_volume ? want_volumes : json::array({want_volumes[1], want_volumes[0]});
  EXPECT_EQ(json::array({volumes[2], volumes[3]}), sorted_volumes);
  EXPECT_EQ(mounts[2], json({{"name", actor_volume},
                             {"mountPath", "/var/lib/sluice/model/actor"},
                             {"readOnly", true}}));
  EXPECT_EQ(mounts[3], json({{"name", judge_volume},
                             {"mountPath", "/var/lib/sluice/model/judge"},
                             {"readOnly", true}}));
  // Volume names are DNS labels whatever the claim's name.
  for (const json& v : volumes) EXPECT_LE(v["name"].get<std::string>().size(), 63u);
  // Same policies in another order: the same pod.
  const std::vector<json> reversed(policies.rbegin(), policies.rend());
  EXPECT_EQ(DesiredReplicaPod(pool, reversed, nullptr, 0, Dataflow(), WorkerImages{}), pod);
}

TEST(RolloutPoolChildrenTest, TwoPoliciesOnOneClaimShareItsVolume) {
  json pool = Pool();
  pool["spec"]["policies"] = {"actor", "judge"};
  const json pod = DesiredReplicaPod(
      pool, {PvcPolicy("actor", "models", "/a"), PvcPolicy("judge", "models", "/b")}, nullptr, 0,
      Dataflow(), WorkerImages{});
  const json& volumes = pod["spec"]["volumes"];
  const json& mounts = pod["spec"]["containers"][0]["volumeMounts"];
  // token, config, the claim, the dataflow's CA, tls, the control token, tmp.
  ASSERT_EQ(volumes.size(), 7u);
  ASSERT_EQ(mounts.size(), 8u);
  const std::string volume = "model-" + JsonHash(json("models"));
  EXPECT_EQ(volumes[2]["name"], volume);
  EXPECT_EQ(mounts[2]["name"], volume);
  EXPECT_EQ(mounts[2]["mountPath"], "/var/lib/sluice/model/actor");
  EXPECT_EQ(mounts[3]["name"], volume);
  EXPECT_EQ(mounts[3]["mountPath"], "/var/lib/sluice/model/judge");
}

TEST(RolloutPoolChildrenTest, BuiltinAndPathPoliciesAddNoVolume) {
  json pool = Pool();
  pool["spec"]["policies"] = {"actor", "critic"};
  const std::vector<json> policies = {json::parse(R"({"metadata": {"name": "actor"},
                      "spec": {"model": {"source": {"builtin": {}}}}})"),
                                      json::parse(R"({"metadata": {"name": "critic"},
                      "spec": {"model": {"source": {"path": "/models/critic"}}}})")};
  const json pod = DesiredReplicaPod(pool, policies, nullptr, 0, Dataflow(), WorkerImages{});
  EXPECT_EQ(pod, DesiredReplicaPod(pool, {}, nullptr, 0, Dataflow(), WorkerImages{}));
  // token, config, the dataflow's CA, tls, the control token, tmp.
  EXPECT_EQ(pod["spec"]["volumes"].size(), 6u);
  EXPECT_EQ(pod["spec"]["containers"][0]["volumeMounts"].size(), 6u);
  // And they leave the template hash as it was without any Policy.
  EXPECT_EQ(PoolTemplateHash(pool, policies), PoolTemplateHash(pool, {}));
}

TEST(RolloutPoolChildrenTest, TemplateHashFollowsTheModelMounts) {
  json pool = Pool();
  pool["spec"]["policies"] = {"actor", "judge"};
  const json actor = PvcPolicy("actor", "actor-weights", "/");
  const json judge = PvcPolicy("judge", "judge-weights", "/");
  const std::string none = PoolTemplateHash(pool, {});
  const std::string one = PoolTemplateHash(pool, {actor});
  const std::string two = PoolTemplateHash(pool, {actor, judge});
  EXPECT_NE(one, none);  // A Policy that appears with a claim adds a mount.
  EXPECT_NE(two, one);
  EXPECT_EQ(PoolTemplateHash(pool, {judge, actor}), two);
  // Another claim: another mount.
  EXPECT_NE(PoolTemplateHash(pool, {actor, PvcPolicy("judge", "judge-v2", "/")}), two);
  // The path inside the claim is read by the worker from rollout.json, not mounted.
  EXPECT_EQ(PoolTemplateHash(pool, {actor, PvcPolicy("judge", "judge-weights", "/x")}), two);
  // The pod carries the hash it was built with.
  const json pod = DesiredReplicaPod(pool, {actor, judge}, nullptr, 0, Dataflow(), WorkerImages{});
  EXPECT_EQ(pod["metadata"]["labels"][kTemplateHashLabel], two);
  EXPECT_FALSE(ReplicaPodMatches(
      pod, DesiredReplicaPod(pool, {actor}, nullptr, 0, Dataflow(), WorkerImages{})));
}

TEST(RolloutPoolChildrenTest, LongPoolNameGivesValidLabelsAndNames) {
  json pool = Pool();
  const std::string long_name = std::string(120, 'g') + ".example";
  pool["metadata"]["name"] = long_name;
  const json& region = pool["spec"]["placement"]["regions"][0];
  const json pod = DesiredReplicaPod(pool, {}, &region, 3, Dataflow(), WorkerImages{});
  const json& labels = pod["metadata"]["labels"];
  for (const auto& [key, value] : labels.items()) {
    const std::string v = value.get<std::string>();
    EXPECT_LE(v.size(), 63u) << key;
    EXPECT_EQ(v, LabelValue(v)) << key << " is not a valid label value: " << v;
  }
  EXPECT_EQ(labels[kPoolLabel], LabelValue(long_name));
  EXPECT_EQ(labels[kInstanceLabel], LabelValue(long_name));
  EXPECT_NE(labels[kPoolLabel], long_name);
  const std::string pod_name = pod["metadata"]["name"];
  EXPECT_LE(pod_name.size(), 63u);
  EXPECT_EQ(pod_name.substr(pod_name.size() - 2), "-3");
  EXPECT_EQ(pod_name.find('.'), std::string::npos);
  // The ConfigMap's name fits a DNS subdomain; it is the one the pod mounts.
  const std::string very_long(250, 'g');
  json very = Pool();
  very["metadata"]["name"] = very_long;
  const json cm = DesiredRolloutConfigMap(very, {});
  const std::string cm_name = cm["metadata"]["name"];
  EXPECT_LE(cm_name.size(), 253u);
  EXPECT_EQ(cm_name.substr(cm_name.size() - 15), "-rollout-config");
  EXPECT_EQ(cm_name, RolloutConfigMapName(very_long));
  EXPECT_EQ(DesiredReplicaPod(very, {}, nullptr, 0, Dataflow(),
                              WorkerImages{})["spec"]["volumes"][1]["configMap"]["name"],
            cm_name);
  EXPECT_EQ(cm["metadata"]["labels"][kPoolLabel], LabelValue(very_long));
}

TEST(RolloutPoolChildrenTest, ReplicaIsHardenedWithAReadOnlyRootAndAScratchDir) {
  json pool = Pool();
  pool["spec"]["engine"] = {{"type", "builtin"}};
  const json spec = DesiredReplicaPod(pool, {}, nullptr, 0, Dataflow(), WorkerImages{})["spec"];
  EXPECT_EQ(spec["securityContext"], json::parse(R"({"runAsNonRoot": true, "runAsUser": 65532,
      "runAsGroup": 65532, "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}})"));
  EXPECT_EQ(spec["automountServiceAccountToken"], false);
  const json& c = spec["containers"][0];
  EXPECT_EQ(c["securityContext"], json::parse(R"({"allowPrivilegeEscalation": false,
      "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": true})"));
  // The built-in engine writes only under /tmp: no weights volume.
  EXPECT_EQ(spec["volumes"],
            json::parse(R"([{"name": "token", "secret": {"secretName": "arith-rollout-token"}},
                            {"name": "config", "configMap": {"name": "gen-rollout-config"}},
                            {"name": "dataflow-ca", "configMap": {"name": "arith-ca"}},
                            {"name": "tls", "secret": {"secretName": "gen-rollout-tls"}},
                            {"name": "control-token",
                             "secret": {"secretName": "gen-control-token"}},
                            {"name": "tmp", "emptyDir": {}}])"));
  EXPECT_EQ(c["volumeMounts"].back(), json::parse(R"({"name": "tmp", "mountPath": "/tmp"})"));
  // An external engine's volumes and its container are external_engine_test.cpp's.
}

// The operator's --rollout-seccomp-profile: a Localhost profile that lets the sandbox make its
// namespaces (RuntimeDefault denies them), on the worker container only, unless the template
// names a profile of its own.
TEST(RolloutPoolChildrenTest, TheOperatorsSeccompProfileGoesToTheWorkerUnlessTheTemplateNamesOne) {
  json pool = Pool();
  pool["spec"]["engine"] = {{"type", "builtin"}};
  WorkerImages images;
  images.rollout_seccomp_profile = "sluice/rollout.json";
  json spec = DesiredReplicaPod(pool, {}, nullptr, 0, Dataflow(), images)["spec"];
  EXPECT_EQ(spec["containers"][0]["securityContext"], json::parse(R"({
      "seccompProfile": {"type": "Localhost", "localhostProfile": "sluice/rollout.json"},
      "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]},
      "readOnlyRootFilesystem": true})"));
  EXPECT_EQ(spec["securityContext"]["seccompProfile"], json({{"type", "RuntimeDefault"}}));
  // Without the setting the container inherits the pod's RuntimeDefault.
  spec = DesiredReplicaPod(pool, {}, nullptr, 0, Dataflow(), WorkerImages{})["spec"];
  EXPECT_FALSE(spec["containers"][0]["securityContext"].contains("seccompProfile"));
  // A profile the template names wins, at either level.
  json own = pool;
  own["spec"]["template"]["containerSecurityContext"] = {
      {"seccompProfile", {{"type", "Unconfined"}}}};
  spec = DesiredReplicaPod(own, {}, nullptr, 0, Dataflow(), images)["spec"];
  EXPECT_EQ(spec["containers"][0]["securityContext"]["seccompProfile"],
            json({{"type", "Unconfined"}}));
  json pod_level = pool;
  pod_level["spec"]["template"]["securityContext"] = {
      {"seccompProfile", {{"type", "Localhost"}, {"localhostProfile", "mine.json"}}}};
  spec = DesiredReplicaPod(pod_level, {}, nullptr, 0, Dataflow(), images)["spec"];
  EXPECT_FALSE(spec["containers"][0]["securityContext"].contains("seccompProfile"));
  EXPECT_EQ(spec["securityContext"]["seccompProfile"]["localhostProfile"], "mine.json");
}

TEST(RolloutPoolChildrenTest, TemplateSecurityContextsOverrideTheDefaultsFieldByField) {
  json pool = Pool();
  pool["spec"]["template"]["securityContext"] = json::parse(R"({"runAsUser": 1000,
      "fsGroup": 2000, "supplementalGroups": [3000],
      "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/rollout.json"}})");
  pool["spec"]["template"]["containerSecurityContext"] = json::parse(R"({"runAsGroup": 1001,
      "readOnlyRootFilesystem": false, "capabilities": {"add": ["NET_BIND_SERVICE"]},
      "seccompProfile": {"type": "RuntimeDefault"}})");
  const json spec = DesiredReplicaPod(pool, {}, nullptr, 0, Dataflow(), WorkerImages{})["spec"];
  // Set fields win; runAsNonRoot and runAsGroup keep the restricted defaults.
  EXPECT_EQ(spec["securityContext"], json::parse(R"({"runAsUser": 1000, "fsGroup": 2000,
      "supplementalGroups": [3000],
      "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/rollout.json"},
      "runAsNonRoot": true, "runAsGroup": 65532})"));
  // Likewise in the container: escalation stays off and the other capabilities dropped.
  EXPECT_EQ(spec["containers"][0]["securityContext"], json::parse(R"({"runAsGroup": 1001,
      "readOnlyRootFilesystem": false,
      "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
      "seccompProfile": {"type": "RuntimeDefault"}, "allowPrivilegeEscalation": false})"));
  // The template is what a replica is made from: changing it rolls the replicas.
  EXPECT_NE(PoolTemplateHash(pool, {}), PoolTemplateHash(Pool(), {}));
}

}  // namespace rolloutpool_desired_pods_test
}  // namespace sluice::controllers

namespace sluice::controllers {
namespace rolloutpool_desired_pods_test {

TEST(RolloutConfigMapTest, HoldsThePoolAndItsPoliciesSortedByName) {
  const json pool = Pool();
  const json b = json::parse(R"({"apiVersion": "sluice.dev/v1alpha1", "kind": "Policy",
      "metadata": {"name": "judge", "namespace": "rl", "uid": "u-b", "resourceVersion": "9"},
      "spec": {"model": {"source": {"path": "/models/q"}}}, "status": {"version": 3}})");
  const json a = json::parse(R"({"metadata": {"name": "actor", "namespace": "rl"},
      "spec": {"model": {"source": {"builtin": {}}}}})");
  const json cm = DesiredRolloutConfigMap(pool, {b, a});
  EXPECT_EQ(cm["kind"], "ConfigMap");
  EXPECT_EQ(cm["metadata"]["name"], "gen-rollout-config");
  EXPECT_EQ(cm["metadata"]["namespace"], "rl");
  EXPECT_EQ(cm["metadata"]["ownerReferences"][0]["uid"], "u-pool");
  EXPECT_EQ(cm["metadata"]["labels"]["sluice.dev/pool"], "gen");
  const json config = json::parse(cm["data"]["rollout.json"].get<std::string>());
  EXPECT_EQ(config["pool"]["metadata"]["name"], "gen");
  ASSERT_EQ(config["policies"].size(), 2u);
  EXPECT_EQ(config["policies"][0]["metadata"]["name"], "actor");
  EXPECT_EQ(config["policies"][0]["kind"], "Policy");
  EXPECT_EQ(config["policies"][1]["spec"]["model"]["source"]["path"], "/models/q");
  // Only what the worker needs: no status, uid or resourceVersion (they would churn the data).
  EXPECT_FALSE(config["policies"][1].contains("status"));
  EXPECT_FALSE(config["policies"][1]["metadata"].contains("resourceVersion"));
}

}  // namespace rolloutpool_desired_pods_test
}  // namespace sluice::controllers
