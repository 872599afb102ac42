// Decoding Kubernetes protobuf request bodies into the JSON objects the server stores.
//
// kubectl's typed clients (`kubectl create namespace|configmap|secret|service|deployment|role
// ...`, `kubectl debug` creating a pod, `kubectl auth can-i`) send built-in objects as
// `Content-Type: application/vnd.kubernetes.protobuf` and do not fall back to JSON when refused, so
// the server, which stores and serves JSON only, turns such a body into the JSON object a JSON
// client would have sent for the same Go value.
//
// The body is kube's envelope: the magic bytes "k8s\0", then a runtime.Unknown message whose
// typeMeta names apiVersion and kind and whose raw bytes are the object. The object is decoded
// with a hand-written schema table (field number -> JSON name, type, and how Go's encoding/json
// prints it: omitempty, pointer or always; protobuf_schema.h and the protobuf_*_kinds.cpp files).
// Covered: core/v1 Namespace, ConfigMap, Secret, Pod, Service, Event, ServiceAccount;
// coordination.k8s.io/v1 Lease; events.k8s.io/v1 Event; policy/v1 Eviction;
// authentication.k8s.io/v1 TokenRequest, SelfSubjectReview; rbac.authorization.k8s.io/v1 Role,
// ClusterRole, RoleBinding, ClusterRoleBinding; authorization.k8s.io/v1 SelfSubjectAccessReview,
// SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectRulesReview; apps/v1 Deployment,
// ReplicaSet; DeleteOptions in any group version. Fields the table does not know are skipped; the
// parts of PodStatus beyond phase, conditions and IPs are among them. (autoscaling/v1 Scale is not
// covered: `kubectl scale` sends a JSON merge patch, or a JSON Scale with preconditions.)
//
// The JSON follows kube's own encoding of the decoded Go object: zero scalars of omitempty fields
// are left out, non-pointer structs are always present (`"status": {}`, `"resources": {}`), zero
// metav1.Time is `null`, bytes are base64, int-or-string is a number or a string, quantities keep
// the string they were sent as (kubectl sends canonical ones). apiVersion and kind are set.
//
// The input comes from the network: every length and varint is bounds-checked and nesting is
// limited to kMaxKubeProtobufDepth; malformed input is InvalidArgument, never a crash. An
// apiVersion/kind outside the table is also InvalidArgument (naming it), which the server turns
// into 415 Unsupported Media Type.
//
// Thread safety: pure function over immutable tables; safe to call from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/status.h"

namespace sluice::apiserver {

// The media type of kube's protobuf encoding.
inline constexpr std::string_view kKubeProtobufContentType = "application/vnd.kubernetes.protobuf";
// The 4 bytes every kube protobuf body starts with.
inline constexpr std::string_view kKubeProtobufMagic{"k8s\0", 4};
// How deeply messages may nest (a Pod needs about 10).
inline constexpr int kMaxKubeProtobufDepth = 64;

// Decodes a kube protobuf body (magic + runtime.Unknown) into the object's JSON form, with
// apiVersion and kind set.
Result<nlohmann::json> DecodeKubeProtobuf(std::string_view body);

}  // namespace sluice::apiserver
