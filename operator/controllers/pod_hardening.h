// Restricted defaults for every pod the operator creates (dataflow, rollout and trainer
// workers), so they pass Pod Security admission at the "restricted" level
// (pod-security.kubernetes.io/enforce=restricted) on any cluster:
//   pod:       securityContext {runAsNonRoot: true, runAsUser/runAsGroup/fsGroup: 65532,
//              seccompProfile: RuntimeDefault}; automountServiceAccountToken: false (the workers
//              never call the Kubernetes API);
//   container: securityContext {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}.
// Values already in the spec are kept (a caller that sets its own wins). 65532 is the
// conventional non-root "nonroot" user of distroless images; the worker images run as it.
//
// Thread safety: pure function.
#pragma once

#include <nlohmann/json.hpp>

namespace sluice::controllers {

inline constexpr int64_t kWorkerUid = 65532;

// Adds the defaults above to a PodSpec (JSON) in place.
void HardenPodSpec(nlohmann::json& pod_spec);

}  // namespace sluice::controllers
