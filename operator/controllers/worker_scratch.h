// The writable directories of the worker pods. Every worker container runs with
// readOnlyRootFilesystem: true (pod_hardening.h), so each path a worker writes must be a volume.
// What each worker writes, given the arguments the children builders pass (checked against
// workers/ and the libraries they link; docs/operator.md, "Least privilege"):
//
//   sluice-dataflow  --wal-dir /var/lib/sluice/wal: the write-ahead log (its PVC, already a
//                    volume). Nothing else: a TLS client's inline CA bundle is an in-memory
//                    file (common/http/client.cpp).
//   sluice-rollout   $TMPDIR/sluice-rollout-<replica>-weights: full weight downloads, staged
//                    (resumable) before they are applied; $TMPDIR/sluice-models/<hash>: Policies
//                    whose model source is a uri, downloaded once per pod;
//                    $TMPDIR/sluice-sandbox-*: one working directory per sandboxed program of a
//                    code-execution reward; $CUDA_CACHE_PATH: the CUDA driver's JIT cache (PTX of
//                    the worker's and libtorch's kernels compiled for a newer GPU).
//                    With engine vllm or sglang, also --weights-volume (default
//                    /var/lib/sluice/weights, kExternalWeightsDir): the versions handed to the
//                    inference server.
//   sluice-trainer   --checkpoint-dir under /var/lib/sluice/checkpoints: checkpoints, the warm
//                    start's state and Hugging Face exports (the checkpoint PVC, already a volume,
//                    present only with spec.checkpoint; without it nothing is written there);
//                    $TMPDIR/sluice-models/<hash>: a uri model; $CUDA_CACHE_PATH as above.
//
// libtorch's C++ API keeps no other on-disk cache (no TorchInductor/Triton, no torch.hub), and
// the Gloo rendezvous is TCP only. So every worker gets an emptyDir "tmp" at /tmp with
// TMPDIR=/tmp (the workers fall back to /tmp themselves, but an explicit value is what the local
// cluster's node agent remaps into the pod's own directory, docs/local-cluster.md), and the
// rollout and trainer workers CUDA_CACHE_PATH=/tmp/cuda-cache, since the driver's default,
// $HOME/.nv, lies on the read-only root. The emptyDirs have no sizeLimit: a uri model can be
// many gigabytes, and the node's ephemeral storage bounds them.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace sluice::controllers {

// The emptyDir every worker pod has, and where its container mounts it.
inline constexpr char kScratchVolume[] = "tmp";
inline constexpr char kScratchDir[] = "/tmp";
// The CUDA driver's JIT cache inside the scratch directory.
inline constexpr char kCudaCacheDir[] = "/tmp/cuda-cache";

// {"name": `name`, "emptyDir": {}}: a directory that lives as long as the Pod (container
// restarts keep it).
nlohmann::json EmptyDirVolume(const std::string& name);

// {"name": `name`, "mountPath": `path`}: a read-write mount.
nlohmann::json WritableMount(const std::string& name, const std::string& path);

// The environment that points a worker's scratch files into kScratchDir: TMPDIR=/tmp and, when
// `cuda` (the rollout and trainer workers, which may run CUDA kernels),
// CUDA_CACHE_PATH=/tmp/cuda-cache. A JSON array of core/v1 EnvVar, in that order.
nlohmann::json ScratchEnv(bool cuda);

}  // namespace sluice::controllers
