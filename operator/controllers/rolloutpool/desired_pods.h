// The replica Pods the operator runs a RolloutPool with, as pure functions of the RolloutPool
// (validated and defaulted), its placement region, the referenced Dataflow and the operator's
// settings (docs/operator.md, "RolloutPool"):
//
//   Pod  <pool>-<region>-<index>   one inference replica (sluice-rollout), restartPolicy Always;
//        (<pool>-<index> without    readiness /readyz, liveness /healthz; labelled with the
//         spec.placement)           template hash so a change of what it is made from rolls it
//
// Every replica carries StandardLabels("sluice-rollout", <pool>, "rollout") plus
// sluice.dev/pool, sluice.dev/region (with placement), sluice.dev/replica-index,
// sluice.dev/template-hash, sluice.dev/dataflow, and sluice.dev/policy when the pool hosts
// exactly one Policy (values through LabelValue: a pool name over 63 characters is truncated
// and hashed); it is controlled by the RolloutPool (ownerReferences). Its annotations are the
// Prometheus ones (ScrapeAnnotations(8080), dataflow/desired_objects.h).
//
// Each hosted Policy whose spec.model.source is pvc has its claim mounted read-only at
// /var/lib/sluice/model/<policy> (policy_model_volumes.h). After those come the writable
// emptyDirs (worker_scratch.h): "tmp" at /tmp always, and with engine vllm or sglang "weights"
// at /var/lib/sluice/weights, then the server's own "engine-tmp" and "dshm" (external_engine.h).
//
// Replicas are hardened (pod_hardening.h: restricted securityContext, read-only root file
// system), with spec.template.securityContext and containerSecurityContext winning field by
// field. Resources: WorkerResources(spec.template.resources, kRolloutDefaultRequests)
// (worker_resources.h): what the template sets is requested and the limit; an unset cpu or
// memory is requested at 1 / 2Gi without a limit.
//
// The template hash (PoolTemplateHash) covers kRolloutWorkerContract, spec.engine,
// spec.template, spec.policies (as a set), spec.dataflowRef and the hosted Policies' model mounts
// (claim and directory, only when there are any, so pools without pvc models keep their hash) and,
// with an external engine, the directory its server loads: what a replica is made from. Other
// changes of a Policy reach the replicas through the ConfigMap. It leaves out spec.replicas,
// spec.placement, spec.autoscaling, spec.drain and spec.updateStrategy, so scaling, re-placing
// or retuning drain never rolls replicas. It also leaves out the operator's settings
// (WorkerImages) and the region's nodeSelector: changing those affects new replicas only.
//
// The worker contract (sluice-rollout implements it):
//
//   args, in this order, then (builtin engine) spec.engine.args appended verbatim:
//     --dataflow-url=<DataflowEndpoint(dataflow)>   https://<df>.<ns>.svc:8080
//     --token-file=/var/run/sluice/token/token      the rollout replicas' bearer token (Secret
//                                                   <df>-rollout-token, key "token", mounted
//                                                   read-only): lease, submit, read versions
//                                                   and weights, and on this replica only its
//                                                   relay's weight reads (what peers need)
//     --control-token-file=/var/run/sluice/control-token/token
//                                                   the operator's token for this pool (Secret
//                                                   <pool>-control-token, read-only): every
//                                                   route of the replica, so that only the
//                                                   operator drains it or sets its relay
//     --policies=<p1,p2,...>                        spec.policies, sorted, comma-separated
//     --engine=<builtin|vllm|sglang>                spec.engine.type
//     --tensor-parallel-size=N                      spec.engine.tensorParallelSize
//     --max-batch-tokens=N                          spec.engine.maxBatchTokens
//     --max-concurrent-sequences=N                  spec.engine.maxConcurrentSequences
//     --kv-cache-fraction=F                         spec.engine.kvCacheFraction (shortest form,
//                                                   e.g. 0.85)
//     --address=$(POD_IP)                           bind the pod's own address
//     --port=8080
//     --metrics-require-token=false                 /metrics open to Prometheus (kOpenMetricsArg)
//     --region=$(SLUICE_REGION)                     the placement region; empty without one
//     --replica=$(POD_NAME)                         the Pod's name
//     --policy-config=/etc/sluice/config/rollout.json  the pool's ConfigMap <pool>-rollout-config
//                                                   (DesiredRolloutConfigMap), mounted read-only
//     --sandbox-isolation=<namespaces|...>          spec.sandbox.isolation
//     --tls-ca-file=/var/run/sluice/dataflow-ca/ca.crt
//                                                   the namespace's CA (ConfigMap <df>-ca):
//                                                   verifies the dataflow, the trainers and the
//                                                   relays
//     --tls-cert-file=/var/run/sluice/tls/tls.crt   the Secret <pool>-rollout-tls, mounted
//     --tls-key-file=/var/run/sluice/tls/tls.key    read-only: the replica serves HTTPS
//     --relay-server-name=<RolloutServerName(pool)> the name relays are verified under (they are
//                                                   reached at their pod IP)
//   with spec.engine.type vllm or sglang, instead of spec.engine.args (which go to the server):
//     --engine-url=http://$(POD_IP):8000            the server in the "engine" container
//     --served-model-name=<policy>                  the one hosted Policy
//     --weights-volume=/var/lib/sluice/weights      the emptyDir both containers mount
//   The server's container, its volumes and probes: external_engine.h. The worker then requests
//   only kExternalEngineWorkerRequests (the replica's GPUs are the server's), and its image is
//   always the operator's rollout image (spec.engine.image is the server's).
//   env: POD_IP, POD_NAME (downward API), SLUICE_REGION, TMPDIR=/tmp,
//        CUDA_CACHE_PATH=/tmp/cuda-cache (ScratchEnv), then spec.template.env verbatim.
//   HTTPS on port 8080 ("http"; the probes and Prometheus use scheme https), with the pool's
//   serving certificate from the namespace's CA (namespace_certificates.h) for one name,
//   RolloutServerName: the operator and the relays' peers call replicas at their pod IP and verify
//   that name (a role's, not a host's; nothing resolves it):
//     GET  /healthz    200 while the process is alive, including while the model loads (the
//                      liveness probe restarts the container after 60 s without an answer).
//     GET  /readyz     200 once every hosted Policy is loaded and the replica takes work.
//     GET  /metrics    Prometheus text, without the token.
//     GET  /v1/status  {"in_flight": int, "draining": bool, "drained": bool,
//                       "policies": [{"name": str, "version": int}],
//                       "tokens_per_second": double (average over the last minute)}
//     POST /v1/relay   {"url": str}: the peer to fetch new versions from ("": the trainer); the
//                      status reply reports it as "weights": {"relay": str}. Sent to ready
//                      replicas with spec.placement (their region's relay) and to joining
//                      replicas of any pool (a ready peer; operator/placement/weight_relays.h).
//     POST /v1/drain   stop leasing new work, finish (or return) what is in flight, then report
//                      drained: true. The Pod is deleted after spec.drain.gracePeriodSeconds at
//                      the latest; terminationGracePeriodSeconds adds 30 s for SIGTERM.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "operator/controllers/dataflow/desired_objects.h"

namespace sluice::controllers {

inline constexpr int kRolloutPort = 8080;
// The version of the worker contract below: raised when a replica made by an older operator
// would not work with this one (it changes the template hash, so an upgrade rolls the pools).
// 2: HTTPS (the pool's serving certificate) and the pool's control token.
inline constexpr int kRolloutWorkerContract = 2;
// Where the pool's control token Secret is mounted in a replica.
inline constexpr char kRolloutControlTokenDir[] = "/var/run/sluice/control-token";
// Where the Dataflow's token Secret is mounted in a replica.
inline constexpr char kRolloutTokenDir[] = "/var/run/sluice/token";
// Where the pool's ConfigMap (rollout.json) is mounted in a replica.
inline constexpr char kRolloutConfigDir[] = "/etc/sluice/config";
// Where the Secret key named by the Dataflow's spec.workflow.environment.tokenSecretRef is
// mounted (as the file "token") in a replica; only with that field.
inline constexpr char kEnvironmentTokenDir[] = "/var/run/sluice/environment-token";
// With engine vllm or sglang: the emptyDir the worker writes the weight versions it hands the
// inference server to, at sluice-rollout's default --weights-volume.
inline constexpr char kExternalWeightsVolume[] = "weights";
inline constexpr char kExternalWeightsDir[] = "/var/lib/sluice/weights";
// The grace a replica gets on top of spec.drain.gracePeriodSeconds once its Pod is deleted.
inline constexpr int kRolloutTerminationSlackSeconds = 30;

// "<pool>-<region>-<index>", or "<pool>-<index>" when `region` is empty (no spec.placement).
// Always a valid DNS label: lower-cased, characters outside [a-z0-9-] become '-', and when that
// changed anything or the name would exceed 63 characters, the name becomes
// "<prefix truncated>-<10-hex hash of <pool>-<region>>-<index>" (at most 63 characters, the
// index kept whole), so distinct (pool, region) pairs keep distinct names (DnsLabelName).
// `index` >= 0.
std::string ReplicaPodName(const std::string& pool, const std::string& region, int index);

// JsonHash of {spec.engine, spec.template, sorted spec.policies, spec.dataflowRef,
// "workerContract": kRolloutWorkerContract, "models": the
// model volumes and mounts of the hosted `policies` when there are any, "environmentToken":
// the Dataflow's spec.workflow.environment.tokenSecretRef when set, and "engineModels": each
// hosted Policy's ExternalEngineModelDir with an external engine}: the value of the
// sluice.dev/template-hash label of the pool's current replicas. `policies` are the Policy
// objects found for spec.policies (others are ignored); `dataflow` is the Dataflow
// spec.dataflowRef names, or null when unknown.
std::string PoolTemplateHash(const nlohmann::json& pool,
                             const std::vector<nlohmann::json>& policies,
                             const nlohmann::json* dataflow = nullptr);

// The Pod of replica `index` of `pool` in `region` (the spec.placement.regions entry, or null
// without placement). `policies` are the Policy objects found for spec.policies (others are
// ignored): their pvc claims are mounted. `dataflow` is the Dataflow spec.dataflowRef names (its
// name and namespace give the endpoint and the token Secret; its
// spec.workflow.environment.tokenSecretRef, when set, is mounted at kEnvironmentTokenDir and
// passed as --environment-token-file). With an external engine, the served Policy should be in
// `policies` with a pvc or path source (the controller checks ExternalEngineModelDir first and
// builds no replica otherwise); without it the server's model argument is empty.
nlohmann::json DesiredReplicaPod(const nlohmann::json& pool,
                                 const std::vector<nlohmann::json>& policies,
                                 const nlohmann::json* region, int index,
                                 const nlohmann::json& dataflow, const WorkerImages& images);

// "<pool>-rollout-tls" (SubdomainName): the Secret holding the replicas' serving certificate.
std::string RolloutTlsSecretName(const std::string& pool);
// "<DnsLabelName(pool)>.<ns>.rollout.sluice.internal": the one name of that certificate.
std::string RolloutServerName(const nlohmann::json& pool);
// The serving Secret's metadata: name, namespace, the pool's labels, owned by the pool.
nlohmann::json RolloutTlsSecretMeta(const nlohmann::json& pool);

// "<pool>-control-token" (SubdomainName): the Secret (key "token") whose token the operator
// calls the pool's replicas with and they admit on every route; peers' rollout token admits
// only relay reads there. Made once by the controller (RandomBearerToken), never rewritten.
std::string RolloutControlTokenSecretName(const std::string& pool);
// That Secret with `token`: the pool's labels, owned by the pool.
nlohmann::json DesiredRolloutControlTokenSecret(const nlohmann::json& pool,
                                                const std::string& token);

// "<pool>-rollout-config" (SubdomainName: truncated and hashed beyond 253 characters).
std::string RolloutConfigMapName(const std::string& pool);

// The pool's ConfigMap: data "rollout.json" = {"pool": <pool manifest>, "policies": [<Policy
// manifest>...]} with the hosted Policies found (apiVersion, kind, name, namespace, spec), sorted
// by name. The worker reads the models, tokenizers and chat templates from it.
nlohmann::json DesiredRolloutConfigMap(const nlohmann::json& pool,
                                       const std::vector<nlohmann::json>& policies);

// Whether `existing` was built from the same template as `desired`: equal, non-empty
// sluice.dev/template-hash labels. A replica that does not match is replaced by the rolling
// update.
bool ReplicaPodMatches(const nlohmann::json& desired, const nlohmann::json& existing);

}  // namespace sluice::controllers
