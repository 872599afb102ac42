#include "operator/api/meta.h"

#include <algorithm>
#include <ctime>

namespace sluice::api {
namespace {

using nlohmann::json;

Status WrongType(std::string_view path, const char* expected) {
  return Status::InvalidArgument(std::string("must be of type ") + expected, std::string(path));
}

std::string Join(std::string_view a, std::string_view b) {
  return a.empty() ? std::string(b) : std::string(a) + "." + std::string(b);
}

Status ReadString(const json& j, const char* key, std::string_view path, std::string* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) return WrongType(Join(path, key), "string");
  *out = it->get<std::string>();
  return Status::Ok();
}

Status ReadInt(const json& j, const char* key, std::string_view path, int64_t* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_number_integer() && !it->is_number_unsigned()) {
    return WrongType(Join(path, key), "integer");
  }
  *out = it->get<int64_t>();
  return Status::Ok();
}

Status ReadBool(const json& j, const char* key, std::string_view path, bool* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_boolean()) return WrongType(Join(path, key), "boolean");
  *out = it->get<bool>();
  return Status::Ok();
}

Status ReadStringMap(const json& j, const char* key, std::string_view path,
                     std::map<std::string, std::string>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return WrongType(Join(path, key), "object");
  for (auto kv = it->begin(); kv != it->end(); ++kv) {
    if (!kv->is_string()) return WrongType(Join(Join(path, key), kv.key()), "string");
    (*out)[kv.key()] = kv->get<std::string>();
  }
  return Status::Ok();
}

}  // namespace

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

Result<OwnerReference> OwnerReferenceFromJson(const json& j, std::string_view path) {
  if (!j.is_object()) return WrongType(path, "object");
  OwnerReference r;
  SLUICE_RETURN_IF_ERROR(ReadString(j, "apiVersion", path, &r.api_version));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "kind", path, &r.kind));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "name", path, &r.name));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "uid", path, &r.uid));
  SLUICE_RETURN_IF_ERROR(ReadBool(j, "controller", path, &r.controller));
  SLUICE_RETURN_IF_ERROR(ReadBool(j, "blockOwnerDeletion", path, &r.block_owner_deletion));
  return r;
}

Result<ObjectMeta> ObjectMetaFromJson(const json& j) {
  const std::string path = "metadata";
  ObjectMeta m;
  if (j.is_null()) return m;
  if (!j.is_object()) return WrongType(path, "object");
  SLUICE_RETURN_IF_ERROR(ReadString(j, "name", path, &m.name));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "generateName", path, &m.generate_name));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "namespace", path, &m.namespace_));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "uid", path, &m.uid));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "resourceVersion", path, &m.resource_version));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "generation", path, &m.generation));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "creationTimestamp", path, &m.creation_timestamp));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "deletionTimestamp", path, &m.deletion_timestamp));
  SLUICE_RETURN_IF_ERROR(ReadStringMap(j, "labels", path, &m.labels));
  SLUICE_RETURN_IF_ERROR(ReadStringMap(j, "annotations", path, &m.annotations));
  if (auto it = j.find("ownerReferences"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return WrongType(path + ".ownerReferences", "array");
    for (size_t i = 0; i < it->size(); ++i) {
      SLUICE_ASSIGN_OR_RETURN(
          OwnerReference r,
          OwnerReferenceFromJson((*it)[i], path + ".ownerReferences[" + std::to_string(i) + "]"));
      m.owner_references.push_back(std::move(r));
    }
  }
  if (auto it = j.find("finalizers"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return WrongType(path + ".finalizers", "array");
    for (size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) {
        return WrongType(path + ".finalizers[" + std::to_string(i) + "]", "string");
      }
      m.finalizers.push_back((*it)[i].get<std::string>());
    }
  }
  return m;
}

Result<Condition> ConditionFromJson(const json& j, std::string_view path) {
  if (!j.is_object()) return WrongType(path, "object");
  Condition c;
  SLUICE_RETURN_IF_ERROR(ReadString(j, "type", path, &c.type));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "status", path, &c.status));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "reason", path, &c.reason));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "message", path, &c.message));
  SLUICE_RETURN_IF_ERROR(ReadInt(j, "observedGeneration", path, &c.observed_generation));
  SLUICE_RETURN_IF_ERROR(ReadString(j, "lastTransitionTime", path, &c.last_transition_time));
  return c;
}

Result<std::vector<Condition>> ConditionsFromJson(const json& j, std::string_view path) {
  std::vector<Condition> out;
  if (j.is_null()) return out;
  if (!j.is_array()) return WrongType(path, "array");
  for (size_t i = 0; i < j.size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(
        Condition c, ConditionFromJson(j[i], std::string(path) + "[" + std::to_string(i) + "]"));
    out.push_back(std::move(c));
  }
  return out;
}

std::string FormatTime(Clock::WallTime t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
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
