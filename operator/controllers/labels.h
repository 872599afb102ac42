// The labels every object the operator creates carries, and the selectors built from them.
//
// Kubernetes' recommended labels (app.kubernetes.io/*) say what an object is and who manages it;
// sluice.dev/* labels say which Sluice object it serves. The operator's informers for Pods,
// Services, ConfigMaps, Secrets and PVCs select managed-by=sluice-operator, so its caches hold
// its own objects only.
//
// Thread safety: pure functions.
#pragma once

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

// app.kubernetes.io/{name,instance,component,part-of,managed-by} plus `extra`.
// `name` is the program ("sluice-dataflow"), `instance` the owning object's name, `component`
// its role ("dataflow", "rollout", "trainer").
nlohmann::json StandardLabels(const std::string& name, const std::string& instance,
                              const std::string& component,
                              const std::map<std::string, std::string>& extra = {});

// The ownerReferences entry naming `owner` (apiVersion, kind, metadata.name/uid) as controller.
nlohmann::json ControllerRef(const nlohmann::json& owner);

// A short, stable hash of `value` (FNV-1a 64, hex, 10 characters) for template-hash labels and
// config-hash annotations: equal JSON gives equal hashes.
std::string JsonHash(const nlohmann::json& value);

}  // namespace sluice::controllers
