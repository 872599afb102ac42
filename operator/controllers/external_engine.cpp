#include "operator/controllers/external_engine.h"

#include <cstdint>

#include "operator/controllers/object_meta.h"
#include "operator/controllers/policy_model_volumes.h"
#include "operator/controllers/rolloutpool/desired_pods.h"
#include "operator/controllers/worker_scratch.h"

namespace sluice::controllers {

using nlohmann::json;

namespace {

std::string EngineType(const json& pool) {
  const json type = pool.value("/spec/engine/type"_json_pointer, json("builtin"));
  return type.is_string() ? type.get<std::string>() : "builtin";
}

json HealthProbe(int period_seconds, int failure_threshold) {
  return {{"httpGet", {{"path", "/health"}, {"port", "engine"}}},
          {"periodSeconds", period_seconds},
          {"failureThreshold", failure_threshold}};
}

}  // namespace

bool UsesExternalEngine(const json& pool) {
  const std::string type = EngineType(pool);
  return type == "vllm" || type == "sglang";
}

Result<std::string> ExternalEngineModelDir(const json& policy) {
  const json source = policy.value("/spec/model/source"_json_pointer, json::object());
  if (source.contains("pvc") && source["pvc"].is_object()) {
    std::string dir = PolicyModelDir(Name(policy));
    const json path = source["pvc"].value("path", json("/"));
    if (path.is_string() && path != "/") dir += path.get<std::string>();
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return dir;
  }
  if (source.contains("path") && source["path"].is_string()) {
    return source["path"].get<std::string>();
  }
  return Status::InvalidArgument(
      "Policy \"" + Name(policy) +
          "\" is served by an external engine, which loads the model from a directory both "
          "containers mount: its source must be pvc or path (builtin and uri models have none)",
      "spec.model.source");
}

json ExternalEngineContainer(const json& pool, const json& policy, const json& model_mounts,
                             const WorkerImages& images) {
  const std::string type = EngineType(pool);
  const bool vllm = type == "vllm";
  const json engine = pool.value("/spec/engine"_json_pointer, json::object());
  const json tmpl = pool.value("/spec/template"_json_pointer, json::object());
  const std::string policy_name = Name(policy);
  Result<std::string> dir = ExternalEngineModelDir(policy);
  const std::string model_dir = dir.ok() ? *dir : "";
  const json dtype = policy.value("/spec/model/dtype"_json_pointer, json("bfloat16"));
  const std::string tp = std::to_string(engine.value("tensorParallelSize", int64_t{1}));
  const std::string batch_tokens = std::to_string(engine.value("maxBatchTokens", int64_t{8192}));
  const std::string sequences = std::to_string(engine.value("maxConcurrentSequences", int64_t{64}));
  const std::string fraction = json(engine.value("kvCacheFraction", 0.85)).dump();
  const std::string port = std::to_string(kEnginePort);

  // --generation-config vllm: sample exactly as asked; vLLM's default ("auto") fills whatever a
  // request leaves out (top_k, repetition_penalty) from the model's generation_config.json, so
  // rollouts would not come from the distribution the trainer scores.
  json args =
      vllm ? json::array({"--model",
                          model_dir,
                          "--served-model-name",
                          policy_name,
                          "--host",
                          "$(POD_IP)",
                          "--port",
                          port,
                          "--dtype",
                          dtype,
                          "--tensor-parallel-size",
                          tp,
                          "--max-num-batched-tokens",
                          batch_tokens,
                          "--max-num-seqs",
                          sequences,
                          "--gpu-memory-utilization",
                          fraction,
                          "--generation-config",
                          "vllm"})
           : json::array({"--model-path", model_dir, "--served-model-name", policy_name, "--host",
                          "$(POD_IP)", "--port", port, "--dtype", dtype, "--tp-size", tp,
                          "--max-prefill-tokens", batch_tokens, "--max-running-requests", sequences,
                          "--mem-fraction-static", fraction});
  for (const json& a : engine.value("args", json::array())) args.push_back(a);

  json env = json::array({
      {{"name", "POD_IP"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}},
      {{"name", "HOME"}, {"value", kScratchDir}},
      {{"name", "TMPDIR"}, {"value", kScratchDir}},
      {{"name", "HF_HOME"}, {"value", std::string(kScratchDir) + "/huggingface"}},
      // The hardened uid (65532) has no passwd entry in the servers' images, and torch's
      // compile caches ask for the user name (getpass.getuser() reads these first).
      {{"name", "USER"}, {"value", "sluice"}},
      {{"name", "LOGNAME"}, {"value", "sluice"}},
      {{"name", "TORCHINDUCTOR_CACHE_DIR"}, {"value", std::string(kScratchDir) + "/torchinductor"}},
      {{"name", "TRITON_CACHE_DIR"}, {"value", std::string(kScratchDir) + "/triton"}},
  });
  if (vllm) env.push_back({{"name", "VLLM_SERVER_DEV_MODE"}, {"value", "1"}});
  for (const json& e : tmpl.value("env", json::array())) env.push_back(e);

  json mounts = json::array();
  for (const json& m : model_mounts) mounts.push_back(m);
  mounts.push_back(
      {{"name", kExternalWeightsVolume}, {"mountPath", kExternalWeightsDir}, {"readOnly", true}});
  mounts.push_back(WritableMount(kEngineScratchVolume, kScratchDir));
  mounts.push_back(WritableMount(kSharedMemoryVolume, "/dev/shm"));

  const std::string default_image = vllm ? images.vllm : images.sglang;
  const json image = engine.value("image", json(""));
  json container = {
      {"name", kEngineContainerName},
      {"image", image.is_string() && !image.get<std::string>().empty() ? image.get<std::string>()
                                                                       : default_image},
      {"imagePullPolicy", images.pull_policy},
      {"args", args},
      {"env", env},
      {"ports",
       json::array({{{"name", "engine"}, {"containerPort", kEnginePort}, {"protocol", "TCP"}}})},
      {"startupProbe", HealthProbe(10, 180)},
      {"readinessProbe", HealthProbe(5, 3)},
      {"livenessProbe", HealthProbe(10, 6)},
      {"resources",
       WorkerResources(tmpl.value("resources", json::object()), kRolloutDefaultRequests)},
      {"volumeMounts", mounts}};
  if (!vllm) container["command"] = json::array({"python3", "-m", "sglang.launch_server"});
  return container;
}

}  // namespace sluice::controllers
