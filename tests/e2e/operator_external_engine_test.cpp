// End-to-end: a RolloutPool with spec.engine.type vllm on the local cluster. The operator runs
// each replica as two containers, the real sluice-rollout and, as the engine container, the
// scripted stand-in vLLM server (sluice-testpod's engine mode, stand_in_engine.h, through
// spec.engine.image sluice/testpod:dev). The worker drives the server over the pod's address with
// the served model name, the server loads the Policy's path model, the Pod is Ready only once the
// server's /health answers, and the trajectories the server generated reach the Dataflow.
// Then the real sluice-trainer trains the Policy's model: each version it publishes is written by
// the worker to the weights volume the two containers share and reloaded by the server from there.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tests/e2e/sluice_session.h"
#include "workers/model/safetensors.h"

namespace sluice::e2e {
namespace {

using nlohmann::json;

// UTF-8 of a code point below 0x800 (all that the byte-level alphabet uses).
std::string Utf8(uint32_t c) {
  if (c < 0x80) return std::string(1, static_cast<char>(c));
  return {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
}

// The smallest byte-level BPE tokenizer.json: one token per byte (GPT-2's byte-to-symbol
// alphabet), no merges, and the ChatML markers the workflow renders prompts with.
json ByteLevelTokenizerJson() {
  auto self = [](int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174; };
  json vocab = json::object();
  int extra = 0;
  for (int b = 0; b < 256; ++b) vocab[Utf8(self(b) ? b : 256 + extra++)] = b;
  auto added = [](int id, const char* content) {
    return json{{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
                {"rstrip", false}, {"normalized", false}, {"special", true}};
  };
  const json byte_level = {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", false},
                           {"use_regex", true}};
  return {{"version", "1.0"},
          {"added_tokens", json::array({added(256, "<|endoftext|>"), added(257, "<|im_start|>"),
                                        added(258, "<|im_end|>")})},
          {"normalizer", nullptr},
          {"pre_tokenizer", byte_level},
          {"decoder", byte_level},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}}};
}

// A random tiny Llama in HF form, shaped for the tokenizer above (259 ids), so that the real
// trainer can load and train it: config.json and model.safetensors (float32).
void WriteTinyLlama(const std::string& dir) {
  constexpr int64_t kVocab = 259, kHidden = 32, kFfn = 64, kKv = 16;
  std::ofstream(dir + "/config.json") << json{
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"vocab_size", kVocab},
      {"hidden_size", kHidden},
      {"intermediate_size", kFfn},
      {"num_hidden_layers", 1},
      {"num_attention_heads", 2},
      {"num_key_value_heads", 1},
      {"max_position_embeddings", 256},
      {"rms_norm_eps", 1e-6},
      {"rope_theta", 10000.0},
      {"tie_word_embeddings", false},
      {"torch_dtype", "float32"}}.dump();
  const std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
      {"model.embed_tokens.weight", {kVocab, kHidden}},
      {"model.layers.0.input_layernorm.weight", {kHidden}},
      {"model.layers.0.self_attn.q_proj.weight", {kHidden, kHidden}},
      {"model.layers.0.self_attn.k_proj.weight", {kKv, kHidden}},
      {"model.layers.0.self_attn.v_proj.weight", {kKv, kHidden}},
      {"model.layers.0.self_attn.o_proj.weight", {kHidden, kHidden}},
      {"model.layers.0.post_attention_layernorm.weight", {kHidden}},
      {"model.layers.0.mlp.gate_proj.weight", {kFfn, kHidden}},
      {"model.layers.0.mlp.up_proj.weight", {kFfn, kHidden}},
      {"model.layers.0.mlp.down_proj.weight", {kHidden, kFfn}},
      {"model.norm.weight", {kHidden}},
      {"lm_head.weight", {kVocab, kHidden}}};
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<std::vector<float>> data;
  std::vector<model::TensorView> views;
  for (const auto& [name, shape] : shapes) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float>& values = data.emplace_back(static_cast<size_t>(n));
    const bool norm = shape.size() == 1;
    for (float& v : values) v = norm ? 1.0f : normal(rng);
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    model::TensorView v;
    v.name = shapes[i].first;
    v.dtype = model::DType::kF32;
    v.shape = shapes[i].second;
    v.data = std::as_bytes(std::span<const float>(data[i]));
    views.push_back(std::move(v));
  }
  const Status written = model::WriteSafetensors(dir + "/model.safetensors", views);
  ASSERT_TRUE(written.ok()) << written.ToString();
}

// The Policy the pool serves: a model directory on this machine (the local cluster's containers
// are processes, so a host path is what a real cluster's volume would be). The worker reads only
// the tokenizer from it; the stand-in server needs only the directory.
std::string PolicyManifest(const std::string& model_dir) {
  return R"(apiVersion: sluice.dev/v1alpha1
kind: Policy
metadata:
  name: tiny
spec:
  model:
    source: {path: )" +
         model_dir + R"(}
  tokenizer: {chatTemplate: chatml}
---
)";
}

constexpr char kPool[] = R"(apiVersion: sluice.dev/v1alpha1
kind: RolloutPool
metadata:
  name: ext
spec:
  policies: [tiny]
  dataflowRef: {name: arith}
  engine: {type: vllm, image: "sluice/testpod:dev", maxConcurrentSequences: 16}
  template:
    resources: {gpus: 1, cpu: 1, memory: 1Gi}
    env:
      - {name: SLUICE_TESTPOD_MODE, value: engine}
  replicas: 1
)";

constexpr char kTrainer[] = R"(apiVersion: sluice.dev/v1alpha1
kind: TrainerJob
metadata:
  name: train
spec:
  policyRef: {name: tiny}
  dataflowRef: {name: arith}
  algorithm: {type: grpo}
  optimizer: {lr: 0.001}
  steps: 2
  template:
    resources: {cpu: 1, memory: 2Gi}
)";

TEST(OperatorExternalEngineTest, AVllmPoolRunsTheServerBesideTheWorkerAndFeedsTheDataflow) {
  ASSERT_TRUE(HaveKubectl()) << KubectlBinary() << " is missing";
  SluiceSession cluster;
  ASSERT_TRUE(cluster.Up()) << cluster.up().output;
  auto kubectl = [&](const std::string& args) { return cluster.Kubectl(args); };
  auto get = [&](const std::string& what) { return cluster.Get(what); };
  // Not under /tmp: the engine container mounts an emptyDir at /tmp, and the local cluster
  // remaps every argument under a mount path into the volume (docs/local-cluster.md).
  char model_template[] = "/var/tmp/sluice-e2e-model-XXXXXX";
  ASSERT_NE(mkdtemp(model_template), nullptr);
  const std::string model_dir = model_template;
  struct RemoveAtEnd {
    std::string dir;
    ~RemoveAtEnd() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } remove_model{model_dir};
  ASSERT_NO_FATAL_FAILURE(WriteTinyLlama(model_dir));
  std::ofstream(model_dir + "/tokenizer.json") << ByteLevelTokenizerJson().dump();
  auto apply = [&](const std::string& name, const std::string& yaml) {
    const std::string file = cluster.dir() + "/" + name + ".yaml";
    std::ofstream(file) << yaml;
    return kubectl("apply -f " + file);
  };

  // First with the built-in model, which no server can load: the pool says so and runs nothing.
  CommandResult applied =
      apply("builtin", std::string(kTestPolicyManifest) + kTestDataflowManifest + "---\n" + kPool);
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  ASSERT_TRUE(WaitUntil(
      [&] {
        return cluster.JsonPath("rolloutpool ext",
                                "{.status.conditions[?(@.type==\"Available\")].reason}") ==
               "UnservableModel";
      },
      std::chrono::seconds(20)))
      << kubectl("get rolloutpool ext -o yaml").output;
  const std::string message =
      cluster.JsonPath("rolloutpool ext", "{.status.conditions[?(@.type==\"Available\")].message}");
  EXPECT_NE(message.find("spec.model.source: Policy \"tiny\""), std::string::npos) << message;
  EXPECT_NE(message.find("pvc or path"), std::string::npos) << message;
  const json none = get("pods -l sluice.dev/pool=ext");
  ASSERT_TRUE(none.is_object()) << kubectl("get pods").output;
  EXPECT_TRUE(none.value("items", json::array()).empty()) << none.dump();

  // The Policy moved to a model directory: the replica starts.
  applied = apply("path", PolicyManifest(model_dir));
  ASSERT_EQ(applied.exit_code, 0) << applied.output;

  auto diagnostics = [&] {
    std::string out = kubectl("get rolloutpool ext -o yaml").output +
                      kubectl("get pods -o wide").output +
                      kubectl("get pods -l sluice.dev/pool=ext -o yaml").output +
                      kubectl("get events").output + kubectl("get dataflow arith -o yaml").output;
    const json pods = get("pods -l sluice.dev/pool=ext");
    for (const json& p : pods.value("items", json::array())) {
      const std::string name = p.value("/metadata/name"_json_pointer, "");
      for (const char* c : {"rollout", "engine"}) {
        out += "\n--- " + name + "/" + c + "\n" +
               kubectl("logs " + name + " -c " + c + " --tail=30").output;
      }
    }
    return out + "\n--- operator\n" + cluster.Log("operator");
  };

  // The replica is Ready: both containers are, the server's /health included.
  ASSERT_TRUE(WaitUntil(
      [&] {
        const json pool = get("rolloutpool ext");
        return pool.is_object() && pool.value("/status/readyReplicas"_json_pointer, 0) == 1;
      },
      std::chrono::seconds(40)))
      << diagnostics();
  const json pods = get("pods -l sluice.dev/pool=ext");
  ASSERT_EQ(pods["items"].size(), 1u);
  const json& pod = pods["items"][0];
  const std::string name = pod.value("/metadata/name"_json_pointer, "");
  ASSERT_EQ(pod["spec"]["containers"].size(), 2u);
  EXPECT_EQ(pod["spec"]["containers"][1]["name"], "engine");
  const json statuses = pod.value("/status/containerStatuses"_json_pointer, json::array());
  ASSERT_EQ(statuses.size(), 2u) << pod.dump(2);
  for (const json& s : statuses) EXPECT_TRUE(s.value("ready", false)) << s.dump();

  // The server was started with the Policy's directory and name, on the pod's own address.
  const std::string pod_ip = pod.value("/status/podIP"_json_pointer, "");
  ASSERT_FALSE(pod_ip.empty());
  const std::string engine_log = kubectl("logs " + name + " -c engine").output;
  EXPECT_NE(engine_log.find("engine serving tiny from " + model_dir + " on " + pod_ip + ":8000"),
            std::string::npos)
      << engine_log;

  // The worker's episodes are generated by the server and accepted by the Dataflow.
  ASSERT_TRUE(
      WaitUntil([&] { return get("dataflow arith").value("/status/accepted"_json_pointer, 0) > 0; },
                std::chrono::seconds(20)))
      << diagnostics();
  EXPECT_NE(kubectl("logs " + name + " -c engine").output.find("completion n="), std::string::npos)
      << diagnostics();

  // The real trainer trains the Policy and publishes versions: the worker writes each to the
  // weights volume and has the server reload it from there (the stand-in refuses a directory
  // without the model files), after which the replica serves the new version.
  applied = apply("trainer", kTrainer);
  ASSERT_EQ(applied.exit_code, 0) << applied.output;
  ASSERT_TRUE(WaitUntil(
      [&] {
        return get("rolloutpool ext").value("/status/policies/0/version"_json_pointer, 0) >= 1;
      },
      std::chrono::seconds(35)))
      << diagnostics() << kubectl("get trainerjob train -o yaml").output
      << kubectl("logs train-0 --tail=30").output;
  const std::string reloads = kubectl("logs " + name + " -c engine").output;
  const size_t at = reloads.find("reload update_config ");
  ASSERT_NE(at, std::string::npos) << reloads;
  const std::string dir = reloads.substr(at + 21, reloads.find('\n', at) - at - 21);
  EXPECT_NE(dir.find("/volumes/weights/tiny/v"), std::string::npos) << dir;
  EXPECT_NE(reloads.find("reload reload_weights"), std::string::npos) << reloads;

  EXPECT_EQ(cluster.Down().exit_code, 0);
}

}  // namespace
}  // namespace sluice::e2e
