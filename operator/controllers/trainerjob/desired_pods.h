// The objects the operator runs a TrainerJob with, as pure functions of the TrainerJob (validated
// and defaulted), the Policy spec.policyRef names, the Dataflow spec.dataflowRef names and the
// operator's settings (docs/operator.md, "TrainerJob"):
//
//   Service    <job>           headless (clusterIP None, publishNotReadyAddresses), selecting the
//                              job's rank Pods: gives each rank the stable DNS name
//                              <job>-<rank>.<job>.<ns>.svc, so MASTER_ADDR (rank 0) resolves
//                              before any rank is ready; ports 8080 "http", 29500 "rendezvous"
//   ConfigMap  <job>-config    trainer.json: {"trainerJob": {apiVersion, kind, metadata{name,
//                              namespace}, spec}, "policy": {the same for the Policy},
//                              "dataflow": {the same for the Dataflow}}
//   Secret     <job>-trainer-tls
//                              kubernetes.io/tls: the ranks' serving certificate from the
//                              namespace's CA (namespace_certificates.h) for every rank's stable
//                              name (TrainerServingHosts: *.<job>.<ns>.svc[.cluster.local]), so
//                              it does not change with spec.replicas
//   Pod        <job>-<rank>    one rank of the data-parallel gang (sluice-trainer), rank 0 ..
//                              spec.replicas-1; restartPolicy Never: a failed rank fails the
//                              attempt and the operator replaces the whole gang (attempt + 1)
//
// Every child carries StandardLabels("sluice-trainer", <job>, "trainer") plus
// sluice.dev/trainer-job=<job> and sluice.dev/policy=<spec.policyRef.name>; rank Pods also carry
// sluice.dev/dataflow, sluice.dev/rank, sluice.dev/attempt and sluice.dev/template-hash, and the
// annotations sluice.dev/config-hash (JsonHash of the ConfigMap's data) and the Prometheus ones
// (ScrapeAnnotations(8080), dataflow/desired_objects.h). All are controlled by the
// TrainerJob (ownerReferences). Label values go through LabelValue (JobLabelValue for the
// trainer-job label) and names through DnsLabelName / SubdomainName (labels.h): a job name that is
// longer than 63 characters, or holds '.', gives a truncated, hashed Service and rank Pod name
// (they are DNS labels); short names are used as they are.
//
// With a Policy whose spec.model.source is pvc, rank Pods mount its claim read-only at
// /var/lib/sluice/model/<policy> (policy_model_volumes.h); the critic and the reference model
// load from the same Policy.
//
// Rank Pods are hardened (pod_hardening.h: restricted securityContext, read-only root file
// system), with spec.template.securityContext and containerSecurityContext winning field by
// field; an emptyDir "tmp" is mounted at /tmp for the trainer's scratch files (worker_scratch.h).
// Resources: WorkerResources(spec.template.resources, kTrainerDefaultRequests)
// (worker_resources.h): what the template sets is requested and the limit; an unset cpu or
// memory is requested at 2 / 4Gi without a limit.
//
// The template hash (TrainerTemplateHash) covers the TrainerJob's spec without spec.runPolicy and
// the Policy's spec: suspending, resuming or changing the backoff limit or deadlines never makes a
// rank stale; any other spec change, or a change of the Policy's spec, does. It leaves out the
// operator's settings (WorkerImages): changing those affects the next attempt only.
//
// The TRAINER WORKER CONTRACT (sluice-trainer implements it):
//
//   args, in this order:
//     --config=/etc/sluice/config/trainer.json     the ConfigMap above, mounted read-only
//     --dataflow-url=<DataflowEndpoint(dataflow)>  https://<df>.<ns>.svc:8080, where batches
//                                                  come from
//     --tls-ca-file=/var/run/sluice/dataflow-ca/ca.crt
//                                                  the namespace's CA (ConfigMap <df>-ca): verifies
//                                                  the dataflow
//     --token-file=/var/run/sluice/token/token     the Dataflow's bearer token (Secret
//                                                  <df>-token, key "token", mounted read-only)
//     --rollout-token-file=/var/run/sluice/rollout-token/token
//                                                  the rollout replicas' token (Secret
//                                                  <df>-rollout-token): admitted for reading
//                                                  rank 0's weight versions only
//     --address=$(POD_IP)                          bind the pod's own address
//     --port=8080                                  the HTTPS port below
//     --tls-cert-file=/var/run/sluice/tls/tls.crt  the Secret <job>-trainer-tls, mounted read-only
//     --tls-key-file=/var/run/sluice/tls/tls.key   (re-read when it is renewed)
//     --advertise-address=<job>-<rank>.<job>.<ns>.svc
//                                                  the host of the weight URLs rank 0 announces,
//                                                  a name its certificate holds (RankServerName)
//     --metrics-require-token=false                /metrics open to Prometheus (kOpenMetricsArg)
//     --rank=$(RANK)
//     --world-size=$(WORLD_SIZE)
//     --master-addr=$(MASTER_ADDR)                 rank 0: <job>-0.<job>.<ns>.svc
//     --master-port=$(MASTER_PORT)                 29500, rank 0's rendezvous port
//     --steps=N                                    spec.steps
//     --checkpoint-dir=/var/lib/sluice/checkpoints<spec.checkpoint.pvc.path>
//                                                  only with spec.checkpoint: the claim is mounted
//                                                  at /var/lib/sluice/checkpoints (read-write);
//                                                  path "/" gives the mount itself, other paths
//                                                  lose their trailing '/'. The worker resumes
//                                                  from the newest complete checkpoint there.
//   env, in this order, then spec.template.env verbatim:
//     POD_IP, POD_NAME (downward API), MASTER_ADDR, MASTER_PORT, WORLD_SIZE (spec.replicas),
//     RANK, LOCAL_RANK ("0": one rank per Pod), NNODES (spec.replicas), NODE_RANK (= RANK),
//     SLUICE_ATTEMPT (the gang attempt, 0 first; the worker may log it or seed with it),
//     TMPDIR=/tmp, CUDA_CACHE_PATH=/tmp/cuda-cache (ScratchEnv, worker_scratch.h).
//   ports: 8080 "http", 29500 "rendezvous" (torch.distributed-style TCP store on rank 0).
//   HTTPS on port 8080 ("http"; the probes and Prometheus use scheme https):
//     GET /healthz         200 while the process is alive, including during rendezvous and model
//                          load; 60 s without an answer kills the container, and with
//                          restartPolicy Never that fails the Pod and so the attempt.
//     GET /readyz          200 once the rank has joined the gang and loaded the model.
//     GET /metrics         Prometheus text, without the token.
//     GET /v1/status       {"phase": "Running"|"Succeeded"|"Failed"|"Starved", "step": int
//                          (optimizer steps completed), "version": int (newest published weight
//                          version), "metrics": {"loss", "rewardMean", "kl", "entropy",
//                          "tokensPerSecond", "stalenessMean", "dataWaitFraction"} (of the last
//                          completed step; numbers), "lastCheckpointStep": int (0 without one),
//                          "message": string (why, e.g. for Starved; optional)}. Rank 0's answer
//                          is the job's; the other ranks answer the same shape. "Starved": the
//                          Dataflow can never feed the job again before spec.steps; the worker
//                          keeps running (and answering) until SIGTERM, and the job ends Failed.
//     GET /v1/weights/<v>  rank 0 only: the weights of version v (WeightsUrl), for rollout
//                          workers, kept for the Policy's retention window.
//   The process exits 0 after the last step (and its checkpoint, when configured); any other exit
//   fails the attempt. SIGTERM (suspend, gang restart) gets terminationGracePeriodSeconds 60 to
//   finish its step and exit (it writes no checkpoint then: the next attempt resumes from the
//   newest periodic one).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "operator/controllers/dataflow/desired_objects.h"

namespace sluice::controllers {

inline constexpr int kTrainerPort = 8080;
inline constexpr int kRendezvousPort = 29500;
// Label on the Service and the rank Pods: the TrainerJob they serve (the Service's selector).
inline constexpr char kTrainerJobLabel[] = "sluice.dev/trainer-job";
// Where a rank Pod's volumes are mounted.
inline constexpr char kTrainerConfigDir[] = "/etc/sluice/config";
inline constexpr char kTrainerTokenDir[] = "/var/run/sluice/token";
inline constexpr char kTrainerCheckpointDir[] = "/var/lib/sluice/checkpoints";
inline constexpr int kTrainerTerminationGracePeriodSeconds = 60;

// "<job>-<rank>", a DNS label (it is the Pod's hostname): DnsLabelName(job, "-<rank>").
std::string RankPodName(const std::string& job, int rank);
// "<job>": the headless Service, a DNS label: DnsLabelName(job).
std::string TrainerServiceName(const std::string& job);
// "<job>-config": SubdomainName(job, "-config").
std::string TrainerConfigMapName(const std::string& job);
// The sluice.dev/trainer-job label value of the job's children, LabelValue(job): what the
// Service selects and the controller matches rank Pods by.
std::string JobLabelValue(const std::string& job);

// "<job>-0.<job>.<ns>.svc": rank 0's stable DNS name through the headless Service.
std::string MasterAddress(const nlohmann::json& job);
// "https://<job>-0.<job>.<ns>.svc:8080/v1/weights/<version>": where rollout workers download
// weight version `version` (the Policy's status.weightsURL).
std::string WeightsUrl(const nlohmann::json& job, int64_t version);

// "<job>-<rank>.<job>.<ns>.svc": a rank's stable name, which its certificate holds; the operator
// verifies it when it calls the rank at its pod IP (ClientTlsOptions::server_name).
std::string RankServerName(const nlohmann::json& job, int rank);
// "*.<job>.<ns>.svc", "*.<job>.<ns>.svc.cluster.local": the names of the ranks' certificate.
std::vector<std::string> TrainerServingHosts(const nlohmann::json& job);
// "<job>-trainer-tls": SubdomainName(job, "-trainer-tls") (a Dataflow of the job's name has
// "<name>-tls").
std::string TrainerTlsSecretName(const std::string& job);
// The serving Secret's metadata: name, namespace, the job's labels, owned by the job.
nlohmann::json TrainerTlsSecretMeta(const nlohmann::json& job);

// JsonHash of {"spec": job spec without runPolicy, "policy": policy spec}: the value of the
// sluice.dev/template-hash label of the job's current rank Pods.
std::string TrainerTemplateHash(const nlohmann::json& job, const nlohmann::json& policy);

nlohmann::json DesiredTrainerService(const nlohmann::json& job);
nlohmann::json DesiredTrainerConfigMap(const nlohmann::json& job, const nlohmann::json& policy,
                                       const nlohmann::json& dataflow);
// The Pod of rank `rank` (0 .. spec.replicas-1) of gang attempt `attempt` (0 first).
nlohmann::json DesiredRankPod(const nlohmann::json& job, const nlohmann::json& policy,
                              const nlohmann::json& dataflow, int rank, int attempt,
                              const WorkerImages& images);

// Whether `pod` belongs to gang attempt `attempt` and was built from `template_hash` (its
// sluice.dev/attempt and sluice.dev/template-hash labels; an empty hash matches nothing).
bool RankPodCurrent(const nlohmann::json& pod, int attempt, const std::string& template_hash);

}  // namespace sluice::controllers
