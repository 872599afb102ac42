// Kube protobuf schema tables for apps/v1 Deployment and ReplicaSet (`kubectl create deployment`
// and typed clients creating or updating either); see protobuf_schema.h.
//
// autoscaling/v1 Scale is not here: `kubectl scale` sends a JSON merge patch to the scale
// subresource, or, with --current-replicas or --resource-version, a Scale its scale client encodes
// as JSON.
#include "localcluster/apiserver/protobuf_schema.h"

namespace sluice::apiserver::kube_protobuf {

// Field numbers, JSON names and Go pointer/omitempty shapes as in k8s.io/api (generated.proto and
// types.go; terminatingReplicas is new in v0.33). Messages are defined leaves first.

// core/v1 PodTemplateSpec: both fields are non-pointer structs, so always printed.
SLUICE_MESSAGE(kPodTemplateSpec, "PodTemplateSpec", Obj(1, "metadata", kObjectMeta),
               Obj(2, "spec", kPodSpec));

// apps/v1 Deployment.
SLUICE_MESSAGE(kRollingUpdateDeployment, "RollingUpdateDeployment", IntStrP(1, "maxUnavailable"),
               IntStrP(2, "maxSurge"));
SLUICE_MESSAGE(kDeploymentStrategy, "DeploymentStrategy", Str(1, "type"),
               ObjP(2, "rollingUpdate", kRollingUpdateDeployment));
SLUICE_MESSAGE(kDeploymentSpec, "DeploymentSpec", IntP(1, "replicas"),
               ObjN(2, "selector", kLabelSelector), Obj(3, "template", kPodTemplateSpec),
               Obj(4, "strategy", kDeploymentStrategy), Int(5, "minReadySeconds"),
               IntP(6, "revisionHistoryLimit"), Bool(7, "paused"),
               IntP(9, "progressDeadlineSeconds"));
SLUICE_MESSAGE(kDeploymentCondition, "DeploymentCondition", StrA(1, "type"), StrA(2, "status"),
               TimeA(6, "lastUpdateTime"), TimeA(7, "lastTransitionTime"), Str(4, "reason"),
               Str(5, "message"));
SLUICE_MESSAGE(kDeploymentStatus, "DeploymentStatus", Long(1, "observedGeneration"),
               Int(2, "replicas"), Int(3, "updatedReplicas"), Int(7, "readyReplicas"),
               Int(4, "availableReplicas"), Int(5, "unavailableReplicas"),
               IntP(9, "terminatingReplicas"), Objs(6, "conditions", kDeploymentCondition),
               IntP(8, "collisionCount"));
SLUICE_MESSAGE(kDeployment, "Deployment", Obj(1, "metadata", kObjectMeta),
               Obj(2, "spec", kDeploymentSpec), Obj(3, "status", kDeploymentStatus));

// apps/v1 ReplicaSet. Its status's replicas has no omitempty: a new ReplicaSet prints
// `"status": {"replicas": 0}`.
SLUICE_MESSAGE(kReplicaSetSpec, "ReplicaSetSpec", IntP(1, "replicas"), Int(4, "minReadySeconds"),
               ObjN(2, "selector", kLabelSelector), Obj(3, "template", kPodTemplateSpec));
SLUICE_MESSAGE(kReplicaSetCondition, "ReplicaSetCondition", StrA(1, "type"), StrA(2, "status"),
               TimeA(3, "lastTransitionTime"), Str(4, "reason"), Str(5, "message"));
SLUICE_MESSAGE(kReplicaSetStatus, "ReplicaSetStatus", IntA(1, "replicas"),
               Int(2, "fullyLabeledReplicas"), Int(4, "readyReplicas"), Int(5, "availableReplicas"),
               IntP(7, "terminatingReplicas"), Long(3, "observedGeneration"),
               Objs(6, "conditions", kReplicaSetCondition));
SLUICE_MESSAGE(kReplicaSet, "ReplicaSet", Obj(1, "metadata", kObjectMeta),
               Obj(2, "spec", kReplicaSetSpec), Obj(3, "status", kReplicaSetStatus));

namespace {

constexpr KindDef kAppsKinds[] = {
    {"apps/v1", "Deployment", &kDeployment},
    {"apps/v1", "ReplicaSet", &kReplicaSet},
};

}  // namespace

std::span<const KindDef> AppsKinds() { return kAppsKinds; }

}  // namespace sluice::apiserver::kube_protobuf
