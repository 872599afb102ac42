// Kube protobuf schema tables for meta/v1, core/v1 and the small groups kubectl's typed commands
// use (coordination, events, policy, authentication's TokenRequest); see protobuf_schema.h.
#include "localcluster/apiserver/protobuf_schema.h"

namespace sluice::apiserver::kube_protobuf {

// Field numbers, JSON names and Go pointer/omitempty shapes as in k8s.io/api and
// k8s.io/apimachinery v0.32 (generated.proto and types.go). Messages are defined leaves first.

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
               ObjN(3, "boundObjectRef", kBoundObjectReference));
SLUICE_MESSAGE(kTokenRequestStatus, "TokenRequestStatus", StrA(1, "token"),
               TimeA(2, "expirationTimestamp"));
SLUICE_MESSAGE(kTokenRequest, "TokenRequest", Obj(1, "metadata", kObjectMeta),
               Obj(2, "spec", kTokenRequestSpec), Obj(3, "status", kTokenRequestStatus));

namespace {

constexpr KindDef kCoreKinds[] = {
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
};

}  // namespace

std::span<const KindDef> CoreKinds() { return kCoreKinds; }

}  // namespace sluice::apiserver::kube_protobuf
