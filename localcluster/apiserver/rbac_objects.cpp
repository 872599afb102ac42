#include "localcluster/apiserver/rbac_objects.h"

#include "common/json/fields.h"

namespace sluice::apiserver {

using nlohmann::json;

std::vector<std::string> RbacStringList(const json& object, const char* key) {
  std::vector<std::string> out;
  const json& list = AnyField(object, key);
  if (!list.is_array()) return out;
  for (const json& item : list) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

std::string RbacMetadata(const json& object, const char* key) {
  return StringField(AnyField(object, "metadata"), key);
}

const json* FindRbacRole(const std::vector<json>& roles, const std::string& name,
                         const std::string& namespace_) {
  for (const json& role : roles) {
    if (RbacMetadata(role, "name") == name && RbacMetadata(role, "namespace") == namespace_) {
      return &role;
    }
  }
  return nullptr;
}

}  // namespace sluice::apiserver
