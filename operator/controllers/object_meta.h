// An object's metadata.name and metadata.namespace, as the controllers read them from the parent
// objects (DataFlow, RolloutPool, TrainerJob) whose children they build.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

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
