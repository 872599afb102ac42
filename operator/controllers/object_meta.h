// Reading fields of the objects the controllers handle: metadata.name, metadata.namespace and
// the controller reference here; any other field with common/json/fields.h
// (StringAt(obj, "/spec/policyRef/name")).
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/json/fields.h"

namespace sluice::controllers {

// metadata.name; "" when missing.
inline std::string Name(const nlohmann::json& obj) {
  return obj.value("/metadata/name"_json_pointer, "");
}

// metadata.namespace; "default" when missing, as kube defaults a namespaced object's namespace.
inline std::string Namespace(const nlohmann::json& obj) {
  return obj.value("/metadata/namespace"_json_pointer, "default");
}

// Whether `object`'s controller (its ownerReferences entry with controller: true) has uid `uid`:
// what a controller checks before deleting an object by name, so that it never deletes one of the
// same name it did not make.
inline bool ControlledBy(const nlohmann::json& object, const std::string& uid) {
  for (const nlohmann::json& ref :
       object.value("/metadata/ownerReferences"_json_pointer, nlohmann::json::array())) {
    if (ref.value("controller", false) && ref.value("uid", "") == uid) return true;
  }
  return false;
}

}  // namespace sluice::controllers
