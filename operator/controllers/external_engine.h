// The inference server of a RolloutPool replica whose spec.engine.type is vllm or sglang: a
// second container, "engine", beside sluice-rollout in every replica Pod (docs/operator.md,
// "External engines"). sluice-rollout keeps the tokenizer, the workflows and the weight fetching;
// the server generates. The two meet at:
//
//   the pod's address   the server listens on $(POD_IP):8000 (port "engine"); the worker gets
//                       --engine-url=http://$(POD_IP):8000. Containers of one Pod share the
//                       network namespace, so this is the Pod's own address on a real cluster
//                       and on the local cluster, whose pods share the host's loopback and have
//                       one address each (docs/local-cluster.md), so 127.0.0.1:8000 would clash
//                       between replicas.
//   the served name     the Policy's name, given to both (--served-model-name).
//   the model           the Policy's model directory: spec.model.source pvc (the claim at
//                       PolicyModelDir(<policy>), policy_model_volumes.h, plus pvc.path, mounted
//                       in both containers) or path (a directory that must exist in the server's
//                       image or on the node as it is: nothing mounts it). A builtin or uri
//                       source has no directory the server can read, so the controller refuses
//                       such a pool (ExternalEngineModelDir), as it does while the served Policy
//                       does not exist.
//   the weights volume  the emptyDir "weights" at /var/lib/sluice/weights: the worker writes each
//                       fetched version there and asks the server to reload it; the server
//                       mounts it read-only.
//
// The engine container:
//   image      spec.engine.image, else the operator's --vllm-image / --sglang-image
//              (WorkerImages::vllm, ::sglang).
//   command    sglang only: python3 -m sglang.launch_server (its images have no server
//              entrypoint); vllm uses its image's entrypoint (`vllm serve` or the OpenAI API
//              server module; both take the flags below).
//   args       vllm:   --model DIR --served-model-name P --host $(POD_IP) --port 8000
//                      --dtype D --tensor-parallel-size N --max-num-batched-tokens T
//                      --max-num-seqs S --gpu-memory-utilization F --generation-config vllm
//              sglang: --model-path DIR --served-model-name P --host $(POD_IP) --port 8000
//                      --dtype D --tp-size N --max-prefill-tokens T --max-running-requests S
//                      --mem-fraction-static F
//              D is the Policy's spec.model.dtype; N, T, S, F spec.engine's tensorParallelSize,
//              maxBatchTokens, maxConcurrentSequences and kvCacheFraction (the servers read F
//              as their share of the whole accelerator memory, weights included); then
//              spec.engine.args appended verbatim (they are the engine's arguments; with the
//              builtin engine they go to sluice-rollout).
//   env        POD_IP (downward API), HOME=/tmp, TMPDIR=/tmp, HF_HOME=/tmp/huggingface (the
//              servers write caches under $HOME; the root file system is read-only),
//              USER=LOGNAME=sluice (the hardened uid has no passwd entry in the servers' images,
//              and torch asks for the user name), TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR
//              under /tmp, VLLM_SERVER_DEV_MODE=1 for vllm (the reload endpoints exist only in
//              dev mode, docs/rollout.md), then spec.template.env verbatim (both containers).
//   resources  WorkerResources(spec.template.resources, kRolloutDefaultRequests): the replica's
//              GPUs, cpu and memory are the server's; sluice-rollout then requests only
//              kExternalEngineWorkerRequests.
//   volumes    the Policies' model mounts (read-only), "weights" read-only, its own emptyDir
//              "engine-tmp" at /tmp, and "dshm", a memory-backed emptyDir at /dev/shm (tensor
//              parallel workers exchange tensors through shared memory).
//   probes     startup GET /health every 10 s for up to 30 minutes (loading a large model),
//              readiness GET /health every 5 s, liveness GET /health every 10 s, 6 failures.
//              The Pod is Ready only when both containers are: a replica whose server is down
//              takes no work.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "operator/controllers/dataflow/desired_objects.h"
#include "operator/controllers/worker_resources.h"

namespace sluice::controllers {

inline constexpr char kEngineContainerName[] = "engine";
inline constexpr int kEnginePort = 8000;
// The emptyDir the server's scratch files go to, and the shared-memory one.
inline constexpr char kEngineScratchVolume[] = "engine-tmp";
inline constexpr char kSharedMemoryVolume[] = "dshm";
// What sluice-rollout requests beside an external server (it tokenises, renders and fetches
// weights; the server holds the accelerators).
inline constexpr DefaultRequests kExternalEngineWorkerRequests = {"500m", "1Gi"};

// Whether `pool`'s spec.engine.type is vllm or sglang.
bool UsesExternalEngine(const nlohmann::json& pool);

// The directory the server loads `policy` (a Policy object) from: PolicyModelDir(<name>) plus
// spec.model.source.pvc.path, or spec.model.source.path. InvalidArgument naming
// "spec.model.source" for a builtin or uri source.
Result<std::string> ExternalEngineModelDir(const nlohmann::json& policy);

// The "engine" container of a replica of `pool` serving `policy` (the Policy object: its name,
// ExternalEngineModelDir, empty when it has none, and spec.model.dtype); `model_mounts` are the
// Policies' claim mounts (PolicyModelVolumes::mounts).
nlohmann::json ExternalEngineContainer(const nlohmann::json& pool, const nlohmann::json& policy,
                                       const nlohmann::json& model_mounts,
                                       const WorkerImages& images);

}  // namespace sluice::controllers
