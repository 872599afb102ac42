// Shared pieces of the local cluster's workload controllers (replica_set_sync.h,
// deployment_sync.h, workload_controller.h), with Kubernetes' semantics: controller owner
// references, metav1.LabelSelector matching, pod readiness and availability, and the
// int-or-percent values of rolling updates.
//
// The node agent does not link the API server's label_selector.h, so a minimal matcher lives
// here: matchLabels plus matchExpressions with In, NotIn, Exists and DoesNotExist.
//
// Objects are Kubernetes JSON exactly as the API server returns them; absent fields take their
// Kubernetes defaults. Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/json/fields.h"

namespace sluice::node {

// The label a Deployment adds to its ReplicaSets' selector, template and metadata.
inline constexpr char kPodTemplateHashLabel[] = "pod-template-hash";

// status.phase is Succeeded or Failed: nothing runs any more.
bool IsTerminalPod(const nlohmann::json& pod);
// metadata.deletionTimestamp is set.
bool IsBeingDeleted(const nlohmann::json& object);

// The uid of the ownerReferences entry with `controller: true`; "" when there is none.
std::string ControllerUid(const nlohmann::json& object);
// The ownerReferences entry that makes `owner` the controller of a dependent:
// {apiVersion, kind, name, uid, controller: true, blockOwnerDeletion: true}.
nlohmann::json ControllerReference(const nlohmann::json& owner, const std::string& api_version,
                                   const std::string& kind);
// `object` with `reference` appended to metadata.ownerReferences (adoption).
nlohmann::json WithOwnerReference(nlohmann::json object, const nlohmann::json& reference);
// `object` without the ownerReferences entries of `owner_uid` (release).
nlohmann::json WithoutOwnerReference(nlohmann::json object, const std::string& owner_uid);

// Whether `selector` (a metav1.LabelSelector) is well formed: matchLabels an object of strings;
// each matchExpressions entry with a key and an operator In or NotIn (non-empty values) or
// Exists or DoesNotExist (no values). Null is not valid here (it selects nothing).
bool LabelSelectorValid(const nlohmann::json& selector);
// No matchLabels and no matchExpressions: as a selector it would match everything, which
// workload validation forbids; controllers treat it as selecting nothing.
bool LabelSelectorEmpty(const nlohmann::json& selector);
// Whether a valid `selector` selects an object with these metadata.labels (an object of strings;
// null means none). Every matchLabels entry and every expression must hold; NotIn and
// DoesNotExist hold for an absent label. An invalid or null selector matches nothing.
bool LabelSelectorMatches(const nlohmann::json& selector, const nlohmann::json& labels);

// The pod's Ready condition is True (kube's IsPodReady; phase and IP are not looked at).
bool PodReadyCondition(const nlohmann::json& pod);
// Ready, and with `min_ready_seconds` > 0 Ready since strictly more than that before `now`
// (the Ready condition's lastTransitionTime; a Ready pod without one is not available).
bool PodAvailable(const nlohmann::json& pod, int64_t min_ready_seconds, Clock::WallTime now);

// Whether two workload statuses (ReplicaSet, Deployment) say the same, an absent count being 0
// and an absent or null list empty (top-level fields only).
bool SameWorkloadStatus(const nlohmann::json& a, const nlohmann::json& b);

// An IntOrString of a rolling update (maxSurge, maxUnavailable) scaled to `total`: an integer as
// is; "N%" as N percent of total, rounded up with `round_up` and down otherwise. nullopt for
// anything else (a negative number, a string that is not digits and '%').
std::optional<int64_t> ScaledIntOrPercent(const nlohmann::json& value, int64_t total,
                                          bool round_up);

}  // namespace sluice::node
