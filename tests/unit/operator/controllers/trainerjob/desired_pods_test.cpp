// The TrainerJob controller's children: headless Service, ConfigMap and rank Pods (pure
// functions).
#include "operator/controllers/trainerjob/desired_pods.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/tls/certificates.h"
#include "operator/controllers/labels.h"
#include "operator/controllers/namespace_certificates.h"

namespace sluice::controllers {
namespace {

using nlohmann::json;

json Job() {
  return json::parse(R"({
    "apiVersion": "sluice.dev/v1alpha1", "kind": "TrainerJob",
    "metadata": {"name": "train", "namespace": "rl", "uid": "u-job", "generation": 2},
    "spec": {
      "policyRef": {"name": "actor"},
      "dataflowRef": {"name": "arith"},
      "managedBy": "sluice.dev/operator",
      "algorithm": {"type": "grpo", "clipLow": 0.8, "clipHigh": 1.28},
      "optimizer": {"type": "adamw", "lr": 1e-6, "warmupSteps": 10},
      "steps": 500,
      "microBatchTokens": 16384,
      "replicas": 4,
      "template": {
        "resources": {"gpus": 8, "gpuResourceName": "nvidia.com/gpu", "cpu": 32,
                      "memory": "512Gi"},
        "nodeSelector": {"pool": "training"},
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "env": [{"name": "NCCL_DEBUG", "value": "INFO"},
                {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "t"}}}],
        "serviceAccountName": "trainer-sa"
      },
      "runPolicy": {"suspend": false, "backoffLimit": 3}
    },
    "status": {"phase": "Running", "step": 12}
  })");
}

json JobWithCheckpoint(const std::string& path) {
  json job = Job();
  job["spec"]["checkpoint"] = {
      {"everySteps", 50}, {"keep", 3}, {"pvc", {{"claimName", "ckpt"}, {"path", path}}}};
  return job;
}

json Policy() {
  return json::parse(R"({
    "apiVersion": "sluice.dev/v1alpha1", "kind": "Policy",
    "metadata": {"name": "actor", "namespace": "rl", "uid": "u-pol", "resourceVersion": "77"},
    "spec": {"model": {"source": {"path": "/models/qwen"}}, "weightSync": {"mode": "full"}},
    "status": {"version": 9}
  })");
}

json Dataflow() {
  return json::parse(R"({
    "apiVersion": "sluice.dev/v1alpha1", "kind": "Dataflow",
    "metadata": {"name": "arith", "namespace": "rl", "uid": "u-df"}
  })");
}

json Pod(const json& job, int rank = 1, int attempt = 2) {
  return DesiredRankPod(job, Policy(), Dataflow(), rank, attempt, WorkerImages{});
}

std::vector<std::string> EnvNames(const json& container) {
  std::vector<std::string> names;
  for (const json& e : container["env"]) names.push_back(e["name"].get<std::string>());
  return names;
}

std::string EnvValue(const json& container, const std::string& name) {
  for (const json& e : container["env"]) {
    if (e["name"] == name) return e.value("value", "");
  }
  return "<missing>";
}

TEST(TrainerJobChildrenTest, NamesAndAddresses) {
  EXPECT_EQ(RankPodName("train", 0), "train-0");
  EXPECT_EQ(RankPodName("train", 17), "train-17");
  EXPECT_EQ(TrainerServiceName("train"), "train");
  EXPECT_EQ(TrainerConfigMapName("train"), "train-config");
  EXPECT_EQ(MasterAddress(Job()), "train-0.train.rl.svc");
  EXPECT_EQ(WeightsUrl(Job(), 42), "https://train-0.train.rl.svc:8080/v1/weights/42");
  EXPECT_EQ(WeightsUrl(Job(), 0), "https://train-0.train.rl.svc:8080/v1/weights/0");
  json no_ns = Job();
  no_ns["metadata"].erase("namespace");
  EXPECT_EQ(MasterAddress(no_ns), "train-0.train.default.svc");
  EXPECT_EQ(RankServerName(Job(), 3), "train-3.train.rl.svc");
}

TEST(TrainerJobChildrenTest, TheRanksCertificateNamesEveryRankWhateverTheReplicas) {
  EXPECT_EQ(TrainerServingHosts(Job()),
            (std::vector<std::string>{"*.train.rl.svc", "*.train.rl.svc.cluster.local"}));
  // Not "<job>-tls": a Dataflow named as the job has that one.
  EXPECT_EQ(TrainerTlsSecretName("train"), "train-trainer-tls");
  const json meta = TrainerTlsSecretMeta(Job());
  EXPECT_EQ(meta["name"], "train-trainer-tls");
  EXPECT_EQ(meta["namespace"], "rl");
  EXPECT_EQ(meta["ownerReferences"][0]["kind"], "TrainerJob");
  EXPECT_EQ(meta["labels"]["sluice.dev/trainer-job"], "train");

  // A certificate issued for those names verifies as every rank's stable name, and as no other.
  const Clock::WallTime now = Clock::WallTime(std::chrono::seconds(1767225600));
  Result<tls::CertifiedKey> ca = tls::NewCertificateAuthority({"sluice-ca.rl", now, kCaValidity});
  ASSERT_TRUE(ca.ok()) << ca.status().ToString();
  Result<tls::CertifiedKey> serving = tls::IssueServingCertificate(
      *ca, {RankServerName(Job(), 0), now, kServingValidity}, TrainerServingHosts(Job()));
  ASSERT_TRUE(serving.ok()) << serving.status().ToString();
  const json secret = DesiredServingSecret(meta, *serving, ca->cert_pem);
  EXPECT_EQ(ServingSecretProblem(&secret, ca->cert_pem, TrainerServingHosts(Job()), now),
            std::nullopt);
  for (int rank : {0, 3, 17}) {
    EXPECT_EQ(tls::ServingCertificateProblem(ca->cert_pem, *serving, {RankServerName(Job(), rank)},
                                             now, kServingRenewBefore),
              std::nullopt)
        << rank;
  }
  json other = Job();
  other["metadata"]["name"] = "other";
  EXPECT_NE(tls::ServingCertificateProblem(ca->cert_pem, *serving, {RankServerName(other, 0)}, now,
                                           kServingRenewBefore),
            std::nullopt);
}

TEST(TrainerJobChildrenTest, ServiceIsHeadlessAndSelectsTheJobsRanks) {
  const json svc = DesiredTrainerService(Job());
  EXPECT_EQ(svc["apiVersion"], "v1");
  EXPECT_EQ(svc["kind"], "Service");
  EXPECT_EQ(svc["metadata"]["name"], "train");
  EXPECT_EQ(svc["metadata"]["namespace"], "rl");
  EXPECT_EQ(svc["metadata"]["labels"],
            StandardLabels("sluice-trainer", "train", "trainer",
                           {{kTrainerJobLabel, "train"}, {kPolicyLabel, "actor"}}));
  EXPECT_EQ(svc["metadata"]["ownerReferences"], json::array({ControllerRef(Job())}));
  EXPECT_EQ(svc["metadata"]["ownerReferences"][0]["uid"], "u-job");
  EXPECT_EQ(svc["metadata"]["ownerReferences"][0]["kind"], "TrainerJob");
  EXPECT_EQ(svc["spec"]["clusterIP"], "None");
  EXPECT_EQ(svc["spec"]["publishNotReadyAddresses"], true);
  EXPECT_EQ(svc["spec"]["selector"], json({{"sluice.dev/trainer-job", "train"}}));
  EXPECT_EQ(svc["spec"]["ports"], json::parse(R"([
    {"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"},
    {"name": "rendezvous", "port": 29500, "targetPort": "rendezvous", "protocol": "TCP"}])"));
}

TEST(TrainerJobChildrenTest, ConfigMapHoldsTheJobAndPolicySpecs) {
  const json cm = DesiredTrainerConfigMap(Job(), Policy(), Dataflow());
  EXPECT_EQ(cm["kind"], "ConfigMap");
  EXPECT_EQ(cm["metadata"]["name"], "train-config");
  EXPECT_EQ(cm["metadata"]["namespace"], "rl");
  EXPECT_EQ(cm["metadata"]["labels"][kTrainerJobLabel], "train");
  EXPECT_EQ(cm["metadata"]["ownerReferences"], json::array({ControllerRef(Job())}));
  const std::string text = cm["data"]["trainer.json"].get<std::string>();
  EXPECT_EQ(text.back(), '\n');
  EXPECT_NE(text.find("\n  \"policy\""), std::string::npos);  // Pretty-printed.
  const json config = json::parse(text);
  EXPECT_EQ(config["trainerJob"], json({{"apiVersion", "sluice.dev/v1alpha1"},
                                        {"kind", "TrainerJob"},
                                        {"metadata", {{"name", "train"}, {"namespace", "rl"}}},
                                        {"spec", Job()["spec"]}}));
  EXPECT_EQ(config["policy"], json({{"apiVersion", "sluice.dev/v1alpha1"},
                                    {"kind", "Policy"},
                                    {"metadata", {{"name", "actor"}, {"namespace", "rl"}}},
                                    {"spec", Policy()["spec"]}}));
  EXPECT_EQ(config["dataflow"]["kind"], "Dataflow");
  EXPECT_EQ(config["dataflow"]["metadata"]["name"], Dataflow()["metadata"]["name"]);
  EXPECT_EQ(config["dataflow"]["spec"], Dataflow().value("spec", json::object()));
  // Status and bookkeeping stay out, so status writes do not change the config hash.
  json later = Job();
  later["status"]["step"] = 400;
  later["metadata"]["resourceVersion"] = "999";
  json pol = Policy();
  pol["status"]["version"] = 300;
  EXPECT_EQ(DesiredTrainerConfigMap(later, pol, Dataflow())["data"], cm["data"]);
}

TEST(TrainerJobChildrenTest, RankPodIsNamedLabelledAndOwned) {
  const json pod = Pod(Job(), 1, 2);
  EXPECT_EQ(pod["apiVersion"], "v1");
  EXPECT_EQ(pod["kind"], "Pod");
  EXPECT_EQ(pod["metadata"]["name"], "train-1");
  EXPECT_EQ(pod["metadata"]["namespace"], "rl");
  EXPECT_EQ(pod["metadata"]["ownerReferences"], json::array({ControllerRef(Job())}));
  const std::string hash = TrainerTemplateHash(Job(), Policy());
  EXPECT_EQ(hash.size(), 10u);
  EXPECT_EQ(pod["metadata"]["labels"], StandardLabels("sluice-trainer", "train", "trainer",
                                                      {{"sluice.dev/trainer-job", "train"},
                                                       {"sluice.dev/policy", "actor"},
                                                       {"sluice.dev/dataflow", "arith"},
                                                       {"sluice.dev/rank", "1"},
                                                       {"sluice.dev/attempt", "2"},
                                                       {"sluice.dev/template-hash", hash}}));
  EXPECT_EQ(pod["metadata"]["annotations"],
            json({{"sluice.dev/config-hash",
                   JsonHash(DesiredTrainerConfigMap(Job(), Policy(), Dataflow())["data"])},
                  {"prometheus.io/scrape", "true"},
                  {"prometheus.io/port", "8080"},
                  {"prometheus.io/path", "/metrics"},
                  {"prometheus.io/scheme", "https"}}));
  // The Service's selector picks the Pod.
  for (const auto& [k, v] : DesiredTrainerService(Job())["spec"]["selector"].items()) {
    EXPECT_EQ(pod["metadata"]["labels"][k], v) << k;
  }
  EXPECT_EQ(pod["spec"]["hostname"], "train-1");
  EXPECT_EQ(pod["spec"]["subdomain"], "train");
  EXPECT_EQ(Pod(Job(), 0, 0)["spec"]["hostname"], "train-0");  // MasterAddress resolves to it.
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(pod["spec"]["enableServiceLinks"], false);
  EXPECT_EQ(pod["spec"]["terminationGracePeriodSeconds"], 60);
  EXPECT_EQ(pod["spec"]["nodeSelector"], json({{"pool", "training"}}));
  EXPECT_EQ(pod["spec"]["tolerations"], Job()["spec"]["template"]["tolerations"]);
  EXPECT_EQ(pod["spec"]["serviceAccountName"], "trainer-sa");
}

TEST(TrainerJobChildrenTest, RankPodEnvironmentInOrder) {
  const json c = Pod(Job(), 3, 5)["spec"]["containers"][0];
  EXPECT_EQ(c["name"], "trainer");
  EXPECT_EQ(c["image"], "sluice/trainer:0.1.0");
  EXPECT_EQ(c["imagePullPolicy"], "IfNotPresent");
  EXPECT_EQ(EnvNames(c), (std::vector<std::string>{
                             "POD_IP", "POD_NAME", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE",
                             "RANK", "LOCAL_RANK", "NNODES", "NODE_RANK", "SLUICE_ATTEMPT",
                             "TMPDIR", "CUDA_CACHE_PATH", "NCCL_DEBUG", "HF_TOKEN"}));
  EXPECT_EQ(c["env"][0], json::parse(R"({"name": "POD_IP",
                                         "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})"));
  EXPECT_EQ(c["env"][1], json::parse(R"({"name": "POD_NAME",
                            "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}})"));
  EXPECT_EQ(EnvValue(c, "MASTER_ADDR"), "train-0.train.rl.svc");
  EXPECT_EQ(EnvValue(c, "MASTER_PORT"), "29500");
  EXPECT_EQ(EnvValue(c, "WORLD_SIZE"), "4");
  EXPECT_EQ(EnvValue(c, "RANK"), "3");
  EXPECT_EQ(EnvValue(c, "LOCAL_RANK"), "0");
  EXPECT_EQ(EnvValue(c, "NNODES"), "4");
  EXPECT_EQ(EnvValue(c, "NODE_RANK"), "3");
  EXPECT_EQ(EnvValue(c, "SLUICE_ATTEMPT"), "5");
  // The scratch directory (the root file system is read-only), before the template's env so a
  // template may point TMPDIR elsewhere.
  EXPECT_EQ(EnvValue(c, "TMPDIR"), "/tmp");
  EXPECT_EQ(EnvValue(c, "CUDA_CACHE_PATH"), "/tmp/cuda-cache");
  EXPECT_EQ(c["env"][12], Job()["spec"]["template"]["env"][0]);  // Verbatim.
  EXPECT_EQ(c["env"][13], Job()["spec"]["template"]["env"][1]);

  WorkerImages images;
  images.trainer = "registry/trainer:dev";
  images.pull_policy = "Always";
  const json custom = DesiredRankPod(Job(), Policy(), Dataflow(), 0, 0, images);
  EXPECT_EQ(custom["spec"]["containers"][0]["image"], "registry/trainer:dev");
  EXPECT_EQ(custom["spec"]["containers"][0]["imagePullPolicy"], "Always");
}

TEST(TrainerJobChildrenTest, RankPodArgsWithoutCheckpoint) {
  const json pod = Pod(Job());
  const json& c = pod["spec"]["containers"][0];
  EXPECT_EQ(
      c["args"],
      json::array(
          {"--config=/etc/sluice/config/trainer.json", "--dataflow-url=https://arith.rl.svc:8080",
           "--tls-ca-file=/var/run/sluice/dataflow-ca/ca.crt",
           "--token-file=/var/run/sluice/token/token",
           "--rollout-token-file=/var/run/sluice/rollout-token/token", "--address=$(POD_IP)",
           "--port=8080", "--tls-cert-file=/var/run/sluice/tls/tls.crt",
           "--tls-key-file=/var/run/sluice/tls/tls.key", "--advertise-address=train-1.train.rl.svc",
           "--metrics-require-token=false", "--rank=$(RANK)", "--world-size=$(WORLD_SIZE)",
           "--master-addr=$(MASTER_ADDR)", "--master-port=$(MASTER_PORT)", "--steps=500",
           "--final-weights-grace=120s"}));
  // The Dataflow's token, and the rollout replicas' (admitted for weight reads only).
  EXPECT_EQ(pod["spec"]["volumes"], json::parse(R"([
    {"name": "config", "configMap": {"name": "train-config"}},
    {"name": "token", "secret": {"secretName": "arith-token"}},
    {"name": "rollout-token", "secret": {"secretName": "arith-rollout-token"}},
    {"name": "dataflow-ca", "configMap": {"name": "arith-ca"}},
    {"name": "tls", "secret": {"secretName": "train-trainer-tls"}},
    {"name": "tmp", "emptyDir": {}}])"));
  EXPECT_EQ(c["volumeMounts"], json::parse(R"([
    {"name": "config", "mountPath": "/etc/sluice/config", "readOnly": true},
    {"name": "token", "mountPath": "/var/run/sluice/token", "readOnly": true},
    {"name": "rollout-token", "mountPath": "/var/run/sluice/rollout-token", "readOnly": true},
    {"name": "dataflow-ca", "mountPath": "/var/run/sluice/dataflow-ca", "readOnly": true},
    {"name": "tls", "mountPath": "/var/run/sluice/tls", "readOnly": true},
    {"name": "tmp", "mountPath": "/tmp"}])"));
}

TEST(TrainerJobChildrenTest, RankPodArgsAndVolumesWithCheckpoint) {
  const json pod = Pod(JobWithCheckpoint("/runs/a"));
  const json& c = pod["spec"]["containers"][0];
  ASSERT_EQ(c["args"].size(), 18u);
  EXPECT_EQ(c["args"][15], "--steps=500");
  EXPECT_EQ(c["args"][17], "--checkpoint-dir=/var/lib/sluice/checkpoints/runs/a");
  EXPECT_EQ(pod["spec"]["volumes"][5], json::parse(R"({"name": "checkpoints",
                            "persistentVolumeClaim": {"claimName": "ckpt"}})"));
  EXPECT_EQ(c["volumeMounts"][5],
            json::parse(R"({"name": "checkpoints", "mountPath": "/var/lib/sluice/checkpoints"})"));
  // The default path "/" is the mount itself; a trailing '/' is dropped.
  EXPECT_EQ(Pod(JobWithCheckpoint("/"))["spec"]["containers"][0]["args"][17],
            "--checkpoint-dir=/var/lib/sluice/checkpoints");
  EXPECT_EQ(Pod(JobWithCheckpoint("/runs/b/"))["spec"]["containers"][0]["args"][17],
            "--checkpoint-dir=/var/lib/sluice/checkpoints/runs/b");
  json no_path = JobWithCheckpoint("/");
  no_path["spec"]["checkpoint"]["pvc"].erase("path");
  EXPECT_EQ(Pod(no_path)["spec"]["containers"][0]["args"][17],
            "--checkpoint-dir=/var/lib/sluice/checkpoints");
}

TEST(TrainerJobChildrenTest, RankPodPortsProbesAndResources) {
  const json c = Pod(Job())["spec"]["containers"][0];
  EXPECT_EQ(c["ports"], json::parse(R"([
    {"name": "http", "containerPort": 8080, "protocol": "TCP"},
    {"name": "rendezvous", "containerPort": 29500, "protocol": "TCP"}])"));
  // The rank serves HTTPS (its certificate from the namespace's CA): the probes say so.
  EXPECT_EQ(c["readinessProbe"]["httpGet"],
            json({{"path", "/readyz"}, {"port", "http"}, {"scheme", "HTTPS"}}));
  EXPECT_EQ(c["readinessProbe"]["periodSeconds"], 2);
  EXPECT_EQ(c["livenessProbe"]["httpGet"],
            json({{"path", "/healthz"}, {"port", "http"}, {"scheme", "HTTPS"}}));
  EXPECT_EQ(c["livenessProbe"]["periodSeconds"], 10);
  EXPECT_EQ(c["livenessProbe"]["failureThreshold"], 6);
  // What the template sets is requested and the limit.
  const json amounts = {{"cpu", "32"}, {"memory", "512Gi"}, {"nvidia.com/gpu", "8"}};
  EXPECT_EQ(c["resources"], json({{"requests", amounts}, {"limits", amounts}}));

  // Without resources a rank requests the trainer's defaults (2 CPUs, 4Gi), with no limits.
  json bare = Job();
  bare["spec"].erase("template");
  const json p = Pod(bare);
  EXPECT_EQ(p["spec"]["containers"][0]["resources"],
            json({{"requests", {{"cpu", "2"}, {"memory", "4Gi"}}}}));
  EXPECT_FALSE(p["spec"].contains("nodeSelector"));
  EXPECT_FALSE(p["spec"].contains("tolerations"));
  EXPECT_FALSE(p["spec"].contains("serviceAccountName"));
  EXPECT_EQ(EnvNames(p["spec"]["containers"][0]).size(), 12u);

  // Only memory set: memory is requested and limited, cpu requested at the default.
  json memory_only = Job();
  memory_only["spec"]["template"]["resources"] = {{"gpus", 0}, {"memory", "8Gi"}};
  EXPECT_EQ(
      Pod(memory_only)["spec"]["containers"][0]["resources"],
      json({{"requests", {{"cpu", "2"}, {"memory", "8Gi"}}}, {"limits", {{"memory", "8Gi"}}}}));
}

TEST(TrainerJobChildrenTest, TemplateHashIgnoresRunPolicyAndFollowsTheSpecAndPolicy) {
  const std::string base = TrainerTemplateHash(Job(), Policy());
  EXPECT_EQ(base, TrainerTemplateHash(Job(), Policy()));  // Stable.

  json suspended = Job();
  suspended["spec"]["runPolicy"] = {
      {"suspend", true}, {"backoffLimit", 7}, {"activeDeadlineSeconds", 3600}};
  json no_run_policy = Job();
  no_run_policy["spec"].erase("runPolicy");
  json status_changed = Job();
  status_changed["status"] = {{"phase", "Suspended"}, {"restarts", 2}};
  json policy_status = Policy();
  policy_status["status"]["version"] = 100;
  for (const json& j : {suspended, no_run_policy, status_changed}) {
    EXPECT_EQ(TrainerTemplateHash(j, Policy()), base);
    EXPECT_EQ(Pod(j)["metadata"]["labels"][kTemplateHashLabel], base);
  }
  EXPECT_EQ(TrainerTemplateHash(Job(), policy_status), base);

  json lr = Job();
  lr["spec"]["optimizer"]["lr"] = 2e-6;
  json replicas = Job();
  replicas["spec"]["replicas"] = 8;
  json policy_spec = Policy();
  policy_spec["spec"]["weightSync"]["mode"] = "delta";
  EXPECT_NE(TrainerTemplateHash(lr, Policy()), base);
  EXPECT_NE(Pod(lr)["metadata"]["labels"][kTemplateHashLabel], base);
  EXPECT_NE(TrainerTemplateHash(replicas, Policy()), base);
  EXPECT_NE(TrainerTemplateHash(Job(), policy_spec), base);
  EXPECT_NE(TrainerTemplateHash(JobWithCheckpoint("/"), Policy()), base);

  // The rank and attempt are labels of their own, not part of the hash.
  EXPECT_EQ(Pod(Job(), 0, 0)["metadata"]["labels"][kTemplateHashLabel], base);
  EXPECT_EQ(Pod(Job(), 3, 9)["metadata"]["labels"][kTemplateHashLabel], base);
}

TEST(TrainerJobChildrenTest, RankPodCurrentNeedsTheAttemptAndTheTemplateHash) {
  const std::string hash = TrainerTemplateHash(Job(), Policy());
  const json pod = Pod(Job(), 1, 2);
  EXPECT_TRUE(RankPodCurrent(pod, 2, hash));
  EXPECT_FALSE(RankPodCurrent(pod, 1, hash));
  EXPECT_FALSE(RankPodCurrent(pod, 3, hash));
  json lr = Job();
  lr["spec"]["optimizer"]["lr"] = 2e-6;
  EXPECT_FALSE(RankPodCurrent(pod, 2, TrainerTemplateHash(lr, Policy())));
  EXPECT_FALSE(RankPodCurrent(pod, 2, ""));
  json unlabelled = pod;
  unlabelled["metadata"].erase("labels");
  EXPECT_FALSE(RankPodCurrent(unlabelled, 2, hash));
  EXPECT_FALSE(RankPodCurrent(json::object(), 0, hash));
}

json PvcPolicy(const std::string& claim, const std::string& path) {
  json policy = Policy();
  policy["spec"]["model"]["source"] = {{"pvc", {{"claimName", claim}, {"path", path}}}};
  return policy;
}

TEST(TrainerJobChildrenTest, RankPodMountsThePolicysClaimReadOnly) {
  const json pod = DesiredRankPod(JobWithCheckpoint("/"), PvcPolicy("qwen", "/qwen3"), Dataflow(),
                                  0, 0, WorkerImages{});
  const json& volumes = pod["spec"]["volumes"];
  const json& mounts = pod["spec"]["containers"][0]["volumeMounts"];
  // config, the two tokens, the dataflow's CA, the serving certificate, checkpoints, the model,
  // then the scratch emptyDir.
  ASSERT_EQ(volumes.size(), 8u) << volumes.dump();
  ASSERT_EQ(mounts.size(), 8u) << mounts.dump();
  const std::string volume = "model-" + JsonHash(json("qwen"));
  EXPECT_EQ(volumes[6],
            json({{"name", volume},
                  {"persistentVolumeClaim", {{"claimName", "qwen"}, {"readOnly", true}}}}));
  EXPECT_EQ(
      mounts[6],
      json({{"name", volume}, {"mountPath", "/var/lib/sluice/model/actor"}, {"readOnly", true}}));
  EXPECT_EQ(volumes[7]["name"], "tmp");
  // A Policy loaded from a path or built in mounts nothing more.
  EXPECT_EQ(Pod(Job())["spec"]["volumes"].size(), 6u);
  json builtin = Policy();
  builtin["spec"]["model"]["source"] = {{"builtin", json::object()}};
  EXPECT_EQ(
      DesiredRankPod(Job(), builtin, Dataflow(), 0, 0, WorkerImages{})["spec"]["volumes"].size(),
      6u);
  // Another claim is another template: the gang is replaced.
  EXPECT_NE(TrainerTemplateHash(Job(), PvcPolicy("qwen", "/")),
            TrainerTemplateHash(Job(), PvcPolicy("llama", "/")));
}

TEST(TrainerJobChildrenTest, LongJobNameGivesValidNamesLabelsAndSelector) {
  json job = Job();
  const std::string long_name = std::string(100, 't') + ".team-a";
  job["metadata"]["name"] = long_name;
  const json svc = DesiredTrainerService(job);
  const std::string svc_name = svc["metadata"]["name"];
  EXPECT_LE(svc_name.size(), 63u);
  EXPECT_EQ(svc_name.find('.'), std::string::npos);
  EXPECT_EQ(svc_name, TrainerServiceName(long_name));
  // The Service selects what the rank Pods carry, and the controller matches on JobLabelValue.
  const json pod = DesiredRankPod(job, Policy(), Dataflow(), 3, 0, WorkerImages{});
  EXPECT_EQ(svc["spec"]["selector"][kTrainerJobLabel], pod["metadata"]["labels"][kTrainerJobLabel]);
  EXPECT_EQ(pod["metadata"]["labels"][kTrainerJobLabel], JobLabelValue(long_name));
  for (const auto& [key, value] : pod["metadata"]["labels"].items()) {
    const std::string v = value.get<std::string>();
    EXPECT_LE(v.size(), 63u) << key;
    EXPECT_EQ(v, LabelValue(v)) << key << " is not a valid label value: " << v;
  }
  // The rank Pod's name is its hostname (a DNS label) under the Service's subdomain.
  const std::string pod_name = pod["metadata"]["name"];
  EXPECT_LE(pod_name.size(), 63u);
  EXPECT_EQ(pod_name.substr(pod_name.size() - 2), "-3");
  EXPECT_EQ(pod_name.find('.'), std::string::npos);
  EXPECT_EQ(pod["spec"]["hostname"], pod_name);
  EXPECT_EQ(pod["spec"]["subdomain"], svc_name);
  EXPECT_EQ(MasterAddress(job), RankPodName(long_name, 0) + "." + svc_name + ".rl.svc");
  // Distinct long names stay distinct.
  EXPECT_NE(TrainerServiceName(long_name), TrainerServiceName(long_name + "x"));
  EXPECT_NE(RankPodName(long_name, 0), RankPodName(long_name + "x", 0));
  EXPECT_NE(JobLabelValue(long_name), JobLabelValue(long_name + "x"));
  // The ConfigMap keeps the job's name up to the 253-character limit.
  EXPECT_EQ(TrainerConfigMapName(long_name), long_name + "-config");
  const std::string longest(253, 't');
  EXPECT_LE(TrainerConfigMapName(longest).size(), 253u);
  EXPECT_EQ(DesiredTrainerConfigMap(job, Policy(), Dataflow())["metadata"]["name"],
            TrainerConfigMapName(long_name));
}

TEST(TrainerJobChildrenTest, RankPodIsHardenedWithAReadOnlyRootAndAScratchDir) {
  const json spec = Pod(Job())["spec"];
  EXPECT_EQ(spec["securityContext"], json::parse(R"({"runAsNonRoot": true, "runAsUser": 65532,
      "runAsGroup": 65532, "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}})"));
  EXPECT_EQ(spec["automountServiceAccountToken"], false);
  const json& c = spec["containers"][0];
  EXPECT_EQ(c["securityContext"], json::parse(R"({"allowPrivilegeEscalation": false,
      "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": true})"));
  // /tmp is the one writable place besides the checkpoint claim.
  EXPECT_EQ(spec["volumes"].back(), json::parse(R"({"name": "tmp", "emptyDir": {}})"));
  EXPECT_EQ(c["volumeMounts"].back(), json::parse(R"({"name": "tmp", "mountPath": "/tmp"})"));
  const json checkpointed = Pod(JobWithCheckpoint("/"))["spec"];
  EXPECT_EQ(checkpointed["volumes"].back()["name"], "tmp");
  EXPECT_EQ(checkpointed["containers"][0]["volumeMounts"].back()["mountPath"], "/tmp");
}

TEST(TrainerJobChildrenTest, TemplateSecurityContextsOverrideTheDefaultsFieldByField) {
  json job = Job();
  job["spec"]["template"]["securityContext"] = json::parse(R"({"runAsUser": 0,
      "runAsNonRoot": false, "seccompProfile": {"type": "Unconfined"}})");
  job["spec"]["template"]["containerSecurityContext"] = json::parse(R"({"privileged": true,
      "capabilities": {"add": ["SYS_PTRACE"]}})");
  const json spec = Pod(job)["spec"];
  // Set fields win; runAsGroup and fsGroup keep the restricted defaults.
  EXPECT_EQ(spec["securityContext"], json::parse(R"({"runAsUser": 0, "runAsNonRoot": false,
      "seccompProfile": {"type": "Unconfined"}, "runAsGroup": 65532, "fsGroup": 65532})"));
  // Privileged: no allowPrivilegeEscalation default (Kubernetes refuses false with it); the
  // other capabilities are still dropped and the root file system stays read-only.
  EXPECT_EQ(spec["containers"][0]["securityContext"], json::parse(R"({"privileged": true,
      "capabilities": {"add": ["SYS_PTRACE"], "drop": ["ALL"]},
      "readOnlyRootFilesystem": true})"));
  // A change of the template is a change of the spec: the gang is replaced.
  EXPECT_NE(TrainerTemplateHash(job, Policy()), TrainerTemplateHash(Job(), Policy()));
}

}  // namespace
}  // namespace sluice::controllers
