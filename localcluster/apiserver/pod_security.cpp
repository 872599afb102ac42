#include "localcluster/apiserver/pod_security.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

#include "common/go_quote.h"
#include "common/join_strings.h"
#include "common/json/fields.h"
#include "localcluster/apiserver/pod_security_checks.h"

namespace sluice::apiserver {
namespace {

using nlohmann::json;
using Strings = std::vector<std::string>;

std::string NameOf(const json& object) { return StringField(object, "name"); }

std::string LevelVersion(PodSecurityLevel level, const std::string& version) {
  return PodSecurityLevelName(level) + ":" + version;
}

// ---- Namespace labels ----

std::optional<PodSecurityLevel> ParseLevel(const std::string& value) {
  if (value == "privileged") return PodSecurityLevel::kPrivileged;
  if (value == "baseline") return PodSecurityLevel::kBaseline;
  if (value == "restricted") return PodSecurityLevel::kRestricted;
  return std::nullopt;
}

// "latest", or "v1." and a minor without leading zeros.
bool ValidVersion(const std::string& value) {
  if (value == "latest") return true;
  if (!value.starts_with("v1.") || value.size() == 3) return false;
  const std::string_view minor = std::string_view(value).substr(3);
  if (minor.size() > 1 && minor[0] == '0') return false;
  if (!std::all_of(minor.begin(), minor.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  int64_t number = 0;  // Kube's Atoi fails on minors beyond 64 bits.
  return std::from_chars(minor.data(), minor.data() + minor.size(), number).ec == std::errc();
}

openapi::FieldError InvalidLabel(const char* label, const std::string& value,
                                 const std::string& detail) {
  return {openapi::KeyPath("metadata.labels", label),
          "Invalid value: " + GoQuote(value) + ": " + detail};
}

// A label's value; nullopt when absent or not a string.
std::optional<std::string> Label(const json& labels, const char* key) {
  const json& value = AnyField(labels, key);
  if (!value.is_string()) return std::nullopt;
  return value.get<std::string>();
}

// Reads one mode's level label into `level` (`fallback` when invalid): nullopt when the label is
// absent, else whether it is valid.
std::optional<bool> ReadLevel(const json& labels, const char* key, PodSecurityLevel fallback,
                              PodSecurityLevel& level, openapi::FieldErrors& errors) {
  const std::optional<std::string> value = Label(labels, key);
  if (!value) return std::nullopt;
  if (std::optional<PodSecurityLevel> parsed = ParseLevel(*value)) {
    level = *parsed;
    return true;
  }
  level = fallback;
  errors.push_back(InvalidLabel(key, *value, "must be one of privileged, baseline, restricted"));
  return false;
}

// As ReadLevel, for a version label; returns whether the label is present.
bool ReadVersion(const json& labels, const char* key, std::string& version,
                 openapi::FieldErrors& errors) {
  const std::optional<std::string> value = Label(labels, key);
  if (!value) return false;
  if (ValidVersion(*value)) {
    version = *value;
  } else {
    version = "latest";
    errors.push_back(InvalidLabel(key, *value, "must be \"latest\" or \"v1.x\""));
  }
  return true;
}

// Go's %v of an errors aggregate: one message, or "[a, b]" without repeats.
std::string Aggregate(const openapi::FieldErrors& errors) {
  Strings messages;
  for (const openapi::FieldError& e : errors) {
    std::string line = e.field.empty() ? e.message : e.field + ": " + e.message;
    if (std::find(messages.begin(), messages.end(), line) == messages.end()) {
      messages.push_back(std::move(line));
    }
  }
  if (messages.size() == 1) return messages.front();
  return "[" + JoinStrings(messages, ", ") + "]";
}

bool HasController(const json& pod, std::string& uid) {
  for (const json& owner : ArrayValue(AnyAt(pod, "/metadata/ownerReferences"))) {
    if (AnyField(owner, "controller") == true) {
      uid = StringField(owner, "uid");
      return true;
    }
  }
  return false;
}

}  // namespace

std::string PodSecurityLevelName(PodSecurityLevel level) {
  switch (level) {
    case PodSecurityLevel::kPrivileged:
      return "privileged";
    case PodSecurityLevel::kBaseline:
      return "baseline";
    case PodSecurityLevel::kRestricted:
      return "restricted";
  }
  return "privileged";
}

NamespacePodSecurityLabels ReadNamespacePodSecurity(const json& namespace_object) {
  NamespacePodSecurityLabels out;
  NamespacePodSecurity& p = out.policy;
  const json& labels = AnyAt(namespace_object, "/metadata/labels");
  // Kube fails closed for enforce and open for audit and warn.
  const std::optional<bool> enforce = ReadLevel(
      labels, kPodSecurityEnforceLabel, PodSecurityLevel::kRestricted, p.enforce, out.errors);
  ReadVersion(labels, kPodSecurityEnforceVersionLabel, p.enforce_version, out.errors);
  ReadLevel(labels, kPodSecurityAuditLabel, PodSecurityLevel::kPrivileged, p.audit, out.errors);
  ReadVersion(labels, kPodSecurityAuditVersionLabel, p.audit_version, out.errors);
  const bool has_warn =
      ReadLevel(labels, kPodSecurityWarnLabel, PodSecurityLevel::kPrivileged, p.warn, out.errors)
          .has_value();
  const bool has_warn_version =
      ReadVersion(labels, kPodSecurityWarnVersionLabel, p.warn_version, out.errors);
  if (!has_warn && enforce == true && p.enforce > p.warn) {
    p.warn = p.enforce;
    if (!has_warn_version) p.warn_version = p.enforce_version;
  }
  return out;
}

Result<NamespacePodSecurity> PodSecurityOfNamespace(const json& namespace_object) {
  NamespacePodSecurityLabels read = ReadNamespacePodSecurity(namespace_object);
  if (read.errors.empty()) return std::move(read.policy);
  const std::string name = StringAt(namespace_object, "/metadata/name");
  return Status::Unprocessable(
      "Namespace " + GoQuote(name) + " is invalid: " + Aggregate(read.errors),
      read.errors.front().field);
}

openapi::FieldErrors NamespacePodSecurityLabelErrors(const json& namespace_object,
                                                     const json* old_namespace) {
  openapi::FieldErrors errors = ReadNamespacePodSecurity(namespace_object).errors;
  if (errors.empty() || old_namespace == nullptr) return errors;
  if (ReadNamespacePodSecurity(*old_namespace).errors == errors) return {};
  return errors;
}

std::vector<std::string> PodSecurityViolations(const json& pod_metadata, const json& pod_spec,
                                               PodSecurityLevel level) {
  std::vector<std::string> out;
  for (PodSecurityFailure& f : EvaluatePodSecurity(pod_metadata, pod_spec, level)) {
    out.push_back(f.detail.empty() ? std::move(f.reason) : f.reason + " (" + f.detail + ")");
  }
  return out;
}

std::string PodSecurityForbiddenMessage(const std::string& pod_name, PodSecurityLevel level,
                                        const std::string& version,
                                        const std::vector<std::string>& violations) {
  const std::string subject = pod_name.empty() ? "pods" : "pods " + GoQuote(pod_name);
  return subject + " is forbidden: violates PodSecurity " + GoQuote(LevelVersion(level, version)) +
         ": " + JoinStrings(violations, ", ");
}

std::string PodSecurityWarning(PodSecurityLevel level, const std::string& version,
                               const std::vector<std::string>& violations) {
  return "would violate PodSecurity " + GoQuote(LevelVersion(level, version)) + ": " +
         JoinStrings(violations, ", ");
}

PodSecurityDecision AdmitPodSecurity(const NamespacePodSecurity& policy, const json& pod) {
  PodSecurityDecision decision;
  const json& metadata = AnyField(pod, "metadata");
  const json& spec = AnyField(pod, "spec");
  const Strings enforce = PodSecurityViolations(metadata, spec, policy.enforce);
  if (!enforce.empty()) {
    decision.status = Status::PermissionDenied(PodSecurityForbiddenMessage(
        StringField(metadata, "name"), policy.enforce, policy.enforce_version, enforce));
    return decision;
  }
  const Strings warn = PodSecurityViolations(metadata, spec, policy.warn);
  if (!warn.empty()) {
    decision.warnings.push_back(PodSecurityWarning(policy.warn, policy.warn_version, warn));
  }
  return decision;
}

bool PodSecurityIgnoresSubresource(const std::string& subresource) {
  static const std::unordered_set<std::string> kIgnored = {
      "exec", "attach", "binding", "eviction", "log", "portforward", "proxy", "status"};
  return kIgnored.contains(subresource);
}

bool PodSecurityUpdateMatters(const json& pod, const json& old_pod) {
  for (const char* list : {"containers", "initContainers"}) {
    const json& now = ArrayValue(AnyField(AnyField(pod, "spec"), list));
    const json& before = ArrayValue(AnyField(AnyField(old_pod, "spec"), list));
    if (now.size() != before.size()) return true;
    for (size_t i = 0; i < now.size(); ++i) {
      if (AnyField(now[i], "image") != AnyField(before[i], "image")) return true;
    }
  }
  const json& old_ephemeral = ArrayValue(AnyAt(old_pod, "/spec/ephemeralContainers"));
  for (const json& c : ArrayValue(AnyAt(pod, "/spec/ephemeralContainers"))) {
    auto old = std::find_if(old_ephemeral.begin(), old_ephemeral.end(),
                            [&](const json& o) { return NameOf(o) == NameOf(c); });
    if (old == old_ephemeral.end() || AnyField(c, "image") != AnyField(*old, "image")) return true;
  }
  return false;
}

const json* PodTemplateSpecOf(const std::string& group, const std::string& resource,
                              const json& object) {
  const json* template_spec = nullptr;
  if ((group == "apps" && (resource == "deployments" || resource == "replicasets" ||
                           resource == "statefulsets" || resource == "daemonsets")) ||
      (group == "batch" && resource == "jobs") ||
      (group.empty() && resource == "replicationcontrollers")) {
    template_spec = &AnyAt(object, "/spec/template");
  } else if (group == "batch" && resource == "cronjobs") {
    template_spec = &AnyAt(object, "/spec/jobTemplate/spec/template");
  } else if (group.empty() && resource == "podtemplates") {
    template_spec = &AnyField(object, "template");
  }
  return template_spec != nullptr && template_spec->is_object() ? template_spec : nullptr;
}

std::vector<std::string> WorkloadPodSecurityWarnings(const NamespacePodSecurity& policy,
                                                     const std::string& group,
                                                     const std::string& resource,
                                                     const json& object) {
  const json* template_spec = PodTemplateSpecOf(group, resource, object);
  if (template_spec == nullptr) return {};
  const Strings warn = PodSecurityViolations(AnyField(*template_spec, "metadata"),
                                             AnyField(*template_spec, "spec"), policy.warn);
  if (warn.empty()) return {};
  return {PodSecurityWarning(policy.warn, policy.warn_version, warn)};
}

std::vector<std::string> NamespaceEnforceWarnings(const std::string& namespace_name,
                                                  const NamespacePodSecurity& old_policy,
                                                  const NamespacePodSecurity& new_policy,
                                                  const std::vector<json>& pods) {
  const PodSecurityLevel level = new_policy.enforce;
  const std::string& version = new_policy.enforce_version;
  if (level == old_policy.enforce && version == old_policy.enforce_version) return {};
  if (level == PodSecurityLevel::kPrivileged) return {};
  if (version == old_policy.enforce_version && level <= old_policy.enforce) return {};

  // Kube's order: pods without a controller and the first pod of each controller, then the
  // other pods of controllers already seen, so the cap drops replicas first.
  constexpr size_t kMaxPods = 3000;
  std::vector<const json*> ordered;
  std::vector<const json*> replicas;
  std::set<std::string> controllers;
  for (const json& pod : pods) {
    std::string uid;
    if (HasController(pod, uid) && !controllers.insert(uid).second) {
      replicas.push_back(&pod);
    } else {
      ordered.push_back(&pod);
    }
  }
  ordered.insert(ordered.end(), replicas.begin(), replicas.end());
  const size_t total = ordered.size();
  if (ordered.size() > kMaxPods) ordered.resize(kMaxPods);

  struct Seen {
    std::string pod;  // The smallest name among the pods with these reasons.
    size_t count = 0;
  };
  std::map<std::string, Seen> by_reasons;
  for (const json* pod : ordered) {
    Strings reasons;
    for (const PodSecurityFailure& f :
         EvaluatePodSecurity(AnyField(*pod, "metadata"), AnyField(*pod, "spec"), level)) {
      reasons.push_back(f.reason);
    }
    if (reasons.empty()) continue;
    const std::string name = StringAt(*pod, "/metadata/name");
    auto [it, added] = by_reasons.try_emplace(JoinStrings(reasons, ", "), Seen{name, 0});
    if (!added && name < it->second.pod) it->second.pod = name;
    ++it->second.count;
  }

  Strings warnings;
  if (ordered.size() < total) {
    warnings.push_back("new PodSecurity enforce level only checked against the first " +
                       std::to_string(ordered.size()) + " of " + std::to_string(total) +
                       " existing pods");
  }
  if (by_reasons.empty()) return warnings;
  warnings.push_back("existing pods in namespace " + GoQuote(namespace_name) +
                     " violate the new PodSecurity enforce level " +
                     GoQuote(LevelVersion(level, version)));
  Strings lines;
  for (const auto& [reasons, seen] : by_reasons) {
    std::string who = seen.pod;
    if (seen.count == 2) who += " (and 1 other pod)";
    if (seen.count > 2) who += " (and " + std::to_string(seen.count - 1) + " other pods)";
    lines.push_back(who + ": " + reasons);
  }
  std::sort(lines.begin(), lines.end());
  warnings.insert(warnings.end(), lines.begin(), lines.end());
  return warnings;
}

}  // namespace sluice::apiserver