// Pod Security admission for the local API server: kube's built-in PodSecurity admission plugin
// (k8s.io/pod-security-admission) over namespaces labelled
//   pod-security.kubernetes.io/enforce=<level>   pods that break the level are rejected (403);
//   pod-security.kubernetes.io/warn=<level>      they are admitted with a warning;
//   pod-security.kubernetes.io/audit=<level>     parsed and validated, otherwise ignored: this
//                                                server writes no audit log, so kube's
//                                                audit-violations annotation has nowhere to go;
// each with an optional `<mode>-version` label ("latest" or "v1.X").
//
// The checks, their order and their wording are those of kube's policy package at v1.32, the
// version this server reports (/version says v1.32): "latest" means the v1.32 policy, and so
// does every "v1.X" label. Kube would run older checks for older versions (e.g. no
// runAsUser=0 check before v1.23); here a version only shows in messages, as
// `violates PodSecurity "restricted:v1.25"`. Kube's later policy changes (hostUsers=false
// relaxations in 1.35, probe/lifecycle host checks in 1.34, image volumes allowed in 1.33,
// more safe sysctls) are not applied, as a v1.32 cluster does not apply them either.
//
// Pods are checked as given: kube checks the defaulted pod, so the caller should admit after
// defaulting (kube's defaulting of hostNetwork pods sets each port's hostPort to its
// containerPort, which the hostPort check then reports). Kube's exemptions (usernames,
// namespaces, runtime classes from an AdmissionConfiguration) do not exist here; the defaults
// for unlabelled namespaces are kube's: privileged:latest for every mode.
//
// What the API server does with these, as kube's plugin does:
//   - pod create, and pod update that changes images or adds containers
//     (PodSecurityUpdateMatters), except on the subresources PodSecurityIgnoresSubresource names:
//     AdmitPodSecurity; enforce violations are a 403, warn violations a warning;
//   - workloads (PodTemplateSpecOf): warnings only, from the warn level, never a rejection;
//     enforce violations show because the warn level defaults to the enforce level;
//   - namespace create/update: NamespacePodSecurityLabelErrors (422 Invalid), and on update
//     NamespaceEnforceWarnings for existing pods that break a tightened enforce level.
//
// The checks themselves are in pod_security_checks.h.
//
// Thread safety: pure functions over the values given.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/openapi/field_error.h"
#include "common/status.h"

namespace sluice::apiserver {

// Kube's Pod Security Standards, least to most strict; each level's checks include the
// previous level's (restricted replaces some baseline checks with stricter forms).
enum class PodSecurityLevel { kPrivileged, kBaseline, kRestricted };

// "privileged", "baseline", "restricted".
std::string PodSecurityLevelName(PodSecurityLevel level);

// The policy version "latest" stands for here (see the top of this file).
inline constexpr char kPodSecurityPolicyVersion[] = "v1.32";

// The label keys kube reads on namespaces.
inline constexpr char kPodSecurityEnforceLabel[] = "pod-security.kubernetes.io/enforce";
inline constexpr char kPodSecurityEnforceVersionLabel[] =
    "pod-security.kubernetes.io/enforce-version";
inline constexpr char kPodSecurityWarnLabel[] = "pod-security.kubernetes.io/warn";
inline constexpr char kPodSecurityWarnVersionLabel[] = "pod-security.kubernetes.io/warn-version";
inline constexpr char kPodSecurityAuditLabel[] = "pod-security.kubernetes.io/audit";
inline constexpr char kPodSecurityAuditVersionLabel[] = "pod-security.kubernetes.io/audit-version";

// A namespace's policy, as kube's api.Policy. Versions are "latest" or "v1.X" as labelled; they
// name the policy in messages and are otherwise evaluated as latest.
struct NamespacePodSecurity {
  PodSecurityLevel enforce = PodSecurityLevel::kPrivileged;
  PodSecurityLevel warn = PodSecurityLevel::kPrivileged;
  PodSecurityLevel audit = PodSecurityLevel::kPrivileged;
  std::string enforce_version = "latest";
  std::string warn_version = "latest";
  std::string audit_version = "latest";

  friend bool operator==(const NamespacePodSecurity&, const NamespacePodSecurity&) = default;
};

// A namespace's labels read as kube's api.PolicyToEvaluate reads them: always a policy, plus one
// error per invalid label. Kube's rules:
//   - an invalid enforce level reads as restricted (fail closed), an invalid warn or audit level
//     as privileged (fail open), an invalid version as latest;
//   - with no warn label, a valid enforce label stricter than warn sets warn to the enforce level
//     (and, with no warn-version label, warn's version to enforce's): this is how workloads in an
//     enforcing namespace get warnings.
// Errors are kube's field errors on the namespace, field
// `metadata.labels[pod-security.kubernetes.io/enforce]`, message
// `Invalid value: "x": must be one of privileged, baseline, restricted` (levels) or
// `Invalid value: "x": must be "latest" or "v1.x"` (versions), in the order enforce,
// enforce-version, audit, audit-version, warn, warn-version. Labels that are absent or not
// strings are unset.
struct NamespacePodSecurityLabels {
  NamespacePodSecurity policy;
  openapi::FieldErrors errors;
};
NamespacePodSecurityLabels ReadNamespacePodSecurity(const nlohmann::json& namespace_object);

// The policy, or Unprocessable (422) with kube's message for the invalid labels:
//   Namespace "ml" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid
//   value: "strict": must be one of privileged, baseline, restricted
// (several errors as "[a, b]"); the Status field is the first error's.
Result<NamespacePodSecurity> PodSecurityOfNamespace(const nlohmann::json& namespace_object);

// The errors to reject a namespace create (old_namespace null) or update with, as a 422 Invalid
// of the Namespace (InvalidStatusJson). As kube does, an update is accepted when its labels are
// invalid in exactly the same way as before, so old namespaces stay writable.
openapi::FieldErrors NamespacePodSecurityLabelErrors(const nlohmann::json& namespace_object,
                                                     const nlohmann::json* old_namespace);

// Every check of `level` that the pod (metadata and spec of a Pod, or of a pod template) fails,
// in kube's order (baseline checks, then restricted ones, each group by kube's check id), each as
// "<reason> (<detail>)" with kube's wording, e.g.
//   host namespaces (hostNetwork=true, hostPID=true)
//   allowPrivilegeEscalation != false (containers "a", "b" must set
//     securityContext.allowPrivilegeEscalation=false)
//   runAsNonRoot != true (pod or container "main" must set securityContext.runAsNonRoot=true)
// Containers are visited as kube does: initContainers, containers, ephemeralContainers.
// Privileged: none. Null or missing fields are unset; ill-typed ones count as unset too.
std::vector<std::string> PodSecurityViolations(const nlohmann::json& pod_metadata,
                                               const nlohmann::json& pod_spec,
                                               PodSecurityLevel level);

// Kube's 403 message for a rejected pod:
//   pods "x" is forbidden: violates PodSecurity "restricted:latest": a, b, c
// (`pods is forbidden: ...` when pod_name is empty).
std::string PodSecurityForbiddenMessage(const std::string& pod_name, PodSecurityLevel level,
                                        const std::string& version,
                                        const std::vector<std::string>& violations);

// Kube's warning for violations of the warn level: `would violate PodSecurity
// "restricted:latest": a, b`. The HTTP layer sends it as `Warning: 299 - "<text>"`.
std::string PodSecurityWarning(PodSecurityLevel level, const std::string& version,
                               const std::vector<std::string>& violations);

// What admission says about a pod: `status` PermissionDenied with PodSecurityForbiddenMessage
// when it breaks the enforce level (then no warnings, as in kube), else OK with at most one
// PodSecurityWarning for the warn level.
struct PodSecurityDecision {
  Status status;
  std::vector<std::string> warnings;
};
PodSecurityDecision AdmitPodSecurity(const NamespacePodSecurity& policy, const nlohmann::json& pod);

// Pod subresources kube's plugin lets through unchecked: exec, attach, binding, eviction, log,
// portforward, proxy, status. Others ("ephemeralcontainers", the main resource "") are checked.
bool PodSecurityIgnoresSubresource(const std::string& subresource);

// Whether kube's plugin checks a pod update at all: container or init container counts differ, a
// container's image changed, or an ephemeral container was added or changed its image. Other
// updates (labels, status, ...) are admitted unchecked, so running pods stay updatable.
bool PodSecurityUpdateMatters(const nlohmann::json& pod, const nlohmann::json& old_pod);

// The pod template of a workload that kube's plugin checks, or null when `group`/`resource` is
// not one or the object has no template object:
//   apps deployments, replicasets, statefulsets, daemonsets; batch jobs: spec.template;
//   batch cronjobs: spec.jobTemplate.spec.template;
//   core replicationcontrollers: spec.template; core podtemplates: template.
// The pointer is into `object`.
const nlohmann::json* PodTemplateSpecOf(const std::string& group, const std::string& resource,
                                        const nlohmann::json& object);

// The warnings for a workload create or update (subresources are not checked): the warn level's
// violations of its pod template as PodSecurityWarning, or none. Never a rejection.
std::vector<std::string> WorkloadPodSecurityWarnings(const NamespacePodSecurity& policy,
                                                     const std::string& group,
                                                     const std::string& resource,
                                                     const nlohmann::json& object);

// Kube's warnings when a namespace update tightens enforcement: none unless the enforce
// level:version changed to a non-privileged level that is stricter or of another version. Then
// the namespace's `pods` are checked against the new enforce level (at most 3000, pods without
// a controller first, then one per controller, then the rest) and the warnings are
//   new PodSecurity enforce level only checked against the first 3000 of 3500 existing pods
//   existing pods in namespace "ml" violate the new PodSecurity enforce level "restricted:latest"
//   web-1 (and 2 other pods): allowPrivilegeEscalation != false, unrestricted capabilities
// (one line per distinct list of failed checks, named by its smallest pod name, sorted).
std::vector<std::string> NamespaceEnforceWarnings(const std::string& namespace_name,
                                                  const NamespacePodSecurity& old_policy,
                                                  const NamespacePodSecurity& new_policy,
                                                  const std::vector<nlohmann::json>& pods);

}  // namespace sluice::apiserver
