// The checks of kube's Pod Security Standards (policy package of k8s.io/pod-security-admission
// at v1.32), behind pod_security.h: which of a pod's fields break a level, in kube's words.
//
// Thread safety: pure functions over the values given.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "localcluster/apiserver/pod_security.h"

namespace sluice::apiserver {

// One failed check, as kube's CheckResult: a short reason ("host namespaces") and the detail
// naming the fields ("hostNetwork=true, hostPID=true").
struct PodSecurityFailure {
  std::string reason;
  std::string detail;

  friend bool operator==(const PodSecurityFailure&, const PodSecurityFailure&) = default;
};

// The failed checks of `level` for a pod's (or pod template's) metadata and spec, in kube's
// order: baseline checks by id (appArmorProfile, capabilities_baseline, hostNamespaces,
// hostPathVolumes, hostPorts, privileged, procMount, seLinuxOptions, seccompProfile_baseline,
// sysctls, windowsHostProcess), then for restricted its own by id (allowPrivilegeEscalation,
// capabilities_restricted, restrictedVolumes, runAsNonRoot, runAsUser, seccompProfile_restricted),
// which replace capabilities_baseline, hostPathVolumes and seccompProfile_baseline.
// Privileged: none.
std::vector<PodSecurityFailure> EvaluatePodSecurity(const nlohmann::json& pod_metadata,
                                                    const nlohmann::json& pod_spec,
                                                    PodSecurityLevel level);

}  // namespace sluice::apiserver
