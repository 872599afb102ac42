#include "localcluster/apiserver/pod_security_checks.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_set>
#include <utility>

#include "common/go_quote.h"
#include "common/join_strings.h"
#include "common/json/fields.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;
using Strings = std::vector<std::string>;
using SortedSet = std::set<std::string>;  // Byte order, as Go's sets.String.List.

// ---- JSON access: missing, null and ill-typed fields all read as unset ----

bool IsTrue(const json& value) { return value.is_boolean() && value.get<bool>(); }
bool IsFalse(const json& value) { return value.is_boolean() && !value.get<bool>(); }

Strings StringItems(const json& list) {
  Strings out;
  if (!list.is_array()) return out;
  for (const json& item : list) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

// Kube's joinQuote: `"a", "b"`, with no escaping inside.
std::string JoinQuote(const Strings& items) {
  return items.empty() ? std::string() : "\"" + JoinStrings(items, "\", \"") + "\"";
}
std::string JoinQuote(const SortedSet& items) {
  return JoinQuote(Strings(items.begin(), items.end()));
}

const char* Pluralize(const char* singular, const char* plural, size_t count) {
  return count == 1 ? singular : plural;
}

// `container "a"` / `containers "a", "b"`.
std::string Containers(const Strings& names) {
  return std::string(Pluralize("container", "containers", names.size())) + " " + JoinQuote(names);
}

// ---- The pod as the checks see it ----

struct PodView {
  const json& metadata;
  const json& spec;
  std::vector<const json*> containers;  // initContainers, containers, ephemeralContainers.

  PodView(const json& m, const json& s) : metadata(m), spec(s) {
    for (const char* list : {"initContainers", "containers", "ephemeralContainers"}) {
      for (const json& c : ArrayValue(AnyField(spec, list))) containers.push_back(&c);
    }
  }
  const json& PodContext(const char* key) const {
    return AnyField(AnyField(spec, "securityContext"), key);
  }
  bool Windows() const { return StringAt(spec, "/os/name") == "windows"; }
};

std::string ContainerName(const json& container) { return StringField(container, "name"); }

const json& ContainerContext(const json& container, const char* key) {
  return AnyField(AnyField(container, "securityContext"), key);
}

using Failure = PodSecurityFailure;
using CheckResult = std::optional<Failure>;

// `pod and containers "a", "b"`: who set a forbidden value, for several checks.
std::string Setters(bool pod, const Strings& containers) {
  Strings setters;
  if (pod) setters.push_back("pod");
  if (!containers.empty()) setters.push_back(Containers(containers));
  return JoinStrings(setters, " and ");
}

// ---- Baseline checks (kube's policy package, v1.32) ----

bool AllowedAppArmorType(const std::string& type) {
  return type == "RuntimeDefault" || type == "Localhost";
}

bool AllowedAppArmorAnnotation(const std::string& value) {
  return value.empty() || value == "runtime/default" || value.starts_with("localhost/");
}

CheckResult AppArmorProfile(const PodView& pod) {
  SortedSet bad_values;
  const json& pod_profile = pod.PodContext("appArmorProfile");
  const std::string pod_type = StringField(pod_profile, "type");
  const bool bad_pod = !pod_profile.is_null() && !AllowedAppArmorType(pod_type);
  if (bad_pod) bad_values.insert(pod_type);
  Strings bad_containers;
  for (const json* c : pod.containers) {
    const json& profile = ContainerContext(*c, "appArmorProfile");
    if (profile.is_null() || AllowedAppArmorType(StringField(profile, "type"))) continue;
    bad_containers.push_back(ContainerName(*c));
    bad_values.insert(StringField(profile, "type"));
  }
  Strings bad_annotations;  // The deprecated per-container annotations.
  const json& annotations = AnyField(pod.metadata, "annotations");
  if (annotations.is_object()) {
    for (const auto& [key, value] : annotations.items()) {
      if (!key.starts_with("container.apparmor.security.beta.kubernetes.io/")) continue;
      if (!value.is_string() || AllowedAppArmorAnnotation(value.get<std::string>())) continue;
      bad_annotations.push_back(key + "=" + GoQuote(value.get<std::string>()));
    }
  }
  std::string setters = Setters(bad_pod, bad_containers);
  Strings values(bad_values.begin(), bad_values.end());
  if (!bad_annotations.empty()) {
    std::sort(bad_annotations.begin(), bad_annotations.end());
    values.insert(values.end(), bad_annotations.begin(), bad_annotations.end());
    if (!setters.empty()) setters += " and ";
    setters += Pluralize("annotation", "annotations", bad_annotations.size());
  }
  if (setters.empty()) return std::nullopt;
  return Failure{
      Pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", values.size()),
      setters + " must not set AppArmor profile type to " + JoinQuote(values)};
}

const std::unordered_set<std::string>& BaselineCapabilities() {
  static const std::unordered_set<std::string> kAllowed = {
      "AUDIT_WRITE",      "CHOWN",   "DAC_OVERRIDE", "FOWNER",  "FSETID", "KILL",      "MKNOD",
      "NET_BIND_SERVICE", "SETFCAP", "SETGID",       "SETPCAP", "SETUID", "SYS_CHROOT"};
  return kAllowed;
}

CheckResult CapabilitiesBaseline(const PodView& pod) {
  Strings bad_containers;
  SortedSet added;
  for (const json* c : pod.containers) {
    bool bad = false;
    for (const std::string& cap :
         StringItems(AnyField(ContainerContext(*c, "capabilities"), "add"))) {
      if (BaselineCapabilities().contains(cap)) continue;
      bad = true;
      added.insert(cap);
    }
    if (bad) bad_containers.push_back(ContainerName(*c));
  }
  if (bad_containers.empty()) return std::nullopt;
  return Failure{"non-default capabilities", Containers(bad_containers) + " must not include " +
                                                 JoinQuote(added) +
                                                 " in securityContext.capabilities.add"};
}

CheckResult HostNamespaces(const PodView& pod) {
  Strings shared;
  for (const char* field : {"hostNetwork", "hostPID", "hostIPC"}) {
    if (IsTrue(AnyField(pod.spec, field))) shared.push_back(std::string(field) + "=true");
  }
  if (shared.empty()) return std::nullopt;
  return Failure{"host namespaces", JoinStrings(shared, ", ")};
}

CheckResult HostPathVolumes(const PodView& pod) {
  Strings volumes;
  for (const json& v : ArrayValue(AnyField(pod.spec, "volumes"))) {
    if (!AnyField(v, "hostPath").is_null()) volumes.push_back(StringField(v, "name"));
  }
  if (volumes.empty()) return std::nullopt;
  return Failure{"hostPath volumes", std::string(Pluralize("volume", "volumes", volumes.size())) +
                                         " " + JoinQuote(volumes)};
}

CheckResult HostPorts(const PodView& pod) {
  Strings bad_containers;
  SortedSet ports;  // Sorted as strings, as kube's are.
  for (const json* c : pod.containers) {
    bool bad = false;
    for (const json& port : ArrayValue(AnyField(*c, "ports"))) {
      const json& host_port = AnyField(port, "hostPort");
      if (!host_port.is_number_integer() || host_port.get<int64_t>() == 0) continue;
      bad = true;
      ports.insert(std::to_string(host_port.get<int64_t>()));
    }
    if (bad) bad_containers.push_back(ContainerName(*c));
  }
  if (bad_containers.empty()) return std::nullopt;
  return Failure{"hostPort", Containers(bad_containers) + " " +
                                 Pluralize("uses", "use", bad_containers.size()) + " " +
                                 Pluralize("hostPort", "hostPorts", ports.size()) + " " +
                                 JoinStrings(Strings(ports.begin(), ports.end()), ", ")};
}

CheckResult Privileged(const PodView& pod) {
  Strings bad_containers;
  for (const json* c : pod.containers) {
    if (IsTrue(ContainerContext(*c, "privileged"))) bad_containers.push_back(ContainerName(*c));
  }
  if (bad_containers.empty()) return std::nullopt;
  return Failure{"privileged",
                 Containers(bad_containers) + " must not set securityContext.privileged=true"};
}

CheckResult ProcMount(const PodView& pod) {
  Strings bad_containers;
  SortedSet types;
  for (const json* c : pod.containers) {
    const json& proc_mount = ContainerContext(*c, "procMount");
    if (proc_mount.is_null() || StringValue(proc_mount) == "Default") continue;
    bad_containers.push_back(ContainerName(*c));
    types.insert(StringValue(proc_mount));
  }
  if (bad_containers.empty()) return std::nullopt;
  return Failure{"procMount", Containers(bad_containers) +
                                  " must not set securityContext.procMount to " + JoinQuote(types)};
}

CheckResult SeLinuxOptions(const PodView& pod) {
  // container_engine_t is allowed from v1.31.
  static const std::unordered_set<std::string> kAllowedTypes = {
      "", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"};
  SortedSet bad_types;
  bool set_user = false;
  bool set_role = false;
  auto valid = [&](const json& options) {
    bool ok = true;
    const std::string type = StringField(options, "type");
    if (!kAllowedTypes.contains(type)) {
      ok = false;
      bad_types.insert(type);
    }
    if (!StringField(options, "user").empty()) {
      ok = false;
      set_user = true;
    }
    if (!StringField(options, "role").empty()) {
      ok = false;
      set_role = true;
    }
    return ok;
  };
  const json& pod_options = pod.PodContext("seLinuxOptions");
  const bool bad_pod = !pod_options.is_null() && !valid(pod_options);
  Strings bad_containers;
  for (const json* c : pod.containers) {
    const json& options = ContainerContext(*c, "seLinuxOptions");
    if (!options.is_null() && !valid(options)) bad_containers.push_back(ContainerName(*c));
  }
  if (!bad_pod && bad_containers.empty()) return std::nullopt;
  Strings bad_data;
  if (!bad_types.empty()) {
    bad_data.push_back(std::string(Pluralize("type", "types", bad_types.size())) + " " +
                       JoinQuote(bad_types));
  }
  if (set_user) bad_data.push_back("user may not be set");
  if (set_role) bad_data.push_back("role may not be set");
  return Failure{"seLinuxOptions", Setters(bad_pod, bad_containers) +
                                       " set forbidden securityContext.seLinuxOptions: " +
                                       JoinStrings(bad_data, "; ")};
}

bool ValidSeccompType(const std::string& type) {
  return type == "RuntimeDefault" || type == "Localhost";
}

// Both seccomp checks: `require` (restricted) also fails pods where some container has no
// allowed profile from itself or the pod.
CheckResult SeccompProfile(const PodView& pod, bool require) {
  SortedSet bad_values;
  const json& pod_profile = pod.PodContext("seccompProfile");
  const std::string pod_type = StringField(pod_profile, "type");
  const bool bad_pod = !pod_profile.is_null() && !ValidSeccompType(pod_type);
  if (bad_pod) bad_values.insert(pod_type);
  const bool pod_set = !pod_profile.is_null() && !bad_pod;
  Strings explicitly_bad;
  Strings implicitly_bad;
  for (const json* c : pod.containers) {
    const json& profile = ContainerContext(*c, "seccompProfile");
    if (profile.is_null()) {
      if (!pod_set) implicitly_bad.push_back(ContainerName(*c));
    } else if (!ValidSeccompType(StringField(profile, "type"))) {
      explicitly_bad.push_back(ContainerName(*c));
      bad_values.insert(StringField(profile, "type"));
    }
  }
  if (bad_pod || !explicitly_bad.empty()) {
    return Failure{"seccompProfile", Setters(bad_pod, explicitly_bad) +
                                         " must not set securityContext.seccompProfile.type to " +
                                         JoinQuote(bad_values)};
  }
  if (require && !implicitly_bad.empty()) {
    return Failure{"seccompProfile", "pod or " + Containers(implicitly_bad) +
                                         " must set securityContext.seccompProfile.type to "
                                         "\"RuntimeDefault\" or \"Localhost\""};
  }
  return std::nullopt;
}

CheckResult SeccompProfileBaseline(const PodView& pod) { return SeccompProfile(pod, false); }

CheckResult Sysctls(const PodView& pod) {
  // The safe set as of v1.32.
  static const std::unordered_set<std::string> kAllowed = {"kernel.shm_rmid_forced",
                                                           "net.ipv4.ip_local_port_range",
                                                           "net.ipv4.tcp_syncookies",
                                                           "net.ipv4.ping_group_range",
                                                           "net.ipv4.ip_unprivileged_port_start",
                                                           "net.ipv4.ip_local_reserved_ports",
                                                           "net.ipv4.tcp_keepalive_time",
                                                           "net.ipv4.tcp_fin_timeout",
                                                           "net.ipv4.tcp_keepalive_intvl",
                                                           "net.ipv4.tcp_keepalive_probes",
                                                           "net.ipv4.tcp_rmem",
                                                           "net.ipv4.tcp_wmem"};
  Strings forbidden;  // In pod order, repeats kept, as kube lists them.
  for (const json& sysctl : ArrayValue(pod.PodContext("sysctls"))) {
    const std::string name = StringField(sysctl, "name");
    if (!kAllowed.contains(name)) forbidden.push_back(name);
  }
  if (forbidden.empty()) return std::nullopt;
  return Failure{"forbidden sysctls", JoinStrings(forbidden, ", ")};
}

CheckResult WindowsHostProcess(const PodView& pod) {
  Strings bad_containers;
  for (const json* c : pod.containers) {
    if (IsTrue(AnyField(ContainerContext(*c, "windowsOptions"), "hostProcess"))) {
      bad_containers.push_back(ContainerName(*c));
    }
  }
  const bool bad_pod = IsTrue(AnyField(pod.PodContext("windowsOptions"), "hostProcess"));
  if (!bad_pod && bad_containers.empty()) return std::nullopt;
  return Failure{"hostProcess",
                 Setters(bad_pod, bad_containers) +
                     " must not set securityContext.windowsOptions.hostProcess=true"};
}

// ---- Restricted checks ----

CheckResult AllowPrivilegeEscalation(const PodView& pod) {
  // Windows pods cannot set the field (API validation), so they are exempt from v1.25.
  if (pod.Windows()) return std::nullopt;
  Strings bad_containers;
  for (const json* c : pod.containers) {
    if (!IsFalse(ContainerContext(*c, "allowPrivilegeEscalation"))) {
      bad_containers.push_back(ContainerName(*c));
    }
  }
  if (bad_containers.empty()) return std::nullopt;
  return Failure{
      "allowPrivilegeEscalation != false",
      Containers(bad_containers) + " must set securityContext.allowPrivilegeEscalation=false"};
}

CheckResult CapabilitiesRestricted(const PodView& pod) {
  if (pod.Windows()) return std::nullopt;  // As allowPrivilegeEscalation.
  Strings missing_drop_all;
  Strings adding_forbidden;
  SortedSet forbidden;
  for (const json* c : pod.containers) {
    const json& capabilities = ContainerContext(*c, "capabilities");
    if (capabilities.is_null()) {
      missing_drop_all.push_back(ContainerName(*c));
      continue;
    }
    const Strings drop = StringItems(AnyField(capabilities, "drop"));
    if (std::find(drop.begin(), drop.end(), "ALL") == drop.end()) {
      missing_drop_all.push_back(ContainerName(*c));
    }
    bool bad = false;
    for (const std::string& cap : StringItems(AnyField(capabilities, "add"))) {
      if (cap == "NET_BIND_SERVICE") continue;
      bad = true;
      forbidden.insert(cap);
    }
    if (bad) adding_forbidden.push_back(ContainerName(*c));
  }
  Strings details;
  if (!missing_drop_all.empty()) {
    details.push_back(Containers(missing_drop_all) +
                      " must set securityContext.capabilities.drop=[\"ALL\"]");
  }
  if (!adding_forbidden.empty()) {
    details.push_back(Containers(adding_forbidden) + " must not include " + JoinQuote(forbidden) +
                      " in securityContext.capabilities.add");
  }
  if (details.empty()) return std::nullopt;
  return Failure{"unrestricted capabilities", JoinStrings(details, "; ")};
}

CheckResult RestrictedVolumes(const PodView& pod) {
  static const char* const kAllowed[] = {"configMap", "csi",       "downwardAPI",
                                         "emptyDir",  "ephemeral", "persistentVolumeClaim",
                                         "projected", "secret"};
  // Kube's order of precedence when naming a volume's type; anything else (including v1.32's
  // alpha image volumes) is "unknown".
  static const char* const kRestricted[] = {"hostPath",
                                            "gcePersistentDisk",
                                            "awsElasticBlockStore",
                                            "gitRepo",
                                            "nfs",
                                            "iscsi",
                                            "glusterfs",
                                            "rbd",
                                            "flexVolume",
                                            "cinder",
                                            "cephfs",
                                            "flocker",
                                            "fc",
                                            "azureFile",
                                            "vsphereVolume",
                                            "quobyte",
                                            "azureDisk",
                                            "photonPersistentDisk",
                                            "portworxVolume",
                                            "scaleIO",
                                            "storageos"};
  Strings bad_volumes;
  SortedSet types;
  for (const json& v : ArrayValue(AnyField(pod.spec, "volumes"))) {
    const bool allowed = std::any_of(std::begin(kAllowed), std::end(kAllowed),
                                     [&](const char* key) { return !AnyField(v, key).is_null(); });
    if (allowed) continue;
    bad_volumes.push_back(StringField(v, "name"));
    const char* const* type =
        std::find_if(std::begin(kRestricted), std::end(kRestricted),
                     [&](const char* key) { return !AnyField(v, key).is_null(); });
    types.insert(type == std::end(kRestricted) ? "unknown" : *type);
  }
  if (bad_volumes.empty()) return std::nullopt;
  return Failure{"restricted volume types",
                 std::string(Pluralize("volume", "volumes", bad_volumes.size())) + " " +
                     JoinQuote(bad_volumes) + " " + Pluralize("uses", "use", bad_volumes.size()) +
                     " " +
                     Pluralize("restricted volume type", "restricted volume types", types.size()) +
                     " " + JoinQuote(types)};
}

CheckResult RunAsNonRoot(const PodView& pod) {
  const json& pod_value = pod.PodContext("runAsNonRoot");
  const bool bad_pod = IsFalse(pod_value);
  const bool pod_non_root = IsTrue(pod_value);
  Strings explicitly_bad;
  Strings implicitly_bad;
  for (const json* c : pod.containers) {
    const json& value = ContainerContext(*c, "runAsNonRoot");
    if (value.is_boolean()) {
      if (!value.get<bool>()) explicitly_bad.push_back(ContainerName(*c));
    } else if (!pod_non_root) {
      implicitly_bad.push_back(ContainerName(*c));
    }
  }
  if (bad_pod || !explicitly_bad.empty()) {
    return Failure{"runAsNonRoot != true", Setters(bad_pod, explicitly_bad) +
                                               " must not set securityContext.runAsNonRoot=false"};
  }
  if (!implicitly_bad.empty()) {
    return Failure{"runAsNonRoot != true", "pod or " + Containers(implicitly_bad) +
                                               " must set securityContext.runAsNonRoot=true"};
  }
  return std::nullopt;
}

bool IsZero(const json& value) { return value.is_number() && value.get<double>() == 0; }

CheckResult RunAsUser(const PodView& pod) {
  const bool bad_pod = IsZero(pod.PodContext("runAsUser"));
  Strings bad_containers;
  for (const json* c : pod.containers) {
    if (IsZero(ContainerContext(*c, "runAsUser"))) bad_containers.push_back(ContainerName(*c));
  }
  if (!bad_pod && bad_containers.empty()) return std::nullopt;
  return Failure{"runAsUser=0", Setters(bad_pod, bad_containers) + " must not set runAsUser=0"};
}

CheckResult SeccompProfileRestricted(const PodView& pod) {
  if (pod.Windows()) return std::nullopt;  // As allowPrivilegeEscalation.
  return SeccompProfile(pod, true);
}

// ---- The policy ----

using CheckFn = CheckResult (*)(const PodView&);

// Kube runs baseline checks, then restricted ones, each sorted by check id. Restricted
// replaces capabilities_baseline, hostPathVolumes and seccompProfile_baseline with its own.
struct Check {
  CheckFn fn;
  bool baseline;    // Part of baseline (and so of restricted unless replaced).
  bool restricted;  // Part of restricted.
};

constexpr Check kChecks[] = {
    {AppArmorProfile, true, true},            // appArmorProfile
    {CapabilitiesBaseline, true, false},      // capabilities_baseline
    {HostNamespaces, true, true},             // hostNamespaces
    {HostPathVolumes, true, false},           // hostPathVolumes
    {HostPorts, true, true},                  // hostPorts
    {Privileged, true, true},                 // privileged
    {ProcMount, true, true},                  // procMount
    {SeLinuxOptions, true, true},             // seLinuxOptions
    {SeccompProfileBaseline, true, false},    // seccompProfile_baseline
    {Sysctls, true, true},                    // sysctls
    {WindowsHostProcess, true, true},         // windowsHostProcess
    {AllowPrivilegeEscalation, false, true},  // allowPrivilegeEscalation
    {CapabilitiesRestricted, false, true},    // capabilities_restricted
    {RestrictedVolumes, false, true},         // restrictedVolumes
    {RunAsNonRoot, false, true},              // runAsNonRoot
    {RunAsUser, false, true},                 // runAsUser
    {SeccompProfileRestricted, false, true},  // seccompProfile_restricted
};

}  // namespace

std::vector<PodSecurityFailure> EvaluatePodSecurity(const json& pod_metadata, const json& pod_spec,
                                                    PodSecurityLevel level) {
  std::vector<PodSecurityFailure> failures;
  if (level == PodSecurityLevel::kPrivileged) return failures;
  const PodView pod(pod_metadata, pod_spec);
  for (const Check& check : kChecks) {
    if (!(level == PodSecurityLevel::kRestricted ? check.restricted : check.baseline)) continue;
    if (CheckResult result = check.fn(pod)) failures.push_back(std::move(*result));
  }
  return failures;
}

}  // namespace sluice::apiserver
