// Container environment: turning a pod's container spec (Kubernetes JSON, as the API server
// returns it) into the environment and argv of the local process sluice-node starts for it.
//
// ResolveEnv follows the kubelet (makeEnvironmentVariables):
//   1. `envFrom` entries in order. A configMapRef exports the ConfigMap's `data` keys (not
//      `binaryData`, as kube), a secretRef the Secret's base64-decoded `data`, each key behind the
//      optional `prefix`. A missing source is an error unless `optional: true`, which skips it.
//      Keys (after the prefix) that are not valid environment variable names
//      ([-._a-zA-Z][-._a-zA-Z0-9]*) are skipped, as kube does (it emits an event).
//   2. `env` entries in order: `value` (with $(VAR) expansion against every variable defined so
//      far, envFrom ones included), or `valueFrom` (fieldRef, resourceFieldRef, configMapKeyRef,
//      secretKeyRef). An optional key ref whose object or key is missing leaves the variable
//      untouched (undefined, or its earlier value), as kube's `continue` does.
// Kube keeps the result in a map, so its order is unspecified. Here the list is in order of first
// definition; a later definition of the same name replaces the value in place, so every name
// appears once.
//
// fieldRef paths: metadata.name, metadata.namespace, metadata.uid, metadata.labels,
// metadata.annotations, metadata.labels['k'], metadata.annotations['k'] (empty when absent),
// spec.nodeName, spec.serviceAccountName (falls back to "default", which kube's admission would
// have set), status.podIP, status.podIPs, status.hostIP, status.hostIPs. PodFacts, when set,
// take precedence over the pod's own spec/status for the node name and IPs (the node knows them
// before the status is written). Any other path: InvalidArgument "unsupported fieldPath: <path>".
//
// resourceFieldRef is implemented with a minimal Kubernetes quantity parser (plain, decimal
// SI n/u/m/k/M/G/T/P/E, binary Ki..Ei and exponent forms, no negative values): limits.cpu,
// requests.cpu (ceil(milli(value) / milli(divisor)), so 500m with divisor 1 gives "1"),
// limits.memory, requests.memory, limits.ephemeral-storage, requests.ephemeral-storage
// (ceil(value / divisor)). `divisor` defaults to 1. As in kube, an unset limit means the node's
// allocatable; a local node has no other than the host's: hardware threads, physical memory and
// the capacity of the file system at "/". An unset request falls back to the limit when one is
// set (API defaulting), else 0. Other resources: InvalidArgument
// "unsupported container resource : <name>" (kube's text).
//
// Errors carry kube's CreateContainerConfigError wording: NotFound `configmap "cfg" not found`,
// `secret "tok" not found`, `couldn't find key url in ConfigMap default/cfg`,
// `couldn't find key token in Secret default/tok`; InvalidArgument for malformed specs.
//
// Thread safety: stateless functions; the ObjectLookup callbacks are called on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace sluice::node {

// What the node knows about a running pod beyond its object.
struct PodFacts {
  std::string pod_ip;
  std::string node_name;
  std::string host_ip;
};

// Lookups of objects in the pod's namespace; nullopt = not found. An empty std::function counts
// as "never found".
struct ObjectLookup {
  std::function<std::optional<nlohmann::json>(const std::string& name)> config_map;
  std::function<std::optional<nlohmann::json>(const std::string& name)> secret;
};

using EnvList = std::vector<std::pair<std::string, std::string>>;

// The container's environment (see the file comment), in order of first definition.
Result<EnvList> ResolveEnv(const nlohmann::json& pod, const nlohmann::json& container,
                           const PodFacts& facts, const ObjectLookup& lookup);

// Kube's $(VAR) expansion: `$(VAR)` becomes VAR's value when VAR is in `env` (the last entry of
// that name wins) and is left as written when not; `$$` becomes `$` (so `$$(VAR)` gives the
// literal `$(VAR)`); a `$` before any other character, an unterminated `$(` and a trailing `$`
// are copied unchanged.
std::string ExpandVariables(std::string_view text, const EnvList& env);

// The process argv under kube's command/args semantics, every element passed through
// ExpandVariables: {command..., args...}. `command` replaces the image's ENTRYPOINT and `args`
// its CMD. When `command` is absent or empty the result holds the expanded args only (possibly
// nothing), and the caller must prepend the executable it uses in place of the image's
// entrypoint; result[0] is the executable exactly when the container has a non-empty `command`.
std::vector<std::string> ContainerArgv(const nlohmann::json& container, const EnvList& env);

// Helpers shared with pod_volumes.cpp (and usable by the node agent).

// The pod's namespace ("default" when metadata.namespace is absent or empty).
std::string PodNamespace(const nlohmann::json& pod);

// The value of a downward-API fieldRef path (the list in the file comment). Maps
// (metadata.labels / metadata.annotations) are rendered as sorted `key="value"` lines joined by
// "\n" with Go %q quoting, as kube's FormatMap does.
Result<std::string> PodFieldValue(const nlohmann::json& pod, std::string_view field_path,
                                  const PodFacts& facts);

// The value of a resourceFieldRef ({resource, divisor, containerName}) for `container`.
Result<std::string> ContainerResourceValue(const nlohmann::json& container,
                                           const nlohmann::json& resource_field_ref);

// Standard base64 (RFC 4648, "=" padding optional, CR/LF ignored), as Secret `data` and ConfigMap
// `binaryData` values are encoded. InvalidArgument on any other character.
Result<std::string> DecodeBase64(std::string_view text);

// True for a name kube accepts as an environment variable name: [-._a-zA-Z][-._a-zA-Z0-9]*.
bool IsEnvVarName(std::string_view name);

}  // namespace sluice::node
