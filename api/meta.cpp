#include "api/meta.h"

#include <algorithm>
#include <ctime>

#include "api/json_convert.h"
#include "common/time_format.h"

namespace sluice::api {
using nlohmann::json;

json ToJson(const OwnerReference& ref) {
  json j = {
      {"apiVersion", ref.api_version}, {"kind", ref.kind}, {"name", ref.name}, {"uid", ref.uid}};
  if (ref.controller) j["controller"] = true;
  if (ref.block_owner_deletion) j["blockOwnerDeletion"] = true;
  return j;
}

json ToJson(const ObjectMeta& m) {
  json j = json::object();
  auto put = [&](const char* key, const std::string& v) {
    if (!v.empty()) j[key] = v;
  };
  put("name", m.name);
  put("generateName", m.generate_name);
  put("namespace", m.namespace_);
  put("uid", m.uid);
  put("resourceVersion", m.resource_version);
  if (m.generation != 0) j["generation"] = m.generation;
  put("creationTimestamp", m.creation_timestamp);
  put("deletionTimestamp", m.deletion_timestamp);
  if (!m.labels.empty()) j["labels"] = m.labels;
  if (!m.annotations.empty()) j["annotations"] = m.annotations;
  if (!m.owner_references.empty()) {
    json refs = json::array();
    for (const OwnerReference& r : m.owner_references) refs.push_back(ToJson(r));
    j["ownerReferences"] = std::move(refs);
  }
  if (!m.finalizers.empty()) j["finalizers"] = m.finalizers;
  return j;
}

json ToJson(const Condition& c) {
  json j = {{"type", c.type}, {"status", c.status}};
  if (!c.reason.empty()) j["reason"] = c.reason;
  if (!c.message.empty()) j["message"] = c.message;
  if (c.observed_generation != 0) j["observedGeneration"] = c.observed_generation;
  if (!c.last_transition_time.empty()) j["lastTransitionTime"] = c.last_transition_time;
  return j;
}

json ToJson(const std::vector<Condition>& conditions) {
  json out = json::array();
  for (const Condition& c : conditions) out.push_back(ToJson(c));
  return out;
}

Status FromJson(const json& j, std::string_view path, OwnerReference* out) {
  if (!j.is_object()) return convert::TypeError(path, "object");
  SLUICE_RETURN_IF_ERROR(ReadField(j, "apiVersion", path, &out->api_version));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "kind", path, &out->kind));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "name", path, &out->name));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "uid", path, &out->uid));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "controller", path, &out->controller));
  return ReadField(j, "blockOwnerDeletion", path, &out->block_owner_deletion);
}

Status FromJson(const json& j, std::string_view path, ObjectMeta* out) {
  if (j.is_null()) return Status::Ok();
  if (!j.is_object()) return convert::TypeError(path, "object");
  SLUICE_RETURN_IF_ERROR(ReadField(j, "name", path, &out->name));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "generateName", path, &out->generate_name));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "namespace", path, &out->namespace_));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "uid", path, &out->uid));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "resourceVersion", path, &out->resource_version));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "generation", path, &out->generation));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "creationTimestamp", path, &out->creation_timestamp));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "deletionTimestamp", path, &out->deletion_timestamp));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "labels", path, &out->labels));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "annotations", path, &out->annotations));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "ownerReferences", path, &out->owner_references));
  return ReadField(j, "finalizers", path, &out->finalizers);
}

Status FromJson(const json& j, std::string_view path, Condition* out) {
  if (!j.is_object()) return convert::TypeError(path, "object");
  SLUICE_RETURN_IF_ERROR(ReadField(j, "type", path, &out->type));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "status", path, &out->status));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "reason", path, &out->reason));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "message", path, &out->message));
  SLUICE_RETURN_IF_ERROR(ReadField(j, "observedGeneration", path, &out->observed_generation));
  return ReadField(j, "lastTransitionTime", path, &out->last_transition_time);
}

Result<ObjectMeta> ObjectMetaFromJson(const json& j) {
  ObjectMeta m;
  SLUICE_RETURN_IF_ERROR(FromJson(j, "metadata", &m));
  return m;
}

Result<Condition> ConditionFromJson(const json& j, std::string_view path) {
  Condition c;
  SLUICE_RETURN_IF_ERROR(FromJson(j, path, &c));
  return c;
}

Result<std::vector<Condition>> ConditionsFromJson(const json& j, std::string_view path) {
  std::vector<Condition> out;
  if (j.is_null()) return out;
  SLUICE_RETURN_IF_ERROR(FromJson(j, path, &out));
  return out;
}

std::vector<Condition> ConditionsOrEmpty(const json& j) {
  if (j.is_null()) return {};
  Result<std::vector<Condition>> conditions = ConditionsFromJson(j, "status.conditions");
  return conditions.ok() ? std::move(conditions).value() : std::vector<Condition>{};
}

const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type) {
  for (const Condition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool IsConditionTrue(const std::vector<Condition>& conditions, std::string_view type) {
  const Condition* c = FindCondition(conditions, type);
  return c != nullptr && c->status == "True";
}

bool SetCondition(std::vector<Condition>& conditions, Condition condition, Clock::WallTime now) {
  for (Condition& existing : conditions) {
    if (existing.type != condition.type) continue;
    condition.last_transition_time =
        existing.status == condition.status && !existing.last_transition_time.empty()
            ? existing.last_transition_time
            : FormatTime(now);
    if (existing == condition) return false;
    existing = std::move(condition);
    return true;
  }
  condition.last_transition_time = FormatTime(now);
  conditions.push_back(std::move(condition));
  return true;
}

bool RemoveCondition(std::vector<Condition>& conditions, std::string_view type) {
  const auto before = conditions.size();
  conditions.erase(std::remove_if(conditions.begin(), conditions.end(),
                                  [&](const Condition& c) { return c.type == type; }),
                   conditions.end());
  return conditions.size() != before;
}

}  // namespace sluice::api
