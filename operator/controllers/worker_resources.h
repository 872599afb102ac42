// The compute resources of a rollout replica's or trainer rank's container, from the CRD's
// spec.template.resources {gpus, gpuResourceName, cpu, memory}:
//
//   - what the template sets is both requested and the limit (requests = limits), as before:
//     cpu and memory (Kubernetes quantities; an integer is written as its decimal string) and,
//     when gpus > 0, "<gpuResourceName>": "<gpus>";
//   - cpu and memory the template leaves unset are requested at the kind's default, WITHOUT a
//     limit, so the scheduler reserves room for the worker and never packs a node with more
//     workers than it can hold, while the worker may still use what the node has spare.
//
// The defaults are sized for the built-in CPU model, what a template without resources runs
// (GPU pools and jobs set gpus, and then normally cpu and memory too):
//   rollout  cpu 1, memory 2Gi: one engine thread pool; the paged KV cache is capped at 1 GiB per
//            hosted Policy (sluice-rollout --kv-cache-max-bytes), plus the model and libtorch.
//   trainer  cpu 2, memory 4Gi: the policy and its reference copy, AdamW's two moments, the
//            gradients, a batch's activations and the retained weight versions.
// They fit the local cluster's simulated nodes (examples/local-cluster.yaml: 8 to 16 CPUs,
// 32Gi to 64Gi), so a pool of several default replicas and a trainer still schedule on one node.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

namespace sluice::controllers {

// The requests a container gets for the cpu and memory its template leaves unset (Kubernetes
// quantities).
struct DefaultRequests {
  const char* cpu;
  const char* memory;
};

inline constexpr DefaultRequests kRolloutDefaultRequests = {"1", "2Gi"};
inline constexpr DefaultRequests kTrainerDefaultRequests = {"2", "4Gi"};

// {"requests": r, "limits": l}: l = what `resources` (a spec.template.resources object; null or
// not an object counts as empty) sets, r = l plus `defaults` for an unset cpu or memory. "limits"
// is left out when the template sets nothing.
nlohmann::json WorkerResources(const nlohmann::json& resources, const DefaultRequests& defaults);

}  // namespace sluice::controllers
