// Restricted defaults for every pod the operator creates (dataflow, rollout and trainer
// workers), so they pass Pod Security admission at the "restricted" level
// (pod-security.kubernetes.io/enforce=restricted) on any cluster:
//   pod:       securityContext {runAsNonRoot: true, runAsUser/runAsGroup/fsGroup: 65532,
//              seccompProfile: RuntimeDefault}; automountServiceAccountToken: false (the workers
//              never call the Kubernetes API);
//   container: securityContext {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]},
//              readOnlyRootFilesystem: true}. Each path a worker writes is therefore a volume
//              (worker_scratch.h lists them).
// Values already in the spec are kept, field by field (a caller that sets its own wins):
// capabilities.drop is added to a capabilities object that has only `add`, and
// allowPrivilegeEscalation is left unset when the container is privileged or adds CAP_SYS_ADMIN,
// which Kubernetes refuses together with allowPrivilegeEscalation: false. 65532 is the
// conventional non-root "nonroot" user of distroless images; the worker images run as it.
//
// RolloutPool and TrainerJob templates loosen these through spec.template.securityContext (the
// pod's) and spec.template.containerSecurityContext (the worker container's), which
// ApplyTemplateSecurityContexts copies into the pod before HardenPodSpec fills the rest.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

namespace sluice::controllers {

inline constexpr int64_t kWorkerUid = 65532;

// Adds the defaults above to a PodSpec (JSON) in place: to the pod and to every entry of
// `initContainers` and `containers`.
void HardenPodSpec(nlohmann::json& pod_spec);

// Copies `pod_template`'s securityContext into pod_spec.securityContext and its
// containerSecurityContext into the securityContext of every entry of pod_spec.containers
// (replacing what is there), each only when present. `pod_template` is a RolloutPool's or
// TrainerJob's spec.template; its fields have the core/v1 names, so they are copied verbatim.
// Call it before HardenPodSpec, which then defaults only the fields the template left unset.
void ApplyTemplateSecurityContexts(const nlohmann::json& pod_template, nlohmann::json& pod_spec);

}  // namespace sluice::controllers
