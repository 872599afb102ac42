// Admission of apps/v1 Deployments and ReplicaSets in the local API server: kube-apiserver's
// defaulting and the workload-specific part of its validation, with kube's messages, so
// `kubectl apply` of a bad manifest fails as on a real cluster. (The controllers that act on
// these objects are in localcluster/node/workload_controller.h; they also read absent fields
// with these defaults.)
//
// Call Default* on create and update before Validate*; ValidateDeploymentUpdate and
// ValidateReplicaSetUpdate add kube's update rules (spec.selector is immutable in apps/v1).
// Pod template contents (containers, volumes) are not validated here, nor defaulted.
//
// Values in messages are printed as kube prints them (Go's %#v), e.g.
//   spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: `selector`
//   does not match template `labels`
// Deliberate difference: an unknown strategy type is reported on spec.strategy.type as
// `Unsupported value: "X": supported values: "Recreate", "RollingUpdate"` (kube prints the whole
// strategy struct, pointer included, on spec.strategy).
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include "common/openapi/field_error.h"

namespace sluice::apiserver {

// apps/v1 defaults (kube's SetDefaults_Deployment): spec.replicas 1; spec.strategy.type
// RollingUpdate; for RollingUpdate, rollingUpdate.maxUnavailable and .maxSurge "25%" each when
// absent; spec.revisionHistoryLimit 10; spec.progressDeadlineSeconds 600. Set fields, including
// invalid ones, are left for validation. A non-object `deployment` or spec is left alone.
void DefaultDeployment(nlohmann::json& deployment);
// spec.replicas 1 when absent.
void DefaultReplicaSet(nlohmann::json& replica_set);

// kube's ValidateDeploymentSpec, in its order: spec.replicas >= 0; spec.selector required,
// well formed and not empty; the selector matches spec.template.metadata.labels; the template's
// restartPolicy is Always (absent counts as Always) and it has no activeDeadlineSeconds;
// the strategy (type, rollingUpdate forbidden for Recreate, maxUnavailable / maxSurge an
// integer >= 0 or a percentage, not both 0, maxUnavailable not over 100%); minReadySeconds,
// revisionHistoryLimit and progressDeadlineSeconds >= 0, progressDeadlineSeconds greater than
// minReadySeconds. Fields are paths from the object root ("spec.selector").
openapi::FieldErrors ValidateDeployment(const nlohmann::json& deployment);
// The same rules minus strategy, history and progress deadline.
openapi::FieldErrors ValidateReplicaSet(const nlohmann::json& replica_set);

// Validate* of `updated` plus: spec.selector may not change ("field is immutable").
openapi::FieldErrors ValidateDeploymentUpdate(const nlohmann::json& old_deployment,
                                              const nlohmann::json& updated);
openapi::FieldErrors ValidateReplicaSetUpdate(const nlohmann::json& old_replica_set,
                                              const nlohmann::json& updated);

}  // namespace sluice::apiserver
