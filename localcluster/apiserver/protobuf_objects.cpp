#include "localcluster/apiserver/protobuf_objects.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "common/base64.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Schema table.

enum class Type : uint8_t {
  kString,
  kInt32,
  kInt64,
  kBool,
  kBytes,        // base64 in JSON.
  kMessage,      // A nested object described by FieldDef::message.
  kInline,       // An embedded Go struct (`json:",inline"`): its fields sit in the parent object.
  kTime,         // metav1.Time: RFC 3339 in seconds; null when zero.
  kMicroTime,    // metav1.MicroTime: RFC 3339 with microseconds; null when zero.
  kQuantity,     // resource.Quantity {string = 1}: the string.
  kIntOrString,  // intstr.IntOrString {type = 1, intVal = 2, strVal = 3}: a number or a string.
  kFieldsV1,     // metav1.FieldsV1 {raw = 1}: the JSON document held in raw.
  kStringList,   // A message {repeated string items = 1} that Go holds as a []string
                 // (authorization's ExtraValue): a list, [] when it has no items.
};

enum class Shape : uint8_t {
  kSingle,
  kList,  // repeated.
  kMap,   // repeated entry {key = 1 (string), value = 2}.
};

// How Go's encoding/json prints the field of the decoded Go value.
enum class Presence : uint8_t {
  kOmitEmpty,  // Non-pointer scalar, slice or map with omitempty: left out when zero or empty.
  kAlways,     // No omitempty, or a non-pointer struct (omitempty has no effect on those): printed
               // always, as the zero value ("", 0, false, null, {}) when not sent.
  kPointer,    // Pointer with omitempty: printed exactly when sent, zero or not.
  kNullable,   // Pointer without omitempty: null when not sent.
};

struct MessageDef;

struct FieldDef {
  uint32_t number;
  std::string_view json_name;  // Empty for kInline.
  Type type;
  Shape shape;
  Presence presence;
  const MessageDef* message;  // For kMessage and kInline.
};

struct MessageDef {
  std::string_view name;
  std::span<const FieldDef> fields;
};

constexpr FieldDef Scalar(uint32_t n, std::string_view j, Type t, Presence p) {
  return {n, j, t, Shape::kSingle, p, nullptr};
}
constexpr FieldDef Str(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kString, Presence::kOmitEmpty);
}
constexpr FieldDef StrA(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kString, Presence::kAlways);
}
constexpr FieldDef StrP(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kString, Presence::kPointer);
}
constexpr FieldDef Int(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kInt32, Presence::kOmitEmpty);
}
constexpr FieldDef IntA(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kInt32, Presence::kAlways);
}
constexpr FieldDef IntP(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kInt32, Presence::kPointer);
}
constexpr FieldDef Long(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kInt64, Presence::kOmitEmpty);
}
constexpr FieldDef LongA(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kInt64, Presence::kAlways);
}
constexpr FieldDef LongP(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kInt64, Presence::kPointer);
}
constexpr FieldDef Bool(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kBool, Presence::kOmitEmpty);
}
constexpr FieldDef BoolA(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kBool, Presence::kAlways);
}
constexpr FieldDef BoolP(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kBool, Presence::kPointer);
}
constexpr FieldDef TimeA(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kTime, Presence::kAlways);
}
constexpr FieldDef TimeP(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kTime, Presence::kPointer);
}
constexpr FieldDef MicroA(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kMicroTime, Presence::kAlways);
}
constexpr FieldDef MicroP(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kMicroTime, Presence::kPointer);
}
constexpr FieldDef QtyA(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kQuantity, Presence::kAlways);
}
constexpr FieldDef QtyP(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kQuantity, Presence::kPointer);
}
constexpr FieldDef IntStrA(uint32_t n, std::string_view j) {
  return Scalar(n, j, Type::kIntOrString, Presence::kAlways);
}
// A non-pointer struct: always printed.
constexpr FieldDef Obj(uint32_t n, std::string_view j, const MessageDef& m) {
  return {n, j, Type::kMessage, Shape::kSingle, Presence::kAlways, &m};
}
constexpr FieldDef ObjP(uint32_t n, std::string_view j, const MessageDef& m) {
  return {n, j, Type::kMessage, Shape::kSingle, Presence::kPointer, &m};
}
constexpr FieldDef Objs(uint32_t n, std::string_view j, const MessageDef& m) {
  return {n, j, Type::kMessage, Shape::kList, Presence::kOmitEmpty, &m};
}
constexpr FieldDef ObjsA(uint32_t n, std::string_view j, const MessageDef& m) {
  return {n, j, Type::kMessage, Shape::kList, Presence::kAlways, &m};
}
constexpr FieldDef Inline(uint32_t n, const MessageDef& m) {
  return {n, {}, Type::kInline, Shape::kSingle, Presence::kAlways, &m};
}
constexpr FieldDef Strs(uint32_t n, std::string_view j) {
  return {n, j, Type::kString, Shape::kList, Presence::kOmitEmpty, nullptr};
}
// No omitempty: null when not sent.
constexpr FieldDef StrsA(uint32_t n, std::string_view j) {
  return {n, j, Type::kString, Shape::kList, Presence::kAlways, nullptr};
}
constexpr FieldDef Longs(uint32_t n, std::string_view j) {
  return {n, j, Type::kInt64, Shape::kList, Presence::kOmitEmpty, nullptr};
}
constexpr FieldDef StrMap(uint32_t n, std::string_view j) {
  return {n, j, Type::kString, Shape::kMap, Presence::kOmitEmpty, nullptr};
}
constexpr FieldDef BytesMap(uint32_t n, std::string_view j) {
  return {n, j, Type::kBytes, Shape::kMap, Presence::kOmitEmpty, nullptr};
}
constexpr FieldDef QtyMap(uint32_t n, std::string_view j) {
  return {n, j, Type::kQuantity, Shape::kMap, Presence::kOmitEmpty, nullptr};
}
constexpr FieldDef StrListMap(uint32_t n, std::string_view j) {
  return {n, j, Type::kStringList, Shape::kMap, Presence::kOmitEmpty, nullptr};
}

// Field numbers, JSON names and Go pointer/omitempty shapes as in k8s.io/api and
// k8s.io/apimachinery v0.32 (generated.proto and types.go). Messages are defined leaves first.
#define SLUICE_MESSAGE(var, name, ...)              \
  constexpr FieldDef var##Fields[] = {__VA_ARGS__}; \
  constexpr MessageDef var { name, std::span<const FieldDef>(var##Fields) }

// meta/v1.
SLUICE_MESSAGE(kOwnerReference, "OwnerReference", StrA(5, "apiVersion"), StrA(1, "kind"),
               StrA(3, "name"), StrA(4, "uid"), BoolP(6, "controller"),
               BoolP(7, "blockOwnerDeletion"));
SLUICE_MESSAGE(kManagedFieldsEntry, "ManagedFieldsEntry", Str(1, "manager"), Str(2, "operation"),
               Str(3, "apiVersion"), TimeP(4, "time"), Str(6, "fieldsType"),
               Scalar(7, "fieldsV1", Type::kFieldsV1, Presence::kPointer), Str(8, "subresource"));
SLUICE_MESSAGE(kObjectMeta, "ObjectMeta", Str(1, "name"), Str(2, "generateName"),
               Str(3, "namespace"), Str(4, "selfLink"), Str(5, "uid"), Str(6, "resourceVersion"),
               Long(7, "generation"), TimeA(8, "creationTimestamp"), TimeP(9, "deletionTimestamp"),
               LongP(10, "deletionGracePeriodSeconds"), StrMap(11, "labels"),
               StrMap(12, "annotations"), Objs(13, "ownerReferences", kOwnerReference),
               Strs(14, "finalizers"), Objs(17, "managedFields", kManagedFieldsEntry));
// LabelSelectorRequirement, and FieldSelectorRequirement, which has the same fields and numbers.
SLUICE_MESSAGE(kLabelSelectorRequirement, "LabelSelectorRequirement", StrA(1, "key"),
               StrA(2, "operator"), Strs(3, "values"));
SLUICE_MESSAGE(kLabelSelector, "LabelSelector", StrMap(1, "matchLabels"),
               Objs(2, "matchExpressions", kLabelSelectorRequirement));
SLUICE_MESSAGE(kPreconditions, "Preconditions", StrP(1, "uid"), StrP(2, "resourceVersion"));
SLUICE_MESSAGE(kDeleteOptions, "DeleteOptions", LongP(1, "gracePeriodSeconds"),
               ObjP(2, "preconditions", kPreconditions), BoolP(3, "orphanDependents"),
               StrP(4, "propagationPolicy"), Strs(5, "dryRun"),
               BoolP(6, "ignoreStoreReadErrorWithClusterBreakingPotential"));
SLUICE_MESSAGE(kCondition, "Condition", StrA(1, "type"), StrA(2, "status"),
               Long(3, "observedGeneration"), TimeA(4, "lastTransitionTime"), StrA(5, "reason"),
               StrA(6, "message"));

// core/v1: Namespace, ConfigMap, Secret.
SLUICE_MESSAGE(kLocalObjectReference, "LocalObjectReference", Str(1, "name"));
SLUICE_MESSAGE(kNamespaceCondition, "NamespaceCondition", StrA(1, "type"), StrA(2, "status"),
               TimeA(4, "lastTransitionTime"), Str(5, "reason"), Str(6, "message"));
SLUICE_MESSAGE(kNamespaceSpec, "NamespaceSpec", Strs(1, "finalizers"));
SLUICE_MESSAGE(kNamespaceStatus, "NamespaceStatus", Str(1, "phase"),
               Objs(2, "conditions", kNamespaceCondition));
SLUICE_MESSAGE(kNamespace, "Namespace", Obj(1, "metadata", kObjectMeta),
               Obj(2, "spec", kNamespaceSpec), Obj(3, "status", kNamespaceStatus));
SLUICE_MESSAGE(kConfigMap, "ConfigMap", Obj(1, "metadata", kObjectMeta), BoolP(4, "immutable"),
               StrMap(2, "data"), BytesMap(3, "binaryData"));
SLUICE_MESSAGE(kSecret, "Secret", Obj(1, "metadata", kObjectMeta), BoolP(5, "immutable"),
               BytesMap(2, "data"), StrMap(4, "stringData"), Str(3, "type"));

// core/v1: containers.
SLUICE_MESSAGE(kContainerPort, "ContainerPort", Str(1, "name"), Int(2, "hostPort"),
               IntA(3, "containerPort"), Str(4, "protocol"), Str(5, "hostIP"));
SLUICE_MESSAGE(kObjectFieldSelector, "ObjectFieldSelector", Str(1, "apiVersion"),
               StrA(2, "fieldPath"));
SLUICE_MESSAGE(kResourceFieldSelector, "ResourceFieldSelector", Str(1, "containerName"),
               StrA(2, "resource"), QtyA(3, "divisor"));
// ConfigMapKeySelector and SecretKeySelector.
SLUICE_MESSAGE(kKeySelector, "KeySelector", Inline(1, kLocalObjectReference), StrA(2, "key"),
               BoolP(3, "optional"));
SLUICE_MESSAGE(kFileKeySelector, "FileKeySelector", StrA(1, "volumeName"), StrA(2, "path"),
               StrA(3, "key"), BoolP(4, "optional"));
SLUICE_MESSAGE(kEnvVarSource, "EnvVarSource", ObjP(1, "fieldRef", kObjectFieldSelector),
               ObjP(2, "resourceFieldRef", kResourceFieldSelector),
               ObjP(3, "configMapKeyRef", kKeySelector), ObjP(4, "secretKeyRef", kKeySelector),
               ObjP(5, "fileKeyRef", kFileKeySelector));
SLUICE_MESSAGE(kEnvVar, "EnvVar", StrA(1, "name"), Str(2, "value"),
               ObjP(3, "valueFrom", kEnvVarSource));
// ConfigMapEnvSource and SecretEnvSource.
SLUICE_MESSAGE(kEnvSource, "EnvSource", Inline(1, kLocalObjectReference), BoolP(2, "optional"));
SLUICE_MESSAGE(kEnvFromSource, "EnvFromSource", Str(1, "prefix"),
               ObjP(2, "configMapRef", kEnvSource), ObjP(3, "secretRef", kEnvSource));
SLUICE_MESSAGE(kResourceClaim, "ResourceClaim", StrA(1, "name"), Str(2, "request"));
SLUICE_MESSAGE(kResourceRequirements, "ResourceRequirements", QtyMap(1, "limits"),
               QtyMap(2, "requests"), Objs(3, "claims", kResourceClaim));
SLUICE_MESSAGE(kContainerResizePolicy, "ContainerResizePolicy", StrA(1, "resourceName"),
               StrA(2, "restartPolicy"));
SLUICE_MESSAGE(kVolumeMount, "VolumeMount", StrA(1, "name"), Bool(2, "readOnly"),
               StrP(7, "recursiveReadOnly"), StrA(3, "mountPath"), Str(4, "subPath"),
               StrP(5, "mountPropagation"), Str(6, "subPathExpr"));
SLUICE_MESSAGE(kVolumeDevice, "VolumeDevice", StrA(1, "name"), StrA(2, "devicePath"));
SLUICE_MESSAGE(kExecAction, "ExecAction", Strs(1, "command"));
SLUICE_MESSAGE(kHTTPHeader, "HTTPHeader", StrA(1, "name"), StrA(2, "value"));
SLUICE_MESSAGE(kHTTPGetAction, "HTTPGetAction", Str(1, "path"), IntStrA(2, "port"), Str(3, "host"),
               Str(4, "scheme"), Objs(5, "httpHeaders", kHTTPHeader));
SLUICE_MESSAGE(kTCPSocketAction, "TCPSocketAction", IntStrA(1, "port"), Str(2, "host"));
SLUICE_MESSAGE(kGRPCAction, "GRPCAction", IntA(1, "port"),
               Scalar(2, "service", Type::kString, Presence::kNullable));
SLUICE_MESSAGE(kSleepAction, "SleepAction", LongA(1, "seconds"));
SLUICE_MESSAGE(kProbeHandler, "ProbeHandler", ObjP(1, "exec", kExecAction),
               ObjP(2, "httpGet", kHTTPGetAction), ObjP(3, "tcpSocket", kTCPSocketAction),
               ObjP(4, "grpc", kGRPCAction));
SLUICE_MESSAGE(kProbe, "Probe", Inline(1, kProbeHandler), Int(2, "initialDelaySeconds"),
               Int(3, "timeoutSeconds"), Int(4, "periodSeconds"), Int(5, "successThreshold"),
               Int(6, "failureThreshold"), LongP(7, "terminationGracePeriodSeconds"));
SLUICE_MESSAGE(kLifecycleHandler, "LifecycleHandler", ObjP(1, "exec", kExecAction),
               ObjP(2, "httpGet", kHTTPGetAction), ObjP(3, "tcpSocket", kTCPSocketAction),
               ObjP(4, "sleep", kSleepAction));
SLUICE_MESSAGE(kLifecycle, "Lifecycle", ObjP(1, "postStart", kLifecycleHandler),
               ObjP(2, "preStop", kLifecycleHandler), StrP(3, "stopSignal"));
SLUICE_MESSAGE(kCapabilities, "Capabilities", Strs(1, "add"), Strs(2, "drop"));
SLUICE_MESSAGE(kSELinuxOptions, "SELinuxOptions", Str(1, "user"), Str(2, "role"), Str(3, "type"),
               Str(4, "level"));
SLUICE_MESSAGE(kWindowsOptions, "WindowsSecurityContextOptions", StrP(1, "gmsaCredentialSpecName"),
               StrP(2, "gmsaCredentialSpec"), StrP(3, "runAsUserName"), BoolP(4, "hostProcess"));
// SeccompProfile and AppArmorProfile.
SLUICE_MESSAGE(kProfile, "Profile", StrA(1, "type"), StrP(2, "localhostProfile"));
SLUICE_MESSAGE(kSecurityContext, "SecurityContext", ObjP(1, "capabilities", kCapabilities),
               BoolP(2, "privileged"), ObjP(3, "seLinuxOptions", kSELinuxOptions),
               ObjP(10, "windowsOptions", kWindowsOptions), LongP(4, "runAsUser"),
               LongP(8, "runAsGroup"), BoolP(5, "runAsNonRoot"), BoolP(6, "readOnlyRootFilesystem"),
               BoolP(7, "allowPrivilegeEscalation"), StrP(9, "procMount"),
               ObjP(11, "seccompProfile", kProfile), ObjP(12, "appArmorProfile", kProfile));
// Container, and EphemeralContainerCommon, which has the same fields and numbers.
SLUICE_MESSAGE(kContainer, "Container", StrA(1, "name"), Str(2, "image"), Strs(3, "command"),
               Strs(4, "args"), Str(5, "workingDir"), Objs(6, "ports", kContainerPort),
               Objs(19, "envFrom", kEnvFromSource), Objs(7, "env", kEnvVar),
               Obj(8, "resources", kResourceRequirements),
               Objs(23, "resizePolicy", kContainerResizePolicy), StrP(24, "restartPolicy"),
               Objs(9, "volumeMounts", kVolumeMount), Objs(21, "volumeDevices", kVolumeDevice),
               ObjP(10, "livenessProbe", kProbe), ObjP(11, "readinessProbe", kProbe),
               ObjP(22, "startupProbe", kProbe), ObjP(12, "lifecycle", kLifecycle),
               Str(13, "terminationMessagePath"), Str(20, "terminationMessagePolicy"),
               Str(14, "imagePullPolicy"), ObjP(15, "securityContext", kSecurityContext),
               Bool(16, "stdin"), Bool(17, "stdinOnce"), Bool(18, "tty"));
SLUICE_MESSAGE(kEphemeralContainer, "EphemeralContainer", Inline(1, kContainer),
               Str(2, "targetContainerName"));

// core/v1: volumes.
SLUICE_MESSAGE(kKeyToPath, "KeyToPath", StrA(1, "key"), StrA(2, "path"), IntP(3, "mode"));
SLUICE_MESSAGE(kHostPathVolumeSource, "HostPathVolumeSource", StrA(1, "path"), StrP(2, "type"));
SLUICE_MESSAGE(kEmptyDirVolumeSource, "EmptyDirVolumeSource", Str(1, "medium"),
               QtyP(2, "sizeLimit"));
SLUICE_MESSAGE(kSecretVolumeSource, "SecretVolumeSource", Str(1, "secretName"),
               Objs(2, "items", kKeyToPath), IntP(3, "defaultMode"), BoolP(4, "optional"));
SLUICE_MESSAGE(kPVCVolumeSource, "PersistentVolumeClaimVolumeSource", StrA(1, "claimName"),
               Bool(2, "readOnly"));
SLUICE_MESSAGE(kDownwardAPIVolumeFile, "DownwardAPIVolumeFile", StrA(1, "path"),
               ObjP(2, "fieldRef", kObjectFieldSelector),
               ObjP(3, "resourceFieldRef", kResourceFieldSelector), IntP(4, "mode"));
SLUICE_MESSAGE(kDownwardAPIVolumeSource, "DownwardAPIVolumeSource",
               Objs(1, "items", kDownwardAPIVolumeFile), IntP(2, "defaultMode"));
SLUICE_MESSAGE(kConfigMapVolumeSource, "ConfigMapVolumeSource", Inline(1, kLocalObjectReference),
               Objs(2, "items", kKeyToPath), IntP(3, "defaultMode"), BoolP(4, "optional"));
SLUICE_MESSAGE(kServiceAccountTokenProjection, "ServiceAccountTokenProjection", Str(1, "audience"),
               LongP(2, "expirationSeconds"), StrA(3, "path"));
// ConfigMapProjection and SecretProjection.
SLUICE_MESSAGE(kKeyProjection, "KeyProjection", Inline(1, kLocalObjectReference),
               Objs(2, "items", kKeyToPath), BoolP(4, "optional"));
SLUICE_MESSAGE(kDownwardAPIProjection, "DownwardAPIProjection",
               Objs(1, "items", kDownwardAPIVolumeFile));
SLUICE_MESSAGE(kVolumeProjection, "VolumeProjection", ObjP(1, "secret", kKeyProjection),
               ObjP(2, "downwardAPI", kDownwardAPIProjection), ObjP(3, "configMap", kKeyProjection),
               ObjP(4, "serviceAccountToken", kServiceAccountTokenProjection));
SLUICE_MESSAGE(kProjectedVolumeSource, "ProjectedVolumeSource",
               ObjsA(1, "sources", kVolumeProjection), IntP(2, "defaultMode"));
SLUICE_MESSAGE(kCSIVolumeSource, "CSIVolumeSource", StrA(1, "driver"), BoolP(2, "readOnly"),
               StrP(3, "fsType"), StrMap(4, "volumeAttributes"),
               ObjP(5, "nodePublishSecretRef", kLocalObjectReference));
SLUICE_MESSAGE(kImageVolumeSource, "ImageVolumeSource", Str(1, "reference"), Str(2, "pullPolicy"));
SLUICE_MESSAGE(kVolumeSource, "VolumeSource", ObjP(1, "hostPath", kHostPathVolumeSource),
               ObjP(2, "emptyDir", kEmptyDirVolumeSource), ObjP(6, "secret", kSecretVolumeSource),
               ObjP(10, "persistentVolumeClaim", kPVCVolumeSource),
               ObjP(16, "downwardAPI", kDownwardAPIVolumeSource),
               ObjP(19, "configMap", kConfigMapVolumeSource),
               ObjP(26, "projected", kProjectedVolumeSource), ObjP(28, "csi", kCSIVolumeSource),
               ObjP(30, "image", kImageVolumeSource));
SLUICE_MESSAGE(kVolume, "Volume", StrA(1, "name"), Inline(2, kVolumeSource));

// core/v1: scheduling.
SLUICE_MESSAGE(kNodeSelectorRequirement, "NodeSelectorRequirement", StrA(1, "key"),
               StrA(2, "operator"), Strs(3, "values"));
SLUICE_MESSAGE(kNodeSelectorTerm, "NodeSelectorTerm",
               Objs(1, "matchExpressions", kNodeSelectorRequirement),
               Objs(2, "matchFields", kNodeSelectorRequirement));
SLUICE_MESSAGE(kNodeSelector, "NodeSelector", ObjsA(1, "nodeSelectorTerms", kNodeSelectorTerm));
SLUICE_MESSAGE(kPreferredSchedulingTerm, "PreferredSchedulingTerm", IntA(1, "weight"),
               Obj(2, "preference", kNodeSelectorTerm));
SLUICE_MESSAGE(kNodeAffinity, "NodeAffinity",
               ObjP(1, "requiredDuringSchedulingIgnoredDuringExecution", kNodeSelector),
               Objs(2, "preferredDuringSchedulingIgnoredDuringExecution",
                    kPreferredSchedulingTerm));
SLUICE_MESSAGE(kPodAffinityTerm, "PodAffinityTerm", ObjP(1, "labelSelector", kLabelSelector),
               Strs(2, "namespaces"), StrA(3, "topologyKey"),
               ObjP(4, "namespaceSelector", kLabelSelector), Strs(5, "matchLabelKeys"),
               Strs(6, "mismatchLabelKeys"));
SLUICE_MESSAGE(kWeightedPodAffinityTerm, "WeightedPodAffinityTerm", IntA(1, "weight"),
               Obj(2, "podAffinityTerm", kPodAffinityTerm));
// PodAffinity and PodAntiAffinity.
SLUICE_MESSAGE(kPodAffinity, "PodAffinity",
               Objs(1, "requiredDuringSchedulingIgnoredDuringExecution", kPodAffinityTerm),
               Objs(2, "preferredDuringSchedulingIgnoredDuringExecution",
                    kWeightedPodAffinityTerm));
SLUICE_MESSAGE(kAffinity, "Affinity", ObjP(1, "nodeAffinity", kNodeAffinity),
               ObjP(2, "podAffinity", kPodAffinity), ObjP(3, "podAntiAffinity", kPodAffinity));
SLUICE_MESSAGE(kToleration, "Toleration", Str(1, "key"), Str(2, "operator"), Str(3, "value"),
               Str(4, "effect"), LongP(5, "tolerationSeconds"));
SLUICE_MESSAGE(kTopologySpreadConstraint, "TopologySpreadConstraint", IntA(1, "maxSkew"),
               StrA(2, "topologyKey"), StrA(3, "whenUnsatisfiable"),
               ObjP(4, "labelSelector", kLabelSelector), IntP(5, "minDomains"),
               StrP(6, "nodeAffinityPolicy"), StrP(7, "nodeTaintsPolicy"),
               Strs(8, "matchLabelKeys"));
SLUICE_MESSAGE(kHostAlias, "HostAlias", StrA(1, "ip"), Strs(2, "hostnames"));
SLUICE_MESSAGE(kPodDNSConfigOption, "PodDNSConfigOption", Str(1, "name"), StrP(2, "value"));
SLUICE_MESSAGE(kPodDNSConfig, "PodDNSConfig", Strs(1, "nameservers"), Strs(2, "searches"),
               Objs(3, "options", kPodDNSConfigOption));
SLUICE_MESSAGE(kPodReadinessGate, "PodReadinessGate", StrA(1, "conditionType"));
// PodOS and PodSchedulingGate.
SLUICE_MESSAGE(kNamed, "Named", StrA(1, "name"));
SLUICE_MESSAGE(kSysctl, "Sysctl", StrA(1, "name"), StrA(2, "value"));
SLUICE_MESSAGE(kPodSecurityContext, "PodSecurityContext",
               ObjP(1, "seLinuxOptions", kSELinuxOptions),
               ObjP(8, "windowsOptions", kWindowsOptions), LongP(2, "runAsUser"),
               LongP(6, "runAsGroup"), BoolP(3, "runAsNonRoot"), Longs(4, "supplementalGroups"),
               StrP(12, "supplementalGroupsPolicy"), LongP(5, "fsGroup"),
               Objs(7, "sysctls", kSysctl), StrP(9, "fsGroupChangePolicy"),
               ObjP(10, "seccompProfile", kProfile), ObjP(11, "appArmorProfile", kProfile),
               StrP(13, "seLinuxChangePolicy"));
SLUICE_MESSAGE(kPodResourceClaim, "PodResourceClaim", StrA(1, "name"), StrP(3, "resourceClaimName"),
               StrP(4, "resourceClaimTemplateName"));

// core/v1: Pod.
SLUICE_MESSAGE(kPodSpec, "PodSpec", Objs(1, "volumes", kVolume),
               Objs(20, "initContainers", kContainer), ObjsA(2, "containers", kContainer),
               Objs(34, "ephemeralContainers", kEphemeralContainer), Str(3, "restartPolicy"),
               LongP(4, "terminationGracePeriodSeconds"), LongP(5, "activeDeadlineSeconds"),
               Str(6, "dnsPolicy"), StrMap(7, "nodeSelector"), Str(8, "serviceAccountName"),
               Str(9, "serviceAccount"), BoolP(21, "automountServiceAccountToken"),
               Str(10, "nodeName"), Bool(11, "hostNetwork"), Bool(12, "hostPID"),
               Bool(13, "hostIPC"), BoolP(27, "shareProcessNamespace"),
               ObjP(14, "securityContext", kPodSecurityContext),
               Objs(15, "imagePullSecrets", kLocalObjectReference), Str(16, "hostname"),
               Str(17, "subdomain"), ObjP(18, "affinity", kAffinity), Str(19, "schedulerName"),
               Objs(22, "tolerations", kToleration), Objs(23, "hostAliases", kHostAlias),
               Str(24, "priorityClassName"), IntP(25, "priority"),
               ObjP(26, "dnsConfig", kPodDNSConfig), Objs(28, "readinessGates", kPodReadinessGate),
               StrP(29, "runtimeClassName"), BoolP(30, "enableServiceLinks"),
               StrP(31, "preemptionPolicy"), QtyMap(32, "overhead"),
               Objs(33, "topologySpreadConstraints", kTopologySpreadConstraint),
               BoolP(35, "setHostnameAsFQDN"), ObjP(36, "os", kNamed), BoolP(37, "hostUsers"),
               Objs(38, "schedulingGates", kNamed), Objs(39, "resourceClaims", kPodResourceClaim),
               ObjP(40, "resources", kResourceRequirements));
SLUICE_MESSAGE(kPodCondition, "PodCondition", StrA(1, "type"), Long(7, "observedGeneration"),
               StrA(2, "status"), TimeA(3, "lastProbeTime"), TimeA(4, "lastTransitionTime"),
               Str(5, "reason"), Str(6, "message"));
// PodIP and HostIP.
SLUICE_MESSAGE(kIP, "IP", StrA(1, "ip"));
// Container statuses and resize state are not decoded: clients do not create pods with them.
SLUICE_MESSAGE(kPodStatus, "PodStatus", Str(1, "phase"), Objs(2, "conditions", kPodCondition),
               Str(3, "message"), Str(4, "reason"), Str(11, "nominatedNodeName"), Str(5, "hostIP"),
               Objs(16, "hostIPs", kIP), Str(6, "podIP"), Objs(12, "podIPs", kIP),
               TimeP(7, "startTime"), Str(9, "qosClass"));
SLUICE_MESSAGE(kPod, "Pod", Obj(1, "metadata", kObjectMeta), Obj(2, "spec", kPodSpec),
               Obj(3, "status", kPodStatus));

// core/v1: Service.
SLUICE_MESSAGE(kServicePort, "ServicePort", Str(1, "name"), Str(2, "protocol"),
               StrP(6, "appProtocol"), IntA(3, "port"), IntStrA(4, "targetPort"),
               Int(5, "nodePort"));
SLUICE_MESSAGE(kClientIPConfig, "ClientIPConfig", IntP(1, "timeoutSeconds"));
SLUICE_MESSAGE(kSessionAffinityConfig, "SessionAffinityConfig",
               ObjP(1, "clientIP", kClientIPConfig));
SLUICE_MESSAGE(kServiceSpec, "ServiceSpec", Objs(1, "ports", kServicePort), StrMap(2, "selector"),
               Str(3, "clusterIP"), Strs(18, "clusterIPs"), Str(4, "type"), Strs(5, "externalIPs"),
               Str(7, "sessionAffinity"), Str(8, "loadBalancerIP"),
               Strs(9, "loadBalancerSourceRanges"), Str(10, "externalName"),
               Str(11, "externalTrafficPolicy"), Int(12, "healthCheckNodePort"),
               Bool(13, "publishNotReadyAddresses"),
               ObjP(14, "sessionAffinityConfig", kSessionAffinityConfig), Strs(19, "ipFamilies"),
               StrP(17, "ipFamilyPolicy"), BoolP(20, "allocateLoadBalancerNodePorts"),
               StrP(21, "loadBalancerClass"), StrP(22, "internalTrafficPolicy"),
               StrP(23, "trafficDistribution"));
SLUICE_MESSAGE(kPortStatus, "PortStatus", IntA(1, "port"), StrA(2, "protocol"), StrP(3, "error"));
SLUICE_MESSAGE(kLoadBalancerIngress, "LoadBalancerIngress", Str(1, "ip"), Str(2, "hostname"),
               StrP(3, "ipMode"), Objs(4, "ports", kPortStatus));
SLUICE_MESSAGE(kLoadBalancerStatus, "LoadBalancerStatus", Objs(1, "ingress", kLoadBalancerIngress));
SLUICE_MESSAGE(kServiceStatus, "ServiceStatus", Obj(1, "loadBalancer", kLoadBalancerStatus),
               Objs(2, "conditions", kCondition));
SLUICE_MESSAGE(kService, "Service", Obj(1, "metadata", kObjectMeta), Obj(2, "spec", kServiceSpec),
               Obj(3, "status", kServiceStatus));

// Events (core/v1 and events.k8s.io/v1), Lease, Eviction.
SLUICE_MESSAGE(kObjectReference, "ObjectReference", Str(1, "kind"), Str(2, "namespace"),
               Str(3, "name"), Str(4, "uid"), Str(5, "apiVersion"), Str(6, "resourceVersion"),
               Str(7, "fieldPath"));
SLUICE_MESSAGE(kEventSource, "EventSource", Str(1, "component"), Str(2, "host"));
SLUICE_MESSAGE(kCoreEventSeries, "EventSeries", Int(1, "count"), MicroA(2, "lastObservedTime"));
SLUICE_MESSAGE(kCoreEvent, "Event", Obj(1, "metadata", kObjectMeta),
               Obj(2, "involvedObject", kObjectReference), Str(3, "reason"), Str(4, "message"),
               Obj(5, "source", kEventSource), TimeA(6, "firstTimestamp"),
               TimeA(7, "lastTimestamp"), Int(8, "count"), Str(9, "type"), MicroA(10, "eventTime"),
               ObjP(11, "series", kCoreEventSeries), Str(12, "action"),
               ObjP(13, "related", kObjectReference), StrA(14, "reportingComponent"),
               StrA(15, "reportingInstance"));
SLUICE_MESSAGE(kEventsEventSeries, "EventSeries", IntA(1, "count"), MicroA(2, "lastObservedTime"));
SLUICE_MESSAGE(kEventsEvent, "Event", Obj(1, "metadata", kObjectMeta), MicroA(2, "eventTime"),
               ObjP(3, "series", kEventsEventSeries), Str(4, "reportingController"),
               Str(5, "reportingInstance"), Str(6, "action"), Str(7, "reason"),
               Obj(8, "regarding", kObjectReference), ObjP(9, "related", kObjectReference),
               Str(10, "note"), Str(11, "type"), Obj(12, "deprecatedSource", kEventSource),
               TimeA(13, "deprecatedFirstTimestamp"), TimeA(14, "deprecatedLastTimestamp"),
               Int(15, "deprecatedCount"));
SLUICE_MESSAGE(kLeaseSpec, "LeaseSpec", StrP(1, "holderIdentity"), IntP(2, "leaseDurationSeconds"),
               MicroP(3, "acquireTime"), MicroP(4, "renewTime"), IntP(5, "leaseTransitions"),
               StrP(6, "strategy"), StrP(7, "preferredHolder"));
SLUICE_MESSAGE(kLease, "Lease", Obj(1, "metadata", kObjectMeta), Obj(2, "spec", kLeaseSpec));
SLUICE_MESSAGE(kEviction, "Eviction", Obj(1, "metadata", kObjectMeta),
               ObjP(2, "deleteOptions", kDeleteOptions));

// ServiceAccount (`kubectl create serviceaccount`) and authentication.k8s.io/v1 TokenRequest
// (`kubectl create token`).
SLUICE_MESSAGE(kServiceAccount, "ServiceAccount", Obj(1, "metadata", kObjectMeta),
               Objs(2, "secrets", kObjectReference),
               Objs(3, "imagePullSecrets", kLocalObjectReference),
               BoolP(4, "automountServiceAccountToken"));
SLUICE_MESSAGE(kBoundObjectReference, "BoundObjectReference", Str(1, "kind"), Str(2, "apiVersion"),
               Str(3, "name"), Str(4, "uid"));
SLUICE_MESSAGE(kTokenRequestSpec, "TokenRequestSpec", StrsA(1, "audiences"),
               Scalar(4, "expirationSeconds", Type::kInt64, Presence::kNullable),
               FieldDef{3, "boundObjectRef", Type::kMessage, Shape::kSingle, Presence::kNullable,
                        &kBoundObjectReference});
SLUICE_MESSAGE(kTokenRequestStatus, "TokenRequestStatus", StrA(1, "token"),
               TimeA(2, "expirationTimestamp"));
SLUICE_MESSAGE(kTokenRequest, "TokenRequest", Obj(1, "metadata", kObjectMeta),
               Obj(2, "spec", kTokenRequestSpec), Obj(3, "status", kTokenRequestStatus));

// rbac.authorization.k8s.io/v1 (`kubectl create role|clusterrole|rolebinding|clusterrolebinding`).
SLUICE_MESSAGE(kPolicyRule, "PolicyRule", StrsA(1, "verbs"), Strs(2, "apiGroups"),
               Strs(3, "resources"), Strs(4, "resourceNames"), Strs(5, "nonResourceURLs"));
SLUICE_MESSAGE(kAggregationRule, "AggregationRule",
               Objs(1, "clusterRoleSelectors", kLabelSelector));
SLUICE_MESSAGE(kRole, "Role", Obj(1, "metadata", kObjectMeta), ObjsA(2, "rules", kPolicyRule));
SLUICE_MESSAGE(kClusterRole, "ClusterRole", Obj(1, "metadata", kObjectMeta),
               ObjsA(2, "rules", kPolicyRule), ObjP(3, "aggregationRule", kAggregationRule));
SLUICE_MESSAGE(kSubject, "Subject", StrA(1, "kind"), Str(2, "apiGroup"), StrA(3, "name"),
               Str(4, "namespace"));
SLUICE_MESSAGE(kRoleRef, "RoleRef", StrA(1, "apiGroup"), StrA(2, "kind"), StrA(3, "name"));
// RoleBinding and ClusterRoleBinding.
SLUICE_MESSAGE(kRoleBinding, "RoleBinding", Obj(1, "metadata", kObjectMeta),
               Objs(2, "subjects", kSubject), Obj(3, "roleRef", kRoleRef));

// authorization.k8s.io/v1 (`kubectl auth can-i`, and the reviews other clients post).
// LabelSelectorAttributes and FieldSelectorAttributes.
SLUICE_MESSAGE(kSelectorAttributes, "SelectorAttributes", Str(1, "rawSelector"),
               Objs(2, "requirements", kLabelSelectorRequirement));
SLUICE_MESSAGE(kResourceAttributes, "ResourceAttributes", Str(1, "namespace"), Str(2, "verb"),
               Str(3, "group"), Str(4, "version"), Str(5, "resource"), Str(6, "subresource"),
               Str(7, "name"), ObjP(8, "fieldSelector", kSelectorAttributes),
               ObjP(9, "labelSelector", kSelectorAttributes));
SLUICE_MESSAGE(kNonResourceAttributes, "NonResourceAttributes", Str(1, "path"), Str(2, "verb"));
SLUICE_MESSAGE(kSelfSubjectAccessReviewSpec, "SelfSubjectAccessReviewSpec",
               ObjP(1, "resourceAttributes", kResourceAttributes),
               ObjP(2, "nonResourceAttributes", kNonResourceAttributes));
SLUICE_MESSAGE(kSubjectAccessReviewSpec, "SubjectAccessReviewSpec",
               ObjP(1, "resourceAttributes", kResourceAttributes),
               ObjP(2, "nonResourceAttributes", kNonResourceAttributes), Str(3, "user"),
               Strs(4, "groups"), StrListMap(5, "extra"), Str(6, "uid"));
SLUICE_MESSAGE(kSubjectAccessReviewStatus, "SubjectAccessReviewStatus", BoolA(1, "allowed"),
               Bool(4, "denied"), Str(2, "reason"), Str(3, "evaluationError"));
// SubjectAccessReview and LocalSubjectAccessReview.
SLUICE_MESSAGE(kSubjectAccessReview, "SubjectAccessReview", Obj(1, "metadata", kObjectMeta),
               Obj(2, "spec", kSubjectAccessReviewSpec),
               Obj(3, "status", kSubjectAccessReviewStatus));
SLUICE_MESSAGE(kSelfSubjectAccessReview, "SelfSubjectAccessReview", Obj(1, "metadata", kObjectMeta),
               Obj(2, "spec", kSelfSubjectAccessReviewSpec),
               Obj(3, "status", kSubjectAccessReviewStatus));
SLUICE_MESSAGE(kSelfSubjectRulesReviewSpec, "SelfSubjectRulesReviewSpec", Str(1, "namespace"));
SLUICE_MESSAGE(kResourceRule, "ResourceRule", StrsA(1, "verbs"), Strs(2, "apiGroups"),
               Strs(3, "resources"), Strs(4, "resourceNames"));
SLUICE_MESSAGE(kNonResourceRule, "NonResourceRule", StrsA(1, "verbs"), Strs(2, "nonResourceURLs"));
SLUICE_MESSAGE(kSubjectRulesReviewStatus, "SubjectRulesReviewStatus",
               ObjsA(1, "resourceRules", kResourceRule),
               ObjsA(2, "nonResourceRules", kNonResourceRule), BoolA(3, "incomplete"),
               Str(4, "evaluationError"));
SLUICE_MESSAGE(kSelfSubjectRulesReview, "SelfSubjectRulesReview", Obj(1, "metadata", kObjectMeta),
               Obj(2, "spec", kSelfSubjectRulesReviewSpec),
               Obj(3, "status", kSubjectRulesReviewStatus));
// authentication.k8s.io/v1 SelfSubjectReview (`kubectl auth whoami`): the client sends only
// metadata; the status is the server's answer.
SLUICE_MESSAGE(kUserInfo, "UserInfo", Str(1, "username"), Str(2, "uid"), Strs(3, "groups"),
               StrListMap(4, "extra"));
SLUICE_MESSAGE(kSelfSubjectReviewStatus, "SelfSubjectReviewStatus", Obj(1, "userInfo", kUserInfo));
SLUICE_MESSAGE(kSelfSubjectReview, "SelfSubjectReview", Obj(1, "metadata", kObjectMeta),
               Obj(2, "status", kSelfSubjectReviewStatus));

#undef SLUICE_MESSAGE

struct KindDef {
  std::string_view api_version;
  std::string_view kind;
  const MessageDef* message;
};

constexpr KindDef kKinds[] = {
    {"v1", "Namespace", &kNamespace},
    {"v1", "ConfigMap", &kConfigMap},
    {"v1", "Secret", &kSecret},
    {"v1", "Pod", &kPod},
    {"v1", "Service", &kService},
    {"v1", "Event", &kCoreEvent},
    {"coordination.k8s.io/v1", "Lease", &kLease},
    {"events.k8s.io/v1", "Event", &kEventsEvent},
    {"policy/v1", "Eviction", &kEviction},
    {"v1", "ServiceAccount", &kServiceAccount},
    {"authentication.k8s.io/v1", "TokenRequest", &kTokenRequest},
    {"rbac.authorization.k8s.io/v1", "Role", &kRole},
    {"rbac.authorization.k8s.io/v1", "ClusterRole", &kClusterRole},
    {"rbac.authorization.k8s.io/v1", "RoleBinding", &kRoleBinding},
    {"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", &kRoleBinding},
    {"authorization.k8s.io/v1", "SelfSubjectAccessReview", &kSelfSubjectAccessReview},
    {"authorization.k8s.io/v1", "SubjectAccessReview", &kSubjectAccessReview},
    {"authorization.k8s.io/v1", "LocalSubjectAccessReview", &kSubjectAccessReview},
    {"authorization.k8s.io/v1", "SelfSubjectRulesReview", &kSelfSubjectRulesReview},
    {"authentication.k8s.io/v1", "SelfSubjectReview", &kSelfSubjectReview},
};

const MessageDef* FindKind(std::string_view api_version, std::string_view kind) {
  // DeleteOptions is registered in every group version.
  if (kind == "DeleteOptions" && !api_version.empty()) return &kDeleteOptions;
  for (const KindDef& k : kKinds) {
    if (k.api_version == api_version && k.kind == kind) return k.message;
  }
  return nullptr;
}

const FieldDef* FindField(const MessageDef& def, uint32_t number) {
  for (const FieldDef& f : def.fields) {
    if (f.number == number) return &f;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Wire format.

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

Status Malformed(std::string message) {
  return Status::InvalidArgument("malformed protobuf: " + std::move(message));
}

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  bool AtEnd() const { return pos_ >= data_.size(); }

  Status Varint(uint64_t* out) {
    uint64_t value = 0;
    for (int i = 0; i < 10; ++i) {
      if (pos_ >= data_.size()) return Malformed("truncated varint");
      const auto byte = static_cast<uint8_t>(data_[pos_++]);
      if (i == 9 && byte > 1) return Malformed("varint overflows 64 bits");
      value |= static_cast<uint64_t>(byte & 0x7F) << (7 * i);
      if ((byte & 0x80) == 0) {
        *out = value;
        return Status::Ok();
      }
    }
    return Malformed("varint longer than 10 bytes");
  }

  Status Tag(uint32_t* number, uint32_t* wire_type) {
    uint64_t key = 0;
    SLUICE_RETURN_IF_ERROR(Varint(&key));
    const uint64_t field = key >> 3;
    if (field == 0 || field > 0x1FFFFFFF) return Malformed("invalid field number");
    *number = static_cast<uint32_t>(field);
    *wire_type = static_cast<uint32_t>(key & 7);
    return Status::Ok();
  }

  Status LengthDelimited(std::string_view* out) {
    uint64_t length = 0;
    SLUICE_RETURN_IF_ERROR(Varint(&length));
    if (length > data_.size() - pos_) return Malformed("length past the end of the data");
    *out = data_.substr(pos_, static_cast<size_t>(length));
    pos_ += static_cast<size_t>(length);
    return Status::Ok();
  }

  Status Skip(uint32_t wire_type) {
    switch (wire_type) {
      case kVarint: {
        uint64_t ignored = 0;
        return Varint(&ignored);
      }
      case kFixed64:
        return Advance(8);
      case kLengthDelimited: {
        std::string_view ignored;
        return LengthDelimited(&ignored);
      }
      case kFixed32:
        return Advance(4);
      case kStartGroup:
      case kEndGroup:
        return Malformed("groups are not supported");
      default:
        return Malformed("invalid wire type " + std::to_string(wire_type));
    }
  }

 private:
  Status Advance(size_t n) {
    if (n > data_.size() - pos_) return Malformed("truncated fixed-width field");
    pos_ += n;
    return Status::Ok();
  }

  std::string_view data_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Values.

// Go's encoding/json writes invalid UTF-8 as U+FFFD, one per bad byte; nlohmann::json refuses to
// dump it at all, so strings are made valid here.
std::string ValidUtf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    const auto c = static_cast<uint8_t>(in[i]);
    size_t length = 0;
    uint32_t min = 0;
    uint32_t code = 0;
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      length = 2, min = 0x80, code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3, min = 0x800, code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4, min = 0x10000, code = c & 0x07;
    }
    bool valid = length != 0 && i + length <= in.size();
    for (size_t k = 1; valid && k < length; ++k) {
      const auto next = static_cast<uint8_t>(in[i + k]);
      if ((next & 0xC0) != 0x80) valid = false;
      code = (code << 6) | (next & 0x3F);
    }
    valid = valid && code >= min && code <= 0x10FFFF && !(code >= 0xD800 && code <= 0xDFFF);
    if (valid) {
      out.append(in.substr(i, length));
      i += length;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
    }
  }
  return out;
}

// The seconds of 0001-01-01T00:00:00Z, Go's zero time, and the range RFC 3339 can print.
constexpr int64_t kZeroTimeSeconds = -62135596800;
constexpr int64_t kYear0Seconds = -62167219200;
constexpr int64_t kYear10000Seconds = 253402300800;

Result<std::string> FormatTime(int64_t seconds, int64_t micros, bool with_micros) {
  if (seconds < kYear0Seconds || seconds >= kYear10000Seconds) {
    return Malformed("timestamp outside years 0 to 9999");
  }
  using std::chrono::days;
  using std::chrono::sys_seconds;
  const sys_seconds point{std::chrono::seconds{seconds}};
  const auto day = std::chrono::floor<days>(point);
  const std::chrono::year_month_day date{day};
  const std::chrono::hh_mm_ss time{point - day};
  char buffer[40];
  int n = std::snprintf(buffer, sizeof(buffer), "%04d-%02u-%02uT%02d:%02d:%02d",
                        static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                        static_cast<unsigned>(date.day()), static_cast<int>(time.hours().count()),
                        static_cast<int>(time.minutes().count()),
                        static_cast<int>(time.seconds().count()));
  if (with_micros) {
    n += std::snprintf(buffer + n, sizeof(buffer) - static_cast<size_t>(n), ".%06lld",
                       static_cast<long long>(micros));
  }
  return std::string(buffer, static_cast<size_t>(n)) + "Z";
}

// metav1.Time and metav1.MicroTime: a Timestamp {seconds = 1, nanos = 2}. Time drops the nanos
// (kube's JSON has whole seconds); MicroTime truncates them to microseconds.
Result<json> DecodeTime(std::string_view bytes, bool micro) {
  if (bytes.empty()) return json(nullptr);  // The zero time.
  int64_t seconds = 0;
  int64_t nanos = 0;
  Reader reader(bytes);
  while (!reader.AtEnd()) {
    uint32_t number = 0, wire = 0;
    SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
    if ((number == 1 || number == 2) && wire == kVarint) {
      uint64_t v = 0;
      SLUICE_RETURN_IF_ERROR(reader.Varint(&v));
      if (number == 1) {
        seconds = static_cast<int64_t>(v);
      } else {
        nanos = static_cast<int32_t>(static_cast<uint32_t>(v));
      }
    } else {
      SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
    }
  }
  if (seconds < kYear0Seconds || seconds >= kYear10000Seconds) {
    return Malformed("timestamp outside years 0 to 9999");
  }
  int64_t micros = 0;
  if (micro) {
    nanos -= nanos % 1000;  // Toward zero, as Go's Duration.Truncate.
    seconds += nanos / 1000000000;
    nanos %= 1000000000;
    if (nanos < 0) {
      nanos += 1000000000;
      seconds -= 1;
    }
    micros = nanos / 1000;
  }
  if (seconds == kZeroTimeSeconds && micros == 0) return json(nullptr);
  SLUICE_ASSIGN_OR_RETURN(std::string text, FormatTime(seconds, micros, micro));
  return json(std::move(text));
}

// The syntax resource.ParseQuantity accepts: a signed decimal number, then a binary suffix
// (Ki..Ei), a decimal suffix (n, u, m, k, M, G, T, P, E) or an exponent (e3, E-2).
bool IsQuantity(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t digits = 0;
  bool dot = false;
  for (; i < s.size(); ++i) {
    if (s[i] >= '0' && s[i] <= '9') {
      ++digits;
    } else if (s[i] == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (digits == 0) return false;
  const std::string_view suffix = s.substr(i);
  if (suffix.empty()) return true;
  for (std::string_view ok :
       {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E"}) {
    if (suffix == ok) return true;
  }
  if (suffix[0] != 'e' && suffix[0] != 'E') return false;
  size_t k = 1;
  if (k < suffix.size() && (suffix[k] == '+' || suffix[k] == '-')) ++k;
  if (k == suffix.size()) return false;
  for (; k < suffix.size(); ++k) {
    if (suffix[k] < '0' || suffix[k] > '9') return false;
  }
  return true;
}

Result<json> DecodeQuantity(std::string_view bytes) {
  std::string_view text = "0";  // A zero Quantity prints as "0".
  bool sent = false;
  Reader reader(bytes);
  while (!reader.AtEnd()) {
    uint32_t number = 0, wire = 0;
    SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
    if (number == 1 && wire == kLengthDelimited) {
      SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&text));
      sent = true;
    } else {
      SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
    }
  }
  if (sent && !IsQuantity(text)) {
    return Status::InvalidArgument(
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
  }
  return json(std::string(text));
}

Result<json> DecodeIntOrString(std::string_view bytes) {
  int64_t type = 0;
  int32_t int_value = 0;
  std::string_view str_value;
  Reader reader(bytes);
  while (!reader.AtEnd()) {
    uint32_t number = 0, wire = 0;
    SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
    uint64_t v = 0;
    if ((number == 1 || number == 2) && wire == kVarint) {
      SLUICE_RETURN_IF_ERROR(reader.Varint(&v));
      if (number == 1) {
        type = static_cast<int64_t>(v);
      } else {
        int_value = static_cast<int32_t>(static_cast<uint32_t>(v));
      }
    } else if (number == 3 && wire == kLengthDelimited) {
      SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&str_value));
    } else {
      SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
    }
  }
  if (type == 0) return json(int_value);
  if (type == 1) return json(ValidUtf8(str_value));
  return Malformed("int-or-string of unknown type " + std::to_string(type));
}

// How deeply the JSON inside a FieldsV1 nests, or -1 past `limit`.
int JsonDepth(std::string_view text, int limit) {
  int depth = 0;
  int max = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return -1;
      if (depth > max) max = depth;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return max;
}

Result<json> DecodeFieldsV1(std::string_view bytes) {
  std::string_view raw;
  bool sent = false;
  Reader reader(bytes);
  while (!reader.AtEnd()) {
    uint32_t number = 0, wire = 0;
    SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
    if (number == 1 && wire == kLengthDelimited) {
      SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&raw));
      sent = true;
    } else {
      SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
    }
  }
  if (!sent) return json(nullptr);
  if (JsonDepth(raw, kMaxKubeProtobufDepth) < 0) {
    return Status::InvalidArgument("fieldsV1 nests deeper than " +
                                   std::to_string(kMaxKubeProtobufDepth));
  }
  json parsed = json::parse(raw, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Status::InvalidArgument("fieldsV1 is not valid JSON");
  return parsed;
}

// Go's ExtraValue: a fresh, non-nil []string, so [] when no item is sent.
Result<json> DecodeStringList(std::string_view bytes) {
  json items = json::array();
  Reader reader(bytes);
  while (!reader.AtEnd()) {
    uint32_t number = 0, wire = 0;
    SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
    if (number == 1 && wire == kLengthDelimited) {
      std::string_view item;
      SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&item));
      items.push_back(ValidUtf8(item));
    } else {
      SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
    }
  }
  return items;
}

// ---------------------------------------------------------------------------------------------
// Messages.

std::string JoinPath(std::string_view head, const std::string& tail) {
  if (tail.empty()) return std::string(head);
  if (tail[0] == '[') return std::string(head) + tail;
  return std::string(head) + "." + tail;
}

Status AtField(const Status& status, std::string_view name) {
  if (status.ok() || name.empty()) return status;
  return Status::InvalidArgument(status.message(), JoinPath(name, status.field()));
}

bool IsZero(const json& v) {
  if (v.is_null()) return true;
  if (v.is_string()) return v.get_ref<const std::string&>().empty();
  if (v.is_boolean()) return !v.get<bool>();
  if (v.is_number_integer()) return v.get<int64_t>() == 0;
  if (v.is_array() || v.is_object()) return v.empty();
  return false;
}

class Decoder {
 public:
  // Merges the fields in `bytes` into `obj` (a message seen twice merges, as in Go).
  Status Parse(std::string_view bytes, const MessageDef& def, json& obj, int depth) {
    if (depth > kMaxKubeProtobufDepth) {
      return Status::InvalidArgument("protobuf nests deeper than " +
                                     std::to_string(kMaxKubeProtobufDepth) + " messages");
    }
    Reader reader(bytes);
    while (!reader.AtEnd()) {
      uint32_t number = 0, wire = 0;
      SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
      const FieldDef* field = FindField(def, number);
      if (field == nullptr) {
        SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
        continue;
      }
      SLUICE_RETURN_IF_ERROR(
          AtField(ParseField(reader, wire, *field, obj, depth), field->json_name));
    }
    return Status::Ok();
  }

  // Applies Go's JSON presence rules to the fields of `def` in `obj`: zero omitempty values go,
  // missing always-printed ones get their zero value.
  void Finalize(const MessageDef& def, json& obj) {
    for (const FieldDef& f : def.fields) {
      if (f.type == Type::kInline) {
        Finalize(*f.message, obj);
        continue;
      }
      const std::string key(f.json_name);
      const bool present = obj.contains(key);
      switch (f.presence) {
        case Presence::kOmitEmpty:
          if (present && IsZero(obj[key])) obj.erase(key);
          break;
        case Presence::kAlways:
          if (!present) obj[key] = ZeroValue(f);
          break;
        case Presence::kPointer:
          break;
        case Presence::kNullable:
          if (!present) obj[key] = nullptr;
          break;
      }
    }
  }

 private:
  json ZeroValue(const FieldDef& f) {
    if (f.shape != Shape::kSingle) return nullptr;  // A nil slice or map.
    switch (f.type) {
      case Type::kString:
        return "";
      case Type::kInt32:
      case Type::kInt64:
      case Type::kIntOrString:
        return 0;
      case Type::kBool:
        return false;
      case Type::kQuantity:
        return "0";
      case Type::kMessage: {
        json value = json::object();
        Finalize(*f.message, value);
        return value;
      }
      case Type::kBytes:
      case Type::kInline:
      case Type::kTime:
      case Type::kMicroTime:
      case Type::kFieldsV1:
      case Type::kStringList:
        return nullptr;
    }
    return nullptr;
  }

  static bool IsVarintType(Type t) {
    return t == Type::kInt32 || t == Type::kInt64 || t == Type::kBool;
  }

  static json VarintValue(Type t, uint64_t v) {
    switch (t) {
      case Type::kInt32:
        return static_cast<int32_t>(static_cast<uint32_t>(v));
      case Type::kInt64:
        return static_cast<int64_t>(v);
      default:
        return v != 0;
    }
  }

  // A length-delimited value of a non-repeated type.
  Result<json> Value(const FieldDef& f, Type type, std::string_view bytes, int depth) {
    switch (type) {
      case Type::kString:
        return json(ValidUtf8(bytes));
      case Type::kBytes:
        return json(Base64Encode(bytes));
      case Type::kMessage: {
        json value = json::object();
        SLUICE_RETURN_IF_ERROR(Parse(bytes, *f.message, value, depth + 1));
        Finalize(*f.message, value);
        return value;
      }
      case Type::kTime:
        return DecodeTime(bytes, /*micro=*/false);
      case Type::kMicroTime:
        return DecodeTime(bytes, /*micro=*/true);
      case Type::kQuantity:
        return DecodeQuantity(bytes);
      case Type::kIntOrString:
        return DecodeIntOrString(bytes);
      case Type::kFieldsV1:
        return DecodeFieldsV1(bytes);
      case Type::kStringList:
        return DecodeStringList(bytes);
      default:
        return Malformed("unexpected length-delimited value");
    }
  }

  Status ParseField(Reader& reader, uint32_t wire, const FieldDef& f, json& obj, int depth) {
    const std::string key(f.json_name);
    if (IsVarintType(f.type)) {
      if (wire == kVarint) {
        uint64_t v = 0;
        SLUICE_RETURN_IF_ERROR(reader.Varint(&v));
        if (f.shape == Shape::kList) {
          obj[key].push_back(VarintValue(f.type, v));
        } else {
          obj[key] = VarintValue(f.type, v);
        }
        return Status::Ok();
      }
      if (wire == kLengthDelimited && f.shape == Shape::kList) {  // Packed.
        std::string_view packed;
        SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&packed));
        Reader values(packed);
        json& list = obj[key];
        if (!list.is_array()) list = json::array();
        while (!values.AtEnd()) {
          uint64_t v = 0;
          SLUICE_RETURN_IF_ERROR(values.Varint(&v));
          list.push_back(VarintValue(f.type, v));
        }
        return Status::Ok();
      }
      return Malformed("wire type " + std::to_string(wire) + " for a varint field");
    }
    if (wire != kLengthDelimited) {
      return Malformed("wire type " + std::to_string(wire) + " for a length-delimited field");
    }
    std::string_view bytes;
    SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&bytes));
    if (f.type == Type::kInline) return Parse(bytes, *f.message, obj, depth + 1);
    switch (f.shape) {
      case Shape::kSingle: {
        json& slot = obj[key];
        if (f.type == Type::kMessage && slot.is_object()) {
          SLUICE_RETURN_IF_ERROR(Parse(bytes, *f.message, slot, depth + 1));
          Finalize(*f.message, slot);
          return Status::Ok();
        }
        SLUICE_ASSIGN_OR_RETURN(slot, Value(f, f.type, bytes, depth));
        return Status::Ok();
      }
      case Shape::kList: {
        json& list = obj[key];
        if (!list.is_array()) list = json::array();
        Result<json> value = Value(f, f.type, bytes, depth);
        if (!value.ok()) {
          return AtField(value.status(), "[" + std::to_string(list.size()) + "]");
        }
        list.push_back(std::move(value).value());
        return Status::Ok();
      }
      case Shape::kMap:
        return ParseMapEntry(bytes, f, obj[key], depth);
    }
    return Status::Ok();
  }

  Status ParseMapEntry(std::string_view bytes, const FieldDef& f, json& map, int depth) {
    if (!map.is_object()) map = json::object();
    std::string_view key;
    std::optional<std::string_view> value;
    Reader reader(bytes);
    while (!reader.AtEnd()) {
      uint32_t number = 0, wire = 0;
      SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
      if ((number == 1 || number == 2) && wire == kLengthDelimited) {
        std::string_view item;
        SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&item));
        if (number == 1) {
          key = item;
        } else {
          value = item;
        }
      } else {
        SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
      }
    }
    const std::string name = ValidUtf8(key);
    // A missing value is the zero value: "", empty bytes, a zero quantity.
    Result<json> decoded = Value(f, f.type, value.value_or(std::string_view()), depth);
    if (!decoded.ok()) return AtField(decoded.status(), "[" + json(name).dump() + "]");
    map[name] = std::move(decoded).value();
    return Status::Ok();
  }
};

struct Envelope {
  std::string api_version;
  std::string kind;
  std::string_view raw;
  std::string content_encoding;
  std::string content_type;
};

Status ParseTypeMeta(std::string_view bytes, Envelope& out) {
  Reader reader(bytes);
  while (!reader.AtEnd()) {
    uint32_t number = 0, wire = 0;
    SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
    if ((number == 1 || number == 2) && wire == kLengthDelimited) {
      std::string_view text;
      SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&text));
      (number == 1 ? out.api_version : out.kind) = ValidUtf8(text);
    } else {
      SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
    }
  }
  return Status::Ok();
}

Status ParseEnvelope(std::string_view bytes, Envelope& out) {
  Reader reader(bytes);
  while (!reader.AtEnd()) {
    uint32_t number = 0, wire = 0;
    SLUICE_RETURN_IF_ERROR(reader.Tag(&number, &wire));
    if (number >= 1 && number <= 4 && wire == kLengthDelimited) {
      std::string_view item;
      SLUICE_RETURN_IF_ERROR(reader.LengthDelimited(&item));
      switch (number) {
        case 1:
          SLUICE_RETURN_IF_ERROR(ParseTypeMeta(item, out));
          break;
        case 2:
          out.raw = item;
          break;
        case 3:
          out.content_encoding = ValidUtf8(item);
          break;
        default:
          out.content_type = ValidUtf8(item);
          break;
      }
    } else {
      SLUICE_RETURN_IF_ERROR(reader.Skip(wire));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<json> DecodeKubeProtobuf(std::string_view body) {
  if (body.size() < kKubeProtobufMagic.size() ||
      body.substr(0, kKubeProtobufMagic.size()) != kKubeProtobufMagic) {
    return Status::InvalidArgument("protobuf body does not start with the k8s magic bytes");
  }
  Envelope envelope;
  SLUICE_RETURN_IF_ERROR(ParseEnvelope(body.substr(kKubeProtobufMagic.size()), envelope));
  if (!envelope.content_encoding.empty()) {
    return Status::InvalidArgument("protobuf content encoding \"" + envelope.content_encoding +
                                   "\" is not supported");
  }
  if (!envelope.content_type.empty() && envelope.content_type != kKubeProtobufContentType) {
    return Status::InvalidArgument("protobuf envelope holds \"" + envelope.content_type +
                                   "\", not " + std::string(kKubeProtobufContentType));
  }
  if (envelope.kind.empty()) {
    return Status::InvalidArgument("protobuf envelope names no kind");
  }
  const MessageDef* def = FindKind(envelope.api_version, envelope.kind);
  if (def == nullptr) {
    return Status::InvalidArgument("protobuf is not supported for " + envelope.api_version +
                                   ", Kind=" + envelope.kind + "; send JSON");
  }
  json obj = json::object();
  Decoder decoder;
  Status status = decoder.Parse(envelope.raw, *def, obj, 1);
  if (!status.ok()) {
    return Status::InvalidArgument("decoding protobuf " + envelope.kind + ": " + status.message(),
                                   status.field());
  }
  decoder.Finalize(*def, obj);
  obj["apiVersion"] = envelope.api_version;
  obj["kind"] = envelope.kind;
  return obj;
}

}  // namespace sluice::apiserver
