// The labels every object the operator creates carries, the selectors built from them, and the
// names of those objects.
//
// Kubernetes' recommended labels (app.kubernetes.io/*) say what an object is and who manages it;
// sluice.dev/* labels say which Sluice object it serves. The operator's informers for Pods,
// Services, ConfigMaps, Secrets and PVCs select managed-by=sluice-operator, so its caches hold
// its own objects only.
//
// Length limits: a label value holds at most 63 characters and a Service name or Pod hostname is
// a DNS label (63), while a Sluice object's name may have 253. Every label value the operator
// sets goes through LabelValue, and every selector or lookup that matches those labels must pass
// the name through LabelValue too; child names go through DnsLabelName or SubdomainName. All
// three keep short valid input unchanged and give long input a truncated prefix plus a hash of
// the whole input (as Knative's kmeta.ChildName does), so distinct parents keep distinct labels
// and names.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace sluice::controllers {

inline constexpr char kManagedByLabel[] = "app.kubernetes.io/managed-by";
inline constexpr char kManagedBy[] = "sluice-operator";
inline constexpr char kNameLabel[] = "app.kubernetes.io/name";
inline constexpr char kInstanceLabel[] = "app.kubernetes.io/instance";
inline constexpr char kComponentLabel[] = "app.kubernetes.io/component";
inline constexpr char kPartOfLabel[] = "app.kubernetes.io/part-of";
inline constexpr char kDataflowLabel[] = "sluice.dev/dataflow";
inline constexpr char kPolicyLabel[] = "sluice.dev/policy";
inline constexpr char kPoolLabel[] = "sluice.dev/pool";
inline constexpr char kRegionLabel[] = "sluice.dev/region";
inline constexpr char kReplicaIndexLabel[] = "sluice.dev/replica-index";
inline constexpr char kRankLabel[] = "sluice.dev/rank";
inline constexpr char kTemplateHashLabel[] = "sluice.dev/template-hash";
inline constexpr char kAttemptLabel[] = "sluice.dev/attempt";
// The label selector of the operator's informers.
inline constexpr char kManagedSelector[] = "app.kubernetes.io/managed-by=sluice-operator";

// The longest label value, DNS label (Service name, hostname) and DNS subdomain (most object
// names) Kubernetes accepts, in characters.
inline constexpr size_t kMaxLabelValueLength = 63;
inline constexpr size_t kMaxDnsLabelLength = 63;
inline constexpr size_t kMaxDnsSubdomainLength = 253;

// `value` as a valid label value: `value` itself when it already is one (empty, or at most 63
// characters of [A-Za-z0-9-_.] starting and ending with an alphanumeric); otherwise its first
// characters with those outside [A-Za-z0-9-_.] replaced by '-' and the leading and trailing
// non-alphanumerics dropped, then "-" and the 10-hex JsonHash of `value`: at most 63 characters,
// ending in an alphanumeric, equal for equal input and (up to hash collisions) distinct for
// distinct input. Selectors must use it wherever the labels did.
std::string LabelValue(const std::string& value);

// "<base><suffix>" as a DNS label (a Service name, a Pod hostname): unchanged when `base` is
// already [a-z0-9-] and the whole fits in 63 characters; otherwise "<base cut>-<10-hex JsonHash of
// base><suffix>", where the cut part is lower-cased with characters outside [a-z0-9-] replaced by
// '-' and loses leading and trailing '-' (the hash alone when nothing is left). `suffix` ("-0",
// "-rollout-config") is kept whole and must itself be [a-z0-9-], at most 40 characters.
std::string DnsLabelName(const std::string& base, const std::string& suffix = "");

// "<base><suffix>" as an object name (DNS subdomain) of at most 253 characters: unchanged when
// it fits; otherwise "<base cut>-<10-hex JsonHash of base><suffix>", the cut losing trailing '-'
// and '.'. `base` is a Kubernetes object name; `suffix` is kept whole.
std::string SubdomainName(const std::string& base, const std::string& suffix);

// app.kubernetes.io/{name,instance,component,part-of,managed-by} plus `extra`, every value passed
// through LabelValue. `name` is the program ("sluice-dataflow"), `instance` the owning object's
// name, `component` its role ("dataflow", "rollout", "trainer").
nlohmann::json StandardLabels(const std::string& name, const std::string& instance,
                              const std::string& component,
                              const std::map<std::string, std::string>& extra = {});

// The ownerReferences entry naming `owner` (apiVersion, kind, metadata.name/uid) as controller.
nlohmann::json ControllerRef(const nlohmann::json& owner);

// A short, stable hash of `value` (FNV-1a 64, hex, 10 characters) for template-hash labels and
// config-hash annotations: equal JSON gives equal hashes.
std::string JsonHash(const nlohmann::json& value);

}  // namespace sluice::controllers
