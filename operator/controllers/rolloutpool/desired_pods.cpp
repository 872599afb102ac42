#include "operator/controllers/rolloutpool/desired_pods.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "common/join_strings.h"
#include "operator/controllers/bearer_tokens.h"
#include "operator/controllers/dataflow/dataflow_tls.h"
#include "operator/controllers/external_engine.h"
#include "operator/controllers/labels.h"
#include "operator/controllers/namespace_certificates.h"
#include "operator/controllers/object_meta.h"
#include "operator/controllers/pod_hardening.h"
#include "operator/controllers/policy_model_volumes.h"
#include "operator/controllers/worker_container.h"
#include "operator/controllers/worker_resources.h"
#include "operator/controllers/worker_scratch.h"

namespace sluice::controllers {

using nlohmann::json;

namespace {

// spec.sandbox.isolation as sluice-rollout's --sandbox-isolation value.
std::string SandboxIsolationFlag(const std::string& isolation) {
  if (isolation == "BestEffort") return "best-effort";
  if (isolation == "LimitsOnly") return "limits-only";
  return "namespaces";
}

// spec.workflow.environment.tokenSecretRef of `dataflow` with its key defaulted ({"name",
// "key"}), or null when `dataflow` is null or the field is unset.
json EnvironmentTokenRef(const json* dataflow) {
  if (dataflow == nullptr) return nullptr;
  const json ref =
      dataflow->value("/spec/workflow/environment/tokenSecretRef"_json_pointer, json());
  if (!ref.is_object() || !ref.contains("name") || !ref["name"].is_string()) return nullptr;
  const json key = ref.value("key", json("token"));
  return {{"name", ref["name"]}, {"key", key.is_string() ? key : json("token")}};
}

// spec.policies, sorted and without duplicates (the CRD declares it a set).
std::vector<std::string> Policies(const json& pool) {
  std::vector<std::string> out;
  const json policies = pool.value("/spec/policies"_json_pointer, json::array());
  for (const json& p : policies) {
    if (p.is_string()) out.push_back(p.get<std::string>());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The node labels the replica must match: the template's, overridden by the region's.
json NodeSelector(const json& pool, const json* region) {
  json selector = pool.value("/spec/template/nodeSelector"_json_pointer, json::object());
  if (region != nullptr && region->contains("nodeSelector")) {
    for (const auto& [k, v] : (*region)["nodeSelector"].items()) selector[k] = v;
  }
  return selector;
}

// The Policies of `policies` that `pool` hosts (named in spec.policies).
std::vector<json> Hosted(const json& pool, const std::vector<json>& policies) {
  const std::vector<std::string> names = Policies(pool);
  std::vector<json> out;
  for (const json& p : policies) {
    const std::string name = Name(p);
    if (std::binary_search(names.begin(), names.end(), name)) out.push_back(p);
  }
  return out;
}

// The sluice.dev/template-hash label of `obj`, or "".
std::string TemplateHashOf(const json& obj) {
  const json labels = obj.value("/metadata/labels"_json_pointer, json::object());
  const auto it = labels.find(kTemplateHashLabel);
  return it != labels.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

std::string ReplicaPodName(const std::string& pool, const std::string& region, int index) {
  return DnsLabelName(region.empty() ? pool : pool + "-" + region, "-" + std::to_string(index));
}

std::string RolloutConfigMapName(const std::string& pool) {
  return SubdomainName(pool, "-rollout-config");
}

json DesiredRolloutConfigMap(const json& pool, const std::vector<json>& policies) {
  auto manifest = [](const json& obj, const char* kind) {
    return json{{"apiVersion", obj.value("apiVersion", "sluice.dev/v1alpha1")},
                {"kind", kind},
                {"metadata", {{"name", Name(obj)}, {"namespace", Namespace(obj)}}},
                {"spec", obj.value("spec", json::object())}};
  };
  std::vector<json> sorted;
  for (const json& p : policies) sorted.push_back(manifest(p, "Policy"));
  std::sort(sorted.begin(), sorted.end(),
            [](const json& a, const json& b) { return Name(a) < Name(b); });
  const json config = {{"pool", manifest(pool, "RolloutPool")}, {"policies", sorted}};
  const std::string pool_name = Name(pool);
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", RolloutConfigMapName(pool_name)},
            {"namespace", Namespace(pool)},
            {"labels",
             StandardLabels("sluice-rollout", pool_name, "rollout", {{kPoolLabel, pool_name}})},
            {"ownerReferences", json::array({ControllerRef(pool)})}}},
          {"data", {{"rollout.json", config.dump(2) + "\n"}}}};
}

std::string RolloutTlsSecretName(const std::string& pool) {
  return SubdomainName(pool, "-rollout-tls");
}

std::string RolloutServerName(const json& pool) {
  return DnsLabelName(Name(pool)) + "." + Namespace(pool) + ".rollout.sluice.internal";
}

namespace {

// A Secret of the pool's: its labels, owned by it.
json PoolSecretMeta(const json& pool, const std::string& name) {
  const std::string pool_name = Name(pool);
  return {
      {"name", name},
      {"namespace", Namespace(pool)},
      {"labels", StandardLabels("sluice-rollout", pool_name, "rollout", {{kPoolLabel, pool_name}})},
      {"ownerReferences", json::array({ControllerRef(pool)})}};
}

}  // namespace

json RolloutTlsSecretMeta(const json& pool) {
  return PoolSecretMeta(pool, RolloutTlsSecretName(Name(pool)));
}

std::string RolloutControlTokenSecretName(const std::string& pool) {
  return SubdomainName(pool, "-control-token");
}

json DesiredRolloutControlTokenSecret(const json& pool, const std::string& token) {
  return BearerTokenSecret(PoolSecretMeta(pool, RolloutControlTokenSecretName(Name(pool))), token);
}

std::string PoolTemplateHash(const json& pool, const std::vector<json>& policies,
                             const json* dataflow) {
  const json spec = pool.value("spec", json::object());
  json hashed = {{"engine", spec.value("engine", json::object())},
                 {"template", spec.value("template", json::object())},
                 {"policies", Policies(pool)},
                 {"dataflowRef", spec.value("dataflowRef", json::object())},
                 {"workerContract", kRolloutWorkerContract}};
  // Only a weaker isolation than the worker's default rolls the replicas, so pods made before
  // the field existed (which run with the default) are left alone.
  if (const std::string isolation =
          pool.value("/spec/sandbox/isolation"_json_pointer, std::string("Namespaces"));
      isolation != "Namespaces") {
    hashed["sandboxIsolation"] = isolation;
  }
  const PolicyModelVolumes models = PolicyModelVolumesFor(Hosted(pool, policies));
  if (!models.empty()) hashed["models"] = {{"volumes", models.volumes}, {"mounts", models.mounts}};
  if (const json ref = EnvironmentTokenRef(dataflow); ref.is_object()) {
    hashed["environmentToken"] = ref;
  }
  // The external server's --model comes from the served Policy's source.
  if (UsesExternalEngine(pool)) {
    for (const json& p : Hosted(pool, policies)) {
      Result<std::string> dir = ExternalEngineModelDir(p);
      hashed["engineModels"][Name(p)] = dir.ok() ? *dir : "";
    }
  }
  return JsonHash(hashed);
}

json DesiredReplicaPod(const json& pool, const std::vector<json>& hosted_policies,
                       const json* region, int index, const json& dataflow,
                       const WorkerImages& images) {
  const std::string pool_name = Name(pool);
  const std::string region_name = region != nullptr ? region->value("name", "") : "";
  const std::string dataflow_ref = pool.value("/spec/dataflowRef/name"_json_pointer, "");
  const std::string dataflow_name = Name(dataflow).empty() ? dataflow_ref : Name(dataflow);
  const std::vector<std::string> policies = Policies(pool);
  const json engine = pool.value("/spec/engine"_json_pointer, json::object());
  const json tmpl = pool.value("/spec/template"_json_pointer, json::object());
  const PolicyModelVolumes models = PolicyModelVolumesFor(Hosted(pool, hosted_policies));

  std::map<std::string, std::string> extra = {
      {kPoolLabel, pool_name},
      {kReplicaIndexLabel, std::to_string(index)},
      {kTemplateHashLabel, PoolTemplateHash(pool, hosted_policies, &dataflow)},
      {kDataflowLabel, dataflow_ref},
  };
  if (!region_name.empty()) extra[kRegionLabel] = region_name;
  if (policies.size() == 1) extra[kPolicyLabel] = policies.front();

  json args = json::array({
      "--dataflow-url=" + DataflowEndpoint(dataflow),
      std::string("--token-file=") + kRolloutTokenDir + "/token",
      std::string("--control-token-file=") + kRolloutControlTokenDir + "/token",
      "--policies=" + JoinStrings(policies, ","),
      "--engine=" + engine.value("type", std::string("builtin")),
      "--tensor-parallel-size=" + std::to_string(engine.value("tensorParallelSize", int64_t{1})),
      "--max-batch-tokens=" + std::to_string(engine.value("maxBatchTokens", int64_t{8192})),
      "--max-concurrent-sequences=" +
          std::to_string(engine.value("maxConcurrentSequences", int64_t{64})),
      "--kv-cache-fraction=" + json(engine.value("kvCacheFraction", 0.85)).dump(),
      "--address=$(POD_IP)",
      "--port=" + std::to_string(kRolloutPort),
      kOpenMetricsArg,
      "--region=$(SLUICE_REGION)",
      "--replica=$(POD_NAME)",
      std::string("--policy-config=") + kRolloutConfigDir + "/rollout.json",
      "--sandbox-isolation=" +
          SandboxIsolationFlag(
              pool.value("/spec/sandbox/isolation"_json_pointer, std::string("Namespaces"))),
      DataflowCaFileArg(),  // Verifies --dataflow-url, the trainers and relays (dataflow_tls.h).
      ServingTlsArgs()[0],
      ServingTlsArgs()[1],
      "--relay-server-name=" + RolloutServerName(pool),
  });
  const bool external = UsesExternalEngine(pool);
  // With an external engine the served Policy (the one spec.policies names) and its directory.
  std::string served;
  json served_policy = {{"metadata", json::object()}};
  if (external) {
    served = policies.empty() ? "" : policies.front();
    served_policy["metadata"]["name"] = served;
    for (const json& p : hosted_policies) {
      if (Name(p) == served) served_policy = p;
    }
    args.push_back("--engine-url=http://$(POD_IP):" + std::to_string(kEnginePort));
    args.push_back("--served-model-name=" + served);
    // Explicit although it is the default: a path the local cluster can remap (its containers
    // see volumes only through the paths their arguments name).
    args.push_back(std::string("--weights-volume=") + kExternalWeightsDir);
  } else {
    for (const json& a : engine.value("args", json::array())) args.push_back(a);
  }

  json env = json::array({
      {{"name", "POD_IP"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}},
      {{"name", "POD_NAME"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}},
      {{"name", "SLUICE_REGION"}, {"value", region_name}},
  });
  // Before the template's env, so that a template's own TMPDIR wins.
  for (const json& e : ScratchEnv(/*cuda=*/true)) env.push_back(e);
  for (const json& e : tmpl.value("env", json::array())) env.push_back(e);

  const std::string image = !external && engine.contains("image") && engine["image"].is_string() &&
                                    !engine["image"].empty()
                                ? engine["image"].get<std::string>()
                                : images.rollout;
  json mounts =
      json::array({{{"name", "token"}, {"mountPath", kRolloutTokenDir}, {"readOnly", true}},
                   {{"name", "config"}, {"mountPath", kRolloutConfigDir}, {"readOnly", true}}});
  json volumes = json::array(
      {{{"name", "token"},
        {"secret", {{"secretName", DataflowRolloutTokenSecretName(dataflow_name)}}}},
       {{"name", "config"}, {"configMap", {{"name", RolloutConfigMapName(pool_name)}}}}});
  for (const json& m : models.mounts) mounts.push_back(m);
  for (const json& v : models.volumes) volumes.push_back(v);
  volumes.push_back(DataflowCaVolume(dataflow_name));
  mounts.push_back(DataflowCaMount());
  volumes.push_back(ServingTlsVolume(RolloutTlsSecretName(pool_name)));
  mounts.push_back(ServingTlsMount());
  volumes.push_back({{"name", "control-token"},
                     {"secret", {{"secretName", RolloutControlTokenSecretName(pool_name)}}}});
  mounts.push_back(
      {{"name", "control-token"}, {"mountPath", kRolloutControlTokenDir}, {"readOnly", true}});
  // The environment server's own credential, only the key it names (never the experiment's
  // token, which the worker would otherwise have nothing else to send).
  if (const json ref = EnvironmentTokenRef(&dataflow); ref.is_object()) {
    volumes.push_back({{"name", "environment-token"},
                       {"secret",
                        {{"secretName", ref["name"]},
                         {"items", json::array({{{"key", ref["key"]}, {"path", "token"}}})}}}});
    mounts.push_back(
        {{"name", "environment-token"}, {"mountPath", kEnvironmentTokenDir}, {"readOnly", true}});
    args.push_back(std::string("--environment-token-file=") + kEnvironmentTokenDir + "/token");
  }
  // The root file system is read-only: the worker's scratch files go to an emptyDir, and with an
  // external engine so do the weight versions it hands the server (worker_scratch.h).
  volumes.push_back(EmptyDirVolume(kScratchVolume));
  mounts.push_back(WritableMount(kScratchVolume, kScratchDir));
  if (external) {
    volumes.push_back(EmptyDirVolume(kExternalWeightsVolume));
    mounts.push_back(WritableMount(kExternalWeightsVolume, kExternalWeightsDir));
    volumes.push_back(EmptyDirVolume(kEngineScratchVolume));
    volumes.push_back({{"name", kSharedMemoryVolume}, {"emptyDir", {{"medium", "Memory"}}}});
  }

  WorkerContainerSpec c;
  c.name = "rollout";
  c.image = image;
  c.pull_policy = images.pull_policy;
  c.args = args;
  c.env = env;
  c.http_port = kRolloutPort;
  c.https = true;
  // Beside an external server, the replica's resources (its GPUs) are the server's.
  c.resources =
      external ? WorkerResources(json::object(), kExternalEngineWorkerRequests)
               : WorkerResources(tmpl.value("resources", json::object()), kRolloutDefaultRequests);
  c.mounts = mounts;
  const json container = WorkerContainer(c);
  json containers = json::array({container});
  if (external) {
    containers.push_back(ExternalEngineContainer(pool, served_policy, models.mounts, images));
  }

  json spec = {
      {"containers", containers},
      {"volumes", volumes},
      {"restartPolicy", "Always"},
      // Service links would put <SVC>_PORT=tcp://... variables into the worker's environment.
      {"enableServiceLinks", false},
      {"terminationGracePeriodSeconds",
       pool.value("/spec/drain/gracePeriodSeconds"_json_pointer, int64_t{120}) +
           kRolloutTerminationSlackSeconds}};
  const json selector = NodeSelector(pool, region);
  if (!selector.empty()) spec["nodeSelector"] = selector;
  if (tmpl.contains("tolerations")) spec["tolerations"] = tmpl["tolerations"];
  if (tmpl.contains("serviceAccountName")) spec["serviceAccountName"] = tmpl["serviceAccountName"];
  ApplyTemplateSecurityContexts(tmpl, spec);
  // The operator's Localhost profile for the worker (not the external server), unless the
  // template's securityContext or containerSecurityContext names one: the template wins.
  json& worker = spec["containers"][0];
  if (!images.rollout_seccomp_profile.empty() &&
      !spec.contains("/securityContext/seccompProfile"_json_pointer) &&
      !worker.contains("/securityContext/seccompProfile"_json_pointer)) {
    worker["securityContext"]["seccompProfile"] = {
        {"type", "Localhost"}, {"localhostProfile", images.rollout_seccomp_profile}};
  }
  HardenPodSpec(spec);

  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", ReplicaPodName(pool_name, region_name, index)},
            {"namespace", Namespace(pool)},
            {"labels", StandardLabels("sluice-rollout", pool_name, "rollout", extra)},
            {"annotations", ScrapeAnnotations(kRolloutPort, /*https=*/true)},
            {"ownerReferences", json::array({ControllerRef(pool)})}}},
          {"spec", spec}};
}

bool ReplicaPodMatches(const json& desired, const json& existing) {
  const std::string want = TemplateHashOf(desired);
  return !want.empty() && TemplateHashOf(existing) == want;
}

}  // namespace sluice::controllers
