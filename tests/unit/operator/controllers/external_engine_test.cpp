// RolloutPool replicas with an external inference server (spec.engine.type vllm or sglang): the
// engine container beside sluice-rollout (pure functions).
#include "operator/controllers/external_engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "operator/controllers/rolloutpool/desired_pods.h"

namespace sluice::controllers {
namespace external_engine_test {

using nlohmann::json;

json VllmPool() {
  return json::parse(R"({
    "apiVersion": "sluice.dev/v1alpha1", "kind": "RolloutPool",
    "metadata": {"name": "gen", "namespace": "rl", "uid": "u-pool", "generation": 3},
    "spec": {
      "policies": ["actor"],
      "dataflowRef": {"name": "arith"},
      "engine": {"type": "vllm", "image": "registry.local/vllm:custom", "tensorParallelSize": 2,
                 "maxBatchTokens": 16384, "maxConcurrentSequences": 128, "kvCacheFraction": 0.9,
                 "args": ["--enforce-eager", "--seed=7"]},
      "template": {
        "resources": {"gpus": 2, "cpu": 8, "memory": "64Gi"},
        "env": [{"name": "LOG_LEVEL", "value": "debug"}]
      },
      "replicas": 2
    }
  })");
}

json Dataflow() {
  return json::parse(R"({"apiVersion": "sluice.dev/v1alpha1", "kind": "Dataflow",
                         "metadata": {"name": "arith", "namespace": "rl", "uid": "u-df"}})");
}

json PolicyWithSource(const std::string& name, const json& source) {
  return {{"apiVersion", "sluice.dev/v1alpha1"},
          {"kind", "Policy"},
          {"metadata", {{"name", name}, {"namespace", "rl"}}},
          {"spec", {{"model", {{"source", source}}}}}};
}

std::vector<std::string> Strings(const json& array) {
  return array.get<std::vector<std::string>>();
}

TEST(ExternalEngineTest, TheServerLoadsThePolicysDirectory) {
  struct Case {
    json source;
    std::string want;  // "" for an error.
  };
  const std::vector<Case> cases = {
      {{{"pvc", {{"claimName", "w"}, {"path", "/"}}}}, "/var/lib/sluice/model/actor"},
      {{{"pvc", {{"claimName", "w"}}}}, "/var/lib/sluice/model/actor"},
      {{{"pvc", {{"claimName", "w"}, {"path", "/qwen3/"}}}}, "/var/lib/sluice/model/actor/qwen3"},
      {{{"path", "/models/qwen3-8b"}}, "/models/qwen3-8b"},
      {{{"builtin", json::object()}}, ""},
      {{{"uri", "https://example.com/m"}}, ""},
  };
  for (const Case& c : cases) {
    Result<std::string> dir = ExternalEngineModelDir(PolicyWithSource("actor", c.source));
    if (c.want.empty()) {
      ASSERT_FALSE(dir.ok()) << c.source.dump();
      EXPECT_EQ(dir.status().field(), "spec.model.source");
      EXPECT_NE(dir.status().message().find("Policy \"actor\""), std::string::npos);
      EXPECT_NE(dir.status().message().find("pvc or path"), std::string::npos);
    } else {
      ASSERT_TRUE(dir.ok()) << dir.status().ToString();
      EXPECT_EQ(*dir, c.want) << c.source.dump();
    }
  }
  EXPECT_TRUE(UsesExternalEngine(VllmPool()));
  json builtin = VllmPool();
  builtin["spec"]["engine"]["type"] = "builtin";
  EXPECT_FALSE(UsesExternalEngine(builtin));
  builtin["spec"].erase("engine");
  EXPECT_FALSE(UsesExternalEngine(builtin));
}

TEST(ExternalEngineTest, AVllmReplicaRunsTheServerBesideTheWorker) {
  WorkerImages images;
  images.rollout = "registry.local/rollout:9";
  json policy = PolicyWithSource("actor", {{"pvc", {{"claimName", "w"}, {"path", "/m"}}}});
  policy["spec"]["model"]["dtype"] = "float16";
  const json pod = DesiredReplicaPod(VllmPool(), {policy}, nullptr, 0, Dataflow(), images);
  const json& spec = pod["spec"];
  ASSERT_EQ(spec["containers"].size(), 2u);

  // The worker: its own image whatever spec.engine.image says, pointed at the server over the
  // pod's address, without the engine's arguments or the replica's GPUs.
  const json& worker = spec["containers"][0];
  EXPECT_EQ(worker["name"], "rollout");
  EXPECT_EQ(worker["image"], "registry.local/rollout:9");
  const std::vector<std::string> args = Strings(worker["args"]);
  EXPECT_EQ(args[4], "--engine=vllm");
  EXPECT_EQ(args.end()[-3], "--engine-url=http://$(POD_IP):8000");
  EXPECT_EQ(args.end()[-2], "--served-model-name=actor");
  EXPECT_EQ(args.back(), "--weights-volume=/var/lib/sluice/weights");
  for (const std::string& a : args) EXPECT_TRUE(a != "--enforce-eager" && a != "--seed=7") << a;
  EXPECT_EQ(worker["resources"], json::parse(R"({"requests": {"cpu": "500m", "memory": "1Gi"}})"));
  EXPECT_EQ(worker["volumeMounts"].back(),
            json::parse(R"({"name": "weights", "mountPath": "/var/lib/sluice/weights"})"));

  const json& engine = spec["containers"][1];
  EXPECT_EQ(engine["name"], "engine");
  EXPECT_EQ(engine["image"], "registry.local/vllm:custom");
  EXPECT_FALSE(engine.contains("command"));  // The vllm image's own entrypoint.
  const std::vector<std::string> want_args = {"--model",
                                              "/var/lib/sluice/model/actor/m",
                                              "--served-model-name",
                                              "actor",
                                              "--host",
                                              "$(POD_IP)",
                                              "--port",
                                              "8000",
                                              "--dtype",
                                              "float16",
                                              "--tensor-parallel-size",
                                              "2",
                                              "--max-num-batched-tokens",
                                              "16384",
                                              "--max-num-seqs",
                                              "128",
                                              "--gpu-memory-utilization",
                                              "0.9",
                                              "--generation-config",
                                              "vllm",
                                              "--enforce-eager",
                                              "--seed=7"};
  EXPECT_EQ(Strings(engine["args"]), want_args);
  EXPECT_EQ(engine["env"], json::parse(R"([
      {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
      {"name": "HOME", "value": "/tmp"}, {"name": "TMPDIR", "value": "/tmp"},
      {"name": "HF_HOME", "value": "/tmp/huggingface"},
      {"name": "USER", "value": "sluice"}, {"name": "LOGNAME", "value": "sluice"},
      {"name": "TORCHINDUCTOR_CACHE_DIR", "value": "/tmp/torchinductor"},
      {"name": "TRITON_CACHE_DIR", "value": "/tmp/triton"},
      {"name": "VLLM_SERVER_DEV_MODE", "value": "1"},
      {"name": "LOG_LEVEL", "value": "debug"}])"));
  EXPECT_EQ(engine["resources"]["limits"],
            json::parse(R"({"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"})"));
  EXPECT_EQ(engine["ports"],
            json::parse(R"([{"name": "engine", "containerPort": 8000, "protocol": "TCP"}])"));
  for (const char* probe : {"startupProbe", "readinessProbe", "livenessProbe"}) {
    EXPECT_EQ(engine[probe]["httpGet"], json::parse(R"({"path": "/health", "port": "engine"})"))
        << probe;
  }
  EXPECT_EQ(engine["startupProbe"]["periodSeconds"].get<int>() *
                engine["startupProbe"]["failureThreshold"].get<int>(),
            1800);
  const json mounts = engine["volumeMounts"];
  ASSERT_EQ(mounts.size(), 4u) << mounts.dump();
  EXPECT_EQ(mounts[0]["mountPath"], "/var/lib/sluice/model/actor");
  EXPECT_EQ(mounts[0]["readOnly"], true);
  EXPECT_EQ(mounts[1], json::parse(R"({"name": "weights", "mountPath": "/var/lib/sluice/weights",
                                       "readOnly": true})"));
  EXPECT_EQ(mounts[2], json::parse(R"({"name": "engine-tmp", "mountPath": "/tmp"})"));
  EXPECT_EQ(mounts[3], json::parse(R"({"name": "dshm", "mountPath": "/dev/shm"})"));
  // Both containers are hardened alike; the pod has every volume either mounts.
  EXPECT_EQ(engine["securityContext"], worker["securityContext"]);
  std::vector<std::string> volumes;
  for (const json& v : spec["volumes"]) volumes.push_back(v["name"]);
  EXPECT_EQ(volumes.size(), 10u);
  for (const json& c : spec["containers"]) {
    for (const json& m : c["volumeMounts"]) {
      EXPECT_NE(std::find(volumes.begin(), volumes.end(), m["name"]), volumes.end()) << m.dump();
    }
  }
  EXPECT_EQ(spec["volumes"].back(),
            json::parse(R"({"name": "dshm", "emptyDir": {"medium": "Memory"}})"));
}

TEST(ExternalEngineTest, AnSglangReplicaStartsItsServerModuleFromTheOperatorsImage) {
  json pool = VllmPool();
  pool["spec"]["engine"]["type"] = "sglang";
  pool["spec"]["engine"].erase("image");
  WorkerImages images;
  images.sglang = "mirror.local/sglang:pinned";
  const json policy = PolicyWithSource("actor", {{"path", "/models/q"}});
  const json engine =
      DesiredReplicaPod(pool, {policy}, nullptr, 0, Dataflow(), images)["spec"]["containers"][1];
  EXPECT_EQ(engine["image"], "mirror.local/sglang:pinned");
  EXPECT_EQ(Strings(engine["command"]),
            (std::vector<std::string>{"python3", "-m", "sglang.launch_server"}));
  // Without spec.model.dtype: the CRD's default, bfloat16.
  const std::vector<std::string> want_args = {"--model-path",
                                              "/models/q",
                                              "--served-model-name",
                                              "actor",
                                              "--host",
                                              "$(POD_IP)",
                                              "--port",
                                              "8000",
                                              "--dtype",
                                              "bfloat16",
                                              "--tp-size",
                                              "2",
                                              "--max-prefill-tokens",
                                              "16384",
                                              "--max-running-requests",
                                              "128",
                                              "--mem-fraction-static",
                                              "0.9",
                                              "--enforce-eager",
                                              "--seed=7"};
  EXPECT_EQ(Strings(engine["args"]), want_args);
  for (const json& e : engine["env"]) EXPECT_NE(e["name"], "VLLM_SERVER_DEV_MODE");
  // A path model has no claim to mount: weights, scratch and shared memory only.
  EXPECT_EQ(engine["volumeMounts"].size(), 3u);

  // Without spec.engine.image a vllm pool gets the operator's vllm image.
  pool["spec"]["engine"]["type"] = "vllm";
  EXPECT_EQ(DesiredReplicaPod(pool, {policy}, nullptr, 0, Dataflow(),
                              WorkerImages{})["spec"]["containers"][1]["image"],
            WorkerImages{}.vllm);
}

TEST(ExternalEngineTest, TheServedDirectoryIsPartOfTheTemplateHash) {
  const json pool = VllmPool();
  const json a = PolicyWithSource("actor", {{"path", "/models/a"}});
  const json b = PolicyWithSource("actor", {{"path", "/models/b"}});
  EXPECT_NE(PoolTemplateHash(pool, {a}), PoolTemplateHash(pool, {b}));
  EXPECT_EQ(PoolTemplateHash(pool, {a}), PoolTemplateHash(pool, {a}));
  // A builtin pool does not depend on it (the worker reads the path from its ConfigMap).
  json builtin = pool;
  builtin["spec"]["engine"] = {{"type", "builtin"}};
  EXPECT_EQ(PoolTemplateHash(builtin, {a}), PoolTemplateHash(builtin, {b}));
}

}  // namespace external_engine_test
}  // namespace sluice::controllers
