#include "operator/controllers/trainerjob/desired_pods.h"

#include <map>

#include "operator/controllers/dataflow/dataflow_tls.h"
#include "operator/controllers/labels.h"
#include "operator/controllers/namespace_certificates.h"
#include "operator/controllers/object_meta.h"
#include "operator/controllers/pod_hardening.h"
#include "operator/controllers/policy_model_volumes.h"
#include "operator/controllers/trainerjob/final_weights.h"
#include "operator/controllers/worker_container.h"
#include "operator/controllers/worker_resources.h"
#include "operator/controllers/worker_scratch.h"

namespace sluice::controllers {

using nlohmann::json;

namespace {

std::string PolicyName(const json& job) {
  return job.value("/spec/policyRef/name"_json_pointer, "");
}
std::string DataflowName(const json& job) {
  return job.value("/spec/dataflowRef/name"_json_pointer, "");
}
int64_t SpecReplicas(const json& job) {
  return job.value("/spec/replicas"_json_pointer, int64_t{1});
}

json TrainerLabels(const json& job, std::map<std::string, std::string> extra = {}) {
  extra[kTrainerJobLabel] = Name(job);
  extra[kPolicyLabel] = PolicyName(job);
  return StandardLabels("sluice-trainer", Name(job), "trainer", extra);
}

json TrainerMeta(const json& job, const std::string& name, const json& labels) {
  return {{"name", name},
          {"namespace", Namespace(job)},
          {"labels", labels},
          {"ownerReferences", json::array({ControllerRef(job)})}};
}

// {apiVersion, kind, metadata{name, namespace}, spec}: what the worker reads of an object (status
// and bookkeeping would change the config hash on every status write).
json Manifest(const json& obj, const char* kind) {
  return {{"apiVersion", obj.value("apiVersion", "sluice.dev/v1alpha1")},
          {"kind", kind},
          {"metadata", {{"name", Name(obj)}, {"namespace", Namespace(obj)}}},
          {"spec", obj.value("spec", json::object())}};
}

// The --checkpoint-dir value: the mount plus spec.checkpoint.pvc.path, without a trailing '/'.
std::string CheckpointDir(const json& job) {
  std::string dir = std::string(kTrainerCheckpointDir) +
                    job.value("/spec/checkpoint/pvc/path"_json_pointer, std::string("/"));
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

json FieldEnv(const char* name, const char* field) {
  return {{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", field}}}}}};
}
json ValueEnv(const char* name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

std::string LabelOf(const json& obj, const char* key) {
  const json labels = obj.value("/metadata/labels"_json_pointer, json::object());
  const auto it = labels.find(key);
  return it != labels.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

std::string RankPodName(const std::string& job, int rank) {
  return DnsLabelName(job, "-" + std::to_string(rank));
}
std::string TrainerServiceName(const std::string& job) { return DnsLabelName(job); }
std::string TrainerConfigMapName(const std::string& job) { return SubdomainName(job, "-config"); }
std::string JobLabelValue(const std::string& job) { return LabelValue(job); }

std::string RankServerName(const json& job, int rank) {
  return RankPodName(Name(job), rank) + "." + TrainerServiceName(Name(job)) + "." + Namespace(job) +
         ".svc";
}

std::string MasterAddress(const json& job) { return RankServerName(job, 0); }

std::vector<std::string> TrainerServingHosts(const json& job) {
  const std::string under = TrainerServiceName(Name(job)) + "." + Namespace(job) + ".svc";
  return {"*." + under, "*." + under + ".cluster.local"};
}

std::string TrainerTlsSecretName(const std::string& job) {
  return SubdomainName(job, "-trainer-tls");
}

json TrainerTlsSecretMeta(const json& job) {
  return TrainerMeta(job, TrainerTlsSecretName(Name(job)), TrainerLabels(job));
}

std::string WeightsUrl(const json& job, int64_t version) {
  return "https://" + MasterAddress(job) + ":" + std::to_string(kTrainerPort) + "/v1/weights/" +
         std::to_string(version);
}

std::string TrainerTemplateHash(const json& job, const json& policy) {
  json spec = job.value("spec", json::object());
  spec.erase("runPolicy");
  return JsonHash({{"spec", spec}, {"policy", policy.value("spec", json::object())}});
}

json DesiredTrainerService(const json& job) {
  const std::string name = Name(job);
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", TrainerMeta(job, TrainerServiceName(name), TrainerLabels(job))},
          {"spec",
           {{"clusterIP", "None"},
            // Ranks resolve rank 0 while it rendezvouses, before it is ready.
            {"publishNotReadyAddresses", true},
            {"selector", {{kTrainerJobLabel, JobLabelValue(name)}}},
            {"ports", json::array({{{"name", "http"},
                                    {"port", kTrainerPort},
                                    {"targetPort", "http"},
                                    {"protocol", "TCP"}},
                                   {{"name", "rendezvous"},
                                    {"port", kRendezvousPort},
                                    {"targetPort", "rendezvous"},
                                    {"protocol", "TCP"}}})}}}};
}

json DesiredTrainerConfigMap(const json& job, const json& policy, const json& dataflow) {
  // The Dataflow rides along for what the trainer reads from it: spec.batch.minibatches and
  // spec.sampling.maxNewTokens (DAPO's overlong shaping).
  const json config = {{"trainerJob", Manifest(job, "TrainerJob")},
                       {"policy", Manifest(policy, "Policy")},
                       {"dataflow", Manifest(dataflow, "Dataflow")}};
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", TrainerMeta(job, TrainerConfigMapName(Name(job)), TrainerLabels(job))},
          {"data", {{"trainer.json", config.dump(2) + "\n"}}}};
}

json DesiredRankPod(const json& job, const json& policy, const json& dataflow, int rank,
                    int attempt, const WorkerImages& images) {
  const std::string name = Name(job);
  const std::string dataflow_name = Name(dataflow).empty() ? DataflowName(job) : Name(dataflow);
  const std::string replicas = std::to_string(SpecReplicas(job));
  const std::string rank_str = std::to_string(rank);
  const json tmpl = job.value("/spec/template"_json_pointer, json::object());
  const bool checkpoint = job.contains("/spec/checkpoint"_json_pointer) &&
                          job.at("/spec/checkpoint"_json_pointer).is_object();

  json env = json::array({
      FieldEnv("POD_IP", "status.podIP"),
      FieldEnv("POD_NAME", "metadata.name"),
      ValueEnv("MASTER_ADDR", MasterAddress(job)),
      ValueEnv("MASTER_PORT", std::to_string(kRendezvousPort)),
      ValueEnv("WORLD_SIZE", replicas),
      ValueEnv("RANK", rank_str),
      ValueEnv("LOCAL_RANK", "0"),
      ValueEnv("NNODES", replicas),
      ValueEnv("NODE_RANK", rank_str),
      ValueEnv("SLUICE_ATTEMPT", std::to_string(attempt)),
  });
  // Before the template's env, so that a template's own TMPDIR wins.
  for (const json& e : ScratchEnv(/*cuda=*/true)) env.push_back(e);
  for (const json& e : tmpl.value("env", json::array())) env.push_back(e);

  json args = json::array({
      std::string("--config=") + kTrainerConfigDir + "/trainer.json",
      "--dataflow-url=" + DataflowEndpoint(dataflow),
      DataflowCaFileArg(),
      std::string("--token-file=") + kTrainerTokenDir + "/token",
      RolloutTokenFileArg(),  // Rollout replicas read rank 0's weight versions with it.
      "--address=$(POD_IP)",
      "--port=" + std::to_string(kTrainerPort),
      ServingTlsArgs()[0],
      ServingTlsArgs()[1],
      "--advertise-address=" + RankServerName(job, rank),
      kOpenMetricsArg,
      "--rank=$(RANK)",
      "--world-size=$(WORLD_SIZE)",
      "--master-addr=$(MASTER_ADDR)",
      "--master-port=$(MASTER_PORT)",
      "--steps=" + std::to_string(job.value("/spec/steps"_json_pointer, int64_t{0})),
      "--final-weights-grace=" + std::to_string(kFinalWeightsGrace.count()) + "s",
  });
  if (checkpoint) args.push_back("--checkpoint-dir=" + CheckpointDir(job));

  json volumes = json::array({
      {{"name", "config"}, {"configMap", {{"name", TrainerConfigMapName(name)}}}},
      {{"name", "token"}, {"secret", {{"secretName", DataflowTokenSecretName(dataflow_name)}}}},
      RolloutTokenVolume(dataflow_name),
      DataflowCaVolume(dataflow_name),
      ServingTlsVolume(TrainerTlsSecretName(name)),
  });
  json mounts = json::array({
      {{"name", "config"}, {"mountPath", kTrainerConfigDir}, {"readOnly", true}},
      {{"name", "token"}, {"mountPath", kTrainerTokenDir}, {"readOnly", true}},
      RolloutTokenMount(),
      DataflowCaMount(),
      ServingTlsMount(),
  });
  if (checkpoint) {
    volumes.push_back(
        {{"name", "checkpoints"},
         {"persistentVolumeClaim",
          {{"claimName", job.value("/spec/checkpoint/pvc/claimName"_json_pointer, "")}}}});
    mounts.push_back({{"name", "checkpoints"}, {"mountPath", kTrainerCheckpointDir}});
  }
  const PolicyModelVolumes models = PolicyModelVolumesFor({policy});
  for (const json& v : models.volumes) volumes.push_back(v);
  for (const json& m : models.mounts) mounts.push_back(m);
  // The root file system is read-only: the trainer's scratch files go here (worker_scratch.h).
  volumes.push_back(EmptyDirVolume(kScratchVolume));
  mounts.push_back(WritableMount(kScratchVolume, kScratchDir));

  WorkerContainerSpec c;
  c.name = "trainer";
  c.image = images.trainer;
  c.pull_policy = images.pull_policy;
  c.args = args;
  c.env = env;
  c.http_port = kTrainerPort;
  c.https = true;
  c.extra_ports = json::array(
      {{{"name", "rendezvous"}, {"containerPort", kRendezvousPort}, {"protocol", "TCP"}}});
  c.resources = WorkerResources(tmpl.value("resources", json::object()), kTrainerDefaultRequests);
  c.mounts = mounts;
  const json container = WorkerContainer(c);

  json spec = {{"hostname", RankPodName(name, rank)},
               {"subdomain", TrainerServiceName(name)},
               {"containers", json::array({container})},
               {"volumes", volumes},
               // A failed rank fails the attempt: the operator replaces the whole gang.
               {"restartPolicy", "Never"},
               // Service links would put <SVC>_PORT=tcp://... variables into the environment.
               {"enableServiceLinks", false},
               {"terminationGracePeriodSeconds", kTrainerTerminationGracePeriodSeconds}};
  if (tmpl.contains("nodeSelector") && !tmpl["nodeSelector"].empty()) {
    spec["nodeSelector"] = tmpl["nodeSelector"];
  }
  if (tmpl.contains("tolerations")) spec["tolerations"] = tmpl["tolerations"];
  if (tmpl.contains("serviceAccountName")) spec["serviceAccountName"] = tmpl["serviceAccountName"];
  ApplyTemplateSecurityContexts(tmpl, spec);
  HardenPodSpec(spec);

  const json labels = TrainerLabels(job, {{kDataflowLabel, DataflowName(job)},
                                          {kRankLabel, rank_str},
                                          {kAttemptLabel, std::to_string(attempt)},
                                          {kTemplateHashLabel, TrainerTemplateHash(job, policy)}});
  json meta = TrainerMeta(job, RankPodName(name, rank), labels);
  meta["annotations"] = ScrapeAnnotations(kTrainerPort, /*https=*/true);
  meta["annotations"][kConfigHashAnnotation] =
      JsonHash(DesiredTrainerConfigMap(job, policy, dataflow)["data"]);
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec}};
}

bool RankPodCurrent(const json& pod, int attempt, const std::string& template_hash) {
  return !template_hash.empty() && LabelOf(pod, kTemplateHashLabel) == template_hash &&
         LabelOf(pod, kAttemptLabel) == std::to_string(attempt);
}

}  // namespace sluice::controllers
