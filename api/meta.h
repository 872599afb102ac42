// Object metadata shared by every Sluice resource: ObjectMeta, OwnerReference and Condition
// (the metav1 shapes), with JSON round trips and the condition helpers reconcilers use.
//
// Fields follow the Kubernetes API exactly (names, types, omitted when empty), so objects read
// from any API server and written back compare equal. Timestamps are RFC 3339 strings in UTC,
// second precision, as the API server writes them.
//
// Thread safety: values.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace sluice::api {

inline constexpr std::string_view kGroup = "sluice.dev";
inline constexpr std::string_view kVersion = "v1alpha1";
inline constexpr std::string_view kApiVersion = "sluice.dev/v1alpha1";

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
  bool block_owner_deletion = false;

  friend bool operator==(const OwnerReference&, const OwnerReference&) = default;
};

struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::string creation_timestamp;  // RFC 3339; empty until the API server sets it.
  std::string deletion_timestamp;  // RFC 3339; set while finalizers hold a deleted object.
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<OwnerReference> owner_references;
  std::vector<std::string> finalizers;

  friend bool operator==(const ObjectMeta&, const ObjectMeta&) = default;
};

// metav1.Condition.
struct Condition {
  std::string type;    // CamelCase, e.g. "Ready", "Progressing", "Degraded".
  std::string status;  // "True", "False" or "Unknown".
  std::string reason;  // CamelCase machine-readable cause.
  std::string message;
  int64_t observed_generation = 0;
  std::string last_transition_time;  // RFC 3339.

  friend bool operator==(const Condition&, const Condition&) = default;
};

nlohmann::json ToJson(const OwnerReference& ref);
nlohmann::json ToJson(const ObjectMeta& meta);
nlohmann::json ToJson(const Condition& condition);
nlohmann::json ToJson(const std::vector<Condition>& conditions);

// Readers take JSON that passed schema validation; a field of the wrong type is an error that
// names its path. (The FromJson overloads let the generated types and json_convert.h's
// templates read these as members.)
Status FromJson(const nlohmann::json& j, std::string_view path, OwnerReference* out);
Status FromJson(const nlohmann::json& j, std::string_view path, ObjectMeta* out);
Status FromJson(const nlohmann::json& j, std::string_view path, Condition* out);
Result<ObjectMeta> ObjectMetaFromJson(const nlohmann::json& j);
Result<Condition> ConditionFromJson(const nlohmann::json& j, std::string_view path);
Result<std::vector<Condition>> ConditionsFromJson(const nlohmann::json& j, std::string_view path);
// An object's status.conditions as a controller reads them back: empty when `j` is null or not a
// valid list of conditions (the controller then sets them again).
std::vector<Condition> ConditionsOrEmpty(const nlohmann::json& j);

// The condition of `type`, or null.
const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type);
bool IsConditionTrue(const std::vector<Condition>& conditions, std::string_view type);

// Sets `condition` (matched by type) in `conditions`. lastTransitionTime becomes `now` only
// when the status changes (or the condition is new), as Kubernetes' meta.SetStatusCondition
// does; reason, message and observedGeneration are always updated. Returns whether anything
// changed, so callers write status only when it did.
bool SetCondition(std::vector<Condition>& conditions, Condition condition, Clock::WallTime now);

// Removes the condition of `type`; returns whether it was there.
bool RemoveCondition(std::vector<Condition>& conditions, std::string_view type);

}  // namespace sluice::api
