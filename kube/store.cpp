#include "kube/store.h"

namespace sluice::kube {

std::string MetaString(const nlohmann::json& object, std::string_view field) {
  if (!object.is_object()) return "";
  const auto md = object.find("metadata");
  if (md == object.end() || !md->is_object()) return "";
  const auto v = md->find(field);
  return v != md->end() && v->is_string() ? v->get<std::string>() : "";
}

std::string ObjectKey(std::string_view namespace_, std::string_view name) {
  if (namespace_.empty()) return std::string(name);
  std::string key;
  key.reserve(namespace_.size() + 1 + name.size());
  key.append(namespace_).append("/").append(name);
  return key;
}

std::string ObjectKey(const nlohmann::json& object) {
  return ObjectKey(NamespaceOf(object), NameOf(object));
}

}  // namespace sluice::kube
