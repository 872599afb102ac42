// Reading fields of the objects the controllers handle: metadata.name and metadata.namespace
// here, any other field with common/json/fields.h (StringAt(obj, "/spec/policyRef/name")).
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

}  // namespace sluice::controllers
